"""The philox2x32 PRNG implementation (Random123's Philox 2x32, 10 rounds), as JAX's
``impl='philox2x32'``: a key is one uint32 word; the hash maps a 64-bit counter, as two
uint32 words, to two words. The hash is a composition of ``xform.lax`` uint32 ops (a
multiply, its high word, xors), so it runs eagerly and under every transformation.

- ``seed(s)``: the first word of the hash of the seed's (high, low) words under key 0;
- ``split(key, shape)``: the first word of the hash of each position's counter;
- ``fold_in(key, data)``: the first word of the hash of the counter ``(0, data)``;
- ``random_bits``: the xor of the two words (64-bit: first word << 32 | second word).
"""

import numpy as np

from xform import lax
from xform.random import _threefry

KEY_SHAPE = (1,)
_MULTIPLIER = np.uint32(0xD256D193)
_KEY_BUMP = np.uint32(0x9E3779B9)  # the Weyl increment of the key between rounds
_ROUNDS = 10


def philox2x32(k0, x0, x1):
    """The Philox 2x32 hash of the counter words ``(x0, x1)`` (of one shape) under the key
    word ``k0`` (a scalar); returns two words."""
    shape = np.shape(x0)
    k0 = lax.broadcast_in_dim(k0, shape, ())
    m = lax.full(shape, _MULTIPLIER, np.uint32)
    bump = lax.full(shape, _KEY_BUMP, np.uint32)
    for r in range(_ROUNDS):
        if r:
            k0 = lax.add(k0, bump)
        lo, hi = lax.mul(m, x0), lax.mulhi(m, x0)
        x0, x1 = lax.bitwise_xor(lax.bitwise_xor(hi, x1), k0), lo
    return x0, x1


def _first(key):
    return lax.index_in_dim(key, 0, keepdims=False)


def seed(seed_value):
    """The key ``uint32[1]`` of an integer scalar seed."""
    hi, lo = (lax.index_in_dim(_threefry.seed(seed_value), i, keepdims=False) for i in (0, 1))
    out0, _ = philox2x32(lax.full((), 0, np.uint32), hi, lo)
    return lax.expand_dims(out0, (0,))


def split(key, shape):
    """``shape`` new keys from ``key``: a ``uint32[*shape, 1]`` array."""
    out0, _ = philox2x32(_first(key), *_threefry._counters(shape))
    return lax.expand_dims(out0, (len(shape),))


def fold_in(key, data):
    """A new key from ``key`` and the uint32 scalar ``data``."""
    out0, _ = philox2x32(_first(key), lax.full((), 0, np.uint32), data)
    return lax.expand_dims(out0, (0,))


def random_bits(key, bit_width, shape):
    """Uniform random bits ``uint{bit_width}[*shape]`` (``bit_width`` in 8, 16, 32, 64)."""
    out0, out1 = philox2x32(_first(key), *_threefry._counters(shape))
    dtype = _threefry.UINT_DTYPES[bit_width]
    if bit_width == 64:
        out0 = lax.convert_element_type(out0, dtype)
        out1 = lax.convert_element_type(out1, dtype)
        return lax.bitwise_or(lax.shift_left(out0, np.uint64(32)), out1)
    bits = lax.bitwise_xor(out0, out1)
    return bits if bit_width == 32 else lax.convert_element_type(bits, dtype)
