"""The runtime under xform, as ``jax.extend.backend`` names it: PJRT backends and devices."""

from lowering import runtime
from xform.api import jit as api

__all__ = ["backends", "clear_in_memory_compilation_cache", "get_backend", "get_default_device"]


def get_backend(platform=None):
    """The PJRT client of ``platform`` (the default backend when None)."""
    return runtime.devices(platform)[0].client


def backends():
    """The PJRT client xform runs on, keyed by its platform name."""
    return {runtime.platform(): get_backend()}


def get_default_device():
    """The device xform places arrays and runs computations on by default."""
    return runtime.default_device()


def clear_in_memory_compilation_cache():
    """Forget every compiled program and trace (``xform.clear_caches``)."""
    api.clear_caches()
