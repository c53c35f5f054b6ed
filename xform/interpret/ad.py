"""Forward-mode automatic differentiation: the JVP interpreter.

A ``JVPTracer`` carries a ``primal`` and its ``tangent``. A tangent known to be zero is the
symbolic ``Zero(aval)`` and is never materialized: an operation whose operands all have zero
tangents is bound on the parent trace and its result is left unwrapped.

Rule signature: ``jvp_rules[prim](primals, tangents, **params) -> (primals_out,
tangents_out)``, lists; any tangent may be a ``Zero``. Rules run with the parent trace
current, so the primal and tangent computations they bind go to the enclosing interpreter
(eager evaluation, staging for jit, or an outer JVP: that is how ``jvp`` nests).

The one-line registrars below cover the common shapes of rule: ``defjvp`` (one tangent
function per operand, contributions summed), ``defjvp_with_ans`` (the same, each function also
given the result: JAX's ``defjvp2``), ``defjvp_linear`` (the op applied to the tangents; the
joint registrar of a linear op's JVP and transpose is ``transpose.deflinear``) and
``defjvp_zero`` (piecewise-constant or integer-valued ops). They are the public ones:
``xform.extend.ad`` hands them on unchanged, and the built-in primitives use them.
"""

import numpy as np

from xform import core, dtypes
from xform.core import ShapedArray, Tracer, get_aval
from xform.errors import MissingRuleError

jvp_rules = {}


class Zero:
    """A tangent known to be zero, with the abstract value a real one would have."""

    __slots__ = ("aval",)

    def __init__(self, aval):
        self.aval = aval

    def __repr__(self):
        return f"Zero({self.aval.str_short()})"


INEXACT = frozenset(d for d in dtypes.SUPPORTED if dtypes.is_inexact(d))


def is_differentiable(aval):
    """Whether values of type ``aval`` have tangents (float and complex ones do)."""
    return aval.dtype in INEXACT


def tangent_aval(aval):
    """A float or complex value's tangent has its type, weak type included (a Python
    scalar's tangents are weak, as JAX's); integer and boolean values have float0 tangents."""
    if aval.dtype in INEXACT:  # a set lookup: this runs for every operand of every op
        return aval
    return ShapedArray(aval.shape, dtypes.float0)


# Filled by the families that own these ops ("zeros" and "reshape": structural, "add":
# elementwise, "reduce_sum": reductions): the interpreter cannot import the primitive
# modules whose rules import it, and those families import one another in one direction.
tangent_ops = {}


def instantiate(t):
    """A tangent as an array: a ``Zero`` becomes real zeros."""
    if type(t) is not Zero:
        return t
    if t.aval.dtype == dtypes.float0:
        return np.zeros(t.aval.shape, dtypes.float0)
    return tangent_ops["zeros"](t.aval)


def unbroadcast(aval, ct):
    """``ct`` summed back to the shape of an operand of type ``aval`` that an elementwise op
    broadcast: a rank-0 operand, or one with size-1 dimensions where ``ct`` has more."""
    ct_aval = getattr(ct, "aval", None)  # aval_of, inlined: once per transposed operand
    shape = (ct_aval if type(ct_aval) is ShapedArray else get_aval(ct)).shape
    if shape == aval.shape:
        return ct
    reduce_sum, reshape = tangent_ops["reduce_sum"], tangent_ops["reshape"]
    if not aval.shape:
        return reduce_sum(ct, tuple(range(len(shape))))
    dims = tuple(i for i, (a, b) in enumerate(zip(aval.shape, shape, strict=True)) if a != b)
    return reshape(reduce_sum(ct, dims), aval.shape)


def aval_of(x):
    """``get_aval(x)``, faster for the values the interpreters pass around most: arrays and
    tracers carry their aval."""
    aval = getattr(x, "aval", None)
    return aval if type(aval) is ShapedArray else get_aval(x)


def add_tangents(a, b):
    if type(a) is Zero:
        return b
    if type(b) is Zero:
        return a
    return tangent_ops["add"](a, b)


class JVPTracer(Tracer):
    __slots__ = ("primal", "tangent")

    def __init__(self, trace, primal, tangent):
        self._trace = trace
        self.primal = primal
        self.tangent = tangent

    def __repr__(self):  # as JAX's
        if getattr(self._trace.parent, "linearizes", False):
            tangent = get_aval(self.tangent).str_short()
            return f"GradTracer(primal={self.primal}, typeof(tangent)={tangent})"
        return f"JVPTracer(primal={self.primal}, tangent={self.tangent})"

    @property
    def aval(self):
        # aval_of, inlined: read on every operation on the tracer (by xform.numpy's promotion)
        aval = getattr(self.primal, "aval", None)
        return aval if type(aval) is ShapedArray else get_aval(self.primal)

    def concrete_value(self):
        # Differentiating concrete values keeps Python control flow on them working.
        primal = self.primal
        if isinstance(primal, Tracer):
            return primal.concrete_value()
        return np.asarray(primal)


