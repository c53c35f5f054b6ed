"""Differentiation rules for new primitives, as ``jax.interpreters.ad`` names them.

The rule tables and registrars here are the ones xform's own primitives use
(``xform/interpret/ad.py`` and ``transpose.py``, handed on unchanged). Their convention, the
one xform's interpreters read:

- ``jvp_rules[prim] = rule`` with ``rule(primals, tangents, **params) -> (primals_out,
  tangents_out)``, two lists (one entry each for a single-result primitive); any tangent
  may be a symbolic ``Zero(aval)``. The rule runs with the enclosing trace current, so what
  it binds is evaluated, staged or differentiated again as the context asks.
- ``primitive_transposes[prim] = rule`` (the same table as ``transpose_rules``), for a
  linear primitive, with ``rule(ct, *args, **params) -> cotangents``, one per operand
  (``None`` for an operand that is not linear); the linear operands arrive as
  ``UndefinedPrimal``s (``is_undefined_primal``), ``ct`` may be a ``Zero`` and is a list for
  a primitive with several results. Reverse mode is a JVP followed by transposition, so a
  primitive needs a transpose rule only if its JVP's tangent computation uses it linearly.

Registrars for the common shapes of rule: ``defjvp`` (one tangent function per operand),
``defjvp_with_ans`` (the same, given the result too; JAX's ``defjvp2``), ``defjvp_zero``,
``defjvp_linear`` (the op applied to the tangents), ``deftranspose`` (one cotangent function
per operand) and ``deflinear`` (JAX's: ``defjvp_linear`` and a transpose ``rule(ct,
**params)``).

``unbroadcast(aval, ct)`` sums a broadcast operand's cotangent back to its type ``aval``.

``primitive_jvps`` is ``jvp_rules`` seen in JAX's convention (a single-result primitive's
rule returns one primal and one tangent, not lists), kept for JAX code run under
``xform.compat``; xform's own code and new extensions use ``jvp_rules``.

Example:
  >>> ad.defjvp(my_sin_p, lambda t, x: t * my_cos(x))
"""

from xform.extend._tables import RuleTable
from xform.interpret.ad import (
    Zero,
    defjvp,
    defjvp_linear,
    defjvp_with_ans,
    defjvp_zero,
    instantiate,
    jvp_rules,
    unbroadcast,
)
from xform.interpret.transpose import (
    UndefinedPrimal,
    deflinear,
    deftranspose,
    is_undefined,
    transpose_rules,
)

__all__ = [
    "UndefinedPrimal",
    "Zero",
    "defjvp",
    "defjvp2",
    "defjvp_linear",
    "defjvp_with_ans",
    "defjvp_zero",
    "deflinear",
    "deftranspose",
    "instantiate_zeros",
    "is_undefined_primal",
    "jvp_rules",
    "primitive_jvps",
    "primitive_transposes",
    "transpose_rules",
    "unbroadcast",
    "zeros_like_aval",
]

is_undefined_primal = is_undefined
instantiate_zeros = instantiate
defjvp2 = defjvp_with_ans  # JAX's name for it


def zeros_like_aval(aval):
    """An array of zeros of type ``aval``."""
    return instantiate(Zero(aval))


def _jvp_to_xform(prim, rule):
    def jvp(primals, tangents, **params):
        primals_out, tangents_out = rule(primals, tangents, **params)
        if prim.multiple_results:
            return list(primals_out), list(tangents_out)
        return [primals_out], [tangents_out]

    return jvp


def _jvp_from_xform(prim, rule):
    def jvp(primals, tangents, **params):
        primals_out, tangents_out = rule(primals, tangents, **params)
        if prim.multiple_results:
            return primals_out, tangents_out
        return primals_out[0], tangents_out[0]

    return jvp


# JAX's convention, for JAX code under xform.compat: see the module's docstring.
primitive_jvps = RuleTable(jvp_rules, _jvp_to_xform, _jvp_from_xform)

# Transpose rules have one convention in xform and JAX: this is xform's own table.
primitive_transposes = transpose_rules
