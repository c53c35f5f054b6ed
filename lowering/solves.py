"""Lowering of ``custom_linear_solve``: its solve jaxpr, inlined (as JAX lowers it).

``matvec``, ``vecmat`` and ``transpose_solve`` exist for the transformations only: the
compiled program computes ``solve(*solve_consts, *b)``.
"""

from lowering.mlir import constant, lower_jaxpr, lowering_rules
from xform.primitives.solves import linear_solve_p


def _linear_solve_lower(ctx, *args, const_lengths, matvec, vecmat, solve, transpose_solve):
    start = const_lengths[0] + const_lengths[1]
    operands = [*args[start : start + const_lengths[2]], *args[sum(const_lengths) :]]
    jaxpr = solve.jaxpr
    consts = [constant(c, v.aval.dtype) for v, c in zip(jaxpr.constvars, solve.consts, strict=True)]
    return lower_jaxpr(ctx.module, jaxpr, consts, operands)


lowering_rules[linear_solve_p] = _linear_solve_lower