class JVPTrace(core.Trace):
    __slots__ = ("parent", "alive")
    name = "differentiating with jvp"

    def __init__(self, parent):
        self.parent = parent
        self.alive = True

    def to_primal_tangent(self, x):
        if isinstance(x, JVPTracer) and x._trace is self:
            return x.primal, x.tangent
        return x, Zero(tangent_aval(get_aval(x)))

    def process_primitive(self, prim, args, params):
        primals, tangents, nonzero = [], [], False
        for x in args:
            if type(x) is JVPTracer and x._trace is self:
                primals.append(x.primal)
                tangents.append(x.tangent)
                nonzero = True
            else:
                primals.append(x)
                tangents.append(None)
        if not nonzero:  # nothing here is differentiated: no Zero tangents to build
            return self.parent.process_primitive(prim, primals, params)
        for i, t in enumerate(tangents):  # the rules want a typed Zero for every operand
            if t is None:
                tangents[i] = Zero(tangent_aval(aval_of(primals[i])))
        rule = jvp_rules.get(prim)
        if rule is None:
            raise MissingRuleError(
                f"primitive '{prim.name}' has no JVP rule, so it cannot be differentiated"
            )
        # The rule binds on the parent trace; set by hand, not by a context manager object:
        # this runs once per differentiated operation.
        state = core.trace_state
        saved, state.trace = state.trace, self.parent
        try:
            primals_out, tangents_out = rule(primals, tangents, **params)
        finally:
            state.trace = saved
        if len(primals_out) == 1 == len(tangents_out):  # most primitives
            p, t = primals_out[0], tangents_out[0]
            return [p if type(t) is Zero else JVPTracer(self, p, t)]
        return [
            p if type(t) is Zero else JVPTracer(self, p, t)
            for p, t in zip(primals_out, tangents_out, strict=True)
        ]


def jvp_flat(fun, primals, tangents):
    """``fun`` (flat lists in and out) and its directional derivative, as flat lists."""
    trace = JVPTrace(core.trace_state.trace)
    args = [
        p if type(t) is Zero else JVPTracer(trace, p, t)
        for p, t in zip(primals, tangents, strict=True)
    ]
    try:
        with core.set_current_trace(trace):
            outs = fun(*args)
        pairs = [trace.to_primal_tangent(x) for x in outs]
    finally:
        trace.alive = False
    return [p for p, _ in pairs], [t for _, t in pairs]


# --------------------------------------------------------------------------- registrars


def defjvp(prim, *tangent_fns):
    """Rule from one function per operand: ``fn(tangent, *primals, **params)`` is that
    operand's contribution to the output tangent (None: the op is constant in it)."""
    if len(tangent_fns) == 1 and tangent_fns[0] is not None:
        (tangent_fn,) = tangent_fns

        def unary_rule(primals, tangents, **params):
            # Unary ops (sin, log, ...) without the loop: this runs once per differentiated op.
            out = prim.bind(*primals, **params)
            t = tangents[0]
            if type(t) is Zero:
                return [out], [Zero(tangent_aval(aval_of(out)))]
            return [out], [tangent_fn(t, *primals, **params)]

        jvp_rules[prim] = unary_rule
        return

    def rule(primals, tangents, **params):
        out = prim.bind(*primals, **params)
        total = None
        for fn, t in zip(tangent_fns, tangents, strict=False):
            if fn is not None and type(t) is not Zero:
                term = fn(t, *primals, **params)
                total = term if total is None else add_tangents(total, term)
        return [out], [Zero(tangent_aval(aval_of(out))) if total is None else total]

    jvp_rules[prim] = rule


def defjvp_with_ans(prim, *tangent_fns):
    """``defjvp`` for derivatives cheapest in terms of the result: ``fn(tangent, ans,
    *primals, **params)``; the result is computed once, not again per operand (JAX's
    ``defjvp2``)."""

    def rule(primals, tangents, **params):
        ans = prim.bind(*primals, **params)
        total = None  # a Zero only if no operand contributes: this runs per differentiated op
        for fn, t in zip(tangent_fns, tangents, strict=False):
            if fn is not None and type(t) is not Zero:
                term = fn(t, ans, *primals, **params)
                total = term if total is None else add_tangents(total, term)
        return [ans], [Zero(tangent_aval(aval_of(ans))) if total is None else total]

    jvp_rules[prim] = rule


def defjvp_zero(prim):
    """Rule for an op whose output does not change under small changes of its inputs."""

    def rule(primals, tangents, **params):
        outs = prim.bind(*primals, **params)
        outs = outs if prim.multiple_results else [outs]
        return outs, [Zero(tangent_aval(get_aval(o))) for o in outs]

    jvp_rules[prim] = rule


def defjvp_linear(prim):
    """Rule for an op that is linear in all its operands jointly: apply it to the tangents.
    Its transpose rule is registered next to it (``transpose.deflinear`` registers both)."""

    def rule(primals, tangents, **params):
        outs = prim.bind(*primals, **params)
        outs = outs if prim.multiple_results else [outs]
        if all(type(t) is Zero for t in tangents):
            return outs, [Zero(tangent_aval(get_aval(o))) for o in outs]
        touts = prim.bind(*[instantiate(t) for t in tangents], **params)
        return outs, (touts if prim.multiple_results else [touts])

    jvp_rules[prim] = rule
