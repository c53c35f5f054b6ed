"""JVP rules of the elementwise family: against ``jax.jvp`` (values, tangents, dtypes), eagerly
and under ``jit``; against central finite differences in float64; nested (jvp of jvp)."""

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
from xform import dtypes
from xform import lax as xlax
from xform.interpret import ad
from xform.primitives import comparisons, elementwise, transcendental

F32, I32, C64 = np.float32, np.int32, np.complex64
FLOAT0 = dtypes.float0


class Row(NamedTuple):
    """One primitive under test: ``f(lax_module, *args)`` and the kinds of its arguments,
    ``(dtype, lo, hi)`` (bool and complex ignore the bounds)."""

    name: str
    f: object
    args: tuple
    fd: bool = True  # checked against finite differences (smooth on the drawn domain)
    broadcast: bool = True  # also drawn with a rank-0 operand (binary ops)


def _f(lo=-3.0, hi=3.0):
    return (F32, lo, hi)


_I = (I32, -9, 9)
_B = (np.bool_, 0, 1)
_C = (C64, 0, 0)
_POS = _f(0.1, 5.0)
_UNIT = _f(-0.9, 0.9)


def _unary(name, arg=None, fd=True):
    return Row(name, lambda m, x: getattr(m, name)(x), (arg or _f(),), fd)


def _binary(name, a=None, b=None, fd=True):
    return Row(name, lambda m, x, y: getattr(m, name)(x, y), (a or _f(), b or _f()), fd)


def _rm(m):
    return m.RoundingMethod.TO_NEAREST_EVEN


ROWS = [
    _unary("neg"),
    _unary("sign", fd=False),
    _unary("floor", fd=False),
    _unary("ceil", fd=False),
    _unary("round", fd=False),
    Row("round_even", lambda m, x: m.round(x, _rm(m)), (_f(),), False),
    _unary("is_finite", fd=False),
    _unary("abs"),
    _unary("exp"),
    _unary("exp2"),
    _unary("log", _POS),
    _unary("log1p", _f(-0.9, 5.0)),
    _unary("expm1"),
    _unary("sqrt", _POS),
    _unary("rsqrt", _POS),
    _unary("cbrt", _POS),
    _unary("sin"),
    _unary("cos"),
    _unary("tan", _f(-1.2, 1.2)),
    _unary("asin", _UNIT),
    _unary("acos", _UNIT),
    _unary("atan"),
    _unary("sinh"),
    _unary("cosh"),
    _unary("tanh"),
    _unary("asinh"),
    _unary("acosh", _f(1.1, 5.0)),
    _unary("atanh", _UNIT),
    _unary("logistic"),
    _unary("erf"),
    _unary("erfc"),
    _unary("erf_inv", _UNIT),
    _unary("lgamma", _POS),
    _unary("bitwise_not", _I),
    _unary("bitwise_not", _B),
    _unary("population_count", _I),
    _unary("real", _C),
    _unary("imag", _C),
    _unary("conj", _C),
    _unary("conj"),
    _unary("abs", _C),
    _unary("abs", _I),
    _unary("exp", _C),
    _unary("sin", _C),
    _binary("mul", _C, _C),
    _binary("add"),
    _binary("sub"),
    _binary("mul"),
    _binary("div", b=_f(0.5, 3.0)),
    _binary("div", _I, (I32, 1, 9)),
    _binary("rem", b=_f(0.5, 3.0)),
    _binary("rem", _I, (I32, 1, 9)),
    _binary("pow", _POS),
    # Not broadcast: lowering pow(f32[3], i32[]) broadcasts the exponent with its old dtype.
    Row("pow_int_exponent", lambda m, x, y: m.pow(x, y), (_f(), (I32, -3, 3)), broadcast=False),
    _binary("max", fd=False),
    _binary("min", fd=False),
    _binary("max", _I, _I),
    _binary("atan2"),
    _binary("bitwise_and", _I, _I),
    _binary("bitwise_or", _B, _B),
    _binary("bitwise_xor", _I, _I),
    _binary("shift_left", _I, (I32, 0, 8)),
    _binary("shift_right_logical", _I, (I32, 0, 8)),
    _binary("shift_right_arithmetic", _I, (I32, 0, 8)),
    *[_binary(c, fd=False) for c in ("eq", "ne", "lt", "le", "gt", "ge")],
    _binary("lt", _I, _I),
    *[
        Row(f"integer_pow_{n}", lambda m, x, n=n: m.integer_pow(x, n), (_f(0.2, 3.0),))
        for n in (-2, 0, 1, 2, 3)
    ],
    Row("select_n_bool", lambda m, p, x, y: m.select_n(p, x, y), (_B, _f(), _f()), False),
    Row(
        "select_n_int",
        lambda m, w, x, y, z: m.select_n(w, x, y, z),
        ((I32, 0, 2), _f(), _f(), _f()),
        False,
    ),
    Row("clamp", lambda m, lo, x, hi: m.clamp(lo, x, hi), (_f(-3, 0), _f(), _f(0, 3)), False),
    *[
        Row(
            f"convert_{np.dtype(src).name}_{np.dtype(dst).name}",
            lambda m, x, dst=dst: m.convert_element_type(x, dst),
            ((src, -9, 9),),
        )
        for src, dst in (
            (F32, np.float16),
            (F32, I32),
            (F32, C64),
            (I32, F32),
            (F32, np.bool_),
            (C64, F32),
        )
    ],
    Row("bitcast_f32_i32", lambda m, x: m.bitcast_convert_type(x, I32), (_f(),), False),
    Row("bitcast_i32_f32", lambda m, x: m.bitcast_convert_type(x, F32), (_I,), False),
]
# Not checked against JAX: JAX has no JVP rule for nextafter (xform's is zero, checked below).
NO_JAX = {"nextafter"}


