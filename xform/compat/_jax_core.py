"""``jax.core`` (and ``jax._src.core``) under ``xform.compat``: xform's IR under JAX's names.

The public ``jax.core`` names, plus the few its former public names that the pinned libraries
still read (``get_aval``, ``find_top_trace``, ``mapped_aval``, ``get_opaque_trace_state``, ...).
"""

import weakref

from xform.api import ensure_compile_time_eval
from xform.core import (  # noqa: F401
    ClosedJaxpr,
    Jaxpr,
    JaxprEqn,
    Literal,
    Primitive,
    ShapedArray,
    Trace,
    Tracer,
    Var,
    current_trace,
    eval_jaxpr,
    get_aval,
    jaxpr_as_fun,
    subjaxprs,
)
from xform.extend._core import (  # noqa: F401
    find_top_trace,
    jaxprs_in_params,
    mapped_aval,
    unmapped_aval,
)

AbstractValue = ShapedArray  # xform's one kind of abstract value
Atom = (Var, Literal)  # JAX's union of jaxpr operands, for isinstance
Value = object
eval_context = ensure_compile_time_eval
jaxpr_as_fn = jaxpr_as_fun


def raise_to_shaped(aval):
    """The aval itself: xform's avals are all shaped (JAX removed the distinction)."""
    return aval


class OpaqueTraceState:
    """Stands for the trace current when it was taken: equal to another exactly when both
    saw the same trace (flax checks that state is updated where it was created)."""

    __slots__ = ("_trace",)

    def __init__(self, trace):
        self._trace = weakref.ref(trace)  # a weak reference: no trace outlives its scope here

    def __eq__(self, other):
        return isinstance(other, OpaqueTraceState) and self._trace() is other._trace()

    def __hash__(self):
        return id(self._trace())


def get_opaque_trace_state(convention=None):
    """An ``OpaqueTraceState`` for the current trace (``convention`` is accepted, as JAX's)."""
    del convention
    return OpaqueTraceState(current_trace())
