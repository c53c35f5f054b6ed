"""Slicing primitives: static and dynamic slices and dynamic updates, with every rule.

The semantics are XLA's, as ``lax`` exposes them. Out-of-range starts of ``dynamic_slice``
and ``dynamic_update_slice`` are clamped so the window stays inside the operand. Gather and
scatter are in xform/primitives/gather_scatter.py; a dynamic slice at mapped starts batches
into one of them.
"""

import numpy as np

from xform import dtypes
from xform.core import ShapedArray, Tracer, get_aval
from xform.interpret import ad, batching, transpose
from xform.primitives.base import canonicalize_axis, standard_primitive
from xform.primitives.comparisons import lt, select_n
from xform.primitives.elementwise import add
from xform.primitives.gather_scatter import (
    GatherDimensionNumbers,
    GatherScatterMode,
    ScatterDimensionNumbers,
    _aval,
    _gather_batch,
    _ints,
    _scatter_batch,
    _zeros,
    scatter_p,
)
from xform.primitives.structural import (
    broadcast_in_dim,
    concatenate,
    pad,
    reshape,
    squeeze,
)

__all__ = [
    "slice",
    "slice_in_dim",
    "index_in_dim",
    "dynamic_slice",
    "dynamic_slice_in_dim",
    "dynamic_index_in_dim",
    "dynamic_update_slice",
    "dynamic_update_slice_in_dim",
    "dynamic_update_index_in_dim",
]

_builtin_slice = slice


# --------------------------------------------------------------------------- slice


def _slice_abstract_eval(x, *, start_indices, limit_indices, strides):
    if len(start_indices) != x.ndim:
        raise TypeError(
            f"lax.slice: start_indices {start_indices} must have one entry per "
            f"operand dimension (operand shape {x.shape})"
        )
    if len(limit_indices) != x.ndim:
        raise TypeError(
            f"lax.slice: limit_indices {limit_indices} must have one entry per "
            f"operand dimension (operand shape {x.shape})"
        )
    if strides is not None and len(strides) != x.ndim:
        raise TypeError(
            f"lax.slice: strides {strides} must have one entry per operand "
            f"dimension (operand shape {x.shape})"
        )
    if any(s < 0 for s in start_indices):
        raise TypeError(
            f"lax.slice: start_indices {start_indices} must be non-negative "
            f"(operand shape {x.shape}); lax.slice_in_dim wraps negative indices"
        )
    if any(lim > d for lim, d in zip(limit_indices, x.shape, strict=True)):
        raise TypeError(
            f"lax.slice: limit_indices {limit_indices} must not exceed the operand shape {x.shape}"
        )
    if any(lim < s for s, lim in zip(start_indices, limit_indices, strict=True)):
        raise TypeError(
            f"lax.slice: limit_indices {limit_indices} must be >= start_indices "
            f"{start_indices} (operand shape {x.shape})"
        )
    strides = strides or (1,) * x.ndim
    if any(st < 1 for st in strides):
        raise TypeError(f"lax.slice: strides {strides} must be positive")
    shape = tuple(
        (lim - s + st - 1) // st
        for s, lim, st in zip(start_indices, limit_indices, strides, strict=True)
    )
    return [ShapedArray(shape, x.dtype, x.weak_type)]


def _slice_host(x, *, start_indices, limit_indices, strides):
    strides = strides or (1,) * x.ndim
    return [x[tuple(map(_builtin_slice, start_indices, limit_indices, strides))]]


slice_p = standard_primitive("slice", _slice_abstract_eval, _slice_host)


def slice(operand, start_indices, limit_indices, strides=None):  # noqa: A001  (lax's name)
    """The static slice ``operand[start:limit:stride, ...]``, one entry per dimension.

    Args:
      operand: the array to slice.
      start_indices, limit_indices: non-negative ints, one per dimension.
      strides: optional positive ints, one per dimension.

    Example: ``slice(x, (1, 0), (3, 4), (1, 2))`` is ``x[1:3, 0:4:2]``.
    """
    start = _ints(start_indices, "lax.slice", "start_indices")
    limit = _ints(limit_indices, "lax.slice", "limit_indices")
    strides = None if strides is None else _ints(strides, "lax.slice", "strides")
    return slice_p.bind(operand, start_indices=start, limit_indices=limit, strides=strides)