def _values(kind, shape):
    dtype, lo, hi = kind
    if dtype == np.bool_:
        return hnp.arrays(np.bool_, shape)
    if dtype == C64:
        return hnp.arrays(
            C64,
            shape,
            elements=st.complex_numbers(
                min_magnitude=0.1, max_magnitude=3, width=64, allow_subnormal=False
            ),
        )
    if np.issubdtype(dtype, np.integer):
        return hnp.arrays(dtype, shape, elements=st.integers(lo, hi))
    return hnp.arrays(
        dtype,
        shape,
        elements=st.floats(
            float(np.float32(lo)),
            float(np.float32(hi)),
            width=32,
            allow_subnormal=False,
            exclude_min=True,
            exclude_max=True,
        ),
    )


def _tangent(kind, shape):
    dtype = kind[0]
    if dtype in (np.bool_, I32):
        return st.just(np.zeros(shape, FLOAT0))
    return _values((dtype, -2, 2), shape)


@st.composite
def _primals_tangents(draw, row):
    # All operands of one shape, or (binary ops) one of them rank 0, broadcasting.
    n = len(row.args)
    scalar = draw(st.sampled_from([None, 0, 1])) if n == 2 and row.broadcast else None
    shapes = [() if i == scalar else (3,) for i in range(n)]
    primals = tuple(draw(_values(k, s)) for k, s in zip(row.args, shapes, strict=True))
    tangents = tuple(draw(_tangent(k, s)) for k, s in zip(row.args, shapes, strict=True))
    return primals, tangents


def _check_against_jax(got, expected, what):
    (g_p, g_t), (e_p, e_t) = got, expected
    assert_same(g_p, e_p, rtol=2e-5, atol=2e-6, what=f"{what} primal")
    if np.asarray(e_t).dtype == FLOAT0:
        assert np.asarray(g_t).dtype == FLOAT0 and np.shape(g_t) == np.shape(e_t), what
    else:
        assert_same(g_t, e_t, rtol=5e-5, atol=5e-6, what=f"{what} tangent")


@pytest.mark.parametrize(
    "row", ROWS, ids=lambda r: f"{r.name}-" + "-".join(np.dtype(k[0]).name for k in r.args)
)
@given(data=st.data())
def test_jvp_matches_jax(row, data):
    primals, tangents = data.draw(_primals_tangents(row))
    shape = np.broadcast_shapes(*[np.shape(p) for p in primals])

    def jax_f(*args):  # jax.lax wants equal shapes where xform broadcasts rank 0
        args = [
            a if a.dtype == jnp.bool_ or np.ndim(a) == len(shape) else jnp.broadcast_to(a, shape)
            for a in args
        ]
        return row.f(jlax, *args)

    with warnings.catch_warnings():  # converting complex to real (as NumPy, JAX warns)
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        expected = jax.jvp(jax_f, primals, tangents)
    f = _xform_f(row)
    _check_against_jax(xform.jvp(f, primals, tangents), expected, row.name)
    _check_against_jax(xform.jvp(_jitted(row), primals, tangents), expected, f"jit {row.name}")


