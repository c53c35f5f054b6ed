"""Shape and layout: reshape, transpose, squeeze, concatenate, stack, split, broadcast_to,
flip, where, clip, and friends. Axis errors are ``ValueError`` (NumPy's ``AxisError``)."""

import builtins
import math
import operator

import numpy as np

from xform import core, dtypes
from xform.core import Tracer
from xform.errors import IncompatibleShapesError
from xform.lax import _names as lax
from xform.numpy._indexing import IndexUpdateHelper, getitem
from xform.numpy._promote import (
    _canonical_dtype,
    _dtype_and_weak,
    asarray,
    aval_of,
    broadcast_shapes,
    broadcast_to_shape,
    check_arraylike,
    convert,
    promote_dtypes,
)
from xform.numpy._reductions import canonicalize_axis
from xform.numpy._staged import staged
from xform.numpy._ufuncs import maximum, minimum, where_
from xform.runtime.array import Array

__all__ = [
    "reshape",
    "ravel",
    "transpose",
    "permute_dims",
    "matrix_transpose",
    "swapaxes",
    "moveaxis",
    "expand_dims",
    "squeeze",
    "concatenate",
    "concat",
    "stack",
    "hstack",
    "vstack",
    "dstack",
    "column_stack",
    "split",
    "array_split",
    "hsplit",
    "vsplit",
    "broadcast_to",
    "broadcast_arrays",
    "broadcast_shapes",
    "atleast_1d",
    "atleast_2d",
    "atleast_3d",
    "flip",
    "fliplr",
    "flipud",
    "where",
    "clip",
    "shape",
    "ndim",
    "size",
    "astype",
    "copy",
    "repeat",
    "tile",
    "nonzero",
    "flatnonzero",
    "argwhere",
]


def _arr(name, a):
    check_arraylike(name, a)
    return asarray(a)


def _axes_tuple(axis):
    if isinstance(axis, (tuple, list)) or (isinstance(axis, np.ndarray) and axis.ndim == 1):
        return tuple(axis)  # (a NumPy array of axes, such as np.argsort's, as in JAX)
    return (axis,)


