"""Eager evaluation: the NumPy host path (CPU) and the XLA device path (GPU/TPU) agree."""

import math

import numpy as np
import pytest

import xform
from xform import core, lax
from xform.runtime import dispatch
from xform.runtime.array import from_host

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


def _on_host(out):
    """Whether eager result ``out`` came from the host path (NumPy data, no device buffer;
    an XLA result has a buffer, and NumPy data too once read)."""
    assert out._host is not None or out._buf is not None
    return out._buf is None


def test_eager_path_follows_the_flag(eager_path):
    # conftest's ``eager_path``: "xla" in this file's [xla-eager] twins and under --eager=xla.
    lax.sin(1.0)  # let the first call choose the path
    on_host = eager_path == "host" and xform.default_backend() == "cpu"
    assert _on_host(lax.sin(from_host(X))) == on_host
    assert _on_host(lax.reduce_sum(from_host(X), (0,))) == on_host  # an op with params


def test_eager_path_switches_at_the_next_op():
    cpu = xform.default_backend() == "cpu"
    x = from_host(X)
    saved = xform.config.xform_eager_path
    try:
        xform.config.update("xform_eager_path", "xla")
        assert not _on_host(lax.sin(x)) and not _on_host(x * 2.0)
        xform.config.update("xform_eager_path", "host")
        assert _on_host(lax.sin(x)) == cpu and _on_host(x * 2.0) == cpu
        with xform.config.scope("xform_eager_path", "xla"):
            assert xform.config.read("xform_eager_path") == "xla"
            assert not _on_host(lax.sin(x))
            with xform.debug_nans(True):  # the checking path runs the chosen one too
                assert not _on_host(lax.sin(x))
                with pytest.raises(FloatingPointError, match="log"):
                    lax.log(lax.neg(x))
        assert _on_host(lax.sin(x)) == cpu
    finally:
        xform.config.update("xform_eager_path", saved)


def test_eager_path_flag_values(monkeypatch):
    with pytest.raises(ValueError, match=r"'xform_eager_path'.*\['host', 'xla'\]"):
        xform.config.update("xform_eager_path", "gpu")
    assert "xform_eager_path" in xform.config.flags()
    flag = xform.config._FLAGS["xform_eager_path"]
    monkeypatch.setenv("XFORM_EAGER_PATH", "xla")  # the default at import
    assert flag.from_env() == "xla"
    monkeypatch.setenv("XFORM_EAGER_PATH", "numpy")
    with pytest.raises(ValueError, match="xform_eager_path"):
        flag.from_env()


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


# --------------------------------------------------------------------------- the fast path
# A primitive without params on one or two host Arrays runs a memoized NumPy call (see
# ``dispatch._plans``); its results must be those of the general path, and of JAX.


def _fast_cases():
    import jax.numpy as jnp  # noqa: PLC0415  (the oracle)
    import ml_dtypes  # noqa: PLC0415

    import xform.numpy as xnp  # noqa: PLC0415

    data = {
        "f32": np.linspace(-3, 3, 6, dtype=np.float32),
        "f32_rank0": np.float32(0.5),
        "bf16": np.linspace(-3, 3, 6).astype(ml_dtypes.bfloat16),  # computed in float32
        "f16": np.linspace(-3, 3, 6).astype(np.float16),
        "i32": np.arange(-3, 3, dtype=np.int32),
        "bool": np.array([True, False, True]),
    }
    ops = {
        "sin": lambda m, x, y: m.sin(x),
        "negative": lambda m, x, y: m.negative(x),
        "add": lambda m, x, y: m.add(x, y),
        "multiply": lambda m, x, y: x * y,
        "less": lambda m, x, y: x < y,
        "maximum": lambda m, x, y: m.maximum(x, y),
    }
    return jnp, xnp, data, ops


def _check_like_jax(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.aval.weak_type == want.weak_type
    np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64), rtol=1e-6)


def test_fast_path_matches_jax_and_the_general_path():
    jnp, xnp, data, ops = _fast_cases()
    for dname, host in data.items():
        for oname, op in ops.items():
            if dname == "bool" and oname in ("sin", "negative"):
                continue
            # Two Arrays per operand with one value: the second call finds the plan.
            x, y = xnp.asarray(host), xnp.asarray(host[::-1] if host.ndim else host)
            want = op(jnp, jnp.asarray(host), jnp.asarray(host[::-1] if host.ndim else host))
            first, second = op(xnp, x, y), op(xnp, x, y)
            _check_like_jax(first, want)
            _check_like_jax(second, want)
            assert type(np.asarray(second)) is np.ndarray  # a 0-d result too, not a scalar
            assert np.asarray(first).tobytes() == np.asarray(second).tobytes(), (dname, oname)


def test_fast_path_keeps_weak_types():
    jnp, xnp, _, _ = _fast_cases()
    weak = xnp.asarray(2.0) + 1.0  # a weakly typed float32 scalar
    for _ in range(2):
        _check_like_jax(xnp.sin(weak), jnp.sin(jnp.asarray(2.0) + 1.0))
        _check_like_jax(weak * weak, (jnp.asarray(2.0) + 1.0) ** 2)


def test_fast_path_flushes_an_underflow():
    # The plan is made by a call that does not underflow; a later one with the same avals
    # must flush its subnormal results to zero as XLA does.
    jnp, xnp, _, _ = _fast_cases()
    normal, tiny = np.zeros(3, np.float32), np.full(3, -100, np.float32)
    for host in (normal, tiny, normal, tiny):
        got, want = xnp.exp(xnp.asarray(host)), jnp.exp(host)
        assert np.asarray(got).tobytes() == np.asarray(want).tobytes()
    a, b = xnp.asarray(np.float32([1e-20, 1.0])), xnp.asarray(np.float32([1e-20, 2.0]))
    for _ in range(2):
        assert (
            np.asarray(a * b).tolist()
            == np.asarray(jnp.float32([1e-20, 1]) * jnp.float32([1e-20, 2])).tolist()
        )


def test_fast_path_in_threads():
    # Each thread has its own NumPy error context; results are right in all of them.
    import concurrent.futures  # noqa: PLC0415

    _, xnp, _, _ = _fast_cases()
    x = xnp.asarray(np.linspace(0, 1, 8, dtype=np.float32))
    want = np.asarray(xnp.sin(x) * x - x)

    def work(_):
        return all(np.array_equal(np.asarray(xnp.sin(x) * x - x), want) for _ in range(200))

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        assert all(pool.map(work, range(8)))


def test_fast_path_rejects_escaped_tracers():
    _, xnp, _, _ = _fast_cases()
    x = xnp.ones(3, dtype=np.float32)
    xnp.sin(x)  # a plan for this aval
    leaked = []
    xform.jit(lambda t: leaked.append(t) or t)(x)
    with pytest.raises(xform.errors.UnexpectedTracerError):
        xnp.sin(leaked[0])
