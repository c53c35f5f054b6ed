"""NumPy-style indexing: ``x[idx]`` and the indexed updates of ``x.at[idx]``.

``getitem`` follows jax.numpy. Indices made only of Python ints, slices, ``None`` and
``...`` lower to ``slice`` (then ``rev`` for negative steps, ``squeeze`` for integers and
``broadcast_in_dim`` for new axes); a traced scalar index with unit-step slices lowers to
``dynamic_slice``; anything else (integer arrays, boolean masks, strided slices mixed with
traced scalars) to one ``gather``. Out-of-bounds integers are clamped, as in JAX; negative
ones count from the end. Boolean masks become the integer arrays of their nonzero positions,
so they must be concrete.

Indexed updates (``x.at[idx].set(v)``, ``.add``, ``.multiply``, ``.min``, ``.max``, ...) are
one ``scatter`` built from the same plan as the gather: out-of-bounds updates are dropped,
repeated indices all apply, and the values are broadcast and cast to ``x``'s dtype.
"""

import warnings
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from xform import core, dtypes, errors
from xform.core import Tracer, get_aval
from xform.errors import NonConcreteBooleanIndexError
from xform.lax import _names as lax
from xform.numpy._promote import asarray
from xform.numpy._ufuncs import power
from xform.primitives.elementwise import convert_folding_constants

__all__ = ["getitem", "IndexUpdateHelper", "NonConcreteBooleanIndexError"]


# Kinds of index entries.
_NONE, _ELLIPSIS, _SLICE, _INT, _BOOL, _ARRAY = "none", "ellipsis", "slice", "int", "bool", "array"


# --------------------------------------------------------------------------- parsing


def _as_tuple(idx):
    if isinstance(idx, tuple):
        return idx
    if isinstance(idx, Sequence) and not isinstance(idx, str):
        # NumPy's old heuristics for lists are ambiguous; JAX (and xform) refuse them all.
        if any(
            isinstance(i, (Sequence, slice))
            or i is None
            or i is Ellipsis
            or (i.ndim if isinstance(i, Tracer) else np.ndim(i)) != 0
            for i in idx
        ):
            fix = "`arr[tuple(seq)]`"
        else:
            fix = "`arr[array(seq)]`"
        raise TypeError(
            "Using a non-tuple sequence for multidimensional indexing is not "
            f"allowed; use {fix} instead of `arr[seq]`."
        )
    return (idx,)


def _dtype_error(dtype):
    return TypeError(f"Indexer must have integer or boolean type, got indexer with type {dtype}")


def _classify(i, position):
    """(kind, value) of one index entry. Concrete arrays become NumPy arrays and concrete
    integer scalars Python ints, so that only traced values reach the lax operations."""
    if i is None:
        return _NONE, None
    if i is Ellipsis:
        return _ELLIPSIS, None
    if isinstance(i, slice):
        for v in (i.start, i.stop, i.step):
            if isinstance(v, Tracer):
                raise IndexError(
                    f"Slice entries must be static integers. Got {i} at position "
                    f"{position}; use xform.lax.dynamic_slice for a traced start"
                )
        return _SLICE, i
    if isinstance(i, (bool, np.bool_)):
        return _BOOL, bool(i)
    if isinstance(i, (int, np.integer)):
        return _INT, int(i)
    if isinstance(i, Tracer):
        if i.dtype == dtypes.bool_:
            return _BOOL, i
        if not dtypes.is_int(i.dtype):
            raise _dtype_error(i.dtype)
        return _ARRAY, i
    if isinstance(i, str):
        raise TypeError(f"xform does not support string indexing; got idx={i!r}")
    if isinstance(i, (float, complex)):
        raise _dtype_error(np.dtype(type(i)))
    if isinstance(i, Sequence):
        a = np.asarray(i) if len(i) else np.zeros((0,), dtypes.int32)
    elif isinstance(i, np.ndarray) or core.is_concrete_array(i):
        a = np.asarray(i)
    else:
        raise IndexError(
            "only integers, slices (`:`), ellipsis (`...`), newaxis (`None`) and "
            f"integer or boolean arrays are valid indices. Got {i!r}"
        )
    if a.dtype == np.bool_:
        return (_BOOL, bool(a)) if a.ndim == 0 else (_BOOL, a)
    if not np.issubdtype(a.dtype, np.integer):
        raise _dtype_error(a.dtype)
    return (_INT, int(a)) if a.ndim == 0 else (_ARRAY, a)