def slice_in_dim(operand, start_index, limit_index, stride=1, axis=0):
    """``operand[..., start_index:limit_index:stride]`` along ``axis``; negative indices and
    ``None`` are read as in Python."""
    shape = get_aval(operand).shape
    axis = canonicalize_axis(axis, len(shape), "lax.slice_in_dim")
    n = shape[axis]
    start = 0 if start_index is None else int(start_index)
    limit = n if limit_index is None else int(limit_index)
    start = start + n if start < 0 else start
    limit = limit + n if limit < 0 else limit
    starts, limits, strides = [0] * len(shape), list(shape), [1] * len(shape)
    starts[axis], limits[axis], strides[axis] = start, limit, int(stride)
    return slice(operand, starts, limits, strides)


def index_in_dim(operand, index, axis=0, keepdims=True):
    """``operand[..., index]`` along ``axis`` (a static int, negative counts from the end)."""
    shape = get_aval(operand).shape
    axis = canonicalize_axis(axis, len(shape), "lax.index_in_dim")
    index, n = int(index), shape[axis]
    wrapped = index + n if index < 0 else index
    if not 0 <= wrapped < n:
        raise IndexError(
            f"lax.index_in_dim: index {index} is out of bounds for axis {axis} with size {n}"
        )
    out = slice_in_dim(operand, wrapped, wrapped + 1, 1, axis)
    return out if keepdims else squeeze(out, (axis,))


# --------------------------------------------------------------------------- dynamic_slice


def _check_start_indices(name, x, indices):
    if len(indices) != x.ndim:
        raise TypeError(
            f"lax.{name}: got {len(indices)} start indices for an operand of "
            f"shape {x.shape}; pass one scalar index per dimension"
        )
    for i in indices:
        if i.ndim != 0:
            got = ", ".join(a.str_short() for a in indices)
            raise TypeError(f"lax.{name}: start indices must be scalars, got {got}")
        if not dtypes.is_int(i.dtype) or i.dtype != indices[0].dtype:
            got = ", ".join(str(a.dtype) for a in indices)
            raise TypeError(f"lax.{name}: start indices must be integers of one dtype, got {got}")


def _clamped_starts(x_shape, window_shape, starts):
    """XLA's rule: each start is clamped to ``[0, dim - window]``, so the window fits."""
    out = []
    for s, d, w in zip(starts, x_shape, window_shape, strict=True):
        # In Python ints: no wrap-around of small or unsigned index dtypes.
        out.append(min(max(int(s), 0), d - w))
    return out


def _dynamic_slice_abstract_eval(x, *indices, slice_sizes):
    _check_start_indices("dynamic_slice", x, indices)
    if len(slice_sizes) != x.ndim:
        raise TypeError(
            f"lax.dynamic_slice: slice_sizes {slice_sizes} must have one entry per "
            f"operand dimension (operand shape {x.shape})"
        )
    if any(s < 0 or s > d for s, d in zip(slice_sizes, x.shape, strict=True)):
        raise TypeError(
            f"lax.dynamic_slice: slice_sizes {slice_sizes} must be in "
            f"[0, dim] for operand shape {x.shape}"
        )
    return [ShapedArray(tuple(slice_sizes), x.dtype, x.weak_type)]


def _dynamic_slice_host(x, *indices, slice_sizes):
    starts = _clamped_starts(x.shape, slice_sizes, indices)
    return [x[tuple(_builtin_slice(s, s + w) for s, w in zip(starts, slice_sizes, strict=True))]]


dynamic_slice_p = standard_primitive(
    "dynamic_slice", _dynamic_slice_abstract_eval, _dynamic_slice_host
)


def _is_static_int(i):
    return isinstance(i, (int, np.integer)) and not isinstance(i, bool)


