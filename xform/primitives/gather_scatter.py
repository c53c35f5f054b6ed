"""Gather and scatter primitives: ``gather`` and the scatters (``scatter``, ``scatter_add``,
``scatter_mul``, ``scatter_min``, ``scatter_max``, ``scatter_sub``), with every rule.

The semantics are XLA's, as ``lax`` exposes them. ``gather`` and the scatters take a
``GatherScatterMode``: ``CLIP`` clamps every window into bounds, ``FILL_OR_DROP`` fills
out-of-bounds gathered windows with ``fill_value`` and drops out-of-bounds scattered ones,
and ``PROMISE_IN_BOUNDS`` does what XLA does (gather clamps, scatter drops). As in JAX,
``lax.gather`` defaults to ``PROMISE_IN_BOUNDS`` and the scatters to ``FILL_OR_DROP``. The
index vector of ``gather``/``scatter`` indices is always their last dimension. The slices
(xform/primitives/indexing.py) batch into these when their starts are mapped.
"""

import enum
import functools
from typing import NamedTuple

import numpy as np

from xform import core, dtypes, errors, jaxpr_printer
from xform.core import ShapedArray, get_aval
from xform.interpret import ad, batching, transpose
from xform.primitives import elementwise
from xform.primitives.base import ANY, NUMBER, check_dtype, standard_primitive
from xform.primitives.comparisons import eq, select
from xform.primitives.elementwise import add, div, mul, sub
from xform.primitives.structural import (
    broadcast_in_dim,
    full,
    full_like,
    iota,
    reshape,
)

__all__ = [
    "GatherDimensionNumbers",
    "GatherScatterMode",
    "gather",
    "ScatterDimensionNumbers",
    "scatter",
    "scatter_add",
    "scatter_mul",
    "scatter_min",
    "scatter_max",
    "scatter_sub",
]


def _ints(values, name, what):
    """A sequence of Python ints as a tuple; ``TypeError`` naming the op otherwise."""
    try:
        return tuple(int(v.__index__()) for v in values)
    except errors.InconclusiveDimensionOperation:  # a whole symbolic dimension kept (export)
        return tuple(v if core.is_symbolic_dim(v) else int(v.__index__()) for v in values)
    except (TypeError, AttributeError):
        raise TypeError(f"{name}: {what} must be a sequence of integers, got {values!r}") from None


def _index_dtype(shape):
    """The signed index dtype JAX uses for positions in ``shape`` (int32 unless too small)."""
    return dtypes.int64 if any(d > np.iinfo(np.int32).max for d in shape) else dtypes.int32


# --------------------------------------------------------------------------- gather


class GatherDimensionNumbers(NamedTuple):
    """How the dimensions of a gather's operand, indices and output relate (XLA's Gather).

    ``offset_dims``: output dims holding the slice; ``collapsed_slice_dims``: operand dims of
    slice size 1 dropped from the output; ``start_index_map``: the operand dim each entry of
    the index vector (the last dim of the indices) starts; ``operand_batching_dims`` and
    ``start_indices_batching_dims``: dims of operand and indices traversed together.
    """

    offset_dims: tuple
    collapsed_slice_dims: tuple
    start_index_map: tuple
    operand_batching_dims: tuple = ()
    start_indices_batching_dims: tuple = ()


class GatherScatterMode(enum.Enum):
    """How ``gather``/``scatter`` treat out-of-bounds windows.

    ``CLIP`` clamps each window into bounds; ``FILL_OR_DROP`` fills gathered windows that are
    out of bounds and drops such scattered windows; ``PROMISE_IN_BOUNDS`` leaves it to XLA
    (which clamps gathers and drops scatters).
    """

    CLIP = enum.auto()
    FILL_OR_DROP = enum.auto()
    PROMISE_IN_BOUNDS = enum.auto()

    @staticmethod
    def from_any(s):
        """The mode named by ``s``: a mode, ``'clip'``, ``'fill'``/``'drop'``/``None``, or
        ``'promise_in_bounds'``."""
        if isinstance(s, GatherScatterMode):
            return s
        if s == "clip":
            return GatherScatterMode.CLIP
        if s is None or s in {"fill", "drop"}:
            return GatherScatterMode.FILL_OR_DROP
        if s == "promise_in_bounds":
            return GatherScatterMode.PROMISE_IN_BOUNDS
        # Members of jax.lax.GatherScatterMode (or any enum with these names) are accepted.
        name = getattr(s, "name", None)
        if name in GatherScatterMode.__members__:
            return GatherScatterMode[name]
        raise ValueError(
            f"Unknown gather/scatter mode {s!r}: use 'clip', 'fill', 'drop', "
            "'promise_in_bounds' or a GatherScatterMode"
        )


def _as_dnums(cls, dn, name):
    """``dn`` (any object with ``cls``'s fields, e.g. JAX's) as ``cls`` holding int tuples."""
    if not all(hasattr(dn, f) for f in cls._fields[:3]):
        raise TypeError(f"{name}: dimension_numbers must be a {cls.__name__}, got {dn!r}")
    return cls(*(_ints(getattr(dn, f, ()), name, f"dimension_numbers.{f}") for f in cls._fields))


def _check_dims(op, dims, rank, what, sorted_=True):
    if len(set(dims)) != len(dims):
        raise TypeError(f"{op}: {what} must not repeat, got {dims}")
    if sorted_ and list(dims) != sorted(dims):
        raise TypeError(f"{op}: {what} must be sorted, got {dims}")
    for d in dims:
        if not 0 <= d < rank:
            raise TypeError(f"{op}: {what} {dims} out of range: valid dims are [0, {rank})")


