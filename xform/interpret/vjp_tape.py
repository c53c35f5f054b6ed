"""Eager ``grad`` as HIPS autograd does it: record each operation, then pull back.

Under an eager ``grad`` (no enclosing trace), a ``VJPTracer`` carries a concrete ``value``
and the ``node`` (a ``Var``) that stands for its tangent. ``VJPTrace.process_primitive``
computes each operation on the values right away and records it; ``backward`` walks the
records in reverse, accumulating cotangents per node.

One derivative per primitive: a pullback is the primitive's JVP rule (``ad.jvp_rules``)
linearized and transposed by its transpose rules, as ``linearize`` + ``transpose`` do; no VJP
is registered by hand. For speed a primitive is linearized once per signature (primitive,
operand avals, which operands are differentiated, params; by value, never by ``id()``): its
JVP rule runs on abstract operands, the primal side staged into a *known* program (values ->
primal outputs and residuals), the tangent side recorded on a ``tape.TapeTrace`` as linear
records over the residuals: a ``Linearized``. An operation of that signature runs the known
program on its values and records the ``Linearized`` with them; ``backward`` transposes its
records. These are the operations the JVP rule makes eagerly, on the same values, summed in
the same order: every cotangent is the one ``linearize`` + ``transpose`` computes, bit for bit.

A signature whose rule reads a value, whose params are not plain (jaxprs, functions) or
whose linear side is staged (``jit``, control flow, custom rules) is linearized where it
stands, every time: its JVP rule runs on a ``TapeTrace`` whose tangent inputs are the
operands' nodes, and the linear records it makes (or the jaxpr it stages) join this tape.
"""

import numpy as np

