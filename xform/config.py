"""xform's few global flags, in one place.

``enable_x64``: keep 64-bit dtypes (otherwise float64 becomes float32, int64 int32, ...).
``check_jaxprs``: typecheck every jaxpr a transformation produces (on in the test suite).
``host_eager``: evaluate eager primitives with NumPy on the host when the backend is a CPU;
set by the runtime when it starts, not meant to be flipped by users.
"""

import contextlib

enable_x64 = False
check_jaxprs = False
host_eager = True

_NAMES = {"enable_x64": "enable_x64", "jax_enable_x64": "enable_x64",
          "check_jaxprs": "check_jaxprs"}


def update(name, value):
    """Set a flag, e.g. ``xform.config.update("enable_x64", True)``."""
    attr = _NAMES.get(name)
    if attr is None:
        raise AttributeError(f"xform.config.update: unknown flag {name!r}; known: {sorted(_NAMES)}")
    globals()[attr] = bool(value)


def read(name):
    """Read a flag by name."""
    attr = _NAMES.get(name)
    if attr is None:
        raise AttributeError(f"xform.config.read: unknown flag {name!r}; known: {sorted(_NAMES)}")
    return globals()[attr]


@contextlib.contextmanager
def enable_x64_scope(on=True):
    """Context manager: 64-bit dtypes on (or off) inside the block."""
    global enable_x64
    saved, enable_x64 = enable_x64, bool(on)
    try:
        yield
    finally:
        enable_x64 = saved
