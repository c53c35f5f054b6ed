"""Array creation: zeros, ones, full, empty, their ``_like`` forms, arange, linspace, eye,
identity, tri, tril, triu."""

import operator

import numpy as np

from xform import core, dtypes, errors
from xform.core import ShapedArray, Tracer
from xform.lax import _names as lax
from xform.numpy._promote import (
    _canonical_dtype,
    _dtype_and_weak,
    _to_inexact,
    asarray,
    aval_of,
    broadcast_shapes,
    broadcast_to_shape,
    check_arraylike,
    convert,
    result_type,
)
from xform.numpy._staged import staged
from xform.numpy._ufuncs import add, full_like_aval, multiply, subtract, true_divide
from xform.runtime.array import Array, mark_subnormals

__all__ = [
    "zeros",
    "ones",
    "full",
    "empty",
    "zeros_like",
    "ones_like",
    "full_like",
    "empty_like",
    "arange",
    "linspace",
    "eye",
    "identity",
    "tri",
    "tril",
    "triu",
]


def _shape(shape, name):
    if isinstance(shape, (Tracer, Array)) and aval_of(shape).ndim > 0:
        shape = tuple(shape.tolist()) if isinstance(shape, Array) else shape
    try:
        dims = (
            (shape,)
            if np.ndim(shape) == 0 and not isinstance(shape, (tuple, list))
            else tuple(shape)
        )
        out = tuple(
            d
            if core.is_symbolic_dim(d)
            # symbolic dimensions (export)
            else int(d.__index__())
            if hasattr(d, "__index__")
            else _bad(d, name)
            for d in dims
        )
    except TypeError as e:
        if isinstance(e, errors.ConcretizationTypeError):
            raise
        raise TypeError(
            f"{name}: shape must be an int or a sequence of ints, got {shape!r}"
        ) from None
    if any(d < 0 for d in out):  # TypeError, as JAX's shape checks
        raise TypeError(f"{name}: negative dimensions are not allowed, got shape {out}")
    return out


def _bad(d, name):
    raise TypeError(f"{name}: shape entries must be integers, got {d!r}")


def _filled(shape, value, dtype, weak=False, out_sharding=None):
    """``lax.full``: a scalar broadcast to ``shape`` (one broadcast_in_dim), laid out as
    ``out_sharding`` when given."""
    if isinstance(value, (Tracer, Array)):
        scalar = convert(value, dtype, weak)
    else:
        with np.errstate(all="ignore"):
            # A Python int is read by NumPy (int64, or uint64 if larger) and wraps around to
            # dtype, as JAX's full does; np.array(300, int8) would raise instead.
            host = np.array(np.array(value) if type(value) is int else value).astype(dtype)
        host.flags.writeable = False
        scalar = mark_subnormals(Array(ShapedArray((), dtype, weak), host))
    return lax.broadcast_in_dim(scalar, shape, (), out_sharding=out_sharding) if shape else scalar


def zeros(shape, dtype=None, *, device=None):
    """An array of zeros (default dtype: float)."""
    del device
    if isinstance(dtype, np.dtype) and dtype == dtypes.float0:
        # As JAX: a host value (float0, the tangent type of integers, is no device type).
        return np.zeros(_shape(shape, "zeros"), dtypes.float0)
    dtype = _canonical_dtype(float if dtype is None else dtype, "zeros")
    return _filled(_shape(shape, "zeros"), 0, dtype)


def ones(shape, dtype=None, *, device=None):
    """An array of ones (default dtype: float)."""
    del device
    dtype = _canonical_dtype(float if dtype is None else dtype, "ones")
    return _filled(_shape(shape, "ones"), 1, dtype)


def empty(shape, dtype=None, *, device=None):
    """Like ``zeros``: xform arrays are never uninitialized."""
    return zeros(shape, dtype, device=device)


def full(shape, fill_value, dtype=None, *, device=None):
    """An array of ``shape`` filled with ``fill_value`` (its dtype and weak type by default)."""
    del device
    shape = _shape(shape, "full")
    check_arraylike("full", fill_value)
    if (
        np.ndim(fill_value)
        if not isinstance(fill_value, (Tracer, Array))
        else aval_of(fill_value).ndim
    ):
        return broadcast_to_shape(asarray(fill_value, dtype), shape)
    if dtype is None:
        dtype, weak = _dtype_and_weak(fill_value)
    else:
        dtype, weak = _canonical_dtype(dtype, "full"), False
    return _filled(shape, fill_value, dtype, weak)


