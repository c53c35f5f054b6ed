"""Samplers: every distribution turns threefry bits into values exactly as JAX's
``jax.random`` does, so ``uniform``, ``normal``, ``randint``, ``permutation`` and everything
built only on them (``exponential``, ``gumbel``, ``bernoulli``, ...) equal JAX's values for the
same key. ``gamma``/``beta``/``dirichlet`` follow JAX's algorithm (Marsaglia-Tsang rejection
per element, a ``while_loop`` under ``vmap``); ``multivariate_normal`` and ``orthogonal`` use
``xform.numpy.linalg``'s decompositions (the LAPACK kernels JAX calls) as JAX does.

Each public function checks its arguments, then calls one jitted body (static shape and
dtype), as JAX does: eagerly that is one compiled program; under ``jit``/``vmap`` a call.
"""

import functools
import math

import ml_dtypes
import numpy as np

from lowering.call import emit_call
from lowering.mlir import lowering_rules
from xform import core, dtypes, lax
from xform import numpy as xnp
from xform.api.batching import vmap
from xform.api.jit import jit
from xform.api.sharding import reshard as _reshard
from xform.interpret.staging import trace_to_jaxpr
from xform.primitives.rng import random_gamma_p
from xform.random import _threefry
from xform.random._keys import (
    IMPLS,
    THREEFRY,
    KeyArray,
    canonical_dtype,
    canonical_shape,
    check_key,
    check_shape,
)
from xform.random._keys import random_bits as _random_bits
from xform.random._keys import split_key as _split


def takes_out_sharding(sampler):
    """``sampler`` with JAX's ``out_sharding=`` keyword: the result laid out as that sharding
    (a NamedSharding, or a PartitionSpec of the current mesh); None leaves it as it is."""

    @functools.wraps(sampler)
    def sample(*args, out_sharding=None, **kwargs):
        out = sampler(*args, **kwargs)
        return out if out_sharding is None else _reshard(out, out_sharding)

    return sample


def _shape_of(x):
    return tuple(core.get_aval(x).shape)


def _pair(key):
    keys = _split(key, (2,))
    return keys[0], keys[1]


def _to_rank(x, rank):
    ndim = len(_shape_of(x))
    return lax.expand_dims(x, tuple(range(rank - ndim))) if ndim < rank else x


def _const(dtype, value):
    return np.array(value, dtype)


# --------------------------------------------------------------------------- uniform, normal


@takes_out_sharding
def uniform(key, shape=(), dtype=None, minval=0.0, maxval=1.0):
    """Uniform values in ``[minval, maxval)``, bit-equal to ``jax.random.uniform``.

    Args:
      key: a key (typed, from ``key``, or raw ``uint32[2]``, from ``PRNGKey``).
      shape: the result shape (a tuple of ints).
      dtype: a float dtype (default float32, float64 under x64).
      minval, maxval: bounds broadcast-compatible with ``shape``.

    Example:
      >>> xform.random.uniform(xform.random.PRNGKey(0), (3,))
    """
    key = check_key("uniform", key)
    dt = canonical_dtype("uniform", dtype, float, "float")
    shape = canonical_shape("uniform", shape)
    check_shape("uniform", shape, np.shape(minval), np.shape(maxval))
    return _uniform_jit(key, minval, maxval, shape=shape, dtype=dt)


def _uniform(key, minval, maxval, shape, dtype):
    """Fill the mantissa of 1.0 with random bits, subtract 1, scale into [minval, maxval)."""
    minval = _to_rank(lax.convert_element_type(minval, dtype), len(shape))
    maxval = _to_rank(lax.convert_element_type(maxval, dtype), len(shape))
    finfo = ml_dtypes.finfo(dtype)
    nbits, nmant = finfo.bits, finfo.nmant
    rng_bits = 8 if nmant < 8 else nbits  # bfloat16: 8 random bits fill its 7-bit mantissa
    uint = _threefry.UINT_DTYPES[nbits]
    bits = _random_bits(key, rng_bits, shape)
    if rng_bits != nbits:
        bits = lax.convert_element_type(bits, uint)
    float_bits = lax.bitwise_or(
        lax.shift_right_logical(bits, _const(uint, rng_bits - nmant)),
        np.array(1.0, dtype).view(uint),
    )
    floats = lax.sub(lax.bitcast_convert_type(float_bits, dtype), _const(dtype, 1.0))
    return xnp.maximum(minval, floats * (maxval - minval) + minval)


_uniform_jit = jit(_uniform, static_argnames=("shape", "dtype"))


