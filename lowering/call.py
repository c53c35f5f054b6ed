"""Lowering of the ``jit`` call primitive: a ``func.call`` to a private function per jaxpr."""

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import func

from lowering import mlir
from lowering.mlir import aval_to_ir, lowering_rules
from xform.primitives.call import jit_p


def emit_call(ctx, args, closed, name):
    """A ``func.call`` of a private function computing ``closed`` (one per jaxpr)."""
    if mlir.symbolic_shape_tensor is not None:
        # Symbolic dimensions (export): their values live in the enclosing function, so
        # the body is emitted inline.
        return mlir.lower_inline(ctx.module, closed, args)
    symbol = ctx.module.function_for(closed, name)
    out_types = [aval_to_ir(a) for a in ctx.avals_out]
    call = func.CallOp(out_types, ir.FlatSymbolRefAttr.get(symbol), list(args))
    return list(call.results)


def _jit_lower(ctx, *args, jaxpr, name):
    return emit_call(ctx, args, jaxpr, name)


lowering_rules[jit_p] = _jit_lower
