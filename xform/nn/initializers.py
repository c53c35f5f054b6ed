"""``xform.nn.initializers``: weight initializers, as ``jax.nn.initializers``.

An initializer is a function ``init(key, shape, dtype=None)`` that draws an array from
``xform.random``; for the same key it gives JAX's values. The builders (``normal``,
``variance_scaling``, ``glorot_uniform``, ...) return initializers.
"""

import math
import operator
from typing import Protocol

import numpy as np

from xform import dtypes, random
from xform import numpy as xnp

__all__ = [
    "zeros",
    "ones",
    "constant",
    "uniform",
    "normal",
    "truncated_normal",
    "variance_scaling",
    "glorot_uniform",
    "glorot_normal",
    "xavier_uniform",
    "xavier_normal",
    "lecun_uniform",
    "lecun_normal",
    "he_uniform",
    "he_normal",
    "kaiming_uniform",
    "kaiming_normal",
    "orthogonal",
    "delta_orthogonal",
    "Initializer",
]


class Initializer(Protocol):
    """What every initializer is: ``init(key, shape, dtype=None, out_sharding=None)``."""

    def __call__(self, key, shape, dtype=None, out_sharding=None):
        raise NotImplementedError


def _shape(shape, name):
    """``shape`` as a tuple of non-negative ints, or an error naming the argument."""
    try:
        dims = tuple(operator.index(d) for d in shape)
    except TypeError:
        raise TypeError(
            f"{name}: argument `shape` must be a sequence of ints, got {shape!r}"
        ) from None
    if any(d < 0 for d in dims):
        raise ValueError(f"{name}: argument `shape` must be non-negative, got {shape!r}")
    return dims


def _no_sharding(out_sharding, name):
    if out_sharding is not None:
        raise NotImplementedError(
            f"{name}: argument `out_sharding` is not supported (xform "
            f"arrays are not sharded), got {out_sharding!r}"
        )


def _dtype(dtype):
    return dtypes.default_float() if dtype is None else np.dtype(dtype)


def zeros(key, shape, dtype=None, out_sharding=None):
    """An array of zeros (``key`` is ignored)."""
    _no_sharding(out_sharding, "zeros")
    return xnp.zeros(_shape(shape, "zeros"), _dtype(dtype))


def ones(key, shape, dtype=None, out_sharding=None):
    """An array of ones (``key`` is ignored)."""
    _no_sharding(out_sharding, "ones")
    return xnp.ones(_shape(shape, "ones"), _dtype(dtype))


def constant(value, dtype=None):
    """An initializer that fills arrays with ``value``."""

    def init(key, shape, dtype=dtype, out_sharding=None):
        _no_sharding(out_sharding, "constant")
        return xnp.full(_shape(shape, "constant"), value, dtype=_dtype(dtype))

    return init


def uniform(scale=1e-2, dtype=None):
    """An initializer drawing uniformly from ``[0, scale)``."""

    def init(key, shape, dtype=dtype, out_sharding=None):
        _no_sharding(out_sharding, "uniform")
        dtype = _dtype(dtype)
        return random.uniform(key, _shape(shape, "uniform"), dtype) * xnp.array(scale, dtype)

    return init


def normal(stddev=1e-2, dtype=None):
    """An initializer drawing from a normal distribution with mean 0 and ``stddev``."""

    def init(key, shape, dtype=dtype, out_sharding=None):
        _no_sharding(out_sharding, "normal")
        dtype = _dtype(dtype)
        return random.normal(key, _shape(shape, "normal"), dtype) * xnp.array(stddev, dtype)

    return init


def truncated_normal(stddev=1e-2, dtype=None, lower=-2.0, upper=2.0):
    """An initializer drawing from a normal truncated to ``(lower, upper)``, times ``stddev``."""

    def init(key, shape, dtype=dtype, out_sharding=None):
        _no_sharding(out_sharding, "truncated_normal")
        dtype = _dtype(dtype)
        draw = random.truncated_normal(key, lower, upper, _shape(shape, "truncated_normal"), dtype)
        return draw * xnp.array(stddev, dtype)

    return init


def _size(shape, axes):
    if isinstance(axes, int):
        return shape[axes]
    return math.prod(shape[i] for i in axes)