@takes_out_sharding
def normal(key, shape=(), dtype=None):
    """Standard normal values, bit-equal to ``jax.random.normal`` (``sqrt(2) * erf_inv(u)``
    for ``u`` uniform in ``(-1, 1)``; complex dtypes have unit variance in all)."""
    key = check_key("normal", key)
    dt = canonical_dtype("normal", dtype, float, "inexact")
    return _normal_jit(key, shape=canonical_shape("normal", shape), dtype=dt)


def _normal(key, shape, dtype):
    if dtypes.is_complex(dtype):
        key_re, key_im = _pair(key)
        real = np.dtype(np.array(0, dtype).real.dtype)
        re = lax.convert_element_type(_normal_real_jit(key_re, shape, real), dtype)
        im = lax.convert_element_type(_normal_real_jit(key_im, shape, real), dtype)
        return (re + 1j * im) / _const(dtype, np.sqrt(2))
    return _normal_real_jit(key, shape, dtype)


def _normal_real(key, shape, dtype):
    lo = np.nextafter(_const(dtype, -1.0), _const(dtype, 0.0))
    u = _uniform_jit(key, lo, _const(dtype, 1.0), shape, dtype)
    return lax.mul(_const(dtype, np.sqrt(2)), lax.erf_inv(u))


# As JAX's: _normal stages _normal_real, which stages _uniform.
_normal_real_jit = jit(_normal_real, static_argnames=("shape", "dtype"))


_normal_jit = jit(_normal, static_argnames=("shape", "dtype"))


@takes_out_sharding
def truncated_normal(key, lower, upper, shape=None, dtype=None):
    """Standard normal values truncated to the open interval ``(lower, upper)``, as
    ``jax.random.truncated_normal`` (inverse-CDF)."""
    key = check_key("truncated_normal", key)
    dt = canonical_dtype("truncated_normal", dtype, float, "float")
    low_shape, up_shape = np.shape(lower), np.shape(upper)
    if shape is None:
        shape = xnp.broadcast_shapes(low_shape, up_shape)
    else:
        shape = canonical_shape("truncated_normal", shape)
        check_shape("truncated_normal", shape, low_shape, up_shape)
    return _truncated_normal(key, lower, upper, shape=shape, dtype=dt)


@functools.partial(jit, static_argnames=("shape", "dtype"))
def _truncated_normal(key, lower, upper, shape, dtype):
    sqrt2 = _const(dtype, np.sqrt(2))
    lower = lax.convert_element_type(lower, dtype)
    upper = lax.convert_element_type(upper, dtype)
    a = lax.erf(lax.div(lower, sqrt2))
    b = lax.erf(lax.div(upper, sqrt2))
    out = lax.mul(sqrt2, lax.erf_inv(_uniform_jit(key, a, b, shape, dtype)))
    return xnp.clip(
        out,
        lax.nextafter(lax.stop_gradient(lower), _const(dtype, np.inf)),
        lax.nextafter(lax.stop_gradient(upper), _const(dtype, -np.inf)),
    )


# --------------------------------------------------------------------------- integers


@takes_out_sharding
def randint(key, shape, minval, maxval, dtype=None):
    """Integers uniform in ``[minval, maxval)``, bit-equal to ``jax.random.randint`` (two
    draws per value to shrink the modulo bias; ``maxval <= minval`` gives ``minval``).

    Args:
      key: a key.
      shape: the result shape.
      minval, maxval: integer bounds broadcast-compatible with ``shape``.
      dtype: an integer dtype (default int32, int64 under x64); 8- and 16-bit types are
        sampled in 32 bits.
    """
    key = check_key("randint", key)
    dt = canonical_dtype("randint", dtype, int, "int", error=TypeError)
    shape = canonical_shape("randint", shape)
    check_shape("randint", shape, np.shape(minval), np.shape(maxval))
    return _randint(key, minval, maxval, shape=shape, dtype=dt, int_dtype=dtypes.default_int())


def _convert_and_clip(val, dtype):
    """``val`` in ``dtype``, clipped to the range both types share instead of wrapping."""
    src, dst = np.iinfo(val.dtype), np.iinfo(dtype)
    lo, hi = max(src.min, dst.min), min(src.max, dst.max)
    return xnp.clip(val, _const(val.dtype, lo), _const(val.dtype, hi)).astype(dtype)


