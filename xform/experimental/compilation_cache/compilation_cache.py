"""``jax.experimental.compilation_cache.compilation_cache`` on xform's persistent cache of
compiled executables (``lowering/compile_cache.py``), which the ``jax_compilation_cache_dir``
and ``jax_enable_compilation_cache`` flags steer. JAX 0.10.2 exports these two names here."""

import os

from xform import config

__all__ = ["reset_cache", "set_cache_dir"]


def set_cache_dir(path) -> None:
    """Save compiled programs under ``path`` and look for them there before compiling (sets
    ``jax_compilation_cache_dir``).

    The cache is trusted: a directory others can write to lets them run code in this process.

    Example:
      >>> set_cache_dir("/tmp/xform-cache")
    """
    config.update(
        "jax_compilation_cache_dir", os.fspath(path) if isinstance(path, os.PathLike) else path
    )


def reset_cache() -> None:
    """Forget what this process knows of the cache (its size, an unwritable directory's
    warning): the next compile starts from the flags as they stand."""
    # Setting the flag to its own value runs the cache's update hook, which starts it afresh.
    config.update("jax_compilation_cache_dir", config.read("jax_compilation_cache_dir"))
