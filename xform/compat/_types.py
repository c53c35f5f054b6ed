"""``jax.Array`` under ``xform.compat``: what JAX libraries mean by "an array".

In JAX, concrete arrays, tracers and typed PRNG key arrays are all ``jax.Array``; flax and
equinox rely on it (flax accepts ``jax.random.key(0)`` only if it is a ``jnp.ndarray``). In
xform, typed keys are a separate class (``KeyArray``: xform's own code must not mistake them
for ``xform.Array``), so ``jax.Array`` and ``jax.numpy.ndarray`` are this class under compat
mode: its ``isinstance`` accepts ``xform.Array`` (with tracers) and key arrays.
"""

from xform.random._keys import KeyArray as _KeyArray
from xform.runtime.array import Array as _XformArray

_ARRAY_TYPES = (_XformArray, _KeyArray)


class _JaxArrayMeta(type):
    def __instancecheck__(cls, x):
        return isinstance(x, _ARRAY_TYPES)

    def __subclasscheck__(cls, sub):
        return issubclass(sub, _ARRAY_TYPES)


class Array(metaclass=_JaxArrayMeta):
    """``jax.Array`` under compat mode: true of xform arrays, tracers and typed key arrays."""

    __module__ = "jax"
