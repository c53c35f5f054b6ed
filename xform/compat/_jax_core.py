"""``jax.core`` (and ``jax._src.core``) under ``xform.compat``: xform's IR under JAX's names.

The public ``jax.core`` names, plus the few its former public names that the pinned libraries
still read (``get_aval``, ``find_top_trace``, ``mapped_aval``, ``get_opaque_trace_state``, ...).
"""

import weakref

from xform import core
from xform.core import (  # noqa: F401  # noqa: F401
    ClosedJaxpr,
    Jaxpr,
    JaxprEqn,
    Literal,
    Primitive,
    ShapedArray,
    Trace,
    Tracer,
    Var,
    check_jaxpr,
    current_trace,
    eval_jaxpr,
    get_aval,
    is_concrete_array,
    jaxpr_as_fun,
    pytype_aval_mappings,
    subjaxprs,
)
from xform.errors import JaxprTypeError  # noqa: F401
from xform.extend._core import (  # noqa: F401
    DropVar,
    concrete_or_error,
    find_top_trace,
    gensym,
    jaxprs_in_params,
    mapped_aval,
    new_jaxpr_eqn,
    no_effects,
    primal_dtype_to_tangent_dtype,
    unmapped_aval,
    valid_jaxtype,
)
from xform.extend.linear_util import DebugInfo  # noqa: F401
from xform.primitives.call import call_p

AbstractValue = ShapedArray  # xform's one kind of abstract value
Atom = (Var, Literal)  # JAX's union of jaxpr operands, for isinstance
Value = object


def eval_context():
    """``with eval_context():`` evaluates eagerly inside the block (operations on tracers of
    an outer trace then raise), as JAX's; ``ensure_compile_time_eval`` folds constants only."""
    return core.set_current_trace(core.eval_trace)


jaxpr_as_fn = jaxpr_as_fun


ParamDict = dict  # an equation's params
no_axis_name = object()  # JAX's marker for "no axis name given"
is_concrete = is_concrete_array


def is_constant_dim(d):
    """Whether dimension ``d`` is a known integer (not a symbolic size)."""
    return not core.is_symbolic_dim(d)


def is_constant_shape(shape):
    """Whether every dimension of ``shape`` is a known integer."""
    return all(map(is_constant_dim, shape))


def max_dim(d1, d2):
    """The larger of two dimensions."""
    return max(d1, d2)


def min_dim(d1, d2):
    """The smaller of two dimensions."""
    return min(d1, d2)


def call(fun, *args):
    """Call ``fun`` (a ``WrappedFun``) through JAX's generic call primitive."""
    return call_p.bind(fun, *args)


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
