"""xform's version, as ``jax.version`` holds JAX's: ``__version__`` and ``__version_info__``."""

__version__ = "0.1.0"
__version_info__ = tuple(int(p) for p in __version__.split("."))
