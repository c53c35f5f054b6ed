"""Staging: run a Python function on tracers and record the primitives it binds as a jaxpr.

A ``JaxprTracer`` carries a ``Var`` of the jaxpr under construction. Rule used per
primitive: its abstract evaluation (``core.abstract_eval_rules``), which gives the output
types without computing anything; a primitive bound with a Python function that staging
must trace first (the custom-derivative calls) has a rule of its own in ``staging_rules``,
``rule(trace, args, params) -> outputs``, which records it with ``trace.stage``.
Values that are not this trace's tracers become inputs of the jaxpr: scalars as inline
``Literal``s, arrays and tracers of enclosing transformations as constvars
(``ClosedJaxpr.consts``), so closing over an outer ``grad`` or ``vmap`` variable inside
``jit`` works. Inside ``ensure_compile_time_eval`` (the ``eager_constant_folding`` flag) an
operation none of whose operands is a tracer is evaluated instead of staged.
"""

import numpy as np

from xform import config, core, dtypes, errors
from xform.core import ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Tracer, Var
from xform.interpret import typed
from xform.traceback_util import origin_message

staging_rules = {}


class JaxprTracer(Tracer):
    # ``jaxpr_var``, not ``var``: tracers also carry NumPy methods, ``x.var()`` among them.
    __slots__ = ("jaxpr_var", "source")

    def __init__(self, trace, var, source):
        self._trace = trace
        self.jaxpr_var = var
        self.source = source

    def __repr__(self):  # as JAX's (a weak type's ``~``)
        return f"JitTracer({self.aval})"

    @property
    def aval(self):
        return self.jaxpr_var.aval

    def _origin_msg(self):
        trace = self._trace
        return origin_message(trace.name, trace.invars, trace.eqns, self.jaxpr_var)


class JaxprTrace(core.Trace):
    """Records equations; ``name`` says what is being traced, for error messages."""

    __slots__ = ("parent", "name", "eqns", "invars", "constvars", "consts", "const_ids", "alive")
    record_source = True  # where in the user's code each equation came from, for errors

    def __init__(self, parent, name):
        self.parent = parent
        self.name = name
        self.eqns = []
        self.invars = []
        self.constvars = []
        self.consts = []
        self.const_ids = {}
        self.alive = True

    def new_arg(self, aval):
        var = Var(aval)
        self.invars.append(var)
        return JaxprTracer(self, var, None)

    def to_atom(self, x):
        if isinstance(x, Tracer):
            if x._trace is self:
                return x.jaxpr_var
            if not x._trace.alive:
                raise core.escaped_tracer_error(x, f"the function being {self.name}")
            return self._capture(x, x.aval)
        aval = core.get_aval(x)
        if not aval.shape and type(x) not in core.valueless_types:
            return Literal(_scalar_value(x, aval), aval)
        return self._capture(x, aval)

    def _capture(self, x, aval):
        # Keep the value alive as long as the trace: ids of dead objects are reused.
        var = self.const_ids.get(id(x))
        if var is None:
            var = Var(aval)
            self.const_ids[id(x)] = var
            self.constvars.append(var)
            self.consts.append(x)
        return var

    def process_primitive(self, prim, args, params):
        if (
            (not args or not isinstance(args[0], Tracer))
            and config.values.eager_constant_folding
            and not any(isinstance(x, Tracer) for x in args)
        ):
            # ensure_compile_time_eval: an operation on constants only is evaluated, as
            # JAX's staging folds it; one on any tracer is staged as ever. (The flag, a
            # per-thread read, is read only when the first operand is a constant.)
            return core.eval_trace.process_primitive(prim, args, params)
        rule = staging_rules.get(prim)
        if rule is not None:
            return rule(self, args, params)
        invars = []
        for x in args:  # this trace's own tracers inline: the common case, per operand
            invars.append(
                x.jaxpr_var if type(x) is JaxprTracer and x._trace is self else self.to_atom(x)
            )
        if prim not in core.abstract_eval_rules:
            raise errors.MissingRuleError(
                f"primitive '{prim.name}' has no abstract evaluation "
                f"rule, so it cannot be staged out ({self.name})"
            )
        out_avals = out_avals_of(prim, [v.aval for v in invars], params)
        if out_avals and out_avals[0].vma:  # in a shard_map body: JAX's implicit pvary
            invars, out_avals = typed.cast_to_vary(
                self, prim, invars, params, out_avals, out_avals_of
            )
        return self._record(prim, invars, params, out_avals)

    def stage(self, prim, args, params, out_avals):
        """Record ``prim`` on ``args`` with the given output types; its output tracers."""
        return self._record(prim, [self.to_atom(x) for x in args], params, out_avals)

    def _record(self, prim, invars, params, out_avals):
        source = core.source_info() if self.record_source else None
        if len(out_avals) == 1:  # most primitives: no list comprehensions to build
            var = Var(out_avals[0])
            self.eqns.append(JaxprEqn(prim, invars, [var], params, source))
            return [JaxprTracer(self, var, source)]
        outvars = [Var(a) for a in out_avals]
        self.eqns.append(JaxprEqn(prim, invars, outvars, params, source))
        return [JaxprTracer(self, v, source) for v in outvars]