def _dynamic_slice_indices(name, operand, start_indices, allow_negative_indices):
    """Start indices as scalar operands; negative ones count from the end when allowed.

    Static ints are wrapped here and become int constants; traced or array indices get the
    ``lt``/``add``/``select_n`` JAX emits.
    """
    aval = get_aval(operand)
    if not isinstance(start_indices, (list, tuple)) and (
        isinstance(start_indices, (Tracer, np.ndarray)) or hasattr(start_indices, "aval")
    ):
        idx_aval = get_aval(start_indices)
        if idx_aval.ndim != 1:  # ValueError, as JAX's
            raise ValueError(
                f"lax.{name}: start_indices must be a sequence of scalars or a "
                f"1-D array, got an array of shape {idx_aval.shape}"
            )
        if isinstance(start_indices, np.ndarray):
            start_indices = list(start_indices)  # NumPy scalars: static indices
        else:  # an xform array or a tracer: split it into scalar operands
            start_indices = [
                reshape(slice(start_indices, (k,), (k + 1,)), ()) for k in range(idx_aval.shape[0])
            ]
    start_indices = list(start_indices)
    if len(start_indices) != aval.ndim:  # ValueError, as JAX's
        raise ValueError(
            f"lax.{name}: got {len(start_indices)} start indices for an operand "
            f"of shape {aval.shape}; pass one scalar index per dimension"
        )
    if isinstance(allow_negative_indices, bool):
        allow_negative_indices = [allow_negative_indices] * aval.ndim
    out = []
    for i, d, allow in zip(start_indices, aval.shape, allow_negative_indices, strict=True):
        if _is_static_int(i):
            if i < 0 and not allow:
                raise ValueError(
                    f"lax.{name}: index {i} is out of bounds for dimension {d} "
                    "with allow_negative_indices=False"
                )
            dt = (
                dtypes.canonicalize(np.asarray(i).dtype)
                if isinstance(i, np.integer)
                else dtypes.default_int()
            )
            out.append(np.asarray(int(i) + d if i < 0 else int(i), dt))
            continue
        i_aval = get_aval(i)
        if not allow or not dtypes.is_signed_int(i_aval.dtype):
            out.append(i)
            continue
        d_const = np.asarray(d, i_aval.dtype)
        out.append(select_n(lt(i, np.asarray(0, i_aval.dtype)), i, add(i, d_const)))
    return out


def dynamic_slice(operand, start_indices, slice_sizes, *, allow_negative_indices=True):
    """The ``slice_sizes`` window of ``operand`` at (possibly traced) ``start_indices``.

    Starts are clamped so the window stays in bounds, as XLA does; with
    ``allow_negative_indices`` negative starts count from the end first.

    Example: ``dynamic_slice(x, (i, 0), (2, x.shape[1]))`` is rows ``i, i + 1`` of ``x``.
    """
    indices = _dynamic_slice_indices(
        "dynamic_slice", operand, start_indices, allow_negative_indices
    )
    sizes = _ints(slice_sizes, "lax.dynamic_slice", "slice_sizes")
    return dynamic_slice_p.bind(operand, *indices, slice_sizes=sizes)


def _zero_like_index(i):
    """A zero start index of ``i``'s dtype (all start indices must share one dtype)."""
    if isinstance(i, int):
        return 0
    return np.zeros((), get_aval(i).dtype)


def dynamic_slice_in_dim(operand, start_index, slice_size, axis=0, *, allow_negative_indices=True):
    """``operand[..., start_index:start_index + slice_size]`` along ``axis``, dynamically."""
    shape = get_aval(operand).shape
    axis = canonicalize_axis(axis, len(shape), "lax.dynamic_slice_in_dim")
    starts = [_zero_like_index(start_index)] * len(shape)
    starts[axis] = start_index
    sizes = list(shape)
    sizes[axis] = int(slice_size)
    allow = [False] * len(shape)
    allow[axis] = allow_negative_indices
    return dynamic_slice(operand, starts, sizes, allow_negative_indices=allow)


def dynamic_index_in_dim(operand, index, axis=0, keepdims=True, *, allow_negative_indices=True):
    """``operand[..., index]`` along ``axis`` for a (possibly traced) ``index``."""
    ndim = get_aval(operand).ndim
    axis = canonicalize_axis(axis, ndim, "lax.dynamic_index_in_dim")
    out = dynamic_slice_in_dim(
        operand, index, 1, axis, allow_negative_indices=allow_negative_indices
    )
    return out if keepdims else squeeze(out, (axis,))


# --------------------------------------------------------------------------- dynamic_update_slice


def _dynamic_update_slice_abstract_eval(x, update, *indices):
    if update.dtype != x.dtype:
        raise TypeError(
            f"lax.dynamic_update_slice requires arguments to have the same "
            f"dtypes, got {x.dtype}, {update.dtype}"
        )
    if update.ndim != x.ndim:
        raise TypeError(
            f"lax.dynamic_update_slice: update must have the operand's rank, got "
            f"update shape {update.shape} for operand shape {x.shape}"
        )
    if any(u > d for u, d in zip(update.shape, x.shape, strict=True)):
        raise TypeError(
            f"lax.dynamic_update_slice: update shape {update.shape} must fit in "
            f"the operand shape {x.shape}"
        )
    _check_start_indices("dynamic_update_slice", x, indices)
    weak = x.weak_type and update.weak_type and all(i.weak_type for i in indices)
    return [ShapedArray(x.shape, x.dtype, weak)]