def _canonicalize_shape(name, newshape, arr_shape):
    """``newshape`` for an array of ``arr_shape``, its -1 inferred; JAX's TypeErrors."""
    size = math.prod(arr_shape)
    if (
        type(newshape) is tuple
        and type(size) is int
        and all(type(d) is int and d >= 0 for d in newshape)
        and math.prod(newshape) == size
    ):
        return newshape  # the common case: nothing to infer or to check further
    shape = _axes_tuple(newshape) if not isinstance(newshape, (int, np.integer)) else (newshape,)
    try:
        shape = tuple(d if core.is_symbolic_dim(d) else int(d.__index__()) for d in shape)
    except AttributeError:
        raise TypeError(f"{name}: shape must be a sequence of integers, got {newshape!r}") from None
    unknown = [i for i, d in enumerate(shape) if d == -1]
    if len(unknown) > 1:
        raise TypeError(f"can only specify one unknown axis size with a `-1` value, got {newshape}")
    if builtins.any(d < -1 for d in shape):
        raise TypeError(
            f"{name}: cannot reshape array of size {size} into shape {shape}: "
            "negative sizes other than a single -1 are not allowed"
        )
    cannot = f"cannot reshape array of shape {tuple(arr_shape)} (size {size}) into shape"
    if unknown:
        known = math.prod(d for d in shape if d != -1)
        if known == 0 or not isinstance(size % known, int) or size % known:
            raise TypeError(
                f"{cannot} {newshape} because the product of specified axis sizes ({known}) "
                f"does not evenly divide {size}"
            )
        shape = tuple(size // known if d == -1 else d for d in shape)
    if math.prod(shape) != size:
        raise TypeError(f"{cannot} {newshape} (size {math.prod(shape)})")
    return shape


def reshape(a, shape=None, order="C", *, newshape=None, copy=None, out_sharding=None):
    """``a`` with a new shape (one dimension may be -1); ``order`` 'C' or 'F';
    ``out_sharding`` lays the result out so (as ``lax.reshape``'s)."""
    del copy
    if shape is None:
        shape = newshape
    if shape is None:
        raise TypeError("reshape: the shape argument is required")
    if isinstance(a, (np.ndarray, np.generic)) and out_sharding is None:
        # As JAX's: NumPy data is reshaped by NumPy's own method (a NumPy result, NumPy's
        # errors); numpyro's constraint checks stay concrete inside jit that way.
        return a.reshape(shape, order=order)
    a = _arr("reshape", a)
    aval = aval_of(a)
    shape = _canonicalize_shape("reshape", shape, aval.shape)
    if order == "C":
        if shape == aval.shape and out_sharding is None:
            return a
        return lax.reshape(a, shape, out_sharding=out_sharding)
    if order == "F":
        t = transpose(a)
        if out_sharding is not None:  # given for the result, whose dimensions come reversed
            given = getattr(out_sharding, "spec", out_sharding)  # (or a PartitionSpec)
            spec = type(given)(*(tuple(given) + (None,) * (len(shape) - len(given)))[::-1])
            out_sharding = (
                spec if given is out_sharding else type(out_sharding)(out_sharding.mesh, spec)
            )
        out = lax.reshape(t, shape[::-1], out_sharding=out_sharding)
        return transpose(out)
    if order == "A":
        raise NotImplementedError("reshape: order='A' is not supported; use 'C' or 'F'")
    raise ValueError(
        f"reshape: unexpected value for the 'order' argument: {order!r}; use 'C' or 'F'"
    )


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
            raise TypeError(
                f"transpose: axes {axes} are not a permutation of the "
                f"{ndim} axes of an array of shape {aval_of(a).shape}"
            )
    return a if perm == tuple(range(ndim)) else lax.transpose(a, perm)


def permute_dims(a, /, axes):
    """``a`` with its axes permuted by ``axes`` (required, unlike ``transpose``)."""
    return transpose(a, axes)


def matrix_transpose(x, /):
    """Swap the last two axes."""
    x = _arr("matrix_transpose", x)
    ndim = aval_of(x).ndim
    if ndim < 2:
        raise ValueError(f"matrix_transpose: x must be at least 2-D, got shape {aval_of(x).shape}")
    return transpose(x, tuple(range(ndim - 2)) + (ndim - 1, ndim - 2))


def swapaxes(a, axis1, axis2):
    """``a`` with two axes exchanged."""
    a = _arr("swapaxes", a)
    ndim = aval_of(a).ndim
    perm = list(range(ndim))
    i, j = canonicalize_axis(axis1, ndim, "swapaxes"), canonicalize_axis(axis2, ndim, "swapaxes")
    perm[i], perm[j] = perm[j], perm[i]
    return transpose(a, tuple(perm))


def moveaxis(a, source, destination):
    """Move axes of ``a`` to new positions; the others keep their order."""
    a = _arr("moveaxis", a)
    ndim = aval_of(a).ndim
    src = tuple(canonicalize_axis(i, ndim, "moveaxis") for i in _axes_tuple(source))
    dst = tuple(canonicalize_axis(i, ndim, "moveaxis") for i in _axes_tuple(destination))
    if len(src) != len(dst):
        raise ValueError(
            f"moveaxis: source {source} and destination {destination} must have "
            "the same number of elements"
        )
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        # TypeError, as JAX's (from the transpose it builds).
        raise TypeError(f"moveaxis: repeated axis in source {source} or destination {destination}")
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
            raise ValueError(
                f"cannot select an axis to squeeze out which has size not equal "
                f"to one, got shape={shape} and dimensions={axes}"
            )
    return lax.squeeze(a, axes) if axes else a


def _as_list(name, arrays):
    if isinstance(arrays, (Tracer, Array, np.ndarray)):
        return (
            [arrays[i] for i in range(aval_of(asarray(arrays)).shape[0])]
            if not isinstance(arrays, np.ndarray)
            else list(arrays)
        )
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
            raise TypeError(
                f"Cannot concatenate arrays with different numbers of "
                f"dimensions: got {', '.join(str(aval_of(y).shape) for y in arrays)}"
            )
    axis = canonicalize_axis(axis, ndim, "concatenate")
    if dtype is None:
        arrays = promote_dtypes(*arrays)
    else:
        dt = _canonical_dtype(dtype, "concatenate")
        arrays = [convert(x, dt, False) for x in arrays]
    for x in arrays[1:]:
        s0, s = aval_of(arrays[0]).shape, aval_of(x).shape
        if s0[:axis] + s0[axis + 1 :] != s[:axis] + s[axis + 1 :]:
            raise TypeError(
                f"concatenate: all input array dimensions except axis {axis} "
                f"must match exactly, got shapes "
                f"{', '.join(str(aval_of(y).shape) for y in arrays)}"
            )
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
        raise ValueError(
            "All input arrays must have the same shape, got "
            f"{', '.join(str(aval_of(x).shape) for x in arrays)}"
        )
    axis = canonicalize_axis(axis, len(shape0) + 1, "stack")
    return concatenate([lax.expand_dims(x, (axis,)) for x in arrays], axis, dtype)


@staged("atleast_1d")
def atleast_1d(*arys):
    """Arrays with at least one dimension (a list for several arguments)."""
    check_arraylike("atleast_1d", *arys)
    out = [asarray(a) if aval_of(asarray(a)).ndim >= 1 else reshape(a, (1,)) for a in arys]
    return out[0] if len(out) == 1 else out


@staged("atleast_2d")
def atleast_2d(*arys):
    """Arrays with at least two dimensions (new axes in front)."""
    check_arraylike("atleast_2d", *arys)
    out = []
    for a in arys:
        x = asarray(a)
        nd = aval_of(x).ndim
        out.append(x if nd >= 2 else lax.expand_dims(x, tuple(range(2 - nd))))
    return out[0] if len(out) == 1 else out


@staged("atleast_3d")
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
    if isinstance(indices_or_sections, (tuple, list)) or (
        isinstance(indices_or_sections, (np.ndarray, Array)) and np.ndim(indices_or_sections) > 0
    ):
        # As JAX, unlike NumPy: indices are not wrapped or clipped, and must not decrease.
        bounds = [0] + [int(i) for i in indices_or_sections] + [size]
        sizes = [hi - lo for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)]
        if builtins.any(d < 0 for d in sizes):
            raise ValueError(
                f"{name}: the indices {list(bounds[1:-1])} must be increasing and "
                f"within [0, {size}] (the size of axis {axis}): they give the "
                f"section sizes {sizes}, and sizes must be nonnegative"
            )
    else:
        n = int(indices_or_sections)
        if n <= 0:
            raise ValueError(f"{name}: number of sections must be larger than 0, got {n}")
        if equal and size % n:
            raise ValueError(
                "array split does not result in an equal division: an axis of "
                f"size {size} cannot be split into {n} sections"
            )
        part, extra = divmod(size, n)
        sizes = [part + 1] * extra + [part] * (n - extra)
        bounds = [0] + list(np.cumsum(sizes))
    out = []
    for start, limit in zip(bounds[:-1], bounds[1:], strict=True):
        starts = [0] * len(shape)
        limits = list(shape)
        starts[axis], limits[axis] = int(start), int(limit)
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
    if builtins.any(d < 0 for d in shape):  # JAX raises TypeError or ValueError: this is both
        raise IncompatibleShapesError(
            f"broadcast_to: negative dimensions are not allowed, got {shape}"
        )
    return broadcast_to_shape(array, shape)


