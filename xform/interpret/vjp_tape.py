"""Eager ``grad`` as HIPS autograd does it: record each operation, then pull back.

Under an eager ``grad`` (no enclosing trace), a ``VJPTracer`` carries a concrete ``value``
and the ``node`` (a ``Var``) that stands for its tangent. ``VJPTrace.process_primitive``
computes each operation on the values right away and records it; ``backward`` walks the
records in reverse, accumulating cotangents per node.

A primitive with a rule in ``vjp_rules`` is recorded as it is: one record, pulled back by
its rule, with no JVP tracer, tangent program or transpose in between. Any other primitive
is linearized where it stands: its JVP rule runs on a ``tape.TapeTrace`` whose tangent
inputs are the operands' nodes, and the linear operations it records join this tape (or,
when the tape had to stage a jaxpr, the jaxpr does). Either way every cotangent is the one
``linearize`` + ``transpose`` computes, bit for bit: a rule makes the same operations on the
same values in the same order as the transposed JVP of its primitive, and contributes to
each operand separately, in the order the transposed tangent program would.

Rule signature: ``vjp_rules[prim] = (applies, rule)``; ``applies(values, nodes, **params)``
says whether the rule covers these operands (None: always); ``rule(ct, out, values, nodes,
**params)`` returns ``[(operand index, cotangent), ...]`` in the order the transposed JVP
accumulates them. Only single-result primitives have rules.
"""

import numpy as np

from xform import core
from xform.core import Tracer, Var
from xform.errors import MissingRuleError
from xform.interpret import ad
from xform.interpret.staging import JaxprTracer
from xform.interpret.tape import TapeTrace, transpose_tape
from xform.interpret.transpose import UndefinedPrimal, backward_pass, transpose_rule

vjp_rules = {}

# Off: eager grad takes the linearize + transpose tape (tests compare the two).
enabled = True


def applies(avals):
    """Whether an eager gradient over inputs of types ``avals`` can take this tape: no
    enclosing trace and only real floating-point inputs."""
    if not enabled or core.trace_state.trace is not core.eval_trace:
        return False
    return all(a.dtype.kind == "f" for a in avals)


class VJPTracer(Tracer):
    __slots__ = ("value", "node")

    def __init__(self, trace, value, node):
        self._trace = trace
        self.value = value
        self.node = node

    def __repr__(self):  # as JAX's (grad's tracers are its GradTracers)
        return f"GradTracer(primal={self.value}, typeof(tangent)={self.node.aval.str_short()})"

    @property
    def aval(self):
        # A differentiated value is inexact, so its tangent's type (its node's) is its own.
        return self.node.aval

    def concrete_value(self):
        # As under jvp: Python control flow on the values being differentiated works.
        return np.asarray(self.value)


