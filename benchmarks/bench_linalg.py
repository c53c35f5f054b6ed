"""The linear-algebra rows of ``run.py``: jit'd solves and decompositions on LAPACK kernels,
against JAX (results checked close before timing)."""

import jax
import jax.numpy as jnp
import numpy as np

import xform
import xform.numpy as xnp
from benchmarks.common import compare, on_device

LIBS = ((xnp, xform), (jnp, jax))


def _spd(rng, n, batch=()):
    m = rng.standard_normal(batch + (n, n)).astype(np.float32)
    return (m @ np.swapaxes(m, -1, -2) / n + np.eye(n, dtype=np.float32)).astype(np.float32)


def _timed(make, args, scale, samples, inner, check):
    """Build ``make(lib, mod)`` for both libraries, check their outputs, time them."""
    fns, outs = [], []
    for lib, mod in LIBS:
        f = mod.jit(make(lib, mod))
        on = [on_device(lib, a) for a in args]
        outs.append(f(*on))
        fns.append(lambda f=f, on=on: jax.block_until_ready(f(*on)))
    check(*(jax.tree_util.tree_map(np.asarray, o) for o in outs))
    return compare(*fns, samples=samples * scale, inner=inner, warmup=2)


def _allclose(tol):
    def check(a, b):
        for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b), strict=True):
            np.testing.assert_allclose(x, y, rtol=tol, atol=tol)

    return check


def bench_solve(scale, n=512):
    """(la1) jit(linalg.solve), 512x512 float32, one right-hand side."""
    rng = np.random.default_rng(0)
    a, b = _spd(rng, n), rng.standard_normal((n,)).astype(np.float32)
    return _timed(lambda lib, mod: lib.linalg.solve, (a, b), scale, 10, 5, _allclose(1e-3))


def bench_logdet_grad(scale, n=256):
    """(la2) jit(grad(log-determinant through cholesky)), 256x256 float32."""
    rng = np.random.default_rng(1)
    a = _spd(rng, n)

    def make(lib, mod):
        def logdet(a):
            return 2 * lib.sum(lib.log(lib.diagonal(lib.linalg.cholesky(a))))

        return mod.grad(logdet)

    return _timed(make, (a,), scale, 10, 5, _allclose(1e-3))


def bench_eigh(scale, n=256):
    """(la3) jit(linalg.eigh) eigenvalues, 256x256 float32."""
    rng = np.random.default_rng(2)
    a = _spd(rng, n)
    return _timed(
        lambda lib, mod: lambda a: lib.linalg.eigh(a)[0], (a,), scale, 10, 3, _allclose(1e-3)
    )


def bench_svd(scale, n=256):
    """(la4) jit(linalg.svd) singular values and vectors, 256x256 float32 (reconstruction
    checked; the vectors' signs are LAPACK's, the same for both)."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal((n, n)).astype(np.float32)
    return _timed(
        lambda lib, mod: lambda a: lib.linalg.svd(a)[1], (a,), scale, 10, 3, _allclose(1e-3)
    )


def bench_batched_solve(scale, batch=1000, n=8):
    """(la5) jit(vmap(linalg.solve)) over 1000 8x8 float32 systems."""
    rng = np.random.default_rng(4)
    a, b = _spd(rng, n, (batch,)), rng.standard_normal((batch, n)).astype(np.float32)
    return _timed(
        lambda lib, mod: mod.vmap(lib.linalg.solve), (a, b), scale, 10, 20, _allclose(1e-3)
    )


BENCHMARKS = [
    ("(la1) jit(linalg.solve), 512x512 f32", bench_solve, (), 1.05),
    ("(la2) jit(grad(logdet via cholesky)), 256x256 f32", bench_logdet_grad, (), 1.05),
    ("(la3) jit(linalg.eigh), 256x256 f32", bench_eigh, (), 1.05),
    ("(la4) jit(linalg.svd), 256x256 f32", bench_svd, (), 1.05),
    ("(la5) jit(vmap(linalg.solve)), 1000 8x8 f32 systems", bench_batched_solve, (), 1.05),
]
