"""Products and contractions (dot, matmul, vdot, inner, outer, tensordot, einsum, trace,
diagonal), all lowered to ``dot_general`` plus transposes, reshapes and reductions.
"""

import builtins
import operator

import numpy as np
import opt_einsum

from xform import dtypes
from xform.api.sharding import auto_axes
from xform.lax import _names as lax
from xform.numpy._promote import (
    _ARRAY_TYPES,
    _canonical_dtype,
    asarray,
    aval_of,
    broadcast_shapes,
    broadcast_to_shape,
    check_arraylike,
    convert,
    result_type,
)
from xform.numpy._reductions import canonicalize_axis
from xform.numpy._reductions import sum as sum_
from xform.numpy._shape import moveaxis, ravel
from xform.numpy._staged import staged
from xform.numpy._ufuncs import conjugate, full_like_aval, multiply, where_

__all__ = [
    "dot",
    "matmul",
    "vdot",
    "vecdot",
    "inner",
    "outer",
    "tensordot",
    "einsum",
    "einsum_path",
    "trace",
    "diagonal",
]


def _operands(name, a, b, preferred_element_type):
    if (
        preferred_element_type is None
        and isinstance(a, _ARRAY_TYPES)
        and isinstance(b, _ARRAY_TYPES)
    ):
        # The common case, kept cheap: two arrays of one strong dtype need no promotion.
        a_aval, b_aval = a.aval, b.aval
        if a_aval.dtype == b_aval.dtype and not (a_aval.weak_type or b_aval.weak_type):
            return a, b, a_aval.dtype, False
    check_arraylike(name, a, b)
    common, weak = result_type(a, b, return_weak_type_flag=True)
    dtype = common
    if preferred_element_type is not None:
        dtype, weak = _canonical_dtype(preferred_element_type, name), False
        # As lax.dot_general's check (JAX's jnp functions pass the type on to it).
        if not dtypes.is_float(common) and dtype.itemsize < common.itemsize:
            raise TypeError(
                f"{name}: `preferred_element_type` must not be narrower than the "
                f"original type, got preferred_element_type of {dtype} for "
                f"result type of {common}."
            )
    return convert(asarray(a), common), convert(asarray(b), common), dtype, weak


def _finish(out, dtype, weak):
    return convert(out, dtype, weak)


def dot(a, b, *, precision=None, preferred_element_type=None, out_sharding=None):
    """Dot product: sum over the last axis of ``a`` and the second-to-last of ``b``;
    ``out_sharding`` lays the result out so (as ``lax.dot_general``'s)."""
    a, b, dtype, weak = _operands("dot", a, b, preferred_element_type)
    a_ndim, b_ndim = aval_of(a).ndim, aval_of(b).ndim
    if a_ndim == 0 or b_ndim == 0:
        contract = ((), ())
    else:
        contract = ((a_ndim - 1,), (0,)) if b_ndim == 1 else ((a_ndim - 1,), (b_ndim - 2,))
    # The product accumulates in the result type (uint8 operands into an int32 result
    # do not wrap), as JAX's.
    out = lax.dot_general(
        a,
        b,
        (contract, ((), ())),
        precision=precision,
        preferred_element_type=dtype,
        out_sharding=out_sharding,
    )
    return _finish(out, dtype, weak)


