"""Lowering of XLA's generators: ``stablehlo.rng_bit_generator`` and ``stablehlo.rng``.

As in JAX, a ``uint32[4]`` key is bitcast to the ``uint64[2]`` state XLA takes (and the new
state back), and bits narrower than 8 bytes that XLA does not generate directly are drawn
as ``uint32`` and converted.
"""

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from lowering.mlir import aval_to_ir, constant, dtype_to_ir, lowering_rules
from xform import dtypes
from xform.primitives import rng

_ALGORITHMS = {
    rng.RandomAlgorithm.RNG_DEFAULT: "DEFAULT",
    rng.RandomAlgorithm.RNG_THREE_FRY: "THREE_FRY",
    rng.RandomAlgorithm.RNG_PHILOX: "PHILOX",
}


def _rng_bit_generator_lower(ctx, key, *, shape, dtype, algorithm):
    key_aval = ctx.avals_in[0]
    u32, u64 = dtype_to_ir(dtypes.uint32), dtype_to_ir(dtypes.uint64)
    if key_aval.dtype == dtypes.uint32:  # u32[4] -> u64[2], the state XLA takes
        key = hlo.bitcast_convert(
            ir.RankedTensorType.get([2], u64),
            hlo.reshape(ir.RankedTensorType.get([2, 2], u32), key),
        )
    bits_dtype = (
        dtype
        if dtype in (dtypes.uint8, dtypes.uint16, dtypes.uint32, dtypes.uint64)
        else dtypes.uint32
    )
    op = hlo.RngBitGeneratorOp(
        ir.RankedTensorType.get([2], u64),
        ir.RankedTensorType.get(list(shape), dtype_to_ir(bits_dtype)),
        hlo.RngAlgorithmAttr.get(_ALGORITHMS[algorithm]),
        key,
    )
    new_key, bits = op.results
    if key_aval.dtype == dtypes.uint32:
        new_key = hlo.reshape(
            ir.RankedTensorType.get([4], u32),
            hlo.bitcast_convert(ir.RankedTensorType.get([2, 2], u32), new_key),
        )
    if bits_dtype != dtype:
        bits = hlo.convert(aval_to_ir(ctx.avals_out[1]), bits)
    return [new_key, bits]


lowering_rules[rng.rng_bit_generator_p] = _rng_bit_generator_lower


def _rng_uniform_lower(ctx, a, b, *, shape):
    shape_operand = constant(np.array(shape, np.int64).reshape(len(shape)))
    return [hlo.rng(a, b, shape_operand, hlo.RngDistributionAttr.get("UNIFORM"))]


lowering_rules[rng.rng_uniform_p] = _rng_uniform_lower
