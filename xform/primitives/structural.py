"""Structural primitives: shapes and layout (broadcast, reshape, transpose, pad, ...)."""

import numpy as np

from xform.core import ShapedArray, get_aval
from xform.primitives.base import as_shape, standard_primitive

__all__ = ["broadcast_in_dim", "reshape", "squeeze", "expand_dims", "broadcast"]


# --------------------------------------------------------------------------- broadcast_in_dim


def _broadcast_in_dim_abstract_eval(x, *, shape, broadcast_dimensions):
    if len(broadcast_dimensions) != x.ndim:
        raise TypeError(f"broadcast_in_dim: broadcast_dimensions {broadcast_dimensions} must "
                        f"have one entry per operand dimension (operand shape {x.shape})")
    for i, d in enumerate(broadcast_dimensions):
        if not 0 <= d < len(shape):
            raise TypeError(f"broadcast_in_dim: broadcast_dimensions {broadcast_dimensions} "
                            f"out of range for the target shape {shape}")
        if x.shape[i] != 1 and x.shape[i] != shape[d]:
            raise TypeError(f"broadcast_in_dim: operand shape {x.shape} cannot be broadcast "
                            f"to {shape} along broadcast_dimensions {broadcast_dimensions}")
    if list(broadcast_dimensions) != sorted(set(broadcast_dimensions)):
        raise TypeError(f"broadcast_in_dim: broadcast_dimensions {broadcast_dimensions} must "
                        "be strictly increasing")
    return [ShapedArray(shape, x.dtype, x.weak_type)]


def _broadcast_in_dim_host(x, *, shape, broadcast_dimensions):
    expanded = [1] * len(shape)
    for i, d in enumerate(broadcast_dimensions):
        expanded[d] = x.shape[i]
    return [np.broadcast_to(x.reshape(expanded), shape)]


broadcast_in_dim_p = standard_primitive("broadcast_in_dim", _broadcast_in_dim_abstract_eval,
                                        _broadcast_in_dim_host)


def broadcast_in_dim(operand, shape, broadcast_dimensions):
    """Broadcast ``operand`` to ``shape``; its dim i becomes dim ``broadcast_dimensions[i]``."""
    shape = as_shape(shape, "broadcast_in_dim")
    return broadcast_in_dim_p.bind(operand, shape=shape,
                                   broadcast_dimensions=tuple(int(d) for d in
                                                              broadcast_dimensions))


def broadcast(operand, sizes):
    """Add leading dimensions of the given ``sizes``."""
    aval = get_aval(operand)
    sizes = as_shape(sizes, "broadcast")
    dims = tuple(range(len(sizes), len(sizes) + aval.ndim))
    return broadcast_in_dim(operand, sizes + aval.shape, dims)


# --------------------------------------------------------------------------- reshape


def _reshape_abstract_eval(x, *, new_sizes, dimensions):
    if int(np.prod(new_sizes, dtype=np.int64)) != x.size:
        raise TypeError(f"reshape: cannot reshape an array of shape {x.shape} (size {x.size}) "
                        f"into shape {new_sizes}")
    if dimensions is not None:
        raise NotImplementedError("reshape with `dimensions` is not supported; transpose first")
    return [ShapedArray(new_sizes, x.dtype, x.weak_type)]


reshape_p = standard_primitive(
    "reshape", _reshape_abstract_eval,
    lambda x, *, new_sizes, dimensions: [x.reshape(new_sizes)])


def reshape(operand, new_sizes, dimensions=None):
    """``operand`` with shape ``new_sizes`` (row-major order)."""
    new_sizes = as_shape(new_sizes, "reshape")
    return reshape_p.bind(operand, new_sizes=new_sizes, dimensions=dimensions)


# --------------------------------------------------------------------------- squeeze


def _squeeze_abstract_eval(x, *, dimensions):
    for d in dimensions:
        if not 0 <= d < x.ndim or x.shape[d] != 1:
            raise ValueError(f"squeeze: cannot squeeze dimension {d} of an array of shape "
                             f"{x.shape}: it must be in range and of size 1")
    shape = tuple(s for i, s in enumerate(x.shape) if i not in dimensions)
    return [ShapedArray(shape, x.dtype, x.weak_type)]


squeeze_p = standard_primitive(
    "squeeze", _squeeze_abstract_eval,
    lambda x, *, dimensions: [x.reshape([s for i, s in enumerate(x.shape)
                                         if i not in dimensions])])


def squeeze(array, dimensions):
    """Remove the size-1 ``dimensions`` of ``array``."""
    ndim = get_aval(array).ndim
    dims = tuple(sorted({d + ndim if d < 0 else d for d in dimensions}))
    return squeeze_p.bind(array, dimensions=dims)


def expand_dims(array, dimensions):
    """Insert size-1 dimensions at ``dimensions`` (positions in the result)."""
    aval = get_aval(array)
    out_ndim = aval.ndim + len(dimensions)
    dims = sorted(d + out_ndim if d < 0 else d for d in dimensions)
    shape = list(aval.shape)
    for d in dims:
        shape.insert(d, 1)
    kept = [i for i in range(out_ndim) if i not in dims]
    return broadcast_in_dim(array, tuple(shape), tuple(kept))

