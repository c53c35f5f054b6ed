"""``xform.experimental``: JAX's ``jax.experimental`` names that xform has."""

from xform.experimental import shard_map  # noqa: F401  (the module, as jax.experimental's)
from xform.primitives.callback import io_callback

__all__ = ["io_callback"]