def broadcast_arrays(*args):
    """The arguments broadcast to their common shape."""
    check_arraylike("broadcast_arrays", *args)
    args = [asarray(x) for x in args]
    shape = broadcast_shapes(*(aval_of(x).shape for x in args))
    return [broadcast_to_shape(x, shape) for x in args]


def flip(m, axis=None):
    """Reverse the order of elements along ``axis`` (all axes by default)."""
    return _flip(_arr("flip", m), None if axis is None else _axes_tuple(axis))


@staged("_flip", static_argnames=("axis",))
def _flip(m, axis=None):
    ndim = aval_of(m).ndim
    axes = (
        tuple(range(ndim))
        if axis is None
        else tuple(canonicalize_axis(i, ndim, "flip") for i in _axes_tuple(axis))
    )
    return lax.rev(m, axes) if axes else m


def fliplr(m):
    """Reverse along axis 1."""
    return _flip(_arr("fliplr", m), 1)


def flipud(m):
    """Reverse along axis 0."""
    return _flip(_arr("flipud", m), 0)


def where(condition, x=None, y=None, /, *, size=None, fill_value=None):
    """``x`` where ``condition`` else ``y``, with broadcasting and dtype promotion; with
    ``condition`` alone, ``nonzero(condition, size=size, fill_value=fill_value)``."""
    if x is None and y is None:
        return nonzero(condition, size=size, fill_value=fill_value)
    if x is None or y is None:
        raise TypeError(
            f"where: got condition and {'y' if x is None else 'x'} only; pass "
            "both x and y (where(c, x, y)), or neither (where(c) is nonzero(c))"
        )
    return where_(condition, x, y)