_JITTED = {}


def _xform_f(row):
    return lambda *args: row.f(xlax, *args)


def _jitted(row):
    """One jitted function per row, so its compilations are reused across examples."""
    if row not in _JITTED:
        _JITTED[row] = xform.jit(_xform_f(row))
    return _JITTED[row]


@given(x=_values(_f(), (3,)), y=_values(_f(), (3,)), t=_values(_f(), (3,)))
def test_nextafter_has_zero_tangent(x, y, t):
    out, out_t = xform.jvp(xlax.nextafter, (x, y), (t, t))
    np.testing.assert_array_equal(np.asarray(out), np.nextafter(x, y))
    assert np.asarray(out_t).dtype == F32
    np.testing.assert_array_equal(np.asarray(out_t), np.zeros(3, F32))


def test_conventions_at_kinks():
    """JAX's choices where the derivative is undefined: abs'(0) = 1, ties of max/min split the
    tangent half and half, clamp passes nothing at its bounds, sqrt'(0) = inf."""
    zero, one = np.zeros(2, F32), np.ones(2, F32)
    cases = [
        (lambda m: m.abs, (zero,)),
        (lambda m: m.sqrt, (zero,)),
        (lambda m: m.max, (one, one)),
        (lambda m: m.min, (one, one)),
        (lambda m: lambda x: m.clamp(np.float32(0), x, np.float32(1)), (one,)),
        (lambda m: lambda x: m.clamp(np.float32(0), x, np.float32(1)), (zero,)),
        (lambda m: lambda x: m.pow(x, np.int32(0)), (zero,)),
        (lambda m: lambda x: m.pow(x, np.float32(2)), (zero,)),
        (lambda m: lambda x: m.integer_pow(x, 0), (zero,)),
    ]
    for make, args in cases:
        tangents = tuple(np.array([1.0, -2.0], F32) for _ in args)
        _check_against_jax(
            xform.jvp(make(xlax), args, tangents), jax.jvp(make(jlax), args, tangents), str(args)
        )
    assert np.asarray(xform.jvp(xlax.abs, (zero,), (one,))[1]).tolist() == [1, 1]
    assert np.asarray(xform.jvp(xlax.max, (one, one), (one, zero))[1]).tolist() == [0.5, 0.5]
    assert np.isinf(np.asarray(xform.jvp(xlax.sqrt, (zero,), (one,))[1])).all()


def test_jvp_of_a_scalar_operand_broadcasts():
    """A tangent on a rank-0 operand of a broadcasting op has the output's shape (where
    JAX's lax.clamp would reject a scalar bound's tangent)."""
    x = np.array([-2.0, 0.5, 2.0], F32)
    lo, hi = np.float32(-1), np.float32(1)
    _, t = xform.jvp(lambda lo: xlax.clamp(lo, x, hi), (lo,), (np.float32(1),))
    np.testing.assert_array_equal(np.asarray(t), [1, 0, 0])
    _, t = xform.jvp(lambda y: xlax.rem(x, y), (np.float32(0.75),), (np.float32(1),))
    assert np.shape(t) == (3,)
    _, t = xform.jvp(
        lambda a: xlax.rem(a, np.full(3, 0.75, F32)), (np.float32(2),), (np.float32(1),)
    )
    np.testing.assert_array_equal(np.asarray(t), np.ones(3, F32))


# --------------------------------------------------------------------------- finite differences

FD_ROWS = [
    r
    for r in ROWS
    if r.fd
    and all(k[0] in (F32, C64) for k in r.args)
    and r.name not in NO_JAX
    and not r.name.startswith("convert_")
]


@pytest.mark.parametrize(
    "row", FD_ROWS, ids=lambda r: f"{r.name}-" + "-".join(np.dtype(k[0]).name for k in r.args)
)
@given(seed=st.integers(0, 2**16))
def test_jvp_matches_central_differences(row, seed):
    rng = np.random.default_rng(seed)
    # Draw inside the domain, away from its edges (the FD stencil must stay inside it).
    primals, tangents = [], []
    for dtype, lo, hi in row.args:
        if dtype == C64:
            primals.append(rng.uniform(0.3, 2, 3) * np.exp(1j * rng.uniform(-3, 3, 3)))
            tangents.append(rng.standard_normal(3) + 1j * rng.standard_normal(3))
        else:
            margin = 0.05 * (hi - lo)
            primals.append(rng.uniform(lo + margin, hi - margin, 3))
            tangents.append(rng.standard_normal(3))
    with xform.enable_x64():
        f = lambda *args: row.f(xlax, *args)  # noqa: E731
        _, t = xform.jvp(f, tuple(primals), tuple(tangents))
        eps = 1e-6
        plus = f(*[p + eps * t for p, t in zip(primals, tangents, strict=True)])
        minus = f(*[p - eps * t for p, t in zip(primals, tangents, strict=True)])
        fd = (np.asarray(plus) - np.asarray(minus)) / (2 * eps)
    assert np.asarray(t).dtype in (np.float64, np.complex128)
    np.testing.assert_allclose(np.asarray(t), fd, rtol=1e-5, atol=1e-6, err_msg=row.name)


