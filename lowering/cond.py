"""Lowering of ``cond``: one ``stablehlo.case`` with a region per branch.

The regions take no arguments: a branch's operands are the values of the enclosing block,
which StableHLO regions may read directly.
"""

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from lowering.mlir import aval_to_ir, constant, lower_jaxpr, lowering_rules
from xform.primitives.cond import cond_p


def _cond_lower(ctx, index, *operands, branches):
    case = hlo.CaseOp([aval_to_ir(a) for a in ctx.avals_out], index, len(branches))
    for region, branch in zip(case.regions, branches, strict=True):
        block = region.blocks.append()
        with ir.InsertionPoint(block):
            jaxpr = branch.jaxpr
            consts = [
                constant(c, v.aval.dtype)
                for v, c in zip(jaxpr.constvars, branch.consts, strict=True)
            ]
            hlo.ReturnOp(lower_jaxpr(ctx.module, jaxpr, consts, list(operands)))
    return list(case.results)


lowering_rules[cond_p] = _cond_lower