def _check_index_dtype(op, indices):
    if not dtypes.is_int(indices.dtype):
        raise ValueError(f"{op}: indices must have an integer dtype, got {indices.str_short()}")
    if indices.ndim < 1:
        raise TypeError(
            f"{op}: indices must have rank >= 1 (the last dim is the index vector; "
            f"add a trailing dim of size 1 for scalar indices), got shape "
            f"{indices.shape}"
        )


def _check_batching(op, operand, indices, *, operand_bdims, indices_bdims, names):
    _check_dims(op, operand_bdims, operand.ndim, names[0])
    _check_dims(op, indices_bdims, indices.ndim - 1, names[1], sorted_=False)
    if len(operand_bdims) != len(indices_bdims):
        raise TypeError(
            f"{op}: {names[0]} {operand_bdims} and {names[1]} {indices_bdims} "
            "must have the same length"
        )
    o_shape = tuple(operand.shape[d] for d in operand_bdims)
    i_shape = tuple(indices.shape[d] for d in indices_bdims)
    if o_shape != i_shape:
        raise TypeError(
            f"{op}: operand batching dims have shape {o_shape} but indices "
            f"batching dims have shape {i_shape} (operand shape {operand.shape}, "
            f"indices shape {indices.shape})"
        )


def _gather_abstract_eval(
    operand,
    indices,
    *,
    dimension_numbers,
    slice_sizes,
    indices_are_sorted,
    unique_indices,
    mode,
    fill_value,
):
    op = "lax.gather"
    dn = dimension_numbers
    _check_index_dtype(op, indices)
    batch_shape = indices.shape[:-1]
    out_rank = len(batch_shape) + len(dn.offset_dims)
    _check_dims(op, dn.offset_dims, out_rank, "offset_dims")
    if len(dn.start_index_map) != indices.shape[-1]:
        raise TypeError(
            f"{op}: start_index_map {dn.start_index_map} must have one entry per "
            f"element of the index vector (the last dim of indices shape "
            f"{indices.shape})"
        )
    _check_dims(op, dn.start_index_map, operand.ndim, "start_index_map", sorted_=False)
    _check_dims(op, dn.collapsed_slice_dims, operand.ndim, "collapsed_slice_dims")
    _check_batching(
        op,
        operand,
        indices,
        operand_bdims=dn.operand_batching_dims,
        indices_bdims=dn.start_indices_batching_dims,
        names=("operand_batching_dims", "start_indices_batching_dims"),
    )
    if set(dn.operand_batching_dims) & (set(dn.collapsed_slice_dims) | set(dn.start_index_map)):
        raise TypeError(
            f"{op}: operand_batching_dims {dn.operand_batching_dims} must be "
            f"disjoint from collapsed_slice_dims and start_index_map"
        )
    if len(slice_sizes) != operand.ndim:
        raise TypeError(
            f"{op}: slice_sizes {slice_sizes} must have one entry per operand "
            f"dimension (operand shape {operand.shape})"
        )
    if (
        len(dn.offset_dims) + len(dn.collapsed_slice_dims) + len(dn.operand_batching_dims)
        != operand.ndim
    ):
        raise TypeError(
            f"{op}: each operand dim must be an offset dim, collapsed or batching: "
            f"got offset_dims {dn.offset_dims}, collapsed_slice_dims "
            f"{dn.collapsed_slice_dims}, operand_batching_dims "
            f"{dn.operand_batching_dims} for operand shape {operand.shape}"
        )
    nonempty = all(d > 0 for d in indices.shape)
    for s, d in zip(slice_sizes, operand.shape, strict=True):
        if s < 0 or (nonempty and s > d):
            raise TypeError(
                f"{op}: slice_sizes {slice_sizes} must be in [0, dim] for operand "
                f"shape {operand.shape}"
            )
    for d in dn.collapsed_slice_dims + dn.operand_batching_dims:
        if slice_sizes[d] > 1 or (d in dn.collapsed_slice_dims and slice_sizes[d] != 1):
            raise TypeError(
                f"{op}: collapsed and batching dims must have slice size 1, but "
                f"slice_sizes[{d}] is {slice_sizes[d]} (slice_sizes {slice_sizes})"
            )
    window = (
        s
        for d, s in enumerate(slice_sizes)
        if d not in dn.collapsed_slice_dims and d not in dn.operand_batching_dims
    )
    batch = iter(batch_shape)
    shape = tuple(next(window) if i in dn.offset_dims else next(batch) for i in range(out_rank))
    return [ShapedArray(shape, operand.dtype, operand.weak_type)]


def _clamp_starts(indices, upper):
    """``indices[..., k]`` clamped to ``[0, upper[k]]`` as int64, without wrap-around."""
    upper = np.asarray(upper, np.int64)
    if dtypes.is_unsigned_int(indices.dtype):
        return np.minimum(indices.astype(np.uint64), upper.astype(np.uint64)).astype(np.int64)
    return np.minimum(np.maximum(indices.astype(np.int64), 0), upper)


