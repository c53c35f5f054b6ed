"""The ahead-of-time stages of a jitted function, as ``jax.stages``: ``jit(f).trace(*args)``
gives a ``Traced``, ``.lower()`` a ``Lowered``, ``.compile()`` a ``Compiled``
(implemented in xform/runtime/stages.py)."""

from xform.runtime.stages import ArgInfo, Compiled, Lowered, Traced

__all__ = ["ArgInfo", "Compiled", "Lowered", "Traced"]
