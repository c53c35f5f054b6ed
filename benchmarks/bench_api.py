"""The API rows of ``run.py``: what the transformations' wrappers cost around a call.

(a2) times ``jit(f)(x, y)`` written inline, a fresh wrapper per call, against a call of one
cached wrapper: both columns are xform. jit's cache belongs to the function (as JAX's does),
so the fresh wrapper finds the trace and the program of the earlier ones and costs only
its construction; the target is at most 1.2x the cached call. (a3) puts the same inline
call next to JAX's. (a4)-(a6) are cached calls of other signatures than (a)'s: a static
argument with a Python-float learning rate, a static keyword, and a dict of six parameter
arrays beside an array.

The (c) rows here put one eager op (the (c) rows of ``run.py``, against JAX) next to NumPy
and HIPS autograd, the references for eager speed: the "JAX" column holds the other
library's time, and the ratio is xform/NumPy or xform/autograd. (cx) is the same op on
xform's other eager path, ``xform_eager_path="xla"`` (each primitive a compiled XLA program,
as on a GPU), against JAX's eager op.
"""

import jax
import numpy as np

import xform
import xform.numpy as xnp
from benchmarks.common import compare, on_device


def _mul_add(x, y):
    return x * y + 1


def bench_fresh_wrapper(scale):
    """(a2) ``jit(f)(x, y)`` with a fresh wrapper per call, against a cached wrapper."""
    x = np.linspace(-1.0, 1.0, 16, dtype=np.float32)
    a, b = on_device(xnp, x), on_device(xnp, x + 1)
    cached = xform.jit(_mul_add)
    np.testing.assert_allclose(np.asarray(xform.jit(_mul_add)(a, b)), x * (x + 1) + 1, rtol=1e-6)
    return compare(
        lambda: xform.jit(_mul_add)(a, b).block_until_ready(),
        lambda: cached(a, b).block_until_ready(),
        samples=30 * scale,
        inner=200,
        warmup=200,
    )


def bench_fresh_wrapper_jax(scale):
    """(a3) ``jit(f)(x, y)`` with a fresh wrapper per call, xform against JAX."""
    x = np.linspace(-1.0, 1.0, 16, dtype=np.float32)
    fns = []
    for lib, jit in ((xnp, xform.jit), (jax.numpy, jax.jit)):
        a, b = on_device(lib, x), on_device(lib, x + 1)
        np.testing.assert_allclose(np.asarray(jit(_mul_add)(a, b)), x * (x + 1) + 1, rtol=1e-6)
        fns.append(lambda jit=jit, a=a, b=b: jit(_mul_add)(a, b).block_until_ready())
    return compare(*fns, samples=30 * scale, inner=100, warmup=100)


def _call_kinds(lib, mod, kind):
    """A cached jit call of signature ``kind`` on ``lib``'s arrays, checked, then timed."""
    x0 = np.linspace(-1.0, 1.0, 16, dtype=np.float32)
    x = on_device(lib, x0)
    if kind == "static+scalar":
        f = mod.jit(lambda x, n, lr: x * lr + n, static_argnums=(1,))
        want, call = x0 * np.float32(0.1) + 3, lambda: f(x, 3, 0.1)
    elif kind == "static keyword":
        f = mod.jit(lambda x, *, mode: x + 1 if mode == "add" else x * 2, static_argnames=("mode",))
        want, call = x0 + 1, lambda: f(x, mode="add")
    else:
        params = {k: on_device(lib, x0 * i) for i, k in enumerate("abcdef")}
        f = mod.jit(lambda p, x: sum(v * x for v in p.values()))
        want, call = sum(x0 * i * x0 for i in range(6)), lambda: f(params, x)
    np.testing.assert_allclose(np.asarray(call()), want, rtol=1e-6)
    return lambda: call().block_until_ready()


