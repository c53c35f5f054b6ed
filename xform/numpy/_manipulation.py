"""Array manipulation: pad, take and take_along_axis, put_along_axis, roll, rollaxis, rot90,
diff, ediff1d, append, insert, delete, unstack and resize.

Padding widths, shifts given as Python ints, axes and the ``obj`` of insert/delete are static
(concrete); everything else may be traced. Each function is built from ``lax`` slices,
concatenations, gathers and scatters, so it differentiates and batches like them.
"""

import builtins
import math
import operator

import numpy as np

from xform import dtypes
from xform.api.batching import vmap
from xform.core import Tracer
from xform.lax import _names as lax
from xform.numpy import _reductions, _ufuncs
from xform.numpy._creation import arange, empty_like, full, linspace, ones, zeros_like
from xform.numpy._indexing import (
    IndexUpdateHelper,
    _index_dtype,
    _normalize_traced,
    getitem,
)
from xform.numpy._promote import (
    array,
    asarray,
    aval_of,
    check_arraylike,
    convert,
    promote_dtypes,
)
from xform.numpy._reductions import canonicalize_axis, mean
from xform.numpy._shape import (
    _concrete,
    _split,
    broadcast_shapes,
    broadcast_to,
    concatenate,
    flip,
    moveaxis,
    ravel,
    repeat,
    reshape,
    squeeze,
    swapaxes,
    where,
)
from xform.numpy._sorting import argsort, sort
from xform.numpy._staged import staged
from xform.numpy._ufuncs import isnan, not_equal, remainder, subtract, where_

__all__ = [
    "pad",
    "take",
    "take_along_axis",
    "put_along_axis",
    "roll",
    "rollaxis",
    "rot90",
    "diff",
    "ediff1d",
    "append",
    "insert",
    "delete",
    "unstack",
    "resize",
    "apply_along_axis",
    "apply_over_axes",
    "block",
    "kron",
    "vander",
    "trim_zeros",
    "array_equal",
    "array_equiv",
    "dsplit",
    "packbits",
    "unpackbits",
    "iterable",
]


def _arr(name, a):
    check_arraylike(name, a)
    return asarray(a)


def _static_int(x, what):
    """``x`` as a Python int; a traced ``x`` raises ``ConcretizationTypeError``."""
    if isinstance(x, Tracer):
        x = x._concretize(what)
    return operator.index(np.asarray(x).item() if isinstance(x, np.ndarray) else x)


def _index_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _slice_axis(a, start, stop, axis):
    """``a[..., start:stop, ...]`` along ``axis`` (static, Python-style bounds)."""
    return getitem(a, (slice(None),) * axis + (slice(start, stop),))


# --------------------------------------------------------------------------- pad


def _pad_pairs(values, nd, name):
    """``values`` (a scalar, a pair or one pair per axis) as ``nd`` concrete pairs."""
    try:
        arr = np.asarray(_tree_concrete(values, f"{name} argument of pad"))
    except ValueError as e:
        if "inhomogeneous" in str(e):
            raise TypeError(f"`{name}` entries must be the same shape: {values}") from e
        raise
    if arr.shape == (nd, 2):
        pairs = arr
    elif arr.shape in ((1, 2), (2,)):
        pairs = np.broadcast_to(arr.reshape(2), (nd, 2))
    elif arr.shape in ((1,), ()):
        pairs = np.broadcast_to(arr.reshape(()), (nd, 2))
    else:
        raise ValueError(
            f"jnp.pad: {name} with nd={nd} has unsupported shape {arr.shape}. "
            f"Valid shapes are ({nd}, 2), (1, 2), (2,), (1,), or ()."
        )
    return tuple((pairs[i, 0].item(), pairs[i, 1].item()) for i in range(nd))


def _tree_concrete(values, what):
    if isinstance(values, (tuple, list)):
        return [_tree_concrete(v, what) for v in values]
    return _concrete(values, what)


def _no_padding(pair, mode):
    if pair[0] > 0 or pair[1] > 0:
        raise ValueError(f"Cannot apply '{mode}' padding to empty axis")


def _pad_constant(a, widths, constant_values):
    aval = aval_of(a)
    values = convert(asarray(constant_values), aval.dtype, aval.weak_type)
    vshape = aval_of(values).shape
    if len(vshape) == 0 or (len(vshape) == 1 and vshape[0] == 1):
        return lax.pad(a, reshape(values, ()), [(lo, hi, 0) for lo, hi in widths])
    if len(vshape) == 1 and vshape[0] != 2:
        raise ValueError(
            f"jnp.pad: constant_values has unsupported shape {vshape}. If the "
            "shape is 1D or 2D, the last dimension must be of size 1 or 2."
        )
    values = broadcast_to(values, (aval.ndim, 2))
    for i, (lo, hi) in enumerate(widths):
        for side, width in ((0, lo), (1, hi)):
            if width:
                config = [(0, 0, 0)] * aval.ndim
                config[i] = (width, 0, 0) if side == 0 else (0, width, 0)
                a = lax.pad(a, values[i, side], config)
    return a


def _pad_wrap(a, widths):
    for i, (lo, hi) in enumerate(widths):
        n = aval_of(a).shape[i]
        if n == 0:
            _no_padding((lo, hi), "wrap")
            continue
        lo_reps, lo_rem = divmod(lo, n)
        hi_reps, hi_rem = divmod(hi, n)
        parts = [_slice_axis(a, n - lo_rem, n, i)] if lo_rem else []
        parts += [a] * (lo_reps + hi_reps + 1)
        parts += [_slice_axis(a, 0, hi_rem, i)] if hi_rem else []
        a = lax.concatenate(parts, i)
    return a


