"""Structural primitives: shapes and layout (broadcast, reshape, squeeze, transpose, rev, pad,
concatenate, iota, tile, split, stack, unstack), and the ``lax`` wrappers built from them
(broadcast, expand_dims, full, full_like, empty, collapse, broadcast_like, broadcast_to_rank)
and the shape helpers broadcast_shapes and shape_as_value.

Every primitive here keeps its operand's dtype (iota makes one), and the result is weakly
typed exactly when every array operand is, as in JAX. Wrappers map negative axes to
non-negative ones and leave out-of-range ones for the abstract evaluation to report.
"""

import builtins
import math

import numpy as np

from xform import core, dtypes
from xform.core import ShapedArray, Tracer, get_aval
from xform.interpret import ad, batching, staging
from xform.interpret import transpose as transpose_interp
from xform.primitives.base import (
    NUMBER,
    as_shape,
    canonicalize_axis,
    check_dtype,
    standard_primitive,
    user_dtype,
)
from xform.primitives.comparisons import select
from xform.primitives.elementwise import convert_folding_constants, stage, sub
from xform.primitives.sharding import bind_laid_out, out_sharding_param, typed

__all__ = [
    "broadcast_in_dim",
    "broadcast",
    "reshape",
    "squeeze",
    "expand_dims",
    "transpose",
    "rev",
    "pad",
    "concatenate",
    "iota",
    "broadcasted_iota",
    "full",
    "full_like",
    "tile",
    "split",
    "stack",
    "unstack",
    "collapse",
    "broadcast_like",
    "broadcast_to_rank",
    "broadcast_shapes",
    "empty",
    "shape_as_value",
]


def _is_array(x):
    """A tracer or a concrete xform array (not a Python scalar or NumPy value): what JAX's
    wrappers may hand back unchanged when an op would be the identity."""
    return isinstance(getattr(x, "aval", None), ShapedArray)


def _axis(d, ndim):
    """``d`` as an int, negative values counted from the end; out-of-range values are kept so
    that the abstract evaluation reports them."""
    d = int(d.__index__())
    return d + ndim if -ndim <= d < 0 else d


def _axes(dims, ndim, name):
    if isinstance(dims, (int, np.integer)):
        raise TypeError(
            f"{name}: expected a sequence of dimensions, got the int {dims}; pass ({dims},)"
        )
    return tuple(_axis(d, ndim) for d in dims)


# --------------------------------------------------------------------------- broadcast_in_dim


def broadcast_in_dim(operand, shape, broadcast_dimensions, *, out_sharding=None):
    """Broadcast ``operand`` to ``shape``: its dimension i becomes dimension
    ``broadcast_dimensions[i]`` of the result (sizes must match or be 1); ``out_sharding`` (a
    NamedSharding, or a PartitionSpec of the current mesh) lays the result out so.

    Example:
      >>> broadcast_in_dim(jnp.ones(3), (2, 3), (1,)).shape
      (2, 3)
    """
    shape = as_shape(shape, "lax.broadcast_in_dim")
    dims = (
        broadcast_dimensions
        if type(broadcast_dimensions) is tuple and all(type(d) is int for d in broadcast_dimensions)
        else tuple(int(d.__index__()) for d in broadcast_dimensions)
    )
    if (
        out_sharding is None
        and not shape
        and not dims
        and _is_array(operand)
        and not get_aval(operand).shape
    ):
        return operand
    sharding = (
        None
        if out_sharding is None
        else out_sharding_param(out_sharding, "broadcast_in_dim", len(shape))
    )
    return bind_laid_out(
        broadcast_in_dim_p,
        [operand],
        dict(shape=shape, broadcast_dimensions=dims),
        "sharding",
        sharding,
    )


def _broadcast_in_dim_abstract_eval(x, *, shape, broadcast_dimensions, sharding=None):
    dims = broadcast_dimensions
    if len(dims) != x.ndim:
        raise TypeError(
            f"lax.broadcast_in_dim: broadcast_dimensions {dims} must have one "
            f"entry per operand dimension (operand shape {x.shape})"
        )
    if len(set(dims)) != len(dims):
        raise TypeError(
            f"lax.broadcast_in_dim: broadcast_dimensions {dims} must not contain duplicates"
        )
    for i, d in enumerate(dims):
        if not 0 <= d < len(shape):
            raise TypeError(
                f"lax.broadcast_in_dim: broadcast_dimensions {dims} must be "
                f"dimensions of the target shape {shape} (0 to {len(shape) - 1})"
            )
        if x.shape[i] != 1 and x.shape[i] != shape[d]:
            raise TypeError(
                f"lax.broadcast_in_dim: operand dimension sizes must be 1 or equal "
                f"to their target dimension; got operand shape {x.shape}, target "
                f"shape {shape}, broadcast_dimensions {dims}"
            )
    return [typed(ShapedArray(shape, x.dtype, x.weak_type), sharding)]


def _broadcast_in_dim_host(x, *, shape, broadcast_dimensions, sharding=None):
    # broadcast_dimensions need not be increasing: order the operand's axes first.
    if list(broadcast_dimensions) != sorted(broadcast_dimensions):
        order = sorted(range(x.ndim), key=lambda i: broadcast_dimensions[i])
        x = np.transpose(x, order)
        broadcast_dimensions = [broadcast_dimensions[i] for i in order]
    expanded = [1] * len(shape)
    for d, size in zip(broadcast_dimensions, x.shape, strict=True):
        expanded[d] = size
    x = x.reshape(expanded)
    if math.prod(shape) > _COPY_BROADCAST_MAX:  # a read-only view, as NumPy broadcasts
        return [np.broadcast_to(x, shape)]
    out = np.empty(shape, x.dtype)  # small: a copy costs less than np.broadcast_to's checks
    out[...] = x
    return [out]


