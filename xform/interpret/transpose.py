"""Transposition of linear jaxprs: the backward pass of reverse-mode differentiation.

``backward_pass`` walks a linear jaxpr (from ``linearize``) in reverse, turning output
cotangents into input cotangents. Its linear inputs are ``UndefinedPrimal(aval)``s; every
other value (residuals, and anything computed from them alone) is known and evaluated first.

Rule signature: ``transpose_rules[prim](ct, *invals, **params) -> list`` of one cotangent
per operand (``None`` for operands that are not linear); ``invals`` holds an
``UndefinedPrimal`` for each linear operand and the value of each other one; ``ct`` is the
output cotangent (a list for primitives with several results) and may be a ``Zero``.
Only linear primitives need a rule.

Registrars: ``deftranspose`` (one cotangent function per operand) and ``deflinear`` (JAX's:
the JVP and transpose of an op linear in all its operands jointly). They are the public
ones: ``xform.extend.ad`` hands them on unchanged, and the built-in primitives use them.
"""

from xform.core import Literal
from xform.errors import MissingRuleError
from xform.interpret import ad
from xform.interpret.ad import Zero, add_tangents

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


def pop_cotangent(ct_env, prim, outvars):
    """The cotangent of an equation's outputs, taken out of ``ct_env``: None when none
    reached them; for several outputs a list, ``Zero`` where one got none."""
    if prim.multiple_results:
        cts = [ct_env.pop(v, None) for v in outvars]
        if all(ct is None for ct in cts):
            return None
        return [Zero(v.aval) if c is None else c for v, c in zip(outvars, cts, strict=True)]
    return ct_env.pop(outvars[0], None)


def transpose_rule(prim):
    rule = transpose_rules.get(prim)
    if rule is None:
        raise MissingRuleError(
            f"primitive '{prim.name}' has no transpose rule, so it "
            "cannot be differentiated in reverse mode"
        )
    return rule


def backward_pass(jaxpr, consts, args, cts_out):
    """Cotangents of the ``UndefinedPrimal`` entries of ``args`` given ``cts_out``.

    ``jaxpr`` is linear in those entries; the other entries of ``args`` and ``consts`` are
    values. Returns a list aligned with ``args`` (``None`` where an arg was a value).
    """
    env = dict(zip(jaxpr.constvars, consts, strict=True))  # the known values
    linear = set()  # the variables that depend on the linear inputs
    for v, x in zip(jaxpr.invars, args, strict=True):
        if type(x) is UndefinedPrimal:
            linear.add(v)
        else:
            env[v] = x
    linear_eqns = []
    for eqn in jaxpr.eqns:  # forward: evaluate what does not depend on the linear inputs
        for x in eqn.invars:
            if x in linear:  # (a Literal never is: it hashes by identity)
                linear.update(eqn.outvars)
                linear_eqns.append(eqn)
                break
        else:
            outs = eqn.primitive.bind(
                *[x.val if type(x) is Literal else env[x] for x in eqn.invars], **eqn.params
            )
            if eqn.primitive.multiple_results:
                env.update(zip(eqn.outvars, outs, strict=True))
            else:
                env[eqn.outvars[0]] = outs

    # Cotangents of linear variables. A missing entry is a zero cotangent: symbolic zeros are
    # never stored, and an equation whose outputs got none is skipped (so the backward pass
    # never transposes dead code).
    ct_env = {}
    for v, ct in zip(jaxpr.outvars, cts_out, strict=True):
        if v in linear and ct is not None and type(ct) is not Zero:
            old = ct_env.get(v)
            ct_env[v] = ct if old is None else add_tangents(old, ct)
    # The loop below runs once per linear equation of every eager grad: plain loops rather
    # than comprehensions (each one a function object in Python 3.11) and a length check
    # rather than ``zip(strict=True)`` (a keyword argument makes zip parse its arguments).
    for eqn in reversed(linear_eqns):
        prim = eqn.primitive
        ct = pop_cotangent(ct_env, prim, eqn.outvars)
        if ct is None:
            continue
        rule = transpose_rule(prim)
        invars = eqn.invars
        invals = []
        for x in invars:
            if x in linear:
                invals.append(UndefinedPrimal(x.aval))
            else:
                invals.append(x.val if type(x) is Literal else env[x])
        cts_in = rule(ct, *invals, **eqn.params)
        if len(cts_in) != len(invars):
            raise ValueError(
                f"the transpose rule of '{prim.name}' returned {len(cts_in)} "
                f"cotangents for {len(invars)} operands"
            )
        for i, x in enumerate(invars):
            ct_in = cts_in[i]
            if ct_in is not None and type(ct_in) is not Zero and x in linear:
                old = ct_env.get(x)
                ct_env[x] = ct_in if old is None else add_tangents(old, ct_in)
    return [
        _ct_or_zero(ct_env.get(v), v) if type(x) is UndefinedPrimal else None
        for v, x in zip(jaxpr.invars, args, strict=True)
    ]


def _ct_or_zero(ct, v):
    return Zero(v.aval) if ct is None else ct


# --------------------------------------------------------------------------- registrars


def deftranspose(prim, *ct_fns):
    """Rule from one function per operand: ``fn(ct, *invals, **params)`` is that operand's
    cotangent where it is linear (``None``: the op is never linear in that operand)."""

    def rule(ct, *invals, **params):
        cts = []
        for i, (fn, x) in enumerate(zip(ct_fns, invals, strict=True)):
            if type(x) is not UndefinedPrimal:  # a type test inline: once per operand per eqn
                cts.append(None)
            elif fn is None:
                raise ValueError(
                    f"{prim.name} is not linear in operand {i}, so it cannot be "
                    "transposed with respect to it"
                )
            else:
                cts.append(Zero(x.aval) if type(ct) is Zero else fn(ct, *invals, **params))
        return cts

    transpose_rules[prim] = rule


def deflinear(prim, transpose_rule):
    """Rules for an op linear in all its operands jointly, as JAX's ``ad.deflinear``: the JVP
    applies the op to the tangents (``ad.defjvp_linear``), and ``transpose_rule(ct,
    **params) -> cotangents``, one per operand, is its transpose (a zero ``ct`` is handled
    here). A rule that needs the operands' types registers in ``transpose_rules`` instead.

    Example:
      >>> deflinear(double_p, lambda ct: [double_p.bind(ct)])
    """
    ad.defjvp_linear(prim)

    def rule(ct, *args, **params):
        if type(ct) is Zero:
            return [None] * len(args)
        return transpose_rule(ct, **params)

    transpose_rules[prim] = rule