def full_like(a, fill_value, dtype=None, shape=None, *, device=None):
    """An array like ``a`` (shape, dtype, weak type) filled with ``fill_value``."""
    del device
    if _has_shape_and_dtype_only(a):  # a ShapeDtypeStruct (JAX reads such objects too)
        check_arraylike("full_like", fill_value)
        aval = ShapedArray(
            tuple(a.shape), dtypes.canonicalize(a.dtype), bool(getattr(a, "weak_type", False))
        )
    else:
        check_arraylike("full_like", a, fill_value)
        aval = aval_of(asarray(a))
    shape = aval.shape if shape is None else _shape(shape, "full_like")
    if dtype is None:
        dtype, weak = aval.dtype, aval.weak_type
    else:
        dtype, weak = _canonical_dtype(dtype, "full_like"), False
    if aval_of(fill_value).ndim if isinstance(fill_value, (Tracer, Array)) else np.ndim(fill_value):
        return broadcast_to_shape(asarray(fill_value, dtype), shape)
    # where a's type carries its sharding (explicit mode), the result is laid out so, as JAX's
    like = aval.sharding if shape == aval.shape else None
    return _filled(shape, fill_value, dtype, weak, like)


def _has_shape_and_dtype_only(a):
    # Not an array but with a shape and a NumPy dtype (not a typed key: see _keys).
    return (
        not isinstance(a, (Tracer, Array, np.ndarray, np.generic))
        and hasattr(a, "shape")
        and isinstance(getattr(a, "dtype", None), np.dtype)
    )


def zeros_like(a, dtype=None, shape=None, *, device=None):
    """Zeros of ``a``'s shape and dtype."""
    return full_like(a, 0, dtype, shape, device=device)


def ones_like(a, dtype=None, shape=None, *, device=None):
    """Ones of ``a``'s shape and dtype."""
    return full_like(a, 1, dtype, shape, device=device)


def empty_like(a, dtype=None, shape=None, *, device=None):
    """Like ``zeros_like``."""
    return full_like(a, 0, dtype, shape, device=device)


def _concrete_scalar(x, what):
    if isinstance(x, Tracer):
        return x._concretize(f"the jnp.arange argument '{what}'")
    if x is not None and np.ndim(x) != 0:
        raise ValueError(f"arange: arguments must be scalars; got {what}={x}")
    return x


def arange(start, stop=None, step=None, dtype=None, *, device=None):
    """Evenly spaced values in ``[start, stop)``; the dtype follows the arguments."""
    del device
    if dtype is not None:
        dtype = _canonical_dtype(dtype, "arange")
    if core.is_symbolic_dim(start) and stop is None and step is None:  # export: arange(b)
        return lax.iota(dtype or dtypes.default_int(), start)
    for v in (start, stop, step):
        if v is not None:
            check_arraylike("arange", v)
    start_name = "stop" if stop is None and step is None else "start"
    args = [start, stop, step]
    if dtype is None:
        dtype = result_type(*(v for v in args if v is not None))
    start = _concrete_scalar(start, start_name)
    stop = _concrete_scalar(stop, "stop")
    step = _concrete_scalar(step, "step")
    if any(np.iscomplexobj(v) for v in (start, stop, step) if v is not None):
        raise ValueError("arange: complex start/stop/step are not supported")
    if stop is None:
        start, stop = 0, start
    start, stop = np.asarray(start).item(), np.asarray(stop).item()
    if step is not None:
        step = np.asarray(step).item()
        if step == 0:
            raise ValueError("arange: step must not be zero")
        working = dtypes.float32 if dtype in (dtypes.float16, dtypes.bfloat16) else dtype
        size = max(0, int(np.ceil((stop - start) / step)))
        return lax.convert_element_type(
            lax.add(
                asarray(start, working), lax.mul(asarray(step, working), lax.iota(working, size))
            ),
            dtype,
        )
    if start == 0:
        return lax.iota(dtype, max(0, int(np.ceil(stop))))
    size = max(0, int(np.ceil(stop - start)))
    return lax.add(asarray(start, dtype), lax.iota(dtype, size))