_COPY_BROADCAST_MAX = 1 << 16


broadcast_in_dim_p = standard_primitive(
    "broadcast_in_dim", _broadcast_in_dim_abstract_eval, _broadcast_in_dim_host
)


def broadcast(operand, sizes):
    """Add leading dimensions of the given ``sizes``: the result has shape
    ``(*sizes, *operand.shape)``."""
    sizes = as_shape(sizes, "lax.broadcast")
    if not sizes and _is_array(operand):
        return operand
    aval = get_aval(operand)
    dims = tuple(range(len(sizes), len(sizes) + aval.ndim))
    return broadcast_in_dim(operand, sizes + aval.shape, dims)


# --------------------------------------------------------------------------- reshape


def reshape(operand, new_sizes, dimensions=None, *, out_sharding=None):
    """``operand`` with shape ``new_sizes``, reading elements in row-major order; if
    ``dimensions`` is given, ``operand`` is first transposed by that permutation.
    ``out_sharding`` (a NamedSharding, or a PartitionSpec of the current mesh) lays the
    result out so (what a reshape the sharding rule cannot follow needs).

    Example:
      >>> reshape(jnp.arange(6).reshape(2, 3), (6,), (1, 0))
      Array([0, 3, 1, 4, 2, 5], dtype=int32)
    """
    new_sizes = as_shape(new_sizes, "lax.reshape")
    aval = get_aval(operand)
    if dimensions is not None:
        dims = tuple(int(d.__index__()) for d in dimensions)
        if sorted(dims) != list(range(aval.ndim)):
            raise TypeError(
                f"lax.reshape: dimensions must be a permutation of the operand "
                f"dimensions, got dimensions {dims} for shape {aval.shape}"
            )
        if dims != tuple(range(aval.ndim)):
            # One way to do it: the permutation is a transpose before a plain reshape.
            operand = transpose(operand, dims)
            aval = get_aval(operand)
    sharding = (
        None
        if out_sharding is None
        else out_sharding_param(  # (a param only when
            out_sharding, "reshape", len(new_sizes)
        )
    )  # given: the rules' default is None)
    if (
        aval.shape
        and aval.shape == new_sizes
        and _is_array(operand)
        and (sharding is None or sharding == aval.sharding)
    ):
        return operand
    return bind_laid_out(
        reshape_p, [operand], dict(new_sizes=new_sizes, dimensions=None), "sharding", sharding
    )


def _reshape_abstract_eval(x, *, new_sizes, dimensions, sharding=None):
    if dimensions is not None:
        raise TypeError(
            f"reshape: the primitive's dimensions param must be None, got "
            f"{dimensions}; lax.reshape applies `dimensions` as a transpose first"
        )
    if any(d < 0 for d in new_sizes):
        raise TypeError(f"lax.reshape: new_sizes must be non-negative, got {new_sizes}")
    size = core.shape_size(new_sizes)
    if size != x.size:
        raise TypeError(
            f"lax.reshape: total size must be unchanged, got new_sizes {new_sizes} "
            f"(of total size {size}) for shape {x.shape} (of total size {x.size})"
        )
    return [typed(ShapedArray(new_sizes, x.dtype, x.weak_type), sharding)]


def _reshape_host(x, *, new_sizes, dimensions, sharding=None):
    return [x.reshape(new_sizes)]


reshape_p = standard_primitive("reshape", _reshape_abstract_eval, _reshape_host)


# --------------------------------------------------------------------------- squeeze


def squeeze(array, dimensions):
    """Remove the size-1 ``dimensions`` (negative values count from the end) of ``array``."""
    ndim = get_aval(array).ndim
    dims = tuple(sorted(canonicalize_axis(d, ndim, "lax.squeeze") for d in dimensions))
    if not dims and _is_array(array):
        return array
    return squeeze_p.bind(array, dimensions=dims)


def _squeeze_abstract_eval(x, *, dimensions):
    if len(set(dimensions)) != len(dimensions):
        raise ValueError(f"lax.squeeze: dimensions are not unique: {dimensions}")
    for d in dimensions:
        if not 0 <= d < x.ndim:
            raise ValueError(
                f"lax.squeeze: dimension {d} is outside the range [0, {x.ndim}) "
                f"of an array of shape {x.shape}"
            )
        if x.shape[d] != 1:
            raise ValueError(
                f"lax.squeeze: cannot squeeze dimension {d} of an array of shape "
                f"{x.shape}: its size is {x.shape[d]}, not 1"
            )
    shape = tuple(s for i, s in enumerate(x.shape) if i not in dimensions)
    return [ShapedArray(shape, x.dtype, x.weak_type)]


def _squeeze_host(x, *, dimensions):
    return [np.squeeze(x, axis=dimensions)]


squeeze_p = standard_primitive("squeeze", _squeeze_abstract_eval, _squeeze_host)


