"""The vmap rows of ``run.py``: per-example gradients and batched matmuls under jit."""

import jax
import jax.numpy as jnp
import numpy as np

import xform
import xform.numpy as xnp
from benchmarks.common import compare, on_device

LIBS = ((xnp, xform), (jnp, jax))


def _logistic_loss(lib):
    def loss(w, x, y):
        logit = lib.dot(x, w)
        return lib.log(1.0 + lib.exp(-y * logit))

    return loss


def _mlp_loss(lib):
    def loss(params, x, y):
        (w1, b1), (w2, b2) = params
        h = lib.tanh(lib.dot(x, w1) + b1)
        out = lib.dot(h, w2) + b2
        return lib.sum((out - y) ** 2)

    return loss


def _per_example(make_loss, params, x, y, scale):
    fns, outs = [], []
    for lib, mod in LIBS:
        p = jax.tree_util.tree_map(lambda a, lib=lib: on_device(lib, a), params)
        xd, yd = on_device(lib, x), on_device(lib, y)
        step = mod.jit(mod.vmap(mod.grad(make_loss(lib)), in_axes=(None, 0, 0)))
        outs.append([np.asarray(g) for g in jax.tree_util.tree_leaves(step(p, xd, yd))])
        fns.append(
            lambda step=step, p=p, xd=xd, yd=yd: jax.tree_util.tree_leaves(step(p, xd, yd))[
                0
            ].block_until_ready()
        )
    for a, b in zip(*outs, strict=True):
        np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-5)
    return compare(*fns, samples=10 * scale, inner=5, warmup=2)


def bench_per_example_logistic(scale, features=784):
    """(h) jit(vmap(grad)) per-example gradients of logistic regression, batch 256; 784
    features, or ``features`` in rows (h256), (h1024), (h4096)."""
    rng = np.random.default_rng(0)
    w = rng.standard_normal(features).astype(np.float32) / np.sqrt(features).astype(np.float32)
    x = rng.standard_normal((256, features)).astype(np.float32)
    y = np.sign(rng.standard_normal(256)).astype(np.float32)
    return _per_example(_logistic_loss, w, x, y, scale)


def bench_per_example_mlp(scale):
    """(i) jit(vmap(grad)) per-example gradients of a 64-128-10 MLP, batch 256."""
    rng = np.random.default_rng(0)
    params = [
        (rng.standard_normal((64, 128)).astype(np.float32) / 8, np.zeros(128, np.float32)),
        (rng.standard_normal((128, 10)).astype(np.float32) / 11, np.zeros(10, np.float32)),
    ]
    x = rng.standard_normal((256, 64)).astype(np.float32)
    y = rng.standard_normal((256, 10)).astype(np.float32)
    return _per_example(_mlp_loss, params, x, y, scale)


def bench_batched_matmul(scale):
    """(j) jit(vmap(dot)) of 64 pairs of 128x128 matrices against xform's own hand-batched
    einsum (the ratio is vmapped / hand-batched, both xform)."""
    rng = np.random.default_rng(0)
    a = on_device(xnp, rng.standard_normal((64, 128, 128)).astype(np.float32))
    b = on_device(xnp, rng.standard_normal((64, 128, 128)).astype(np.float32))
    vmapped = xform.jit(xform.vmap(xnp.dot))
    by_hand = xform.jit(lambda a, b: xnp.einsum("bij,bjk->bik", a, b))
    np.testing.assert_allclose(
        np.asarray(vmapped(a, b)), np.asarray(by_hand(a, b)), rtol=1e-4, atol=1e-3
    )
    return compare(
        lambda: vmapped(a, b).block_until_ready(),
        lambda: by_hand(a, b).block_until_ready(),
        samples=10 * scale,
        inner=5,
        warmup=2,
    )


BENCHMARKS = [
    (
        "(h) jit(vmap(grad)) per-example grads, logistic regression, batch 256",
        bench_per_example_logistic,
        (),
        1.0,
    ),
    *(
        (f"(h{d}) the same, {d} features", bench_per_example_logistic, (d,), 1.0)
        for d in (256, 1024, 4096)
    ),
    (
        "(i) jit(vmap(grad)) per-example grads, MLP 64-128-10, batch 256",
        bench_per_example_mlp,
        (),
        1.0,
    ),
    (
        "(j) jit(vmap(dot)) 64x128x128 against xform's hand-batched einsum (xform/xform)",
        bench_batched_matmul,
        (),
        1.0,
    ),
]
