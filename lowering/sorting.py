"""Lowering of the sorting family: ``stablehlo.sort`` with JAX's comparator, ``chlo.top_k``,
and XLA's ``ApproxTopK`` custom call for ``approx_top_k``."""

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import chlo, func
from jaxlib.mlir.dialects import stablehlo as hlo

from lowering.mlir import aval_to_ir, constant, lowering_rules
from lowering.reductions import build_region, compare, compare_type
from xform import dtypes
from xform.core import ShapedArray
from xform.primitives import sorting as srt


def _canonical_float(x, dtype):
    # -0.0 -> 0.0 and NaN -> one quiet NaN, so that TOTALORDER makes them compare equal.
    zero = constant(0, dtype)
    no_neg_zero = hlo.select(compare(x, zero, "EQ", "FLOAT"), constant(0, dtype), x)
    return hlo.select(compare(x, x, "NE", "FLOAT"), constant(float("nan"), dtype), no_neg_zero)


def _keys(x, dtype):
    """(key, compare_type) pairs ordering scalar ``x`` of ``dtype``, most significant first."""
    if dtypes.is_complex(dtype):
        part = dtypes.float64 if dtype == dtypes.complex128 else dtypes.float32
        return [
            (_canonical_float(hlo.real(x), part), "TOTALORDER"),
            (_canonical_float(hlo.imag(x), part), "TOTALORDER"),
        ]
    if dtypes.is_float(dtype):
        return [(_canonical_float(x, dtype), "TOTALORDER")]
    return [(x, compare_type(dtype))]


def _less_than(args, arg_dtypes, num_keys):
    """The lexicographic ``lhs < rhs`` over the first ``num_keys`` operands' keys."""
    lhs_keys, rhs_keys = [], []
    for i in range(num_keys):
        lhs_keys += _keys(args[2 * i], arg_dtypes[i])
        rhs_keys += _keys(args[2 * i + 1], arg_dtypes[i])
    result = None
    for (a, ctype), (b, _) in zip(lhs_keys[::-1], rhs_keys[::-1], strict=True):
        lt = compare(a, b, "LT", ctype)
        result = lt if result is None else hlo.or_(lt, hlo.and_(compare(a, b, "EQ", ctype), result))
    return result


def _sort_lower(ctx, *operands, dimension, is_stable, num_keys):
    op = hlo.SortOp(
        [aval_to_ir(a) for a in ctx.avals_out],
        list(operands),
        dimension=dimension,
        is_stable=is_stable,
    )
    arg_dtypes = [a.dtype for a in ctx.avals_in]
    # Comparator arguments come in (lhs, rhs) pairs, one pair per operand.
    build_region(
        op,
        [d for d in arg_dtypes for _ in range(2)],
        lambda *args: [_less_than(args, arg_dtypes, num_keys)],
    )
    return list(op.results)


def _top_k_lower(ctx, x, *, k, axis):
    # chlo.top_k works on the last axis; move `axis` there and back, as JAX does.
    ndim = ctx.avals_in[0].ndim
    perm = None
    if axis != ndim - 1:
        perm = list(range(ndim))
        perm[axis], perm[-1] = perm[-1], perm[axis]
        x = hlo.transpose(x, ir.DenseI64ArrayAttr.get(perm))
    values, indices = chlo.top_k(x, k)
    if perm is not None:
        values, indices = (
            hlo.transpose(v, ir.DenseI64ArrayAttr.get(perm)) for v in (values, indices)
        )
    return [values, indices]


lowering_rules[srt.sort_p] = _sort_lower
lowering_rules[srt.top_k_p] = _top_k_lower


def _approx_top_k_comparator(ctx, dtype, is_max_k):
    """The symbol of ``(a, b, index_a, index_b) -> a > b`` (``<`` for a min-k), emitted once
    per module, dtype and direction."""
    key = ("approx_top_k comparator", dtype, is_max_k)
    entry = ctx.module.functions.get(key)
    if entry is not None:
        return entry[0]
    direction = "GT" if is_max_k else "LT"
    scalar = aval_to_ir(ShapedArray((), dtype))
    index = aval_to_ir(ShapedArray((), dtypes.int32))
    symbol = f"top_k_{direction.lower()}_{dtype.name}_comparator"
    with ir.InsertionPoint(ctx.module.module.body):
        fn = func.FuncOp(
            symbol,
            ir.FunctionType.get(
                [scalar, scalar, index, index], [aval_to_ir(ShapedArray((), dtypes.bool_))]
            ),
        )
    fn.attributes["sym_visibility"] = ir.StringAttr.get("private")
    block = fn.add_entry_block()
    with ir.InsertionPoint(block):
        a, b, _, _ = block.arguments
        hlo.return_([hlo.compare(a, b, hlo.ComparisonDirectionAttr.get(direction))])
    ctx.module.functions[key] = (symbol, fn, None)
    return symbol


def _approx_top_k_lower(
    ctx,
    x,
    *,
    k,
    reduction_dimension,
    recall_target,
    is_max_k,
    reduction_input_size_override,
    aggregate_to_topk,
):
    # JAX's lowering off TPU: XLA's ApproxTopK custom call marked as the fallback, which XLA
    # expands into an exact sort-based top-k. Operands: the values, their indices along the
    # reduced dimension, and the initial (worst) value and index.
    aval = ctx.avals_in[0]
    comparator = _approx_top_k_comparator(ctx, aval.dtype, is_max_k)
    iota = hlo.iota(aval_to_ir(ShapedArray(aval.shape, dtypes.int32)), reduction_dimension)
    init = constant(-np.inf if is_max_k else np.inf, aval.dtype)
    i64 = ir.IntegerType.get_signless(64)
    config = {
        "reduction_dim": ir.IntegerAttr.get(i64, reduction_dimension),
        "recall_target": ir.FloatAttr.get(ir.F32Type.get(), recall_target),
        "aggregate_to_topk": ir.BoolAttr.get(aggregate_to_topk),
        "reduction_input_size_override": ir.IntegerAttr.get(i64, reduction_input_size_override),
        "is_fallback": ir.BoolAttr.get(True),
        "top_k": ir.IntegerAttr.get(i64, k),
    }
    attributes = {
        "call_target_name": ir.StringAttr.get("ApproxTopK"),
        "has_side_effect": ir.BoolAttr.get(False),
        "backend_config": ir.StringAttr.get(""),
        "called_computations": ir.ArrayAttr.get([ir.FlatSymbolRefAttr.get(comparator)]),
    }
    op = hlo.CustomCallOp.build_generic(
        results=[aval_to_ir(a) for a in ctx.avals_out],
        operands=[x, iota, init, constant(np.int32(-1))],
        attributes=attributes,
    )
    op.operation.attributes["mhlo.backend_config"] = ir.DictAttr.get(config)
    return list(op.results)


lowering_rules[srt.approx_top_k_p] = _approx_top_k_lower
