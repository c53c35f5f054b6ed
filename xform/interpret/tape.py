"""Reverse mode on a tape: linearize without staging a jaxpr, then transpose the tape.

Eager ``grad`` (no enclosing trace) runs the JVP interpreter on a ``TapeTrace`` instead of
a ``PartialEvalTrace``. Like the partial evaluator, it computes what is known now, on the
parent (eager) trace, and keeps what depends on the tangent inputs: the linear operations
the JVP rules bind. It keeps them as a tape of ``(prim, operands, params, outvars)``
records, with no ``JaxprEqn``, ``Literal`` or constvar built for them, and ``backward``
walks the tape in reverse with the transpose rules, in the order
``transpose.backward_pass`` would walk the jaxpr: the same operations on the same values,
so the cotangents are bit-equal.

The tape's tracers are the partial evaluator's own ``JaxprTracer``s (each with its
``Var``), so a primitive the tape does not record (one with a rule of its own for partial
evaluation or staging: ``jit``, control flow, custom-derivative calls) turns the tape into
the equations the partial evaluator would have recorded so far; the trace then goes on as a
``PartialEvalTrace``, and ``backward`` transposes the jaxpr. Nothing runs twice.

The eager ``grad`` tape (``vjp_tape``) runs one primitive's JVP rule on a ``TapeTrace``
whose parent is a staging trace, to linearize the rule once per signature: the parent's
tracers are then known operands of the records (the residuals), like concrete values.

Rules used: ``core.abstract_eval_rules`` (output types of a linear operation) and
``transpose.transpose_rules``; the JVP rules run above, in ``ad.JVPTrace`` (or, for eager
``grad``, in ``vjp_tape``).
"""

import numpy as np

from xform import core
from xform.core import ClosedJaxpr, Jaxpr, JaxprEqn, Tracer, Var
from xform.interpret.ad import Zero, add_tangents
from xform.interpret.partial_eval import PartialEvalTrace, partial_eval_rules
from xform.interpret.staging import JaxprTracer, out_avals_of, staging_rules
from xform.interpret.transpose import (
    UndefinedPrimal,
    backward_pass,
    pop_cotangent,
    transpose_rule,
)

# Off: reverse mode always stages and transposes a jaxpr (tests compare the two paths).
enabled = True


def applies(avals):
    """Whether eager reverse mode over inputs of types ``avals`` takes the tape: no enclosing
    trace (no jit, vmap or outer differentiation) and only real floating-point inputs."""
    if not enabled or core.trace_state.trace is not core.eval_trace:
        return False
    return all(a.dtype.kind == "f" for a in avals)


def _recordable(prim):
    """A primitive the tape records as it is: one the partial evaluator would stage with its
    abstract evaluation alone (no rule of its own, and a missing rule is its error to raise)."""
    return (
        prim in core.abstract_eval_rules
        and prim not in partial_eval_rules
        and prim not in staging_rules
    )


_memo = {}  # (prim, *avals, *params) -> output avals, for linear operations with params
# Params the memo keys on: plain values (axes, dimension numbers, dtypes). Others (functions,
# jaxprs) may hold residuals, which a memo entry must not keep alive.
_PLAIN = frozenset((tuple, int, bool, str, float, type(None)))


def _out_avals_with_params(prim, avals, params):
    """``out_avals_of`` memoized on plain params too: a gradient step records the same
    ``dot_general``s, ``reduce_sum``s and ``broadcast_in_dim``s every time."""
    for v in params.values():
        if type(v) not in _PLAIN and not isinstance(v, np.dtype):
            return out_avals_of(prim, avals, params)
    try:
        key = (prim, *avals, *params.items())
        out_avals = _memo.get(key)
    except TypeError:  # an unhashable value inside a tuple: no memo
        return out_avals_of(prim, avals, params)
    if out_avals is None:
        if len(_memo) > 4096:
            _memo.clear()
        out_avals = _memo[key] = out_avals_of(prim, avals, params)
    return out_avals