from xform import core
from xform.core import Literal, Tracer, Var
from xform.errors import MissingRuleError
from xform.interpret import ad
from xform.interpret.ad import Zero, add_tangents
from xform.interpret.staging import JaxprTracer, memoized_with_params, trace_to_jaxpr
from xform.interpret.tape import TapeTrace, transpose_tape
from xform.interpret.transpose import (
    UndefinedPrimal,
    backward_pass,
    pop_cotangent,
    transpose_rule,
    transpose_rules,
)

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
    ``(linearized, slots, nodes, out_nodes)`` for an operation of a linearized signature
    (``slots``: its known program's values, the residuals among them; ``out_nodes``: the
    output's node itself where there is one output),
    ``(None, tape)`` for linear operations a JVP rule recorded where it stood, ``(None,
    None, closed jaxpr, in_nodes, out_nodes)`` for a linear program it staged."""

    __slots__ = ("parent", "records", "alive")
    name = "differentiating with grad"

    def __init__(self, parent):
        self.parent = parent
        self.records = []
        self.alive = True

    def new_input(self, value, aval):
        return VJPTracer(self, value, Var(ad.tangent_aval(aval)))

    def process_primitive(self, prim, args, params):
        values, nodes = [], []
        tracked = False
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
        # The signature, spelled out for the common cases: one or two operands, every one
        # differentiated (its aval is its tangent's, its node's), plain params or none.
        n = len(nodes)
        if n > 2 or (params and prim not in memoized_with_params):
            key = _signature(prim, values, nodes, params)
        elif n == 1:
            key = (prim, nodes[0].aval, *params.items()) if params else (prim, nodes[0].aval)
        elif nodes[0] is None or nodes[1] is None:
            key = _signature(prim, values, nodes, params)
        elif params:
            key = (prim, nodes[0].aval, nodes[1].aval, *params.items())
        else:
            key = (prim, nodes[0].aval, nodes[1].aval)
        try:
            lin = _signatures.get(key, _MISSING) if key is not None else None
        except TypeError:  # an unhashable value inside a tuple param
            lin = None
        if lin is _MISSING:
            lin = _linearize_signature(prim, key, values, nodes, params)
        if lin is None:
            return self.linearized(prim, values, nodes, params)
        # The known program: the primal outputs and the residuals, on slots after the values.
        apply = self.parent.process_primitive
        if lin.eqns is None:  # the known program is the primitive on the operands
            env = values  # (the list is this call's own: extended in place)
            env += apply(prim, values, params)
        else:
            env = values
            env += lin.consts
            for p, ins, prm in lin.eqns:
                if len(ins) == 1:  # (no list comprehension, a function call each, per eqn)
                    env += apply(p, [env[ins[0]]], prm)
                elif len(ins) == 2:
                    env += apply(p, [env[ins[0]], env[ins[1]]], prm)
                else:
                    env += apply(p, [env[i] for i in ins], prm)
        if lin.out is not None:  # one output, as most primitives: no lists to build
            out, spec = env[lin.out], lin.out_specs[0]
            if spec is None:
                return [out]
            node = Var(spec) if type(spec) is not int else nodes[spec]
            if lin.backward:
                self.records.append((lin, env, nodes, node))
            return [VJPTracer(self, out, node)]
        return self._outputs(lin, env, nodes)

    def _outputs(self, lin, env, nodes):
        """The outputs of an operation of several results, recorded for ``backward``."""
        outs, out_nodes = [], []
        for i, spec in zip(lin.outs, lin.out_specs, strict=True):
            if spec is None:
                outs.append(env[i])
                out_nodes.append(None)
                continue
            node = Var(spec) if type(spec) is not int else nodes[spec]
            outs.append(VJPTracer(self, env[i], node))
            out_nodes.append(node)
        if lin.backward:
            self.records.append((lin, env, nodes, out_nodes))
        return outs

    def linearized(self, prim, values, nodes, params):
        """``prim`` through its JVP rule on a tape whose tangent inputs are ``nodes``."""
        rule = _jvp_rule(prim)
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
            lin = record[0]
            if lin is not None:
                _, slots, nodes, outs = record
                lin.transpose(env, slots, nodes, outs)
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


# --------------------------------------------------------------------------- signatures


def _jvp_rule(prim):
    rule = ad.jvp_rules.get(prim)
    if rule is None:
        raise MissingRuleError(
            f"primitive '{prim.name}' has no JVP rule, so it cannot be differentiated"
        )
    return rule


class Linearized:
    """A primitive's JVP rule at one signature, split into a known program and linear records.

    The known program runs on slots: the operand values, then ``consts`` (the staged
    constants and literals), then each equation's outputs in turn; ``eqns`` holds ``(prim,
    input slots, params)`` (None when the program is the primitive itself on the operands)
    and ``outs`` the slots of the primal outputs. ``out_specs`` says per
    output where its tangent comes from: None (it has none), an operand position (the rule
    passed that operand's tangent through) or the aval of a new node. ``backward`` is the
    tape the rule recorded, compiled for ``transpose``, last record first."""

    __slots__ = ("consts", "eqns", "outs", "out", "out_specs", "out_vars", "backward", "direct")

    def transpose(self, env, slots, nodes, out_nodes):
        """Pull the cotangents in ``env`` (node -> cotangent; updated in place) of
        ``out_nodes`` (a node for one output) back to ``nodes``, the operands, through the
        records, with the residuals read from ``slots``: ``tape.transpose_tape`` on the
        records with the tangent inputs read as ``nodes``, so the sums come in the same
        order."""
        out_vars = self.out_vars
        if len(out_vars) == 1:  # most primitives
            v = out_vars[0]
            if v is None or (ct := env.pop(out_nodes, None)) is None:
                return
            # The cotangents of the records' own variables; none for a direct one, whose
            # only record goes from the operands' tangents to the output's.
            local = None if self.direct else {v: ct}
        else:
            local = {}
            for v, n in zip(out_vars, out_nodes, strict=True):
                if v is not None and (ct := env.pop(n, None)) is not None:
                    local[v] = ct
        for outvar, prim, rule, params, outvars, operands, fills, linear in self.backward:
            if local is not None:
                if outvar is None:  # several results
                    ct = pop_cotangent(local, prim, outvars)
                else:  # (pop_cotangent, inlined: once per record of every operation)
                    ct = local.pop(outvar, None)
                if ct is None:
                    continue
            if fills:
                operands = operands.copy()  # noqa: PLW2901  (the record's own stays as it is)
                for i, slot in fills:
                    operands[i] = slots[slot]
            cts_in = rule(ct, *operands, **params)
            if len(cts_in) != len(operands):
                raise ValueError(
                    f"the transpose rule of '{prim.name}' returned {len(cts_in)} "
                    f"cotangents for {len(operands)} operands"
                )
            for i, v, position in linear:  # in operand order, as backward_pass sums
                if (ct_in := cts_in[i]) is not None and type(ct_in) is not Zero:
                    if position is None:
                        old = local.get(v)
                        local[v] = ct_in if old is None else add_tangents(old, ct_in)
                    else:
                        n = nodes[position]
                        old = env.get(n)
                        env[n] = ct_in if old is None else add_tangents(old, ct_in)


# Signature -> its ``Linearized``, or None where it is linearized where it stands. Keys hold
# avals and plain params by value (never an id()): an entry is right for any operation that
# matches it. Params of other types (functions, jaxprs) may close over residuals, which an
# entry must not keep alive: their operations are not cached.
_signatures = {}
_MISSING = object()
_KNOWN = object()  # marks an operand that is not differentiated, in a signature
_MAX_CONST_BYTES = 4096  # a signature whose rule makes larger constants is not cached
_PLAIN = frozenset((tuple, int, bool, str, float, type(None)))


def _signature(prim, values, nodes, params):
    """The key of an operation in ``_signatures``: ``prim``, then per operand its aval if it
    is differentiated, else ``_KNOWN`` and its aval, then the params; None where it has no
    key (params that are not plain values)."""
    key = [prim]
    for x, node in zip(values, nodes, strict=True):
        if node is not None:
            key.append(node.aval)
        else:
            aval = getattr(x, "aval", None)  # ad.aval_of, inlined: per operand
            key.append(_KNOWN)
            key.append(aval if type(aval) is core.ShapedArray else core.get_aval(x))
    if params:
        if prim not in memoized_with_params:  # (those have plain params: no check)
            for v in params.values():
                if type(v) not in _PLAIN and not isinstance(v, np.dtype):
                    return None
        key.extend(params.items())
    return tuple(key)


def _linearize_signature(prim, key, values, nodes, params):
    """Linearize ``prim``'s JVP rule at the signature ``key`` of ``values`` and ``nodes``,
    and remember it (None where it must be linearized where it stands)."""
    if len(_signatures) > 4096:
        _signatures.clear()
    rule = _jvp_rule(prim)
    avals, parts = [], iter(key[1:])
    for _ in values:  # the operands' avals, read back from the signature
        aval = next(parts)
        avals.append(next(parts) if aval is _KNOWN else aval)
    split = {}
    try:
        with core.set_current_trace(core.eval_trace):
            closed = trace_to_jaxpr(
                lambda *primals: _split_rule(rule, primals, avals, nodes, params, split),
                avals,
                "linearizing",
            )
        lin = _compile(prim, params, closed, split, len(values))
    except Exception:  # the rule reads a value or stages: linearized where it stands
        lin = None
    _signatures[key] = lin
    return lin


def _split_rule(rule, primals, avals, nodes, params, split):
    """Run the JVP ``rule`` on staged ``primals`` with its tangent side on a tape (the staged
    values as its known operands); the primal outputs, then the residuals (the staged values
    the tape reads). The tape, each residual as ``(None, index)``, goes to ``split``."""
    tape = TapeTrace(core.trace_state.trace, "linearizing")
    tangents = [
        ad.Zero(ad.tangent_aval(a)) if n is None else tape.new_arg(ad.tangent_aval(a))
        for a, n in zip(avals, nodes, strict=True)
    ]
    try:
        with core.set_current_trace(tape):
            outs, tangents_out = rule(list(primals), tangents, **params)
    finally:
        tape.alive = False
    if tape.tape is None:
        raise _NotTaped
    residuals, index, records = [], {}, []
    for prim, operands, prm, outvars in tape.tape:
        ops = []
        for x in operands:
            if isinstance(x, Tracer):  # a staged value (alive: the tape holds it)
                i = index.get(id(x))
                if i is None:
                    i = index[id(x)] = len(residuals)
                    residuals.append(x)
                ops.append((None, i))
            else:
                ops.append(x)
        records.append((prim, ops, prm, outvars))
    split["records"], split["n_outs"] = records, len(outs)
    split["tangent_in"] = {t.jaxpr_var: i for i, t in enumerate(tangents) if type(t) is not ad.Zero}
    split["out_vars"] = [
        t.jaxpr_var if type(t) is JaxprTracer and t._trace is tape else None for t in tangents_out
    ]
    return [*outs, *residuals]


def _compile(prim, params, closed, split, n_in):
    """A ``Linearized`` from the known program ``closed`` and the tape in ``split``."""
    out_vars = split["out_vars"]
    if len({id(v) for v in out_vars if v is not None}) < sum(v is not None for v in out_vars):
        raise _NotTaped  # two outputs share a tangent: left to the general path
    jaxpr = closed.jaxpr
    # Slots: the operands, the staged constants, the literals, then each equation's outputs.
    slots = {v: i for i, v in enumerate(jaxpr.invars)}
    consts = list(closed.consts)
    slots.update((v, n_in + i) for i, v in enumerate(jaxpr.constvars))
    for x in [x for eqn in jaxpr.eqns for x in eqn.invars] + list(jaxpr.outvars):
        if type(x) is Literal:
            slots[x] = n_in + len(consts)  # (a Literal hashes by identity)
            consts.append(x.val)
    operands = [x for _, ops, _, _ in split["records"] for x in ops if type(x) is not Var]
    if any(getattr(c, "nbytes", 0) > _MAX_CONST_BYTES for c in [*consts, *operands]):
        raise _NotTaped  # a large constant the rule made: not kept alive in the cache
    n_slots = n_in + len(consts)
    for eqn in jaxpr.eqns:
        for v in eqn.outvars:
            slots[v] = n_slots
            n_slots += 1
    lin = Linearized()
    lin.consts = consts
    lin.eqns = [(eqn.primitive, [slots[x] for x in eqn.invars], eqn.params) for eqn in jaxpr.eqns]
    if not consts and lin.eqns == [(prim, list(range(n_in)), params)]:
        lin.eqns = None  # (the common case, run without the loop)
    out_slots = [slots[x] for x in jaxpr.outvars]
    lin.outs, residual_slots = out_slots[: split["n_outs"]], out_slots[split["n_outs"] :]
    lin.out = lin.outs[0] if len(lin.outs) == 1 else None
    tangent_in = split["tangent_in"]
    lin.out_specs = [
        None if v is None else tangent_in[v] if v in tangent_in else v.aval for v in out_vars
    ]
    lin.out_vars = [None if v is None or v in tangent_in else v for v in out_vars]
    lin.backward = [
        _compile_record(record, residual_slots, tangent_in) for record in reversed(split["records"])
    ]
    # One record from the operands' tangents to the one output's: no cotangents of its own.
    record = lin.backward[0] if len(lin.backward) == 1 and lin.out is not None else None
    lin.direct = (
        record is not None
        and record[0] is lin.out_vars[0] is not None
        and all(position is not None for _, _, position in record[-1])
    )
    return lin


def _compile_record(record, residual_slots, tangent_in):
    """A tape record as ``Linearized.transpose`` reads it: ``(outvar, prim, transpose rule,
    params, outvars, operands, fills, linear)``, where ``outvar`` is the one output (None
    for several), ``operands`` holds an ``UndefinedPrimal`` per linear operand and the
    constants, ``fills`` the ``(position, slot)`` of each residual, and ``linear`` the
    ``(position, Var, operand position or None)`` of each linear operand."""
    prim, operands, params, outvars = record
    invals, fills, linear = [], [], []
    for i, x in enumerate(operands):
        if type(x) is Var:
            invals.append(UndefinedPrimal(x.aval))
            linear.append((i, x, tangent_in.get(x)))
        elif type(x) is tuple and x[0] is None:
            invals.append(None)
            fills.append((i, residual_slots[x[1]]))
        else:
            invals.append(x)
    rule = transpose_rules.get(prim)
    if rule is None:  # raised where a cotangent reaches it, as by backward_pass

        def rule(*args, **params):
            return transpose_rule(prim)(*args, **params)

    outvar = None if prim.multiple_results else outvars[0]
    return (outvar, prim, rule, params, outvars, invals, fills, linear)


class _NotTaped(Exception):
    """The JVP rule staged its linear side (jit, control flow): no records to cache."""
