"""Collectives over named axes: ``psum``, ``pmean``, ``pmax``, ``pmin``, ``all_gather``,
``psum_scatter``, ``ppermute``, ``pshuffle``, ``all_to_all``, ``pswapaxes``, ``pbroadcast``,
``ragged_all_to_all``, ``axis_index`` and ``axis_size`` (and ``pcast``, ``psend``, ``precv``,
see below).

A collective names the axes it works across (``axes``, a tuple of names bound by ``pmap`` or
by ``vmap(axis_name=...)``). Under ``pmap`` each one is lowered to a StableHLO collective
whose replica groups follow from the names (lowering/collectives.py); under ``vmap`` its
batching rule (in ``batching.axis_rules``, so it runs even when nothing it gets is mapped)
turns the named axis into the batch dimension: ``psum`` becomes a ``reduce_sum`` over it,
``axis_index`` an ``iota``. Collectives over *another* axis pass through ``vmap`` with their
batch dimension carried along.

Outside any binding of its axis name a collective raises ``NameError``, as in JAX.

``pcast`` changes only the varying-manual-axes type of ``shard_map`` (see "vma types"
below): ``to='varying'`` binds ``pvary``, the identity on values; ``to='reduced'`` is the
identity, as JAX's under ``pmap``.
``psend``/``precv`` (XLA Send/Recv, GPU-only in JAX) raise ``NotImplementedError``.
``ragged_all_to_all`` lowers as JAX's on GPUs; XLA:CPU has no such op, so on CPU (and under
``vmap``, where JAX has no rule) it is composed of an ``all_gather`` and per-slice
gathers (``ragged_receive``).
"""

import threading

import numpy as np

from xform import core, dtypes, pytree
from xform.core import ShapedArray, Tracer, get_aval
from xform.interpret import ad, batching
from xform.interpret import transpose as transpose_interp
from xform.interpret.batching import moveaxis, not_mapped
from xform.primitives.base import ANY, NUMBER, canonicalize_axis, check_dtype, standard_primitive
from xform.primitives.comparisons import eq, ge, lt, select
from xform.primitives.elementwise import (
    add,
    bitwise_and,
    bitwise_or,
    clamp,
    convert_element_type,
    mul,
    sub,
)
from xform.primitives.gather_scatter import GatherDimensionNumbers, gather
from xform.primitives.indexing import (
    dynamic_index_in_dim,
    index_in_dim,
)
from xform.primitives.indexing import slice as lax_slice
from xform.primitives.reductions import reduce_max, reduce_min, reduce_sum
from xform.primitives.structural import (
    broadcast_in_dim,
    concatenate,
    iota,
    reshape,
    transpose,
)

__all__ = [
    "psum",
    "pmean",
    "pmax",
    "pmin",
    "all_gather",
    "psum_scatter",
    "ppermute",
    "pshuffle",
    "all_to_all",
    "axis_index",
    "psum_p",
    "pmax_p",
    "pmin_p",
    "all_gather_p",
    "psum_scatter_p",
    "ppermute_p",
    "all_to_all_p",
    "axis_index_p",
    "pswapaxes",
    "pbroadcast",
    "pcast",
    "psend",
    "precv",
    "ragged_all_to_all",
    "axis_size",
    "pbroadcast_p",
    "pvary_p",
    "ragged_all_to_all_p",
]


def _axes(axis_name):
    return tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)


def _size(axes, what):
    """The number of devices (or lanes) along ``axes``; NameError if one is not bound."""
    return int(np.prod([core.axis_size(name, what) for name in axes], dtype=np.int64))


def _no_groups(axis_index_groups, what):
    if axis_index_groups is not None:
        raise NotImplementedError(f"{what}: axis_index_groups is not supported by xform")


def _tree_bind(prim, x, **params):
    leaves, tree = pytree.tree_flatten(x)
    return pytree.tree_unflatten(
        tree, [prim.bind(_vary(leaf, params["axes"]), **params) for leaf in leaves]
    )


# --------------------------------------------------------------------------- vma types
# Inside a shard_map body traced with check_vma=True (xform/primitives/shard_map.py sets
# ``typed_axes.axes`` to its manual axes while it traces), types carry the manual axes a
# value varies over (``ShapedArray.vma``), as JAX's: a reduction over axes removes them, the
# other collectives, pvary and axis_index make their results vary over theirs. Elsewhere
# (pmap, vmap, check_vma=False) no axis is typed and every vma stays empty.


class _TypedAxes(threading.local):
    axes = frozenset()


typed_axes = _TypedAxes()


def _vary(x, axes):
    """``x`` made to vary over the typed ones of ``axes`` first, as JAX's collectives do
    (their operands must vary over the axes they work across)."""
    typed = typed_axes.axes
    if not typed:
        return x
    missing = [a for a in axes if a in typed and a not in get_aval(x).vma]
    return pvary_p.bind(x, axes=tuple(missing)) if missing else x