# Bodies whose dtypes would otherwise follow x64 take ``int_dtype`` (the default int) as a
# static argument: xform.jit's cache is keyed by the argument types, not by the x64 flag.
@functools.partial(jit, static_argnames=("shape", "dtype", "int_dtype"))
def _randint(key, minval, maxval, shape, dtype, int_dtype):
    minval, maxval = xnp.asarray(minval), xnp.asarray(maxval)
    out_dtype, info = dtype, np.iinfo(dtype)
    if info.bits < 32:  # sample in 32 bits: less bias
        dtype = np.dtype(np.int32)
        minval = xnp.clip(minval.astype(dtype), int(info.min), int(info.max))
        maxval = xnp.clip(maxval.astype(dtype), int(info.min), int(info.max) + 1)
    if not dtypes.is_int(minval.dtype):
        minval = minval.astype(int_dtype)
    if not dtypes.is_int(maxval.dtype):
        maxval = maxval.astype(int_dtype)
    # maxval beyond dtype's range (randint(k, s, 0, 256, uint8)) widens the span by one.
    top = min(np.iinfo(dtype).max, np.iinfo(maxval.dtype).max)
    maxval_out_of_range = maxval > _const(maxval.dtype, top)
    minval = _to_rank(_convert_and_clip(minval, dtype), len(shape))
    maxval = _to_rank(_convert_and_clip(maxval, dtype), len(shape))
    maxval_out_of_range = _to_rank(maxval_out_of_range, len(shape))
    nbits = np.iinfo(dtype).bits
    uint = _threefry.UINT_DTYPES[nbits]
    k1, k2 = _pair(key)
    higher_bits = _random_bits(k1, nbits, shape)
    lower_bits = _random_bits(k2, nbits, shape)
    span = lax.convert_element_type(maxval - minval, uint)
    span = xnp.where(maxval <= minval, _const(uint, 1), span)
    span = xnp.where(maxval_out_of_range & (maxval > minval), span + _const(uint, 1), span)
    span = xnp.broadcast_to(span, shape)
    # (hi * 2**nbits + lo) % span without overflow: 2**nbits % span from its square root.
    multiplier = lax.rem(xnp.full(shape, 2 ** (nbits // 2), uint), span)
    multiplier = lax.rem(lax.mul(multiplier, multiplier), span)
    offset = lax.add(lax.mul(lax.rem(higher_bits, span), multiplier), lax.rem(lower_bits, span))
    offset = lax.rem(offset, span)
    return (minval + lax.convert_element_type(offset, dtype)).astype(out_dtype)


def _take(x, ind, axis):
    """``x`` indexed by the 1-d ``ind`` along ``axis``."""
    return xnp.moveaxis(xnp.moveaxis(x, axis, 0)[ind], 0, axis)


def _shuffle(key, x, axis):
    """Sort by fresh random 32-bit keys, over enough rounds that ties are unlikely (JAX's
    heuristic: ceil(3 ln(size) / ln(2**32 - 1)) rounds)."""
    size = math.prod(_shape_of(x))
    rounds = int(np.ceil(3 * np.log(max(1, size)) / np.log(np.iinfo(np.uint32).max)))
    for _ in range(rounds):
        key, subkey = _pair(key)
        sort_keys = _random_bits(subkey, 32, _shape_of(x))
        _, x = lax.sort_key_val(sort_keys, x, axis)
    return x


@functools.partial(jit, static_argnames=("axis", "independent", "int_dtype"))
def _permutation(key, x, axis, independent, int_dtype):
    if independent or x.ndim == 1:
        return _shuffle(key, x, axis)
    ind = _shuffle(key, xnp.arange(x.shape[axis], dtype=int_dtype), 0)
    return _take(x, ind, axis)


def _axis(name, axis, ndim):
    axis = int(axis)
    if not -ndim <= axis < ndim:
        raise ValueError(
            f"xform.random.{name}: `axis` {axis} is out of bounds for an array of dimension {ndim}"
        )
    return axis % ndim


@takes_out_sharding
def permutation(key, x, axis=0, independent=False):
    """A random permutation of ``arange(x)`` (``x`` an int) or of ``x`` along ``axis``,
    bit-equal to ``jax.random.permutation``; ``independent`` shuffles each slice apart."""
    key = check_key("permutation", key)
    if isinstance(x, core.Tracer) or not isinstance(x, int):
        x = xnp.asarray(x)
    if np.ndim(x) == 0:
        if not dtypes.is_int(np.dtype(x.dtype) if hasattr(x, "dtype") else np.dtype(type(x))):
            raise TypeError(
                "xform.random.permutation: `x` must be an integer or at least 1-dimensional"
            )
        n = int(x)
        _axis("permutation", axis, 1)
        return _permutation(
            key,
            xnp.arange(n, dtype=dtypes.default_int()),
            axis=0,
            independent=False,
            int_dtype=dtypes.default_int(),
        )
    return _permutation(
        key,
        x,
        axis=_axis("permutation", axis, x.ndim),
        independent=bool(independent),
        int_dtype=dtypes.default_int(),
    )


def choice(key, a, shape=(), replace=True, p=None, axis=0, mode=None):
    """A random sample of ``shape`` from ``a`` (an array, or ``arange(a)`` for an int), with or
    without replacement, uniformly or with probabilities ``p``, as ``jax.random.choice``."""
    key = check_key("choice", key)
    if not isinstance(shape, (tuple, list)):
        raise TypeError(f"xform.random.choice: `shape` must be a sequence, got {shape!r}")
    shape = canonical_shape("choice", shape)
    arr = xnp.asarray(a)
    if arr.ndim == 0:
        if not dtypes.is_int(arr.dtype):
            raise TypeError("xform.random.choice: `a` must be an integer or an array")
        n_inputs = int(a)
    else:
        axis = _axis("choice", axis, arr.ndim)
        n_inputs = arr.shape[axis]
    n_draws = math.prod(shape)
    if n_draws == 0:
        return xnp.zeros(shape, dtype=arr.dtype)
    if n_inputs <= 0:
        raise ValueError(
            "xform.random.choice: `a` must be greater than 0 unless no samples are taken"
        )
    if not replace and n_draws > n_inputs:
        raise ValueError(
            f"xform.random.choice: cannot take a larger sample (size {n_draws}) "
            f"than population (size {n_inputs}) when replace=False"
        )
    if p is None:
        if replace:
            ind = randint(key, shape, 0, n_inputs)
            result = ind if arr.ndim == 0 else _take(arr, ind.ravel(), axis)
        else:
            slices = (slice(None),) * axis + (slice(n_draws),)
            result = permutation(key, n_inputs if arr.ndim == 0 else arr, axis)[slices]
    else:
        p_arr = xnp.asarray(p)
        if not dtypes.is_inexact(p_arr.dtype):
            p_arr = p_arr.astype(dtypes.default_float())
        if p_arr.shape != (n_inputs,):
            raise ValueError(
                "xform.random.choice: `p` must be None or a 1-d vector with the "
                f"same size as a.shape[axis]; p has shape {p_arr.shape} and "
                f"a.shape[axis] is {n_inputs}"
            )
        ind = _choice_p(
            key,
            p_arr,
            shape=shape,
            replace=bool(replace),
            mode=mode,
            int_dtype=dtypes.default_int(),
        )
        result = ind if arr.ndim == 0 else _take(arr, ind.ravel(), axis)
    return result.reshape(
        shape if arr.ndim == 0 else arr.shape[:axis] + shape + arr.shape[axis + 1 :]
    )


@functools.partial(jit, static_argnames=("shape", "replace", "mode", "int_dtype"))
def _choice_p(key, p, shape, replace, mode, int_dtype):
    if replace:
        p_cuml = xnp.cumsum(p)
        r = p_cuml[-1] * (1 - _uniform(key, 0.0, 1.0, shape, p.dtype))
        # searchsorted(p_cuml, r, side="left"): how many cumulative sums lie below r.
        ind = xnp.sum(p_cuml < r[..., None], axis=-1)
    else:
        g = _gumbel(key, (p.shape[0],), p.dtype, _gumbel_mode(mode)) + xnp.log(p)
        ind = lax.top_k(g, math.prod(shape))[1]
    return ind.astype(int_dtype)


# --------------------------------------------------------------------------- transforms of u


@takes_out_sharding
def bernoulli(key, p=0.5, shape=None, mode="low"):
    """Booleans that are True with probability ``p`` (as ``jax.random.bernoulli``; ``p``
    outside [0, 1] is not an error, it just saturates)."""
    if mode not in ("high", "low"):
        raise ValueError(f"xform.random.bernoulli: got mode={mode!r}, expected 'high' or 'low'")
    key = check_key("bernoulli", key)
    p_dtype = core.get_aval(p).dtype
    if not dtypes.is_float(p_dtype):
        raise TypeError(
            f"xform.random.bernoulli: probability `p` must have a floating dtype, got {p_dtype}"
        )
    if shape is None:
        shape = np.shape(p)
    else:
        shape = canonical_shape("bernoulli", shape)
        check_shape("bernoulli", shape, np.shape(p))
    return _bernoulli(key, p, shape=tuple(shape), mode=mode)


@functools.partial(jit, static_argnames=("shape", "mode"))
def _bernoulli(key, p, shape, mode):
    dtype = core.get_aval(p).dtype  # (a Python float under disable_jit)
    if mode == "high":
        u = _uniform_jit(key, 0.0, 1.0, (2, *shape), dtype)
        u1, u2 = u[0], u[1] * _const(dtype, 2.0 ** -ml_dtypes.finfo(dtype).nmant)
        return u2 < p - u1
    return _uniform_jit(key, 0.0, 1.0, shape, dtype) < p


def _simple_sampler(name, body):
    """A public sampler ``f(key, shape=(), dtype=None)`` around ``body(key, shape, dtype)``."""
    jitted = jit(body, static_argnames=("shape", "dtype"))

    def sampler(key, shape=(), dtype=None):
        key = check_key(name, key)
        dt = canonical_dtype(name, dtype, float, "float")
        return jitted(key, shape=canonical_shape(name, shape), dtype=dt)

    sampler.__name__ = sampler.__qualname__ = name
    return sampler


def _exponential(key, shape, dtype):
    u = _uniform(key, 0.0, 1.0, shape, dtype)
    return lax.neg(lax.log1p(lax.neg(u)))


def _laplace(key, shape, dtype):
    u = _uniform(key, -1.0 + ml_dtypes.finfo(dtype).epsneg, 1.0, shape, dtype)
    return lax.mul(lax.sign(u), lax.log1p(lax.neg(lax.abs(u))))


def _logistic(key, shape, dtype):
    x = _uniform(key, ml_dtypes.finfo(dtype).tiny, 1.0, shape, dtype)
    return lax.sub(lax.log(x), lax.log1p(lax.neg(x)))


exponential = takes_out_sharding(_simple_sampler("exponential", _exponential))
exponential.__doc__ = "Exponential(1) values (``-log1p(-u)``), as ``jax.random.exponential``."
laplace = takes_out_sharding(_simple_sampler("laplace", _laplace))
laplace.__doc__ = "Laplace(0, 1) values, as ``jax.random.laplace``."
logistic = takes_out_sharding(_simple_sampler("logistic", _logistic))
logistic.__doc__ = "Standard logistic values, as ``jax.random.logistic``."


def _gumbel_mode(mode):
    mode = "low" if mode is None else mode
    if mode not in ("highest", "high", "low"):
        raise ValueError(
            f"xform.random.gumbel: mode must be 'low', 'high' or 'highest', got {mode!r}"
        )
    return mode


@takes_out_sharding
def gumbel(key, shape=(), dtype=None, mode=None):
    """Standard Gumbel values, as ``jax.random.gumbel`` (``mode`` "low", the default, or
    "high" for more random bits near 0; "highest" is not implemented for float32)."""
    key = check_key("gumbel", key)
    dt = canonical_dtype("gumbel", dtype, float, "float")
    return _gumbel_jit(
        key, shape=canonical_shape("gumbel", shape), dtype=dt, mode=_gumbel_mode(mode)
    )


def _gumbel(key, shape, dtype, mode):
    finfo = ml_dtypes.finfo(dtype)
    if mode == "highest" and dtype == np.float32:
        raise NotImplementedError(
            "xform.random.gumbel: mode='highest' for float32 needs a "
            "count-leading-zeros primitive xform does not have"
        )
    if mode in ("high", "highest"):
        u = _uniform_jit(key, 0.0, 1.0, (2, *shape), dtype)
        high, low = u[0], u[1]
        x = xnp.where(high >= 0.5, high, high + 2.0**-finfo.nmant * low + finfo.tiny)
        return -xnp.log(-xnp.log1p(-x))
    return -xnp.log(-xnp.log(_uniform_jit(key, finfo.tiny, 1.0, shape, dtype)))


_gumbel_jit = jit(_gumbel, static_argnames=("shape", "dtype", "mode"))


@takes_out_sharding
def categorical(key, logits, axis=-1, shape=None, replace=True, mode=None):
    """Indices sampled from the categorical distributions of ``logits`` along ``axis`` (the
    Gumbel-max trick; Gumbel top-k without replacement), as ``jax.random.categorical``."""
    key = check_key("categorical", key)
    logits = xnp.asarray(logits)
    axis = _axis("categorical", axis, logits.ndim)
    batch_shape = tuple(np.delete(logits.shape, axis).tolist())
    if shape is None:
        shape = batch_shape
    else:
        shape = canonical_shape("categorical", shape)
        check_shape("categorical", shape, batch_shape)
    prefix = shape[: len(shape) - len(batch_shape)]
    if not replace and math.prod(prefix) > logits.shape[axis]:
        raise ValueError(
            f"xform.random.categorical: number of samples without replacement "
            f"({math.prod(prefix)}) cannot exceed number of categories "
            f"({logits.shape[axis]})"
        )
    return _categorical(
        key,
        logits,
        shape=shape,
        batch_shape=batch_shape,
        axis=axis,
        replace=bool(replace),
        mode=_gumbel_mode(mode),
        int_dtype=dtypes.default_int(),
    )


@functools.partial(
    jit, static_argnames=("shape", "batch_shape", "axis", "replace", "mode", "int_dtype")
)
def _categorical(key, logits, shape, batch_shape, axis, replace, mode, int_dtype):
    prefix = shape[: len(shape) - len(batch_shape)]
    if replace:
        axis -= logits.ndim
        logits_shape = list(shape[len(shape) - len(batch_shape) :])
        logits_shape.insert(axis % logits.ndim, logits.shape[axis])
        g = _gumbel(key, (*prefix, *logits_shape), logits.dtype, mode)
        out = xnp.argmax(g + lax.expand_dims(logits, tuple(range(len(prefix)))), axis=axis)
        return out.astype(int_dtype)
    logits = logits + _gumbel(key, logits.shape, logits.dtype, mode)
    _, indices = lax.top_k(xnp.moveaxis(logits, axis, -1), math.prod(prefix))
    dimensions = (indices.ndim - 1, *range(indices.ndim - 1))
    return lax.reshape(indices, shape, dimensions)


# --------------------------------------------------------------------------- gamma family


def _gamma_one(key, alpha, log_space):
    """One Gamma(alpha) draw by Marsaglia-Tsang rejection; alpha < 1 is boosted to alpha + 1
    and corrected by ``u ** (1 / alpha)``."""
    dtype = alpha.dtype
    zero, one = _const(dtype, 0), _const(dtype, 1)
    boost_mask = alpha >= one
    alpha_orig = alpha
    alpha = lax.select(boost_mask, alpha, alpha + one)
    d = alpha - _const(dtype, 1 / 3)
    c = _const(dtype, 1 / 3) / lax.sqrt(d)

    def reject(state):
        _, x, v, u = state
        return (u >= one - _const(dtype, 0.0331) * (x * x)) & (
            lax.log(u) >= x * _const(dtype, 0.5) + d * (one - v + lax.log(v))
        )

    def next_xv(state):
        key, _, _ = state
        key, subkey = _pair(key)
        x = _normal_real(subkey, (), dtype)
        return key, x, one + x * c

    def propose(state):
        key, x_key, u_key = _split(state[0], (3,))
        _, x, v = lax.while_loop(lambda s: s[2] <= zero, next_xv, (x_key, zero, _const(dtype, -1)))
        return key, x * x, v * v * v, _uniform(u_key, 0.0, 1.0, (), dtype)

    key, subkey = _pair(key)
    _, _, v, _ = lax.while_loop(reject, propose, (key, zero, one, _const(dtype, 2)))
    if log_space:
        log_u = lax.neg(_exponential(subkey, (), dtype))
        log_boost = lax.select(boost_mask | (log_u == zero), zero, log_u * (one / alpha_orig))
        return lax.log(d) + lax.log(v) + log_boost
    u = one - _uniform(subkey, 0.0, 1.0, (), dtype)
    boost = lax.select(boost_mask, one, lax.pow(u, one / alpha_orig))
    return d * v * boost


def gamma_sampler(key_data, a, *, log_space, impl):
    """What ``random_gamma_p`` computes (its lowering emits this): a Gamma(``a``) draw per
    element of ``a``, from keys split off the keys ``key_data`` (``uint32[*batch,
    *key_shape]``, ``batch`` a prefix of ``a.shape``), as JAX's ``_gamma_impl``."""
    impl = IMPLS[impl]
    batch = core.get_aval(key_data).shape[: -len(impl.key_shape)]
    size = math.prod(a.shape)
    if size == 0:
        return xnp.zeros(a.shape, a.dtype)
    count = size // max(math.prod(batch), 1)
    if batch:
        data = lax.reshape(key_data, (math.prod(batch), *impl.key_shape))
        data = vmap(lambda d: impl.split(d, (count,)))(data)
        data = lax.reshape(data, (size, *impl.key_shape))
    else:
        data = impl.split(key_data, (size,))
    keys = KeyArray(data, impl)
    one = functools.partial(_gamma_one, log_space=log_space)
    if impl is THREEFRY:
        return vmap(one)(keys, a.reshape(size)).reshape(a.shape)
    # rng_bit_generator batches by drawing every lane from the first lane's key (JAX's rule),
    # so other impls draw element by element, as JAX does.
    return lax.map(lambda args: one(*args), (keys, a.reshape(size))).reshape(a.shape)


# Its lowering is its composition, traced once per operand types and emitted as a private
# function, as JAX's (JAX also registers it beside the sampler).
@functools.lru_cache(maxsize=128)
def _gamma_jaxpr(avals_in, log_space, impl):
    def fn(key, a):
        return [gamma_sampler(key, a, log_space=log_space, impl=impl)]

    return trace_to_jaxpr(fn, list(avals_in), "tracing random_gamma for lowering")


def _random_gamma_lower(ctx, key, a, *, log_space, impl):
    closed = _gamma_jaxpr(tuple(ctx.avals_in), log_space, impl)
    return emit_call(ctx, [key, a], closed, "random_gamma")


lowering_rules[random_gamma_p] = _random_gamma_lower


def _gamma_impl(key, a, shape, dtype, log_space):
    a = xnp.broadcast_to(lax.convert_element_type(a, dtype), shape)
    return random_gamma_p.bind(key._data, a, log_space=log_space, impl=key._impl.name)


def _param_shape(name, shape, *params):
    param_shapes = [np.shape(p) for p in params]
    if shape is None:
        return xnp.broadcast_shapes(*param_shapes)
    shape = canonical_shape(name, shape)
    check_shape(name, shape, *param_shapes)
    return shape


@takes_out_sharding
def gamma(key, a, shape=None, dtype=None):
    """Gamma(a, 1) values (Marsaglia-Tsang, JAX's algorithm, one ``random_gamma_p``
    equation); differentiable in ``a`` by implicit reparameterization, as in JAX."""
    key = check_key("gamma", key)
    dt = canonical_dtype("gamma", dtype, float, "float")
    return _gamma(key, a, shape=_param_shape("gamma", shape, a), dtype=dt, log_space=False)


@takes_out_sharding
def loggamma(key, a, shape=None, dtype=None):
    """``log`` of Gamma(a, 1) values, computed in log space (accurate for small ``a``)."""
    key = check_key("loggamma", key)
    dt = canonical_dtype("loggamma", dtype, float, "float")
    return _gamma(key, a, shape=_param_shape("loggamma", shape, a), dtype=dt, log_space=True)


_gamma_impl.__name__ = _gamma_impl.__qualname__ = "_gamma"  # the name JAX's jit prints
_gamma = jit(_gamma_impl, static_argnames=("shape", "dtype", "log_space"))


@takes_out_sharding
def beta(key, a, b, shape=None, dtype=None):
    """Beta(a, b) values, as the ratio of two log-gamma draws (JAX's algorithm)."""
    key = check_key("beta", key)
    dt = canonical_dtype("beta", dtype, float, "float")
    return _beta(key, a, b, shape=_param_shape("beta", shape, a, b), dtype=dt)


@functools.partial(jit, static_argnames=("shape", "dtype"))
def _beta(key, a, b, shape, dtype):
    key_a, key_b = _pair(key)
    log_a = _gamma_impl(key_a, a, shape, dtype, True)
    log_b = _gamma_impl(key_b, b, shape, dtype, True)
    log_max = xnp.maximum(log_a, log_b)
    ga, gb = xnp.exp(log_a - log_max), xnp.exp(log_b - log_max)
    return ga / (ga + gb)


@takes_out_sharding
def dirichlet(key, alpha, shape=None, dtype=None):
    """Dirichlet(alpha) values over the last axis of ``alpha`` (normalized log-gamma draws)."""
    key = check_key("dirichlet", key)
    dt = canonical_dtype("dirichlet", dtype, float, "float")
    alpha_shape = np.shape(alpha)
    if len(alpha_shape) < 1:
        raise ValueError(
            f"xform.random.dirichlet requires alpha.ndim >= 1, got alpha.ndim == {len(alpha_shape)}"
        )
    if shape is None:
        shape = alpha_shape[:-1]
    else:
        shape = canonical_shape("dirichlet", shape)
        check_shape("dirichlet", shape, alpha_shape[:-1])
    return _dirichlet(key, alpha, shape=tuple(shape) + alpha_shape[-1:], dtype=dt)


@functools.partial(jit, static_argnames=("shape", "dtype"))
def _dirichlet(key, alpha, shape, dtype):
    x = _gamma_impl(key, alpha, shape, dtype, True)
    e = xnp.exp(x - lax.stop_gradient(xnp.max(x, axis=-1, keepdims=True)))
    return e / xnp.sum(e, axis=-1, keepdims=True)


# --------------------------------------------------------------------------- matrices


@takes_out_sharding
def multivariate_normal(key, mean, cov, shape=None, dtype=None, method="cholesky"):
    """Multivariate normal values ``mean + A @ z`` with ``A @ A^T == cov`` (shape
    ``shape + mean.shape[-1:]``): ``A`` is the Cholesky factor (``method='cholesky'``), or
    ``V sqrt(w)`` from ``eigh`` (``'eigh'``) or ``U sqrt(s)`` from ``svd`` (``'svd'``), which
    also take positive semi-definite ``cov``."""
    key = check_key("multivariate_normal", key)
    if method not in ("svd", "eigh", "cholesky"):
        raise ValueError(
            "xform.random.multivariate_normal: method must be one of {'svd', 'eigh', 'cholesky'}"
        )
    mean, cov = xnp.asarray(mean), xnp.asarray(cov)
    common = xnp.result_type(mean, cov)
    if not dtypes.is_inexact(common):
        common = dtypes.default_float()
    mean, cov = mean.astype(common), cov.astype(common)
    dt = canonical_dtype("multivariate_normal", dtype, mean.dtype, "float")
    if mean.ndim < 1:
        raise ValueError(
            f"xform.random.multivariate_normal requires mean.ndim >= 1, got "
            f"mean.ndim == {mean.ndim}"
        )
    if cov.ndim < 2:
        raise ValueError(
            f"xform.random.multivariate_normal requires cov.ndim >= 2, got cov.ndim == {cov.ndim}"
        )
    n = mean.shape[-1]
    if cov.shape[-2:] != (n, n):
        raise ValueError(
            f"xform.random.multivariate_normal requires cov.shape == (..., n, n) "
            f"for n={n}, but got cov.shape == {cov.shape}"
        )
    if shape is None:
        shape = xnp.broadcast_shapes(mean.shape[:-1], cov.shape[:-2])
    else:
        shape = canonical_shape("multivariate_normal", shape)
        check_shape("multivariate_normal", shape, mean.shape[:-1], cov.shape[:-2])
    return _multivariate_normal(key, mean, cov, shape=tuple(shape), dtype=dt, method=method)


@functools.partial(jit, static_argnames=("shape", "dtype", "method"))
def _multivariate_normal(key, mean, cov, shape, dtype, method):
    if method == "cholesky":
        factor = xnp.linalg.cholesky(cov)
    elif method == "eigh":
        w, v = xnp.linalg.eigh(cov)
        factor = v * xnp.sqrt(w[..., None, :])
    else:
        u, s, _ = xnp.linalg.svd(cov)
        factor = u * xnp.sqrt(s[..., None, :])
    z = _normal(key, shape + mean.shape[-1:], dtype)
    return mean + xnp.einsum("...ij,...j->...i", factor, z)


@takes_out_sharding
def orthogonal(key, n, shape=(), dtype=None, m=None):
    """A matrix uniform on the orthogonal group O(n) (unitary for complex dtypes; for
    ``m != n`` semi-orthogonal), of shape ``(*shape, n, m)``: the Q of a normal matrix with
    R's diagonal made positive, as ``jax.random.orthogonal``."""
    key = check_key("orthogonal", key)
    shape = canonical_shape("orthogonal", shape)
    dt = canonical_dtype("orthogonal", dtype, float, "inexact")
    n = int(n)
    m = n if m is None else int(m)
    return _orthogonal(key, shape=shape, dtype=dt, n=n, m=m)


@functools.partial(jit, static_argnames=("shape", "dtype", "n", "m"))
def _orthogonal(key, shape, dtype, n, m):
    z = _normal(key, (*shape, max(n, m), min(n, m)), dtype)
    q, r = xnp.linalg.qr(z)
    d = xnp.diagonal(r, 0, -2, -1)
    q = q * (d / xnp.abs(d).astype(d.dtype))[..., None, :]  # R's diagonal made positive
    return xnp.swapaxes(q, -1, -2) if n < m else q
