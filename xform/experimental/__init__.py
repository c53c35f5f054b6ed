"""``xform.experimental``: JAX's ``jax.experimental`` names that xform has."""

from xform.experimental import (  # noqa: F401  (the modules, as jax.experimental's)
    checkify,
    compilation_cache,
    jet,
    mesh_utils,
    multihost_utils,
    ode,
    shard_map,
    sparse,
)
from xform.primitives.callback import io_callback

__all__ = ["io_callback"]