def _in_bounds(indices, upper):
    """Whether each index vector (last dim) starts a window that fits: shape ``indices[:-1]``."""
    upper = np.asarray(upper, np.int64)
    if dtypes.is_unsigned_int(indices.dtype):
        ok = indices.astype(np.uint64) <= upper.astype(np.uint64)
    else:
        i = indices.astype(np.int64)
        ok = (i >= 0) & (i <= upper)
    return np.all(ok, axis=-1)


def _window_index(batch_shape, starts, window, *, index_map, operand_bdims, indices_bdims):
    """Operand coordinates of every window element: one int array per operand dim, of shape
    ``batch_shape + window``. ``starts[..., k]`` is the clamped start along ``index_map[k]``."""
    nb, nw = len(batch_shape), len(window)
    coords = []
    for d, w in enumerate(window):
        if d in index_map:
            start = starts[..., index_map.index(d)]
        elif d in operand_bdims:  # a batching dim: the position along its indices dim
            b = indices_bdims[operand_bdims.index(d)]
            start = np.arange(batch_shape[b]).reshape(
                [batch_shape[b] if i == b else 1 for i in range(nb)]
            )
        else:
            start = np.zeros((1,) * nb, np.int64)
        offset = np.arange(w).reshape([w if i == d else 1 for i in range(nw)])
        coords.append(np.reshape(start, start.shape + (1,) * nw) + offset)
    full = tuple(batch_shape) + tuple(window)
    return tuple(np.broadcast_to(c, full) for c in coords)


def _gather_host(
    operand,
    indices,
    *,
    dimension_numbers,
    slice_sizes,
    indices_are_sorted,
    unique_indices,
    mode,
    fill_value,
):
    dn = dimension_numbers
    batch_shape = indices.shape[:-1]
    nb = len(batch_shape)
    upper = [operand.shape[d] - slice_sizes[d] for d in dn.start_index_map]
    starts = _clamp_starts(indices, upper)
    coords = _window_index(
        batch_shape,
        starts,
        slice_sizes,
        index_map=dn.start_index_map,
        operand_bdims=dn.operand_batching_dims,
        indices_bdims=dn.start_indices_batching_dims,
    )
    out = operand[coords] if coords else np.broadcast_to(operand, batch_shape)
    kept = tuple(
        s
        for d, s in enumerate(slice_sizes)
        if d not in dn.collapsed_slice_dims and d not in dn.operand_batching_dims
    )
    out = out.reshape(batch_shape + kept)
    batch_axes = iter(range(nb))
    perm = [
        nb + dn.offset_dims.index(i) if i in dn.offset_dims else next(batch_axes)
        for i in range(out.ndim)
    ]
    out = np.transpose(out, perm)
    if mode == GatherScatterMode.FILL_OR_DROP:
        # JAX compares the indices after converting them to its signed index dtype.
        ok = _in_bounds(indices.astype(_index_dtype(operand.shape)), upper)
        ok = np.expand_dims(ok, tuple(dn.offset_dims))  # batch dims keep their order
        with np.errstate(all="ignore"):
            fill = np.array(fill_value).astype(operand.dtype)
        out = np.where(ok, out, fill)
    return [np.asarray(out, operand.dtype)]


gather_p = standard_primitive("gather", _gather_abstract_eval, _gather_host)


def _default_fill_value(dtype):
    if dtypes.is_inexact(dtype):
        return np.nan
    if dtypes.is_signed_int(dtype):
        return int(dtypes.iinfo(dtype).min)
    if dtypes.is_unsigned_int(dtype):
        return int(dtypes.iinfo(dtype).max)
    return True


def gather(
    operand,
    start_indices,
    dimension_numbers,
    slice_sizes,
    *,
    indices_are_sorted=False,
    unique_indices=False,
    mode=None,
    fill_value=None,
):
    """XLA's Gather: slices of ``operand`` of size ``slice_sizes`` at ``start_indices``.

    Args:
      operand: the array to gather from.
      start_indices: integer array whose last dim is the index vector.
      dimension_numbers: a ``GatherDimensionNumbers``.
      slice_sizes: one size per operand dim.
      mode: a ``GatherScatterMode`` or ``'clip'``/``'fill'``/``'promise_in_bounds'``;
        ``None`` means ``PROMISE_IN_BOUNDS``, as in JAX.
      fill_value: the value of out-of-bounds windows in ``FILL_OR_DROP`` mode (default NaN
        for inexact dtypes, the minimum of signed ints, the maximum of unsigned, True).

    Example: with ``dn = GatherDimensionNumbers((), (0,), (0,))``,
    ``gather(x, idx[:, None], dn, (1,))`` is ``x[idx]`` for a vector ``x``.
    """
    dn = _as_dnums(GatherDimensionNumbers, dimension_numbers, "lax.gather")
    mode = GatherScatterMode.from_any(GatherScatterMode.PROMISE_IN_BOUNDS if mode is None else mode)
    if mode == GatherScatterMode.FILL_OR_DROP:
        if fill_value is None:
            fill_value = _default_fill_value(get_aval(operand).dtype)
        elif isinstance(fill_value, np.generic):
            fill_value = fill_value.item()
    else:
        fill_value = None
    sizes = _ints(slice_sizes, "lax.gather", "slice_sizes")
    return gather_p.bind(
        operand,
        start_indices,
        dimension_numbers=dn,
        slice_sizes=sizes,
        indices_are_sorted=bool(indices_are_sorted),
        unique_indices=bool(unique_indices),
        mode=mode,
        fill_value=fill_value,
    )


# --------------------------------------------------------------------------- scatter