def expand_dims(array, dimensions):
    """Insert size-1 dimensions at ``dimensions`` (positions in the result; negative values
    count from its end). A ``broadcast_in_dim``, as in JAX."""
    if len(set(dimensions)) != len(dimensions):
        raise ValueError(f"lax.expand_dims: repeated axis in dimensions {tuple(dimensions)}")
    aval = get_aval(array)
    out_ndim = aval.ndim + len(dimensions)
    dims = [canonicalize_axis(d, out_ndim, "lax.expand_dims") for d in dimensions]
    if len(set(dims)) != len(dims):
        raise ValueError(
            f"lax.expand_dims: repeated axis in dimensions {tuple(dimensions)} "
            f"(as non-negative axes of a rank-{out_ndim} result: {tuple(dims)})"
        )
    shape = list(aval.shape)
    for d in sorted(dims):
        shape.insert(d, 1)
    kept = tuple(i for i in range(out_ndim) if i not in dims)
    return broadcast_in_dim(array, tuple(shape), kept)


# --------------------------------------------------------------------------- transpose


def transpose(operand, permutation):
    """Permute the dimensions of ``operand``: result dimension i is operand dimension
    ``permutation[i]``."""
    ndim = get_aval(operand).ndim
    perm = _axes(permutation, ndim, "lax.transpose")
    if perm == tuple(range(ndim)) and _is_array(operand):
        return operand
    return transpose_p.bind(operand, permutation=perm)


def _transpose_abstract_eval(x, *, permutation):
    if tuple(sorted(permutation)) != tuple(range(x.ndim)):
        raise TypeError(
            f"lax.transpose: permutation {permutation} is not a permutation of "
            f"the operand dimensions {tuple(range(x.ndim))} (operand shape "
            f"{x.shape})"
        )
    return [ShapedArray(tuple(x.shape[d] for d in permutation), x.dtype, x.weak_type)]


def _transpose_host(x, *, permutation):
    return [np.transpose(x, permutation)]


transpose_p = standard_primitive("transpose", _transpose_abstract_eval, _transpose_host)


# --------------------------------------------------------------------------- rev


def rev(operand, dimensions):
    """Reverse ``operand`` along each of ``dimensions``."""
    dims = _axes(dimensions, get_aval(operand).ndim, "lax.rev")
    return rev_p.bind(operand, dimensions=dims)


def _rev_abstract_eval(x, *, dimensions):
    if len(set(dimensions)) != len(dimensions):
        raise TypeError(f"lax.rev: dimensions must be unique, got {dimensions}")
    for d in dimensions:
        if not 0 <= d < x.ndim:
            raise TypeError(
                f"lax.rev: dimensions {dimensions} out of range for an operand of shape {x.shape}"
            )
    return [x]


def _rev_host(x, *, dimensions):
    # np.flip(x, ()) indexes with () and so turns a 0-d array into a NumPy scalar.
    return [np.flip(x, dimensions) if dimensions else x]


rev_p = standard_primitive("rev", _rev_abstract_eval, _rev_host)


# --------------------------------------------------------------------------- pad


def pad(operand, padding_value, padding_config):
    """Pad ``operand`` with the scalar ``padding_value``: ``padding_config`` has one
    ``(low, high, interior)`` triple per dimension; negative ``low``/``high`` remove elements.

    Example:
      >>> pad(jnp.array([1, 2, 3]), 0, [(1, -1, 1)])
      Array([0, 1, 0, 2, 0], dtype=int32)
    """
    try:
        config = tuple(
            (int(lo.__index__()), int(hi.__index__()), int(interior.__index__()))
            for lo, hi, interior in padding_config
        )
    except (TypeError, ValueError, AttributeError):
        raise TypeError(
            f"lax.pad: padding_config must be a sequence of (low, high, interior) "
            f"integer triples, got {padding_config!r}"
        ) from None
    return pad_p.bind(operand, padding_value, padding_config=config)


def _dilated(d, interior):
    return 0 if d == 0 else d + (d - 1) * interior


def _pad_abstract_eval(x, padding_value, *, padding_config):
    if x.dtype != padding_value.dtype:
        raise TypeError(
            f"lax.pad: operand and padding_value must have the same dtype, got "
            f"{x.dtype} and {padding_value.dtype}"
        )
    if padding_value.shape:
        raise ValueError(
            f"lax.pad: padding_value must be a scalar, got shape {padding_value.shape}"
        )
    if len(padding_config) != x.ndim:
        raise ValueError(
            f"lax.pad: padding_config {padding_config} must have one "
            f"(low, high, interior) triple per axis of the operand, of shape "
            f"{x.shape}"
        )
    if any(i < 0 for _, _, i in padding_config):
        raise ValueError(
            f"lax.pad: interior padding must be non-negative, got padding_config {padding_config}"
        )
    shape = tuple(
        lo + hi + _dilated(d, i) for (lo, hi, i), d in zip(padding_config, x.shape, strict=True)
    )
    if any(d < 0 for d in shape):
        raise ValueError(
            f"lax.pad: negative padding removes more than the operand has: "
            f"result shape {shape} for padding_config {padding_config} and "
            f"operand shape {x.shape}"
        )
    return [ShapedArray(shape, x.dtype, x.weak_type and padding_value.weak_type)]


def _pad_host(x, padding_value, *, padding_config):
    if not x.ndim:  # nothing to pad; indexing a 0-d array with () would give a NumPy scalar
        return [x]
    # Pad by the non-negative amounts, then crop what negative low/high remove.
    full_shape, place, crop = [], [], []
    for (lo, hi, interior), d in zip(padding_config, x.shape, strict=True):
        n = max(lo, 0) + _dilated(d, interior) + max(hi, 0)
        full_shape.append(n)
        place.append(slice(max(lo, 0), max(lo, 0) + _dilated(d, interior), interior + 1))
        crop.append(slice(max(-lo, 0), n - max(-hi, 0)))
    out = np.full(full_shape, padding_value, dtype=x.dtype)
    out[tuple(place)] = x
    return [out[tuple(crop)]]