def _dynamic_update_slice_host(x, update, *indices):
    starts = _clamped_starts(x.shape, update.shape, indices)
    out = x.copy()
    out[tuple(_builtin_slice(s, s + w) for s, w in zip(starts, update.shape, strict=True))] = update
    return [out]


dynamic_update_slice_p = standard_primitive(
    "dynamic_update_slice", _dynamic_update_slice_abstract_eval, _dynamic_update_slice_host
)


def dynamic_update_slice(operand, update, start_indices, *, allow_negative_indices=True):
    """``operand`` with the window at ``start_indices`` replaced by ``update``.

    Starts are clamped so ``update`` fits, as XLA does.

    Example: ``dynamic_update_slice(zeros(6), ones(3), (5,))`` writes positions 3..5.
    """
    indices = _dynamic_slice_indices(
        "dynamic_update_slice", operand, start_indices, allow_negative_indices
    )
    return dynamic_update_slice_p.bind(operand, update, *indices)


def dynamic_update_slice_in_dim(operand, update, start_index, axis, *, allow_negative_indices=True):
    """``dynamic_update_slice`` with a single start index along ``axis``."""
    ndim = get_aval(operand).ndim
    axis = canonicalize_axis(axis, ndim, "lax.dynamic_update_slice_in_dim")
    starts = [_zero_like_index(start_index)] * ndim
    starts[axis] = start_index
    allow = [False] * ndim
    allow[axis] = allow_negative_indices
    return dynamic_update_slice(operand, update, starts, allow_negative_indices=allow)


def dynamic_update_index_in_dim(operand, update, index, axis, *, allow_negative_indices=True):
    """Write ``update`` (of rank ``operand.ndim - 1`` or equal) at ``index`` along ``axis``."""
    ndim = get_aval(operand).ndim
    axis = canonicalize_axis(axis, ndim, "lax.dynamic_update_index_in_dim")
    u_shape = get_aval(update).shape
    if len(u_shape) == ndim - 1:
        update = reshape(update, u_shape[:axis] + (1,) + u_shape[axis:])
    return dynamic_update_slice_in_dim(
        operand, update, index, axis, allow_negative_indices=allow_negative_indices
    )


# --------------------------------------------------------------------------- jvp rules
# Every indexing op is linear in its array operands; integer indices get float0 tangents and
# never contribute. The scatters follow JAX's rules (jax/_src/lax/slicing.py) exactly.

ad.defjvp_linear(slice_p)


def _dynamic_slice_jvp(primals, tangents, *, slice_sizes):
    x, *indices = primals
    out = dynamic_slice_p.bind(x, *indices, slice_sizes=slice_sizes)
    t = tangents[0]
    if type(t) is not ad.Zero:
        t = dynamic_slice_p.bind(t, *indices, slice_sizes=slice_sizes)
    else:
        t = ad.Zero(ad.tangent_aval(get_aval(out)))
    return [out], [t]


def _dynamic_update_slice_jvp(primals, tangents):
    x, update, *indices = primals
    out = dynamic_update_slice_p.bind(x, update, *indices)
    t_x, t_update = tangents[:2]
    if type(t_x) is ad.Zero and type(t_update) is ad.Zero:
        return [out], [ad.Zero(ad.tangent_aval(get_aval(out)))]
    t = dynamic_update_slice_p.bind(ad.instantiate(t_x), ad.instantiate(t_update), *indices)
    return [out], [t]


ad.jvp_rules[dynamic_slice_p] = _dynamic_slice_jvp
ad.jvp_rules[dynamic_update_slice_p] = _dynamic_update_slice_jvp


# --------------------------------------------------------------------------- transpose rules
# Starts are never linear.


def _slice_transpose(ct, operand, *, start_indices, limit_indices, strides):
    shape = operand.aval.shape
    strides = strides or (1,) * len(shape)
    out_shape = get_aval(ct).shape
    # The last element the slice reads, plus one (the limit may lie past it with strides).
    real_limits = [
        s + (n - 1) * st + 1 if n else s
        for s, n, st in zip(start_indices, out_shape, strides, strict=True)
    ]
    config = [
        (s, d - lim, st - 1)
        for s, d, lim, st in zip(start_indices, shape, real_limits, strides, strict=True)
    ]
    return [pad(ct, np.zeros((), get_aval(ct).dtype), config)]


def _dynamic_slice_transpose(ct, operand, *indices, slice_sizes):
    # dynamic_update_slice clamps its starts exactly as dynamic_slice does.
    out = dynamic_update_slice_p.bind(_zeros(operand.aval), ct, *indices)
    return [out] + [None] * len(indices)


