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


@pytest.mark.parametrize("name,fn,arg", [
    ("exp_f32", lambda m, x: m.exp(x), F32(-100)),
    ("exp_f32_array", lambda m, x: m.exp(x), np.full(5, -100, F32)),
    ("softplus", lambda m, x: (xnn if m is xnp else jax.nn).softplus(x), F32(-100)),
    ("tiny_product", lambda m, x: m.multiply(x, x), F32(-1e-20)),
    ("exp_f64", lambda m, x: m.exp(x), np.float64(-745)),
])
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
    assert np.asarray(xform.lax.mul(F32(1e-40), F32(2))) == np.asarray(
        jax.lax.mul(F32(1e-40), F32(2))) == 0


def test_subnormals_pass_through_moves():
    # Bit moves keep a subnormal in XLA too.
    x = F32(1e-40)
    assert np.asarray(xnp.negative(xnp.asarray(x))) == np.asarray(jnp.negative(x)) == -x


# --------------------------------------------------------------------------- sign


def test_sign_keeps_signed_zero():
    x = np.array([-0.0, 0.0, -2.0, 3.0], F32)
    assert _bits(xnp.sign(x)) == _bits(jnp.sign(x)) == _bits(xform.jit(xnp.sign)(x))
    assert _bits(xnp.sign(F32(-0.0))) == ([-0.0], [True]) or np.signbit(xnp.sign(F32(-0.0)))


# --------------------------------------------------------------------------- bool promotion


@pytest.mark.parametrize("fn", [
    lambda m, x: m.square(x),
    lambda m, x: m.power(x, 3),
    lambda m, x: m.power(x, x),
])
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


@pytest.mark.parametrize("name,fn", [
    ("mean_rows", lambda m, x: m.mean(x, axis=0)),
    ("var_rows", lambda m, x: m.var(x, axis=0)),
    ("sum_rows", lambda m, x: m.sum(x, axis=0)),
    ("cumsum_last", lambda m, x: m.cumsum(x, axis=0)[-1]),
])
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
