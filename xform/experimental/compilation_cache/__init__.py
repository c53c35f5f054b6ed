"""``jax.experimental.compilation_cache``: the persistent compilation cache's public switches."""

from xform.experimental.compilation_cache import compilation_cache  # noqa: F401