# (prim, *avals) -> output avals, for primitives without params, and (prim, *avals,
# *params.items()) for those in ``memoized_with_params``; the outputs interned
# (core.intern_aval), so later operands' avals are mostly the very keys here.
_out_avals = {}
# Primitives whose abstract evaluation depends on the operand types and the params alone,
# with params of plain hashable values (axes, shapes, dimension numbers, dtypes): not a
# collective (it reads the axis environment) nor one whose params hold jaxprs or functions
# (a memo entry would keep their residuals alive).
memoized_with_params = set()


def memoize_abstract_eval(*prims):
    """Let ``out_avals_of`` memoize the output types of ``prims`` on their params too (the
    family modules opt in the primitives that qualify)."""
    memoized_with_params.update(prims)


def out_avals_of(prim, avals, params):
    """The output avals of ``prim`` by its abstract evaluation rule, memoized for primitives
    without params (the elementwise ones, most of what is staged or run eagerly) and for those
    opted in by ``memoize_abstract_eval``."""
    if not params:
        key = (prim, *avals)
    elif prim in memoized_with_params:
        key = (prim, *avals, *params.items())
    else:
        return _abstract_eval(prim, avals, params)
    try:
        out_avals = _out_avals.get(key)
    except TypeError:  # an unhashable param value (a list where a tuple belongs): no memo
        return _abstract_eval(prim, avals, params)
    if out_avals is None:
        if len(_out_avals) > 4096:
            _out_avals.clear()
        out_avals = [core.intern_aval(a) for a in _abstract_eval(prim, avals, params)]
        _out_avals[key] = out_avals
    return out_avals


def _abstract_eval(prim, avals, params):
    out_avals = core.abstract_eval_rules[prim](*avals, **params)
    for a in avals:
        if getattr(a, "sharding", None) is not None:
            out_avals = typed.with_shardings(prim, avals, out_avals, params)
            break
    for a in avals:
        if getattr(a, "vma", None):
            return typed.with_vma(prim, avals, out_avals, params)
    return out_avals


def _scalar_value(x, aval):
    if type(x) in (int, float, complex) and aval.weak_type:
        # Kept a Python scalar: a jaxpr replayed by a transformation must see it weak again
        # (``x + 1.0`` stays weak), and a NumPy scalar would be strong.
        return x
    if hasattr(x, "_host_value"):  # a concrete xform Array
        x = x._host_value()
    x = np.asarray(x, aval.dtype)
    if aval.weak_type and x.ndim == 0:
        # A weak scalar that reached here as NumPy (a Python scalar promoted by a jnp
        # function) is kept as the Python scalar, for the same reason, where reading that
        # scalar back gives this dtype again (a weak int32 under x64 stays NumPy).
        value = x.item()
        if dtypes.canonicalize(np.asarray(value).dtype) == aval.dtype:
            return value
    return x


def trace_to_jaxpr(fun, in_avals, name):
    """Trace ``fun`` (flat list of arrays in, flat list out) to a ``ClosedJaxpr``.

    ``name`` completes "while tracing ..." in errors, e.g. "tracing `f` for jit".
    """
    trace = JaxprTrace(core.trace_state.trace, name)
    in_tracers = [trace.new_arg(a) for a in in_avals]
    try:
        with core.set_current_trace(trace):
            outs = fun(*in_tracers)
        outvars = [trace.to_atom(x) for x in outs]
    finally:
        trace.alive = False
    jaxpr = Jaxpr(trace.constvars, trace.invars, outvars, trace.eqns)
    closed = ClosedJaxpr(jaxpr, trace.consts)
    if config.check_jaxprs:
        core.check_jaxpr(closed)
    return closed


def convert_constvars(closed):
    """A ClosedJaxpr with its constvars turned into leading invars, and the consts."""
    jaxpr = closed.jaxpr
    new = Jaxpr([], jaxpr.constvars + jaxpr.invars, jaxpr.outvars, jaxpr.eqns)
    return ClosedJaxpr(new, []), closed.consts