# --------------------------------------------------------------------------- second order


NESTED = {
    "sin": (xlax.sin, jlax.sin),
    "tanh": (xlax.tanh, jlax.tanh),
    "logistic": (xlax.logistic, jlax.logistic),
    "integer_pow": (lambda x: xlax.integer_pow(x, 3), lambda x: jlax.integer_pow(x, 3)),
    "pow": (lambda x: xlax.pow(x, xlax.sin(x)), lambda x: jlax.pow(x, jlax.sin(x))),
    "mul_div": (
        lambda x: xlax.div(xlax.mul(x, x), xlax.exp(x)),
        lambda x: jlax.div(jlax.mul(x, x), jlax.exp(x)),
    ),
}


@pytest.mark.parametrize("name", sorted(NESTED))
@given(x=_values(_f(0.2, 3.0), (3,)), t=_values(_f(-2, 2), (3,)))
def test_jvp_of_jvp(name, x, t):
    xf, jf = NESTED[name]

    def second(jvp, f):
        return lambda x: jvp(lambda y: jvp(f, (y,), (t,))[1], (x,), (t,))

    expected = second(jax.jvp, jf)(x)
    _check_against_jax(second(xform.jvp, xf)(x), expected, name)
    _check_against_jax(second(xform.jvp, _NESTED_JITTED[name])(x), expected, f"jit {name}")


_NESTED_JITTED = {name: xform.jit(xf) for name, (xf, _) in NESTED.items()}


# --------------------------------------------------------------------------- errors, coverage


def test_digamma_derivative_is_polygamma_as_in_jax():
    x, t = np.array([-2.5, 0.1, 1.0, 2.5, 30.0], F32), np.linspace(-1, 1, 5, dtype=F32)
    _check_against_jax(
        xform.jvp(xlax.digamma, (x,), (t,)), jax.jvp(jlax.digamma, (x,), (t,)), "digamma"
    )
    _check_against_jax(
        xform.jvp(xlax.lgamma, (np.full(2, 2.5, F32),), (np.ones(2, F32),)),
        jax.jvp(jlax.lgamma, (np.full(2, 2.5, F32),), (np.ones(2, F32),)),
        "lgamma",
    )


# Primitives of the family without a JVP rule, and why.
NO_JVP_RULE = {}
# The later additions, whose JVPs tests/test_lax_more.py checks against JAX (add_any's:
# tests/test_add_any.py).
TESTED_IN_LAX_MORE = {
    "clz",
    "complex",
    "copy",
    "eq_to",
    "le_to",
    "lt_to",
    "mulhi",
    "reduce_precision",
    "square",
    "stage",
    "add_any",
}


def test_every_elementwise_primitive_has_a_jvp_rule():
    prims = [
        v
        for module in (comparisons, elementwise, transcendental)
        for k, v in vars(module).items()
        if k.endswith("_p")
    ]
    assert len(prims) > 50
    missing = sorted(p.name for p in prims if p not in ad.jvp_rules and p.name not in NO_JVP_RULE)
    assert not missing, f"elementwise primitives without a JVP rule: {missing}"
    tested = {r.name for r in ROWS} | NO_JAX | {"digamma"} | TESTED_IN_LAX_MORE
    untested = sorted(
        p.name
        for p in prims
        if not any(
            t == p.name or t.startswith(p.name) or t == _WRAPPER_NAMES.get(p.name) for t in tested
        )
    )
    assert not untested, f"no test row for: {untested}"


_WRAPPER_NAMES = {
    "not": "bitwise_not",
    "and": "bitwise_and",
    "or": "bitwise_or",
    "xor": "bitwise_xor",
    "convert_element_type": "convert_float32_float16",
    "bitcast_convert_type": "bitcast_f32_i32",
    "select_n": "select_n_bool",
}
