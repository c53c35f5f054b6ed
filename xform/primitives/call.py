"""The call primitive of ``jit``: ``jit[jaxpr=..., name=...] *args`` runs a closed jaxpr.

Its jaxpr carries no consts (``jit`` passes them as leading arguments), so the equation is
self-contained and later transformations rewrite the jaxpr, not the Python function.
"""

import weakref

from xform.core import (
    ClosedJaxpr,
    Jaxpr,
    Primitive,
    abstract_eval_rules,
    eval_jaxpr,
    set_current_trace,
)
from xform.interpret import ad, batching, dce, partial_eval, transpose
from xform.interpret.staging import convert_constvars, trace_to_jaxpr

jit_p = Primitive("jit", multiple_results=True)


def call_abstract_eval(what, avals, jaxpr):
    """The output types of a call-like primitive running ``jaxpr`` on ``avals``; TypeError
    naming ``what`` when the operands do not match what the jaxpr takes."""
    expected = jaxpr.in_avals
    if len(avals) != len(expected) or any(
        a.shape != e.shape or a.dtype != e.dtype for a, e in zip(avals, expected, strict=True)
    ):
        got = ", ".join(a.str_short() for a in avals)
        want = ", ".join(a.str_short() for a in expected)
        raise TypeError(
            f"{what}: called with arguments of types ({got}) but its jaxpr takes ({want})"
        )
    return jaxpr.out_avals


def _jit_abstract_eval(*avals, jaxpr, name):
    return call_abstract_eval(f"jit of {name}", avals, jaxpr)


abstract_eval_rules[jit_p] = _jit_abstract_eval


# --------------------------------------------------------------------------- jvp

# jaxpr -> {nonzero-tangent mask: (jvp jaxpr, mask of nonzero output tangents)}
_jvp_jaxprs = weakref.WeakKeyDictionary()


def jvp_jaxpr(jaxpr, nonzeros):
    """A const-free jaxpr computing (primals_out, nonzero tangents_out) from (primals, the
    nonzero tangents): the jit body differentiated once and cached, not re-traced per call."""
    cache = _jvp_jaxprs.setdefault(jaxpr.jaxpr, {})
    hit = cache.get(nonzeros)
    if hit is not None:
        return hit
    n = len(nonzeros)
    in_avals = jaxpr.in_avals + [
        ad.tangent_aval(a) for a, nz in zip(jaxpr.in_avals, nonzeros, strict=True) if nz
    ]
    out_nonzeros = []

    def jvp_fun(*args):
        primals, nonzero_tangents = args[:n], iter(args[n:])
        tangents = [
            next(nonzero_tangents) if nz else ad.Zero(ad.tangent_aval(a))
            for a, nz in zip(jaxpr.in_avals, nonzeros, strict=True)
        ]
        primals_out, tangents_out = ad.jvp_flat(
            lambda *xs: eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *xs), primals, tangents
        )
        out_nonzeros[:] = [type(t) is not ad.Zero for t in tangents_out]
        return primals_out + [t for t in tangents_out if type(t) is not ad.Zero]

    closed = trace_to_jaxpr(jvp_fun, in_avals, "differentiating a jit body")
    body, consts = convert_constvars(closed)
    hit = cache[nonzeros] = (body, consts, tuple(out_nonzeros))
    return hit


def call_jvp(jaxpr, primals, tangents, bind):
    """The JVP rule of a call-like primitive running ``jaxpr``: ``bind(body, operands,
    num_consts, nonzeros, out_nonzeros)`` binds the primitive on the differentiated body
    (``jvp_jaxpr``) with its operands (consts, primals, nonzero tangents)."""
    nonzeros = tuple(type(t) is not ad.Zero for t in tangents)
    body, consts, out_nonzeros = jvp_jaxpr(jaxpr, nonzeros)
    operands = [*consts, *primals, *[t for t in tangents if type(t) is not ad.Zero]]
    outs = bind(body, operands, len(consts), nonzeros, out_nonzeros)
    n_out = len(out_nonzeros)
    primals_out, nonzero_tangents = outs[:n_out], iter(outs[n_out:])
    tangents_out = [
        next(nonzero_tangents) if nz else ad.Zero(ad.tangent_aval(ad.aval_of(p)))
        for p, nz in zip(primals_out, out_nonzeros, strict=True)
    ]
    return primals_out, tangents_out


