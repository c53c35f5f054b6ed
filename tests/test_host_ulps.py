"""The host path's transcendental functions against XLA's kernels: each within the bound that
``xform.primitives.transcendental.HOST_ULPS`` documents (units in the last place), the others
bit for bit, on a fixed sample per primitive, dtype by dtype (``jax.jit`` as the oracle)."""

import jax
import ml_dtypes
import numpy as np
import pytest

import xform
from xform import lax
from xform.primitives.transcendental import HOST_ULPS

NAMES = [
    "exp", "exp2", "log", "log1p", "expm1", "sqrt", "rsqrt", "cbrt", "sin", "cos", "tan",
    "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "logistic",
]  # fmt: skip
DTYPES = [np.float16, ml_dtypes.bfloat16, np.float32, np.float64]
DOMAINS = {
    "log": (1e-3, 100),
    "log1p": (-0.9, 100),
    "sqrt": (0, 100),
    "rsqrt": (1e-3, 100),
    "asin": (-1, 1),
    "acos": (-1, 1),
    "acosh": (1, 100),
    "atanh": (-0.99, 0.99),
}


def sample(name, dtype):
    """The inputs each bound holds on: 4096 points, uniform over the primitive's domain."""
    low, high = DOMAINS.get(name, (-20, 20))
    return np.random.default_rng(7).uniform(low, high, 4096).astype(dtype)


def ulps_apart(a, b):
    """The most units in the last place between finite ``a`` and ``b``; AssertionError where
    one is NaN or infinite and the other is not the same."""
    wide_a, wide_b = a.astype(np.float64), b.astype(np.float64)
    finite = np.isfinite(wide_a) & np.isfinite(wide_b)
    np.testing.assert_array_equal(wide_a[~finite], wide_b[~finite])
    bits = {2: np.int16, 4: np.int32, 8: np.int64}[a.dtype.itemsize]
    # Sign and magnitude to a line of integers: adjacent floats are adjacent integers.
    ia, ib = (x.view(bits).astype(np.int64) for x in (a, b))
    least = np.iinfo(bits).min
    ia, ib = (np.where(i < 0, least - i, i) for i in (ia, ib))
    return int(np.abs(ia - ib)[finite].max(initial=0))


def measure(name, dtype):
    x64 = dtype == np.float64
    with xform.enable_x64(x64), jax.enable_x64(x64):
        x = sample(name, dtype)
        with xform.config.scope("xform_eager_path", "host"):
            got = np.asarray(getattr(lax, name)(x))
        want = np.asarray(jax.jit(getattr(jax.lax, name))(x))
    return ulps_apart(got, want)


@pytest.mark.parametrize("name", NAMES)
def test_host_kernels_within_their_documented_ulps(name):
    bounds = HOST_ULPS.get(name, {})
    for dtype in DTYPES:
        dname = np.dtype(dtype).name
        apart = measure(name, dtype)
        assert apart <= bounds.get(dname, 0), (name, dname, apart, "ulps from XLA's")


def test_ulps_apart_counts_across_zero():
    one = np.float32(1)
    next_up = np.nextafter(one, np.float32(2))
    assert ulps_apart(np.array([one]), np.array([next_up])) == 1
    tiny = np.array([np.float32(1e-45)])  # the smallest subnormal
    assert ulps_apart(tiny, -tiny) == 2
    with pytest.raises(AssertionError):
        ulps_apart(np.array([np.nan], np.float32), np.array([1.0], np.float32))
