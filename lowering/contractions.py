"""Lowering of the contractions family: ``stablehlo.dot_general`` and ``stablehlo.convolution``."""

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from lowering.mlir import aval_to_ir, lowering_rules
from xform.primitives import convolution as conv
from xform.primitives import dot as la


def _precision_attr(precision):
    pair = ("DEFAULT", "DEFAULT")
    if isinstance(precision, tuple) and not isinstance(precision, la.DotAlgorithm):
        pair = tuple(p.name for p in precision)
    # An algorithm is carried by the operand and result types instead (the CPU backend
    # ignores the algorithm attribute, so none is emitted).
    return ir.ArrayAttr.get([hlo.PrecisionAttr.get(p) for p in pair])


def _dot_general_lower(
    ctx, lhs, rhs, *, dimension_numbers, precision, preferred_element_type, out_sharding=None
):
    (lc, rc), (lb, rb) = dimension_numbers
    lhs_aval, rhs_aval = ctx.avals_in
    out = ctx.avals_out[0]
    lhs_t, rhs_t, acc = la.dot_algorithm_types(precision, lhs_aval.dtype, rhs_aval.dtype, out.dtype)
    if isinstance(precision, (la.DotAlgorithm, la.DotAlgorithmPreset)):
        # An explicit algorithm: operands in its input types, accumulated in its type.
        if lhs_t != lhs_aval.dtype:
            lhs = hlo.convert(aval_to_ir(lhs_aval.update(dtype=lhs_t)), lhs)
        if rhs_t != rhs_aval.dtype:
            rhs = hlo.convert(aval_to_ir(rhs_aval.update(dtype=rhs_t)), rhs)
    elif lhs_aval.dtype != rhs_aval.dtype:
        # XLA's CPU and GPU code generators reject some mixed-dtype dots: convert both
        # operands to the result type first, as JAX does.
        lhs = hlo.convert(aval_to_ir(lhs_aval.update(dtype=out.dtype)), lhs)
        rhs = hlo.convert(aval_to_ir(rhs_aval.update(dtype=out.dtype)), rhs)
    dnums = hlo.DotDimensionNumbers.get(
        lhs_batching_dimensions=list(lb),
        rhs_batching_dimensions=list(rb),
        lhs_contracting_dimensions=list(lc),
        rhs_contracting_dimensions=list(rc),
    )
    result = hlo.dot_general(
        aval_to_ir(out.update(dtype=acc)),
        lhs,
        rhs,
        dnums,
        precision_config=_precision_attr(precision),
    )
    if acc != out.dtype:
        result = hlo.convert(aval_to_ir(out), result)
    return [result]


def _conv_general_dilated_lower(
    ctx,
    lhs,
    rhs,
    *,
    window_strides,
    padding,
    lhs_dilation,
    rhs_dilation,
    dimension_numbers,
    feature_group_count,
    batch_group_count,
    precision,
    preferred_element_type,
):
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    dnums = hlo.ConvDimensionNumbers.get(
        input_batch_dimension=lhs_spec[0],
        input_feature_dimension=lhs_spec[1],
        input_spatial_dimensions=list(lhs_spec[2:]),
        kernel_output_feature_dimension=rhs_spec[0],
        kernel_input_feature_dimension=rhs_spec[1],
        kernel_spatial_dimensions=list(rhs_spec[2:]),
        output_batch_dimension=out_spec[0],
        output_feature_dimension=out_spec[1],
        output_spatial_dimensions=list(out_spec[2:]),
    )
    i64 = ir.IntegerType.get_signless(64)
    pads = np.asarray(padding, np.int64).reshape(len(padding), 2)
    return [
        hlo.convolution(
            aval_to_ir(ctx.avals_out[0]),
            lhs,
            rhs,
            dnums,
            ir.IntegerAttr.get(i64, feature_group_count),
            ir.IntegerAttr.get(i64, batch_group_count),
            window_strides=ir.DenseI64ArrayAttr.get(list(window_strides)),
            padding=ir.DenseIntElementsAttr.get(pads),
            lhs_dilation=ir.DenseI64ArrayAttr.get(list(lhs_dilation)),
            rhs_dilation=ir.DenseI64ArrayAttr.get(list(rhs_dilation)),
            window_reversal=ir.DenseBoolArrayAttr.get([False] * len(window_strides)),
            precision_config=_precision_attr(precision),
        )
    ]


lowering_rules[la.dot_general_p] = _dot_general_lower
lowering_rules[conv.conv_general_dilated_p] = _conv_general_dilated_lower
