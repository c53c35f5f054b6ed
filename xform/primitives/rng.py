"""XLA's own random number generators: ``rng_bit_generator`` and ``rng_uniform``.

``rng_bit_generator`` is XLA's stateless ``RngBitGenerator``: from a key (``uint32[4]``, or
``uint64[2]`` with x64) it returns the next key and a block of random bits, with the
algorithm a ``RandomAlgorithm`` names. The bits are XLA's, so there is no NumPy host
implementation: eagerly the one equation is compiled, and the bits equal JAX's for the same
key, algorithm, shape and dtype. ``rng_uniform`` is XLA's stateful ``Rng`` (uniform in
``[a, b)``); its values are not reproducible, in JAX either.

Neither is differentiable (their outputs are bits, or samples that do not depend smoothly on
anything); their JVPs give zero tangents, or raise as JAX does for ``rng_uniform``'s bounds.
"""

import enum

import numpy as np

from xform import core, dtypes
from xform.core import ShapedArray, get_aval
from xform.interpret import ad, batching
from xform.primitives.base import as_shape, standard_primitive, user_dtype
from xform.primitives.comparisons import eq, select
from xform.primitives.elementwise import div, mul
from xform.primitives.indexing import dynamic_update_index_in_dim, index_in_dim
from xform.primitives.special import random_gamma_grad
from xform.primitives.structural import full_like
from xform.primitives.transcendental import exp

__all__ = ["RandomAlgorithm", "rng_bit_generator", "rng_uniform"]  # random_gamma_p: lax has it


class RandomAlgorithm(enum.IntEnum):
    """The algorithm ``rng_bit_generator`` runs."""

    RNG_DEFAULT = 0  # the platform's default
    RNG_THREE_FRY = 1  # Threefry-2x32
    RNG_PHILOX = 2  # Philox-4x32

    def __str__(self):
        return self.name


_BIT_DTYPES = (dtypes.uint8, dtypes.uint16, dtypes.uint32, dtypes.uint64)


# --------------------------------------------------------------------------- rng_bit_generator


def rng_bit_generator(
    key, shape, dtype=np.uint32, algorithm=RandomAlgorithm.RNG_DEFAULT, *, out_sharding=None
):
    """XLA's stateless random bit generator.

    Args:
      key: a ``uint32[4]`` key (or ``uint64[2]``).
      shape: the shape of the bits.
      dtype: an unsigned integer dtype (``uint8`` to ``uint64``).
      algorithm: a ``RandomAlgorithm``.
      out_sharding: accepted for JAX's signature; must be None.

    Returns:
      ``(new_key, bits)``: the next key (the key's type) and the random bits.

    Example:
      >>> new_key, bits = rng_bit_generator(np.zeros(4, np.uint32), (2, 3))
    """
    shape = as_shape(shape, "rng_bit_generator")
    dtype = user_dtype(dtype, "rng_bit_generator")
    if dtype not in _BIT_DTYPES:
        raise TypeError(
            f"rng_bit_generator: unsupported dtype {dtype}; the bits must be "
            "uint8, uint16, uint32 or uint64"
        )
    if out_sharding is not None:
        raise NotImplementedError("rng_bit_generator: out_sharding is not supported by xform")
    return tuple(
        rng_bit_generator_p.bind(
            key, shape=shape, dtype=dtype, algorithm=RandomAlgorithm(algorithm)
        )
    )


def _rng_bit_generator_abstract_eval(key, *, shape, dtype, algorithm):
    if not (
        (key.shape == (4,) and key.dtype == dtypes.uint32)
        or (key.shape == (2,) and key.dtype == dtypes.uint64)
    ):
        raise TypeError(
            f"rng_bit_generator: the key must be uint32[4] or uint64[2], got {key.str_short()}"
        )
    return [ShapedArray(key.shape, key.dtype, key.weak_type), ShapedArray(shape, dtype)]


rng_bit_generator_p = standard_primitive(
    "rng_bit_generator", _rng_bit_generator_abstract_eval, multiple_results=True
)
ad.defjvp_zero(rng_bit_generator_p)


def _rng_bit_generator_batch(axis, args, dims, *, shape, dtype, algorithm):
    # JAX's rule: the first lane's key draws the bits of every lane at once (one call with a
    # leading batch dimension), and only that lane's key advances.
    (keys,), (d,) = args, dims
    keys = batching.moveaxis(keys, d, 0)
    new_key, bits = rng_bit_generator_p.bind(
        index_in_dim(keys, 0, keepdims=False),
        shape=(axis.size, *shape),
        dtype=dtype,
        algorithm=algorithm,
    )
    return [dynamic_update_index_in_dim(keys, new_key, 0, 0), bits], [0, 0]


batching.batch_rules[rng_bit_generator_p] = _rng_bit_generator_batch


# --------------------------------------------------------------------------- rng_uniform