def _dynamic_update_slice_transpose(ct, operand, update, *indices):
    u_aval = _aval(update)
    t_operand = t_update = None
    if transpose.is_undefined(operand):
        t_operand = dynamic_update_slice_p.bind(ct, _zeros(u_aval), *indices)
    if transpose.is_undefined(update):
        t_update = dynamic_slice_p.bind(ct, *indices, slice_sizes=u_aval.shape)
    return [t_operand, t_update] + [None] * len(indices)


transpose.transpose_rules[slice_p] = _slice_transpose
transpose.transpose_rules[dynamic_slice_p] = _dynamic_slice_transpose
transpose.transpose_rules[dynamic_update_slice_p] = _dynamic_update_slice_transpose


# --------------------------------------------------------------------------- batching rules
# Static slices, and dynamic ones at unmapped starts, take the whole batch dim along. Mapped
# starts make one gather (or scatter) over the whole batch (xform/primitives/gather_scatter.py).


def _slice_batch(axis, args, dims, *, start_indices, limit_indices, strides):
    (x,), (d,) = args, dims
    strides = None if strides is None else strides[:d] + (1,) + strides[d:]
    out = slice_p.bind(
        x,
        start_indices=start_indices[:d] + (0,) + start_indices[d:],
        limit_indices=limit_indices[:d] + (axis.size,) + limit_indices[d:],
        strides=strides,
    )
    return [out], [d]


def _zero_start(indices):
    """A start of 0 along the batch dim, of the other starts' dtype."""
    return np.zeros((), get_aval(indices[0]).dtype if indices else dtypes.int32)


def _stacked_starts(indices, dims, size):
    """The scalar start indices, some mapped, as one ``(size, len(indices))`` array."""
    columns = [
        broadcast_in_dim(i, (size, 1), () if d is batching.not_mapped else (0,))
        for i, d in zip(indices, dims, strict=True)
    ]
    return concatenate(columns, 1)


def _dynamic_slice_batch(axis, args, dims, *, slice_sizes):
    x, *indices = args
    x_d, *i_dims = dims
    if all(d is batching.not_mapped for d in i_dims):
        d = x_d  # the window spans the whole batch dim, from 0
        out = dynamic_slice_p.bind(
            x,
            *indices[:d],
            _zero_start(indices),
            *indices[d:],
            slice_sizes=slice_sizes[:d] + (axis.size,) + slice_sizes[d:],
        )
        return [out], [d]
    # A window per entry: a gather, clamped into bounds as dynamic_slice is.
    window = tuple(range(len(indices)))
    dn = GatherDimensionNumbers(offset_dims=window, collapsed_slice_dims=(), start_index_map=window)
    return _gather_batch(
        axis,
        [x, _stacked_starts(indices, i_dims, axis.size)],
        [x_d, 0],
        dimension_numbers=dn,
        slice_sizes=slice_sizes,
        indices_are_sorted=True,
        unique_indices=True,
        mode=GatherScatterMode.CLIP,
        fill_value=None,
    )


def _dynamic_update_slice_batch(axis, args, dims):
    x, update, *indices = args
    x_d, u_d, *i_dims = dims
    if all(d is batching.not_mapped for d in i_dims):
        d = u_d if x_d is batching.not_mapped else x_d
        x = batching.move_or_broadcast(x, x_d, d, axis.size)
        update = batching.move_or_broadcast(update, u_d, d, axis.size)
        out = dynamic_update_slice_p.bind(
            x, update, *indices[:d], _zero_start(indices), *indices[d:]
        )
        return [out], [d]
    # A window per entry: a scatter, clamped into bounds as dynamic_update_slice is.
    window = tuple(range(len(indices)))
    dn = ScatterDimensionNumbers(
        update_window_dims=window, inserted_window_dims=(), scatter_dims_to_operand_dims=window
    )
    return _scatter_batch(
        scatter_p,
        axis,
        [x, _stacked_starts(indices, i_dims, axis.size), update],
        [x_d, 0, u_d],
        dimension_numbers=dn,
        indices_are_sorted=True,
        unique_indices=True,
        mode=GatherScatterMode.CLIP,
    )


batching.batch_rules[slice_p] = _slice_batch
batching.batch_rules[dynamic_slice_p] = _dynamic_slice_batch
batching.batch_rules[dynamic_update_slice_p] = _dynamic_update_slice_batch
