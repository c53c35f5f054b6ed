"""The threefry2x32 counter-based hash and the key operations built on it.

Everything here is a composition of ``xform.lax`` uint32 primitives (add, xor, shifts), so it
runs eagerly and under ``jit``, ``vmap`` and ``pmap`` alike. The bits equal JAX's default PRNG
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

KEY_SHAPE = (2,)
UINT_DTYPES = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16), 32: np.dtype(np.uint32),
               64: np.dtype(np.uint64)}

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_PARITY = np.uint32(0x1BD11BDA)  # threefry's key-schedule constant


def _u32(v):
    return np.uint32(v)


def _rotate_left(x, r):
    return lax.bitwise_or(lax.shift_left(x, _u32(r)), lax.shift_right_logical(x, _u32(32 - r)))


def _rounds(x1, x2, rotations):
    for r in rotations:
        x1 = lax.add(x1, x2)
        x2 = lax.bitwise_xor(x1, _rotate_left(x2, r))
    return x1, x2


def threefry2x32(k1, k2, x1, x2):
    """The threefry2x32 hash (20 rounds) of the counter words ``(x1, x2)`` under the key
    ``(k1, k2)``; uint32 operands of one shape (rank-0 keys broadcast). Returns two words.

    The rounds are unrolled: a rolled ``fori_loop`` (JAX's choice on CPU) measured no faster
    at run time here and slower to compile over the sampler test suite."""
    ks = (k1, k2, lax.bitwise_xor(lax.bitwise_xor(k1, k2), _PARITY))
    x1 = lax.add(x1, ks[0])
    x2 = lax.add(x2, ks[1])
    for i in range(1, 6):
        x1, x2 = _rounds(x1, x2, _ROTATIONS[(i - 1) % 2])
        x1 = lax.add(x1, ks[i % 3])
        x2 = lax.add(lax.add(x2, ks[(i + 1) % 3]), _u32(i))
    return x1, x2


def _counters(shape):
    """The 64-bit row-major index of every position of ``shape`` as (high, low) uint32 words."""
    size = math.prod(shape)
    if size >= 2 ** 32:
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
            lax.shift_right_logical(seed_value, np.array(32, dtype)), np.uint32)
        lo = lax.convert_element_type(
            lax.bitwise_and(seed_value, np.array(0xFFFFFFFF, dtype)), np.uint32)
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
            raise ValueError("xform.random: 64-bit random bits need x64 mode "
                             "(xform.config.update('enable_x64', True))")
        b1 = lax.convert_element_type(b1, dtype)
        b2 = lax.convert_element_type(b2, dtype)
        return lax.bitwise_or(lax.shift_left(b1, np.uint64(32)), b2)
    bits = lax.bitwise_xor(b1, b2)
    return bits if bit_width == 32 else lax.convert_element_type(bits, dtype)
