"""Reverse mode through the elementwise family: the transpose rules of its linear primitives
(the inner-product identity, ``vjp`` against ``jax.vjp``, second order), and ``grad`` of every
differentiable elementwise function against ``jax.grad``, eagerly and under ``jit``, with JAX's
conventions at kinks and its NaN behaviour at special points."""

import warnings
from typing import NamedTuple

import hypothesis.extra.numpy as hnp
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from jax import lax as jlax

import xform
from tests.harness import assert_same
from xform import lax as xlax
from xform.interpret import transpose
from xform.primitives import comparisons
from xform.primitives import elementwise as ew
from xform.test_util import check_grads, check_vjp

F16, F32, C64 = np.float16, np.float32, np.complex64
RTOL, ATOL = 5e-5, 5e-6

# The primitives of the family that the JVP rules apply to tangents, so reverse mode transposes
# them. (convert_element_type only between inexact dtypes: elsewhere its tangent is zero.)
LINEAR = [
    ew.add_p,
    ew.sub_p,
    ew.neg_p,
    ew.mul_p,
    ew.div_p,
    ew.real_p,
    ew.imag_p,
    ew.conj_p,
    comparisons.select_n_p,
    ew.convert_element_type_p,
]


def test_every_linear_primitive_has_a_transpose_rule():
    missing = [p.name for p in LINEAR if p not in transpose.transpose_rules]
    assert not missing, f"linear elementwise primitives without a transpose rule: {missing}"


def _broadcast_like(args):
    """JAX's lax wants equal shapes where xform broadcasts rank-0 operands."""
    shape = np.broadcast_shapes(*[np.shape(a) for a in args])
    return [
        a if np.ndim(a) == len(shape) or a.dtype == np.bool_ else jnp.broadcast_to(a, shape)
        for a in args
    ]


def _quiet(fn, *args):
    with warnings.catch_warnings():  # complex -> real conversions warn in NumPy and JAX
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        return fn(*args)


# --------------------------------------------------------------------------- linear primitives


class Lin(NamedTuple):
    """``f(lax_module, *args)``, linear in the args of dtypes ``kinds`` (other args: None,
    then ``consts`` supplies them as known values)."""

    name: str
    f: object
    kinds: tuple


def _c(value, dtype=F32):
    return np.asarray(value, dtype)


_W3 = np.array([2, 0, 1, 5], np.int32)
LIN = [
    Lin("add", lambda m, x, y: m.add(x, y), (F32, F32)),
    Lin("sub", lambda m, x, y: m.sub(x, y), (F32, F32)),
    Lin("neg", lambda m, x: m.neg(x), (F32,)),
    Lin("mul_lhs", lambda m, x: m.mul(x, _c([1.5, -2, 0.5, 3])), (F32,)),
    Lin("mul_rhs", lambda m, x: m.mul(_c([1.5, -2, 0.5, 3]), x), (F32,)),
    Lin("mul_scalar_const", lambda m, x: m.mul(x, _c(-2.5)), (F32,)),
    Lin("div", lambda m, x: m.div(x, _c([1.5, -2, 0.5, 3])), (F32,)),
    Lin("div_scalar_const", lambda m, x: m.div(x, _c(4.0)), (F32,)),
    Lin("mul_complex", lambda m, z: m.mul(z, _c([1 + 2j, -1j, 3, 0.5 - 1j], C64)), (C64,)),
    Lin("real", lambda m, z: m.real(z), (C64,)),
    Lin("imag", lambda m, z: m.imag(z), (C64,)),
    Lin("conj", lambda m, z: m.conj(z), (C64,)),
    Lin("conj_real", lambda m, x: m.conj(x), (F32,)),
    Lin(
        "select_n_bool",
        lambda m, x, y: m.select_n(np.array([True, False, True, False]), x, y),
        (F32, F32),
    ),
    Lin("select_n_scalar_which", lambda m, x, y: m.select_n(np.True_, x, y), (F32, F32)),
    Lin("select_n_int", lambda m, x, y, z: m.select_n(_W3 % 3, x, y, z), (F32, F32, F32)),
    Lin("convert_f32_f16", lambda m, x: m.convert_element_type(x, F16), (F32,)),
    Lin("convert_f16_f32", lambda m, x: m.convert_element_type(x, F32), (F16,)),
    Lin("convert_f32_c64", lambda m, x: m.convert_element_type(x, C64), (F32,)),
    Lin("convert_c64_f32", lambda m, z: m.convert_element_type(z, F32), (C64,)),
]