class TapeTrace(PartialEvalTrace):
    """A partial evaluator that records linear operations on a tape while it can.

    ``tape`` is the list of records ``(prim, operands, params, outvars)``, where a linear
    operand is its tracer's ``Var`` and any other is its value; or None once the trace has
    turned into a plain ``PartialEvalTrace`` (its ``eqns`` then hold the tape's equations and
    the rest). The tape holds ``Var``s, never tracers, which refer to the trace: a gradient
    leaves no reference cycle for the garbage collector to find.
    """

    __slots__ = ("tape", "outs", "closed")

    def __init__(self, parent, name):
        super().__init__(parent, name)
        self.tape = []
        self.outs = None  # set by set_outputs when the function returns
        self.closed = None

    def process_primitive(self, prim, args, params):
        for x in args:
            if type(x) is JaxprTracer and x._trace is self:
                break
        else:  # every input known: computed now, by the enclosing interpreter
            return self.known(prim, args, params)
        tape = self.tape
        if tape is None or not _recordable(prim):
            self.stage_tape()
            return PartialEvalTrace.process_primitive(self, prim, args, params)
        operands, avals = [], []
        for x in args:  # aval_of, inlined: per operand of every linear operation
            if type(x) is JaxprTracer and x._trace is self:
                var = x.jaxpr_var
                operands.append(var)
                avals.append(var.aval)
                continue
            if isinstance(x, Tracer) and x._trace is not self.parent:
                # Another trace's (an escaped one): staging says so. The parent's tracers are
                # known values (``vjp_tape`` linearizes a rule under a staging parent).
                self.stage_tape()
                return PartialEvalTrace.process_primitive(self, prim, args, params)
            operands.append(x)
            aval = getattr(x, "aval", None)
            avals.append(aval if type(aval) is core.ShapedArray else core.get_aval(x))
        out_avals = (
            out_avals_of(prim, avals, params)
            if not params
            else _out_avals_with_params(prim, avals, params)
        )
        if len(out_avals) == 1:
            var = Var(out_avals[0])
            tape.append((prim, operands, params, [var]))
            return [JaxprTracer(self, var, None)]
        outvars = [Var(a) for a in out_avals]
        tape.append((prim, operands, params, outvars))
        return [JaxprTracer(self, v, None) for v in outvars]

    def set_outputs(self, outs):
        """Keep the function's outputs for ``backward``: a linear one as its ``Var``."""
        self.outs = [
            x.jaxpr_var if type(x) is JaxprTracer and x._trace is self else x for x in outs
        ]

    def stage_tape(self):
        """Turn the tape into the equations the partial evaluator would have recorded: the
        same operands as atoms (literals, constvars) in the same order."""
        tape, self.tape = self.tape, None
        for prim, operands, params, outvars in tape or ():
            invars = [x if type(x) is Var else self.to_atom(x) for x in operands]
            self.eqns.append(JaxprEqn(prim, invars, outvars, params, None))

    def closed_jaxpr(self):
        """The linear program from the tangent inputs to ``outs``, as partial evaluation
        stages it (a tape is staged first)."""
        if self.closed is None:
            self.stage_tape()
            outvars = [x if type(x) is Var else self.to_atom(x) for x in self.outs]
            self.closed = ClosedJaxpr(
                Jaxpr(self.constvars, self.invars, outvars, self.eqns), self.consts
            )
        return self.closed

    def backward(self, cts_out):
        """The cotangents of the tangent inputs (a ``Zero`` where none reaches one) from
        those of ``outs`` (``None`` or a ``Zero`` where there is none)."""
        if self.tape is None:
            closed = self.closed_jaxpr()
            args = [UndefinedPrimal(v.aval) for v in closed.jaxpr.invars]
            return backward_pass(closed.jaxpr, closed.consts, args, cts_out)
        return _backward_tape(self, cts_out)


def _backward_tape(trace, cts_out):
    # ``transpose.backward_pass`` over the tape: every record is a linear equation (it has
    # a Var operand), in the jaxpr's order; cotangents are keyed by ``Var``.
    ct_env = {}
    for v, ct in zip(trace.outs, cts_out, strict=True):
        if type(v) is Var and ct is not None and type(ct) is not Zero:
            old = ct_env.get(v)
            ct_env[v] = ct if old is None else add_tangents(old, ct)
    transpose_tape(trace.tape, ct_env)
    return [Zero(v.aval) if (ct := ct_env.get(v)) is None else ct for v in trace.invars]


def transpose_tape(tape, ct_env):
    """Pull the cotangents in ``ct_env`` (``Var`` -> cotangent; updated in place) back
    through the linear records of ``tape``, last to first."""
    for prim, operands, params, outvars in reversed(tape):
        ct = pop_cotangent(ct_env, prim, outvars)
        if ct is None:
            continue
        rule = transpose_rule(prim)
        invals, linear = [], []
        for i, x in enumerate(operands):
            if type(x) is Var:
                invals.append(UndefinedPrimal(x.aval))
                linear.append((i, x))
            else:
                invals.append(x)
        cts_in = rule(ct, *invals, **params)
        if len(cts_in) != len(operands):
            raise ValueError(
                f"the transpose rule of '{prim.name}' returned {len(cts_in)} "
                f"cotangents for {len(operands)} operands"
            )
        for i, v in linear:  # in operand order, as backward_pass accumulates
            ct_in = cts_in[i]
            if ct_in is not None and type(ct_in) is not Zero:
                old = ct_env.get(v)
                ct_env[v] = ct_in if old is None else add_tangents(old, ct_in)


def linearize_flat(fun, known, tangent_avals, name):
    """``partial_eval.partial_eval_flat`` on a tape: run ``fun(*known, *tangents)``.

    Returns ``(outs, trace)``: ``outs`` holds the known outputs and, for the linear ones,
    None; ``trace.backward`` pulls cotangents of the outputs back to the tangents.
    """
    trace = TapeTrace(core.trace_state.trace, name)
    tangents = [trace.new_arg(a) for a in tangent_avals]
    try:
        with core.set_current_trace(trace):
            outs = fun(*known, *tangents)
        trace.set_outputs(outs)
    finally:
        trace.alive = False
    return [None if trace.is_unknown(x) else x for x in outs], trace
