"""Several processes, one computation: ``jax.distributed``'s runtime setup, which xform's
multi-process ``pmap`` and sharded programs run on (see README, "Running pmap on a cluster").

The coordination service and the devices it connects belong to the runtime under xform
(jaxlib's distributed client), so these are JAX's own functions.
"""

from jax.distributed import initialize, is_initialized, shutdown  # noqa: F401

__all__ = ["initialize", "is_initialized", "shutdown"]
