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


BENCHMARKS = [
    ("(r1) jit(random.normal), 1e6 float32 values", bench_normal, (), 1.0),
    ("(r2) jit(vmap(random.split)), 1000 keys", bench_split, (), 1.0),
]
