"""Lowering of ``checkpoint``: its body inline, behind an optimization barrier once it was
differentiated (with ``prevent_cse``), as JAX lowers it.

The barrier makes the body's inputs opaque to XLA, so the recomputation a differentiated
checkpoint carries is not merged (common-subexpression eliminated) with the forward pass.
"""

from jaxlib.mlir.dialects import stablehlo as hlo

from lowering.mlir import lower_jaxpr, lowering_rules
from xform.primitives.remat import name_p, remat_p


def _remat_lower(ctx, *args, jaxpr, prevent_cse, differentiated, policy):
    args = list(args)
    if prevent_cse and differentiated and args:
        args = list(hlo.OptimizationBarrierOp(args).results)
    return lower_jaxpr(ctx.module, jaxpr.jaxpr, jaxpr.consts, args)


lowering_rules[remat_p] = _remat_lower


def _name_lower(ctx, x, *, name):
    return [x]  # the identity: a name matters only to the checkpoint policies


lowering_rules[name_p] = _name_lower