class ScatterDimensionNumbers(NamedTuple):
    """How the dimensions of a scatter's operand, indices and updates relate (XLA's Scatter).

    ``update_window_dims``: dims of ``updates`` that are window dims;
    ``inserted_window_dims``: operand dims of window size 1 absent from ``updates``;
    ``scatter_dims_to_operand_dims``: the operand dim each entry of the index vector (the last
    dim of the indices) starts; ``operand_batching_dims`` and
    ``scatter_indices_batching_dims``: dims of operand and indices traversed together.
    """

    update_window_dims: tuple
    inserted_window_dims: tuple
    scatter_dims_to_operand_dims: tuple
    operand_batching_dims: tuple = ()
    scatter_indices_batching_dims: tuple = ()


def _scatter_window(operand, updates, dn):
    """The window size along every operand dim (1 for inserted and batching dims)."""
    window, pos = [], 0
    for d in range(operand.ndim):
        if d in dn.inserted_window_dims or d in dn.operand_batching_dims:
            window.append(1)
        else:
            window.append(updates.shape[dn.update_window_dims[pos]])
            pos += 1
    return window


def _scatter_abstract_eval(name, kinds):
    op = f"lax.{name}"

    def rule(
        operand, indices, updates, *, dimension_numbers, indices_are_sorted, unique_indices, mode
    ):
        dn = dimension_numbers
        _check_index_dtype(op, indices)
        if updates.dtype != operand.dtype:
            raise TypeError(
                f"{op} requires arguments to have the same dtypes, got "
                f"{operand.dtype}, {updates.dtype}"
            )
        check_dtype(op, operand.dtype, kinds)
        batch_shape = indices.shape[:-1]
        if updates.ndim != len(batch_shape) + len(dn.update_window_dims):
            raise TypeError(
                f"{op}: updates must have rank "
                f"{len(batch_shape) + len(dn.update_window_dims)} (indices batch "
                f"rank {len(batch_shape)} + {len(dn.update_window_dims)} window "
                f"dims), got updates shape {updates.shape}"
            )
        _check_dims(op, dn.update_window_dims, updates.ndim, "update_window_dims")
        _check_dims(op, dn.inserted_window_dims, operand.ndim, "inserted_window_dims")
        _check_batching(
            op,
            operand,
            indices,
            operand_bdims=dn.operand_batching_dims,
            indices_bdims=dn.scatter_indices_batching_dims,
            names=("operand_batching_dims", "scatter_indices_batching_dims"),
        )
        bdims = set(dn.operand_batching_dims)
        if bdims & (set(dn.inserted_window_dims) | set(dn.scatter_dims_to_operand_dims)):
            raise TypeError(
                f"{op}: operand_batching_dims {dn.operand_batching_dims} must be "
                "disjoint from inserted_window_dims and "
                "scatter_dims_to_operand_dims"
            )
        n_window = (
            len(dn.update_window_dims)
            + len(dn.inserted_window_dims)
            + len(dn.operand_batching_dims)
        )
        if n_window != operand.ndim:
            raise TypeError(
                f"{op}: update_window_dims {dn.update_window_dims}, "
                f"inserted_window_dims {dn.inserted_window_dims} and "
                f"operand_batching_dims {dn.operand_batching_dims} must account "
                f"for every dim of the operand of shape {operand.shape}"
            )
        if len(dn.scatter_dims_to_operand_dims) != indices.shape[-1]:
            raise TypeError(
                f"{op}: scatter_dims_to_operand_dims "
                f"{dn.scatter_dims_to_operand_dims} must have one entry per "
                f"element of the index vector (the last dim of indices shape "
                f"{indices.shape})"
            )
        _check_dims(
            op,
            dn.scatter_dims_to_operand_dims,
            operand.ndim,
            "scatter_dims_to_operand_dims",
            sorted_=False,
        )
        window_dims = [
            d for d in range(operand.ndim) if d not in dn.inserted_window_dims and d not in bdims
        ]
        for u, d in zip(dn.update_window_dims, window_dims, strict=True):
            if updates.shape[u] > operand.shape[d]:
                raise TypeError(
                    f"{op}: the window of updates (shape {updates.shape}) "
                    f"exceeds the operand (shape {operand.shape}) along operand "
                    f"dim {d}"
                )
        scatter_shape = tuple(
            s for i, s in enumerate(updates.shape) if i not in dn.update_window_dims
        )
        if scatter_shape != batch_shape:
            raise TypeError(
                f"{op}: the scatter dims of updates (shape {updates.shape}) must "
                f"match the batch dims of indices (shape {indices.shape}): "
                f"{scatter_shape} != {batch_shape}"
            )
        return [ShapedArray(operand.shape, operand.dtype, operand.weak_type)]

    return rule


