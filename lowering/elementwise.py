"""Lowering of the elementwise family to StableHLO (and CHLO for the special functions)."""

import numpy as np
from jaxlib.mlir.dialects import chlo
from jaxlib.mlir.dialects import stablehlo as hlo

from lowering.mlir import (
    aval_to_ir,
    broadcast_to,
    elementwise_rule,
    full_like_aval,
    lowering_rules,
)
from xform import dtypes
from xform.primitives import comparisons, transcendental
from xform.primitives import elementwise as ew

_SIMPLE = {
    ew.neg_p: hlo.negate,
    ew.floor_p: hlo.floor,
    ew.ceil_p: hlo.ceil,
    comparisons.is_finite_p: hlo.is_finite,
    ew.abs_p: hlo.abs,
    transcendental.exp_p: hlo.exponential,
    transcendental.log_p: hlo.log,
    transcendental.log1p_p: hlo.log_plus_one,
    transcendental.expm1_p: hlo.exponential_minus_one,
    transcendental.sqrt_p: hlo.sqrt,
    transcendental.rsqrt_p: hlo.rsqrt,
    transcendental.cbrt_p: hlo.cbrt,
    transcendental.sin_p: hlo.sine,
    transcendental.cos_p: hlo.cosine,
    transcendental.tan_p: hlo.tan,
    transcendental.tanh_p: hlo.tanh,
    transcendental.logistic_p: hlo.logistic,
    transcendental.asin_p: chlo.asin,
    transcendental.acos_p: chlo.acos,
    transcendental.atan_p: chlo.atan,
    transcendental.sinh_p: chlo.sinh,
    transcendental.cosh_p: chlo.cosh,
    transcendental.asinh_p: chlo.asinh,
    transcendental.acosh_p: chlo.acosh,
    transcendental.atanh_p: chlo.atanh,
    transcendental.erf_p: chlo.erf,
    transcendental.erfc_p: chlo.erfc,
    transcendental.erf_inv_p: chlo.erf_inv,
    transcendental.lgamma_p: chlo.lgamma,
    transcendental.digamma_p: chlo.digamma,
    ew.not_p: hlo.not_,
    ew.population_count_p: hlo.popcnt,
    ew.real_p: hlo.real,
    ew.imag_p: hlo.imag,
    ew.add_p: hlo.add,
    ew.sub_p: hlo.subtract,
    ew.mul_p: hlo.multiply,
    ew.max_p: hlo.maximum,
    ew.min_p: hlo.minimum,
    transcendental.atan2_p: hlo.atan2,
    ew.nextafter_p: chlo.next_after,
    ew.and_p: hlo.and_,
    ew.or_p: hlo.or_,
    ew.xor_p: hlo.xor,
    ew.shift_left_p: hlo.shift_left,
    ew.shift_right_logical_p: hlo.shift_right_logical,
    ew.shift_right_arithmetic_p: hlo.shift_right_arithmetic,
    ew.clz_p: hlo.count_leading_zeros,
    ew.mulhi_p: chlo.mulhi,
    ew.complex_p: hlo.complex,
}
for _prim, _op in _SIMPLE.items():
    lowering_rules[_prim] = elementwise_rule(_op)


def _integer_division(op, at_zero):
    """Rule for ``div``/``rem``: on integers, ``at_zero(x)`` where the divisor is 0, and
    ``INT_MIN / -1`` wraps. XLA defines both, but its constant folder divides in C++, where
    either kills the process (SIGFPE) once the operands are known at compile time (a literal
    0, the sum of an empty array), so the divisor the op sees is never 0 nor that -1."""

    def rule(ctx, x, y):
        out = ctx.avals_out[0]
        x, y = (broadcast_to(v, a, out) for v, a in zip((x, y), ctx.avals_in, strict=True))
        if not dtypes.is_int(out.dtype):
            return [op(x, y)]
        zero, one = full_like_aval(0, out), full_like_aval(1, out)
        by_zero = compare(y, zero, "EQ", out.dtype)
        unsafe = by_zero
        if dtypes.is_signed_int(out.dtype):
            int_min = full_like_aval(np.iinfo(out.dtype).min, out)
            overflow = hlo.and_(
                compare(x, int_min, "EQ", out.dtype),
                compare(y, full_like_aval(-1, out), "EQ", out.dtype),
            )
            unsafe = hlo.or_(by_zero, overflow)  # x / 1 and x % 1 are then the wrapped values
        result = op(x, hlo.select(unsafe, one, y))
        return [hlo.select(by_zero, at_zero(x, out), result)]

    return rule


