"""``make_user_context``: values of the program's own that ``jit`` keys its caches on.

Each context made is listed in ``config._user_contexts``, whose values
``config.trace_context`` adds to every jit cache key once there are any.
"""

import contextlib
import threading

from xform import config

__all__ = ["UserContext", "make_user_context"]


class UserContext:
    """A value jit's caches depend on: a function traced, lowered or compiled under one value
    is not reused under another. ``with ctx(value):`` sets it in this thread; ``set_global``
    sets it for the threads that have not."""

    def __init__(self, default_value):
        self._global = default_value
        self._local = threading.local()  # this thread's stack of values set by ``with``

    @property
    def value(self):
        """The value in this thread: the innermost ``with``, else the global one."""
        stack = getattr(self._local, "stack", None)
        return stack[-1] if stack else self._global

    def get_global(self):
        return self._global

    def set_global(self, new_value):
        self._global = new_value

    @contextlib.contextmanager
    def __call__(self, new_value):
        stack = self._local.__dict__.setdefault("stack", [])
        stack.append(new_value)
        try:
            yield
        finally:
            stack.pop()


def make_user_context(default_value=None):
    """A ``UserContext`` with ``default_value`` (hashable) as its global value, as JAX's.

    Example:
      >>> ctx = xform.make_user_context(default_value=None)
      >>> with ctx(1):
      ...     f(1.0)  # traced under 1; under ctx(2) the jitted f traces again
    """
    ctx = UserContext(default_value)
    config._user_contexts.append(ctx)
    return ctx
