"""Lowering of ``custom_vmap_call``: its function's jaxpr, inline, as JAX emits it (the rule
matters only to vmap)."""

from lowering.mlir import lower_inline, lowering_rules
from xform.primitives.custom_batching import custom_vmap_p


def _custom_vmap_lower(ctx, *args, call, rule, in_tree, out_tree):
    return lower_inline(ctx.module, call, args)


lowering_rules[custom_vmap_p] = _custom_vmap_lower