def _draw(rng, dtype, shape=(4,)):
    if dtype == C64:
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(C64)
    return rng.standard_normal(shape).astype(dtype)


def _pair(a, b):
    """The pairing JAX's transposes are taken against: Re(sum(a * b)), without conjugation
    (a cotangent of a complex value is a transpose, not an adjoint)."""
    return float(np.real(np.sum(np.asarray(a, np.complex128) * np.asarray(b, np.complex128))))


def _check_transpose_identity(f, args, rng, tol):
    """``<ct, L t> == <L^T ct, t>`` for each argument, L = the derivative of ``f``."""
    out, pullback = _quiet(xform.vjp, f, *args)
    ct = _draw(rng, np.asarray(out).dtype, np.shape(out))
    cts_in = _quiet(pullback, ct)
    for i in range(len(args)):
        direction = [
            _draw(rng, np.asarray(b).dtype, np.shape(b)) if j == i else np.zeros_like(b)
            for j, b in enumerate(args)
        ]
        _, tangent = _quiet(xform.jvp, f, tuple(args), tuple(direction))
        lhs, rhs = _pair(ct, tangent), _pair(cts_in[i], direction[i])
        assert abs(lhs - rhs) <= tol * (1 + abs(lhs)), (i, lhs, rhs)


@pytest.mark.parametrize("row", LIN, ids=lambda r: r.name)
@given(seed=st.integers(0, 2**16))
def test_transpose_identity(row, seed):
    rng = np.random.default_rng(seed)
    args = [_draw(rng, k) for k in row.kinds]
    f = lambda *a: row.f(xlax, *a)  # noqa: E731
    tol = 1e-2 if F16 in row.kinds or "f16" in row.name else 1e-5
    _check_transpose_identity(f, args, rng, tol)
    if all(k == F32 for k in row.kinds) and np.asarray(f(*args)).dtype == F32:
        check_vjp(f, args)  # xform's own checker, for real maps


@pytest.mark.parametrize(
    "shapes",
    [((), (3,)), ((3,), ()), ((1, 3), (2, 3)), ((2, 1), (1, 3)), ((2, 3), (1, 1)), ((), ())],
)
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
def test_transpose_unbroadcasts(op, shapes):
    """Rank-0 operands and size-1 dimensions broadcast; their cotangents are summed back."""
    rng = np.random.default_rng(0)
    x, y = (rng.uniform(0.5, 2, s).astype(F32) for s in shapes)
    f = getattr(xlax, op)
    out, pullback = xform.vjp(f, x, y)
    ct = rng.standard_normal(np.shape(out)).astype(F32)
    jax_op = getattr(jnp, {"sub": "subtract", "mul": "multiply", "div": "divide"}.get(op, op))
    jax_out, jax_pullback = jax.vjp(jax_op, x, y)
    assert_same(out, jax_out, rtol=RTOL, atol=ATOL, what=op)
    assert_same(pullback(ct), jax_pullback(ct), rtol=RTOL, atol=ATOL, what=f"{op} ct")
    _check_transpose_identity(f, [x, y], rng, 1e-5)


_LIN_JIT = {}


def _lin_jitted(row):
    if row.name not in _LIN_JIT:
        f = lambda *a: row.f(xlax, *a)  # noqa: E731
        _LIN_JIT[row.name] = (
            xform.jit(lambda ct, *a: xform.vjp(f, *a)[1](ct)),  # jit outside vjp
            xform.jit(f),
        )  # vjp of a jitted function
    return _LIN_JIT[row.name]


@pytest.mark.parametrize("row", LIN, ids=lambda r: r.name)
def test_linear_vjp_matches_jax(row):
    rng = np.random.default_rng(7)
    args = [_draw(rng, k) for k in row.kinds]
    expected_out, jax_pullback = _quiet(jax.vjp, lambda *a: row.f(jlax, *a), *args)
    ct = _draw(rng, np.asarray(expected_out).dtype, np.shape(expected_out))
    expected = _quiet(jax_pullback, ct)
    out, pullback = _quiet(xform.vjp, lambda *a: row.f(xlax, *a), *args)
    assert_same(out, expected_out, rtol=RTOL, atol=ATOL, what=f"{row.name} out")
    assert_same(_quiet(pullback, ct), expected, rtol=RTOL, atol=ATOL, what=row.name)
    jit_vjp, jitted = _lin_jitted(row)
    assert_same(
        _quiet(jit_vjp, ct, *args), expected, rtol=RTOL, atol=ATOL, what=f"jit(vjp) {row.name}"
    )
    assert_same(
        _quiet(xform.vjp(jitted, *args)[1], ct),
        expected,
        rtol=RTOL,
        atol=ATOL,
        what=f"vjp(jit) {row.name}",
    )


