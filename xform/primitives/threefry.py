"""The threefry2x32 hash as one primitive, ``threefry2x32_p``, as JAX has it
(``jax.extend.random.threefry2x32_p``).

``threefry2x32(k1, k2, x1, x2)`` hashes the counter words ``(x1, x2)`` under the key words
``(k1, k2)`` (uint32 operands that broadcast as ``lax``'s elementwise ops do) with 20 rounds
of Threefry-2x32, and returns two uint32 words of the broadcast shape. Its bits are JAX's.

Being one equation instead of ~100 keeps jaxprs small, and lets the lowering emit the hash
once per module and operand types as a private function reached by ``func.call``
(``lowering/threefry.py``), as JAX does: a sampler that draws inside a loop then carries a
call, not a copy of the rounds. The outputs are integers, so the JVP is zero; the hash works
on each element, so the batching rule broadcasts.
"""

import numpy as np

from xform import dtypes
from xform.core import ShapedArray
from xform.interpret import ad, batching
from xform.primitives.base import broadcast_elementwise_shapes, standard_primitive

__all__ = ["threefry2x32", "threefry2x32_p"]

ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
PARITY = 0x1BD11BDA  # threefry's key-schedule constant


def threefry2x32(k1, k2, x1, x2):
    """The Threefry-2x32 hash (20 rounds) of the counters ``(x1, x2)`` under the key
    ``(k1, k2)``.

    Args:
      k1, k2: the key words, uint32 arrays (usually rank 0).
      x1, x2: the counter words, uint32 arrays.

    Returns:
      Two uint32 arrays of the operands' broadcast shape: the hashed words.

    Example:
      >>> threefry2x32(np.uint32(0), np.uint32(42), np.zeros(2, np.uint32),
      ...              np.arange(2, dtype=np.uint32))
    """
    return threefry2x32_p.bind(k1, k2, x1, x2)


def _threefry2x32_abstract_eval(k1, k2, x1, x2):
    avals = (k1, k2, x1, x2)
    if any(a.dtype != dtypes.uint32 for a in avals):
        got = ", ".join(f"{a.dtype}{list(a.shape)}" for a in avals)
        raise TypeError(f"Arguments to threefry2x32 must have uint32 type, got {got}")
    shape = broadcast_elementwise_shapes("threefry2x32", avals)
    out = ShapedArray(shape, dtypes.uint32)
    return [out, out]


def _rotate_left(x, r):
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def _threefry2x32_host(k1, k2, x1, x2):
    k1, k2, x1, x2 = np.broadcast_arrays(*(np.asarray(v, np.uint32) for v in (k1, k2, x1, x2)))
    ks = (k1, k2, k1 ^ k2 ^ np.uint32(PARITY))
    x1 = x1 + ks[0]  # uint32 arithmetic wraps, as XLA's does
    x2 = x2 + ks[1]
    for i in range(1, 6):
        for r in ROTATIONS[(i - 1) % 2]:
            x1 = x1 + x2
            x2 = x1 ^ _rotate_left(x2, r)
        x1 = x1 + ks[i % 3]
        x2 = x2 + ks[(i + 1) % 3] + np.uint32(i)
    return [x1, x2]


threefry2x32_p = standard_primitive(
    "threefry2x32", _threefry2x32_abstract_eval, _threefry2x32_host, multiple_results=True
)

# --------------------------------------------------------------------------- jvp rule
# Integer outputs: nothing to differentiate.

ad.defjvp_zero(threefry2x32_p)

# --------------------------------------------------------------------------- batching rule

batching.defbroadcasting(threefry2x32_p)