def rng_uniform(a, b, shape):
    """XLA's stateful uniform generator: samples in ``[a, b)`` of the given shape (``a`` and
    ``b`` scalars of one dtype). Not reproducible; use ``xform.random`` instead.

    Example:
      >>> rng_uniform(np.float32(0), np.float32(1), (3,))  # three floats in [0, 1)
    """
    return rng_uniform_p.bind(a, b, shape=as_shape(shape, "rng_uniform"))


def _rng_uniform_abstract_eval(a, b, *, shape):
    if a.dtype != b.dtype:
        raise ValueError(
            f"Arguments to rng_uniform must have identical dtypes, got {a.dtype} and {b.dtype}."
        )
    if a.shape != () or b.shape != ():
        raise ValueError(
            f"Arguments to rng_uniform must be scalars; got shapes {a.shape} and {b.shape}."
        )
    return [ShapedArray(shape, a.dtype, a.weak_type and b.weak_type)]


rng_uniform_p = standard_primitive("rng_uniform", _rng_uniform_abstract_eval)


def _rng_uniform_jvp(primals, tangents, *, shape):
    if any(type(t) is not ad.Zero for t in tangents):
        raise NotImplementedError("Differentiation rule for 'rng_uniform' not implemented")
    out = rng_uniform_p.bind(*primals, shape=shape)
    return [out], [ad.Zero(ad.tangent_aval(get_aval(out)))]


ad.jvp_rules[rng_uniform_p] = _rng_uniform_jvp


def _rng_uniform_batch(axis, args, dims, *, shape):
    # Only reached with a batched bound: XLA's Rng takes scalar bounds (JAX has no rule).
    raise NotImplementedError(
        "rng_uniform: vmap over the bounds a and b is not supported "
        "(XLA's Rng takes scalar bounds); use xform.random.uniform"
    )


batching.batch_rules[rng_uniform_p] = _rng_uniform_batch


# --------------------------------------------------------------------------- random_gamma
# A Gamma(``a``) draw per element of ``a`` from keys split off ``key`` (``xform.random.gamma``):
# one equation, as JAX's. Its lowering is its composition, the Marsaglia-Tsang sampler, which
# xform.random registers beside the sampler (JAX does the same); it has no host impl: eagerly
# the one equation is compiled, as under jit.

# PRNG implementation name -> the shape of its key data (registered by xform.random's impls)
key_shapes = {}


def _random_gamma_abstract_eval(key, a, *, log_space, impl):
    key_shape = key_shapes[impl]
    if key.dtype != dtypes.uint32 or key.shape[key.ndim - len(key_shape) :] != key_shape:
        raise TypeError(
            f"random_gamma: the key must be {impl} key data, uint32[..., "
            f"{key_shape[0]}], got {key.dtype}{list(key.shape)}"
        )
    batch = key.shape[: key.ndim - len(key_shape)]
    if not dtypes.is_float(a.dtype) or a.shape[: len(batch)] != batch:
        raise TypeError(
            f"random_gamma: `a` must be a float array whose shape starts with the "
            f"keys' shape {batch}, got {a.dtype}{list(a.shape)}"
        )
    return [a]


# No host impl: eagerly the one equation is compiled, as under jit (gamma_sampler).
random_gamma_p = standard_primitive("random_gamma", _random_gamma_abstract_eval)


random_gamma_p = standard_primitive("random_gamma", _random_gamma_abstract_eval)


def _gamma_grad(sample, a, log_space):
    """d sample / d a at fixed uniform draws (implicit reparameterization), JAX's rule."""
    if not log_space:
        return random_gamma_grad(a, sample)
    # d log(sample) = d sample / sample; exp may round to 0: use the smallest normal instead
    sample = exp(sample)
    tiny = full_like(sample, dtypes.finfo(sample.dtype).tiny)
    sample = select(eq(sample, full_like(sample, 0)), tiny, sample)
    return div(random_gamma_grad(a, sample), sample)


def _random_gamma_jvp(primals, tangents, *, log_space, impl):
    key, a = primals
    out = random_gamma_p.bind(key, a, log_space=log_space, impl=impl)
    t = tangents[1]
    if type(t) is ad.Zero:
        return [out], [ad.Zero(ad.tangent_aval(core.get_aval(out)))]
    return [out], [mul(t, _gamma_grad(out, a, log_space))]


ad.jvp_rules[random_gamma_p] = _random_gamma_jvp


def _random_gamma_batch(axis, args, dims, *, log_space, impl):
    size = next(
        core.get_aval(x).shape[d]
        for x, d in zip(args, dims, strict=True)
        if d is not batching.not_mapped
    )
    key, a = (batching.batch_at_front(x, d, size) for x, d in zip(args, dims, strict=True))
    return [random_gamma_p.bind(key, a, log_space=log_space, impl=impl)], [0]


batching.batch_rules[random_gamma_p] = _random_gamma_batch