def matmul(a, b, *, precision=None, preferred_element_type=None, out_sharding=None):
    """Matrix product with NumPy's batching rules (``a @ b``); ``out_sharding`` lays the
    result out so (as ``lax.dot_general``'s)."""
    a, b, dtype, weak = _operands("matmul", a, b, preferred_element_type)
    for i, x in enumerate((a, b)):
        if aval_of(x).ndim == 0:
            raise ValueError(
                f"matmul input operand {i} must have ndim at least 1, but it has ndim 0"
            )
    if aval_of(a).ndim == 1 or aval_of(b).ndim == 1:
        return _matvec(a, b, dtype, weak, precision, out_sharding)
    a_shape, b_shape = aval_of(a).shape, aval_of(b).shape
    try:
        batch = (
            broadcast_shapes(a_shape[:-2], b_shape[:-2])
            if len(a_shape) > 2 or len(b_shape) > 2
            else ()
        )
    except ValueError:
        raise ValueError(
            f"Incompatible shapes for matmul arguments: {a_shape} and {b_shape}"
        ) from None
    if a_shape[-1] != b_shape[-2]:  # TypeError, as JAX's (from dot_general)
        raise TypeError(
            f"matmul: contracting dimensions differ: operand shapes {a_shape} "
            f"and {b_shape} ({a_shape[-1]} != {b_shape[-2]})"
        )
    if batch:  # matrices need no broadcast
        a = broadcast_to_shape(a, batch + a_shape[-2:])
        b = broadcast_to_shape(b, batch + b_shape[-2:])
    nb = len(batch)
    dims = (((nb + 1,), (nb,)), (tuple(range(nb)), tuple(range(nb))))
    out = lax.dot_general(
        a, b, dims, precision=precision, preferred_element_type=dtype, out_sharding=out_sharding
    )
    return _finish(out, dtype, weak)


def _matvec(a, b, dtype, weak, precision, out_sharding=None):
    # A vector operand contracts as it is (JAX's dot_general): the other operand's dimensions
    # need no broadcast, and no unit dimension is added and squeezed, which under vmap would
    # make (B, k, 1) operands that XLA multiplies more slowly than (B, k).
    a_shape, b_shape = aval_of(a).shape, aval_of(b).shape
    a_dim = 0 if len(a_shape) == 1 else len(a_shape) - 1
    b_dim = 0 if len(b_shape) == 1 else len(b_shape) - 2
    if a_shape[a_dim] != b_shape[b_dim]:  # TypeError, as JAX's (from dot_general)
        raise TypeError(
            f"matmul: contracting dimensions differ: operand shapes {a_shape} "
            f"and {b_shape} ({a_shape[a_dim]} != {b_shape[b_dim]})"
        )
    out = lax.dot_general(
        a,
        b,
        (((a_dim,), (b_dim,)), ((), ())),
        precision=precision,
        preferred_element_type=dtype,
        out_sharding=out_sharding,
    )
    return _finish(out, dtype, weak)


def vdot(a, b, *, precision=None, preferred_element_type=None):
    """Dot product of the flattened arrays, conjugating ``a``."""
    check_arraylike("vdot", a, b)
    a = asarray(a)
    if dtypes.is_complex(aval_of(a).dtype):
        a = conjugate(a)
    return dot(
        ravel(a), ravel(b), precision=precision, preferred_element_type=preferred_element_type
    )


def vecdot(x1, x2, /, *, axis=-1, precision=None, preferred_element_type=None):
    """Vector dot product along ``axis`` (conjugating ``x1``), with broadcasting."""
    x1, x2, dtype, weak = _operands("vecdot", x1, x2, preferred_element_type)
    s1, s2 = aval_of(x1).shape, aval_of(x2).shape
    if not s1 or not s2 or s1[axis] != s2[axis]:
        raise ValueError(f"vecdot: axes must match; got shapes {s1} and {s2} with axis={axis}")
    x1 = moveaxis(x1, axis, -1)
    x2 = moveaxis(x2, axis, -1)
    if dtypes.is_complex(aval_of(x1).dtype):
        x1 = conjugate(x1)
    batch = broadcast_shapes(aval_of(x1).shape[:-1], aval_of(x2).shape[:-1])
    x1 = broadcast_to_shape(x1, batch + aval_of(x1).shape[-1:])
    x2 = broadcast_to_shape(x2, batch + aval_of(x2).shape[-1:])
    nb = len(batch)
    dims = (((nb,), (nb,)), (tuple(range(nb)), tuple(range(nb))))
    out = lax.dot_general(x1, x2, dims, precision=precision, preferred_element_type=dtype)
    return _finish(out, dtype, weak)