def _parse(idx, shape):
    """The classified entries of ``idx`` and how many dimensions of ``shape`` they consume."""
    entries = [_classify(i, p) for p, i in enumerate(_as_tuple(idx))]
    consumed, n_ellipsis = 0, 0
    for kind, v in entries:
        if kind == _ELLIPSIS:
            n_ellipsis += 1
        elif kind == _BOOL:
            consumed += np.ndim(v) if not isinstance(v, Tracer) else v.ndim
        elif kind != _NONE:
            consumed += 1
    if n_ellipsis > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if consumed > len(shape):
        raise IndexError(
            f"Too many indices: array of shape {tuple(shape)} is "
            f"{len(shape)}-dimensional, but {consumed} were indexed"
        )
    return entries, consumed


def _expand_ellipsis(entries, n_missing):
    """Entries with ``...`` (or, without one, the end) replaced by full slices."""
    full = [(_SLICE, slice(None))] * n_missing
    out = []
    for e in entries:
        if e[0] == _ELLIPSIS:
            out.extend(full)
            full = []
        else:
            out.append(e)
    return out + full


def _symbolic_slice_start(v, axis, size):
    """The start of ``x[v]`` along a symbolic axis, for the slices whose size is simply
    ``size - start + stop``: steps of 1, ``start >= 0``, ``stop`` None or negative."""
    start = 0 if v.start is None else v.start
    if (
        (v.step or 1) != 1
        or not isinstance(start, int)
        or start < 0
        or not (v.stop is None or isinstance(v.stop, int) and v.stop < 0)
    ):
        raise NotImplementedError(
            f"indexing: the slice {v} of axis {axis} of symbolic size {size}: xform exports "
            "x[k:] and x[:-k] (k >= 0) along a symbolic dimension"
        )
    return start


def _slice_size(start, stop, step):
    return len(range(start, stop, step))


def _mode_name(mode):
    """``mode`` (None, a string or a GatherScatterMode) as a lower-case name, or None."""
    if mode is None or isinstance(mode, str):
        return mode
    return lax.GatherScatterMode.from_any(mode).name.lower()


def _index_dtype(shape):
    """int32 unless a dimension needs more (as JAX's ``int_dtype_for_shape``)."""
    if any(d > np.iinfo(np.int32).max for d in shape):
        return dtypes.canonicalize(dtypes.int64)
    return dtypes.int32


# --------------------------------------------------------------------------- getitem


def getitem(
    x,
    idx,
    *,
    indices_are_sorted=False,
    unique_indices=False,
    mode=None,
    fill_value=None,
    wrap_negative_indices=True,
):
    """``x[idx]`` with jax.numpy's semantics (``x.at[idx].get(...)`` takes the keywords).

    Args:
      x: an xform array or tracer.
      idx: ints, slices, ``None``, ``...``, integer arrays or concrete boolean masks, or a
        tuple of them.
      mode: how out-of-bounds integer indices behave: ``None``/``'promise_in_bounds'`` and
        ``'clip'`` clamp them, ``'fill'`` returns ``fill_value`` (default NaN, the minimum
        signed int, the maximum unsigned int, or True) for them.
      wrap_negative_indices: whether negative indices count from the end.

    Returns:
      The indexed array.

    Example: ``getitem(x, (0, slice(None, None, -1)))`` is ``x[0, ::-1]``.
    """
    shape = get_aval(x).shape
    entries, consumed = _parse(idx, shape)
    if _mode_name(mode) in (None, "promise_in_bounds", "clip"):
        kinds = {kind for kind, _ in entries}
        if kinds <= {_NONE, _ELLIPSIS, _SLICE, _INT}:
            return _static_slice(
                x, shape, _expand_ellipsis(entries, len(shape) - consumed), wrap_negative_indices
            )
        if (
            kinds <= {_NONE, _ELLIPSIS, _SLICE, _INT, _ARRAY}
            and all(v.ndim == 0 for kind, v in entries if kind == _ARRAY)
            and all(v.step in (None, 1, -1) for kind, v in entries if kind == _SLICE)
        ):
            return _dynamic_slice(
                x, shape, _expand_ellipsis(entries, len(shape) - consumed), wrap_negative_indices
            )
    return _gather(
        x,
        shape,
        entries,
        consumed,
        wrap=wrap_negative_indices,
        indices_are_sorted=indices_are_sorted,
        unique_indices=unique_indices,
        mode=mode,
        fill_value=fill_value,
    )