pad_p = standard_primitive("pad", _pad_abstract_eval, _pad_host)


# --------------------------------------------------------------------------- concatenate


def concatenate(operands, dimension):
    """Join arrays of one dtype along ``dimension``; other dimensions must agree."""
    operands = tuple(operands)
    if not operands:
        raise ValueError("lax.concatenate requires a non-empty sequence of arrays")
    if len(operands) == 1 and _is_array(operands[0]):
        return operands[0]
    dimension = _axis(dimension, get_aval(operands[0]).ndim)
    return concatenate_p.bind(*operands, dimension=dimension)


def _concatenate_abstract_eval(*xs, dimension):
    if not xs:
        raise TypeError("lax.concatenate expects at least one operand, got 0")
    if len({x.dtype for x in xs}) != 1:
        got = ", ".join(str(x.dtype) for x in xs)
        raise TypeError(
            f"lax.concatenate requires arguments to have the same dtypes, got "
            f"{got}. (Tip: xform.numpy.concatenate promotes dtypes for you.)"
        )
    shapes = ", ".join(str(x.shape) for x in xs)
    if len({x.ndim for x in xs}) != 1:
        raise TypeError(
            f"lax.concatenate: cannot concatenate arrays with different numbers "
            f"of dimensions: got {shapes}"
        )
    if not 0 <= dimension < xs[0].ndim:
        raise TypeError(f"lax.concatenate: dimension {dimension} out of bounds for shapes {shapes}")
    rest = {x.shape[:dimension] + x.shape[dimension + 1 :] for x in xs}
    if len(rest) != 1:
        raise TypeError(
            f"lax.concatenate: shapes must agree except along dimension {dimension}, got {shapes}"
        )
    s = xs[0].shape
    shape = s[:dimension] + (sum(x.shape[dimension] for x in xs),) + s[dimension + 1 :]
    return [ShapedArray(shape, xs[0].dtype, all(x.weak_type for x in xs))]


def _concatenate_host(*xs, dimension):
    return [np.concatenate(xs, axis=dimension)]


concatenate_p = standard_primitive("concatenate", _concatenate_abstract_eval, _concatenate_host)


# --------------------------------------------------------------------------- iota


def iota(dtype, size):
    """``[0, 1, ..., size - 1]`` as a 1-d array of ``dtype``."""
    return broadcasted_iota(dtype, (size,), 0)


def broadcasted_iota(dtype, shape, dimension):
    """An array of ``shape`` whose value at each index is that index's ``dimension`` entry.

    Example:
      >>> broadcasted_iota(jnp.int32, (2, 3), 1)
      Array([[0, 1, 2],
             [0, 1, 2]], dtype=int32)
    """
    dtype = user_dtype(dtype, "broadcasted_iota")
    shape = as_shape(shape, "lax.broadcasted_iota")
    dimension = _axis(dimension, len(shape))
    return iota_p.bind(dtype=dtype, shape=shape, dimension=dimension)


def _iota_abstract_eval(*, dtype, shape, dimension):
    check_dtype("iota", dtype, NUMBER)
    if not 0 <= dimension < len(shape):
        raise ValueError(
            f"lax.iota: dimension must be between 0 and len(shape) - 1, got "
            f"dimension={dimension} for shape={shape}"
        )
    return [ShapedArray(shape, dtype)]


def _iota_host(*, dtype, shape, dimension):
    # Count in int64 then convert once: np.arange has no bfloat16 and rounds floats differently.
    line = np.arange(shape[dimension], dtype=np.int64).astype(dtype)
    expanded = [1] * len(shape)
    expanded[dimension] = shape[dimension]
    return [np.broadcast_to(line.reshape(expanded), shape)]


iota_p = standard_primitive("iota", _iota_abstract_eval, _iota_host)


# --------------------------------------------------------------------------- full


def full(shape, fill_value, dtype=None):
    """An array of ``shape`` filled with the scalar ``fill_value`` (converted to ``dtype`` if
    given; weakly typed if ``dtype`` is None and ``fill_value`` is a Python scalar)."""
    shape = as_shape(shape, "lax.full")
    if dtype is not None:  # first: a Python int wraps around to dtype (lax.full(s, 300, i8))
        fill_value = convert_folding_constants(fill_value, user_dtype(dtype, "full"), False)
    aval = get_aval(fill_value)
    if aval.shape:
        raise TypeError(
            f"lax.full must be called with a scalar fill_value, got fill_value.shape {aval.shape}"
        )
    return broadcast(fill_value, shape)


def full_like(x, fill_value, dtype=None, shape=None):
    """An array like ``x`` (its shape, and its dtype and weak type unless ``dtype`` is given)
    filled with ``fill_value``."""
    if core.is_concrete_array(x) or isinstance(x, Tracer):
        x_aval = get_aval(x)
    else:  # a ShapeDtypeStruct or another duck-typed array
        x_aval = ShapedArray(
            tuple(x.shape), dtypes.canonicalize(x.dtype), bool(getattr(x, "weak_type", False))
        )
    fill_shape = x_aval.shape if shape is None else as_shape(shape, "lax.full_like")
    weak_type = dtype is None and x_aval.weak_type
    dtype = x_aval.dtype if dtype is None else user_dtype(dtype, "full_like")
    fill = convert_folding_constants(fill_value, dtype, weak_type)
    if shape is None and x_aval.sharding is not None:
        # laid out as x, as JAX's (whose type it carries, explicit sharding mode)
        return broadcast_in_dim(fill, fill_shape, (), out_sharding=x_aval.sharding)
    return full(fill_shape, fill)