def _compute_fans(shape, in_axis=-2, out_axis=-1, batch_axis=()):
    """(fan_in, fan_out): the in/out sizes times the receptive field (the other axes)."""
    if isinstance(in_axis, int) and in_axis == -2 and len(shape) <= 1:
        raise ValueError(
            f"variance_scaling: can't compute input and output sizes of a "
            f"{len(shape)}-dimensional weights tensor with the default in_axis; "
            "it must be at least 2-D, or pass in_axis explicitly"
        )
    in_size, out_size = _size(shape, in_axis), _size(shape, out_axis)
    receptive_field = math.prod(shape) / in_size / out_size / _size(shape, batch_axis)
    return in_size * receptive_field, out_size * receptive_field


def _complex_uniform(key, shape, dtype):
    """Uniform on the disk of the complex plane, mean 0 and variance 1."""
    key_r, key_theta = random.split(key)
    real_dtype = np.finfo(dtype).dtype
    r = xnp.sqrt(2 * random.uniform(key_r, shape, real_dtype)).astype(dtype)
    theta = 2 * np.pi * random.uniform(key_theta, shape, real_dtype).astype(dtype)
    return r * xnp.exp(1j * theta)


def _complex_truncated_normal(key, upper, shape, dtype):
    """A centred complex normal (variance 1 before truncation) with modulus below ``upper``."""
    key_r, key_theta = random.split(key)
    real_dtype = np.finfo(dtype).dtype
    t = (1 - xnp.exp(xnp.array(-(upper**2), dtype))) * random.uniform(
        key_r, shape, real_dtype
    ).astype(dtype)
    r = xnp.sqrt(-xnp.log(1 - t))
    theta = 2 * np.pi * random.uniform(key_theta, shape, real_dtype).astype(dtype)
    return r * xnp.exp(1j * theta)


_MODES = ("fan_in", "fan_out", "fan_avg", "fan_geo_avg")
_DISTRIBUTIONS = ("truncated_normal", "normal", "uniform")