def _static_slice(x, shape, entries, wrap):
    starts, limits, strides, rev_dims, squeeze_dims, new_dims = [], [], [], [], [], []
    for kind, v in entries:
        if kind == _NONE:
            # Positions in the result after squeezing, counting earlier new axes.
            new_dims.append(len(starts) - len(squeeze_dims) + len(new_dims))
            continue
        axis = len(starts)
        size = shape[axis]
        if kind == _INT:
            if size == 0:
                raise IndexError(f"index {v} is out of bounds for axis {axis} with size 0")
            i = v + size if wrap and v < 0 else v
            i = min(max(i, 0), size - 1)  # JAX clamps static out-of-bounds indices
            starts.append(i)
            limits.append(i + 1)
            strides.append(1)
            squeeze_dims.append(axis)
            continue
        if core.is_symbolic_dim(size):  # export: x[:], x[k:] and x[:-k] of a symbolic size
            starts.append(_symbolic_slice_start(v, axis, size))
            limits.append(size if v.stop is None else size + v.stop)
            try:
                known_non_negative = limits[-1] - starts[-1] >= 0
            except errors.InconclusiveDimensionOperation:
                known_non_negative = False
            if not known_non_negative:
                raise NotImplementedError(
                    f"indexing: the slice {v} of axis {axis} of symbolic size {size} may be "
                    "empty; declare a bound (symbolic_shape(..., constraints=('b >= 2',)))"
                )
            strides.append(1)
            continue
        start, stop, step = v.indices(size)
        n = _slice_size(start, stop, step)
        if step > 0:
            starts.append(start)
            limits.append(max(start, stop))
            strides.append(step)
        elif n == 0:
            starts.append(0)
            limits.append(0)
            strides.append(1)
        else:
            # Take the same elements in increasing order, then reverse them.
            starts.append(start + step * (n - 1))
            limits.append(start + 1)
            strides.append(-step)
            rev_dims.append(axis)
    out = x
    unit = all(s == 1 for s in strides)
    if not (unit and starts == [0] * len(shape) and tuple(limits) == tuple(shape)):
        out = lax.slice(out, starts, limits, None if unit else strides)
    return _reverse_squeeze_expand(out, rev_dims, squeeze_dims, new_dims)


def _reverse_squeeze_expand(out, rev_dims, squeeze_dims, new_dims):
    """The steps after a (dynamic) slice: negative steps, integer indices, ``None``s."""
    if rev_dims:
        out = lax.rev(out, tuple(rev_dims))
    if squeeze_dims:
        out = lax.squeeze(out, tuple(squeeze_dims))
    if new_dims:
        out = lax.expand_dims(out, tuple(new_dims))
    return out


def _dynamic_slice(x, shape, entries, wrap):
    index_dtype = _index_dtype(shape)
    starts, sizes, rev_dims, squeeze_dims, new_dims = [], [], [], [], []
    for kind, v in entries:
        if kind == _NONE:
            new_dims.append(len(starts) - len(squeeze_dims) + len(new_dims))
            continue
        axis = len(starts)
        size = shape[axis]
        if kind in (_INT, _ARRAY):
            if size == 0:
                raise IndexError(f"index is out of bounds for axis {axis} with size 0")
            if kind == _INT:
                i = np.asarray(v + size if wrap and v < 0 else v, index_dtype)
            else:
                i = _normalize_traced(v, size, index_dtype, wrap)
            starts.append(i)
            sizes.append(1)
            squeeze_dims.append(axis)
            continue
        start, stop, step = v.indices(size)
        n = _slice_size(start, stop, step)
        if step < 0:
            rev_dims.append(axis)
            start = start - n + 1 if n else 0
        starts.append(np.asarray(start if n else 0, index_dtype))
        sizes.append(n)
    # Negative starts were normalized above; dynamic_slice clamps what is still out of range.
    out = lax.dynamic_slice(x, starts, sizes, allow_negative_indices=False)
    return _reverse_squeeze_expand(out, rev_dims, squeeze_dims, new_dims)