def test_transposing_a_nonlinear_operand_is_an_error():
    u = transpose.UndefinedPrimal(xform.core.ShapedArray((2,), np.dtype(F32)))
    ct = np.ones(2, F32)
    rule = transpose.transpose_rules
    with pytest.raises(ValueError, match="mul of two linear operands is not linear"):
        rule[ew.mul_p](ct, u, u)
    with pytest.raises(ValueError, match="div is not linear in operand 1"):
        rule[ew.div_p](ct, ct, u)
    with pytest.raises(ValueError, match="select_n is not linear in `which`"):
        rule[comparisons.select_n_p](ct, u, ct, ct)


def test_zero_cotangent_gives_zeros():
    u = transpose.UndefinedPrimal(xform.core.ShapedArray((2,), np.dtype(F32)))
    zero = xform.interpret.ad.Zero(u.aval)
    cts = transpose.transpose_rules[ew.add_p](zero, u, np.ones(2, F32))
    assert type(cts[0]) is xform.interpret.ad.Zero and cts[1] is None
    cts = transpose.transpose_rules[comparisons.select_n_p](zero, np.array([True, False]), u, u)
    assert cts[0] is None and all(type(c) is xform.interpret.ad.Zero for c in cts[1:])


# --------------------------------------------------------------------------- grad, end to end


class Row(NamedTuple):
    """``f(lax_module, *args)``, real-valued, differentiated in all its float args drawn from
    ``[lo, hi]``; ``broadcast``: also drawn with a rank-0 first operand."""

    name: str
    f: object
    lo: float = -3.0
    hi: float = 3.0
    nargs: int = 1
    broadcast: bool = False


def _u(name, lo=-3.0, hi=3.0):
    return Row(name, lambda m, x: getattr(m, name)(x), lo, hi)


def _b(name, lo=-3.0, hi=3.0):
    return Row(name, lambda m, x, y: getattr(m, name)(x, y), lo, hi, 2, True)


def _complex_via(m, x):
    return m.convert_element_type(x, C64)


_Z = np.asarray(0.5 - 1.25j, C64)