def _scatter_host(combine):
    """The NumPy impl of a scatter whose combiner is ``combine`` (a ufunc, or None to
    replace)."""

    def impl(
        operand, indices, updates, *, dimension_numbers, indices_are_sorted, unique_indices, mode
    ):
        dn = dimension_numbers
        batch_shape = indices.shape[:-1]
        window = _scatter_window(operand, updates, dn)
        scatter_axes = [i for i in range(updates.ndim) if i not in dn.update_window_dims]
        upd = np.transpose(updates, scatter_axes + list(dn.update_window_dims))
        upd = upd.reshape(batch_shape + tuple(window))
        upper = [operand.shape[d] - window[d] for d in dn.scatter_dims_to_operand_dims]
        starts = _clamp_starts(indices, upper)
        coords = _window_index(
            batch_shape,
            starts,
            window,
            index_map=dn.scatter_dims_to_operand_dims,
            operand_bdims=dn.operand_batching_dims,
            indices_bdims=dn.scatter_indices_batching_dims,
        )
        if mode != GatherScatterMode.CLIP:  # XLA drops every window that does not fit
            ok = _in_bounds(indices, upper)
            coords = tuple(c[ok] for c in coords)
            upd = upd[ok]
        out = operand.copy()
        if not coords:  # a rank-0 operand: every update lands on it
            coords, out = (np.zeros(upd.shape, np.intp),), out.reshape(1)
        with np.errstate(all="ignore"):
            if combine is None:
                out[coords] = upd
            else:
                combine.at(out, coords, upd)
        return [out.reshape(operand.shape)]

    return impl


def _scatter_primitive(name, kinds, combine):
    return standard_primitive(
        name, _scatter_abstract_eval(name.replace("-", "_"), kinds), _scatter_host(combine)
    )


scatter_p = _scatter_primitive("scatter", ANY, None)
scatter_add_p = _scatter_primitive("scatter-add", NUMBER, np.add)
scatter_mul_p = _scatter_primitive("scatter-mul", NUMBER, np.multiply)
scatter_min_p = _scatter_primitive("scatter-min", ANY, np.minimum)
scatter_max_p = _scatter_primitive("scatter-max", ANY, np.maximum)
scatter_sub_p = _scatter_primitive("scatter-sub", NUMBER, np.subtract)


def _printed_update_params(combine):
    """JAX's scatters carry their combining function as params, ``update_jaxpr`` (one jaxpr
    per dtype, which JAX caches, so repeated scatters share it) and ``update_consts``;
    xform's primitive is the combination itself, so they are derived for printing only."""

    @functools.cache
    def update_jaxpr(dtype):
        aval = ShapedArray((), dtype)
        x, y, out = core.Var(aval), core.Var(aval), core.Var(aval)
        return core.Jaxpr([], [x, y], [out], [core.JaxprEqn(combine, [x, y], [out], {})])

    def derive(eqn):
        jaxpr = None if combine is None else update_jaxpr(eqn.outvars[0].aval.dtype)
        return {"update_consts": (), "update_jaxpr": jaxpr}

    return derive


for _prim, _combine in (
    (scatter_p, None),
    (scatter_add_p, elementwise.add_p),
    (scatter_mul_p, elementwise.mul_p),
    (scatter_min_p, elementwise.min_p),
    (scatter_max_p, elementwise.max_p),
    (scatter_sub_p, elementwise.sub_p),
):
    jaxpr_printer.pp_derived_params[_prim.name] = _printed_update_params(_combine)


def _scatter_wrapper(prim, name, doc):
    """The public function of one scatter primitive: JAX's signature, params canonicalized."""

    def wrapper(
        operand,
        scatter_indices,
        updates,
        dimension_numbers,
        *,
        indices_are_sorted=False,
        unique_indices=False,
        mode=None,
    ):
        dn = _as_dnums(ScatterDimensionNumbers, dimension_numbers, f"lax.{prim.name}")
        return prim.bind(
            operand,
            scatter_indices,
            updates,
            dimension_numbers=dn,
            indices_are_sorted=bool(indices_are_sorted),
            unique_indices=bool(unique_indices),
            mode=GatherScatterMode.from_any(mode),
        )

    wrapper.__name__ = wrapper.__qualname__ = name
    wrapper.__doc__ = doc
    return wrapper


scatter = _scatter_wrapper(
    scatter_p,
    "scatter",
    """XLA's Scatter: ``operand`` with the
    windows at ``scatter_indices`` set to ``updates``.

    ``mode=None`` drops out-of-bounds windows (``FILL_OR_DROP``); ``'clip'`` clamps them in.
    Duplicate indices are applied in an unspecified order.

    Example: with ``dn = ScatterDimensionNumbers((), (0,), (0,))``,
    ``scatter(x, idx[:, None], v, dn)`` is ``x.at[idx].set(v)`` for a vector ``x``.
    """,
)
scatter_add = _scatter_wrapper(
    scatter_add_p,
    "scatter_add",
    "``scatter`` that adds ``updates`` into ``operand`` (``x.at[idx].add(v)``).",
)
scatter_mul = _scatter_wrapper(
    scatter_mul_p,
    "scatter_mul",
    "``scatter`` that multiplies ``operand`` by ``updates`` (``x.at[idx].multiply(v)``).",
)
scatter_min = _scatter_wrapper(
    scatter_min_p,
    "scatter_min",
    "``scatter`` keeping the minimum of ``operand`` and ``updates`` (``x.at[idx].min(v)``).",
)
scatter_max = _scatter_wrapper(
    scatter_max_p,
    "scatter_max",
    "``scatter`` keeping the maximum of ``operand`` and ``updates`` (``x.at[idx].max(v)``).",
)

scatter_sub = _scatter_wrapper(
    scatter_sub_p,
    "scatter_sub",
    "``scatter`` that subtracts ``updates`` from ``operand`` (``x.at[idx].subtract(v)``).",
)


# --------------------------------------------------------------------------- jvp rules
# Every gather and scatter is linear in its array operands; integer indices get float0
# tangents and never contribute. The scatters follow JAX's rules (jax/_src/lax/slicing.py)
# exactly.


