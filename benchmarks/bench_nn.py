"""The ``xform.nn`` rows of ``run.py``: a training step of a small transformer built on
``nn.dot_product_attention``, against JAX (losses and gradients checked close before
timing)."""

import jax
import jax.numpy as jnp
import numpy as np

import xform
import xform.numpy as xnp
from benchmarks.common import compare, on_device
from xform import nn

LIBS = ((xnp, xform, nn), (jnp, jax, jax.nn))


def _params(rng, layers, d, heads):
    def dense(n_in, n_out):
        return (rng.standard_normal((n_in, n_out)) / np.sqrt(n_in)).astype(np.float32)

    return [
        {"qkv": dense(d, 3 * d), "out": dense(d, d), "up": dense(d, 4 * d), "down": dense(4 * d, d)}
        for _ in range(layers)
    ]


def _make_step(lib, mod, nn_mod, heads):
    def block(x, p):
        b, t, d = x.shape
        h = nn_mod.standardize(x, axis=-1)
        q, k, v = lib.split(h @ p["qkv"], 3, axis=-1)
        q, k, v = (a.reshape(b, t, heads, d // heads) for a in (q, k, v))
        x = x + nn_mod.dot_product_attention(q, k, v, is_causal=True).reshape(b, t, d) @ p["out"]
        h = nn_mod.standardize(x, axis=-1)
        return x + nn_mod.gelu(h @ p["up"]) @ p["down"]

    def loss(params, x):
        for p in params:
            x = block(x, p)
        return lib.mean(x**2)

    return mod.jit(mod.value_and_grad(loss))


def bench_transformer_step(scale, batch=8, seq=256, d=256, heads=4, layers=4):
    """(t1) jit(value_and_grad) of a 4-layer pre-norm transformer block stack (causal
    nn.dot_product_attention with 4 heads, a gelu MLP), batch 8, seq 256, d 256, f32."""
    rng = np.random.default_rng(0)
    params = _params(rng, layers, d, heads)
    x = rng.standard_normal((batch, seq, d)).astype(np.float32)
    fns, outs = [], []
    for lib, mod, nn_mod in LIBS:
        step = _make_step(lib, mod, nn_mod, heads)
        on = jax.tree_util.tree_map(lambda a, lib=lib: on_device(lib, a), (params, x))
        outs.append(jax.tree_util.tree_map(np.asarray, step(*on)))
        fns.append(lambda step=step, on=on: jax.block_until_ready(step(*on)))
    for a, b in zip(
        jax.tree_util.tree_leaves(outs[0]), jax.tree_util.tree_leaves(outs[1]), strict=True
    ):
        np.testing.assert_allclose(a, b, rtol=2e-3, atol=2e-4)
    return compare(*fns, samples=3 * scale, inner=1, warmup=1)


BENCHMARKS = [
    (
        "(t1) jit(value_and_grad) of a 4-layer transformer block stack on "
        "nn.dot_product_attention, batch 8, seq 256, d 256",
        bench_transformer_step,
        (),
        1.1,
    ),
]