def _normalize_traced(i, size, index_dtype, wrap):
    """Traced integer index ``i`` in ``index_dtype``, negative values counting from the end."""
    signed = dtypes.is_signed_int(i.dtype)
    if i.dtype != index_dtype:
        i = convert_folding_constants(i, index_dtype)
    if not (wrap and signed):
        return i
    return lax.select_n(
        lax.lt(i, np.asarray(0, index_dtype)), i, lax.add(i, np.asarray(size, index_dtype))
    )


# --------------------------------------------------------------------------- gather plan


class _GatherPlan(NamedTuple):
    """How ``x[idx]`` is one gather (and ``x.at[idx]`` one scatter)."""

    slice_shape: tuple  # the shape of x[idx]
    slice_sizes: tuple  # the gather's slice sizes
    indices: object  # the gather indices (index vector last), or None when there are none
    offset_dims: tuple
    collapsed_slice_dims: tuple
    start_index_map: tuple
    sorted_unique: bool  # no advanced index: the indices are sorted and unique
    reversed_dims: tuple  # dims of the gathered value to reverse (negative steps)
    new_dims: tuple  # dims of x[idx] made by None
    bool_dims: tuple  # axes inserted into x for scalar boolean indices


def _concrete_mask(v, position):
    if isinstance(v, Tracer):
        value = v.concrete_value()
        if value is None:
            raise NonConcreteBooleanIndexError(
                f"Array boolean indices must be concrete; got a traced {v.aval.str_short()} "
                f"at position {position} of the index. The shape of x[mask] depends on the "
                "values of the mask, which are not known while tracing. Use "
                "xform.numpy.where(mask, x, fill) to keep the shape, or compute the mask "
                "outside the transformed function."
            )
        return np.asarray(value)
    return np.asarray(v)


def _gather_plan(shape, entries, consumed, wrap):
    index_dtype = _index_dtype(shape)
    out, adv_pos, bool_dims = _expand_booleans(shape, entries, consumed, index_dtype)
    x_shape = list(shape)
    for d in bool_dims:
        x_shape.insert(d, 1)
    x_axes = _normalize(out, x_shape, index_dtype, wrap)
    adv, insert_at = _advanced(out, adv_pos)

    pieces = []  # (index array, first dim of the gather's batch shape it spans)
    batch_shape, offset_dims, collapsed, start_map = [], [], [], []
    slice_shape, slice_sizes, new_dims, reversed_dims = [], [], [], []
    for j, (kind, v) in enumerate(out):
        x_axis = x_axes[j]
        if j == insert_at:
            arrays, bshape = _broadcast_indices([out[k][1] for k in adv])
            pieces.extend((a, len(batch_shape)) for a in arrays)
            batch_shape.extend(bshape)
            start_map.extend(x_axes[k] for k in adv)
            collapsed.extend(x_axes[k] for k in adv)
            slice_shape.extend(bshape)
        if j in adv:
            slice_sizes.append(1)
        elif kind in (_INT, _ARRAY):  # a scalar index without advanced indexing
            if x_shape[x_axis] == 0:
                raise IndexError(f"index is out of bounds for axis {x_axis} with size 0")
            pieces.append((v, len(batch_shape)))
            collapsed.append(x_axis)
            start_map.append(x_axis)
            slice_sizes.append(1)
        elif kind == _NONE:
            new_dims.append(len(slice_shape))
            slice_shape.append(1)
        else:
            size = x_shape[x_axis]
            start, stop, step = v.indices(size)
            n = _slice_size(start, stop, step)
            if step == 1:
                if n != size:
                    pieces.append((np.asarray(start, index_dtype), len(batch_shape)))
                    start_map.append(x_axis)
                slice_sizes.append(n)
                offset_dims.append(len(slice_shape) - len(new_dims))
            else:
                ind = (start + step * np.arange(n)).astype(index_dtype)
                if step < 0:  # gather in increasing order, then reverse
                    reversed_dims.append(len(slice_shape) - len(new_dims))
                    ind = ind[::-1]
                pieces.append((ind, len(batch_shape)))
                batch_shape.append(n)
                collapsed.append(x_axis)
                start_map.append(x_axis)
                slice_sizes.append(1)
            slice_shape.append(n)
    return _GatherPlan(
        tuple(slice_shape),
        tuple(slice_sizes),
        _stack_indices(pieces, batch_shape),
        tuple(offset_dims),
        tuple(sorted(collapsed)),
        tuple(start_map),
        not adv,
        tuple(reversed_dims),
        tuple(new_dims),
        tuple(bool_dims),
    )


