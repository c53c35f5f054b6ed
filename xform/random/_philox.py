"""The Philox PRNG implementations of Random123, as JAX's ``impl='philox2x32'`` and
``impl='philox4x32'`` (below). Philox 2x32 (10 rounds): a key is one uint32 word; the hash
maps a 64-bit counter, as two uint32 words, to two words. The hashes are compositions of
``xform.lax`` uint32 ops (multiplies, their high words, xors), so they run eagerly and
under every transformation.

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


# --------------------------------------------------------------------------- philox4x32
# Philox 4x32 (10 rounds): a key is two words; the hash maps four counter words to four.
# ``split`` hashes the counter (0, 0, high, low) and keeps two words, ``fold_in`` hashes
# (0, 0, 0, data), ``random_bits`` hashes (high, low, 0, 0) and xors all four words
# (64-bit: first word << 32 | second word), as JAX's ``impl='philox4x32'``.

KEY_SHAPE_4X32 = (2,)
_MULTIPLIERS_4X32 = (np.uint32(0xD2511F53), np.uint32(0xCD9E8D57))
_KEY_BUMPS_4X32 = (np.uint32(0x9E3779B9), np.uint32(0xBB67AE85))


def philox4x32(k0, k1, x0, x1, x2, x3):
    """The Philox 4x32 hash of four counter words (of one shape) under the key words
    ``(k0, k1)`` (scalars); returns four words."""
    shape = np.shape(x0)

    def full(v):
        return lax.full(shape, v, np.uint32)

    k0, k1 = (lax.broadcast_in_dim(k, shape, ()) for k in (k0, k1))
    m0, m1 = (full(m) for m in _MULTIPLIERS_4X32)
    w0, w1 = (full(w) for w in _KEY_BUMPS_4X32)
    for r in range(_ROUNDS):
        if r:
            k0, k1 = lax.add(k0, w0), lax.add(k1, w1)
        lo0, hi0 = lax.mul(m0, x0), lax.mulhi(m0, x0)
        lo1, hi1 = lax.mul(m1, x2), lax.mulhi(m1, x2)
        x0, x1 = lax.bitwise_xor(lax.bitwise_xor(hi1, x1), k0), lo1
        x2, x3 = lax.bitwise_xor(lax.bitwise_xor(hi0, x3), k1), lo0
    return x0, x1, x2, x3


def _words(key):
    return tuple(lax.index_in_dim(key, i, keepdims=False) for i in (0, 1))


def _stacked(a, b, axis):
    return lax.concatenate([lax.expand_dims(a, (axis,)), lax.expand_dims(b, (axis,))], axis)


def seed_4x32(seed_value):
    """The key ``uint32[2]`` of an integer scalar seed."""
    hi, lo = _words(_threefry.seed(seed_value))
    zero = lax.full((), 0, np.uint32)
    out = philox4x32(zero, zero, hi, lo, zero, zero)
    return _stacked(out[0], out[1], 0)


def split_4x32(key, shape):
    """``shape`` new keys from ``key``: a ``uint32[*shape, 2]`` array."""
    hi, lo = _threefry._counters(shape)
    zeros = lax.full(shape, 0, np.uint32)
    out = philox4x32(*_words(key), zeros, zeros, hi, lo)
    return _stacked(out[0], out[1], len(shape))


def fold_in_4x32(key, data):
    """A new key from ``key`` and the uint32 scalar ``data``."""
    zero = lax.full((), 0, np.uint32)
    out = philox4x32(*_words(key), zero, zero, zero, data)
    return _stacked(out[0], out[1], 0)


def random_bits_4x32(key, bit_width, shape):
    """Uniform random bits ``uint{bit_width}[*shape]`` (``bit_width`` in 8, 16, 32, 64)."""
    hi, lo = _threefry._counters(shape)
    zeros = lax.full(shape, 0, np.uint32)
    out = philox4x32(*_words(key), hi, lo, zeros, zeros)
    dtype = _threefry.UINT_DTYPES[bit_width]
    if bit_width == 64:
        out0, out1 = (lax.convert_element_type(o, dtype) for o in out[:2])
        return lax.bitwise_or(lax.shift_left(out0, np.uint64(32)), out1)
    bits = lax.bitwise_xor(lax.bitwise_xor(out[0], out[1]), lax.bitwise_xor(out[2], out[3]))
    return bits if bit_width == 32 else lax.convert_element_type(bits, dtype)