def _one_state(x, axes, name):
    """JAX's check that ``x`` varies over all of ``axes`` or over none of them (a sum over
    some axes it varies over and some it does not is refused, not silently cast)."""
    if not typed_axes.axes:
        return
    aval = get_aval(x)
    states = {"varying" if a in aval.vma else "invarying" for a in axes}
    if len(states) > 1:
        raise ValueError(
            f"{name} can only accept axis_name which corresponds to one of "
            f"varying, unreduced, reduced or invarying state of the input. Got "
            f"input type: {aval}, axes: {axes} and input state: "
            "{'varying', 'invarying'}"
        )


def _reduced_vma(x, axes):
    return x.vma - frozenset(axes)


def _varied_vma(x, axes):
    return x.vma | (frozenset(axes) & typed_axes.axes)


# --------------------------------------------------------------------------- the API


def psum(x, axis_name, *, axis_index_groups=None):
    """The sum of ``x`` (a pytree) over the devices (or lanes) of the named axis."""
    axes = _axes(axis_name)
    _no_groups(axis_index_groups, "psum")
    size = _size(axes, "psum")
    leaves, tree = pytree.tree_flatten(x)
    for leaf in leaves:
        _one_state(leaf, axes, "xform.lax.psum")
    # A value known before tracing is the same everywhere: its sum is size times itself.
    outs = [
        leaf * size
        if not isinstance(leaf, Tracer)
        and np.ndim(leaf) == 0
        and isinstance(leaf, (int, float, complex, np.number))
        else psum_p.bind(_vary(leaf, axes), axes=axes)
        for leaf in leaves
    ]
    return pytree.tree_unflatten(tree, outs)


def pmean(x, axis_name, *, axis_index_groups=None):
    """The mean of ``x`` (a pytree) over the devices (or lanes) of the named axis."""
    axes = _axes(axis_name)
    _no_groups(axis_index_groups, "pmean")
    size = _size(axes, "pmean")
    return pytree.tree_map(lambda s: s / size, psum(x, axes))


def pmax(x, axis_name, *, axis_index_groups=None):
    """The elementwise maximum of ``x`` (a pytree) over the named axis."""
    axes = _axes(axis_name)
    _no_groups(axis_index_groups, "pmax")
    _size(axes, "pmax")
    return _tree_bind(pmax_p, x, axes=axes)


def pmin(x, axis_name, *, axis_index_groups=None):
    """The elementwise minimum of ``x`` (a pytree) over the named axis."""
    axes = _axes(axis_name)
    _no_groups(axis_index_groups, "pmin")
    _size(axes, "pmin")
    return _tree_bind(pmin_p, x, axes=axes)


def all_gather(x, axis_name, *, axis_index_groups=None, axis=0, tiled=False):
    """Every device's ``x`` stacked along a new axis ``axis`` (``tiled``: concatenated)."""
    axes = _axes(axis_name)
    _no_groups(axis_index_groups, "all_gather")
    size = _size(axes, "all_gather")

    def gather(leaf):
        ndim = get_aval(leaf).ndim
        dim = canonicalize_axis(axis, ndim if tiled else ndim + 1, "all_gather")
        return all_gather_p.bind(
            _vary(leaf, axes),
            axes=axes,
            axis_size=size,
            all_gather_dimension=dim,
            tiled=bool(tiled),
        )

    return pytree.tree_map(gather, x)


def psum_scatter(x, axis_name, *, scatter_dimension=0, axis_index_groups=None, tiled=False):
    """``psum`` of ``x``, of which each device keeps its own slice along
    ``scatter_dimension`` (whose size must equal the axis size, or divide by it if
    ``tiled``)."""
    axes = _axes(axis_name)
    _no_groups(axis_index_groups, "psum_scatter")
    size = _size(axes, "psum_scatter")

    def scatter(leaf):
        _one_state(leaf, axes, "xform.lax.psum_scatter")
        dim = canonicalize_axis(scatter_dimension, get_aval(leaf).ndim, "psum_scatter")
        return psum_scatter_p.bind(
            _vary(leaf, axes), axes=axes, axis_size=size, scatter_dimension=dim, tiled=bool(tiled)
        )

    return pytree.tree_map(scatter, x)


def ppermute(x, axis_name, perm):
    """Send each device's ``x`` to another: ``perm`` lists ``(source, destination)`` index
    pairs; a device no pair sends to receives zeros."""
    axes = _axes(axis_name)
    size = _size(axes, "ppermute")
    perm = tuple((int(s), int(d)) for s, d in perm)
    sources, dests = [s for s, _ in perm], [d for _, d in perm]
    if len(set(sources)) != len(sources) or len(set(dests)) != len(dests):
        raise ValueError(
            f"ppermute sources and destinations must be unique, got {perm}: perm "
            "must be a (partial) permutation of the axis indices"
        )
    bad = [i for i in sources + dests if not 0 <= i < size]
    if bad:
        raise ValueError(
            f"ppermute: indices {sorted(set(bad))} in perm {perm} are out of range "
            f"for axis {axis_name!r} of size {size}"
        )
    return _tree_bind(ppermute_p, x, axes=axes, perm=perm)


def pshuffle(x, axis_name, perm):
    """``ppermute`` where device ``i`` receives from device ``perm[i]``."""
    if sorted(perm) != list(range(len(perm))):
        raise ValueError(
            f"pshuffle: perm must be a permutation of range({len(perm)}), got {list(perm)}"
        )
    return ppermute(x, axis_name, [(s, d) for d, s in enumerate(perm)])


