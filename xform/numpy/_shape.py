"""Shape and layout: reshape, transpose, squeeze, concatenate, stack, split, broadcast_to,
flip, where, clip, and friends. Axis errors are ``ValueError`` (NumPy's ``AxisError``)."""

import builtins
import math

import numpy as np

from xform import dtypes, lax
from xform.array import Array
from xform.core import Tracer
from xform.numpy._promote import (
    _canonical_dtype,
    asarray,
    aval_of,
    broadcast_shapes,
    broadcast_to_shape,
    check_arraylike,
    convert,
    promote_dtypes,
)
from xform.numpy._reductions import canonicalize_axis
from xform.numpy._ufuncs import maximum, minimum, where_

__all__ = [
    "reshape", "ravel", "transpose", "permute_dims", "matrix_transpose", "swapaxes",
    "moveaxis", "expand_dims", "squeeze", "concatenate", "concat", "stack", "hstack",
    "vstack", "dstack", "column_stack", "split", "array_split", "hsplit", "vsplit",
    "broadcast_to", "broadcast_arrays", "broadcast_shapes", "atleast_1d", "atleast_2d",
    "atleast_3d", "flip", "fliplr", "flipud", "where", "clip", "shape", "ndim", "size",
    "astype", "copy", "repeat", "tile",
]


def _arr(name, a):
    check_arraylike(name, a)
    return asarray(a)


def _axes_tuple(axis):
    return tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)