def _advanced(out, adv_pos):
    """The entries of ``out`` that are advanced indices, and where their dims go.

    With any integer array, integers are advanced indices too. NumPy's rule: advanced
    indices at consecutive positions put their broadcast dims where the first one is;
    separated ones put them first.
    """
    if not any(k == _ARRAY and np.ndim(v) > 0 for k, v in out):
        return [], -1
    adv = [j for j, (k, _) in enumerate(out) if k in (_INT, _ARRAY)]
    contiguous = all(b - a == 1 for a, b in zip(adv_pos, adv_pos[1:], strict=False))
    return adv, adv[0] if contiguous else 0


def _expand_booleans(shape, entries, consumed, index_dtype):
    """Entries with ``...`` expanded, boolean masks replaced by the integer arrays of their
    nonzero positions, and scalar booleans by integer arrays of length 1 or 0 on a new
    size-1 axis of x. Also returns the positions of the integer entries in the index (masks
    expanded, ``...`` counting once), which decide adjacency as in JAX, and the new axes."""
    ndim = len(shape)
    out, adv_pos, bool_dims = [], [], []
    pos = axis = 0
    for p, (kind, v) in enumerate(entries):
        if kind == _ELLIPSIS:
            out.extend([(_SLICE, slice(None))] * (ndim - consumed))
            axis += ndim - consumed
        elif kind == _BOOL:
            mask = _concrete_mask(v, p)
            if mask.ndim == 0:
                bool_dims.append(sum(k != _NONE for k, _ in out))
                out.append((_ARRAY, np.arange(int(mask), dtype=index_dtype)))
                pos += 1
                continue
            expected = shape[axis : axis + mask.ndim]
            if not all(s in (0, t) for s, t in zip(mask.shape, expected, strict=True)):
                raise IndexError(
                    f"boolean index did not match shape of indexed array in index "
                    f"{p}: got {mask.shape}, expected {list(expected)}"
                )
            for a in np.nonzero(mask):
                out.append((_ARRAY, a))
                adv_pos.append(pos)
                pos += 1
            axis += mask.ndim
            continue
        else:
            if kind in (_INT, _ARRAY):
                adv_pos.append(pos)
            out.append((kind, v))
            axis += kind != _NONE
        pos += 1
    if all(k != _ELLIPSIS for k, _ in entries):
        out.extend([(_SLICE, slice(None))] * (ndim - consumed))
    return out, adv_pos, bool_dims


def _normalize(out, x_shape, index_dtype, wrap):
    """Integer entries of ``out`` in the index dtype with negative values wrapped (in place);
    returns the axis of x each entry indexes (None for ``None`` entries)."""
    x_axes = []
    axis = 0
    for j, (kind, v) in enumerate(out):
        if kind == _NONE:
            x_axes.append(None)
            continue
        x_axes.append(axis)
        size = x_shape[axis]
        axis += 1
        if kind == _INT:
            out[j] = (_INT, np.asarray(v + size if wrap and v < 0 else v, index_dtype))
        elif kind == _ARRAY and isinstance(v, Tracer):
            out[j] = (_ARRAY, _normalize_traced(v, size, index_dtype, wrap))
        elif kind == _ARRAY:
            wrapped = np.where(v < 0, v + size, v) if wrap and v.dtype.kind == "i" else v
            out[j] = (_ARRAY, wrapped.astype(index_dtype))
    return x_axes


