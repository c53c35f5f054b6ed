"""Library functions staged as JAX stages them: a named nested ``jit`` under a transformation.

JAX wraps many of its library functions in ``jit`` (``jnp.where`` is ``jit(_where)``, ``jnp.std``
calls ``jit(_std)``, which calls ``jit(_var)``, ...), so a jaxpr traced through them holds a
``jit[name=_where ...]`` equation per call, and programs that read jaxprs see those names.
``staged`` gives xform's functions the same equations: under a transformation (any trace but
the evaluation trace) a call goes through ``xform.jit`` with JAX's name and static arguments.
Eagerly it calls the function itself: xform evaluates eager primitives one by one on the host,
which is much faster than compiling a program per function.
"""

import functools

from xform.api.jit import jit
from xform.core import eval_trace, trace_state

__all__ = ["staged"]


def staged(name, *, static_argnums=None, static_argnames=None):
    """Decorator: ``fun`` staged as ``jit(fun)`` named ``name`` when traced, plain when eager.

    Args:
      name: the name JAX's jit sees for the function (its ``__name__``, e.g. ``"_where"``).
      static_argnums, static_argnames: as JAX's decorator gives them to ``jit``.
    """

    def wrap(fun):
        @functools.wraps(fun)
        def body(*args, **kwargs):
            return fun(*args, **kwargs)

        body.__name__ = body.__qualname__ = name  # the name the equation prints
        jitted = jit(body, static_argnums=static_argnums, static_argnames=static_argnames)

        @functools.wraps(fun)
        def call(*args, **kwargs):
            if trace_state.trace is eval_trace:
                return fun(*args, **kwargs)
            return jitted(*args, **kwargs)

        call.jitted = jitted  # (for tests and for callers that stage it themselves)
        return call

    return wrap