def _canonicalize_shape(name, newshape, size):
    shape = _axes_tuple(newshape) if not isinstance(newshape, (int, np.integer)) else (newshape,)
    try:
        shape = tuple(int(d.__index__()) for d in shape)
    except AttributeError:
        raise TypeError(f"{name}: shape must be a sequence of integers, got {newshape!r}") \
            from None
    unknown = [i for i, d in enumerate(shape) if d == -1]
    if len(unknown) > 1:
        raise ValueError(f"{name}: can only specify one unknown dimension, got {shape}")
    if builtins.any(d < -1 for d in shape):
        raise ValueError(f"{name}: negative dimensions are not allowed, got {shape}")
    if unknown:
        known = math.prod(d for d in shape if d != -1)
        if known == 0 or size % known:
            raise TypeError(f"cannot reshape array of size {size} into shape {shape}")
        shape = tuple(size // known if d == -1 else d for d in shape)
    if math.prod(shape) != size:
        raise TypeError(f"cannot reshape array of size {size} into shape {shape}")
    return shape


def reshape(a, shape=None, order="C", *, newshape=None, copy=None):
    """``a`` with a new shape (one dimension may be -1); ``order`` 'C' or 'F'."""
    del copy
    if shape is None:
        shape = newshape
    if shape is None:
        raise TypeError("reshape: the shape argument is required")
    a = _arr("reshape", a)
    aval = aval_of(a)
    shape = _canonicalize_shape("reshape", shape, aval.size)
    if order == "C":
        return a if shape == aval.shape else lax.reshape(a, shape)
    if order == "F":
        t = transpose(a)
        out = lax.reshape(t, shape[::-1])
        return transpose(out)
    raise NotImplementedError(f"reshape: order={order!r} is not supported; use 'C' or 'F'")


def ravel(a, order="C"):
    """``a`` flattened to 1-D."""
    a = _arr("ravel", a)
    return reshape(a, (aval_of(a).size,), order)


def transpose(a, axes=None):
    """``a`` with its axes permuted (reversed by default)."""
    a = _arr("transpose", a)
    ndim = aval_of(a).ndim
    if axes is None:
        perm = tuple(range(ndim))[::-1]
    else:
        axes = _axes_tuple(axes)
        perm = tuple(canonicalize_axis(i, ndim, "transpose") for i in axes)
        if sorted(perm) != list(range(ndim)):
            raise ValueError(f"transpose: axes {axes} are not a permutation of the "
                             f"{ndim} axes of an array of shape {aval_of(a).shape}")
    return a if perm == tuple(range(ndim)) else lax.transpose(a, perm)


permute_dims = transpose


def matrix_transpose(x, /):
    """Swap the last two axes."""
    x = _arr("matrix_transpose", x)
    ndim = aval_of(x).ndim
    if ndim < 2:
        raise ValueError(f"matrix_transpose: x must be at least 2-D, got shape "
                         f"{aval_of(x).shape}")
    return transpose(x, tuple(range(ndim - 2)) + (ndim - 1, ndim - 2))


def swapaxes(a, axis1, axis2):
    """``a`` with two axes exchanged."""
    a = _arr("swapaxes", a)
    ndim = aval_of(a).ndim
    perm = list(range(ndim))
    i, j = canonicalize_axis(axis1, ndim, "swapaxes"), canonicalize_axis(axis2, ndim,
                                                                         "swapaxes")
    perm[i], perm[j] = perm[j], perm[i]
    return transpose(a, tuple(perm))


def moveaxis(a, source, destination):
    """Move axes of ``a`` to new positions; the others keep their order."""
    a = _arr("moveaxis", a)
    ndim = aval_of(a).ndim
    src = tuple(canonicalize_axis(i, ndim, "moveaxis") for i in _axes_tuple(source))
    dst = tuple(canonicalize_axis(i, ndim, "moveaxis") for i in _axes_tuple(destination))
    if len(src) != len(dst):
        raise ValueError(f"moveaxis: source {source} and destination {destination} must have "
                         "the same number of elements")
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise ValueError(f"moveaxis: repeated axis in source {source} or destination "
                         f"{destination}")
    perm = [i for i in range(ndim) if i not in src]
    for d, s in sorted(zip(dst, src, strict=True)):
        perm.insert(d, s)
    return transpose(a, tuple(perm))


def expand_dims(a, axis):
    """Insert size-1 axes at positions ``axis`` of the result."""
    a = _arr("expand_dims", a)
    axes = _axes_tuple(axis)
    out_ndim = aval_of(a).ndim + len(axes)
    canon = tuple(canonicalize_axis(i, out_ndim, "expand_dims") for i in axes)
    if len(set(canon)) != len(canon):
        raise ValueError(f"expand_dims: repeated axis in {axis}")
    return lax.expand_dims(a, canon)


def squeeze(a, axis=None):
    """Remove size-1 axes (all of them, or those in ``axis``)."""
    a = _arr("squeeze", a)
    shape = aval_of(a).shape
    if axis is None:
        axes = tuple(i for i, d in enumerate(shape) if d == 1)
    else:
        axes = tuple(canonicalize_axis(i, len(shape), "squeeze") for i in _axes_tuple(axis))
        bad = [i for i in axes if shape[i] != 1]
        if bad:
            raise ValueError(f"cannot select an axis to squeeze out which has size not equal "
                             f"to one, got shape={shape} and dimensions={axes}")
    return lax.squeeze(a, axes) if axes else a


def _as_list(name, arrays):
    if isinstance(arrays, (Tracer, Array, np.ndarray)):
        return [arrays[i] for i in range(aval_of(asarray(arrays)).shape[0])] \
            if not isinstance(arrays, np.ndarray) else list(arrays)
    if not isinstance(arrays, (list, tuple)):
        raise TypeError(f"{name}: expected a sequence of arrays, got {type(arrays).__name__}")
    return list(arrays)


def concatenate(arrays, axis=0, dtype=None):
    """Join arrays along an existing axis (``axis=None``: flatten them first)."""
    arrays = _as_list("concatenate", arrays)
    if not arrays:
        raise ValueError("Need at least one array to concatenate.")
    check_arraylike("concatenate", *arrays)
    arrays = [asarray(x) for x in arrays]
    if axis is None:
        arrays = [ravel(x) for x in arrays]
        axis = 0
    if aval_of(arrays[0]).ndim == 0:
        raise ValueError("Zero-dimensional arrays cannot be concatenated.")
    ndim = aval_of(arrays[0]).ndim
    for x in arrays[1:]:
        if aval_of(x).ndim != ndim:
            raise ValueError(f"Cannot concatenate arrays with different numbers of "
                             f"dimensions: got {', '.join(str(aval_of(y).shape) for y in arrays)}")
    axis = canonicalize_axis(axis, ndim, "concatenate")
    if dtype is None:
        arrays = promote_dtypes(*arrays)
    else:
        dt = _canonical_dtype(dtype, "concatenate")
        arrays = [convert(x, dt, False) for x in arrays]
    for x in arrays[1:]:
        s0, s = aval_of(arrays[0]).shape, aval_of(x).shape
        if s0[:axis] + s0[axis + 1:] != s[:axis] + s[axis + 1:]:
            raise ValueError(f"concatenate: all input array dimensions except axis {axis} "
                             f"must match exactly, got shapes "
                             f"{', '.join(str(aval_of(y).shape) for y in arrays)}")
    return arrays[0] if len(arrays) == 1 else lax.concatenate(arrays, axis)


concat = concatenate


def stack(arrays, axis=0, out=None, dtype=None):
    """Join same-shaped arrays along a new axis."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to xform.numpy.stack is not supported.")
    arrays = _as_list("stack", arrays)
    if not arrays:
        raise ValueError("Need at least one array to stack.")
    check_arraylike("stack", *arrays)
    arrays = [asarray(x) for x in arrays]
    shape0 = aval_of(arrays[0]).shape
    if builtins.any(aval_of(x).shape != shape0 for x in arrays):
        raise ValueError("All input arrays must have the same shape, got "
                         f"{', '.join(str(aval_of(x).shape) for x in arrays)}")
    axis = canonicalize_axis(axis, len(shape0) + 1, "stack")
    return concatenate([lax.expand_dims(x, (axis,)) for x in arrays], axis, dtype)


def atleast_1d(*arys):
    """Arrays with at least one dimension (a list for several arguments)."""
    check_arraylike("atleast_1d", *arys)
    out = [asarray(a) if aval_of(asarray(a)).ndim >= 1 else reshape(a, (1,)) for a in arys]
    return out[0] if len(out) == 1 else out


def atleast_2d(*arys):
    """Arrays with at least two dimensions (new axes in front)."""
    check_arraylike("atleast_2d", *arys)
    out = []
    for a in arys:
        x = asarray(a)
        nd = aval_of(x).ndim
        out.append(x if nd >= 2 else lax.expand_dims(x, tuple(range(2 - nd))))
    return out[0] if len(out) == 1 else out


def atleast_3d(*arys):
    """Arrays with at least three dimensions (1-D: (1, n, 1); 2-D: (m, n, 1))."""
    check_arraylike("atleast_3d", *arys)
    out = []
    for a in arys:
        x = asarray(a)
        nd = aval_of(x).ndim
        if nd == 0:
            out.append(reshape(x, (1, 1, 1)))
        elif nd == 1:
            out.append(lax.expand_dims(x, (0, 2)))
        elif nd == 2:
            out.append(lax.expand_dims(x, (2,)))
        else:
            out.append(x)
    return out[0] if len(out) == 1 else out


def _list_of(x):
    return x if isinstance(x, list) else [x]


def hstack(tup, dtype=None):
    """Stack horizontally (along axis 1, or 0 for 1-D arrays)."""
    arrs = _list_of(atleast_1d(*_as_list("hstack", tup)))
    axis = 0 if aval_of(arrs[0]).ndim == 1 else 1
    return concatenate(arrs, axis, dtype)


def vstack(tup, dtype=None):
    """Stack vertically (along axis 0, after ``atleast_2d``)."""
    return concatenate(_list_of(atleast_2d(*_as_list("vstack", tup))), 0, dtype)


def dstack(tup, dtype=None):
    """Stack along the third axis (after ``atleast_3d``)."""
    return concatenate(_list_of(atleast_3d(*_as_list("dstack", tup))), 2, dtype)


def column_stack(tup):
    """Stack 1-D arrays as columns of a 2-D array."""
    arrs = []
    for a in _as_list("column_stack", tup):
        x = asarray(a)
        arrs.append(lax.expand_dims(x, (1,)) if aval_of(x).ndim < 2 else x)
    return concatenate(arrs, 1)


def _split(name, ary, indices_or_sections, axis, equal):
    ary = _arr(name, ary)
    shape = aval_of(ary).shape
    axis = canonicalize_axis(axis, len(shape), name)
    size = shape[axis]
    if isinstance(indices_or_sections, (tuple, list, np.ndarray, Array)):
        cuts = [int(i) for i in np.asarray(indices_or_sections).ravel()]
        bounds = [0] + [builtins.min(builtins.max(c + size if c < 0 else c, 0), size)
                        for c in cuts] + [size]
    else:
        n = int(indices_or_sections)
        if n <= 0:
            raise ValueError(f"{name}: number of sections must be larger than 0, got {n}")
        if equal and size % n:
            raise ValueError("array split does not result in an equal division: an axis of "
                             f"size {size} cannot be split into {n} sections")
        part, extra = divmod(size, n)
        sizes = [part + 1] * extra + [part] * (n - extra)
        bounds = [0] + list(np.cumsum(sizes))
    out = []
    for start, limit in zip(bounds[:-1], bounds[1:], strict=True):
        stop = builtins.max(start, limit)
        starts = [0] * len(shape)
        limits = list(shape)
        starts[axis], limits[axis] = int(start), int(stop)
        out.append(lax.slice(ary, tuple(starts), tuple(limits)))
    return out


def split(ary, indices_or_sections, axis=0):
    """Split into equal sections, or at the given indices."""
    return _split("split", ary, indices_or_sections, axis, True)


def array_split(ary, indices_or_sections, axis=0):
    """Like ``split``, but sections may differ in size by one."""
    return _split("array_split", ary, indices_or_sections, axis, False)


def hsplit(ary, indices_or_sections):
    """Split along axis 1 (axis 0 for 1-D arrays)."""
    a = _arr("hsplit", ary)
    return split(a, indices_or_sections, 0 if aval_of(a).ndim == 1 else 1)


def vsplit(ary, indices_or_sections):
    """Split along axis 0."""
    return split(ary, indices_or_sections, 0)


def broadcast_to(array, shape):
    """``array`` broadcast to ``shape``."""
    array = _arr("broadcast_to", array)
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(int(d) for d in shape)
    if builtins.any(d < 0 for d in shape):
        raise ValueError(f"broadcast_to: negative dimensions are not allowed, got {shape}")
    return broadcast_to_shape(array, shape)


def broadcast_arrays(*args):
    """The arguments broadcast to their common shape."""
    check_arraylike("broadcast_arrays", *args)
    args = [asarray(x) for x in args]
    shape = broadcast_shapes(*(aval_of(x).shape for x in args))
    return [broadcast_to_shape(x, shape) for x in args]


def flip(m, axis=None):
    """Reverse the order of elements along ``axis`` (all axes by default)."""
    m = _arr("flip", m)
    ndim = aval_of(m).ndim
    axes = tuple(range(ndim)) if axis is None else tuple(
        canonicalize_axis(i, ndim, "flip") for i in _axes_tuple(axis))
    return lax.rev(m, axes) if axes else m


def fliplr(m):
    """Reverse along axis 1."""
    return flip(m, 1)


def flipud(m):
    """Reverse along axis 0."""
    return flip(m, 0)


def where(condition, x=None, y=None, /, *, size=None, fill_value=None):
    """``x`` where ``condition`` else ``y``, with broadcasting and dtype promotion."""
    if x is None and y is None:
        raise NotImplementedError(
            "xform.numpy.where(condition) with one argument (nonzero) is not supported: its "
            "output shape depends on the data. Use the three-argument form where(c, x, y).")
    if x is None or y is None:
        raise ValueError("Either both or neither of the x and y arguments should be provided "
                         "to where.")
    return where_(condition, x, y)


def clip(arr=None, /, min=None, max=None, *, a=None, a_min=None, a_max=None):  # noqa: A002
    """``arr`` limited to ``[min, max]`` (``a_min``/``a_max`` are accepted too)."""
    if arr is None:
        arr = a
    if arr is None:
        raise TypeError("clip: the array argument is required")
    if a_min is not None:
        if min is not None:
            raise ValueError("clip: pass either min or a_min, not both")
        min = a_min  # noqa: A001
    if a_max is not None:
        if max is not None:
            raise ValueError("clip: pass either max or a_max, not both")
        max = a_max  # noqa: A001
    check_arraylike("clip", arr)
    if min is not None:
        arr = maximum(min, arr)
    if max is not None:
        arr = minimum(max, arr)
    return asarray(arr)


def shape(a):
    """The shape of ``a``."""
    return aval_of(asarray(a) if isinstance(a, (list, tuple)) else a).shape


def ndim(a):
    """The number of dimensions of ``a``."""
    return len(shape(a))


def size(a, axis=None):
    """The number of elements of ``a`` (along ``axis`` if given)."""
    s = shape(a)
    if axis is None:
        return math.prod(s)
    return s[canonicalize_axis(axis, len(s), "size")]


def astype(x, dtype, /, *, copy=False, device=None):
    """``x`` converted to ``dtype``."""
    del copy, device
    x = _arr("astype", x)
    dt = _canonical_dtype(dtype, "astype")
    if dtypes.is_complex(aval_of(x).dtype) and not dtypes.is_complex(dt):
        x = lax.real(x)
    return lax.convert_element_type(x, dt)


def copy(a, order=None):
    """A copy of ``a`` (arrays are immutable: the same values)."""
    del order
    return asarray(_arr("copy", a))


def repeat(a, repeats, axis=None, *, total_repeat_length=None):
    """Repeat each element ``repeats`` times (an int) along ``axis``."""
    del total_repeat_length
    a = _arr("repeat", a)
    if not isinstance(repeats, (int, np.integer)):
        raise NotImplementedError("repeat: only an integer number of repeats is supported")
    if axis is None:
        a = ravel(a)
        axis = 0
    shp = aval_of(a).shape
    axis = canonicalize_axis(axis, len(shp), "repeat")
    expanded = lax.expand_dims(a, (axis + 1,))
    target = shp[:axis + 1] + (int(repeats),) + shp[axis + 1:]
    out = broadcast_to_shape(expanded, target)
    return lax.reshape(out, shp[:axis] + (shp[axis] * int(repeats),) + shp[axis + 1:])


def tile(A, reps):
    """``A`` repeated ``reps`` times along each axis."""
    A = _arr("tile", A)
    reps = (int(reps),) if isinstance(reps, (int, np.integer)) else tuple(int(r) for r in reps)
    shp = aval_of(A).shape
    nd = builtins.max(len(shp), len(reps))
    shp = (1,) * (nd - len(shp)) + shp
    reps = (1,) * (nd - len(reps)) + reps
    A = lax.reshape(A, shp)
    expanded = lax.reshape(A, tuple(v for s in shp for v in (1, s)))
    target = tuple(v for r, s in zip(reps, shp, strict=True) for v in (r, s))
    out = broadcast_to_shape(expanded, target)
    return lax.reshape(out, tuple(r * s for r, s in zip(reps, shp, strict=True)))