def bench_call_kind(scale, kind):
    """(a4)-(a6) a cached jit call of another signature than (a)'s, xform against JAX."""
    return compare(
        _call_kinds(xnp, xform, kind),
        _call_kinds(jax.numpy, jax, kind),
        samples=30 * scale,
        inner=200,
        warmup=200,
    )


def _eager_op(lib, op, x, y):
    if op == "sin":
        return lambda: lib.sin(x)
    return lambda: lib.add(x, y)


def bench_eager_reference(scale, op, reference):
    """(c) One eager op on float32[16], xform against NumPy or HIPS autograd (outside grad:
    a NumPy call behind autograd's primitive wrapper)."""
    if reference == "numpy":
        ref = np
    else:
        import autograd.numpy as ref  # noqa: PLC0415  (optional: only this row needs it)
    x, y = np.linspace(-1, 1, 16, dtype=np.float32), np.ones(16, np.float32)
    xf_fn = _eager_op(xnp, op, xnp.asarray(x), xnp.asarray(y))
    ref_fn = _eager_op(ref, op, x, y)
    np.testing.assert_array_equal(np.asarray(xf_fn()), ref_fn())
    return compare(
        lambda: xf_fn().block_until_ready(), ref_fn, samples=30 * scale, inner=200, warmup=200
    )


def bench_eager_xla_path(scale, op):
    """(cx) One eager op on float32[16] device arrays through xform's XLA eager path, against
    JAX's eager op on the same data."""
    x, y = np.linspace(-1, 1, 16, dtype=np.float32), np.ones(16, np.float32)
    xf_fn = _eager_op(xnp, op, on_device(xnp, x), on_device(xnp, y))
    jax_fn = _eager_op(jax.numpy, op, on_device(jax.numpy, x), on_device(jax.numpy, y))
    with xform.config.scope("xform_eager_path", "xla"):
        np.testing.assert_array_equal(np.asarray(xf_fn()), np.asarray(jax_fn()))
        return compare(
            lambda: xf_fn().block_until_ready(),
            lambda: jax_fn().block_until_ready(),
            samples=30 * scale,
            inner=200,
            warmup=200,
        )


# After the (c) rows of run.py: references, not targets.
EAGER_REFERENCE_BENCHMARKS = [
    (
        "(c) eager `sin`, f32[16], against NumPy (ratio xform/NumPy)",
        bench_eager_reference,
        ("sin", "numpy"),
        None,
    ),
    (
        "(c) eager `add`, f32[16], against NumPy (ratio xform/NumPy)",
        bench_eager_reference,
        ("add", "numpy"),
        None,
    ),
    (
        "(c) eager `sin`, f32[16], against HIPS autograd (ratio xform/autograd)",
        bench_eager_reference,
        ("sin", "autograd"),
        None,
    ),
    (
        "(c) eager `add`, f32[16], against HIPS autograd (ratio xform/autograd)",
        bench_eager_reference,
        ("add", "autograd"),
        None,
    ),
    ("(cx) eager `sin`, f32[16], XLA eager path", bench_eager_xla_path, ("sin",), None),
    ("(cx) eager `add`, f32[16], XLA eager path", bench_eager_xla_path, ("add",), None),
]

BENCHMARKS = [
    (
        "(a2) `jit(f)(x, y)`, a fresh wrapper per call, against a cached call (xform/xform)",
        bench_fresh_wrapper,
        (),
        1.2,
    ),
    ("(a3) `jit(f)(x, y)`, a fresh wrapper per call", bench_fresh_wrapper_jax, (), 1.0),
    (
        "(a4) cached jit call, a static argument and a Python float",
        bench_call_kind,
        ("static+scalar",),
        1.0,
    ),
    ("(a5) cached jit call, a static keyword argument", bench_call_kind, ("static keyword",), 1.0),
    ("(a6) cached jit call, a dict of 6 f32[16] and an f32[16]", bench_call_kind, ("pytree",), 1.0),
]