def _broadcast_indices(arrays):
    """The advanced index arrays broadcast together (NumPy's rules), and their shape."""
    shapes = [tuple(np.shape(a)) for a in arrays]
    try:
        shape = np.broadcast_shapes(*shapes)
    except ValueError:
        # ValueError, as JAX's (NumPy raises IndexError here).
        raise ValueError(
            "Incompatible shapes for broadcasting: indexing arrays could not be "
            f"broadcast together, got shapes {' '.join(map(str, shapes))}"
        ) from None
    out = []
    for a, s in zip(arrays, shapes, strict=True):
        if s == shape:
            out.append(a)
        elif isinstance(a, Tracer):
            dims = tuple(range(len(shape) - len(s), len(shape)))
            out.append(lax.broadcast_in_dim(a, shape, dims))
        else:
            out.append(np.broadcast_to(a, shape))
    return out, list(shape)


def _stack_indices(pieces, batch_shape):
    """One index array of shape ``batch_shape + [len(pieces)]``; NumPy when all are concrete."""
    if not pieces:
        return None
    full = tuple(batch_shape) + (1,)
    if not any(isinstance(a, Tracer) for a, _ in pieces):
        cols = []
        for a, start in pieces:
            lead = (1,) * start + np.shape(a)
            col = np.reshape(a, lead + (1,) * (len(full) - len(lead)))
            cols.append(np.broadcast_to(col, full))
        return np.concatenate(cols, axis=-1)
    cols = [
        lax.broadcast_in_dim(a, full, tuple(range(start, start + np.ndim(a))))
        for a, start in pieces
    ]
    return cols[0] if len(cols) == 1 else lax.concatenate(cols, len(batch_shape))


def _gather(
    x, shape, entries, consumed, *, wrap, indices_are_sorted, unique_indices, mode, fill_value
):
    plan = _gather_plan(shape, entries, consumed, wrap)
    if fill_value is not None:
        if isinstance(fill_value, Tracer):
            raise errors.ConcretizationTypeError(
                "the fill_value argument to indexed get() must be a concrete scalar, got a "
                f"traced {fill_value.aval.str_short()}"
            )
        if np.ndim(fill_value) != 0:
            raise ValueError("fill_value argument to indexed get() must be a scalar")
        if isinstance(fill_value, (np.ndarray, np.generic)) or core.is_concrete_array(fill_value):
            fill_value = np.asarray(fill_value).item()
    y = x
    if plan.bool_dims:
        y = lax.expand_dims(y, plan.bool_dims)
    if 0 in plan.slice_shape:  # nothing to gather (and XLA rejects some empty gathers)
        return lax.full_like(y, 0, shape=plan.slice_shape)
    if plan.indices is not None:
        dnums = lax.GatherDimensionNumbers(
            plan.offset_dims, plan.collapsed_slice_dims, plan.start_index_map
        )
        y = lax.gather(
            y,
            plan.indices,
            dnums,
            plan.slice_sizes,
            unique_indices=unique_indices or plan.sorted_unique,
            indices_are_sorted=indices_are_sorted or plan.sorted_unique,
            mode=mode,
            fill_value=fill_value,
        )
    if plan.reversed_dims:
        y = lax.rev(y, plan.reversed_dims)
    if plan.new_dims:
        y = lax.expand_dims(y, plan.new_dims)
    return y


# --------------------------------------------------------------------------- indexed updates


