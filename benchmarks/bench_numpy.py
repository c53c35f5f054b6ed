"""The numpy/lax breadth rows of ``run.py``: fft, max-pool gradients, sorting, searching and
segment sums under jit, against JAX (results checked before timing)."""

import jax
import numpy as np

from benchmarks.bench_linalg import _allclose, _timed


def _exact(a, b):
    for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b), strict=True):
        np.testing.assert_array_equal(x, y)


def bench_fft(scale, n=2**20):
    """(n1) jit(fft) of 2^20 complex64."""
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(np.complex64)
    return _timed(lambda lib, mod: lib.fft.fft, (x,), scale, 10, 5, _allclose(1e-2))


def bench_max_pool_grad(scale, shape=(32, 64, 64, 32)):
    """(n2) jit(grad) of a 2x2 stride-2 max-pool (reduce_window) over 32x64x64x32 f32."""
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)

    def make(lib, mod):
        def pooled_sum(x):
            y = mod.lax.reduce_window(x, -np.inf, mod.lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
            return lib.sum(y * y)

        return mod.grad(pooled_sum)

    return _timed(make, (x,), scale, 10, 2, _allclose(1e-5))


def bench_sort(scale, n=10**6):
    """(n3) jit(sort) of 10^6 float32."""
    x = np.random.default_rng(2).standard_normal(n).astype(np.float32)
    return _timed(lambda lib, mod: lib.sort, (x,), scale, 10, 2, _exact)


def bench_searchsorted(scale, n=10**6, m=10**5):
    """(n4) jit(searchsorted) of 10^5 queries into 10^6 sorted float32."""
    rng = np.random.default_rng(3)
    a = np.sort(rng.standard_normal(n).astype(np.float32))
    v = rng.standard_normal(m).astype(np.float32)
    return _timed(lambda lib, mod: lib.searchsorted, (a, v), scale, 10, 5, _exact)


def bench_segment_sum(scale, n=10**6, segments=1000):
    """(n5) jit(segment_sum) of 10^6 float32 into 1000 segments."""
    rng = np.random.default_rng(4)
    data = rng.standard_normal(n).astype(np.float32)
    ids = rng.integers(0, segments, n).astype(np.int32)

    def make(lib, mod):
        return lambda d, i: mod.ops.segment_sum(d, i, num_segments=segments)

    return _timed(make, (data, ids), scale, 10, 5, _allclose(1e-3))


BENCHMARKS = [
    ("(n1) jit(fft), 2^20 c64", bench_fft, (), 1.05),
    ("(n2) jit(grad(max-pool reduce_window)), 32x64x64x32 f32", bench_max_pool_grad, (), 1.05),
    ("(n3) jit(sort), 10^6 f32", bench_sort, (), 1.05),
    ("(n4) jit(searchsorted), 10^5 into 10^6 f32", bench_searchsorted, (), 1.05),
    ("(n5) jit(segment_sum), 10^6 f32 into 1000 segments", bench_segment_sum, (), 1.05),
]