# XLA's values for an integer divisor of 0: x / 0 is -1 (all bits set), x % 0 is x.
lowering_rules[ew.div_p] = _integer_division(
    hlo.divide, lambda x, out: full_like_aval(np.array(-1).astype(out.dtype), out)
)
lowering_rules[ew.rem_p] = _integer_division(hlo.remainder, lambda x, out: x)


def _sign_lower(ctx, x):
    aval = ctx.avals_in[0]
    if dtypes.is_unsigned_int(aval.dtype):
        # stablehlo.sign takes signless integers only: 0 where x == 0, else 1 (as JAX).
        is_zero = compare(x, full_like_aval(0, aval), "EQ", aval.dtype)
        return [hlo.select(is_zero, full_like_aval(0, aval), full_like_aval(1, aval))]
    return [hlo.sign(x)]


def _round_lower(ctx, x, *, rounding_method):
    if rounding_method == ew.RoundingMethod.TO_NEAREST_EVEN:
        return [hlo.round_nearest_even(x)]
    return [hlo.round_nearest_afz(x)]


def _exp2_lower(ctx, x):
    aval = ctx.avals_in[0]
    return [hlo.exponential(hlo.multiply(full_like_aval(np.log(2), aval), x))]


def _conj_lower(ctx, x):
    aval_in, aval_out = ctx.avals_in[0], ctx.avals_out[0]
    if dtypes.is_complex(aval_in.dtype):
        return [hlo.complex(hlo.real(x), hlo.negate(hlo.imag(x)))]
    real = hlo.convert(aval_to_ir(aval_out.update(dtype=np.finfo(aval_out.dtype).dtype)), x)
    return [
        hlo.complex(
            real, full_like_aval(0, ctx.avals_in[0].update(dtype=np.finfo(aval_out.dtype).dtype))
        )
    ]


def _compare_type(dtype):
    if dtypes.is_inexact(dtype):
        return "FLOAT"
    if dtypes.is_signed_int(dtype):
        return "SIGNED"
    return "UNSIGNED"


def compare(x, y, direction, dtype):
    return hlo.compare(
        x,
        y,
        hlo.ComparisonDirectionAttr.get(direction),
        compare_type=hlo.ComparisonTypeAttr.get(_compare_type(dtype)),
    )


def _compare_rule(direction):
    def rule(ctx, x, y):
        out = ctx.avals_out[0]
        x, y = (broadcast_to(v, a, out) for v, a in zip((x, y), ctx.avals_in, strict=True))
        return [compare(x, y, direction, ctx.avals_in[0].dtype)]

    return rule


for _prim, _dir in (
    (comparisons.eq_p, "EQ"),
    (comparisons.ne_p, "NE"),
    (comparisons.lt_p, "LT"),
    (comparisons.le_p, "LE"),
    (comparisons.gt_p, "GT"),
    (comparisons.ge_p, "GE"),
):
    lowering_rules[_prim] = _compare_rule(_dir)


def _total_order_rule(direction):
    """``eq_to``/``le_to``/``lt_to``: floats compare by XLA's TOTALORDER (as JAX lowers them),
    integers as ``eq``/``le``/``lt`` do."""

    def rule(ctx, x, y):
        out, dtype = ctx.avals_out[0], ctx.avals_in[0].dtype
        x, y = (broadcast_to(v, a, out) for v, a in zip((x, y), ctx.avals_in, strict=True))
        kind = "TOTALORDER" if dtypes.is_inexact(dtype) else _compare_type(dtype)
        return [
            hlo.compare(
                x,
                y,
                hlo.ComparisonDirectionAttr.get(direction),
                compare_type=hlo.ComparisonTypeAttr.get(kind),
            )
        ]

    return rule


for _prim, _dir in (
    (comparisons.eq_to_p, "EQ"),
    (comparisons.le_to_p, "LE"),
    (comparisons.lt_to_p, "LT"),
):
    lowering_rules[_prim] = _total_order_rule(_dir)