def _scatter_update(x, idx, values, op, *, indices_are_sorted, unique_indices, mode, wrap):
    """``x`` with ``op(x[idx], values)`` written at ``idx``, as jax.numpy's ``.at`` does."""
    x_aval = get_aval(x)
    dtype, weak = x_aval.dtype, x_aval.weak_type
    if (
        type(values) is int
        and dtypes.is_int(dtype)
        and dtypes.iinfo(dtype).min <= values <= dtypes.iinfo(dtype).max
    ):
        values = np.asarray(values, dtype)
    elif isinstance(values, Sequence):  # a list or tuple, perhaps of traced values
        values = asarray(values)
    y_aval = get_aval(values)
    if (
        y_aval.dtype != dtype
        and dtypes.promote((y_aval.dtype, y_aval.weak_type), (dtype, False))[0] != dtype
    ):
        warnings.warn(
            f"scatter inputs have incompatible types: cannot safely cast value from "
            f"dtype={y_aval.dtype} to dtype={dtype}. In future releases this will be "
            "an error.",
            FutureWarning,
            stacklevel=4,
        )
    entries, consumed = _parse(idx, x_aval.shape)
    plan = _gather_plan(x_aval.shape, entries, consumed, wrap)
    if 0 in plan.slice_shape:
        return x
    # Compute in the promoted dtype, then cast back (x.at[i].add(0.5) on ints truncates).
    pdtype, pweak = dtypes.promote((dtype, weak), (y_aval.dtype, y_aval.weak_type))
    operand = convert_folding_constants(x, pdtype, pweak)
    updates = _broadcast_to(
        convert_folding_constants(values, pdtype, pweak), y_aval.shape, plan.slice_shape
    )
    if plan.new_dims:
        updates = lax.squeeze(updates, plan.new_dims)
    if plan.reversed_dims:
        updates = lax.rev(updates, plan.reversed_dims)
    if plan.bool_dims:
        operand = lax.expand_dims(operand, plan.bool_dims)
    indices = plan.indices
    if indices is None:  # every window is the whole operand: one empty index vector
        indices = np.zeros((0,), _index_dtype(x_aval.shape))
    dnums = lax.ScatterDimensionNumbers(
        plan.offset_dims, plan.collapsed_slice_dims, plan.start_index_map
    )
    out = op(
        operand,
        indices,
        updates,
        dnums,
        indices_are_sorted=indices_are_sorted or plan.sorted_unique,
        unique_indices=unique_indices or plan.sorted_unique,
        mode=mode,
    )
    if plan.bool_dims:
        out = lax.squeeze(out, plan.bool_dims)
    return convert_folding_constants(out, dtype, weak)


def _broadcast_to(y, y_shape, shape):
    shape = tuple(shape)
    if tuple(y_shape) == shape:
        return y
    if not _broadcastable(y_shape, shape) or np.broadcast_shapes(y_shape, shape) != shape:
        raise ValueError(
            f"Incompatible shapes for broadcasting: the update values have shape "
            f"{tuple(y_shape)}, which does not broadcast to the indexed shape "
            f"{shape}"
        )
    dims = tuple(range(len(shape) - len(y_shape), len(shape)))
    return lax.broadcast_in_dim(y, shape, dims)


def _broadcastable(a, b):
    try:
        np.broadcast_shapes(a, b)
    except ValueError:
        return False
    return True


def _scatter_sub(operand, indices, updates, dnums, **kw):
    return lax.scatter_add(operand, indices, lax.neg(updates), dnums, **kw)


def _ones_like(x):
    return lax.full_like(x, 1)


def _to_inexact(x):
    aval = get_aval(x)
    if dtypes.is_inexact(aval.dtype):
        return x
    return convert_folding_constants(x, dtypes.default_float(), aval.weak_type)


