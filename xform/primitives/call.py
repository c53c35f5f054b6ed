"""The call primitive of ``jit``: ``jit[jaxpr=..., name=...] *args`` runs a closed jaxpr.

Its jaxpr carries no consts (``jit`` passes them as leading arguments), so the equation is
self-contained and later transformations rewrite the jaxpr, not the Python function.
"""

import weakref

from xform.core import Primitive, abstract_eval_rules, eval_jaxpr
from xform.interpreters import ad
from xform.interpreters.staging import convert_constvars, trace_to_jaxpr

jit_p = Primitive("jit", multiple_results=True)


def _jit_abstract_eval(*avals, jaxpr, name):
    expected = jaxpr.in_avals
    if len(avals) != len(expected) or any(
            a.shape != e.shape or a.dtype != e.dtype for a, e in zip(avals, expected, strict=True)):
        got = ", ".join(a.str_short() for a in avals)
        want = ", ".join(a.str_short() for a in expected)
        raise TypeError(f"jit of {name}: called with arguments of types ({got}) but its jaxpr "
                        f"takes ({want})")
    return jaxpr.out_avals


abstract_eval_rules[jit_p] = _jit_abstract_eval


# --------------------------------------------------------------------------- jvp

# jaxpr -> {nonzero-tangent mask: (jvp jaxpr, mask of nonzero output tangents)}
_jvp_jaxprs = weakref.WeakKeyDictionary()


def _jvp_jaxpr(jaxpr, nonzeros):
    """A const-free jaxpr computing (primals_out, nonzero tangents_out) from (primals, the
    nonzero tangents): the jit body differentiated once and cached, not re-traced per call."""
    cache = _jvp_jaxprs.setdefault(jaxpr.jaxpr, {})
    hit = cache.get(nonzeros)
    if hit is not None:
        return hit
    n = len(nonzeros)
    in_avals = jaxpr.in_avals + [ad.tangent_aval(a) for a, nz in zip(jaxpr.in_avals, nonzeros,
                                                                     strict=True) if nz]
    out_nonzeros = []

    def jvp_fun(*args):
        primals, nonzero_tangents = args[:n], iter(args[n:])
        tangents = [next(nonzero_tangents) if nz else ad.Zero(ad.tangent_aval(a))
                    for a, nz in zip(jaxpr.in_avals, nonzeros, strict=True)]
        primals_out, tangents_out = ad.jvp_flat(
            lambda *xs: eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *xs), primals, tangents)
        out_nonzeros[:] = [type(t) is not ad.Zero for t in tangents_out]
        return primals_out + [t for t in tangents_out if type(t) is not ad.Zero]

    closed = trace_to_jaxpr(jvp_fun, in_avals, "differentiating a jit body")
    body, consts = convert_constvars(closed)
    hit = cache[nonzeros] = (body, consts, tuple(out_nonzeros))
    return hit


def _jit_jvp(primals, tangents, *, jaxpr, name):
    nonzeros = tuple(type(t) is not ad.Zero for t in tangents)
    body, consts, out_nonzeros = _jvp_jaxpr(jaxpr, nonzeros)
    outs = jit_p.bind(*consts, *primals, *[t for t in tangents if type(t) is not ad.Zero],
                      jaxpr=body, name=f"jvp({name})")
    n_out = len(jaxpr.out_avals)
    primals_out, nonzero_tangents = outs[:n_out], iter(outs[n_out:])
    tangents_out = [next(nonzero_tangents) if nz else ad.Zero(ad.tangent_aval(a))
                    for a, nz in zip(jaxpr.out_avals, out_nonzeros, strict=True)]
    return primals_out, tangents_out


ad.jvp_rules[jit_p] = _jit_jvp