# Out-of-bounds windows of the tangent are filled with 0, not the primal's fill value.
def _gather_tangent(t, x, indices, *, fill_value, **params):
    return gather(t, indices, **params, fill_value=0)


ad.defjvp(gather_p, _gather_tangent)


def _inverse_gather(scatter_dn, operand_aval, updates_aval):
    """The gather dimension numbers and slice sizes that read back a scatter's windows."""
    dn = GatherDimensionNumbers(
        offset_dims=scatter_dn.update_window_dims,
        collapsed_slice_dims=scatter_dn.inserted_window_dims,
        start_index_map=scatter_dn.scatter_dims_to_operand_dims,
        operand_batching_dims=scatter_dn.operand_batching_dims,
        start_indices_batching_dims=scatter_dn.scatter_indices_batching_dims,
    )
    return dn, tuple(_scatter_window(operand_aval, updates_aval, scatter_dn))


def _scatter_jvp(primals, tangents, *, dimension_numbers, indices_are_sorted, unique_indices, mode):
    operand, indices, updates = primals
    t_operand, _, t_updates = tangents
    params = dict(
        dimension_numbers=dimension_numbers,
        indices_are_sorted=indices_are_sorted,
        unique_indices=unique_indices,
        mode=mode,
    )
    if type(t_operand) is ad.Zero and type(t_updates) is ad.Zero:
        out = scatter_p.bind(operand, indices, updates, **params)
        return [out], [ad.Zero(ad.tangent_aval(get_aval(out)))]
    t_operand, t_updates = ad.instantiate(t_operand), ad.instantiate(t_updates)
    if unique_indices:
        return (
            [scatter_p.bind(operand, indices, updates, **params)],
            [scatter_p.bind(t_operand, indices, t_updates, **params)],
        )
    # With overlapping windows it is unspecified which update wins, so, as JAX does: scatter a
    # positive id per update, gather the ids back to see which update won each element, mask
    # the losers (and overwritten operand elements) out, and scatter-add what is left.
    dn = dimension_numbers
    u_aval, o_aval = get_aval(updates), get_aval(operand)
    ids_shape = tuple(1 if d in dn.update_window_dims else s for d, s in enumerate(u_aval.shape))
    num_ids = int(np.prod(ids_shape, dtype=np.int64))
    id_dtype = next(
        d for d in (np.uint8, np.uint16, np.uint32, np.uint64) if num_ids < np.iinfo(d).max
    )
    ids = add(reshape(iota(id_dtype, num_ids), ids_shape), full(ids_shape, 1, id_dtype))
    ids = broadcast_in_dim(ids, u_aval.shape, tuple(range(u_aval.ndim)))
    scattered_ids = scatter_p.bind(full(o_aval.shape, 0, id_dtype), indices, ids, **params)
    gather_dn, slice_sizes = _inverse_gather(dn, o_aval, u_aval)
    gathered_ids = gather(scattered_ids, indices, gather_dn, slice_sizes)
    kept = eq(scattered_ids, full(o_aval.shape, 0, id_dtype))
    won = eq(ids, gathered_ids)

    def masked(mask, x):
        return select(mask, x, full_like(x, 0))

    out = scatter_add_p.bind(masked(kept, operand), indices, masked(won, updates), **params)
    t = scatter_add_p.bind(masked(kept, t_operand), indices, masked(won, t_updates), **params)
    return [out], [t]


def _linear_scatter_jvp(prim):
    """The JVP of scatter_add / scatter_sub: linear in operand and updates jointly, so the
    tangent is the same scatter of the tangents (the indices get none)."""

    def jvp(primals, tangents, **params):
        operand, indices, updates = primals
        out = prim.bind(operand, indices, updates, **params)
        t_operand, _, t_updates = tangents
        if type(t_operand) is ad.Zero and type(t_updates) is ad.Zero:
            return [out], [ad.Zero(ad.tangent_aval(get_aval(out)))]
        return [out], [
            prim.bind(ad.instantiate(t_operand), indices, ad.instantiate(t_updates), **params)
        ]

    return jvp


def _scatter_mul_jvp_updates(t, x, indices, updates, **params):
    if not params["unique_indices"]:
        raise NotImplementedError(
            "scatter_mul gradients are only implemented if `unique_indices=True` (as in JAX)"
        )
    return mul(x, scatter_add_p.bind(full_like(x, 0), indices, t, **params))


def _scatter_extremal_jvp(prim, primals, tangents, **params):
    operand, indices, updates = primals
    out = prim.bind(operand, indices, updates, **params)
    t_operand, _, t_updates = tangents
    if type(t_operand) is ad.Zero and type(t_updates) is ad.Zero:
        return [out], [ad.Zero(ad.tangent_aval(get_aval(out)))]
    t_operand, t_updates = ad.instantiate(t_operand), ad.instantiate(t_updates)
    dn = params["dimension_numbers"]
    gather_dn, slice_sizes = _inverse_gather(dn, get_aval(operand), get_aval(updates))

    def gathered(x):
        return gather(x, indices, gather_dn, slice_sizes)

    def count(x):  # how many of the updates selected by x land on each update's window
        return gathered(scatter_add(full_like(operand, 0), indices, x, dn))

    # As JAX: elements tied for the extremum share the tangent equally, the operand counting
    # as one contender where it keeps its value.
    initial, target = gathered(operand), gathered(out)
    successful = eq(updates, target)
    retained = eq(initial, target)
    zeros, ones = full_like(updates, 0), full_like(updates, 1)
    num_updates = count(select(successful, ones, zeros))
    num_refs = count(ones)
    updates_normalizer = select(retained, div(ones, add(num_updates, ones)), div(ones, num_updates))
    updates_coef = select(successful, updates_normalizer, zeros)
    operand_normalizer = select(retained, div(ones, add(num_updates, ones)), zeros)
    operand_coef = div(sub(operand_normalizer, ones), num_refs)
    t_windows = add(mul(gathered(t_operand), operand_coef), mul(t_updates, updates_coef))
    return [out], [scatter_add_p.bind(t_operand, indices, t_windows, **params)]