def empty(shape, dtype, *, out_sharding=None):
    """An array of ``shape`` and ``dtype`` whose values are unspecified (zeros here, as JAX's
    CPU backend gives). ``out_sharding`` must be None: xform has no shardings."""
    if out_sharding is not None:
        raise NotImplementedError(
            "lax.empty: out_sharding is not supported (xform has no shardings)"
        )
    return full(shape, 0, dtype)


def shape_as_value(shape):
    """``shape`` as a 1-d integer array (int32, or int64 for a dimension beyond int32)."""
    shape = tuple(int(d.__index__()) for d in shape)
    dtype = dtypes.int64 if any(d > np.iinfo(np.int32).max for d in shape) else dtypes.int32
    if not shape:
        return full((0,), np.array(0, dtype))
    return np.asarray(shape, dtype)


# --------------------------------------------------------------------------- tile


def tile(operand, reps):
    """``operand`` repeated ``reps[i]`` times along each dimension i (one rep per dimension).

    Example:
      >>> tile(jnp.array([1, 2]), (3,))
      Array([1, 2, 1, 2, 1, 2], dtype=int32)
    """
    return tile_p.bind(operand, reps=tuple(int(r.__index__()) for r in reps))


def _tile_abstract_eval(x, *, reps):
    if x.ndim != len(reps):
        raise TypeError(
            f"lax.tile: reps length must be equal to the ndim of x, got "
            f"len(reps)={len(reps)} and x.ndim={x.ndim} (x.shape {x.shape})"
        )
    if any(r < 0 for r in reps):
        raise TypeError(f"lax.tile: reps must be nonnegative, got {reps}")
    return [x.update(shape=tuple(d * r for d, r in zip(x.shape, reps, strict=True)))]


tile_p = standard_primitive(
    "tile", _tile_abstract_eval, lambda x, *, reps: [np.tile(x, reps) if reps else x.copy()]
)


# --------------------------------------------------------------------------- split


def split(operand, sizes, axis=0):
    """``operand`` cut along ``axis`` into consecutive pieces of the given ``sizes`` (which sum
    to that dimension's size): a list of ``len(sizes)`` arrays."""
    aval = get_aval(operand)
    axis = canonicalize_axis(axis, aval.ndim, "lax.split")
    return split_p.bind(operand, sizes=tuple(int(n.__index__()) for n in sizes), axis=axis)


def _split_abstract_eval(x, *, sizes, axis):
    if any(n < 0 for n in sizes):
        raise ValueError(f"lax.split: sizes must be nonnegative, got {list(sizes)}")
    if x.shape[axis] != sum(sizes):
        raise ValueError(
            f"lax.split: sum of sizes {sum(sizes)} must be equal to dimension "
            f"{axis} of the operand shape {list(x.shape)}"
        )
    return [x.update(shape=x.shape[:axis] + (n,) + x.shape[axis + 1 :]) for n in sizes]


def _split_host(x, *, sizes, axis):
    return np.split(x, np.cumsum(sizes)[:-1], axis=axis)


split_p = standard_primitive("split", _split_abstract_eval, _split_host, multiple_results=True)


# --------------------------------------------------------------------------- stack, unstack


def stack(operands, axis=0):
    """Arrays of one shape and dtype joined along a new dimension ``axis``."""
    operands = tuple(operands)
    if not operands:
        raise ValueError("lax.stack expects at least one operand, got 0.")
    axis = canonicalize_axis(axis, get_aval(operands[0]).ndim + 1, "lax.stack")
    return stack_p.bind(*operands, axis=axis)


def _stack_abstract_eval(*xs, axis):
    if not xs:
        raise ValueError("lax.stack expects at least one operand, got 0.")
    shapes = ", ".join(str(x.shape) for x in xs)
    if len({x.ndim for x in xs}) != 1:
        raise ValueError(
            f"lax.stack: cannot stack arrays with different numbers of dimensions: got {shapes}."
        )
    if len({x.shape for x in xs}) != 1:
        raise ValueError(f"lax.stack: all input arrays must have the same shape. Got {shapes}.")
    if len({x.dtype for x in xs}) != 1:
        got = ", ".join(str(x.dtype) for x in xs)
        raise TypeError(f"lax.stack requires arguments to have the same dtypes, got {got}.")
    s = xs[0].shape
    return [
        ShapedArray(s[:axis] + (len(xs),) + s[axis:], xs[0].dtype, all(x.weak_type for x in xs))
    ]


stack_p = standard_primitive(
    "stack", _stack_abstract_eval, lambda *xs, axis: [np.stack(xs, axis=axis)]
)


def unstack(x, axis=0):
    """The slices of ``x`` along ``axis``, as a tuple of arrays of rank ``x.ndim - 1``."""
    aval = get_aval(x)
    if aval.ndim == 0:
        raise ValueError(
            f"lax.unstack requires arrays with rank > 0, however a scalar array "
            f"of shape {aval.shape} was passed."
        )
    axis = canonicalize_axis(axis, aval.ndim, "lax.unstack")
    return tuple(unstack_p.bind(x, axis=axis))


