"""Library functions staged as JAX stages them: a named nested ``jit`` under a transformation.

JAX wraps many of its library functions in ``jit`` (``jnp.where`` is ``jit(_where)``, ``jnp.std``
calls ``jit(_std)``, which calls ``jit(_var)``, ...), so a jaxpr traced through them holds a
``jit[name=_where ...]`` equation per call, and programs that read jaxprs see those names.
``staged`` gives xform's functions the same equations: while a jaxpr is being built (``jit``
or ``make_jaxpr`` tracing, whatever transformations run inside it) a call goes through
``xform.jit`` with JAX's name and static arguments. Otherwise (eagerly, and under ``grad`` or
``vmap`` of concrete values) it calls the function itself: xform evaluates those primitives one
by one on the host, which is much faster than compiling a program per function and shape (an
eager ``grad`` at ten shapes: 14 ms, against 3 s through the nested jits).
"""

import functools

from xform.api.jit import jit
from xform.core import eval_trace, trace_state
from xform.interpret.staging import JaxprTrace

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
            if trace_state.trace is eval_trace or not _building_a_jaxpr():
                return fun(*args, **kwargs)
            return jitted(*args, **kwargs)

        call.jitted = jitted  # (for tests and for callers that stage it themselves)
        return call

    return wrap


def _building_a_jaxpr():
    """Whether a staging trace (jit's, make_jaxpr's: not the partial evaluation of an eager
    gradient) is among the traces under the current one."""
    trace = trace_state.trace
    while trace is not None and trace is not eval_trace:
        if type(trace) is JaxprTrace:
            return True
        trace = getattr(trace, "parent", None)
    return False