ad.jvp_rules[scatter_p] = _scatter_jvp
ad.jvp_rules[scatter_add_p] = _linear_scatter_jvp(scatter_add_p)


ad.jvp_rules[scatter_sub_p] = _linear_scatter_jvp(scatter_sub_p)
ad.defjvp(
    scatter_mul_p,
    lambda t, x, indices, updates, **params: scatter_mul_p.bind(t, indices, updates, **params),
    None,
    _scatter_mul_jvp_updates,
)
ad.jvp_rules[scatter_min_p] = lambda primals, tangents, **params: _scatter_extremal_jvp(
    scatter_min_p, primals, tangents, **params
)
ad.jvp_rules[scatter_max_p] = lambda primals, tangents, **params: _scatter_extremal_jvp(
    scatter_max_p, primals, tangents, **params
)


# --------------------------------------------------------------------------- transpose rules
# Indices are never linear. Gathers and scatters transpose into each other with the same
# windows; the modes are chosen so that out-of-bounds windows go where the forward op took
# them from (clamped, or dropped/filled), which makes each rule the exact adjoint.


def _aval(x):
    return x.aval if transpose.is_undefined(x) else get_aval(x)


def _zeros(aval):
    return full(aval.shape, 0, aval.dtype)


def _gather_transpose(
    ct,
    operand,
    indices,
    *,
    dimension_numbers,
    slice_sizes,
    indices_are_sorted,
    unique_indices,
    mode,
    fill_value,
):
    dn = dimension_numbers
    scatter_dn = ScatterDimensionNumbers(
        update_window_dims=dn.offset_dims,
        inserted_window_dims=dn.collapsed_slice_dims,
        scatter_dims_to_operand_dims=dn.start_index_map,
        operand_batching_dims=dn.operand_batching_dims,
        scatter_indices_batching_dims=dn.start_indices_batching_dims,
    )
    # The same mode, as JAX: under PROMISE_IN_BOUNDS an out-of-bounds window is clamped by
    # the gather but dropped by its transpose (XLA's scatter), so its cotangent is zero.
    out = scatter_add_p.bind(
        _zeros(operand.aval),
        indices,
        ct,
        dimension_numbers=scatter_dn,
        indices_are_sorted=indices_are_sorted,
        unique_indices=unique_indices,
        mode=mode,
    )
    return [out, None]


def _gather_windows(ct, indices, updates_aval, dimension_numbers, mode, **params):
    """The cotangent of a scatter's updates: its windows of ``ct`` read back by a gather."""
    gather_dn, slice_sizes = _inverse_gather(dimension_numbers, get_aval(ct), updates_aval)
    # A scatter that may go out of bounds drops unless it clips; so must its transpose.
    if mode != GatherScatterMode.CLIP:
        mode, fill_value = GatherScatterMode.FILL_OR_DROP, 0
    else:
        fill_value = None
    return gather_p.bind(
        ct,
        indices,
        dimension_numbers=gather_dn,
        slice_sizes=slice_sizes,
        indices_are_sorted=params["indices_are_sorted"],
        unique_indices=params["unique_indices"],
        mode=mode,
        fill_value=fill_value,
    )


def _scatter_add_transpose(ct, operand, indices, updates, **params):
    t_operand = ct if transpose.is_undefined(operand) else None
    t_updates = None
    if transpose.is_undefined(updates):
        t_updates = _gather_windows(ct, indices, updates.aval, **params)
    return [t_operand, None, t_updates]


def _scatter_transpose(ct, operand, indices, updates, **params):
    if not params["unique_indices"]:
        raise NotImplementedError(
            "scatter transpose is only implemented where unique_indices=True (as in JAX)"
        )
    t_operand = t_updates = None
    if transpose.is_undefined(operand):  # the overwritten elements get no cotangent
        t_operand = scatter_p.bind(ct, indices, _zeros(_aval(updates)), **params)
    if transpose.is_undefined(updates):
        t_updates = _gather_windows(ct, indices, updates.aval, **params)
    return [t_operand, None, t_updates]


def _scatter_mul_transpose(ct, operand, indices, updates, **params):
    if transpose.is_undefined(updates):
        raise NotImplementedError(
            "scatter_mul is linear in its operand only; its updates cannot be transposed"
        )
    return [scatter_mul_p.bind(ct, indices, updates, **params), None, None]


transpose.transpose_rules[gather_p] = _gather_transpose
transpose.transpose_rules[scatter_add_p] = _scatter_add_transpose


def _scatter_sub_transpose(ct, operand, indices, updates, **params):
    t_operand = ct if transpose.is_undefined(operand) else None
    t_updates = None
    if transpose.is_undefined(updates):
        windows = _gather_windows(ct, indices, updates.aval, **params)
        t_updates = sub(_zeros(updates.aval), windows)
    return [t_operand, None, t_updates]


