"""Lowering of the compiler family: ``stablehlo.optimization_barrier``, ``stablehlo.composite``
with its decomposition as a private function, the constant ``platform_index`` of the backend
being compiled for, and the identities (tokens as empty arrays, ``dce_sink``,
``device_put``).
"""

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from lowering import runtime
from lowering.mlir import aval_to_ir, constant, lowering_rules
from xform.primitives import compiler


def _optimization_barrier_lower(ctx, *args):
    if not args:
        return []
    return list(hlo.OptimizationBarrierOp(list(args)).results)


lowering_rules[compiler.optimization_barrier_p] = _optimization_barrier_lower


def _attribute(value):
    if isinstance(value, bool):
        return ir.BoolAttr.get(value)
    if isinstance(value, int):
        return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), value)
    if isinstance(value, float):
        return ir.FloatAttr.get(ir.F32Type.get(), value)
    if isinstance(value, str):
        return ir.StringAttr.get(value)
    array = np.ascontiguousarray(value)
    if array.dtype == np.bool_:
        return ir.DenseElementsAttr.get(array, type=ir.IntegerType.get_signless(1))
    return ir.DenseElementsAttr.get(array)


def _composite_lower(ctx, *args, name, attributes, version, jaxpr):
    symbol = ctx.module.function_for(jaxpr, name)
    attrs = ir.DictAttr.get({k: _attribute(v.value) for k, v in attributes})
    op = hlo.CompositeOp(
        [aval_to_ir(a) for a in ctx.avals_out],
        list(args),
        name=ir.StringAttr.get(name),
        decomposition=ir.FlatSymbolRefAttr.get(symbol),
        composite_attributes=attrs,
        version=ir.IntegerAttr.get(ir.IntegerType.get_signless(32), version),
    )
    return list(op.results)


lowering_rules[compiler.composite_p] = _composite_lower


def _platform_index_lower(ctx, *, platforms):
    platform = runtime.platform()
    if platform == "gpu":  # JAX's names for GPU platforms
        platform = (
            "rocm" if "rocm" in str(runtime.default_device().client.platform_version) else "cuda"
        )
    return [constant(np.int32(compiler.platform_branch(platforms, platform)))]


lowering_rules[compiler.platform_index_p] = _platform_index_lower


def _empty_token():
    return constant(np.zeros((0,), np.bool_))


lowering_rules[compiler.create_token_p] = lambda ctx: [_empty_token()]
lowering_rules[compiler.after_all_p] = lambda ctx, *tokens: [_empty_token()]
# As JAX without prevent_mlir_dce: nothing to emit once the jaxpr-level DCE kept the value.
lowering_rules[compiler.dce_sink_p] = lambda ctx, x, **params: []
lowering_rules[compiler.device_put_p] = lambda ctx, *xs, **params: list(xs)