def _reflect_side(a, i, n, width, before, mode, odd):
    """``a`` with ``width`` reflected values added before (or after) it along axis ``i``."""
    offset = 1 if mode == "reflect" and n > 1 else 0
    edge = _slice_axis(a, 0, 1, i) if before else _slice_axis(a, -1, None, i)
    while width > 0:
        step = builtins.min(width, n - offset)
        width -= step
        if before:
            piece = _slice_axis(a, offset, offset + step, i)
        else:
            stop = None if (mode == "symmetric" or n == 1) else -1
            piece = _slice_axis(a, -(step + offset), stop, i)
        piece = flip(piece, i)
        if odd:
            piece = 2 * edge - piece
            if n > 1:
                edge = _slice_axis(piece, 0, 1, i) if before else _slice_axis(piece, -1, None, i)
        a = lax.concatenate([piece, a] if before else [a, piece], i)
    return a


def _pad_reflect(a, widths, mode, reflect_type):
    if reflect_type not in ("even", "odd"):
        raise ValueError(f"jnp.pad: reflect_type must be 'even' or 'odd', got {reflect_type!r}")
    for i, (lo, hi) in enumerate(widths):
        n = aval_of(a).shape[i]
        if n == 0:
            _no_padding((lo, hi), mode)
            continue
        a = _reflect_side(a, i, n, lo, True, mode, reflect_type == "odd")
        a = _reflect_side(a, i, n, hi, False, mode, reflect_type == "odd")
    return a


def _pad_edge(a, widths):
    for i, (lo, hi) in enumerate(widths):
        n = aval_of(a).shape[i]
        if n == 0:
            _no_padding((lo, hi), "edge")
            continue
        before = repeat(_slice_axis(a, 0, 1, i), lo, axis=i)
        after = repeat(_slice_axis(a, n - 1, n, i), hi, axis=i)
        a = lax.concatenate([before, a, after], i)
    return a


def _pad_linear_ramp(a, widths, end_values):
    aval = aval_of(a)
    for i, (lo, hi) in enumerate(widths):
        ramps = []
        for end, width, edge in (
            (end_values[i][0], lo, _slice_axis(a, 0, 1, i)),
            (end_values[i][1], hi, _slice_axis(a, -1, None, i)),
        ):
            ramp = linspace(end, squeeze(edge, i), width, endpoint=False, dtype=aval.dtype, axis=i)
            ramps.append(convert(ramp, aval.dtype, aval.weak_type))
        a = lax.concatenate([ramps[0], a, flip(ramps[1], i)], i)
    return a


