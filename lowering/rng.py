"""Lowering of XLA's generators: ``stablehlo.rng_bit_generator`` and ``stablehlo.rng``.

As in JAX, a ``uint32[4]`` key is bitcast to the ``uint64[2]`` state XLA takes (and the new
state back), and bits narrower than 8 bytes that XLA does not generate directly are drawn
as ``uint32`` and converted.

``random_gamma_p`` (``xform.random``'s gamma sampler) lowers to its composition
(``gamma_sampler``: Marsaglia-Tsang rejection per element, ``while_loop``s under ``vmap``),
traced once per operand types and emitted as a private function, like JAX's.
"""

import functools

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from lowering.call import emit_call
from lowering.mlir import aval_to_ir, constant, dtype_to_ir, lowering_rules
from xform import dtypes
from xform.interpret.staging import trace_to_jaxpr
from xform.primitives import rng
from xform.random import _distributions

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


@functools.lru_cache(maxsize=128)
def _gamma_jaxpr(avals_in, log_space, impl):
    def fn(key, a):
        return [_distributions.gamma_sampler(key, a, log_space=log_space, impl=impl)]

    return trace_to_jaxpr(fn, list(avals_in), "tracing random_gamma for lowering")


def _random_gamma_lower(ctx, key, a, *, log_space, impl):
    closed = _gamma_jaxpr(tuple(ctx.avals_in), log_space, impl)
    return emit_call(ctx, [key, a], closed, "random_gamma")


lowering_rules[_distributions.random_gamma_p] = _random_gamma_lower