def _pow_lower(ctx, x, y):
    out = ctx.avals_out[0]
    x_aval, y_aval = ctx.avals_in
    if y_aval.dtype != x_aval.dtype:
        y_aval = y_aval.update(dtype=x_aval.dtype)
        y = hlo.convert(aval_to_ir(y_aval), y)
    return [hlo.power(broadcast_to(x, x_aval, out), broadcast_to(y, y_aval, out))]


def _integer_pow_lower(ctx, x, *, y):
    # Square-and-multiply, as XLA has no integer-exponent power op.
    aval = ctx.avals_in[0]
    acc, base, n = None, x, abs(y)
    while n:
        if n & 1:
            acc = base if acc is None else hlo.multiply(acc, base)
        n >>= 1
        if n:
            base = hlo.multiply(base, base)
    if acc is None:
        acc = full_like_aval(1, aval)
    if y < 0:
        acc = hlo.divide(full_like_aval(1, aval), acc)
    return [acc]


def _select_n_lower(ctx, which, *cases):
    which_aval, out = ctx.avals_in[0], ctx.avals_out[0]
    which = broadcast_to(which, which_aval, out)
    if which_aval.dtype == dtypes.bool_:
        return [cases[0] if len(cases) == 1 else hlo.select(which, cases[1], cases[0])]

    def pick(lo, hi):  # cases[lo:hi], by bisection on `which`
        if hi - lo == 1:
            return cases[lo]
        mid = (lo + hi) // 2
        pivot = full_like_aval(mid, out.update(dtype=which_aval.dtype))
        return hlo.select(
            compare(which, pivot, "LT", which_aval.dtype), pick(lo, mid), pick(mid, hi)
        )

    return [pick(0, len(cases))]


def _clamp_lower(ctx, lo, x, hi):
    return [hlo.clamp(lo, x, hi)]


def _convert_lower(ctx, x, *, new_dtype, weak_type):
    aval_in, aval_out = ctx.avals_in[0], ctx.avals_out[0]
    if dtypes.is_complex(aval_in.dtype) and not dtypes.is_complex(new_dtype):
        x = hlo.real(x)
        aval_in = aval_in.update(dtype=np.finfo(aval_in.dtype).dtype)
    if new_dtype == dtypes.bool_:
        return [compare(x, full_like_aval(0, aval_in), "NE", aval_in.dtype)]
    if aval_in.dtype == dtypes.bool_ and dtypes.is_complex(new_dtype):
        x = hlo.convert(aval_to_ir(aval_in.update(dtype=dtypes.float32)), x)
    return [hlo.convert(aval_to_ir(aval_out), x)]


def _bitcast_lower(ctx, x, *, new_dtype):
    return [hlo.bitcast_convert(aval_to_ir(ctx.avals_out[0]), x)]


def _square_lower(ctx, x):
    if dtypes.is_int(ctx.avals_in[0].dtype):
        return [hlo.multiply(x, x)]
    return [chlo.square(x)]


def _reduce_precision_lower(ctx, x, *, exponent_bits, mantissa_bits):
    return [hlo.reduce_precision(x, exponent_bits, mantissa_bits)]


def _identity_lower(ctx, x):
    return [x]


lowering_rules[ew.square_p] = _square_lower
lowering_rules[ew.reduce_precision_p] = _reduce_precision_lower
lowering_rules[ew.copy_p] = _identity_lower
lowering_rules[ew.stage_p] = _identity_lower
lowering_rules[ew.sign_p] = _sign_lower
lowering_rules[ew.round_p] = _round_lower
lowering_rules[transcendental.exp2_p] = _exp2_lower
lowering_rules[ew.conj_p] = _conj_lower
lowering_rules[transcendental.pow_p] = _pow_lower
lowering_rules[ew.integer_pow_p] = _integer_pow_lower
lowering_rules[comparisons.select_n_p] = _select_n_lower
lowering_rules[ew.clamp_p] = _clamp_lower
lowering_rules[ew.convert_element_type_p] = _convert_lower
lowering_rules[ew.bitcast_convert_type_p] = _bitcast_lower
# add_any's operands have one shape: a plain stablehlo.add, as JAX lowers it.
lowering_rules[ew.add_any_p] = elementwise_rule(hlo.add)
