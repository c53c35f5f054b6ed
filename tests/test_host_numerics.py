"""The host path's results bit for bit with XLA's where XLA's CPU order of operations is known
(issue 34: numpyro's NUTS warm-up amplified single-ulp eager differences into different
samples): a division by one broadcast value, and sums along a short axis. Each is compared
with the same primitive under ``jax.jit`` on the same data."""

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import xform
import xform.numpy as xnp
from xform import lax

DTYPES = [np.float16, ml_dtypes.bfloat16, np.float32, np.float64]


def _data(shape, dtype, seed=0):
    return (np.random.default_rng(seed).normal(size=shape) * 100).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("divisor_shape", [(), (1,)])
def test_division_by_one_broadcast_value_as_xla(dtype, divisor_shape):
    # XLA divides by a broadcast value through its reciprocal (float16: rounded to float16).
    x = _data((4096,), dtype)
    y = np.full(divisor_shape, 0.7, dtype)
    x64 = dtype == np.float64
    with xform.enable_x64(x64), jax.enable_x64(x64):
        got = np.asarray(lax.div(xnp.asarray(x), xnp.asarray(y)))
        want = np.asarray(jax.jit(lambda a, b: a / b)(x, y))
    np.testing.assert_array_equal(got, want)
    if dtype == np.float32:  # an operand of the array's own shape is divided exactly
        z = _data((4096,), dtype, seed=1)
        np.testing.assert_array_equal(np.asarray(lax.div(xnp.asarray(x), xnp.asarray(z))), x / z)


def test_division_by_a_python_constant_as_jax():
    x = _data((1000,), np.float32)
    np.testing.assert_array_equal(
        np.asarray(xnp.asarray(x) / 0.7), np.asarray(jnp.asarray(x) / 0.7)
    )


_REDUCE = {}


def _jax_sum(axis):
    if axis not in _REDUCE:
        _REDUCE[axis] = jax.jit(lambda x: jax.lax.reduce_sum(x, (axis,)))
    return _REDUCE[axis]


@pytest.mark.parametrize("dtype", DTYPES + [np.complex64], ids=lambda d: np.dtype(d).name)
def test_short_sums_as_xla(dtype):
    # Along an axis of up to 32 elements XLA's CPU adds one element at a time, rounding each
    # partial sum to the operand's dtype; NumPy's pairwise sums differ in the last bits.
    for shape, axis in [((5, 24), 1), ((24, 5), 0), ((3, 32), 1), ((2, 20, 3), 1), ((7,), 0)]:
        x = _data(shape, dtype)
        if dtype == np.complex64:
            x = x + 1j * _data(shape, np.float32, seed=2)
        x64 = dtype == np.float64
        with xform.enable_x64(x64), jax.enable_x64(x64):
            got = np.asarray(lax.reduce_sum(xnp.asarray(x), (axis,)))
            want = np.asarray(_jax_sum(axis)(x))
        np.testing.assert_array_equal(got, want, err_msg=str(shape))
    zeros = np.array([-0.0, -0.0], np.float32)
    assert not np.signbit(np.asarray(lax.reduce_sum(xnp.asarray(zeros), (0,))))  # 0 + -0 + -0


def test_reshape_of_numpy_data_is_numpy_reshape_as_jax():
    a = np.ones((1, 2), bool)
    seen = []

    def f(lib):
        seen.append(type(lib.reshape(a, (2,))))
        return 0

    xform.jit(lambda: f(xnp))()
    jax.jit(lambda: f(jnp))()
    assert seen == [np.ndarray, np.ndarray]  # concrete inside jit (numpyro checks it so)
    for lib in (xnp, jnp):
        with pytest.raises(ValueError, match="can only specify one unknown dimension"):
            lib.reshape(np.ones(6), (-1, -1))


def test_shape_reads_a_shape_attribute_as_numpy():
    # jax.numpy.shape is numpy.shape: anything with a shape answers (numpyro's CAR passes a
    # SciPy sparse matrix or a BCOO through it).
    scipy_sparse = pytest.importorskip("scipy.sparse")
    matrix = scipy_sparse.csr_matrix(np.eye(3)[:2])
    for lib in (xnp, jnp):
        assert lib.shape(matrix) == (2, 3) and lib.ndim(matrix) == 2
    bcoo = xform.experimental.sparse.BCOO.fromdense(np.eye(2))
    assert xnp.shape(bcoo) == (2, 2)