def _concrete(x, what):
    """The NumPy value of ``x``; ``ConcretizationTypeError`` for a traced value."""
    if isinstance(x, Tracer):
        return np.asarray(x._concretize(what))
    return np.asarray(x)


def nonzero(a, *, size=None, fill_value=None):
    """The indices of the nonzero elements of ``a``: one integer array per dimension.

    The result's length is the number of nonzeros, which must be known when tracing: under
    ``jit`` pass ``size``; the indices are then cut to ``size`` or padded with ``fill_value``
    (0 by default; a scalar, or one value per dimension).

    Example:
      >>> nonzero(jnp.array([[1, 0], [0, 2]]))
      (Array([0, 1], dtype=int32), Array([0, 1], dtype=int32))
    """
    check_arraylike("nonzero", a)
    a = asarray(a)
    shp = aval_of(a).shape
    if not shp:
        raise ValueError(
            "Calling nonzero on 0d arrays is not allowed. Use "
            "jnp.atleast_1d(scalar).nonzero() instead."
        )
    index_dtype = dtypes.default_int()
    mask = a if aval_of(a).dtype == dtypes.bool_ else lax.ne(a, convert(0, aval_of(a).dtype))
    if size is None:
        host = _concrete(
            mask,
            "nonzero (its result's size depends on the values: pass `size` to use it under jit)",
        )
        return tuple(asarray(i.astype(index_dtype)) for i in np.nonzero(host))
    size = operator.index(size)
    fills = fill_value if isinstance(fill_value, (tuple, list)) else (fill_value,) * len(shp)
    if len(fills) != len(shp):
        raise ValueError(
            f"nonzero: fill_value must be a scalar or a tuple of length "
            f"{len(shp)} (a.ndim), got {fill_value!r}"
        )
    fills = [convert(0 if f is None else f, index_dtype) for f in fills]
    n = math.prod(shp)
    if n == 0 or size == 0:
        return tuple(lax.full((size,), f) for f in fills)
    flat_mask = lax.convert_element_type(lax.reshape(mask, (n,)), index_dtype)
    # Each nonzero's slot in the result is the count of nonzeros before it; slot `size`
    # (out of bounds, so dropped by the scatter) for the zeros.
    slots = lax.sub(lax.cumsum(flat_mask, 0), convert(1, index_dtype))
    slots = where_(lax.ne(flat_mask, convert(0, index_dtype)), slots, convert(size, index_dtype))
    flat = IndexUpdateHelper(lax.full((size,), 0, index_dtype))[slots].set(
        lax.iota(index_dtype, n), mode="drop"
    )
    found = lax.lt(lax.iota(index_dtype, size), lax.reduce_sum(flat_mask, (0,)))
    out, stride = [], n
    for d, f in zip(shp, fills, strict=True):
        stride //= d
        i = lax.rem(lax.div(flat, convert(stride, index_dtype)), convert(d, index_dtype))
        out.append(where_(found, i, f))
    return tuple(out)


def flatnonzero(a, *, size=None, fill_value=None):
    """The indices of the nonzero elements of ``ravel(a)`` (see ``nonzero``)."""
    return nonzero(ravel(a), size=size, fill_value=fill_value)[0]


def argwhere(a, *, size=None, fill_value=None):
    """The indices of the nonzero elements of ``a``, one row per element (see ``nonzero``)."""
    a = _arr("argwhere", a)
    if aval_of(a).ndim == 0:
        rows = nonzero(reshape(a, (1,)), size=size, fill_value=fill_value)[0]
        return reshape(rows[:0], (aval_of(rows).shape[0], 0))
    return stack(nonzero(a, size=size, fill_value=fill_value), axis=1)


@staged("clip")
def clip(arr=None, /, min=None, max=None):  # noqa: A002
    """``arr`` limited to ``[min, max]`` (either may be None). As in JAX 0.10.2, NumPy's
    older ``a``/``a_min``/``a_max`` keywords are not accepted."""
    if arr is None:
        raise ValueError("No input was provided to the clip function.")  # as JAX's
    check_arraylike("clip", arr)
    if builtins.any(
        x is not None and dtypes.is_complex(_dtype_and_weak(x)[0]) for x in (arr, min, max)
    ):
        raise ValueError(
            "clip: complex values have no ordering and cannot be clipped; clip "
            "the real and imaginary parts (or the absolute value) separately"
        )
    if min is not None:
        arr = maximum(min, arr)
    if max is not None:
        arr = minimum(max, arr)
    return asarray(arr)