transpose.transpose_rules[scatter_sub_p] = _scatter_sub_transpose
transpose.transpose_rules[scatter_p] = _scatter_transpose
transpose.transpose_rules[scatter_mul_p] = _scatter_mul_transpose


# --------------------------------------------------------------------------- batching rules
# Static slices, and dynamic ones at unmapped starts, take the whole batch dim along. Mapped
# starts or indices make one gather (or scatter) over the whole batch: the batch becomes one
# more pair of batching dims (operand_batching_dims, start_indices_batching_dims), which pairs
# entry k of the indices with entry k of the operand, so nothing is looped over.


def _shift(dims):
    return tuple(d + 1 for d in dims)


def _gather_batch(
    axis,
    args,
    dims,
    *,
    dimension_numbers,
    slice_sizes,
    indices_are_sorted,
    unique_indices,
    mode,
    fill_value,
):
    operand, indices = args
    o_d, i_d = dims
    dn = dimension_numbers
    if i_d is batching.not_mapped:
        # The same windows for every entry: the batch is one more (whole) window dim, the
        # first, so it lands first in the output.
        operand = batching.moveaxis(operand, o_d, 0)
        dn = GatherDimensionNumbers(
            offset_dims=(0,) + _shift(dn.offset_dims),
            collapsed_slice_dims=_shift(dn.collapsed_slice_dims),
            start_index_map=_shift(dn.start_index_map),
            operand_batching_dims=_shift(dn.operand_batching_dims),
            start_indices_batching_dims=dn.start_indices_batching_dims,
        )
        slice_sizes = (axis.size,) + slice_sizes
    elif o_d is batching.not_mapped:
        # One operand, more indices: the batch is a leading batch dim of the indices, and so of
        # the output. Entries may now repeat or come unsorted.
        indices = batching.moveaxis(indices, i_d, 0)
        dn = dn._replace(
            offset_dims=_shift(dn.offset_dims),
            start_indices_batching_dims=_shift(dn.start_indices_batching_dims),
        )
        indices_are_sorted = unique_indices = False
    else:
        # Entry k of the indices reads from entry k of the operand: a pair of batching dims.
        operand = batching.moveaxis(operand, o_d, 0)
        indices = batching.moveaxis(indices, i_d, 0)
        dn = GatherDimensionNumbers(
            offset_dims=_shift(dn.offset_dims),
            collapsed_slice_dims=_shift(dn.collapsed_slice_dims),
            start_index_map=_shift(dn.start_index_map),
            operand_batching_dims=(0,) + _shift(dn.operand_batching_dims),
            start_indices_batching_dims=(0,) + _shift(dn.start_indices_batching_dims),
        )
        # A batching dim's slice size is 1, or 0 for an empty batch (it must fit the operand).
        slice_sizes = (min(axis.size, 1),) + slice_sizes
    out = gather_p.bind(
        operand,
        indices,
        dimension_numbers=dn,
        slice_sizes=slice_sizes,
        indices_are_sorted=indices_are_sorted,
        unique_indices=unique_indices,
        mode=mode,
        fill_value=fill_value,
    )
    return [out], [0]


def _scatter_batch(
    prim, axis, args, dims, *, dimension_numbers, indices_are_sorted, unique_indices, mode
):
    operand, indices, updates = args
    o_d, i_d, u_d = dims
    # The result varies along the batch whatever is mapped, so the operand is scattered into
    # batched; the updates get the batch too, as a window dim or a scatter dim.
    operand = batching.batch_at_front(operand, o_d, axis.size)
    updates = batching.batch_at_front(updates, u_d, axis.size)
    dn = dimension_numbers
    if i_d is batching.not_mapped:
        # The same windows for every entry: the batch is one more (whole) window dim.
        dn = ScatterDimensionNumbers(
            update_window_dims=(0,) + _shift(dn.update_window_dims),
            inserted_window_dims=_shift(dn.inserted_window_dims),
            scatter_dims_to_operand_dims=_shift(dn.scatter_dims_to_operand_dims),
            operand_batching_dims=_shift(dn.operand_batching_dims),
            scatter_indices_batching_dims=dn.scatter_indices_batching_dims,
        )
    else:
        # Entry k of the indices writes into entry k of the operand: a pair of batching dims.
        indices = batching.moveaxis(indices, i_d, 0)
        dn = ScatterDimensionNumbers(
            update_window_dims=_shift(dn.update_window_dims),
            inserted_window_dims=_shift(dn.inserted_window_dims),
            scatter_dims_to_operand_dims=_shift(dn.scatter_dims_to_operand_dims),
            operand_batching_dims=(0,) + _shift(dn.operand_batching_dims),
            scatter_indices_batching_dims=(0,) + _shift(dn.scatter_indices_batching_dims),
        )
    out = prim.bind(
        operand,
        indices,
        updates,
        dimension_numbers=dn,
        indices_are_sorted=indices_are_sorted,
        unique_indices=unique_indices,
        mode=mode,
    )
    return [out], [0]


batching.batch_rules[gather_p] = _gather_batch
for _prim in (scatter_p, scatter_add_p, scatter_mul_p, scatter_min_p, scatter_max_p, scatter_sub_p):
    batching.batch_rules[_prim] = functools.partial(_scatter_batch, _prim)
