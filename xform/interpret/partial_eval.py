"""Partial evaluation: compute what is known now, stage what is not into a jaxpr.

A ``PartialEvalTrace`` is a staging trace (``JaxprTrace``) that records only the equations
with at least one *unknown* input — one of its own tracers. An equation whose inputs are all
known (concrete values or tracers of enclosing traces) is handed to the parent trace and its
results stay known. Known values used by recorded equations become the jaxpr's constvars:
the *residuals*.

``linearize`` runs the JVP interpreter on top of this trace with unknown tangents, so the
primal computation happens now and the tangent computation is staged: a linear jaxpr whose
inputs are the tangents and whose constvars are residuals. Reverse mode transposes it.

Rule table: ``partial_eval_rules[prim](trace, args, params) -> outputs`` for primitives that
must split themselves into a known and an unknown part (call primitives: staging a ``jit``
whole would make its primal outputs unknown).
"""

from xform import core
from xform.core import ClosedJaxpr, Jaxpr, eval_jaxpr
from xform.interpret import dce
from xform.interpret.staging import JaxprTrace, JaxprTracer, convert_constvars, trace_to_jaxpr

partial_eval_rules = {}


class PartialEvalTrace(JaxprTrace):
    """Stages equations on unknown values; passes known ones to the parent."""

    __slots__ = ("known",)
    # Linear programs are built on every eager grad call; their equations come from JVP
    # rules, so the user's source line would say little and costs a frame walk each.
    record_source = False
    # A JVP under this trace is linearize's (grad under jit or vmap, vjp, linearize): its
    # tracers print as JAX's GradTracers.
    linearizes = True

    def __init__(self, parent, name):
        super().__init__(parent, name)
        # Where known operations go: the parent's rule, bound once (under eager evaluation,
        # the eager ``apply`` itself).
        self.known = parent.process_primitive

    def to_atom(self, x):
        # A concrete array the program reads (a residual) is a constvar even when 0-d, as
        # JAX's partial evaluation keeps it: a pullback's pytree leaves are its residuals.
        if getattr(x, "aval", None) is not None and not isinstance(x, core.Tracer):
            return self._capture(x, x.aval)
        return JaxprTrace.to_atom(self, x)

    def is_unknown(self, x):
        return isinstance(x, JaxprTracer) and x._trace is self

    def process_primitive(self, prim, args, params):
        for x in args:
            if type(x) is JaxprTracer and x._trace is self:
                break
        else:  # every input known: computed now, by the enclosing interpreter
            return self.known(prim, args, params)
        rule = partial_eval_rules.get(prim)
        if rule is not None:
            return rule(self, args, params)
        return JaxprTrace.process_primitive(self, prim, args, params)

    def to_closed_jaxpr(self, outs):
        """The staged program from this trace's inputs to ``outs`` (unknown or known)."""
        outvars = [self.to_atom(x) for x in outs]
        return ClosedJaxpr(Jaxpr(self.constvars, self.invars, outvars, self.eqns), self.consts)


def partial_eval_flat(fun, known, unknown_avals, name):
    """Run ``fun(*known, *unknowns)``: known outputs now, the rest as a closed jaxpr.

    Returns ``(outs, jaxpr)``: ``outs`` holds the known outputs and, for unknown ones, None;
    ``jaxpr`` maps the unknown inputs to every output (known ones as constants).
    """
    trace = PartialEvalTrace(core.trace_state.trace, name)
    unknowns = [trace.new_arg(a) for a in unknown_avals]
    try:
        with core.set_current_trace(trace):
            outs = fun(*known, *unknowns)
        jaxpr = trace.to_closed_jaxpr(outs)
    finally:
        trace.alive = False
    return [None if trace.is_unknown(x) else x for x in outs], jaxpr


def partial_eval_jaxpr(closed, unknowns, name, instantiate=None):
    """Split ``closed`` by which inputs are unknown (outputs marked in ``instantiate`` are
    made unknown even where they are known).

    Returns ``(known_jaxpr, known_consts, unknown_jaxpr, out_unknowns, num_residuals)``:
    ``known_jaxpr`` maps ``known_consts`` and the known inputs to the known outputs followed
    by residuals; ``unknown_jaxpr`` maps residuals followed by the unknown inputs to the
    unknown outputs. Both are const-free; the residuals are only those the unknown part reads.
    """
    in_avals = closed.in_avals
    known_avals = [a for a, u in zip(in_avals, unknowns, strict=True) if not u]
    unknown_avals = [a for a, u in zip(in_avals, unknowns, strict=True) if u]
    run = eval_known_first(closed, unknowns)
    split = {}

    def known_fun(*known):
        outs, staged = partial_eval_flat(run, known, unknown_avals, name)
        out_unknowns = [
            x is None or bool(instantiate and instantiate[i]) for i, x in enumerate(outs)
        ]
        # The unknown part computes only the unknown outputs and keeps only the residuals it
        # reads (known outputs were staged as residuals too).
        staged, _ = dce.dce_closed_jaxpr(staged, out_unknowns)
        split["unknown"], residuals = convert_constvars(staged)
        split["out_unknowns"] = out_unknowns
        split["num_residuals"] = len(residuals)
        return [x for x, u in zip(outs, out_unknowns, strict=True) if not u] + residuals

    known_jaxpr, known_consts = convert_constvars(trace_to_jaxpr(known_fun, known_avals, name))
    return (
        known_jaxpr,
        known_consts,
        split["unknown"],
        split["out_unknowns"],
        split["num_residuals"],
    )


def eval_known_first(closed, unknowns):
    """``closed`` as a function of its known inputs followed by its unknown ones."""
    n_known = sum(not u for u in unknowns)

    def run(*args):
        known, unknown = iter(args[:n_known]), iter(args[n_known:])
        return eval_jaxpr(
            closed.jaxpr, closed.consts, *[next(unknown) if u else next(known) for u in unknowns]
        )

    return run
