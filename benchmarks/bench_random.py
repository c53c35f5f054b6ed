"""The random rows of ``run.py``: threefry sampling under jit, against JAX (outputs checked
bit-equal)."""

import jax
import numpy as np

import xform
import xform.random
from benchmarks.common import compare

# (random module, library) per library; the benchmarked code is the same for both.
LIBS = ((xform.random, xform), (jax.random, jax))


def _check_and_compare(fns, outs, scale, samples, inner):
    np.testing.assert_array_equal(np.asarray(outs[0]), np.asarray(outs[1]))
    return compare(*fns, samples=samples * scale, inner=inner, warmup=2)


def bench_normal(scale, size=1_000_000):
    """(r1) jit(random.normal) of 1e6 float32 values from one key."""
    fns, outs = [], []
    for random, mod in LIBS:
        key = mod.device_put(np.asarray(jax.random.PRNGKey(0)))
        f = mod.jit(lambda k, random=random: random.normal(k, (size,)))
        outs.append(f(key))
        fns.append(lambda f=f, key=key: f(key).block_until_ready())
    return _check_and_compare(fns, outs, scale, samples=10, inner=3)


def bench_split(scale, n_keys=1000):
    """(r2) jit(vmap(random.split)) of 1000 keys into 2 each."""
    keys = np.asarray(jax.random.split(jax.random.PRNGKey(0), n_keys))
    fns, outs = [], []
    for random, mod in LIBS:
        k = mod.device_put(keys)
        f = mod.jit(mod.vmap(random.split))
        outs.append(f(k))
        fns.append(lambda f=f, k=k: f(k).block_until_ready())
    return _check_and_compare(fns, outs, scale, samples=30, inner=50)


def _bench_sampler(scale, sample, max_mismatch=0.0):
    """jit(sample(random, key)) from one key, for xform and JAX; at most a ``max_mismatch``
    fraction of the values may differ (an accept test on the edge, decided by an ulp of XLA
    fusion)."""
    fns, outs = [], []
    for random, mod in LIBS:
        key = mod.device_put(np.asarray(jax.random.PRNGKey(0)))
        f = mod.jit(lambda k, random=random: sample(random, k))
        outs.append(np.asarray(f(key)))
        fns.append(lambda f=f, key=key: f(key).block_until_ready())
    assert np.mean(outs[0] != outs[1]) <= max_mismatch
    return compare(*fns, samples=10 * scale, inner=1, warmup=2)


def bench_poisson(scale, size=1_000_000):
    """(r3) jit(random.poisson) of 1e6 int32 values, rates spread over Knuth's and the
    rejection sampler's ranges."""
    lam = np.linspace(0.0, 40.0, size, dtype=np.float32)
    # 1 of these 10^6 draws differs from JAX's (a rejection test within an ulp)
    return _bench_sampler(scale, lambda random, k: random.poisson(k, lam), max_mismatch=1e-5)


def bench_t(scale, size=1_000_000):
    """(r4) jit(random.t) of 1e6 float32 values (a normal and a per-element gamma draw)."""
    return _bench_sampler(scale, lambda random, k: random.t(k, 5.0, (size,)))


BENCHMARKS = [
    ("(r1) jit(random.normal), 1e6 float32 values", bench_normal, (), 1.0),
    ("(r2) jit(vmap(random.split)), 1000 keys", bench_split, (), 1.0),
    ("(r3) jit(random.poisson) 10^6", bench_poisson, (), 1.0),
    ("(r4) jit(random.t) 10^6", bench_t, (), 1.0),
]
