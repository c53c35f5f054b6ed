"""``xform.experimental``: JAX's ``jax.experimental`` names that xform has."""

from xform.primitives.callback import io_callback

__all__ = ["io_callback"]