GRAD_ROWS = [
    _u("neg"),
    _u("abs"),
    _u("exp"),
    _u("exp2"),
    _u("log", 0.1, 5),
    _u("log1p", -0.9, 5),
    _u("expm1"),
    _u("sqrt", 0.1, 5),
    _u("rsqrt", 0.1, 5),
    _u("cbrt", 0.1, 5),
    _u("sin"),
    _u("cos"),
    _u("tan", -1.2, 1.2),
    _u("asin", -0.9, 0.9),
    _u("acos", -0.9, 0.9),
    _u("atan"),
    _u("sinh"),
    _u("cosh"),
    _u("tanh"),
    _u("asinh"),
    _u("acosh", 1.1, 5),
    _u("atanh", -0.9, 0.9),
    _u("logistic"),
    _u("erf"),
    _u("erfc"),
    _u("erf_inv", -0.9, 0.9),
    _u("lgamma", 0.1, 5),
    # Piecewise constant: zero gradients.
    _u("sign"),
    _u("floor"),
    _u("ceil"),
    _u("round"),
    _b("add"),
    _b("sub"),
    _b("mul"),
    _b("div", 0.5, 3),
    _b("rem", 0.5, 3),
    _b("pow", 0.2, 3),
    _b("max"),
    _b("min"),
    _b("atan2"),
    *[
        Row(f"integer_pow_{n}", lambda m, x, n=n: m.integer_pow(x, n), 0.2, 3)
        for n in (-2, 0, 1, 2, 3)
    ],
    Row("pow_int_exponent", lambda m, x: m.pow(x, np.int32(3)), 0.2, 3),
    Row("select", lambda m, x, y: m.select(m.gt(x, y), m.sin(x), m.mul(y, y)), nargs=2),
    Row(
        "select_n_int",
        lambda m, x, y: m.select_n(
            m.convert_element_type(
                m.clamp(np.float32(0), m.add(x, np.float32(1)), np.float32(2)), np.int32
            ),
            x,
            m.exp(y),
            m.mul(x, y),
        ),
        nargs=2,
    ),
    Row("clamp", lambda m, lo, x, hi: m.clamp(lo, x, hi), nargs=3),
    Row("clamp_scalar_bounds", lambda m, x: m.clamp(np.float32(-1), x, np.float32(1))),
    Row(
        "convert_f16",
        lambda m, x: m.convert_element_type(m.sin(m.convert_element_type(x, F16)), F32),
    ),
    Row(
        "convert_int_cuts",
        lambda m, x: m.mul(x, m.convert_element_type(m.convert_element_type(x, np.int32), F32)),
    ),
    Row("real_mul_complex", lambda m, x: m.real(m.mul(_complex_via(m, x), _Z))),
    Row("imag_mul_complex", lambda m, x: m.imag(m.mul(_Z, _complex_via(m, x)))),
    Row(
        "abs_complex",
        lambda m, x, y: m.abs(m.add(_complex_via(m, x), m.mul(_complex_via(m, y), _Z))),
        nargs=2,
    ),
    Row("exp_complex", lambda m, x: m.real(m.exp(m.mul(_complex_via(m, x), _Z)))),
    Row("conj_real", lambda m, x: m.imag(m.mul(m.conj(x), _Z))),
    Row("conj_complex", lambda m, x: m.real(m.mul(m.conj(m.mul(_complex_via(m, x), _Z)), _Z))),
    Row(
        "convert_complex_real",
        lambda m, x: m.convert_element_type(m.mul(_complex_via(m, x), _Z), F32),
    ),
]


def _row_id(r):
    return r.name


def _args(row, rng, shapes):
    return [rng.uniform(row.lo, row.hi, s).astype(F32) for s in shapes]


_GRAD_JIT = {}


def _grad_fns(row):
    """xform's grad (of the function at rank 0) or vjp with a ones cotangent (arrays),
    eagerly, jit of it, and it of jit; one set per row so compilations are reused."""
    if row.name not in _GRAD_JIT:
        f = lambda *a: row.f(xlax, *a)  # noqa: E731
        argnums = tuple(range(row.nargs))

        def g(*a):
            if np.ndim(f(*a)) == 0 and not any(np.ndim(x) for x in a):
                return xform.grad(f, argnums)(*a)
            return xform.vjp(f, *a)[1](xlax.full_like(f(*a), 1))

        jf = xform.jit(f)

        def g_of_jit(*a):
            out, pullback = xform.vjp(jf, *a)
            return pullback(xlax.full_like(out, 1))

        _GRAD_JIT[row.name] = (g, xform.jit(g), g_of_jit)
    return _GRAD_JIT[row.name]


def _jax_grad(row, args):
    def f(*a):
        return jnp.sum(row.f(jlax, *_broadcast_like(a)))

    return _quiet(jax.grad(f, tuple(range(row.nargs))), *args)


@pytest.mark.parametrize("row", GRAD_ROWS, ids=_row_id)
def test_grad_matches_jax(row):
    rng = np.random.default_rng(sum(map(ord, row.name)))
    # Arrays of functions of one argument: test_grad_of_sum_matches_jax.
    shape_sets = [[()] * row.nargs]
    if row.nargs > 1:
        shape_sets.append([()] + [(3,)] * (row.nargs - 1) if row.broadcast else [(3,)] * row.nargs)
    for shapes in shape_sets:
        args = _args(row, rng, shapes)
        expected = _jax_grad(row, args)
        for how, fn in zip(("eager", "jit(grad)", "grad(jit)"), _grad_fns(row), strict=True):
            got = _quiet(fn, *args)
            assert_same(
                tuple(got), expected, rtol=2e-5, atol=2e-6, what=f"{how} {row.name} {shapes}"
            )