def _jit_jvp(primals, tangents, *, jaxpr, name):
    # The differentiated, transposed and batched bodies keep the function's name, as JAX's.
    return call_jvp(
        jaxpr,
        primals,
        tangents,
        lambda body, operands, *_: jit_p.bind(*operands, jaxpr=body, name=name),
    )


ad.jvp_rules[jit_p] = _jit_jvp


# --------------------------------------------------------------------------- partial eval

_split_jaxprs = weakref.WeakKeyDictionary()  # jaxpr -> {unknowns: partial_eval_jaxpr(...)}


def split_jaxpr(jaxpr, unknowns, what):
    """``partial_eval.partial_eval_jaxpr(jaxpr, unknowns, what)``, once per body and mask."""
    cache = _split_jaxprs.setdefault(jaxpr.jaxpr, {})
    split = cache.get(unknowns)
    if split is None:
        split = cache[unknowns] = partial_eval.partial_eval_jaxpr(jaxpr, unknowns, what)
    return split


_forwarding = weakref.WeakKeyDictionary()  # known jaxpr -> forward_residual_inputs(...)


def forward_residual_inputs(known_jaxpr, num_res):
    """As JAX's: a residual that is an input of the known jaxpr is handed on, not returned.
    (The known jaxpr without those outputs, and per residual its input's index or None.)"""
    hit = _forwarding.get(known_jaxpr.jaxpr)
    if hit is not None:
        return hit
    body = known_jaxpr.jaxpr
    position = {v: i for i, v in enumerate(body.invars)}
    num_out = len(body.outvars) - num_res
    sources = [position.get(v) for v in body.outvars[num_out:]]
    if any(i is not None for i in sources):
        kept = body.outvars[:num_out] + [
            v for v, i in zip(body.outvars[num_out:], sources, strict=True) if i is None
        ]
        known_jaxpr = ClosedJaxpr(
            Jaxpr(body.constvars, body.invars, kept, body.eqns), known_jaxpr.consts
        )
    hit = _forwarding[body] = (known_jaxpr, sources)
    return hit


def _jit_partial_eval(trace, args, params):
    """Split a jit call with unknown inputs: run the known part now (as its own jit), stage
    the unknown part (another jit) on the residuals it needs."""
    jaxpr, name = params["jaxpr"], params["name"]
    unknowns = tuple(trace.is_unknown(x) for x in args)
    split = split_jaxpr(jaxpr, unknowns, f"partially evaluating `{name}`")
    known_jaxpr, known_consts, unknown_jaxpr, out_unknowns, num_res = split
    known_jaxpr, sources = forward_residual_inputs(known_jaxpr, num_res)
    known_args = [x for x, u in zip(args, unknowns, strict=True) if not u]
    with set_current_trace(trace.parent):
        known_outs = jit_p.bind(*known_consts, *known_args, jaxpr=known_jaxpr, name=name)
    num_out = len(known_outs) - sum(i is None for i in sources)
    returned, known_in = iter(known_outs[num_out:]), [*known_consts, *known_args]
    residuals = [next(returned) if i is None else known_in[i] for i in sources]
    unknown_args = [x for x, u in zip(args, unknowns, strict=True) if u]
    unknown_outs = iter(
        trace.stage(
            jit_p,
            residuals + unknown_args,
            {"jaxpr": unknown_jaxpr, "name": name},
            unknown_jaxpr.out_avals,
        )
    )
    known_outs = iter(known_outs[:num_out])
    return [next(unknown_outs) if u else next(known_outs) for u in out_unknowns]


partial_eval.partial_eval_rules[jit_p] = _jit_partial_eval


# --------------------------------------------------------------------------- transpose

_transposed_jaxprs = weakref.WeakKeyDictionary()  # jaxpr -> {linear mask: jaxpr}