def _unstack_abstract_eval(x, *, axis):
    if x.ndim == 0:
        raise ValueError(
            f"lax.unstack requires arrays with rank > 0, however a scalar array "
            f"of shape {x.shape} was passed."
        )
    shape = x.shape[:axis] + x.shape[axis + 1 :]
    return [x.update(shape=shape)] * x.shape[axis]


unstack_p = standard_primitive(
    "unstack",
    _unstack_abstract_eval,
    lambda x, *, axis: [np.take(x, i, axis=axis) for i in range(x.shape[axis])],
    multiple_results=True,
)


# --------------------------------------------------------------------------- shape helpers
# Compositions, as in JAX: no primitives of their own.


def collapse(operand, start_dimension, stop_dimension=None):
    """``operand`` with dimensions ``[start_dimension, stop_dimension)`` merged into one
    (row-major); ``stop_dimension=None`` merges through the last dimension."""
    shape = get_aval(operand).shape
    lo, hi, _ = builtins.slice(start_dimension, stop_dimension).indices(len(shape))
    if hi < lo:
        raise ValueError(
            f"lax.collapse: invalid dimension range passed to collapse: "
            f"{shape}[{start_dimension}:{stop_dimension}]"
        )
    return reshape(operand, shape[:lo] + (math.prod(shape[lo:hi]),) + shape[hi:])


def _broadcast_to(arr, shape, name):
    aval = get_aval(arr)
    if aval.shape == shape:
        return arr if _is_array(arr) else stage(arr)
    if len(shape) < aval.ndim:
        raise ValueError(
            f"{name}: cannot broadcast to shape with fewer dimensions: "
            f"arr_shape={aval.shape} shape={shape}"
        )
    nlead = len(shape) - aval.ndim
    if any(a not in (1, s) for a, s in zip(aval.shape, shape[nlead:], strict=True)):
        raise ValueError(
            f"{name}: incompatible types for broadcasting: input type="
            f"{aval.str_short()} and requested shape {shape}"
        )
    return broadcast_in_dim(arr, shape, tuple(range(nlead, len(shape))))


def broadcast_like(arr, like_arr):
    """``arr`` broadcast (NumPy-style, adding leading dimensions) to ``like_arr``'s shape."""
    like = like_arr if isinstance(like_arr, ShapedArray) else get_aval(like_arr)
    return _broadcast_to(arr, like.shape, "lax.broadcast_like")


def broadcast_to_rank(x, rank):
    """``x`` with leading dimensions of size 1 added to make its rank ``rank``."""
    ndim = get_aval(x).ndim
    if ndim == rank:
        return x if _is_array(x) else stage(x)
    return broadcast(x, (1,) * (rank - ndim))


def broadcast_shapes(*shapes):
    """The shape NumPy broadcasting gives ``shapes``; ``ValueError`` if they do not
    broadcast."""
    shapes = [as_shape(s, "lax.broadcast_shapes") for s in shapes]
    if not shapes:
        return ()
    rank = builtins.max(len(s) for s in shapes)
    padded = [(1,) * (rank - len(s)) + s for s in shapes]
    out = []
    for sizes in zip(*padded, strict=True):
        big = {n for n in sizes if n != 1}
        if len(big) > 1:
            raise ValueError(
                f"Incompatible shapes for broadcasting: "  # JAX's words
                f"shapes={[tuple(s) for s in shapes]}"
            )
        out.append(big.pop() if big else 1)
    return tuple(out)


def _zeros(aval):
    """Zeros of ``aval``'s shape and dtype: a broadcast scalar, never a dense constant."""
    return broadcast(np.zeros((), aval.dtype), aval.shape)


ad.tangent_ops["zeros"] = _zeros
ad.tangent_ops["reshape"] = reshape
batching.batch_ops["transpose"] = transpose
batching.batch_ops["broadcast_in_dim"] = broadcast_in_dim
batching.batch_ops["reshape"] = reshape


# --------------------------------------------------------------------------- jvp rules
# Every structural op is linear in its operands jointly (pad in operand and padding value,
# concatenate in all its operands); iota has no operands and so never has a tangent.

for _prim in (
    broadcast_in_dim_p,
    reshape_p,
    squeeze_p,
    transpose_p,
    rev_p,
    pad_p,
    concatenate_p,
    tile_p,
    split_p,
    stack_p,
    unstack_p,
):
    ad.defjvp_linear(_prim)
ad.defjvp_zero(iota_p)


# --------------------------------------------------------------------------- transpose rules
# Each op is linear, so its transpose maps the output cotangent back to the operand's shape.
# The indexing family imports this one, so slices here are crops by negative padding.


def _sum(x, axes):
    # reduce_sum belongs to the reductions family, which imports this one: found via ad.
    axes = tuple(axes)
    return ad.tangent_ops["reduce_sum"](x, axes) if axes else x


def _zero_scalar(x):
    return np.zeros((), get_aval(x).dtype)


def _broadcast_in_dim_transpose(ct, operand, *, shape, broadcast_dimensions, sharding=None):
    in_shape = operand.aval.shape
    # Summed: the new dims, and the size-1 operand dims that were expanded.
    kept_ops = [i for i, d in enumerate(broadcast_dimensions) if in_shape[i] == shape[d]]
    kept = sorted(broadcast_dimensions[i] for i in kept_ops)
    summed = _sum(ct, [d for d in range(len(shape)) if d not in kept])
    # What is left is in output order; put it back in operand order.
    summed = transpose(summed, [kept.index(broadcast_dimensions[i]) for i in kept_ops])
    return [reshape(summed, in_shape)]


