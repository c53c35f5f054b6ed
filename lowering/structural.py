"""Lowering of the structural family."""

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from lowering.mlir import aval_to_ir, lowering_rules
from xform.primitives import structural as st


def _broadcast_in_dim_lower(ctx, x, *, shape, broadcast_dimensions):
    return [hlo.broadcast_in_dim(aval_to_ir(ctx.avals_out[0]), x,
                                 ir.DenseI64ArrayAttr.get(list(broadcast_dimensions)))]


def _reshape_lower(ctx, x, **params):
    return [hlo.reshape(aval_to_ir(ctx.avals_out[0]), x)]


lowering_rules[st.broadcast_in_dim_p] = _broadcast_in_dim_lower
lowering_rules[st.reshape_p] = _reshape_lower
lowering_rules[st.squeeze_p] = _reshape_lower