class VJPTrace(core.Trace):
    """Computes on values now; ``records`` what the backward pass needs, in order:
    ``(rule, values, nodes, out_node, out, params)`` for an operation with a VJP rule,
    ``(None, tape)`` for linear operations a JVP rule recorded, ``(None, None, closed
    jaxpr, in_nodes, out_nodes)`` for a linear program it staged."""

    __slots__ = ("parent", "records", "alive")
    name = "differentiating with grad"

    def __init__(self, parent):
        self.parent = parent
        self.records = []
        self.alive = True

    def new_input(self, value, aval):
        return VJPTracer(self, value, Var(ad.tangent_aval(aval)))

    def process_primitive(self, prim, args, params):
        values, nodes, tracked = [], [], False
        for x in args:
            if type(x) is VJPTracer and x._trace is self:
                values.append(x.value)
                nodes.append(x.node)
                tracked = True
            else:
                values.append(x)
                nodes.append(None)
        if not tracked:
            return self.parent.process_primitive(prim, values, params)
        entry = vjp_rules.get(prim)
        if entry is None or (entry[0] is not None and not entry[0](values, nodes, **params)):
            return self.linearized(prim, values, nodes, params)
        outs = self.parent.process_primitive(prim, values, params)
        aval = outs[0].aval
        if aval.dtype not in ad.INEXACT:  # (an integer result has no tangent)
            return outs
        node = Var(aval)
        out = outs[0]
        self.records.append((entry[1], values, nodes, node, out, params))
        return [VJPTracer(self, out, node)]

    def linearized(self, prim, values, nodes, params):
        """``prim`` through its JVP rule on a tape whose tangent inputs are ``nodes``."""
        rule = ad.jvp_rules.get(prim)
        if rule is None:
            raise MissingRuleError(
                f"primitive '{prim.name}' has no JVP rule, so it cannot be differentiated"
            )
        tape = TapeTrace(self.parent, "linearizing")
        tangents = []
        for v, n in zip(values, nodes, strict=True):
            if n is None:
                tangents.append(ad.Zero(ad.tangent_aval(ad.aval_of(v))))
            else:
                if n not in tape.invars:
                    tape.invars.append(n)
                tangents.append(JaxprTracer(tape, n, None))
        state = core.trace_state
        saved, state.trace = state.trace, tape
        try:
            outs, tangents_out = rule(values, tangents, **params)
        finally:
            state.trace = saved
            tape.alive = False
        out_nodes = [
            t.jaxpr_var if type(t) is JaxprTracer and t._trace is tape else None
            for t in tangents_out
        ]
        if tape.tape is not None:
            if tape.tape:
                self.records.append((None, tape.tape))
        else:  # the tape staged a jaxpr (jit, control flow, custom rules): transpose it
            tape.set_outputs([t for t, n in zip(tangents_out, out_nodes, strict=True) if n])
            self.records.append(
                (
                    None,
                    None,
                    tape.closed_jaxpr(),
                    list(tape.invars),
                    [n for n in out_nodes if n is not None],
                )
            )
        return [
            o if n is None else VJPTracer(self, o, n) for o, n in zip(outs, out_nodes, strict=True)
        ]

    def backward(self, out_nodes, cts, in_nodes):
        """The cotangents of ``in_nodes`` (None where none reaches one) from those of
        ``out_nodes`` (None for an output that is not differentiated)."""
        env = {}
        for n, ct in zip(out_nodes, cts, strict=True):
            if n is not None:
                old = env.get(n)
                env[n] = ct if old is None else ad.add_tangents(old, ct)
        for record in reversed(self.records):
            rule = record[0]
            if rule is not None:
                _, values, nodes, node, out, params = record
                ct = env.pop(node, None)
                if ct is None:
                    continue
                for i, c in rule(ct, out, values, nodes, **params):
                    n = nodes[i]
                    old = env.get(n)
                    env[n] = c if old is None else ad.add_tangents(old, c)
            elif record[1] is not None:
                transpose_tape(record[1], env)
            else:
                _, _, closed, ins, outs = record
                cts_out = [env.pop(n, None) for n in outs]
                args = [UndefinedPrimal(v.aval) for v in closed.jaxpr.invars]
                for n, c in zip(
                    ins, backward_pass(closed.jaxpr, closed.consts, args, cts_out), strict=True
                ):
                    if c is not None and type(c) is not ad.Zero:
                        old = env.get(n)
                        env[n] = c if old is None else ad.add_tangents(old, c)
        return [env.get(n) for n in in_nodes]


def record_flat(fun, values, avals):
    """Run ``fun`` (flat lists) on ``values`` (of types ``avals``) under a new ``VJPTrace``.

    Returns ``(outs, trace, inputs)``: the outputs (``VJPTracer``s where differentiated) and
    the input tracers, whose nodes ``trace.backward`` pulls cotangents back to.
    """
    trace = VJPTrace(core.trace_state.trace)
    inputs = [trace.new_input(v, a) for v, a in zip(values, avals, strict=True)]
    try:
        with core.set_current_trace(trace):
            outs = fun(*inputs)
    finally:
        trace.alive = False  # its tracers that escape are errors where used
    return outs, trace, inputs


# --------------------------------------------------------------------------- registrars


def deflinear_vjp(prim, applies=None):
    """The rule of an operation whose JVP applies it to the operands' tangents, one record
    (``ad.deflinear``; add and sub of two differentiated operands; div in its numerator):
    its transpose rule on the cotangent, contributions in operand order."""

    def rule(ct, out, values, nodes, **params):
        args = [
            v if n is None else UndefinedPrimal(n.aval) for v, n in zip(values, nodes, strict=True)
        ]
        cts = transpose_rule(prim)(ct, *args, **params)
        return [(i, cts[i]) for i, n in enumerate(nodes) if n is not None]

    vjp_rules[prim] = (applies, rule)


def defbilinear_vjp(prim):
    """The rule of an operation linear in each of its two operands whose JVP is
    ``op(t_x, y) + op(x, t_y)`` (``ad.defjvp`` with one term per operand): each operand's
    transpose, the second operand's first (the transposed sum reaches the second term
    first)."""

    def rule(ct, out, values, nodes, **params):
        x, y = values
        nx, ny = nodes
        transpose = transpose_rule(prim)
        cts = []
        if ny is not None:
            cts.append((1, transpose(ct, x, UndefinedPrimal(ny.aval), **params)[1]))
        if nx is not None:
            cts.append((0, transpose(ct, UndefinedPrimal(nx.aval), y, **params)[0]))
        return cts

    vjp_rules[prim] = (None, rule)