def _reshape_transpose(ct, operand, *, new_sizes, dimensions, sharding=None):
    # laid out as the operand (as JAX's, which gives the reshape its sharding)
    return [reshape(ct, operand.aval.shape, out_sharding=operand.aval.sharding)]


def _squeeze_transpose(ct, operand, *, dimensions):
    return [reshape(ct, operand.aval.shape)]


def _transpose_transpose(ct, operand, *, permutation):
    return [transpose(ct, tuple(int(i) for i in np.argsort(permutation)))]


def _rev_transpose(ct, operand, *, dimensions):
    return [rev(ct, dimensions)]


def _strided_take(x, strides):
    """``x[::s0, ::s1, ...]`` from reshapes and crops: pad each dim to a multiple of its
    stride, split it into (count, stride) and keep the first of each stride."""
    shape = get_aval(x).shape
    strides = [s if d else 1 for s, d in zip(strides, shape, strict=True)]
    if all(s == 1 for s in strides):
        return x
    counts = [-(-d // s) for d, s in zip(shape, strides, strict=True)]
    zero = _zero_scalar(x)
    x = pad(x, zero, [(0, c * s - d, 0) for c, s, d in zip(counts, strides, shape, strict=True)])
    x = reshape(x, tuple(n for c, s in zip(counts, strides, strict=True) for n in (c, s)))
    x = pad(
        x,
        zero,
        [cfg for c, s in zip(counts, strides, strict=True) for cfg in ((0, 0, 0), (0, 1 - s, 0))],
    )
    return reshape(x, tuple(counts))


def _pad_transpose(ct, operand, padding_value, *, padding_config):
    def operand_ct():
        # Undo low/high padding (negative amounts come back as zeros), then drop the interior.
        unpadded = pad(ct, _zero_scalar(ct), [(-lo, -hi, 0) for lo, hi, _ in padding_config])
        return _strided_take(unpadded, [i + 1 for _, _, i in padding_config])

    t_operand = operand_ct() if transpose_interp.is_undefined(operand) else None
    t_padv = None
    if transpose_interp.is_undefined(padding_value):
        ndim = get_aval(ct).ndim
        part = t_operand if t_operand is not None else operand_ct()
        t_padv = sub(_sum(ct, range(ndim)), _sum(part, range(ndim)))
    return [t_operand, t_padv]


def _concatenate_transpose(ct, *operands, dimension):
    total = get_aval(ct).shape[dimension]
    zero = _zero_scalar(ct)
    cts, offset = [], 0
    for x in operands:
        aval = x.aval if transpose_interp.is_undefined(x) else get_aval(x)
        size = aval.shape[dimension]
        if transpose_interp.is_undefined(x):
            config = [(0, 0, 0)] * aval.ndim
            config[dimension] = (-offset, offset + size - total, 0)
            cts.append(pad(ct, zero, config))
        else:
            cts.append(None)
        offset += size
    return cts


def _tile_transpose(ct, operand, *, reps):
    # Each operand element appears once per tile: split every dim into (rep, size), sum reps.
    shape = operand.aval.shape
    ct = reshape(ct, tuple(n for pair in zip(reps, shape, strict=True) for n in pair))
    return [reshape(_sum(ct, range(0, 2 * len(shape), 2)), shape)]


def _instantiated(cts):
    return [ad.instantiate(ct) for ct in cts]


def _split_transpose(cts, operand, *, sizes, axis):
    if all(type(ct) is ad.Zero for ct in cts):
        return [ad.Zero(operand.aval)]
    return [concatenate_p.bind(*_instantiated(cts), dimension=axis)]


def _stack_transpose(ct, *operands, axis):
    pieces = unstack_p.bind(ct, axis=axis)
    return [
        p if transpose_interp.is_undefined(x) else None
        for p, x in zip(pieces, operands, strict=True)
    ]


def _unstack_transpose(cts, operand, *, axis):
    if all(type(ct) is ad.Zero for ct in cts):
        return [ad.Zero(operand.aval)]
    return [stack_p.bind(*_instantiated(cts), axis=axis)]


transpose_interp.transpose_rules[tile_p] = _tile_transpose
transpose_interp.transpose_rules[split_p] = _split_transpose
transpose_interp.transpose_rules[stack_p] = _stack_transpose
transpose_interp.transpose_rules[unstack_p] = _unstack_transpose
transpose_interp.transpose_rules[broadcast_in_dim_p] = _broadcast_in_dim_transpose
transpose_interp.transpose_rules[reshape_p] = _reshape_transpose
transpose_interp.transpose_rules[squeeze_p] = _squeeze_transpose
transpose_interp.transpose_rules[transpose_p] = _transpose_transpose
transpose_interp.transpose_rules[rev_p] = _rev_transpose
transpose_interp.transpose_rules[pad_p] = _pad_transpose
transpose_interp.transpose_rules[concatenate_p] = _concatenate_transpose


# --------------------------------------------------------------------------- batching rules
# Rules keep the batch dimension `d` where it sits when the op leaves that dim alone (squeeze,
# transpose, rev, pad, concatenate): an unbatched dim k of the operand is k + (k >= d) once
# batched. iota has no operands, so vmap never hands it to a rule (it is exempt in
# tests/test_coverage.py).


def _shift(dims, d):
    """Unbatched dimension numbers as dimensions of the value batched at ``d``."""
    return tuple(k + (k >= d) for k in dims)


def _broadcast_in_dim_batch(axis, args, dims, *, shape, broadcast_dimensions, sharding=None):
    (x,), (d,) = args, dims
    # The batch becomes the leading dim of the result wherever it sits in the operand: the
    # broadcast moves it there itself (broadcast_dimensions need not be increasing).
    out_dims = [k + 1 for k in broadcast_dimensions]
    out_dims.insert(d, 0)
    if sharding is not None:  # the batch dimension is not split
        sharding = type(sharding)(sharding.mesh, type(sharding.spec)(None, *sharding.spec))
    return [broadcast_in_dim(x, (axis.size,) + shape, tuple(out_dims), out_sharding=sharding)], [0]


def _reshape_batch(axis, args, dims, *, new_sizes, dimensions, sharding=None):
    # Row-major order only keeps the batch apart from the other dims when it leads.
    x = batching.moveaxis(args[0], dims[0], 0)
    if sharding is not None:  # the batch dimension is not split
        sharding = type(sharding)(sharding.mesh, type(sharding.spec)(None, *sharding.spec))
    return [reshape(x, (axis.size,) + new_sizes, out_sharding=sharding)], [0]


def _squeeze_batch(axis, args, dims, *, dimensions):
    (x,), (d,) = args, dims
    out_d = d - sum(k < d for k in dimensions)
    return [squeeze_p.bind(x, dimensions=_shift(dimensions, d))], [out_d]


def _transpose_batch(axis, args, dims, *, permutation):
    (x,), (d,) = args, dims
    perm = list(_shift(permutation, d))
    perm.insert(d, d)
    return [transpose(x, tuple(perm))], [d]


def _rev_batch(axis, args, dims, *, dimensions):
    (x,), (d,) = args, dims
    return [rev_p.bind(x, dimensions=_shift(dimensions, d))], [d]


def _pad_batch(axis, args, dims, *, padding_config):
    x, padding_value = args
    x_d, v_d = dims
    if v_d is batching.not_mapped:
        config = padding_config[:x_d] + ((0, 0, 0),) + padding_config[x_d:]
        return [pad_p.bind(x, padding_value, padding_config=config)], [x_d]
    # One padding value per entry: pad with zeros, pad a mask of the operand's elements the
    # same way, and select each entry's padding value outside the mask (as JAX does).
    x = batching.batch_at_front(x, x_d, axis.size)
    config = ((0, 0, 0),) + padding_config
    padded = pad_p.bind(x, full_like(x, 0, shape=()), padding_config=config)
    inside = pad_p.bind(
        full(get_aval(x).shape, True, dtypes.bool_), np.array(False), padding_config=config
    )
    values = broadcast_in_dim(padding_value, get_aval(padded).shape, (0,))
    return [select(inside, padded, values)], [0]


def _concatenate_batch(axis, args, dims, *, dimension):
    d = next(k for k in dims if k is not batching.not_mapped)
    xs = [batching.move_or_broadcast(x, k, d, axis.size) for x, k in zip(args, dims, strict=True)]
    return [concatenate_p.bind(*xs, dimension=dimension + (dimension >= d))], [d]


def _tile_batch(axis, args, dims, *, reps):
    (x,), (d,) = args, dims
    return [tile_p.bind(x, reps=reps[:d] + (1,) + reps[d:])], [d]


# split, stack and unstack have a param named ``axis``: their rules call the batch axis
# ``frame`` (rules get it positionally).


def _split_batch(frame, args, dims, *, sizes, axis):
    (x,), (d,) = args, dims
    outs = split_p.bind(x, sizes=sizes, axis=axis + (axis >= d))
    return outs, [d] * len(outs)


def _stack_batch(frame, args, dims, *, axis):
    d = next(k for k in dims if k is not batching.not_mapped)
    if any(k != d for k in dims):
        args = [
            batching.move_or_broadcast(x, k, d, frame.size) for x, k in zip(args, dims, strict=True)
        ]
    # The new dim goes in front of the batch dim when it comes first, else after it.
    if axis <= d:
        return [stack_p.bind(*args, axis=axis)], [d + 1]
    return [stack_p.bind(*args, axis=axis + 1)], [d]


def _unstack_batch(frame, args, dims, *, axis):
    (x,), (d,) = args, dims
    if axis < d:
        outs = unstack_p.bind(x, axis=axis)
        return outs, [d - 1] * len(outs)
    outs = unstack_p.bind(x, axis=axis + 1)
    return outs, [d] * len(outs)


batching.batch_rules[tile_p] = _tile_batch
batching.batch_rules[split_p] = _split_batch
batching.batch_rules[stack_p] = _stack_batch
batching.batch_rules[unstack_p] = _unstack_batch
batching.batch_rules[broadcast_in_dim_p] = _broadcast_in_dim_batch
batching.batch_rules[reshape_p] = _reshape_batch
batching.batch_rules[squeeze_p] = _squeeze_batch
batching.batch_rules[transpose_p] = _transpose_batch
batching.batch_rules[rev_p] = _rev_batch
batching.batch_rules[pad_p] = _pad_batch
batching.batch_rules[concatenate_p] = _concatenate_batch

# Type rules of plain params only: eager ops and the tape reuse their output types.
staging.memoize_abstract_eval(
    broadcast_in_dim_p, reshape_p, squeeze_p, transpose_p, rev_p, pad_p, concatenate_p
)
