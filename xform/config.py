"""xform's few global flags, in one place.

``enable_x64``: keep 64-bit dtypes (otherwise float64 becomes float32, int64 int32, ...);
off unless the ``JAX_ENABLE_X64`` environment variable is true at import, as in JAX.
Read it with ``x64_enabled()``: ``update`` sets the global value, and the
``enable_x64_scope`` context manager (``xform.enable_x64``) overrides it for the current
thread only, as JAX's ``jax.enable_x64`` does.
``check_jaxprs``: typecheck every jaxpr a transformation produces (on in the test suite).
``host_eager``: evaluate eager primitives with NumPy on the host when the backend is a CPU;
set by the runtime when it starts, not meant to be flipped by users.
"""

import contextlib
import os
import threading

check_jaxprs = False
host_eager = True


def _env_flag(name, default=False):
    """A boolean environment variable, read as JAX reads its own (``JAX_ENABLE_X64=1``)."""
    value = os.environ.get(name, str(default)).lower()
    if value in ("y", "yes", "t", "true", "on", "1"):
        return True
    if value in ("n", "no", "f", "false", "off", "0"):
        return False
    raise ValueError(f"invalid truth value {value!r} for environment variable {name!r}")


class _PerThread(threading.local):
    """Flags a thread may override inside a scope. The class attribute is the global value,
    which a thread sees until it sets its own (an instance attribute, that thread's only)."""

    enable_x64 = _env_flag("JAX_ENABLE_X64")  # as in JAX, the environment sets the default


_per_thread = _PerThread()

_NAMES = {"enable_x64": "enable_x64", "jax_enable_x64": "enable_x64",
          "check_jaxprs": "check_jaxprs"}


def x64_enabled():
    """Whether 64-bit dtypes are on in this thread (its innermost ``enable_x64_scope``, else
    the global flag)."""
    return _per_thread.enable_x64


def update(name, value):
    """Set a flag, e.g. ``xform.config.update("enable_x64", True)``."""
    attr = _NAMES.get(name)
    if attr is None:
        raise AttributeError(f"xform.config.update: unknown flag {name!r}; known: {sorted(_NAMES)}")
    if attr == "enable_x64":
        _PerThread.enable_x64 = bool(value)
    else:
        globals()[attr] = bool(value)


def read(name):
    """Read a flag by name."""
    attr = _NAMES.get(name)
    if attr is None:
        raise AttributeError(f"xform.config.read: unknown flag {name!r}; known: {sorted(_NAMES)}")
    return x64_enabled() if attr == "enable_x64" else globals()[attr]


@contextlib.contextmanager
def enable_x64_scope(on=True):
    """Context manager: 64-bit dtypes on (or off) inside the block, in this thread only."""
    had_own = "enable_x64" in vars(_per_thread)  # vars: this thread's overrides
    saved = _per_thread.enable_x64
    _per_thread.enable_x64 = bool(on)
    try:
        yield
    finally:
        if had_own:
            _per_thread.enable_x64 = saved
        else:
            del _per_thread.enable_x64  # back to the global value, whatever it is by now