def variance_scaling(scale, mode, distribution, in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    """An initializer with variance ``scale / n``, ``n`` the fan given by ``mode``.

    Args:
      scale: the scaling factor (positive).
      mode: ``"fan_in"``, ``"fan_out"``, ``"fan_avg"`` or ``"fan_geo_avg"``.
      distribution: ``"truncated_normal"`` (cut at two standard deviations), ``"normal"`` or
        ``"uniform"``.
      in_axis, out_axis: the input and output axes (ints or sequences of ints) of the weights.
      batch_axis: axes that count toward neither fan.
      dtype: the default dtype of the weights.
    """
    if mode not in _MODES:
        raise ValueError(f"variance_scaling: invalid mode {mode!r}; expected one of {_MODES}")
    if distribution not in _DISTRIBUTIONS:
        raise ValueError(
            f"variance_scaling: invalid distribution {distribution!r}; expected "
            f"one of {_DISTRIBUTIONS}"
        )

    def init(key, shape, dtype=dtype, out_sharding=None):
        _no_sharding(out_sharding, "variance_scaling")
        shape = _shape(shape, "variance_scaling")
        dtype = _dtype(dtype)
        fan_in, fan_out = _compute_fans(shape, in_axis, out_axis, batch_axis)
        denominator = {
            "fan_in": fan_in,
            "fan_out": fan_out,
            "fan_avg": (fan_in + fan_out) / 2,
            "fan_geo_avg": (fan_in * fan_out) ** 0.5,
        }[mode]
        variance = xnp.array(scale / denominator, dtype=dtype)
        is_complex = dtypes.is_complex(dtype)
        if distribution == "truncated_normal":
            if not is_complex:
                # The standard deviation of a unit normal truncated to (-2, 2).
                stddev = xnp.sqrt(variance) / xnp.array(0.87962566103423978, dtype)
                return random.truncated_normal(key, -2, 2, shape, dtype) * stddev
            stddev = xnp.sqrt(variance) / xnp.array(0.95311164380491208, dtype)
            return _complex_truncated_normal(key, 2, shape, dtype) * stddev
        if distribution == "normal":
            return random.normal(key, shape, dtype) * xnp.sqrt(variance)
        if not is_complex:
            return random.uniform(key, shape, dtype, -1) * xnp.sqrt(3 * variance)
        return _complex_uniform(key, shape, dtype) * xnp.sqrt(variance)

    return init


def glorot_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    """``variance_scaling(1.0, "fan_avg", "uniform")``."""
    return variance_scaling(1.0, "fan_avg", "uniform", in_axis, out_axis, batch_axis, dtype)


def glorot_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    """``variance_scaling(1.0, "fan_avg", "truncated_normal")``."""
    return variance_scaling(
        1.0, "fan_avg", "truncated_normal", in_axis, out_axis, batch_axis, dtype
    )


def lecun_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    """``variance_scaling(1.0, "fan_in", "uniform")``."""
    return variance_scaling(1.0, "fan_in", "uniform", in_axis, out_axis, batch_axis, dtype)


def lecun_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    """``variance_scaling(1.0, "fan_in", "truncated_normal")``."""
    return variance_scaling(1.0, "fan_in", "truncated_normal", in_axis, out_axis, batch_axis, dtype)


def he_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    """``variance_scaling(2.0, "fan_in", "uniform")``."""
    return variance_scaling(2.0, "fan_in", "uniform", in_axis, out_axis, batch_axis, dtype)


def he_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    """``variance_scaling(2.0, "fan_in", "truncated_normal")``."""
    return variance_scaling(2.0, "fan_in", "truncated_normal", in_axis, out_axis, batch_axis, dtype)


xavier_uniform = glorot_uniform
xavier_normal = glorot_normal
kaiming_uniform = he_uniform
kaiming_normal = he_normal


def orthogonal(scale=1.0, column_axis=-1, dtype=None):
    """An initializer of uniformly distributed orthogonal matrices times ``scale``: the
    ``column_axis`` columns are orthonormal (or the rows, if there are fewer of them).

    Args:
      scale: the factor applied to the orthogonal matrix.
      column_axis: the axis holding the columns; the other axes are flattened into rows.
      dtype: the default dtype of the weights.
    """

    def init(key, shape, dtype=dtype, out_sharding=None):
        _no_sharding(out_sharding, "orthogonal")
        shape = _shape(shape, "orthogonal")
        dtype = _dtype(dtype)
        if len(shape) < 2:
            raise ValueError(f"orthogonal initializer requires at least a 2D shape, got {shape}")
        if 0 in shape:
            return xnp.zeros(shape, dtype)
        n_cols = shape[column_axis]
        n_rows = math.prod(shape) // n_cols
        q = random.orthogonal(key, n_rows, (), dtype, n_cols)
        rest = tuple(np.delete(np.array(shape), column_axis).tolist())
        q = xnp.moveaxis(xnp.reshape(q, rest + (n_cols,)), -1, column_axis)
        return xnp.array(scale, dtype) * q

    return init


def delta_orthogonal(scale=1.0, column_axis=-1, dtype=None):
    """An initializer of delta-orthogonal convolution kernels: zeros except an orthogonal
    ``(fan_in, fan_out)`` matrix at the spatial centre of a 3-, 4- or 5-D kernel.

    Args:
      scale: the factor applied to the orthogonal matrix.
      column_axis: the axis of that matrix holding the columns.
      dtype: the default dtype of the weights.
    """

    def init(key, shape, dtype=dtype, out_sharding=None):
        _no_sharding(out_sharding, "delta_orthogonal")
        shape = _shape(shape, "delta_orthogonal")
        dtype = _dtype(dtype)
        if len(shape) not in (3, 4, 5):
            raise ValueError(
                f"Delta orthogonal initializer requires a 3D, 4D or 5D shape, got {shape}"
            )
        if shape[-1] < shape[-2]:
            raise ValueError(
                f"delta_orthogonal: `fan_in` must be less or equal than "
                f"`fan_out`, got shape {shape}"
            )
        matrix = orthogonal(scale=scale, column_axis=column_axis, dtype=dtype)(key, shape[-2:])
        centre = tuple((k - 1) // 2 for k in shape[:-2])
        return xnp.zeros(shape, dtype).at[centre].set(matrix)

    return init