def shape(a):
    """The shape of ``a``: its ``shape`` attribute when it has one (as ``numpy.shape``, which
    JAX's is: SciPy's sparse matrices and BCOO arrays answer too)."""
    if isinstance(a, (list, tuple)):
        return aval_of(asarray(a)).shape
    given = getattr(a, "shape", None)
    return tuple(given) if isinstance(given, tuple) else aval_of(a).shape


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
    """A copy of ``a``. Arrays are immutable, but a copy must not share its buffer: donating
    one to ``jit`` would delete the other (a copy on the device is made when it is used)."""
    del order
    out = asarray(_arr("copy", a))
    if out is a and type(a) is Array:
        return Array(a.aval, a._host_value())
    return out


def repeat(a, repeats, axis=None, *, total_repeat_length=None):
    """Repeat each element of ``a`` along ``axis`` (of the flattened ``a`` by default):
    ``repeats`` times if it is a scalar, ``repeats[i]`` times for element i if an array.

    The result's length must be known when tracing: under ``jit`` pass
    ``total_repeat_length`` (the result is cut, or padded with the last element, to it) or
    a concrete ``repeats``.

    Example:
      >>> repeat(jnp.array([1, 2, 3]), jnp.array([2, 0, 1]))
      Array([1, 1, 3], dtype=int32)
    """
    check_arraylike("repeat", a, repeats)
    a = asarray(a)
    if axis is None:
        a = ravel(a)
        axis = 0
    shp = aval_of(a).shape
    axis = canonicalize_axis(axis, len(shp), "repeat")
    if total_repeat_length is None:
        repeats = _concrete(
            repeats,
            "repeats of jnp.repeat (the result's size depends on "
            "it: pass `total_repeat_length` to use it under jit)",
        )
        if repeats.dtype.kind not in "iub":
            raise TypeError(f"repeat: repeats must be integers, got dtype {repeats.dtype}")
        if repeats.ndim == 0:
            n = int(repeats)
            expanded = lax.expand_dims(a, (axis + 1,))
            out = broadcast_to_shape(expanded, shp[: axis + 1] + (n,) + shp[axis + 1 :])
            return lax.reshape(out, shp[:axis] + (shp[axis] * n,) + shp[axis + 1 :])
        repeats = np.broadcast_to(repeats.ravel(), (shp[axis],))
        total_repeat_length = int(repeats.sum())
        repeats = asarray(repeats.astype(np.int32))
    else:
        total_repeat_length = operator.index(total_repeat_length)
        repeats = broadcast_to(ravel(repeats), (shp[axis],))
        if not dtypes.is_int(aval_of(repeats).dtype):
            raise TypeError(f"repeat: repeats must be integers, got dtype {aval_of(repeats).dtype}")
    if shp[axis] == 0:
        return a
    if total_repeat_length == 0:
        return lax.slice_in_dim(a, 0, 0, axis=axis)
    # As JAX: a 1 where each element's block starts (blocks of zero length add up), so that
    # the running count of starts is the index of the element each output position repeats.
    index_dtype = dtypes.int32
    repeats = lax.convert_element_type(repeats, index_dtype)
    starts = lax.cumsum(lax.pad(repeats, convert(0, index_dtype), ((1, -1, 0),)), 0)
    indicators = IndexUpdateHelper(lax.full((total_repeat_length,), 0, index_dtype))[starts].add(
        convert(1, index_dtype)
    )
    gather = lax.sub(lax.cumsum(indicators, 0), convert(1, index_dtype))
    return getitem(a, (slice(None),) * axis + (gather,))


def tile(A, reps):
    """``A`` repeated ``reps`` times along each axis: ``lax.tile`` (a primitive, as JAX's,
    with its own sharding rule) after leading size-1 axes make the ranks equal."""
    A = _arr("tile", A)
    # __index__: a float count is a TypeError, as in JAX.
    reps = (operator.index(reps),) if np.ndim(reps) == 0 else tuple(map(operator.index, reps))
    ndim = aval_of(A).ndim
    reps = (1,) * (ndim - len(reps)) + reps
    if len(reps) > ndim:
        A = lax.expand_dims(A, tuple(range(len(reps) - ndim)))
    return lax.tile(A, reps)