def _median_keepdims(a, axis, keepdims=True):
    """The median along ``axis`` (NaN if any element is NaN), as ``jnp.median``."""
    a = asarray(a)
    if not dtypes.is_inexact(aval_of(a).dtype):
        a = convert(a, dtypes.default_float())
    n = aval_of(a).shape[axis]
    s = sort(a, axis=axis)
    lo, hi = (
        _slice_axis(s, (n - 1) // 2, (n - 1) // 2 + 1, axis),
        _slice_axis(s, n // 2, n // 2 + 1, axis),
    )
    m = (lo + hi) * 0.5
    has_nan = lax.reduce_or(isnan(a), (axis,))
    return where_(lax.expand_dims(has_nan, (axis,)), convert(np.nan, aval_of(m).dtype), m)


_STATS = {
    "maximum": _reductions.max,
    "minimum": _reductions.min,
    "mean": mean,
    "median": _median_keepdims,
}


def _pad_stats(a, widths, stat_length, stat):
    aval = aval_of(a)
    for i, (lo, hi) in enumerate(widths):
        if stat_length is None:
            before = after = stat(a, axis=i, keepdims=True)
        else:
            n = aval_of(a).shape[i]
            len_lo, len_hi = stat_length[i]
            if len_lo == 0 or len_hi == 0:
                raise ValueError("stat_length of 0 yields no value for padding")
            len_lo, len_hi = builtins.min(len_lo, n), builtins.min(len_hi, n)
            before = stat(_slice_axis(a, 0, len_lo, i), axis=i, keepdims=True)
            after = stat(_slice_axis(a, -len_hi, None, i), axis=i, keepdims=True)
        if dtypes.is_int(aval.dtype):
            before, after = _ufuncs.round(before), _ufuncs.round(after)
        before = convert(before, aval.dtype, aval.weak_type)
        after = convert(after, aval.dtype, aval.weak_type)
        a = lax.concatenate([repeat(before, lo, axis=i), a, repeat(after, hi, axis=i)], i)
    return a


def _pad_empty(a, widths):
    for i, (lo, hi) in enumerate(widths):
        shape = aval_of(a).shape
        parts = [empty_like(a, shape=shape[:i] + (w,) + shape[i + 1 :]) for w in (lo, hi)]
        a = lax.concatenate([parts[0], a, parts[1]], i)
    return a


def _pad_func(a, widths, func, kwargs):
    padded = _pad_constant(a, widths, 0)
    for axis in range(aval_of(padded).ndim):
        padded = apply_along_axis(func, axis, padded, widths[axis], axis, kwargs)
    return padded


_PAD_KWARGS = {
    "empty": (),
    "edge": (),
    "wrap": (),
    "constant": ("constant_values",),
    "linear_ramp": ("end_values",),
    "maximum": ("stat_length",),
    "mean": ("stat_length",),
    "median": ("stat_length",),
    "minimum": ("stat_length",),
    "reflect": ("reflect_type",),
    "symmetric": ("reflect_type",),
}


def pad(array, pad_width, mode="constant", **kwargs):
    """``array`` padded by ``pad_width`` values on each side of each axis.

    Args:
      array: the array to pad.
      pad_width: an int, a ``(before, after)`` pair, or one pair per axis (static).
      mode: ``'constant'`` (``constant_values``, default 0), ``'edge'``, ``'wrap'``,
        ``'reflect'`` or ``'symmetric'`` (``reflect_type`` ``'even'``/``'odd'``),
        ``'linear_ramp'`` (``end_values``), ``'maximum'``, ``'minimum'``, ``'mean'`` or
        ``'median'`` (``stat_length``), ``'empty'`` (zeros), or a callable
        ``f(row, pad_width, iaxis, kwargs) -> row`` mapped over each axis.

    Returns:
      The padded array, of ``array``'s dtype.

    Example: ``pad(jnp.array([1, 2]), 1, mode='edge')`` is ``[1, 1, 2, 2]``.
    """
    a = _arr("pad", array)
    nd = aval_of(a).ndim
    widths = _pad_pairs(pad_width, nd, "pad_width")
    if widths and not builtins.all(isinstance(w, int) for pair in widths for w in pair):
        raise TypeError("`pad_width` must be of integral type.")
    if callable(mode):
        return _pad_func(a, widths, mode, kwargs)
    if mode not in _PAD_KWARGS:
        raise NotImplementedError(f"Unimplemented padding mode '{mode}' for np.pad.")
    unsupported = set(kwargs) - set(_PAD_KWARGS[mode])
    if unsupported:
        raise ValueError(f"unsupported keyword arguments for mode '{mode}': {unsupported}")
    if builtins.any(w < 0 for pair in widths for w in pair):
        raise ValueError("index can't contain negative values")
    end_values = stat_length = None
    if mode == "linear_ramp":
        end_values = _pad_pairs(kwargs.get("end_values", 0), nd, "end_values")
    if kwargs.get("stat_length") is not None:
        stat_length = _pad_pairs(kwargs["stat_length"], nd, "stat_length")
    constant_values = kwargs.get("constant_values", 0)
    reflect_type = kwargs.get("reflect_type", "even")
    return _pad(a, widths, mode, constant_values, stat_length, end_values, reflect_type)


@staged("_pad", static_argnums=(1, 2, 4, 5, 6))
def _pad(a, widths, mode, constant_values, stat_length, end_values, reflect_type):
    if aval_of(a).ndim == 0:
        return a
    if mode == "constant":
        return _pad_constant(a, widths, constant_values)
    if mode == "wrap":
        return _pad_wrap(a, widths)
    if mode in ("reflect", "symmetric"):
        return _pad_reflect(a, widths, mode, reflect_type)
    if mode == "edge":
        return _pad_edge(a, widths)
    if mode == "linear_ramp":
        return _pad_linear_ramp(a, widths, end_values)
    if mode == "empty":
        return _pad_empty(a, widths)
    return _pad_stats(a, widths, stat_length, _STATS[mode])


# --------------------------------------------------------------------------- take


def _check_int_indices(name, indices):
    dt = aval_of(indices).dtype
    if not dtypes.is_int(dt):
        raise TypeError(f"{name} indices must be of integer type, got {dt}")


@staged(
    "_take", static_argnames=("axis", "mode", "unique_indices", "indices_are_sorted", "fill_value")
)
def take(
    a,
    indices,
    axis=None,
    out=None,
    mode=None,
    unique_indices=False,
    indices_are_sorted=False,
    fill_value=None,
):
    """Elements of ``a`` at ``indices`` along ``axis`` (None: of the flattened ``a``).

    ``mode`` says what out-of-bounds indices do: ``None``/``'fill'`` returns ``fill_value``
    (NaN for inexact types) after wrapping negative indices, ``'clip'`` clamps, ``'wrap'``
    takes indices modulo the axis size.

    Example: ``take(jnp.array([1, 2, 3]), jnp.array([2, 0]))`` is ``[3, 1]``.
    """
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.take is not supported.")
    check_arraylike("take", a, indices)
    a, indices = asarray(a), asarray(indices)
    if axis is None:
        a, axis = ravel(a), 0
    axis = canonicalize_axis(axis, aval_of(a).ndim, "take")
    n = aval_of(a).shape[axis]
    if mode == "raise":
        raise NotImplementedError("The 'raise' mode to jnp.take is not supported.")
    if mode not in (None, "fill", "clip", "wrap"):
        raise ValueError(f"Invalid mode '{mode}' for np.take")
    idx_shape = aval_of(indices).shape
    if n == 0:
        if math.prod(idx_shape) != 0:
            raise IndexError("Cannot do a non-empty jnp.take() from an empty axis.")
        return a
    shape = aval_of(a).shape
    if math.prod(idx_shape) == 0:
        return zeros_like(a, shape=shape[:axis] + idx_shape + shape[axis + 1 :])
    _check_int_indices("take", indices)
    where_idx = (slice(None),) * axis
    kw = {"unique_indices": unique_indices, "indices_are_sorted": indices_are_sorted}
    if mode == "wrap":
        indices = remainder(indices, convert(n, aval_of(indices).dtype))
        return getitem(a, where_idx + (indices,), mode="promise_in_bounds", **kw)
    if mode == "clip":
        return getitem(a, where_idx + (indices,), mode="clip", wrap_negative_indices=False, **kw)
    return getitem(a, where_idx + (indices,), mode="fill", fill_value=fill_value, **kw)


def _along_axis_index(shape, indices, axis):
    """The index tuple ``(iota_0, ..., indices, ..., iota_n)`` of take/put_along_axis, with
    each iota shaped to broadcast against ``indices``."""
    nd = len(shape)
    idx = []
    for d in range(nd):
        if d == axis:
            idx.append(indices)
        else:
            idx.append(
                lax.broadcasted_iota(
                    dtypes.int32, tuple(shape[d] if k == d else 1 for k in range(nd)), d
                )
            )
    return tuple(idx)


@staged("take_along_axis", static_argnames=("axis", "mode", "fill_value", "wrap_negative_indices"))
def take_along_axis(
    arr, indices, axis=-1, mode=None, fill_value=None, *, wrap_negative_indices=None
):
    """Elements of ``arr`` at ``indices`` along ``axis``, matching ``indices``' other
    dimensions to ``arr``'s (with broadcasting), as ``np.take_along_axis``.

    Out-of-bounds indices return ``fill_value`` unless ``mode='clip'``.

    Example: ``take_along_axis(x, argsort(x, axis=1), axis=1)`` is ``sort(x, axis=1)``.
    """
    check_arraylike("take_along_axis", arr, indices)
    a, indices = asarray(arr), asarray(indices)
    _check_int_indices("take_along_axis", indices)
    idx_shape = aval_of(indices).shape
    if axis is None:
        if len(idx_shape) != 1:
            raise ValueError(
                f"take_along_axis indices must be 1D if axis=None, got shape {idx_shape}"
            )
        a, axis = ravel(a), 0
    shape = aval_of(a).shape
    if len(shape) != len(idx_shape):
        raise ValueError(
            "indices and arr must have the same number of dimensions; "
            f"{len(idx_shape)} vs. {len(shape)}"
        )
    axis = canonicalize_axis(axis, len(shape), "take_along_axis")
    out_shape = broadcast_shapes(idx_shape, shape[:axis] + (1,) + shape[axis + 1 :])
    if shape[axis] == 0:
        return full(out_shape, 0, aval_of(a).dtype)
    if wrap_negative_indices is None:
        wrap_negative_indices = mode != "promise_in_bounds"
    if mode == "one_hot":
        mode = None
    indices = _normalize_traced(
        indices, shape[axis], _index_dtype((shape[axis],)), wrap_negative_indices
    )
    return _gather_along_axis(a, indices, axis, mode, fill_value)


def _gather_along_axis(a, indices, axis, mode, fill_value):
    """One gather, as JAX's: the other dimensions the two arrays share are batching
    dimensions (no iota indices, so an array split along them stays split so), those where
    ``indices`` has size 1 are taken whole, and those where ``a`` has size 1 are dropped."""
    shape, idx_shape = aval_of(a).shape, aval_of(indices).shape
    # the dimensions of ``indices`` the gather's indices keep (before their index vector)
    index_dims = [i for i, n in enumerate(idx_shape) if i == axis or n != 1]
    offset_dims, slice_sizes, squeezed = [], [], []
    operand_batching_dims, indices_batching_dims = [], []
    for i, n in enumerate(shape):
        kept = i - len(squeezed)  # the dimension's number once ``a`` is squeezed
        if i == axis:
            start_dim = kept
            slice_sizes.append(1)
        elif idx_shape[i] == 1:
            offset_dims.append(i)
            slice_sizes.append(n)
        elif n == 1:
            squeezed.append(i)
        else:
            operand_batching_dims.append(kept)
            indices_batching_dims.append(index_dims.index(i))
            slice_sizes.append(1 if n else 0)
    dnums = lax.GatherDimensionNumbers(
        offset_dims=tuple(offset_dims),
        collapsed_slice_dims=(start_dim,),
        start_index_map=(start_dim,),
        operand_batching_dims=tuple(operand_batching_dims),
        start_indices_batching_dims=tuple(indices_batching_dims),
    )
    indices = lax.reshape(indices, tuple(idx_shape[i] for i in index_dims) + (1,))
    return lax.gather(
        lax.squeeze(a, tuple(squeezed)),
        indices,
        dnums,
        tuple(slice_sizes),
        mode="fill" if mode is None else mode,
        fill_value=fill_value,
    )


@staged("put_along_axis", static_argnames=("axis", "inplace", "mode"))
def put_along_axis(arr, indices, values, axis, inplace=True, *, mode=None):
    """``arr`` with ``values`` written at ``indices`` along ``axis`` (needs
    ``inplace=False``: xform arrays are immutable)."""
    if inplace:
        raise ValueError(
            "jax.numpy.put_along_axis cannot modify arrays in-place, because JAX "
            "arrays are immutable. Pass inplace=False to instead return an "
            "updated array."
        )
    check_arraylike("put_along_axis", arr, indices, values)
    a, indices, values = asarray(arr), asarray(indices), asarray(values)
    original_shape = aval_of(a).shape
    flat = axis is None
    if flat:
        a, axis = ravel(a), 0
    if aval_of(a).ndim != aval_of(indices).ndim:
        raise ValueError(
            "put_along_axis arguments 'arr' and 'indices' must have same ndim. "
            f"Got arr.ndim={aval_of(a).ndim} and "
            f"indices.ndim={aval_of(indices).ndim}."
        )
    try:
        values = broadcast_to(values, aval_of(indices).shape)
    except ValueError:
        raise ValueError(
            "put_along_axis argument 'values' must be broadcastable to "
            f"'indices'. Got values.shape={aval_of(values).shape} and "
            f"indices.shape={aval_of(indices).shape}."
        ) from None
    axis = canonicalize_axis(axis, aval_of(a).ndim, "put_along_axis")
    idx = _along_axis_index(aval_of(a).shape, indices, axis)
    result = IndexUpdateHelper(a)[idx].set(values, mode=mode)
    return reshape(result, original_shape) if flat else result


# --------------------------------------------------------------------------- roll, rot90


def _roll_axis(a, shift, axis):
    n = aval_of(a).shape[axis]
    if n == 0:
        return a
    if isinstance(shift, int):
        shift %= n
        if shift == 0:
            return a
        # (slice_in_dim: strides (1, ...), as JAX's _roll_static)
        parts = [
            lax.slice_in_dim(a, n - shift, n, 1, axis),
            lax.slice_in_dim(a, 0, n - shift, 1, axis),
        ]
        return lax.concatenate(parts, axis)
    start = remainder(convert(n, aval_of(shift).dtype) - shift, convert(n, aval_of(shift).dtype))
    doubled = lax.concatenate([a, a], axis)
    return lax.dynamic_slice_in_dim(doubled, start, n, axis)


def roll(a, shift, axis=None):
    """``a`` with elements shifted by ``shift`` along ``axis`` (None: the flattened array),
    wrapping around; ``shift`` may be traced.

    Example: ``roll(jnp.array([1, 2, 3]), 1)`` is ``[3, 1, 2]``.
    """
    a = _arr("roll", a)
    if axis is None:
        return reshape(roll(ravel(a), shift, 0), aval_of(a).shape)
    nd = aval_of(a).ndim
    axes = tuple(canonicalize_axis(ax, nd, "roll") for ax in _index_tuple(axis))
    try:
        shifts = tuple(operator.index(s) for s in _index_tuple(shift))
    except TypeError:
        shift = asarray(shift)
        if not dtypes.is_int(aval_of(shift).dtype):
            raise TypeError(f"roll: shift must be integer, got {aval_of(shift).dtype}") from None
        return _roll_dynamic(a, shift, axes)
    return _roll_static(a, shifts, axes)


@staged("_roll_static", static_argnums=(1, 2))
def _roll_static(a, shifts, axes):
    return _roll_shifts(a, np.asarray(shifts), axes)


@staged("_roll_dynamic", static_argnums=(2,))
def _roll_dynamic(a, shift, axes):
    return _roll_shifts(a, shift, axes)


def _roll_shifts(a, shifts, axes):
    if np.ndim(shifts) > 1 if isinstance(shifts, np.ndarray) else aval_of(shifts).ndim > 1:
        raise ValueError("'shift' and 'axis' arguments to roll must be scalars or 1D arrays")
    n_shift = shifts.shape[0] if np.ndim(shifts) else 1
    count = builtins.max(n_shift, len(axes))
    if n_shift not in (1, count) or len(axes) not in (1, count):
        raise ValueError(f"shape mismatch: shift has {n_shift} entries, axis has {len(axes)}")
    for k in range(count):
        ax = axes[k if len(axes) > 1 else 0]
        if isinstance(shifts, np.ndarray):
            s = int(shifts.reshape(-1)[k if n_shift > 1 else 0])
        else:
            s = shifts if aval_of(shifts).ndim == 0 else shifts[k if n_shift > 1 else 0]
        a = _roll_axis(a, s, ax)
    return a


@staged("rollaxis", static_argnames=("axis", "start"))
def rollaxis(a, axis, start=0):
    """``a`` with ``axis`` moved to before position ``start`` (prefer ``moveaxis``)."""
    a = _arr("rollaxis", a)
    nd = aval_of(a).ndim
    axis = canonicalize_axis(axis, nd, "rollaxis")
    if not -nd <= start <= nd:
        raise ValueError(f"start={start} must satisfy {-nd} <= start <= {nd}")
    if start < 0:
        start += nd
    if axis < start:
        start -= 1
    return a if axis == start else moveaxis(a, axis, start)


@staged("rot90", static_argnames=("k", "axes"))
def rot90(m, k=1, axes=(0, 1)):
    """``m`` rotated by 90 degrees ``k`` times in the plane of ``axes``, counterclockwise
    from the first axis towards the second."""
    m = _arr("rot90", m)
    nd = aval_of(m).ndim
    if nd < 2:
        raise ValueError(
            f"rot90 requires its first argument to have ndim at least two, but "
            f"got first argument of shape {aval_of(m).shape}, which has ndim {nd}"
        )
    axes = tuple(axes)
    if len(axes) != 2:
        raise ValueError(f"rot90 requires axes to be a tuple of length 2; got {axes}")
    ax0, ax1 = (canonicalize_axis(ax, nd, "rot90") for ax in axes)
    if ax0 == ax1:
        raise ValueError(f"rot90 requires axes to be distinct; got {axes}")
    k = _static_int(k, "the k argument of rot90") % 4
    if k == 0:
        return m
    if k == 2:
        return flip(flip(m, ax0), ax1)
    if k == 1:
        return swapaxes(flip(m, ax1), ax0, ax1)
    return flip(swapaxes(m, ax0, ax1), ax1)


# --------------------------------------------------------------------------- diff


def _edge_like(name, v, shape, axis):
    v = _arr(name, v)
    if aval_of(v).ndim == 0:
        v = broadcast_to(v, shape[:axis] + (1,) + shape[axis + 1 :])
    return v


@staged("diff", static_argnames=("n", "axis"))
def diff(a, n=1, axis=-1, prepend=None, append=None):
    """The ``n``-th discrete difference of ``a`` along ``axis`` (``!=`` for booleans),
    after joining ``prepend`` and ``append`` to ``a``.

    Example: ``diff(jnp.array([1, 4, 9]))`` is ``[3, 5]``.
    """
    arr = _arr("diff", a)
    n = _static_int(n, "the 'n' argument of diff")
    axis = _static_int(axis, "the 'axis' argument of diff")
    if n == 0:
        return arr
    if n < 0:
        raise ValueError(f"order must be non-negative but got {n}")
    shape = aval_of(arr).shape
    if not shape:
        raise ValueError(f"diff requires input that is at least one dimensional; got {a}")
    axis = canonicalize_axis(axis, len(shape), "diff")
    parts = [arr]
    if prepend is not None:
        parts.insert(0, _edge_like("diff", prepend, shape, axis))
    if append is not None:
        parts.append(_edge_like("diff", append, shape, axis))
    if len(parts) > 1:
        arr = concatenate(parts, axis)
    op = not_equal if aval_of(arr).dtype == dtypes.bool_ else subtract
    lead = (slice(None),) * axis
    for _ in range(n):
        arr = op(getitem(arr, lead + (slice(1, None),)), getitem(arr, lead + (slice(None, -1),)))
    return arr


@staged("ediff1d")
def ediff1d(ary, to_end=None, to_begin=None):
    """Differences between consecutive elements of the flattened ``ary``, with ``to_begin``
    and ``to_end`` (cast to ``ary``'s dtype) joined on."""
    arr = ravel(_arr("ediff1d", ary))
    result = lax.sub(arr[1:], arr[:-1])
    dtype = aval_of(arr).dtype
    if to_begin is not None:
        result = concatenate((ravel(convert(_arr("ediff1d", to_begin), dtype)), result))
    if to_end is not None:
        result = concatenate((result, ravel(convert(_arr("ediff1d", to_end), dtype))))
    return result


# --------------------------------------------------------------------------- append, insert, delete


@staged("append", static_argnames=("axis",))
def append(arr, values, axis=None):
    """``arr`` with ``values`` joined on at the end of ``axis`` (None: both flattened)."""
    check_arraylike("append", arr, values)
    if axis is None:
        return concatenate([ravel(arr), ravel(values)], 0)
    return concatenate([arr, values], axis)


def delete(arr, obj, axis=None, *, assume_unique_indices=False):
    """``arr`` without the entries ``obj`` (an int, a slice, integer indices or a boolean
    mask) along ``axis`` (None: of the flattened ``arr``).

    Array ``obj`` must be concrete unless ``assume_unique_indices=True`` promises that its
    (integer) entries are unique, which makes the result's size known under ``jit``.
    """
    a = _arr("delete", arr)
    if axis is None:
        a, axis = ravel(a), 0
    axis = canonicalize_axis(axis, aval_of(a).ndim, "delete")
    n = aval_of(a).shape[axis]
    lead = (slice(None),) * axis
    if (
        not isinstance(obj, slice)
        and not isinstance(obj, Tracer)
        and np.ndim(obj) == 0
        and np.issubdtype(np.asarray(obj).dtype, np.integer)
    ):
        i = canonicalize_axis(operator.index(obj), n, "delete")
        return concatenate(
            [getitem(a, lead + (slice(0, i),)), getitem(a, lead + (slice(i + 1, None),))], axis
        )
    if isinstance(obj, slice):
        obj = np.arange(n)[obj]
        assume_unique_indices = True
    check_arraylike("delete", obj)
    obj_dtype = aval_of(asarray(obj)).dtype if isinstance(obj, Tracer) else np.asarray(obj).dtype
    if assume_unique_indices and np.issubdtype(obj_dtype, np.integer):
        idx = ravel(asarray(obj))
        idx = where_(idx < 0, idx + n, idx)
        idx = lax.clamp(convert(0, aval_of(idx).dtype), idx, convert(n, aval_of(idx).dtype))
        idx = sort(idx) - arange(aval_of(idx).shape[0], dtype=aval_of(idx).dtype)
        keep = arange(n - aval_of(idx).shape[0], dtype=aval_of(idx).dtype)
        keep = keep + lax.reduce_sum(
            lax.convert_element_type(keep[None, :] >= idx[:, None], aval_of(idx).dtype), (0,)
        )
        return getitem(a, lead + (keep,))
    host = _concrete(
        obj,
        "the 'obj' array argument of delete (pass "
        "assume_unique_indices=True to use traced unique indices)",
    )
    if np.issubdtype(host.dtype, np.integer):
        mask = np.ones(n, dtype=bool)
        mask[host] = False
    elif host.dtype == np.bool_:
        if host.shape != (n,):
            raise ValueError(
                "np.delete(arr, obj): for boolean indices, obj must be "
                "one-dimensional with length matching specified axis."
            )
        mask = ~host
    else:
        raise ValueError(
            f"np.delete(arr, obj): got obj.dtype={host.dtype}; must be integer or bool."
        )
    return getitem(a, lead + (mask,))


def insert(arr, obj, values, axis=None):
    """``arr`` with ``values`` inserted before the indices ``obj`` (an int, a slice or
    integer indices, possibly traced) along ``axis`` (None: of the flattened ``arr``)."""
    check_arraylike("insert", arr, 0 if isinstance(obj, slice) else obj, values)
    a = asarray(arr)
    if axis is None:
        a, axis = ravel(a), 0
    axis = canonicalize_axis(
        _static_int(axis, "the axis argument of insert"), aval_of(a).ndim, "insert"
    )
    n_input = aval_of(a).shape[axis]
    if isinstance(obj, slice):
        indices = arange(*obj.indices(n_input))
    else:
        indices = asarray(obj)
    if aval_of(indices).ndim > 1:
        raise ValueError(
            f"jnp.insert(): obj must be a slice, a one-dimensional array, or a scalar; got {obj}"
        )
    if not dtypes.is_int(aval_of(indices).dtype):
        if math.prod(aval_of(indices).shape) == 0 and not isinstance(obj, Tracer):
            indices = convert(indices, dtypes.default_int())
        else:
            raise ValueError(f"jnp.insert(): index array must be integer typed; got {obj}")
    a_aval = aval_of(a)
    values = convert(asarray(values), a_aval.dtype, False)
    while aval_of(values).ndim < a_aval.ndim:
        values = lax.expand_dims(values, (0,))
    if math.prod(aval_of(indices).shape) == 1:
        index = reshape(indices, ())
        if aval_of(indices).ndim == 0:
            values = moveaxis(values, 0, axis)
        indices = full(aval_of(values).shape[axis], index)
    n_insert = broadcast_shapes(aval_of(indices).shape, (aval_of(values).shape[axis],))[0]
    out_shape = list(a_aval.shape)
    out_shape[axis] += n_insert
    out = zeros_like(a, shape=tuple(out_shape))
    idt = aval_of(indices).dtype
    indices = where_(indices < 0, indices + convert(n_input, idt), indices)
    indices = lax.clamp(convert(0, idt), indices, convert(n_input, idt))
    values_ind = IndexUpdateHelper(indices)[argsort(indices)].add(arange(n_insert, dtype=idt))
    arr_mask = IndexUpdateHelper(ones(n_input + n_insert, dtype=dtypes.bool_))[values_ind].set(
        False
    )
    arr_ind = where(arr_mask, size=n_input)[0]
    lead = (slice(None),) * axis
    out = IndexUpdateHelper(out)[lead + (values_ind,)].set(values)
    return IndexUpdateHelper(out)[lead + (arr_ind,)].set(a)


# --------------------------------------------------------------------------- unstack, resize


def unstack(x, /, *, axis=0):
    """The slices of ``x`` along ``axis``, as a tuple of arrays."""
    x = _arr("unstack", x)
    if aval_of(x).ndim == 0:
        raise ValueError(
            "Unstack requires arrays with rank > 0, however a scalar array was passed."
        )
    axis = canonicalize_axis(axis, aval_of(x).ndim, "unstack")
    return tuple(
        lax.index_in_dim(x, i, axis, keepdims=False) for i in range(aval_of(x).shape[axis])
    )


@staged("resize", static_argnames=("new_shape",))
def resize(a, new_shape):
    """``a`` flattened, repeated as needed and reshaped to ``new_shape``."""
    a = ravel(_arr("resize", a))
    new_shape = tuple(_index_tuple(new_shape))
    if builtins.any(d < 0 for d in new_shape):
        raise ValueError("All elements of `new_shape` must be non-negative")
    new_size = math.prod(new_shape)
    size = aval_of(a).shape[0]
    if size == 0 or new_size == 0:
        return zeros_like(a, shape=new_shape)
    repeats = -(-new_size // size)
    return reshape(concatenate([a] * repeats)[:new_size], new_shape)


# --------------------------------------------------------------------------- apply


def apply_along_axis(func1d, axis, arr, *args, **kwargs):
    """``func1d`` applied to each 1-D slice of ``arr`` along ``axis`` (through ``vmap``);
    the dimensions of its result take the place of ``axis``."""
    arr = _arr("apply_along_axis", arr)
    nd = aval_of(arr).ndim
    axis = canonicalize_axis(axis, nd, "apply_along_axis")

    def func(x):
        return func1d(x, *args, **kwargs)

    for i in range(1, nd - axis):
        func = vmap(func, in_axes=i, out_axes=-1)
    for _ in range(axis):
        func = vmap(func, in_axes=0, out_axes=0)
    return func(arr)


def apply_over_axes(func, a, axes):
    """``func(a, axis)`` applied for each of ``axes`` in turn, each result keeping (or given
    back) the reduced dimension."""
    a = _arr("apply_over_axes", a)
    for axis in axes:
        b = func(a, axis)
        b_nd, a_nd = aval_of(b).ndim, aval_of(a).ndim
        if b_nd == a_nd:
            a = b
        elif b_nd == a_nd - 1:
            a = lax.expand_dims(b, (canonicalize_axis(axis, a_nd, "apply_over_axes"),))
        else:
            raise ValueError("function is not returning an array of the correct shape")
    return a


# --------------------------------------------------------------------------- block, kron, vander


def _block(xs):
    """The assembled array of the nested lists ``xs`` and their depth."""
    if isinstance(xs, tuple):
        raise ValueError(f"jax.numpy.block does not allow tuples, got {xs}")
    if not isinstance(xs, list):
        return asarray(xs), 1
    if not xs:
        raise ValueError("jax.numpy.block does not allow empty list arguments")
    parts, depths = zip(*(_block(x) for x in xs), strict=True)
    if builtins.any(d != depths[0] for d in depths[1:]):
        raise ValueError("Mismatched list depths in jax.numpy.block")
    rank = builtins.max(depths[0], *(aval_of(p).ndim for p in parts))
    parts = [lax.expand_dims(p, tuple(range(rank - aval_of(p).ndim))) for p in parts]
    return concatenate(parts, axis=-depths[0]), depths[0] + 1


@staged("block")
def block(arrays):
    """An array assembled from nested lists of blocks: the innermost lists are joined along
    the last axis, the next ones along the one before, and so on."""
    return _block(arrays)[0]


@staged("kron")
def kron(a, b):
    """The Kronecker product of ``a`` and ``b`` (the shorter shape padded with leading 1s)."""
    check_arraylike("kron", a, b)
    a, b = promote_dtypes(a, b)
    na, nb = aval_of(a).ndim, aval_of(b).ndim
    if na < nb:
        a = lax.expand_dims(a, tuple(range(nb - na)))
    elif nb < na:
        b = lax.expand_dims(b, tuple(range(na - nb)))
    nd = aval_of(a).ndim
    a_wide = lax.expand_dims(a, tuple(range(1, 2 * nd, 2)))
    b_wide = lax.expand_dims(b, tuple(range(0, 2 * nd, 2)))
    shape = tuple(int(m) * int(n) for m, n in zip(aval_of(a).shape, aval_of(b).shape, strict=True))
    return reshape(lax.mul(a_wide, b_wide), shape)


@staged("vander", static_argnames=("N", "increasing"))
def vander(x, N=None, increasing=False):  # noqa: N803  (NumPy's name)
    """The Vandermonde matrix of the 1-D ``x``: columns ``x**(N-1), ..., x, 1`` (reversed if
    ``increasing``)."""
    x = _arr("vander", x)
    if aval_of(x).ndim != 1:
        raise ValueError("x must be a one-dimensional array")
    n = aval_of(x).shape[0] if N is None else _static_int(N, "the 'N' argument of vander")
    if n < 0:
        raise ValueError("N must be nonnegative")
    iota = lax.iota(aval_of(x).dtype, n)
    if not increasing:
        iota = lax.sub(convert(n - 1, aval_of(x).dtype), iota)
    return _ufuncs.power(x[:, None], iota[None, :])


def trim_zeros(filt, trim="fb", axis=None):
    """``filt`` without its leading (``'f'``) and/or trailing (``'b'``) zeros along ``axis``
    (None: all axes); ``filt`` must be concrete."""
    filt = _arr("trim_zeros", filt)
    host = _concrete(
        filt, "the filt argument of trim_zeros (its result size depends on its values)"
    )
    nd = host.ndim
    axes = range(nd) if axis is None else _index_tuple(axis)
    axes = {canonicalize_axis(ax, nd, "trim_zeros") for ax in axes}
    trim = trim.lower()
    if not axes or ("f" not in trim and "b" not in trim):
        return filt
    index = []
    for ax in range(nd):
        if ax not in axes:
            index.append(slice(None))
            continue
        nonzero_along = np.any(host != 0, axis=tuple(i for i in range(nd) if i != ax))
        if not nonzero_along.any():
            index.append(slice(0, 0))
            continue
        start = int(nonzero_along.argmax()) if "f" in trim else None
        stop = host.shape[ax] - int(nonzero_along[::-1].argmax()) if "b" in trim else None
        index.append(slice(start, stop))
    return getitem(filt, tuple(index))


def array_equal(a1, a2, equal_nan=False):
    """Whether ``a1`` and ``a2`` have the same shape and elements (NaNs equal if
    ``equal_nan``)."""
    a1, a2 = asarray(a1), asarray(a2)
    if aval_of(a1).shape != aval_of(a2).shape:
        return array(False, dtype=dtypes.bool_)
    eq = asarray(a1 == a2)
    if equal_nan:
        eq = eq | (isnan(a1) & isnan(a2))
    return _reductions.all(eq)


def array_equiv(a1, a2):
    """Whether ``a1`` and ``a2`` broadcast together and are equal elementwise."""
    a1, a2 = asarray(a1), asarray(a2)
    try:
        eq = _ufuncs.equal(a1, a2)
    except ValueError:
        return array(False)
    return _reductions.all(eq)


# --------------------------------------------------------------------------- splitting, bits


def dsplit(ary, indices_or_sections):
    """Split along axis 2 (depth)."""
    return _split("dsplit", ary, indices_or_sections, 2, True)


iterable = np.iterable


def _bit_order(bitorder):
    if bitorder not in ("little", "big"):
        raise ValueError(f"'order' must be either 'little' or 'big', got bitorder={bitorder!r}")


def _u8(value):
    return _arr("packbits", np.uint8(value))


@staged("packbits", static_argnames=("axis", "bitorder"))
def packbits(a, axis=None, bitorder="big"):
    """Packs the truth values of ``a`` into the bits of uint8s along ``axis`` (None: of the
    flattened array), padding with zeros to a multiple of 8."""
    a = _arr("packbits", a)
    dtype = aval_of(a).dtype
    if not (dtypes.is_int(dtype) or dtype == dtypes.bool_):
        raise TypeError(
            f"packbits: expected an input array of integer or boolean data type, got {dtype}"
        )
    _bit_order(bitorder)
    a = lax.convert_element_type(_ufuncs.to_bool(a), np.uint8)
    if axis is None:
        a, axis = ravel(a), 0
    a = swapaxes(a, axis, -1)
    shape = aval_of(a).shape
    if shape[-1] % 8:
        a = lax.pad(a, _u8(0), [(0, 0, 0)] * (len(shape) - 1) + [(0, 8 - shape[-1] % 8, 0)])
        shape = aval_of(a).shape
    a = lax.reshape(a, (*shape[:-1], shape[-1] // 8, 8))
    shifts = np.arange(8, dtype=np.uint8)[:: -1 if bitorder == "big" else 1]
    shifts = lax.broadcast_in_dim(_arr("packbits", shifts), aval_of(a).shape, (len(shape),))
    packed = lax.reduce_sum(lax.shift_left(a, shifts), (len(shape),))
    return swapaxes(packed, axis, -1)


@staged("unpackbits", static_argnames=("axis", "count", "bitorder"))
def unpackbits(a, axis=None, count=None, bitorder="big"):
    """Unpacks the bits of the uint8 array ``a`` along ``axis`` (None: of the flattened
    array); ``count`` keeps that many bits (pads with zeros if larger; negative: drops that
    many from the end)."""
    a = _arr("unpackbits", a)
    if aval_of(a).dtype != np.uint8:
        raise TypeError(
            f"unpackbits: expected an input array of unsigned byte data type, got "
            f"{aval_of(a).dtype}"
        )
    _bit_order(bitorder)
    if axis is None:
        a, axis = ravel(a), 0
    a = swapaxes(a, axis, -1)
    shape = aval_of(a).shape
    bits = (np.uint8(1) << np.arange(8, dtype=np.uint8))[:: -1 if bitorder == "big" else 1]
    full = (*shape, 8)
    bits = lax.broadcast_in_dim(_arr("unpackbits", bits), full, (len(shape),))
    a = lax.broadcast_in_dim(a, full, tuple(range(len(shape))))
    unpacked = lax.convert_element_type(lax.gt(lax.bitwise_and(a, bits), _u8(0)), np.uint8)
    unpacked = lax.reshape(unpacked, (*shape[:-1], shape[-1] * 8))
    if count is not None:
        count = operator.index(count)
        n = shape[-1] * 8
        if count > n:
            unpacked = lax.pad(
                unpacked, _u8(0), [(0, 0, 0)] * (len(shape) - 1) + [(0, count - n, 0)]
            )
        else:
            stop = count if count >= 0 else builtins.max(n + count, 0)
            unpacked = lax.slice_in_dim(unpacked, 0, stop, axis=len(shape) - 1)
    return swapaxes(unpacked, axis, -1)
