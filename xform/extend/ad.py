"""Differentiation rules for new primitives, as ``jax.interpreters.ad`` names them.

``primitive_jvps[prim] = rule`` with ``rule(primals, tangents, **params) -> (primal_out,
tangent_out)`` (sequences of them when ``prim.multiple_results``); a tangent may be a symbolic
``Zero(aval)``. ``primitive_transposes[prim] = rule`` for a linear primitive, with ``rule(ct,
*args, **params) -> cotangents``, one per operand (``None`` for an operand that is not
linear); the linear operands arrive as ``UndefinedPrimal``s (``is_undefined_primal``).
Reverse mode is a JVP followed by transposition, so a primitive needs a transpose rule only
if its JVP's tangent computation uses it linearly.

Example:
  >>> ad.defjvp(my_sin_p, lambda t, x: t * my_cos(x))
"""

from xform.extend._tables import RuleTable
from xform.interpret import ad as _ad
from xform.interpret import transpose as _transpose
from xform.interpret.ad import Zero, defjvp, defjvp_zero, instantiate
from xform.interpret.transpose import UndefinedPrimal, is_undefined

__all__ = [
    "UndefinedPrimal",
    "Zero",
    "defjvp",
    "defjvp_zero",
    "deflinear",
    "instantiate_zeros",
    "is_undefined_primal",
    "primitive_jvps",
    "primitive_transposes",
    "zeros_like_aval",
]

is_undefined_primal = is_undefined
instantiate_zeros = instantiate


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


primitive_jvps = RuleTable(_ad.jvp_rules, _jvp_to_xform, _jvp_from_xform)


# Transpose rules have one convention in xform and JAX: this is xform's own table.
primitive_transposes = _transpose.transpose_rules


def deflinear(primitive, transpose_rule):
    """Rules for a primitive linear in all its operands jointly: the JVP applies it to the
    tangents, and the transpose is ``transpose_rule(ct, **params) -> cotangents``."""
    _ad.deflinear(primitive)

    def transpose(ct, *args, **params):
        if type(ct) is Zero:
            return [None] * len(args)
        return transpose_rule(ct, **params)

    _transpose.transpose_rules[primitive] = transpose
