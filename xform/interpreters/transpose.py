"""Transposition of linear jaxprs: the backward pass of reverse-mode differentiation.

``backward_pass`` walks a linear jaxpr (from ``linearize``) in reverse, turning output
cotangents into input cotangents. Its linear inputs are ``UndefinedPrimal(aval)``s; every
other value (residuals, and anything computed from them alone) is known and evaluated first.

Rule signature: ``transpose_rules[prim](ct, *invals, **params) -> list`` of one cotangent
per operand (``None`` for operands that are not linear); ``invals`` holds an
``UndefinedPrimal`` for each linear operand and the value of each other one; ``ct`` is the
output cotangent (a list for primitives with several results) and may be a ``Zero``.
Only linear primitives need a rule.
"""

from xform.core import Literal
from xform.errors import MissingRuleError
from xform.interpreters.ad import Zero, add_tangents

transpose_rules = {}


class UndefinedPrimal:
    """A linear input of a transposed program: only its type is known."""

    __slots__ = ("aval",)

    def __init__(self, aval):
        self.aval = aval

    def __repr__(self):
        return f"UndefinedPrimal({self.aval.str_short()})"


def is_undefined(x):
    return type(x) is UndefinedPrimal


def backward_pass(jaxpr, consts, args, cts_out):
    """Cotangents of the ``UndefinedPrimal`` entries of ``args`` given ``cts_out``.

    ``jaxpr`` is linear in those entries; the other entries of ``args`` and ``consts`` are
    values. Returns a list aligned with ``args`` (``None`` where an arg was a value).
    """
    primal_env = {}
    linear = set()
    for v, x in zip(jaxpr.constvars, consts, strict=True):
        primal_env[v] = x
    for v, x in zip(jaxpr.invars, args, strict=True):
        if is_undefined(x):
            linear.add(v)
        else:
            primal_env[v] = x

    def read_primal(x):
        return x.val if type(x) is Literal else primal_env[x]

    linear_eqns = []
    for eqn in jaxpr.eqns:  # forward: evaluate what does not depend on the linear inputs
        if any(type(x) is not Literal and x in linear for x in eqn.invars):
            linear.update(eqn.outvars)
            linear_eqns.append(eqn)
        else:
            outs = eqn.primitive.bind(*[read_primal(x) for x in eqn.invars], **eqn.params)
            outs = outs if eqn.primitive.multiple_results else [outs]
            primal_env.update(zip(eqn.outvars, outs, strict=True))

    ct_env = {}

    def write_ct(v, ct):
        if type(v) is not Literal and v in linear and ct is not None:
            ct_env[v] = add_tangents(ct_env[v], ct) if v in ct_env else ct

    for v, ct in zip(jaxpr.outvars, cts_out, strict=True):
        write_ct(v, ct)
    for eqn in reversed(linear_eqns):
        cts = [ct_env.pop(v) if v in ct_env else Zero(v.aval) for v in eqn.outvars]
        if all(type(ct) is Zero for ct in cts):
            continue
        rule = transpose_rules.get(eqn.primitive)
        if rule is None:
            raise MissingRuleError(f"primitive '{eqn.primitive.name}' has no transpose rule, "
                                   "so it cannot be differentiated in reverse mode")
        invals = [UndefinedPrimal(x.aval) if type(x) is not Literal and x in linear
                  else read_primal(x) for x in eqn.invars]
        ct = cts if eqn.primitive.multiple_results else cts[0]
        cts_in = rule(ct, *invals, **eqn.params)
        for x, ct_in in zip(eqn.invars, cts_in, strict=True):
            write_ct(x, ct_in)
    return [ct_env.get(v, Zero(v.aval)) if is_undefined(x) else None
            for v, x in zip(jaxpr.invars, args, strict=True)]