class _IndexUpdateRef:
    """``x.at[idx]``: methods return a copy of ``x`` updated at ``idx``.

    Every method takes the keywords ``indices_are_sorted``, ``unique_indices`` (promises that
    allow faster code), ``mode`` (``None`` drops out-of-bounds updates, ``'clip'`` clamps
    them in) and ``wrap_negative_indices``.
    """

    __slots__ = ("array", "index")

    def __init__(self, array, index):
        self.array = array
        self.index = index

    def __repr__(self):
        return f"_IndexUpdateRef({self.array!r}, {self.index!r})"

    def get(
        self,
        *,
        indices_are_sorted=False,
        unique_indices=False,
        mode=None,
        fill_value=None,
        wrap_negative_indices=True,
    ):
        """``x[idx]``, with control over out-of-bounds indices (``mode='fill'`` and
        ``fill_value``)."""
        return getitem(
            self.array,
            self.index,
            indices_are_sorted=indices_are_sorted,
            unique_indices=unique_indices,
            mode=mode,
            fill_value=fill_value,
            wrap_negative_indices=wrap_negative_indices,
        )

    def _update(self, values, op, kw):
        # ``kw`` is the calling method's ``locals()``: its keyword arguments.
        return _scatter_update(
            self.array,
            self.index,
            values,
            op,
            indices_are_sorted=kw["indices_are_sorted"],
            unique_indices=kw["unique_indices"],
            mode=kw["mode"],
            wrap=kw["wrap_negative_indices"],
        )

    def _ones_with(self, values, kw):
        """Ones shaped like the array with ``values`` at the index: divide's divisor, power's
        exponent (a scatter-mul into ones, so repeated indices multiply)."""
        ones = _IndexUpdateRef(_ones_like(self.array), self.index)
        return ones._update(values, lax.scatter_mul, kw)

    def set(
        self,
        values,
        *,
        indices_are_sorted=False,
        unique_indices=False,
        mode=None,
        wrap_negative_indices=True,
    ):
        """Pure ``x[idx] = values``."""
        return self._update(values, lax.scatter, locals())

    def add(
        self,
        values,
        *,
        indices_are_sorted=False,
        unique_indices=False,
        mode=None,
        wrap_negative_indices=True,
    ):
        """Pure ``x[idx] += values``; repeated indices all add."""
        return self._update(values, lax.scatter_add, locals())

    def subtract(
        self,
        values,
        *,
        indices_are_sorted=False,
        unique_indices=False,
        mode=None,
        wrap_negative_indices=True,
    ):
        """Pure ``x[idx] -= values``; repeated indices all subtract."""
        return self._update(values, _scatter_sub, locals())

    def multiply(
        self,
        values,
        *,
        indices_are_sorted=False,
        unique_indices=False,
        mode=None,
        wrap_negative_indices=True,
    ):
        """Pure ``x[idx] *= values``; repeated indices all multiply."""
        return self._update(values, lax.scatter_mul, locals())

    mul = multiply

    def divide(
        self,
        values,
        *,
        indices_are_sorted=False,
        unique_indices=False,
        mode=None,
        wrap_negative_indices=True,
    ):
        """Pure ``x[idx] /= values`` (true division: integer arrays give floats)."""
        den = self._ones_with(values, locals())
        return lax.div(_to_inexact(self.array), _to_inexact(den))

    def power(
        self,
        values,
        *,
        indices_are_sorted=False,
        unique_indices=False,
        mode=None,
        wrap_negative_indices=True,
    ):
        """Pure ``x[idx] **= values``, with ``xform.numpy.power``'s rules (integer arrays
        take integer powers, as in JAX)."""
        return power(self.array, self._ones_with(values, locals()))

    def min(
        self,
        values,
        *,
        indices_are_sorted=False,
        unique_indices=False,
        mode=None,
        wrap_negative_indices=True,
    ):
        """Pure ``x[idx] = minimum(x[idx], values)``."""
        return self._update(values, lax.scatter_min, locals())

    def max(
        self,
        values,
        *,
        indices_are_sorted=False,
        unique_indices=False,
        mode=None,
        wrap_negative_indices=True,
    ):
        """Pure ``x[idx] = maximum(x[idx], values)``."""
        return self._update(values, lax.scatter_max, locals())

    def apply(
        self,
        func,
        *,
        indices_are_sorted=False,
        unique_indices=False,
        mode=None,
        wrap_negative_indices=True,
    ):
        """Pure ``x[idx] = func(x[idx])`` for a unary elementwise ``func``, applied once per
        time an element is indexed (``lax.scatter_apply``), as in JAX."""
        shape = getitem(self.array, self.index, mode="fill" if mode is None else mode).shape
        kw = locals()
        zeros = lax.full(shape, 0, get_aval(self.array).dtype)
        return self._update(zeros, _scatter_applying(func, shape), kw)


def _scatter_applying(func, update_shape):
    def op(operand, indices, updates, dnums, **kw):
        del updates  # only their shape matters: the windows func is applied at
        return lax.scatter_apply(operand, indices, func, dnums, update_shape=update_shape, **kw)

    return op


class IndexUpdateHelper:
    """The ``.at`` property: ``x.at[idx].set(v)`` is a pure ``x[idx] = v``.

    ``.get``, ``.set``, ``.add``, ``.subtract``, ``.multiply`` (``.mul``), ``.divide``,
    ``.power``, ``.min`` and ``.max`` follow jax.numpy: updates at repeated indices all apply
    (in an unspecified order for ``set``), out-of-bounds updates are dropped, and values are
    broadcast to ``x[idx]``'s shape and cast to ``x``'s dtype.

    Example: ``x.at[1:3].add(1.0)``.
    """

    __slots__ = ("array",)

    def __init__(self, array):
        self.array = array

    def __getitem__(self, index):
        return _IndexUpdateRef(self.array, index)

    def __repr__(self):
        return f"IndexUpdateHelper({self.array!r})"