def backward(jaxpr, linear, args, nonzero=None):
    """The backward pass of ``jaxpr`` linear in the inputs ``linear`` marks: ``args`` are its
    other inputs' values, then the cotangents of its outputs that ``nonzero`` marks (all when
    None; the others are zero); a cotangent (or None) per input."""
    n_values = len(linear) - sum(linear)
    values, cts = iter(args[:n_values]), iter(args[n_values:])
    invals = [
        transpose.UndefinedPrimal(a) if lin else next(values)
        for a, lin in zip(jaxpr.in_avals, linear, strict=True)
    ]
    if nonzero is None:
        nonzero = (True,) * len(jaxpr.out_avals)
    cts_out = [
        next(cts) if nz else ad.Zero(a) for a, nz in zip(jaxpr.out_avals, nonzero, strict=True)
    ]
    return transpose.backward_pass(jaxpr.jaxpr, jaxpr.consts, invals, cts_out)


def transposed_jaxpr(jaxpr, linear, nonzero=None):
    """The backward pass of ``jaxpr`` as a closed jaxpr (consts leading) of the values and
    the cotangents ``nonzero`` marks, for the inputs ``linear`` marks. A zero cotangent
    stays symbolic, so what computes only outputs nobody differentiates (a while loop beside
    the result, say) is never transposed, as in JAX."""
    if nonzero is None:
        nonzero = (True,) * len(jaxpr.out_avals)
    cache = _transposed_jaxprs.setdefault(jaxpr.jaxpr, {})
    hit = cache.get((linear, nonzero))
    if hit is not None:
        return hit
    in_avals = jaxpr.in_avals
    value_avals = [a for a, lin in zip(in_avals, linear, strict=True) if not lin]
    ct_avals = [a for a, nz in zip(jaxpr.out_avals, nonzero, strict=True) if nz]

    def transposed(*args):
        cts_in = backward(jaxpr, linear, args, nonzero)
        return [ad.instantiate(ct) for ct, lin in zip(cts_in, linear, strict=True) if lin]

    closed = trace_to_jaxpr(transposed, value_avals + ct_avals, "transposing a jit body")
    hit = cache[(linear, nonzero)] = convert_constvars(closed)
    return hit


def _jit_transpose(cts, *invals, jaxpr, name):
    linear = tuple(transpose.is_undefined(x) for x in invals)
    nonzero = tuple(type(ct) is not ad.Zero for ct in cts)
    body, consts = transposed_jaxpr(jaxpr, linear, nonzero)
    values = [x for x in invals if not transpose.is_undefined(x)]
    given = [ct for ct in cts if type(ct) is not ad.Zero]
    cts_in = iter(jit_p.bind(*consts, *values, *given, jaxpr=body, name=name))
    return [next(cts_in) if lin else None for lin in linear]


transpose.transpose_rules[jit_p] = _jit_transpose


# --------------------------------------------------------------------------- batching


def _jit_batch(axis, args, dims, *, jaxpr, name):
    body, consts, out_batched = batching.batch_jaxpr(jaxpr, axis, dims)
    outs = jit_p.bind(*consts, *args, jaxpr=body, name=name)
    return outs, [0 if b else batching.not_mapped for b in out_batched]


batching.batch_rules[jit_p] = _jit_batch


# --------------------------------------------------------------------------- dead code
# A jit call sheds the outputs nobody reads, and its body what computes only them.
dce.dce_rules[jit_p] = dce.dce_call


# --------------------------------------------------------------------------- JAX's call_p
# JAX's generic call primitives, which programs and libraries name (numpyro keys its
# provenance rules by them). xform has one call primitive, ``jit_p``: binding these runs
# their function as a ``jit`` call (a closed jaxpr's consts become its leading operands), so
# every transformation applies to them and xform's jaxprs hold only ``jit``.


class CallPrimitive(Primitive):
    """``call_p.bind(fun, *args)``: ``fun`` (a ``WrappedFun``) called as it is."""

    __slots__ = ()

    def bind(self, fun, *args, **params):
        return list(fun.call_wrapped(*args))


class _ClosedCallPrimitive(Primitive):
    """``closed_call_p.bind(*args, call_jaxpr=closed)``: a ``jit`` call of ``closed``."""

    __slots__ = ()

    def bind(self, *args, call_jaxpr, **params):
        jaxpr, consts = convert_constvars(call_jaxpr)
        return jit_p.bind(*consts, *args, jaxpr=jaxpr, name=params.get("name", self.name))


call_p = CallPrimitive("call", multiple_results=True)
closed_call_p = _ClosedCallPrimitive("closed_call", multiple_results=True)