def all_to_all(x, axis_name, split_axis, concat_axis, *, axis_index_groups=None, tiled=False):
    """Split ``x`` along ``split_axis`` into one chunk per device, send chunk ``j`` to device
    ``j``, and put the received chunks together along ``concat_axis`` (a new axis of size the
    axis size, or concatenated if ``tiled``)."""
    axes = _axes(axis_name)
    _no_groups(axis_index_groups, "all_to_all")
    size = _size(axes, "all_to_all")

    def exchange(leaf):
        ndim = get_aval(leaf).ndim
        split = canonicalize_axis(split_axis, ndim, "all_to_all")
        concat = canonicalize_axis(concat_axis, ndim, "all_to_all")
        return all_to_all_p.bind(
            _vary(leaf, axes),
            axes=axes,
            axis_size=size,
            split_axis=split,
            concat_axis=concat,
            tiled=bool(tiled),
        )

    return pytree.tree_map(exchange, x)


def axis_index(axis_name):
    """This device's (or lane's) index along the named axis, an int32 scalar."""
    axes = _axes(axis_name)
    sizes = tuple(core.axis_size(name, "axis_index") for name in axes)
    return axis_index_p.bind(axes=axes, sizes=sizes)


# --------------------------------------------------------------------------- types


def _same_type(name, kinds, vma=_varied_vma):
    def rule(x, *, axes, **params):
        check_dtype(name, x.dtype, kinds)
        return [ShapedArray(x.shape, x.dtype, x.weak_type, vma=vma(x, axes))]

    return rule


def _all_gather_abstract_eval(x, *, axes, axis_size, all_gather_dimension, tiled):
    shape, d = list(x.shape), all_gather_dimension
    if tiled:
        shape[d] *= axis_size
    else:
        shape.insert(d, axis_size)
    return [ShapedArray(tuple(shape), x.dtype, x.weak_type, vma=_varied_vma(x, axes))]


def _split_over_devices(name, what, x, d, axis_size, tiled):
    """The shape of ``x`` with its dimension ``d`` (``what``) split over the devices: divided
    by the axis size (``tiled``), or gone (it must equal the axis size)."""
    shape = list(x.shape)
    if tiled and shape[d] % axis_size:
        raise ValueError(
            f"{name}: {what} {d} of the operand (shape {x.shape}) has size "
            f"{shape[d]}, not a multiple of the axis size {axis_size}"
        )
    if not tiled and shape[d] != axis_size:
        raise ValueError(
            f"{name}: {what} {d} of the operand (shape {x.shape}) must equal the "
            f"axis size {axis_size}; use tiled=True to split it into equal chunks"
        )
    if tiled:
        shape[d] //= axis_size
    else:
        del shape[d]
    return shape


def _psum_scatter_abstract_eval(x, *, axes, axis_size, scatter_dimension, tiled):
    check_dtype("psum_scatter", x.dtype, NUMBER)
    shape = _split_over_devices("psum_scatter", "dimension", x, scatter_dimension, axis_size, tiled)
    return [ShapedArray(tuple(shape), x.dtype, x.weak_type, vma=_varied_vma(x, axes))]


def _all_to_all_abstract_eval(x, *, axes, axis_size, split_axis, concat_axis, tiled):
    shape = _split_over_devices("all_to_all", "the split axis", x, split_axis, axis_size, tiled)
    if tiled:
        shape[concat_axis] *= axis_size
    else:
        shape.insert(concat_axis, axis_size)
    return [ShapedArray(tuple(shape), x.dtype, x.weak_type, vma=_varied_vma(x, axes))]


def _axis_index_abstract_eval(*, axes, sizes):
    return [ShapedArray((), np.dtype(np.int32), vma=frozenset(axes) & typed_axes.axes)]


def _collective(name, abstract_eval):
    return standard_primitive(name, abstract_eval)


psum_p = _collective("psum", _same_type("psum", NUMBER, _reduced_vma))
pmax_p = _collective("pmax", _same_type("pmax", ANY, _reduced_vma))
pmin_p = _collective("pmin", _same_type("pmin", ANY, _reduced_vma))
ppermute_p = _collective("ppermute", _same_type("ppermute", ANY))
all_gather_p = _collective("all_gather", _all_gather_abstract_eval)
psum_scatter_p = _collective("psum_scatter", _psum_scatter_abstract_eval)
all_to_all_p = _collective("all_to_all", _all_to_all_abstract_eval)
axis_index_p = _collective("axis_index", _axis_index_abstract_eval)


# --------------------------------------------------------------------------- autodiff
# The movements and sums of data are linear. Their transposes, as JAX defines them: psum's
# is psum (each device's cotangent gets every device's contribution), all_gather's is
# psum_scatter and back, ppermute's is the inverse permutation, all_to_all's swaps the axes.

for _prim in (psum_p, ppermute_p, all_gather_p, psum_scatter_p, all_to_all_p):
    ad.defjvp_linear(_prim)
ad.defjvp_zero(axis_index_p)


def _not_differentiable(prim):
    def rule(primals, tangents, **params):
        raise NotImplementedError(f"Differentiation rule for '{prim.name}' not implemented")

    ad.jvp_rules[prim] = rule


