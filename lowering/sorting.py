"""Lowering of the sorting family: ``stablehlo.sort`` with JAX's comparator, ``chlo.top_k``."""

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import chlo
from jaxlib.mlir.dialects import stablehlo as hlo

from lowering.mlir import aval_to_ir, constant, lowering_rules
from lowering.reductions import build_region, compare, compare_type
from xform import dtypes
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
        return [(_canonical_float(hlo.real(x), part), "TOTALORDER"),
                (_canonical_float(hlo.imag(x), part), "TOTALORDER")]
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
        result = lt if result is None else hlo.or_(
            lt, hlo.and_(compare(a, b, "EQ", ctype), result))
    return result


def _sort_lower(ctx, *operands, dimension, is_stable, num_keys):
    op = hlo.SortOp([aval_to_ir(a) for a in ctx.avals_out], list(operands),
                    dimension=dimension, is_stable=is_stable)
    arg_dtypes = [a.dtype for a in ctx.avals_in]
    # Comparator arguments come in (lhs, rhs) pairs, one pair per operand.
    build_region(op, [d for d in arg_dtypes for _ in range(2)],
                 lambda *args: [_less_than(args, arg_dtypes, num_keys)])
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
        values, indices = (hlo.transpose(v, ir.DenseI64ArrayAttr.get(perm))
                           for v in (values, indices))
    return [values, indices]


lowering_rules[srt.sort_p] = _sort_lower
lowering_rules[srt.top_k_p] = _top_k_lower
