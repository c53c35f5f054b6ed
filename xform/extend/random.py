"""The PRNG's primitive and hash, as ``jax.extend.random`` names them."""

import numpy as np

import xform.numpy as jnp
from xform.primitives.threefry import threefry2x32_p

__all__ = ["threefry2x32_p", "threefry_2x32"]


def threefry_2x32(keypair, count):
    """The Threefry-2x32 hash of ``count`` under ``keypair``.

    Args:
      keypair: two uint32 scalars, the key.
      count: a uint32 array of counters.

    Returns:
      A uint32 array of ``count``'s shape. The flattened counters are hashed as two halves
      (the first half's words paired with the second's, a zero appended to an odd count), so
      the bits are those of JAX's ``threefry_2x32``.
    """
    key1, key2 = (jnp.asarray(k) for k in keypair)
    count = jnp.asarray(count)
    got = [key1.dtype, key2.dtype, count.dtype]
    if any(d != np.uint32 for d in got):
        raise TypeError(f"threefry_2x32 requires uint32 arguments, got {got}")
    flat = count.ravel()
    odd = flat.shape[0] % 2
    if odd:
        flat = jnp.concatenate([flat, jnp.zeros(1, np.uint32)])
    first, second = jnp.split(flat, 2)
    out = jnp.concatenate(threefry2x32_p.bind(key1, key2, first, second))
    return (out[:-1] if odd else out).reshape(count.shape)