@staged("_linspace", static_argnames=("num", "endpoint", "retstep", "dtype", "axis", "device"))
def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *, device=None):
    """``num`` evenly spaced values from ``start`` to ``stop``."""
    del device
    num = operator.index(num)  # TypeError for a float, as JAX
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    check_arraylike("linspace", start, stop)
    start, stop = asarray(start), asarray(stop)
    if dtype is None:
        dtype = _to_inexact(result_type(start, stop))
    else:
        dtype = _canonical_dtype(dtype, "linspace")
    computation_dtype = _to_inexact(dtype)
    start = convert(start, computation_dtype)
    stop = convert(stop, computation_dtype)
    bounds_shape = list(broadcast_shapes(aval_of(start).shape, aval_of(stop).shape))
    b_start = broadcast_to_shape(start, tuple(bounds_shape))
    b_stop = broadcast_to_shape(stop, tuple(bounds_shape))
    axis = len(bounds_shape) + axis + 1 if axis < 0 else axis
    bounds_shape.insert(axis, 1)
    div = (num - 1) if endpoint else num
    if num > 1:
        delta = true_divide(
            convert(subtract(stop, start), computation_dtype), asarray(div, computation_dtype)
        )
        iota_shape = [1] * len(bounds_shape)
        iota_shape[axis] = div
        real_dtype = (
            np.finfo(computation_dtype).dtype
            if dtypes.is_complex(computation_dtype)
            else computation_dtype
        )
        step = true_divide(
            lax.reshape(lax.iota(real_dtype, div), tuple(iota_shape)), asarray(div, real_dtype)
        )
        step = convert(step, computation_dtype)
        out = add(
            multiply(lax.reshape(b_start, tuple(bounds_shape)), subtract(1, step)),
            multiply(lax.reshape(b_stop, tuple(bounds_shape)), step),
        )
        if endpoint:
            out = lax.concatenate([out, lax.expand_dims(b_stop, (axis,))], axis)
    elif num == 1:
        delta = asarray(np.nan if endpoint else 0.0, computation_dtype)
        if not endpoint:
            delta = subtract(stop, start)
        out = lax.reshape(b_start, tuple(bounds_shape))
    else:
        empty_shape = list(broadcast_shapes(aval_of(start).shape, aval_of(stop).shape))
        empty_shape.insert(axis, 0)
        delta = asarray(np.nan, computation_dtype)
        out = zeros(tuple(empty_shape), dtype)
    if dtypes.is_int(dtype) and not dtypes.is_int(aval_of(out).dtype):
        out = lax.floor(out)
    result = convert(out, dtype, False)
    return (result, delta) if retstep else result


def eye(N, M=None, k=0, dtype=None, *, device=None):
    """A 2-D array with ones on the ``k``-th diagonal."""
    del device
    dtype = _canonical_dtype(float if dtype is None else dtype, "eye")
    n = operator.index(N)
    m = n if M is None else operator.index(M)
    if n < 0 or m < 0:  # ValueError here, as JAX's eye (its zeros raise TypeError)
        raise ValueError(f"eye: negative dimensions are not allowed, got {N} and {M}")
    try:
        k = operator.index(k)
    except TypeError as e:
        if isinstance(e, errors.ConcretizationTypeError):  # a traced k: its own message
            raise
        raise ValueError(f"eye: k must be a scalar integer; got {k}") from None
    i = lax.broadcasted_iota(dtypes.int32, (n, m), 0)
    j = lax.broadcasted_iota(dtypes.int32, (n, m), 1)
    mask = lax.eq(lax.add(i, asarray(k, dtypes.int32)), j)
    return lax.convert_element_type(mask, dtype)


def identity(n, dtype=None):
    """The ``n`` x ``n`` identity matrix."""
    return eye(n, dtype=dtype)


def tri(N, M=None, k=0, dtype=None):
    """Ones at and below the ``k``-th diagonal."""
    dtype = _canonical_dtype(float if dtype is None else dtype, "tri")
    n = _shape(N, "tri")[0]
    m = n if M is None else _shape(M, "tri")[0]
    i = lax.broadcasted_iota(dtypes.int32, (n, m), 0)
    j = lax.broadcasted_iota(dtypes.int32, (n, m), 1)
    i = lax.add(i, asarray(operator.index(k), dtypes.int32))
    return lax.convert_element_type(lax.ge(i, j), dtype)


def _tri_mask(name, m, k, lower):
    check_arraylike(name, m)
    m = asarray(m)
    shape = aval_of(m).shape
    if len(shape) < 2:
        raise ValueError(f"{name}: argument must be at least 2-D, got shape {shape}")
    n, cols = shape[-2:]
    # As JAX's: triu(m, k) keeps m where tril's mask for k - 1 is false.
    k = operator.index(k) if lower else operator.index(k) - 1
    i = lax.add(lax.broadcasted_iota(dtypes.int32, (n, cols), 0), asarray(k, dtypes.int32))
    mask = lax.ge(i, lax.broadcasted_iota(dtypes.int32, (n, cols), 1))
    mask = broadcast_to_shape(mask, shape)
    zero = full_like_aval(m, 0)
    return lax.select(mask, m, zero) if lower else lax.select(mask, zero, m)


@staged("tril", static_argnames=("k",))
def tril(m, k=0):
    """``m`` with the elements above the ``k``-th diagonal zeroed."""
    return _tri_mask("tril", m, k, True)


@staged("triu", static_argnames=("k",))
def triu(m, k=0):
    """``m`` with the elements below the ``k``-th diagonal zeroed."""
    return _tri_mask("triu", m, k, False)