@pytest.mark.parametrize("row", [r for r in GRAD_ROWS if r.nargs == 1], ids=_row_id)
def test_grad_of_sum_matches_jax(row):
    """grad(sum(f(x))) through xform.numpy, the way users write it (grad of jit: in
    test_grad_matches_jax)."""
    x = _args(row, np.random.default_rng(3), [(2, 3)])[0]

    def f(x):
        return xform.numpy.sum(row.f(xlax, x))

    expected = _quiet(jax.grad(lambda x: jnp.sum(row.f(jlax, x))), x)
    assert_same(_quiet(xform.grad(f), x), expected, rtol=2e-5, atol=2e-6, what="eager")
    assert_same(
        _quiet(xform.jit(xform.grad(f)), x), expected, rtol=2e-5, atol=2e-6, what="jit(grad)"
    )


@given(
    x=hnp.arrays(F32, st.sampled_from([(), (3,), (2, 2)]), elements=st.floats(-3, 3, width=32)),
    y=st.floats(-3, 3, width=32),
)
def test_grad_of_a_composition_matches_jax(x, y):
    y = np.float32(y)

    def make(m):
        def f(x, y):
            z = m.mul(m.sin(x), m.add(y, m.tanh(x)))
            z = m.select(
                m.gt(x, np.float32(0)),
                m.div(z, m.add(m.mul(x, x), np.float32(1))),
                m.neg(m.max(z, y)),
            )
            return m.sub(z, m.mul(y, m.exp(m.neg(m.abs(x)))))

        return f

    f = make(xlax)
    out, pullback = xform.vjp(f, x, y)
    ct = np.ones(np.shape(out), F32)
    expected_out, jax_pullback = jax.vjp(lambda a, b: make(jlax)(*_broadcast_like([a, b])), x, y)
    assert_same(out, expected_out, rtol=2e-5, atol=2e-6, what="out")
    assert_same(pullback(ct), jax_pullback(ct), rtol=1e-4, atol=1e-5, what="cts")


# --------------------------------------------------------------------------- second order


COMPOSITIONS = {
    "sin_mul": (lambda x, y: xlax.mul(xlax.sin(x), y), (0.7, -1.3)),
    "div_exp": (lambda x, y: xlax.div(xlax.exp(x), xlax.add(xlax.mul(y, y), 1.0)), (0.3, 0.8)),
    "tanh_sub_neg": (lambda x, y: xlax.neg(xlax.sub(xlax.tanh(x), xlax.mul(x, y))), (0.2, 1.1)),
    "select_log": (
        lambda x, y: xlax.select(xlax.gt(x, y), xlax.log(x), xlax.mul(y, x)),
        (1.5, 0.4),
    ),
    "complex": (
        lambda x, y: xlax.abs(xlax.mul(xlax.convert_element_type(x, np.complex128), xlax.conj(y))),
        (0.6, -0.9),
    ),
    "logistic_pow": (lambda x, y: xlax.pow(xlax.logistic(x), y), (0.3, 1.7)),
}


@pytest.mark.parametrize("name", sorted(COMPOSITIONS))
def test_check_grads_second_order(name, x64):
    f, point = COMPOSITIONS[name]
    args = tuple(np.array([p, p / 2 + 0.1, -p / 3 + 0.25]) for p in point)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        check_grads(f, args, order=2)


def test_grad_of_grad_matches_jax():
    x = np.float32(0.8)
    for xf, jf in [
        (xlax.sin, jlax.sin),
        (xlax.tanh, jlax.tanh),
        (
            lambda x: xlax.div(xlax.exp(x), xlax.add(x, 2.0)),
            lambda x: jlax.div(jlax.exp(x), jlax.add(x, np.float32(2.0))),
        ),
    ]:
        expected = jax.grad(jax.grad(jf))(x)
        assert_same(xform.grad(xform.grad(xf))(x), expected, rtol=2e-5, atol=2e-6)
        assert_same(xform.jit(xform.grad(xform.grad(xf)))(x), expected, rtol=2e-5, atol=2e-6)
        assert_same(xform.grad(xform.jit(xform.grad(xf)))(x), expected, rtol=2e-5, atol=2e-6)


# --------------------------------------------------------------------------- special points


