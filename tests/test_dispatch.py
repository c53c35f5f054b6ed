"""Eager evaluation: the NumPy host path (CPU) and the XLA device path (GPU/TPU) agree."""

import math

import numpy as np
import pytest

import xform
from xform import core, dispatch, lax
from xform.array import from_host

X = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)

OPS = [
    ("sin", lax.sin),
    ("exp", lax.exp),
    ("add_scalar", lambda x: lax.add(x, 2.0)),
    ("div", lambda x: lax.div(x, lax.add(lax.abs(x), 1.0))),
    ("gt", lambda x: lax.gt(x, 0.0)),
    ("convert", lambda x: lax.convert_element_type(lax.mul(x, 100.0), np.int32)),
    ("select", lambda x: lax.select(lax.gt(x, 0.0), x, lax.neg(x))),
    ("integer_pow", lambda x: lax.integer_pow(x, 3)),
    ("broadcast", lambda x: lax.broadcast_in_dim(x, (2, 3, 4), (1, 2))),
    ("reshape", lambda x: lax.reshape(x, (4, 3))),
]


@pytest.fixture
def device_eager():
    """Evaluate eager primitives as on a GPU: every op compiled with XLA."""
    saved = core.eval_trace.apply
    core.set_eager_impl(dispatch.device_apply)
    try:
        yield
    finally:
        core.set_eager_impl(saved)


@pytest.mark.parametrize("name, op", OPS)
def test_device_path_matches_host_path(name, op, device_eager):
    core.set_eager_impl(dispatch.host_apply)
    expected = op(from_host(X))
    core.set_eager_impl(dispatch.device_apply)
    got = op(from_host(X))
    assert got._buf is not None  # really computed by XLA
    assert got.aval == expected.aval
    np.testing.assert_allclose(np.asarray(got), np.asarray(expected), rtol=1e-6, atol=1e-6)


def test_host_path_is_used_on_cpu():
    if xform.default_backend() != "cpu":
        pytest.skip("host eager path only exists on a CPU backend")
    lax.sin(1.0)  # let the first call choose the path
    out = lax.sin(from_host(X))
    assert out._host is not None and out._buf is None


def test_special_functions_without_numpy_impl_run_on_xla():
    out = lax.erf(from_host(X))
    assert out._buf is not None
    np.testing.assert_allclose(out, np.vectorize(math.erf)(X), rtol=1e-6, atol=1e-7)


def test_host_path_does_not_warn():
    # pytest turns warnings into errors: NumPy must not warn where XLA silently gives inf/nan.
    out = lax.log(from_host(np.array([0.0, -1.0], np.float32)))
    assert np.isneginf(np.asarray(out)[0]) and np.isnan(np.asarray(out)[1])
    out = lax.div(from_host(np.array([1.0], np.float32)), 0.0)
    assert np.isposinf(np.asarray(out)[0])
