"""Eager evaluation (NumPy host impls) gives what ``jit`` and JAX 0.10.2 give where XLA's
CPU semantics are defined: subnormal floats flushed to zero, the sign of ``sign(-0.0)``, the
int32 that bools become in numeric ops, out-of-bounds gather cotangents, and float32 sums as
accurate as XLA's."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import xform
import xform.nn as xnn
import xform.numpy as xnp

F32 = np.float32


def _bits(x):
    """Value and sign bit, so that -0.0 and 0.0 differ."""
    x = np.asarray(x)
    return x.tolist(), np.signbit(x).tolist()


# --------------------------------------------------------------------------- subnormals


@pytest.mark.parametrize(
    "name,fn,arg",
    [
        ("exp_f32", lambda m, x: m.exp(x), F32(-100)),
        ("exp_f32_array", lambda m, x: m.exp(x), np.full(5, -100, F32)),
        ("softplus", lambda m, x: (xnn if m is xnp else jax.nn).softplus(x), F32(-100)),
        ("tiny_product", lambda m, x: m.multiply(x, x), F32(-1e-20)),
        ("exp_f64", lambda m, x: m.exp(x), np.float64(-745)),
    ],
)
def test_underflow_flushes_to_zero(name, fn, arg):
    with xform.enable_x64(arg.dtype == np.float64):
        eager = fn(xnp, arg)
        jitted = xform.jit(lambda x: fn(xnp, x))(arg)
    with jax.enable_x64(arg.dtype == np.float64):
        expect = fn(jnp, arg)
    assert _bits(eager) == _bits(expect) == _bits(jitted)


def test_subnormal_python_operand_reads_as_zero():
    # A plain NumPy operand reaching a primitive is read denormals-are-zero, as XLA's CPU.
    expect = jax.lax.sqrt(F32(1e-40))
    assert np.asarray(xform.lax.sqrt(F32(1e-40))) == np.asarray(expect) == 0
    assert (
        np.asarray(xform.lax.mul(F32(1e-40), F32(2)))
        == np.asarray(jax.lax.mul(F32(1e-40), F32(2)))
        == 0
    )


def test_subnormals_pass_through_moves():
    # Bit moves keep a subnormal in XLA too.
    x = F32(1e-40)
    assert np.asarray(xnp.negative(xnp.asarray(x))) == np.asarray(jnp.negative(x)) == -x


# Subnormals in Arrays made from user data: XLA reads them as zero in arithmetic and passes
# them through bit moves (issue 19). Each case is (input maker, op); it runs eagerly on
# xform and JAX, and under xform.jit with the input as an argument, for float32, float64
# (x64) and complex64. The tiny values are subnormal in their dtype.
_TINY = {"float32": 1e-40, "float64": 1e-310, "complex64": 1e-40}


def _user_inputs(dtype):
    t = _TINY[dtype]
    return {
        "scalar": lambda m: m.asarray(t, dtype=dtype),
        "array": lambda m: m.array([t, -t, 1.0, 0.0], dtype=dtype),
        "full": lambda m: m.full((2, 2), -t, dtype=dtype),
        "matrix": lambda m: m.asarray(np.array([[t, 1.0], [-t, 2.0]], dtype)),
    }


_ARITHMETIC = {
    "times_two": lambda m, x: x * 2,
    "sqrt": lambda m, x: m.sqrt(x),
    "plus_itself": lambda m, x: x + x,  # not x + 0: XLA folds that under jit
    "equals_zero": lambda m, x: x == 0,
    "sum": lambda m, x: m.sum(x),
    "maximum": lambda m, x: m.maximum(x, m.zeros_like(x)),
    "abs_times_three": lambda m, x: m.abs(x) * 3,
}

# Bit moves keep the subnormals (checked against jax.jit), and their results stay marked:
# the "_then_double" variant multiplies the moved value by 2.
_MOVES = {
    "neg": lambda m, x: -x,
    "reshape": lambda m, x: x.reshape(-1, 1),
    "transpose": lambda m, x: x.reshape(1, -1).T,
    "broadcast": lambda m, x: m.broadcast_to(x, (3, *x.shape)),
    "slice": lambda m, x: x.ravel()[:2],
    "reverse": lambda m, x: x.ravel()[::-1],
    "concatenate": lambda m, x: m.concatenate([x.ravel(), x.ravel()]),
    "where": lambda m, x: m.where(m.ones(x.shape, bool), x, m.ones_like(x)),
    "gather": lambda m, x: x.ravel()[m.array([1, 0])],
    "dynamic_slice": lambda m, x: (jax.lax if m is jnp else xform.lax).dynamic_slice(
        x.ravel(), (0,), (1,)
    ),
    "pad": lambda m, x: m.pad(x.ravel(), 1),
    "iterate": lambda m, x: list(x.reshape(-1, 1))[0],
    "real": lambda m, x: m.real(x),
    "conj": lambda m, x: m.conj(x),
}


def _eager_jit_jax(make, op, dtype, jit=True):
    with xform.enable_x64(dtype == "float64"):
        x = make(xnp)
        eager = op(xnp, x)
        jitted = xform.jit(lambda x: op(xnp, x))(x) if jit else eager
    with jax.enable_x64(dtype == "float64"):
        expect = op(jnp, make(jnp))
    return eager, jitted, expect


def _same_bits(*arrays):
    first = np.asarray(arrays[0])
    for other in arrays[1:]:
        a = np.asarray(other)
        assert a.dtype == first.dtype and a.shape == first.shape
        assert a.tobytes() == first.tobytes(), (first, a)


@pytest.mark.parametrize("dtype", list(_TINY))
def test_user_subnormals_read_as_zero(dtype):
    for make in _user_inputs(dtype).values():  # every way of making an Array from data
        _same_bits(*_eager_jit_jax(make, _ARITHMETIC["times_two"], dtype))
    make = _user_inputs(dtype)["array"]
    for name, op in _ARITHMETIC.items():
        if dtype != "complex64" or name not in ("equals_zero", "maximum"):  # no order there
            _same_bits(*_eager_jit_jax(make, op, dtype))


@pytest.mark.parametrize("dtype", list(_TINY))
def test_user_subnormals_pass_through_moves(dtype):
    make = _user_inputs(dtype)["matrix"]
    for move in _MOVES.values():
        _same_bits(*_eager_jit_jax(make, move, dtype))
        _same_bits(*_eager_jit_jax(make, lambda m, x, move=move: move(m, x) * 2, dtype, jit=False))


@pytest.mark.parametrize(
    "convert",
    [
        ("float32", "complex64"),  # a float in a complex of its precision: bits kept
        ("float32", "float64"),  # widened: read as zero
        ("complex64", "complex128"),
    ],
)
def test_user_subnormals_through_conversions(convert):
    source, target = convert
    make = _user_inputs(source)["array"]
    with xform.enable_x64(True):
        x = make(xnp)
        eager = x.astype(target)
        jitted = xform.jit(lambda x: x.astype(target))(x)
    with jax.enable_x64(True):
        expect = make(jnp).astype(target)
    _same_bits(eager, jitted, expect)


def test_user_subnormals_complex_parts():
    # abs of a complex number computes a magnitude (read as zero); imag moves bits.
    x = np.array([1e-40 + 0j, 1.0 + 1e-40j], np.complex64)
    for op in (lambda m, x: m.abs(x), lambda m, x: m.imag(x) * 2, lambda m, x: m.imag(x)):
        _same_bits(*_eager_jit_jax(lambda m: m.asarray(x), op, "complex64"))


def test_fast_path_keeps_marks_apart():
    # One aval, two arrays: a marked one must not take the unmarked one's memoized path.
    plain, tiny = xnp.array([1.0, 2.0], dtype=F32), xnp.array([1e-40, 2.0], dtype=F32)
    for _ in range(3):
        _same_bits(xnp.sqrt(plain), jnp.sqrt(np.array([1.0, 2.0], F32)))
        _same_bits(xnp.sqrt(tiny), jnp.sqrt(np.array([1e-40, 2.0], F32)))
        _same_bits(tiny + plain, jnp.array([1e-40, 2.0], F32) + jnp.array([1.0, 2.0], F32))


# --------------------------------------------------------------------------- sign


def test_sign_keeps_signed_zero():
    x = np.array([-0.0, 0.0, -2.0, 3.0], F32)
    assert _bits(xnp.sign(x)) == _bits(jnp.sign(x)) == _bits(xform.jit(xnp.sign)(x))
    assert _bits(xnp.sign(F32(-0.0))) == ([-0.0], [True]) or np.signbit(xnp.sign(F32(-0.0)))


# --------------------------------------------------------------------------- bool promotion


@pytest.mark.parametrize(
    "fn",
    [
        lambda m, x: m.square(x),
        lambda m, x: m.power(x, 3),
        lambda m, x: m.power(x, x),
    ],
)
def test_bool_becomes_int32_under_x64(fn, x64):
    b = np.array([True, False])
    with jax.enable_x64(True):
        expect = fn(jnp, b)
    got = fn(xnp, b)
    assert got.dtype == expect.dtype == np.int32
    np.testing.assert_array_equal(got, expect)


# --------------------------------------------------------------------------- gather cotangent


def test_out_of_bounds_negative_index_has_zero_cotangent():
    # -2 normalizes to -1 on a size-1 axis: still out of bounds; the gather clamps, its
    # transpose (a scatter-add with the same mode) drops, so the cotangent is zero.
    idx = np.array([-2])
    x = np.ones((1, 1), F32)

    def f(m):
        return lambda x: (x[0, idx] ** 2).sum()

    expect = jax.grad(f(jnp))(jnp.asarray(x))
    np.testing.assert_array_equal(xform.grad(f(xnp))(xnp.asarray(x)), expect)
    np.testing.assert_array_equal(xform.jit(xform.grad(f(xnp)))(xnp.asarray(x)), expect)
    assert np.asarray(expect).item() == 0.0


# --------------------------------------------------------------------------- sums


@pytest.mark.parametrize(
    "name,fn",
    [
        ("mean_rows", lambda m, x: m.mean(x, axis=0)),
        ("var_rows", lambda m, x: m.var(x, axis=0)),
        ("sum_rows", lambda m, x: m.sum(x, axis=0)),
        ("cumsum_last", lambda m, x: m.cumsum(x, axis=0)[-1]),
    ],
)
def test_float32_sums_as_accurate_as_xla(name, fn):
    x = np.random.default_rng(0).standard_normal((10000, 4)).astype(F32) + 3
    exact = np.asarray(fn(np, x.astype(np.float64)))
    xla = np.asarray(jax.jit(lambda x: fn(jnp, x))(x))
    eager = np.asarray(fn(xnp, x))
    # No worse than XLA's own error (plus one float32 rounding), and close to XLA's result.
    ulp = np.spacing(np.abs(exact).astype(F32))
    assert np.all(np.abs(eager - exact) <= np.abs(xla - exact) + ulp)
    tol = 1e-6 * np.abs(exact).max() + 4 * ulp.max()
    np.testing.assert_allclose(eager, xla, rtol=0, atol=tol)
