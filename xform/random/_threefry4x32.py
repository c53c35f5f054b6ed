"""The threefry4x32 PRNG implementation (Random123's Threefry 4x32, 20 rounds), as JAX's
``impl='threefry4x32'``: a key is four uint32 words; the hash maps four counter words to
four, as a composition of ``xform.lax`` uint32 ops (adds, rotations, xors).

- ``seed(s)``: the hash of the zero counter under the key (high, low, 0, 0) of the seed;
- ``split(key, shape)``: the hash of the counter (0, 0, high, low) of each position;
- ``fold_in(key, data)``: the hash of the counter (0, 0, 0, data);
- ``random_bits``: the hash of (high, low, 0, 0), its four words xored (64-bit: words 0
  and 2 xored, << 32, or words 1 and 3 xored).
"""

import numpy as np

from xform import lax
from xform.random import _threefry

KEY_SHAPE = (4,)
# Each round rotates by one pair of these (Threefish's R_32x4), repeating every 8 rounds.
_ROTATIONS = ((10, 26), (11, 21), (13, 27), (23, 5), (6, 20), (17, 11), (25, 10), (18, 20))
_PARITY = np.uint32(0x1BD11BDA)  # the key schedule's fifth word is the others' xor with it
_ROUNDS = 20


def threefry4x32(key_words, counter):
    """The Threefry 4x32 hash of four counter words (of one shape) under four key words
    (scalars); returns four words."""
    shape = np.shape(counter[0])

    def full(v):
        return lax.full(shape, v, np.uint32)

    def rotl(x, d):
        return lax.bitwise_or(lax.shift_left(x, full(d)), lax.shift_right_logical(x, full(32 - d)))

    ks = [lax.broadcast_in_dim(k, shape, ()) for k in key_words]
    fifth = full(_PARITY)
    for k in ks:
        fifth = lax.bitwise_xor(fifth, k)
    ks.append(fifth)
    x = [lax.add(c, k) for c, k in zip(counter, ks, strict=False)]
    for r in range(_ROUNDS):
        rot0, rot1 = _ROTATIONS[r % 8]
        # even rounds mix words (0, 1) and (2, 3); odd rounds (0, 3) and (2, 1)
        a, b, c, d = (0, 1, 2, 3) if r % 2 == 0 else (0, 3, 2, 1)
        x[a] = lax.add(x[a], x[b])
        x[b] = lax.bitwise_xor(x[a], rotl(x[b], rot0))
        x[c] = lax.add(x[c], x[d])
        x[d] = lax.bitwise_xor(x[c], rotl(x[d], rot1))
        if r % 4 == 3:  # key injection
            i = r // 4
            x = [lax.add(x[j], ks[(j + 1 + i) % 5]) for j in range(4)]
            x[3] = lax.add(x[3], full(np.uint32(1 + i)))
    return x


def _words(key):
    return [lax.index_in_dim(key, i, keepdims=False) for i in range(4)]


def _stacked(words, axis):
    return lax.concatenate([lax.expand_dims(w, (axis,)) for w in words], axis)


def seed(seed_value):
    """The key ``uint32[4]`` of an integer scalar seed."""
    hi, lo = (lax.index_in_dim(_threefry.seed(seed_value), i, keepdims=False) for i in (0, 1))
    zero = lax.full((), 0, np.uint32)
    return _stacked(threefry4x32([hi, lo, zero, zero], [zero] * 4), 0)


def split(key, shape):
    """``shape`` new keys from ``key``: a ``uint32[*shape, 4]`` array."""
    hi, lo = _threefry._counters(shape)
    zeros = lax.full(shape, 0, np.uint32)
    return _stacked(threefry4x32(_words(key), [zeros, zeros, hi, lo]), len(shape))


def fold_in(key, data):
    """A new key from ``key`` and the uint32 scalar ``data``."""
    zero = lax.full((), 0, np.uint32)
    return _stacked(threefry4x32(_words(key), [zero, zero, zero, data]), 0)


def random_bits(key, bit_width, shape):
    """Uniform random bits ``uint{bit_width}[*shape]`` (``bit_width`` in 8, 16, 32, 64)."""
    hi, lo = _threefry._counters(shape)
    zeros = lax.full(shape, 0, np.uint32)
    out = threefry4x32(_words(key), [hi, lo, zeros, zeros])
    dtype = _threefry.UINT_DTYPES[bit_width]
    if bit_width == 64:
        high, low = (
            lax.convert_element_type(lax.bitwise_xor(out[i], out[i + 2]), dtype) for i in (0, 1)
        )
        return lax.bitwise_or(lax.shift_left(high, np.uint64(32)), low)
    bits = lax.bitwise_xor(lax.bitwise_xor(out[0], out[1]), lax.bitwise_xor(out[2], out[3]))
    return bits if bit_width == 32 else lax.convert_element_type(bits, dtype)