def inner(a, b, *, precision=None, preferred_element_type=None):
    """Sum product over the last axes of ``a`` and ``b``."""
    a, b, dtype, weak = _operands("inner", a, b, preferred_element_type)
    a_ndim, b_ndim = aval_of(a).ndim, aval_of(b).ndim
    contract = ((), ()) if a_ndim == 0 or b_ndim == 0 else ((a_ndim - 1,), (b_ndim - 1,))
    out = lax.dot_general(
        a, b, (contract, ((), ())), precision=precision, preferred_element_type=dtype
    )
    return _finish(out, dtype, weak)


def outer(a, b, out=None):
    """``a.ravel()[:, None] * b.ravel()[None, :]``."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to xform.numpy.outer is not supported.")
    check_arraylike("outer", a, b)
    a, b = ravel(a), ravel(b)
    return multiply(lax.expand_dims(a, (1,)), lax.expand_dims(b, (0,)))


def tensordot(a, b, axes=2, *, precision=None, preferred_element_type=None):
    """Contract the last ``axes`` axes of ``a`` with the first of ``b`` (or given pairs)."""
    a, b, dtype, weak = _operands("tensordot", a, b, preferred_element_type)
    a_ndim, b_ndim = aval_of(a).ndim, aval_of(b).ndim
    if isinstance(axes, int) or hasattr(axes, "__index__"):
        n = int(axes)
        if n < 0 or n > builtins.min(a_ndim, b_ndim):
            raise TypeError(
                f"tensordot: number of contracting axes {n} must be between 0 "
                f"and min(a.ndim, b.ndim) = {builtins.min(a_ndim, b_ndim)}"
            )
        ca, cb = tuple(range(a_ndim - n, a_ndim)), tuple(range(n))
    elif isinstance(axes, (list, tuple)) and len(axes) == 2:
        ax_a, ax_b = axes
        ax_a = (ax_a,) if isinstance(ax_a, int) else tuple(ax_a)
        ax_b = (ax_b,) if isinstance(ax_b, int) else tuple(ax_b)
        if len(ax_a) != len(ax_b):
            raise TypeError(f"tensordot requires axes lists of equal length, got {axes}")
        ca = tuple(canonicalize_axis(i, a_ndim, "tensordot") for i in ax_a)
        cb = tuple(canonicalize_axis(i, b_ndim, "tensordot") for i in ax_b)
    else:
        raise TypeError(f"tensordot: axes must be an int or a pair of sequences, got {axes!r}")
    out = lax.dot_general(
        a, b, ((ca, cb), ((), ())), precision=precision, preferred_element_type=dtype
    )
    return _finish(out, dtype, weak)


# --------------------------------------------------------------------------- einsum


class _Unoptimized(opt_einsum.paths.PathOptimizer):
    """The path ``optimize=False`` asks for: operands contracted left to right."""

    def __call__(self, inputs, *args, **kwargs):
        return [(0, 1)] * (len(inputs) - 1)


class _ShapeOnly:
    """What opt_einsum sees of an operand: its shape (the path depends on nothing else)."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape, dtype):
        self.shape, self.dtype = shape, dtype


def _path_type(optimize):
    if optimize is True:
        return "optimal"
    if optimize is False:
        return _Unoptimized()
    return optimize


def _check_subscripts(subscripts, shapes):
    """Errors that name the operand and the letter, before opt_einsum plans the string form
    (it raises ``ValueError`` for these too, with its own words)."""
    inputs = subscripts.replace(" ", "").split("->")[0].split(",")
    if len(inputs) != len(shapes):
        raise ValueError(
            f"einsum: subscripts {subscripts!r} name {len(inputs)} operands, got {len(shapes)}"
        )
    sizes = {}
    for spec, shape in zip(inputs, shapes, strict=True):
        letters = spec.replace("...", "")
        rank_ok = len(letters) <= len(shape) if "..." in spec else len(letters) == len(shape)
        if not rank_ok:
            raise ValueError(
                f"einsum: subscripts {spec!r} do not match an operand of rank "
                f"{len(shape)} (shape {shape})"
            )
        dims = shape
        if "..." in spec:  # the letters before and after the ellipsis
            before, after = spec.index("..."), len(spec) - spec.index("...") - 3
            dims = shape[:before] + shape[len(shape) - after :]
        for c, d in zip(letters, dims, strict=True):
            if sizes.get(c, d) != d and 1 not in (d, sizes[c]):
                raise ValueError(f"einsum: index {c!r} has incompatible sizes {sizes[c]} and {d}")
            sizes[c] = d if sizes.get(c, 1) == 1 else sizes[c]


