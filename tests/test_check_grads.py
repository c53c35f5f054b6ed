"""Every differentiable primitive passes check_grads to order 2 in both modes, on
hypothesis-drawn inputs (float64, so finite differences are meaningful)."""

import hypothesis.strategies as st
import jax.numpy
import jax.test_util
import numpy as np
import pytest
from hypothesis import given

import xform
from xform import lax
from xform.test_util import arrays, check_grads

# (name, function of float64 arrays, low, high): the open domain the inputs are drawn from.
UNARY = [
    ("neg", lax.neg, -3, 3),
    ("exp", lax.exp, -3, 3),
    ("exp2", lax.exp2, -3, 3),
    ("log", lax.log, 0.2, 3),
    ("log1p", lax.log1p, -0.5, 3),
    ("expm1", lax.expm1, -3, 3),
    ("sqrt", lax.sqrt, 0.2, 3),
    ("rsqrt", lax.rsqrt, 0.2, 3),
    ("cbrt", lax.cbrt, 0.2, 3),
    ("sin", lax.sin, -3, 3),
    ("cos", lax.cos, -3, 3),
    ("tan", lax.tan, -1.2, 1.2),
    ("asin", lax.asin, -0.8, 0.8),
    ("acos", lax.acos, -0.8, 0.8),
    ("atan", lax.atan, -3, 3),
    ("sinh", lax.sinh, -2, 2),
    ("cosh", lax.cosh, -2, 2),
    ("tanh", lax.tanh, -2, 2),
    ("asinh", lax.asinh, -3, 3),
    ("acosh", lax.acosh, 1.2, 3),
    ("atanh", lax.atanh, -0.8, 0.8),
    ("logistic", lax.logistic, -3, 3),
    ("erf", lax.erf, -2, 2),
    ("erfc", lax.erfc, -2, 2),
    ("erf_inv", lax.erf_inv, -0.8, 0.8),
    ("abs", lax.abs, 0.2, 3),
    ("integer_pow", lambda x: lax.integer_pow(x, 3), -2, 2),
    ("reduce_sum", lambda x: lax.reduce_sum(x, (0,)), -3, 3),
    ("reduce_max", lambda x: lax.reduce_max(x, (0,)), -3, 3),
    ("cumsum", lambda x: lax.cumsum(x, 0), -3, 3),
    ("cumprod", lambda x: lax.cumprod(x, 0), 0.5, 2),
    ("sort", lax.sort, -3, 3),
    ("rev", lambda x: lax.rev(x, (0,)), -3, 3),
    ("pad", lambda x: lax.pad(x, 0.5, ((1, 2, 1),)), -3, 3),
    ("slice", lambda x: lax.slice(x, (1,), (3,)), -3, 3),
    ("broadcast_in_dim", lambda x: lax.broadcast_in_dim(x, (2, 3), (1,)), -3, 3),
]
BINARY = [
    ("add", lax.add, -3, 3),
    ("sub", lax.sub, -3, 3),
    ("mul", lax.mul, -3, 3),
    ("div", lax.div, 0.5, 3),
    ("pow", lax.pow, 0.5, 2),
    ("atan2", lax.atan2, 0.5, 3),
    ("max", lax.max, -3, 3),
    ("min", lax.min, -3, 3),
    ("rem", lax.rem, 2.2, 2.8),
    ("dot", lambda x, y: lax.dot_general(x, y, (((0,), (0,)), ((), ()))), -3, 3),
    ("concatenate", lambda x, y: lax.concatenate([x, y], 0), -3, 3),
]


def _draw(draw, low, high):
    # Values on a grid away from ties, so max/min/sort/abs are smooth at the draws.
    x = draw(arrays(np.float64, (3,), low, high))
    return x + np.arange(3) * 1e-3


@pytest.mark.parametrize("name, fn, low, high", UNARY, ids=[u[0] for u in UNARY])
@given(data=st.data())
def test_unary_check_grads_order_2(name, fn, low, high, data):
    with xform.enable_x64():
        x = _draw(data.draw, low, high)
        if name in ("max", "sort", "reduce_max"):
            x = np.sort(x) + np.arange(3) * 0.1
        check_grads(fn, (x,), order=2, modes=("fwd", "rev"))


@pytest.mark.parametrize("name, fn, low, high", BINARY, ids=[b[0] for b in BINARY])
@given(data=st.data())
def test_binary_check_grads_order_2(name, fn, low, high, data):
    with xform.enable_x64():
        x, y = _draw(data.draw, low, high), _draw(data.draw, low, high)
        if name in ("max", "min"):
            y = x + 0.5  # away from ties
        if name == "rem":
            y = np.full(3, 1.0)  # x / y in (2.2, 2.8): away from the jumps at integers
        check_grads(fn, (x, y), order=2, modes=("fwd", "rev"))


def test_tolerances_by_dtype_as_jax_tests_pass_them():
    """atol/rtol may be dicts keyed by dtype (JAX's tests pass them so): the entry for the
    arguments' dtype applies, and a wrong derivative still fails."""
    x = np.linspace(0.2, 1.0, 5, dtype=np.float32)
    tol = {np.float32: 2e-2, np.float64: 1e-5}
    check_grads(xform.numpy.sin, (x,), order=2, atol=tol, rtol=tol)
    jax.test_util.check_grads(jax.numpy.sin, (x,), order=2, atol=tol, rtol=tol)  # the same call

    @xform.custom_jvp
    def wrong(v):
        return xform.numpy.sin(v)

    wrong.defjvp(lambda p, t: (wrong(p[0]), 2 * t[0]))
    with pytest.raises(AssertionError):
        check_grads(wrong, (x,), order=1, modes=["fwd"], atol=tol, rtol=tol)