_not_differentiable(pmax_p)
_not_differentiable(pmin_p)


def _psum_transpose(ct, x, *, axes):
    if typed_axes.axes and set(axes) <= x.aval.vma:
        # A typed body's sum of a varying value (JAX's psum_invariant): its cotangent, the
        # same on every device, goes back to each of them, marked varying (JAX's rule).
        ct = ad.instantiate(ct)
        missing = tuple(a for a in axes if a not in get_aval(ct).vma)
        return [pvary_p.bind(ct, axes=missing) if missing else ct]
    return [psum_p.bind(ad.instantiate(ct), axes=axes)]


def _ppermute_transpose(ct, x, *, axes, perm):
    return [ppermute_p.bind(ad.instantiate(ct), axes=axes, perm=tuple((d, s) for s, d in perm))]


def _all_gather_transpose(ct, x, *, axes, axis_size, all_gather_dimension, tiled):
    return [
        psum_scatter_p.bind(
            ad.instantiate(ct),
            axes=axes,
            axis_size=axis_size,
            scatter_dimension=all_gather_dimension,
            tiled=tiled,
        )
    ]


def _psum_scatter_transpose(ct, x, *, axes, axis_size, scatter_dimension, tiled):
    return [
        all_gather_p.bind(
            ad.instantiate(ct),
            axes=axes,
            axis_size=axis_size,
            all_gather_dimension=scatter_dimension,
            tiled=tiled,
        )
    ]


def _all_to_all_transpose(ct, x, *, axes, axis_size, split_axis, concat_axis, tiled):
    return [
        all_to_all_p.bind(
            ad.instantiate(ct),
            axes=axes,
            axis_size=axis_size,
            split_axis=concat_axis,
            concat_axis=split_axis,
            tiled=tiled,
        )
    ]


transpose_interp.transpose_rules[psum_p] = _psum_transpose
transpose_interp.transpose_rules[ppermute_p] = _ppermute_transpose
transpose_interp.transpose_rules[all_gather_p] = _all_gather_transpose
transpose_interp.transpose_rules[psum_scatter_p] = _psum_scatter_transpose
transpose_interp.transpose_rules[all_to_all_p] = _all_to_all_transpose


# --------------------------------------------------------------------------- vmap
# ``axis`` is the vmap's axis. A collective over it works along the batch dimension; over
# other axes, it is bound again (for the enclosing pmap or vmap) on the batched value.


def _pass_through(prim, args, dims, params):
    """The collective over other axes, on the value batched at 0 when its params count
    dimensions (they are shifted by one for the batch)."""
    (x,), (d,) = args, dims
    if d is not_mapped:
        return [prim.bind(x, **params)], [not_mapped]
    shift = {
        k: v + 1
        for k, v in params.items()
        if k in ("all_gather_dimension", "scatter_dimension", "split_axis", "concat_axis")
    }
    if not shift:
        return [prim.bind(x, **params)], [d]
    return [prim.bind(moveaxis(x, d, 0), **{**params, **shift})], [0]


def _split(axes, axis):
    """``axes`` without the vmap's own name, and whether it was there."""
    rest = tuple(a for a in axes if a != axis.name)
    return rest, len(rest) != len(axes)


def _reducing_rule(prim, reduce, of_unmapped):
    def rule(axis, args, dims, *, axes):
        rest, here = _split(axes, axis)
        if not here:
            return _pass_through(prim, args, dims, {"axes": axes})
        (x,), (d,) = args, dims
        x = of_unmapped(x, axis.size) if d is not_mapped else reduce(x, (d,))
        if rest:
            x = prim.bind(x, axes=rest)
        return [x], [not_mapped]

    batching.axis_rules[prim] = rule


_reducing_rule(psum_p, reduce_sum, lambda x, n: x * np.asarray(n, get_aval(x).dtype))
_reducing_rule(pmax_p, reduce_max, lambda x, n: x)
_reducing_rule(pmin_p, reduce_min, lambda x, n: x)


def _over_own_axis(prim, several=False):
    """Register the vmap rule of a one-operand collective: over other axes it passes
    through; over the vmap's own axis (alone, unless ``several``) the decorated
    ``fn(axis, x, d, **params)`` does its work along the batch dimension ``d`` of ``x`` and
    returns ``(out, out_dim)``."""

    def register(fn):
        def rule(axis, args, dims, **params):
            axes = params["axes"]
            if axis.name not in axes:
                return _pass_through(prim, args, dims, params)
            if len(axes) > 1 and not several:
                raise NotImplementedError(
                    f"{prim.name} over several axes {axes} where one of them ({axis.name!r}) "
                    "is a vmap axis is not supported by xform"
                )
            out, out_dim = fn(axis, args[0], dims[0], **params)
            return [out], [out_dim]

        batching.axis_rules[prim] = rule
        return fn

    return register


def _merge_dims(x, d):
    """``x`` with dimensions ``d`` and ``d + 1`` merged into one."""
    shape = get_aval(x).shape
    return reshape(x, shape[:d] + (shape[d] * shape[d + 1],) + shape[d + 2 :])


