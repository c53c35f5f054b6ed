"""The call primitive of ``jit``: ``jit[jaxpr=..., name=...] *args`` runs a closed jaxpr.

Its jaxpr carries no consts (``jit`` passes them as leading arguments), so the equation is
self-contained and later transformations rewrite the jaxpr, not the Python function.
"""

from xform.core import Primitive, abstract_eval_rules

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
