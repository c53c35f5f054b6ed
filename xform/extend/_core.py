"""The small helpers ``jax.extend.core`` offers beside the IR classes, on xform's IR."""

import contextlib

import numpy as np

from xform import core, dtypes
from xform.core import JaxprEqn, Tracer, Var
from xform.errors import ConcretizationTypeError
from xform.interpret.batching import BatchTrace
from xform.interpret.staging import JaxprTrace

# The concrete array types xform accepts as operands (Python scalars aside).
array_types = frozenset(
    {
        t
        for t in core.pytype_aval_mappings
        if t not in (bool, int, float, complex) and t not in core.valueless_types
    }
    | {np.dtype(d).type for d in dtypes.SUPPORTED}
)

no_effects = frozenset()  # xform has no effect system: every equation is pure


def valid_jaxtype(x):
    """Whether ``x`` can be an operand of a primitive (an array, NumPy value or scalar)."""
    try:
        core.get_aval(x)
    except TypeError:
        return False
    return True


def concrete_or_error(force, val, context=""):
    """``force(val)`` (``val`` when ``force`` is None) for a concrete value; for a tracer whose
    value is not known, ``ConcretizationTypeError`` saying ``context``."""
    if isinstance(val, Tracer):
        value = val.concrete_value()
        if value is None:
            raise ConcretizationTypeError(
                "Abstract tracer value encountered where concrete value is expected: traced "
                f"array with shape {val.aval.str_short(False)}\n{context}{val._origin_msg()}\n"
            )
        val = value
    return val if force is None else force(val)


def primal_dtype_to_tangent_dtype(dtype):
    """The dtype of the tangents of values of ``dtype``: float0 for integers and booleans."""
    dtype = np.dtype(dtype)
    return dtype if dtypes.is_inexact(dtype) else dtypes.float0


def mapped_aval(size, axis, aval):
    """``aval`` without its dimension ``axis`` (of length ``size``); None: ``aval`` itself."""
    if axis is None:
        return aval
    if aval.shape[axis] != size:
        raise ValueError(
            f"mapped_aval: axis {axis} of {aval.str_short()} has size "
            f"{aval.shape[axis]}, not {size}"
        )
    return aval.update(shape=aval.shape[:axis] + aval.shape[axis + 1 :])


def unmapped_aval(size, axis, aval, explicit_mesh_axis=None):
    """``aval`` with a new dimension of length ``size`` at ``axis``; None: ``aval`` itself."""
    if axis is None:
        return aval
    return aval.update(shape=aval.shape[:axis] + (size,) + aval.shape[axis:])


def new_jaxpr_eqn(
    invars, outvars, primitive, params, effects=no_effects, source_info=None, ctx=None
):
    """An equation ``outvars = primitive[params] invars`` (``effects`` and ``ctx``, which
    xform does not track, are accepted for JAX's signature)."""
    return JaxprEqn(primitive, list(invars), list(outvars), params, source_info)


def gensym(suffix=""):
    """A function making a fresh ``Var`` of the aval it is given (names come at printing)."""
    return Var


def jaxprs_in_params(params):
    """The jaxprs (``ClosedJaxpr``s unwrapped) held in an equation's params."""
    return list(core.subjaxprs(params))


def subjaxprs(jaxpr):
    """The jaxprs in the params of ``jaxpr``'s equations, one level deep (as JAX's)."""
    for eqn in jaxpr.eqns:
        yield from core.subjaxprs(eqn.params)


def find_top_trace(xs):
    """The trace primitives bound now go to (the current one, whatever ``xs`` holds)."""
    return core.current_trace()


@contextlib.contextmanager
def take_current_trace():
    """``with take_current_trace() as trace:`` the current trace, with eager evaluation
    current inside the block: bind on ``trace`` explicitly
    (``trace.process_primitive(prim, args, params)``, a list of results)."""
    trace = core.current_trace()
    with core.set_current_trace(core.eval_trace):
        yield trace


def _trace_stack():
    trace = core.current_trace()
    while trace is not None:
        yield trace
        trace = getattr(trace, "parent", None)


def unsafe_am_i_under_a_jit():
    """Whether a staging trace (``jit``, ``make_jaxpr``, ...) is active at any depth."""
    return any(isinstance(t, JaxprTrace) for t in _trace_stack())


def unsafe_am_i_under_a_vmap():
    """Whether a ``vmap`` is active at any depth."""
    return any(isinstance(t, BatchTrace) for t in _trace_stack())


def unsafe_get_axis_names():
    """The names of the mapped axes (``pmap``, ``vmap(axis_name=...)``) in scope."""
    return [name for name, _ in core.trace_state.axis_env]


def nonempty_axis_env():
    """Whether any named axis is in scope."""
    return bool(core.trace_state.axis_env)


class TraceTag:
    """A token naming one transformation's traces: a library making an interpreter gives
    its tracers a tag and tells its own apart from others' by identity (xform's traces are
    themselves such identities)."""

    __slots__ = ("__weakref__",)

    def __repr__(self):
        return f"TraceTag({id(self):#x})"


class DropVar(Var):
    """A result no equation reads. xform's equations keep a ``Var`` for every result (its
    printer shows the unread ones as ``_``), so its jaxprs hold none of these; ``isinstance``
    tests on it are False for them, as for JAX's jaxprs without dropped results."""

    __slots__ = ()


def call_impl(fun, *args, **params):
    """Evaluate ``fun`` (a ``WrappedFun``) on ``args``: what a call primitive does eagerly."""
    del params
    return fun.call_wrapped(*args)
