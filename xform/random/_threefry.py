"""The threefry2x32 counter-based hash and the key operations built on it.

The hash is one primitive, ``threefry2x32_p``, with a NumPy host impl, a broadcasting batch
rule and an outlined lowering; the rest is ``xform.lax`` uint32 ops, so everything runs
eagerly and under ``jit``, ``vmap`` and ``pmap`` alike. The bits equal JAX's default PRNG
(``threefry2x32`` with ``jax_threefry_partitionable=True``, the default since JAX 0.5): a key
``(k1, k2)`` hashes the 64-bit counter of every output position, split into its high and low
32-bit words, and

- ``split(key, shape)`` stacks the two hashed words of each position into a new key;
- ``random_bits(key, 32, shape)`` is the xor of the two words (64-bit: high word << 32 | low
  word; 8- and 16-bit: the xor truncated);
- ``fold_in(key, data)`` hashes the counter pair ``(0, data)``.

Keys are raw ``uint32[2]`` arrays, as JAX's legacy ``PRNGKey``.
"""

import math

import numpy as np

from xform import config, lax
from xform.primitives.threefry import threefry2x32_p

KEY_SHAPE = (2,)
UINT_DTYPES = {
    8: np.dtype(np.uint8),
    16: np.dtype(np.uint16),
    32: np.dtype(np.uint32),
    64: np.dtype(np.uint64),
}


def threefry2x32(k1, k2, x1, x2):
    """The threefry2x32 hash (20 rounds) of the counter words ``(x1, x2)`` under the key
    ``(k1, k2)``: one ``threefry2x32_p`` equation (``xform/primitives/threefry.py``), lowered
    as a private function called at each use, as JAX's. Returns two words."""
    return threefry2x32_p.bind(k1, k2, x1, x2)


def _counters(shape):
    """The 64-bit row-major index of every position of ``shape`` as (high, low) uint32 words."""
    size = math.prod(shape)
    if size >= 2**32:
        raise NotImplementedError(f"xform.random: arrays of {size} >= 2**32 random values")
    lo = lax.reshape(lax.iota(np.uint32, size), shape)
    hi = lax.full(shape, 0, np.uint32)
    return hi, lo


def _key_words(key):
    return lax.index_in_dim(key, 0, keepdims=False), lax.index_in_dim(key, 1, keepdims=False)


def seed(seed_value):
    """The raw key ``uint32[2]`` of an integer scalar seed: its high and low 32-bit words
    (a seed narrower than 64 bits has a zero high word)."""
    dtype = np.dtype(seed_value.dtype)
    if dtype.itemsize == 8:
        hi = lax.convert_element_type(
            lax.shift_right_logical(seed_value, np.array(32, dtype)), np.uint32
        )
        lo = lax.convert_element_type(
            lax.bitwise_and(seed_value, np.array(0xFFFFFFFF, dtype)), np.uint32
        )
    else:
        lo = lax.convert_element_type(seed_value, np.uint32)
        hi = lax.full((), 0, np.uint32)
    return lax.concatenate([lax.expand_dims(hi, (0,)), lax.expand_dims(lo, (0,))], 0)


def split(key, shape):
    """``shape`` new keys from ``key``: a ``uint32[*shape, 2]`` array."""
    k1, k2 = _key_words(key)
    hi, lo = _counters(shape)
    b1, b2 = threefry2x32(k1, k2, hi, lo)
    n = len(shape)
    return lax.concatenate([lax.expand_dims(b1, (n,)), lax.expand_dims(b2, (n,))], n)


def fold_in(key, data):
    """A new key from ``key`` and the uint32 scalar ``data``."""
    k1, k2 = _key_words(key)
    b1, b2 = threefry2x32(k1, k2, lax.full((), 0, np.uint32), data)
    return lax.concatenate([lax.expand_dims(b1, (0,)), lax.expand_dims(b2, (0,))], 0)


def random_bits(key, bit_width, shape):
    """Uniform random bits ``uint{bit_width}[*shape]`` (``bit_width`` in 8, 16, 32, 64)."""
    k1, k2 = _key_words(key)
    hi, lo = _counters(shape)
    b1, b2 = threefry2x32(k1, k2, hi, lo)
    dtype = UINT_DTYPES[bit_width]
    if bit_width == 64:
        if not config.x64_enabled():
            raise ValueError(
                "xform.random: 64-bit random bits need x64 mode "
                "(xform.config.update('enable_x64', True))"
            )
        b1 = lax.convert_element_type(b1, dtype)
        b2 = lax.convert_element_type(b2, dtype)
        return lax.bitwise_or(lax.shift_left(b1, np.uint64(32)), b2)
    bits = lax.bitwise_xor(b1, b2)
    return bits if bit_width == 32 else lax.convert_element_type(bits, dtype)