def _split_dim(x, d, n):
    """``x`` with dimension ``d`` split into ``(n, size // n)``."""
    shape = get_aval(x).shape
    return reshape(x, shape[:d] + (n, shape[d] // n) + shape[d + 1 :])


@_over_own_axis(all_gather_p, several=True)
def _all_gather_batch(axis, x, d, *, axes, axis_size, all_gather_dimension, tiled):
    # Every lane sees all lanes' values, stacked (or concatenated) where the gather puts them.
    x = batching.batch_at_front(x, d, axis.size)
    rest = tuple(a for a in axes if a != axis.name)
    if rest:  # then gathered over the other names too, the index row-major in the named order
        _own_first_or_last("all_gather", axes, axis)
        x = all_gather_p.bind(
            x, axes=rest, axis_size=axis_size // axis.size, all_gather_dimension=0, tiled=False
        )
        x = _merge_dims(moveaxis(x, 1, 0) if axes[0] == axis.name else x, 0)
    x = moveaxis(x, 0, all_gather_dimension)
    return (_merge_dims(x, all_gather_dimension) if tiled else x), not_mapped


@_over_own_axis(psum_scatter_p, several=True)
def _psum_scatter_batch(axis, x, d, *, axes, axis_size, scatter_dimension, tiled):
    _check_lanes("psum_scatter", "dimension", x, d, scatter_dimension, axis_size, tiled)
    s = scatter_dimension
    summed = (
        x * np.asarray(axis.size, get_aval(x).dtype) if d is not_mapped else reduce_sum(x, (d,))
    )
    rest = tuple(a for a in axes if a != axis.name)
    if not rest:
        if tiled:  # lane i keeps chunk i: split the dimension into (lanes, chunk)
            summed = _split_dim(summed, s, axis.size)
        return summed, s
    # Over the other names too: split the dimension into (the two axes in the named order,
    # chunk), scatter over the other names, and the lanes keep their chunks.
    _own_first_or_last("psum_scatter", axes, axis)
    own_first = axes[0] == axis.name
    n_rest = axis_size // axis.size
    shape = get_aval(summed).shape
    split = (axis.size, n_rest) if own_first else (n_rest, axis.size)
    summed = reshape(summed, shape[:s] + split + (shape[s] // axis_size,) + shape[s + 1 :])
    out = psum_scatter_p.bind(
        summed,
        axes=rest,
        axis_size=n_rest,
        scatter_dimension=s + 1 if own_first else s,
        tiled=False,
    )
    if not tiled:  # the chunk of one element goes, as the scattered dimension does
        shape = get_aval(out).shape
        out = reshape(out, shape[: s + 1] + shape[s + 2 :])
    return out, s


def _own_first_or_last(what, axes, axis):
    if axis.name not in (axes[0], axes[-1]):
        raise NotImplementedError(
            f"{what} over {axes}: the vmap axis {axis.name!r} must come "
            "first or last among the names"
        )


@_over_own_axis(ppermute_p)
def _ppermute_batch(axis, x, d, *, axes, perm):
    x = batching.batch_at_front(x, d, axis.size)
    source = {dst: src for src, dst in perm}
    shape = get_aval(x).shape
    zero = broadcast_in_dim(np.zeros((), get_aval(x).dtype), (1,) + shape[1:], ())
    rows = [
        lax_slice(x, (source[i],) + (0,) * (len(shape) - 1), (source[i] + 1,) + shape[1:])
        if i in source
        else zero
        for i in range(axis.size)
    ]
    return concatenate(rows, 0), 0


def _check_lanes(name, what, x, d, dim, axis_size, tiled):
    """The abstract evaluation's shape check, on one lane's value (the batch rules bypass
    it): under vmap, as under pmap, a mis-sized operand is a ``ValueError``."""
    aval = get_aval(x)
    if d is not not_mapped:
        aval = ShapedArray(aval.shape[:d] + aval.shape[d + 1 :], aval.dtype)
    _split_over_devices(name, what, aval, dim, axis_size, tiled)


@_over_own_axis(all_to_all_p)
def _all_to_all_batch(axis, x, d, *, axes, axis_size, split_axis, concat_axis, tiled):
    _check_lanes("all_to_all", "the split axis", x, d, split_axis, axis_size, tiled)
    x = batching.batch_at_front(x, d, axis.size)  # x[j, ...]: lane j's value
    s = split_axis + 1
    if tiled:  # split_axis (n*k) -> (n, k): lane i gets chunk i
        x = _split_dim(x, s, axis.size)
    # x[j, ..., i (split), ...]: lane i receives x[j, ..., i, ...], stacked in j at the
    # concat axis (tiled: then merged with the concat dimension that follows)
    rest = [a for a in range(1, get_aval(x).ndim) if a != s]
    out = transpose(x, (s, *rest[:concat_axis], 0, *rest[concat_axis:]))
    return (_merge_dims(out, concat_axis + 1) if tiled else out), 0


def _axis_index_batch(axis, args, dims, *, axes, sizes):
    # The index along several names is row-major over them; the vmap's own name contributes
    # an iota (one entry per lane), the others their own axis_index.
    if axis.name not in axes:
        return [axis_index_p.bind(axes=axes, sizes=sizes)], [not_mapped]
    index = None
    for k, (name, size) in enumerate(zip(axes, sizes, strict=True)):
        stride = np.int32(np.prod(sizes[k + 1 :], dtype=np.int64))
        coordinate = (
            iota(np.int32, axis.size)
            if name == axis.name
            else axis_index_p.bind(axes=(name,), sizes=(size,))
        )
        term = coordinate if stride == 1 else mul(coordinate, stride)
        index = term if index is None else add(index, term)
    return [index], [0]


batching.axis_rules[axis_index_p] = _axis_index_batch


# --------------------------------------------------------------------------- additions


def axis_size(axis_name):
    """The size of the named axis (or the product over a tuple of names), a Python int.

    Example:
      >>> xform.vmap(lambda x: x * axis_size("i"), axis_name="i")(np.ones(3))  # [3, 3, 3]
    """
    return _size(_axes(axis_name), "axis_size")


def pswapaxes(x, axis_name, axis, *, axis_index_groups=None):
    """Swap the mapped axis ``axis_name`` with the positional ``axis`` of ``x`` (a pytree),
    whose size must equal the axis size: ``all_to_all(x, axis_name, axis, axis)``."""
    return all_to_all(x, axis_name, axis, axis, axis_index_groups=axis_index_groups)


def pbroadcast(x, axis_name, source):
    """Every device's ``x`` (a pytree) replaced by the value on device ``source`` of the
    named axis: ``psum(where(axis_index(axis_name) == source, x, 0), axis_name)``."""
    axes = _axes(axis_name)
    size = _size(axes, "pbroadcast")
    source = int(source)
    if not 0 <= source < size:
        raise ValueError(
            f"pbroadcast: source {source} is out of range for axis {axis_name!r} of size {size}"
        )
    return _tree_bind(pbroadcast_p, x, axes=axes, source=source)


_PCAST_TO = ("varying", "reduced", "unreduced")


def pcast(x, axis_name, *, to):
    """Cast the varying-manual-axes type of ``x`` (a pytree) over ``axis_name`` to ``to``.

    In a ``shard_map`` body with check_vma=True, ``to='varying'`` adds the axes to the
    value's type (``typeof(x).vma``); under ``pmap`` every value already varies over its
    axes, so ``to='varying'`` and ``to='reduced'`` are the identity on values, as in JAX, and
    ``to='unreduced'`` is a ``ValueError``, as in JAX.
    """
    if isinstance(axis_name, (set, frozenset)):
        raise TypeError(f"pcast: axis_name={axis_name} must be a tuple or a str")
    axes = _axes(axis_name)
    if not axis_name:
        return x
    if to not in _PCAST_TO:
        raise ValueError(
            f"pcast: unexpected `to` value {to!r}. Allowed `to` values are: {set(_PCAST_TO)}"
        )
    _size(axes, "pcast")
    if to == "unreduced":
        raise ValueError(f"pcast: unsupported pcast from='invarying' to={to!r}")
    if to == "reduced":
        return x

    def vary(leaf):
        if typed_axes.axes and set(axes) <= get_aval(leaf).vma:
            raise ValueError(
                "Unsupported pcast from=varying, to='varying': the value "
                f"{get_aval(leaf).str_short()} already varies over {axes}"
            )
        return pvary_p.bind(leaf, axes=axes)

    return pytree.tree_map(vary, x)


def psend(x, axis_name, perm):
    """XLA's Send (GPU-only in JAX): not supported by xform, whose backend is XLA:CPU."""
    raise NotImplementedError(
        "psend: XLA Send/Recv collectives are implemented only on GPU "
        "(in JAX as well); xform does not support them. Use ppermute."
    )


def precv(token, out_shape, axis_name, perm):
    """XLA's Recv (GPU-only in JAX): not supported by xform, whose backend is XLA:CPU."""
    raise NotImplementedError(
        "precv: XLA Send/Recv collectives are implemented only on GPU "
        "(precv is currently only implemented on GPU in JAX); xform "
        "does not support them. Use ppermute."
    )


def ragged_all_to_all(
    operand,
    output,
    input_offsets,
    send_sizes,
    output_offsets,
    recv_sizes,
    *,
    axis_name,
    axis_index_groups=None,
):
    """The ragged ``all_to_all``: device ``i`` sends rows ``input_offsets[j]`` to
    ``input_offsets[j] + send_sizes[j]`` of ``operand`` to device ``j``, which writes them at
    its ``output_offsets``; ``output`` supplies the rows nothing writes. With ``k`` slices per
    device, the offsets and sizes have ``k`` entries per device of the axis."""
    axes = _axes(axis_name)
    _no_groups(axis_index_groups, "ragged_all_to_all")
    _size(axes, "ragged_all_to_all")
    args = (operand, output, input_offsets, send_sizes, output_offsets, recv_sizes)
    # Checked here, not only by the abstract evaluation: vmap's rule raises before that.
    _ragged_all_to_all_abstract_eval(*[get_aval(a) for a in args], axes=axes)
    return ragged_all_to_all_p.bind(
        operand, output, input_offsets, send_sizes, output_offsets, recv_sizes, axes=axes
    )


pbroadcast_p = _collective("pbroadcast", _same_type("pbroadcast", ANY))
ad.defjvp_linear(pbroadcast_p)


def _pbroadcast_transpose(ct, x, *, axes, source):
    # Every device's output is the source's input: the source's cotangent is the sum of all.
    total = psum_p.bind(ad.instantiate(ct), axes=axes)
    return [select(eq(axis_index(axes), np.int32(source)), total, total * 0)]


transpose_interp.transpose_rules[pbroadcast_p] = _pbroadcast_transpose


@_over_own_axis(pbroadcast_p)
def _pbroadcast_batch(axis, x, d, *, axes, source):
    return (x if d is not_mapped else index_in_dim(x, source, d, keepdims=False)), not_mapped


# pvary marks a value as varying over ``axes`` (JAX's pcast to='varying'); on values the
# identity. In a typed body (check_vma) it transposes to the sum over those axes, as JAX's;
# an untyped body's shard_map sums at its boundary instead (xform/primitives/shard_map.py),
# so there the cotangent passes through.
pvary_p = _collective("pvary", _same_type("pvary", ANY))
ad.defjvp_linear(pvary_p)


def _pvary_transpose(ct, x, *, axes):
    if typed_axes.axes:
        return [psum_p.bind(ad.instantiate(ct), axes=axes)]
    return [ct]


transpose_interp.transpose_rules[pvary_p] = _pvary_transpose


@_over_own_axis(pvary_p, several=True)
def _pvary_batch(axis, x, d, *, axes):
    raise ValueError(
        f"pvary should be called under xform.shard_map: pcast(..., to='varying') "
        f"over {axis.name!r}, a vmap axis, as in JAX (under pmap it is the "
        "identity)"
    )


def _ragged_all_to_all_abstract_eval(operand, output, *offsets_and_sizes, axes):
    names = ("input_offsets", "send_sizes", "output_offsets", "recv_sizes")
    for name, a in zip(names, offsets_and_sizes, strict=True):
        if not (dtypes.is_signed_int(a.dtype) or dtypes.is_unsigned_int(a.dtype)):
            raise ValueError(f"ragged_all_to_all {name} must be integer type, got {a.dtype}.")
        if a.ndim != 1 or a.shape[0] < 1:
            raise ValueError(
                f"ragged_all_to_all {name} must be rank 1 with positive dimension "
                f"size, but got shape {a.shape}"
            )
    if operand.dtype != output.dtype or operand.shape[1:] != output.shape[1:]:
        raise TypeError(
            f"ragged_all_to_all: operand {operand.str_short()} and output "
            f"{output.str_short()} must agree in dtype and in every dimension but "
            "the first"
        )
    return [ShapedArray(output.shape, output.dtype)]


ragged_all_to_all_p = _collective("ragged_all_to_all", _ragged_all_to_all_abstract_eval)


def _ragged_all_to_all_eager(*args, axes):
    raise RuntimeError("ragged_all_to_all must be used within a mapped context like pmap")


core.eager_rules[ragged_all_to_all_p] = _ragged_all_to_all_eager


def _ragged_all_to_all_jvp(primals, tangents, *, axes):
    # Linear in (operand, output) together; the offsets and sizes are integers.
    out = ragged_all_to_all_p.bind(*primals, axes=axes)
    if type(tangents[0]) is ad.Zero and type(tangents[1]) is ad.Zero:
        return [out], [ad.Zero(ad.tangent_aval(get_aval(out)))]
    t = ragged_all_to_all_p.bind(
        ad.instantiate(tangents[0]), ad.instantiate(tangents[1]), *primals[2:], axes=axes
    )
    return [out], [t]


ad.jvp_rules[ragged_all_to_all_p] = _ragged_all_to_all_jvp


def _ragged_all_to_all_transpose(
    ct, operand, output, input_offsets, send_sizes, output_offsets, recv_sizes, *, axes
):
    # JAX's rule: the cotangent's received windows go back to their senders (the exchange
    # with the roles of the offsets swapped), and the output's cotangent is what no window
    # overwrote.
    undefined = [transpose_interp.is_undefined(operand), transpose_interp.is_undefined(output)]
    if type(ct) is ad.Zero:
        return [
            ad.Zero(x.aval) if u else None
            for x, u in zip((operand, output), undefined, strict=True)
        ] + [None] * 4
    n = _size(axes, "ragged_all_to_all")

    def exchange(x):  # entry i of device d goes to entry d*k + j of device i // k
        return all_to_all_p.bind(x, axes=axes, axis_size=n, split_axis=0, concat_axis=0, tiled=True)

    received_at = exchange(output_offsets)  # where each received window starts here
    operand_aval = operand.aval if undefined[0] else get_aval(operand)
    zeros = broadcast_in_dim(np.zeros((), operand_aval.dtype), operand_aval.shape, ())
    operand_ct = ragged_all_to_all_p.bind(
        ct, zeros, received_at, recv_sizes, exchange(input_offsets), send_sizes, axes=axes
    )
    shape = get_aval(ct).shape
    position = iota(np.int32, shape[0])
    written = None
    for i in range(get_aval(recv_sizes).shape[0]):
        start = convert_element_type(index_in_dim(received_at, i, keepdims=False), np.int32)
        size = convert_element_type(index_in_dim(recv_sizes, i, keepdims=False), np.int32)
        inside = bitwise_and(ge(position, start), lt(position, add(start, size)))
        written = inside if written is None else bitwise_or(written, inside)
    output_ct = select(broadcast_in_dim(written, shape, (0,)), ct * 0, ct)
    return [
        operand_ct if undefined[0] else None,
        output_ct if undefined[1] else None,
        None,
        None,
        None,
        None,
    ]


transpose_interp.transpose_rules[ragged_all_to_all_p] = _ragged_all_to_all_transpose


def ragged_receive(me, output, operands, input_offsets, send_sizes, output_offsets):
    """What ``ragged_all_to_all`` leaves on device ``me`` (an int32 scalar): ``output`` with
    the slices every sender ``s`` addressed to ``me`` written in. ``operands`` and the
    offsets and sizes are every device's, stacked along a leading axis (an all_gather)."""
    n, rows = get_aval(operands).shape[:2]
    per_device = get_aval(input_offsets).shape[1] // n  # slices each sender sends a device
    shape = get_aval(output).shape
    position = iota(np.int32, shape[0])
    dn = GatherDimensionNumbers(
        offset_dims=tuple(range(1, len(shape))), collapsed_slice_dims=(0,), start_index_map=(0,)
    )

    def entry(table, s, i):
        row = index_in_dim(table, s, keepdims=False)
        return convert_element_type(dynamic_index_in_dim(row, i, keepdims=False), np.int32)

    result = output
    for s in range(n):
        data = index_in_dim(operands, s, keepdims=False)
        for j in range(per_device):
            i = add(mul(me, np.int32(per_device)), np.int32(j))
            start_in = entry(input_offsets, s, i)
            size = entry(send_sizes, s, i)
            start_out = entry(output_offsets, s, i)
            # output row p takes the sender's row start_in + (p - start_out) in the window
            source = clamp(np.int32(0), add(start_in, sub(position, start_out)), np.int32(rows - 1))
            taken = gather(
                data, reshape(source, (shape[0], 1)), dn, (1, *shape[1:]), mode="promise_in_bounds"
            )
            inside = bitwise_and(ge(position, start_out), lt(position, add(start_out, size)))
            result = select(broadcast_in_dim(inside, shape, (0,)), taken, result)
    return result


def _ragged_all_to_all_batch(axis, args, dims, *, axes):
    if axis.name not in axes:
        if all(d is not_mapped for d in dims):
            return [ragged_all_to_all_p.bind(*args, axes=axes)], [not_mapped]
        return [_ragged_over_other_axis(axis.size, args, dims, axes)], [0]
    if len(axes) > 1:
        raise NotImplementedError(
            f"ragged_all_to_all over several axes {axes} where one is a "
            f"vmap axis ({axis.name!r}) is not supported by xform"
        )
    # Every lane's values are at hand: each lane receives from the stacked senders. (JAX has
    # no vmap rule over the collective's own axis.)
    stacked = [
        batching.move_or_broadcast(x, d, 0, axis.size) for x, d in zip(args, dims, strict=True)
    ]
    operands, output, input_offsets, send_sizes, output_offsets, _ = stacked
    lanes = [
        ragged_receive(
            np.int32(r),
            index_in_dim(output, r, keepdims=False),
            operands,
            input_offsets,
            send_sizes,
            output_offsets,
        )
        for r in range(axis.size)
    ]
    return [concatenate([expand(lane) for lane in lanes], 0)], [0]


def _ragged_over_other_axis(size, args, dims, axes):
    # JAX's rule: the lanes' operands (and outputs) are concatenated, each lane's offsets
    # shifted to its block; entry i of lane b becomes entry i * size + b, so every device
    # still gets its entries in one contiguous run.
    operand, output = (
        batching.batch_at_front(x, d, size) for x, d in zip(args[:2], dims[:2], strict=True)
    )
    n_rows, m_rows = get_aval(operand).shape[1], get_aval(output).shape[1]
    lane = iota(np.int32, size)

    def lanes_last(x, d, shift=None):
        x = batching.move_or_broadcast(x, d, 1, size)
        if shift is not None:
            offsets = convert_element_type(lane * np.int32(shift), get_aval(x).dtype)
            x = add(x, broadcast_in_dim(offsets, get_aval(x).shape, (1,)))
        return reshape(x, (get_aval(x).size,))

    input_offsets = lanes_last(args[2], dims[2], n_rows)
    send_sizes = lanes_last(args[3], dims[3])
    output_offsets = lanes_last(args[4], dims[4], m_rows)
    recv_sizes = lanes_last(args[5], dims[5])
    flat = ragged_all_to_all_p.bind(
        reshape(operand, (size * n_rows, *get_aval(operand).shape[2:])),
        reshape(output, (size * m_rows, *get_aval(output).shape[2:])),
        input_offsets,
        send_sizes,
        output_offsets,
        recv_sizes,
        axes=axes,
    )
    return reshape(flat, get_aval(output).shape)


def expand(x):
    """``x`` with a new leading axis of size 1."""
    return reshape(x, (1, *get_aval(x).shape))


batching.axis_rules[ragged_all_to_all_p] = _ragged_all_to_all_batch