def _contract_path(name, args, optimize):
    """opt_einsum's plan for ``args`` (string or sublist form): the operands in the order the
    plan consumes them and, per step, (operand positions, einsum string)."""
    if not args:
        raise ValueError(f"{name}: at least one operand is required")
    if isinstance(args[0], str):
        arrays = list(args[1:])
    else:  # sublist form: op, sublist, op, sublist, ..., [output sublist]
        arrays = list(args[0 : 2 * (len(args) // 2) : 2])
    if not arrays:
        raise ValueError(f"{name}: at least one operand is required")
    check_arraylike(name, *arrays)
    arrays = [asarray(x) for x in arrays]
    if isinstance(args[0], str):
        _check_subscripts(args[0], [aval_of(x).shape for x in arrays])
    stand_ins = {}
    plan_args = list(args)
    positions = range(1, len(args)) if isinstance(args[0], str) else range(0, len(args) - 1, 2)
    for pos, x in zip(positions, arrays, strict=False):
        aval = aval_of(x)
        plan_args[pos] = _ShapeOnly(aval.shape, aval.dtype)
        stand_ins[id(plan_args[pos])] = x
    ordered, steps = opt_einsum.contract_path(
        *plan_args, einsum_call=True, use_blas=True, optimize=_path_type(optimize)
    )
    return [stand_ins[id(d)] for d in ordered], [(tuple(c[0]), c[2]) for c in steps]


def _sum_axes(x, axes, dtype=None):
    """Sum out ``axes``; first widening ``x`` to ``dtype`` where that promotes (as JAX's einsum
    accumulates in its preferred type)."""
    if dtype is not None and result_type(aval_of(x).dtype, dtype) != aval_of(x).dtype:
        x = convert(x, dtype)
    if not axes:
        return x
    if aval_of(x).dtype == dtypes.bool_:
        return lax.reduce_or(x, tuple(axes))
    return lax.reduce_sum(x, tuple(axes))


def _take_diagonal(x, spec, dtype=None):
    """Collapse repeated letters of one operand (``ii->i``) to their diagonal."""
    while True:
        dup = next((c for c in spec if spec.count(c) > 1), None)
        if dup is None:
            return x, spec
        i = spec.index(dup)
        j = spec.index(dup, i + 1)
        shape = aval_of(x).shape
        mask = lax.eq(
            lax.broadcasted_iota(dtypes.int32, shape, i),
            lax.broadcasted_iota(dtypes.int32, shape, j),
        )
        x = _sum_axes(where_(mask, x, full_like_aval(x, 0)), (j,), dtype)
        spec = spec[:j] + spec[j + 1 :]


def _sum_letters(x, names, keep, dtype):
    """Sum out the dimensions whose letters are not in ``keep``."""
    axes = [i for i, c in enumerate(names) if c not in keep]
    if not axes:
        return x, names
    return _sum_axes(x, axes, dtype), "".join(c for c in names if c in keep)


def _squeeze_broadcast(x, names, other, other_names):
    """Drop ``x``'s size-1 dimensions whose letter has another size in ``other``: they
    broadcast, so ``x`` is constant along them."""
    shape, other_shape = aval_of(x).shape, aval_of(other).shape
    drop = [
        i
        for i, c in enumerate(names)
        if shape[i] == 1 and c in other_names and other_shape[other_names.index(c)] != 1
    ]
    if not drop:
        return x, names
    return lax.squeeze(x, tuple(drop)), "".join(c for i, c in enumerate(names) if i not in drop)


def _einsum_step(xs, einstr, dtype, precision, dot_general=lax.dot_general, out_sharding=None):
    """One step of the plan: one operand reduced, or two contracted by ``dot_general``
    (its result laid out as ``out_sharding`` says of the step's result, when given)."""
    inputs, result = einstr.split("->")
    names = inputs.split(",")
    if len(xs) == 1:
        x, n = _take_diagonal(xs[0], names[0], dtype)
        x, n = _sum_letters(x, n, set(result), dtype)
    elif len(xs) == 2:
        (x, y), (n, m) = xs, names
        x, n = _squeeze_broadcast(x, n, y, m)
        y, m = _squeeze_broadcast(y, m, x, n)
        x, n = _take_diagonal(x, n, dtype)
        y, m = _take_diagonal(y, m, dtype)
        x, n = _sum_letters(x, n, set(result) | set(m), dtype)
        y, m = _sum_letters(y, m, set(result) | set(n), dtype)
        batch = [c for c in result if c in n and c in m]
        contract = [c for c in n if c in m and c not in result]
        shared = set(batch) | set(contract)
        if (
            "".join(batch)
            + "".join(c for c in m if c not in shared)
            + "".join(c for c in n if c not in shared)
        ) == result:
            # As JAX: the operands swapped when that gives the result's order (no transpose)
            (x, n), (y, m) = (y, m), (x, n)
        dims = (
            (tuple(n.index(c) for c in contract), tuple(m.index(c) for c in contract)),
            (tuple(n.index(c) for c in batch), tuple(m.index(c) for c in batch)),
        )
        out = (
            "".join(batch)
            + "".join(c for c in n if c not in shared)
            + "".join(c for c in m if c not in shared)
        )
        given = (
            {} if out_sharding is None else {"out_sharding": _permuted(out_sharding, result, out)}
        )
        x = dot_general(x, y, dims, precision, preferred_element_type=dtype, **given)
        n = out
    else:
        raise NotImplementedError(
            "xform.numpy.einsum does not support simultaneous contraction of 3 or more "
            f"operands (a step {einstr!r} of the path); give a path of pairs to optimize"
        )
    perm = tuple(n.index(c) for c in result)
    return x if perm == tuple(range(len(perm))) else lax.transpose(x, perm)


def einsum(
    subscripts,
    /,
    *operands,
    out=None,
    optimize="auto",
    precision=None,
    preferred_element_type=None,
    _dot_general=lax.dot_general,
    out_sharding=None,
):
    """Einstein summation, as ``jnp.einsum``: pairwise ``dot_general`` contractions in the
    order opt_einsum plans (``optimize``: ``'auto'``, ``True`` (``'optimal'``), ``False``
    (left to right), an opt_einsum strategy name such as ``'greedy'``, or an explicit path
    such as ``[(0, 1), (0, 1)]``).

    Takes the string form ``einsum('ij,jk->ik', a, b)`` and the sublist form
    ``einsum(a, [0, 1], b, [1, 2], [0, 2])``. With ``preferred_element_type`` every
    contraction and sum accumulates in that type. ``_dot_general`` (as JAX's) is the function
    each pairwise contraction calls, with ``lax.dot_general``'s signature.
    """
    if out is not None:
        raise NotImplementedError("The 'out' argument to xform.numpy.einsum is not supported.")
    arrays, steps = _contract_path("einsum", (subscripts,) + operands, optimize)
    if preferred_element_type is None:
        dtype, weak = result_type(*arrays, return_weak_type_flag=True)
    else:
        dtype, weak = _canonical_dtype(preferred_element_type, "einsum"), False
    common = result_type(*arrays)

    def contract(*arrays, out_sharding=None):
        arrays = [convert(x, common) for x in arrays]
        for positions, einstr in steps:
            xs = [arrays.pop(i) for i in positions]
            arrays.append(_einsum_step(xs, einstr, dtype, precision, _dot_general, out_sharding))
        return _finish(arrays[0], dtype, weak)

    if out_sharding is not None and (len(steps) != 1 or len(steps[0][0]) != 2):
        # Not one contraction: the partitioner lays out the intermediates and the result is
        # resharded (in ``auto_axes``), as JAX's einsum does.
        return auto_axes(contract, out_sharding=out_sharding)(*arrays)
    return contract(*arrays, out_sharding=out_sharding)


def _permuted(sharding, result, letters):
    """``sharding`` of an einsum result named by ``result``, for the same array with its
    dimensions named (ordered) by ``letters``."""
    given = getattr(sharding, "spec", sharding)  # a NamedSharding's, or a PartitionSpec
    spec = tuple(given) + (None,) * (len(result) - len(given))
    new = type(given)(*(spec[result.index(c)] for c in letters))
    return new if given is sharding else type(sharding)(sharding.mesh, new)


def einsum_path(subscripts, /, *operands, optimize="auto"):
    """The contraction order ``einsum`` would follow, as ``jnp.einsum_path``: opt_einsum's
    ``contract_path`` result, ``(path, PathInfo)``."""
    return opt_einsum.contract_path(subscripts, *operands, optimize=_path_type(optimize))


# --------------------------------------------------------------------------- diagonals


@staged("diagonal", static_argnames=("offset", "axis1", "axis2"))
def diagonal(a, offset=0, axis1=0, axis2=1):
    """The ``offset`` diagonal over ``axis1``, ``axis2``, as the last axis of the result."""
    check_arraylike("diagonal", a)
    a = asarray(a)
    ndim = aval_of(a).ndim
    if ndim < 2:
        raise ValueError(
            f"diagonal requires an array of at least two dimensions, got shape {aval_of(a).shape}"
        )
    axis1 = canonicalize_axis(axis1, ndim, "diagonal")
    axis2 = canonicalize_axis(axis2, ndim, "diagonal")
    if axis1 == axis2:
        raise TypeError("diagonal: axis1 and axis2 must be different")  # as JAX's
    a = moveaxis(a, (axis1, axis2), (-2, -1))
    shape = aval_of(a).shape
    n, m = shape[-2:]
    offset = operator.index(offset)  # TypeError for a float, as JAX
    rows = lax.broadcasted_iota(dtypes.int32, shape, len(shape) - 2)
    cols = lax.broadcasted_iota(dtypes.int32, shape, len(shape) - 1)
    mask = lax.eq(lax.add(rows, asarray(offset, dtypes.int32)), cols)
    picked = _sum_axes(lax.select(mask, a, full_like_aval(a, 0)), (len(shape) - 1,))
    start = builtins.max(0, -offset)
    length = builtins.max(0, builtins.min(n - start, m - builtins.max(0, offset)))
    lead = shape[:-2]
    return lax.slice(picked, (0,) * len(lead) + (start,), lead + (start + length,))


@staged("trace", static_argnames=("axis1", "axis2", "dtype"))
def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    """Sum along a diagonal."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to xform.numpy.trace is not supported.")
    ndim = aval_of(asarray(a)).ndim
    if canonicalize_axis(axis1, ndim, "trace") == canonicalize_axis(axis2, ndim, "trace"):
        raise ValueError(
            f"trace: axis1 and axis2 can not be the same, got axis1={axis1} and axis2={axis2}"
        )  # ValueError here, as JAX's (diagonal: TypeError)
    # The diagonal by a mask, as JAX's: ``offset`` may be traced.
    a = moveaxis(asarray(a), (axis1, axis2), (-2, -1))
    n, m = aval_of(a).shape[-2:]
    rows = lax.broadcasted_iota(dtypes.int32, (n, m), 0)
    cols = lax.broadcasted_iota(dtypes.int32, (n, m), 1)
    # (a Python int as JAX's literal ``0:i32[]``; it would be int64 under x64)
    offset = np.int32(offset) if isinstance(offset, int) else convert(offset, dtypes.int32)
    mask = lax.eq(lax.add(rows, offset), cols)
    return sum_(where_(mask, a, full_like_aval(a, 0)), axis=(-2, -1), dtype=dtype)