SPECIAL = {
    # abs'(0) = 1 (JAX's convention), max/min ties split the cotangent half and half.
    "abs_at_0": (lambda m: m.abs, (np.array([0.0, -0.0, 1.0, -1.0], F32),)),
    "max_ties": (lambda m: m.max, (np.array([1.0, 2.0, 3.0], F32), np.array([1.0, 0.0, 3.0], F32))),
    "min_ties": (lambda m: m.min, (np.array([1.0, 2.0, 3.0], F32), np.array([1.0, 0.0, 3.0], F32))),
    "max_scalar_tie": (lambda m: m.max, (np.float32(2.0), np.array([2.0, 1.0, 2.0], F32))),
    "clamp_at_bounds": (
        lambda m: lambda x: m.clamp(np.float32(0), x, np.float32(1)),
        (np.array([0.0, 1.0, 0.5], F32),),
    ),
    # sqrt'(0) = inf, and NaN where a select drops a zero cotangent on it (0 * inf).
    "sqrt_at_0": (lambda m: m.sqrt, (np.array([0.0, 4.0], F32),)),
    "where_guarded_sqrt": (
        lambda m: lambda x: m.select(m.gt(x, np.float32(0)), m.sqrt(x), m.mul(x, np.float32(0))),
        (np.array([0.0, -1.0, 4.0], F32),),
    ),
    # The single where: NaN at 0 (0/0) in JAX; the double where is NaN-free.
    "where_guarded_log": (
        lambda m: lambda x: m.select(m.gt(x, np.float32(0)), m.log(x), m.mul(x, np.float32(0))),
        (np.array([0.0, -1.0, 2.0], F32),),
    ),
    "double_where_log": (
        lambda m: (
            lambda x: m.select(
                m.gt(x, np.float32(0)),
                m.log(
                    m.select(
                        m.gt(x, np.float32(0)), x, m.add(m.mul(x, np.float32(0)), np.float32(1))
                    )
                ),
                m.mul(x, np.float32(0)),
            )
        ),
        (np.array([0.0, -1.0, 2.0], F32),),
    ),
    "pow_at_0": (lambda m: m.pow, (np.array([0.0, 2.0], F32), np.array([2.0, 0.5], F32))),
    "integer_pow_0_at_0": (lambda m: lambda x: m.integer_pow(x, 0), (np.zeros(2, F32),)),
    "div_by_0": (lambda m: m.div, (np.array([1.0, 0.0], F32), np.array([0.0, 0.0], F32))),
    "atan2_at_origin": (lambda m: m.atan2, (np.zeros(2, F32), np.zeros(2, F32))),
}


@pytest.mark.parametrize("name", sorted(SPECIAL))
def test_special_points_match_jax(name):
    make, args = SPECIAL[name]
    out = make(xlax)(*args)
    got = xform.vjp(make(xlax), *args)[1](np.ones(np.shape(out), F32))
    jax_f = make(jlax)
    jax_out, pullback = jax.vjp(lambda *a: jax_f(*_broadcast_like(a)), *args)
    expected = pullback(jnp.ones_like(jax_out))
    # assert_same compares NaNs as equal: NaNs exactly where JAX has them, nowhere else.
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_array_equal(
            np.isnan(np.asarray(g)), np.isnan(np.asarray(e)), err_msg=f"{name}: NaN pattern"
        )
    assert_same(tuple(got), tuple(expected), rtol=1e-6, atol=0, what=name)
    jitted = xform.jit(lambda ct, *a: xform.vjp(make(xlax), *a)[1](ct))
    assert_same(
        tuple(jitted(np.ones(np.shape(out), F32), *args)),
        tuple(expected),
        rtol=1e-6,
        atol=0,
        what=f"jit {name}",
    )


def test_conventions_at_kinks_values():
    assert np.asarray(xform.grad(xlax.abs)(np.float32(0))).tolist() == 1.0
    assert xform.grad(xlax.max, (0, 1))(np.float32(1), np.float32(1)) == (0.5, 0.5)
    assert xform.grad(xlax.min, (0, 1))(np.float32(1), np.float32(1)) == (0.5, 0.5)
    assert np.isinf(np.asarray(xform.grad(xlax.sqrt)(np.float32(0))))

    def where_log(x):
        return xlax.select(xlax.gt(x, np.float32(0)), xlax.log(x), np.float32(0))

    # NaN-free away from 0, NaN at 0 (as JAX).
    assert np.asarray(xform.grad(where_log)(np.float32(-1))).tolist() == 0.0
    assert np.isnan(np.asarray(xform.grad(where_log)(np.float32(0))))
    assert np.asarray(xform.grad(where_log)(np.float32(2))).tolist() == 0.5
