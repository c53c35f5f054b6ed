"""The API rows of ``run.py``: what the transformations' wrappers cost around a call.

(a2) times ``jit(f)(x, y)`` written inline, a fresh wrapper per call, against a call of one
cached wrapper: both columns are xform. jit's cache belongs to the function (as JAX's does),
so the fresh wrapper finds the trace and the program of the earlier ones and costs only
its construction; the target is at most 1.2x the cached call. (a3) puts the same inline
call next to JAX's.
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
    np.testing.assert_allclose(np.asarray(xform.jit(_mul_add)(a, b)), x * (x + 1) + 1,
                               rtol=1e-6)
    return compare(lambda: xform.jit(_mul_add)(a, b).block_until_ready(),
                   lambda: cached(a, b).block_until_ready(),
                   samples=30 * scale, inner=200, warmup=200)


def bench_fresh_wrapper_jax(scale):
    """(a3) ``jit(f)(x, y)`` with a fresh wrapper per call, xform against JAX."""
    x = np.linspace(-1.0, 1.0, 16, dtype=np.float32)
    fns = []
    for lib, jit in ((xnp, xform.jit), (jax.numpy, jax.jit)):
        a, b = on_device(lib, x), on_device(lib, x + 1)
        np.testing.assert_allclose(np.asarray(jit(_mul_add)(a, b)), x * (x + 1) + 1,
                                   rtol=1e-6)
        fns.append(lambda jit=jit, a=a, b=b: jit(_mul_add)(a, b).block_until_ready())
    return compare(*fns, samples=30 * scale, inner=100, warmup=100)


BENCHMARKS = [
    ("(a2) `jit(f)(x, y)`, a fresh wrapper per call, against a cached call (xform/xform)",
     bench_fresh_wrapper, (), 1.2),
    ("(a3) `jit(f)(x, y)`, a fresh wrapper per call", bench_fresh_wrapper_jax, (), 1.0),
]
