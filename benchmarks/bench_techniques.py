"""The training-technique rows of ``run.py`` (the techniques the notebooks show): gradient
accumulation, mixed precision, activation checkpointing, against JAX (results checked close
before timing). Each row is its own function; ``BENCHMARKS`` at the end lists them."""

import numpy as np

import xform
import xform.numpy as xnp
from benchmarks.bench_linalg import LIBS, _allclose, _timed


def _mlp_params(rng, sizes):
    """[(w, b), ...] of an MLP with layer widths ``sizes``, float32."""
    params = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:], strict=True):
        w = (rng.standard_normal((n_in, n_out)) / np.sqrt(n_in)).astype(np.float32)
        params.append((w, np.zeros(n_out, np.float32)))
    return params


def _make_loss(lib, mod):
    """Softmax cross-entropy of a tanh MLP, averaged over the batch."""

    def loss(params, x, labels):
        for w, b in params[:-1]:
            x = lib.tanh(x @ w + b)
        w, b = params[-1]
        logits = x @ w + b
        logp = logits - mod.nn.logsumexp(logits, axis=-1, keepdims=True)
        return -lib.mean(lib.take_along_axis(logp, labels[:, None], axis=-1))

    return loss


def _make_accumulated_step(lib, mod, lr=0.1):
    """SGD step whose gradient is the mean of the micro-batches' gradients, summed in a scan."""

    loss = _make_loss(lib, mod)

    def step(w1, b1, w2, b2, xs, labels):
        params = [(w1, b1), (w2, b2)]

        def accumulate(total, batch):
            g = mod.grad(loss)(params, *batch)
            return mod.tree_util.tree_map(lib.add, total, g), None

        zeros = mod.tree_util.tree_map(lib.zeros_like, params)
        total, _ = mod.lax.scan(accumulate, zeros, (xs, labels))
        return mod.tree_util.tree_map(lambda p, g: p - lr * g / xs.shape[0], params, total)

    return step


def bench_accumulated_step(scale, micro=4, batch=64, sizes=(784, 512, 10)):
    """(g1) jit of an SGD step whose gradient is accumulated over 4 micro-batches of 64 in a
    ``lax.scan`` (the same step as one batch of 256), MLP 784-512-10, softmax cross-entropy."""
    rng = np.random.default_rng(0)
    (w1, b1), (w2, b2) = _mlp_params(rng, sizes)
    xs = rng.standard_normal((micro, batch, sizes[0])).astype(np.float32)
    labels = rng.integers(0, sizes[-1], (micro, batch)).astype(np.int32)
    args = (w1, b1, w2, b2, xs, labels)
    # The accumulated step is the big-batch step: checked once on xform before timing.
    step = xform.jit(_make_accumulated_step(xnp, xform))
    grads = xform.jit(xform.grad(_make_loss(xnp, xform)))(
        [(w1, b1), (w2, b2)], xs.reshape(micro * batch, -1), labels.reshape(-1)
    )
    leaves = xform.tree_util.tree_leaves
    for new, old, g in zip(leaves(step(*args)), (w1, b1, w2, b2), leaves(grads), strict=True):
        np.testing.assert_allclose(new, old - 0.1 * np.asarray(g), rtol=1e-5, atol=1e-6)
    return _timed(_make_accumulated_step, args, scale, 30, 5, _allclose(1e-5))


def _make_bf16_step(lib, mod, lr=0.05):
    """SGD step of a tanh MLP whose matmuls take bfloat16 operands and accumulate in float32
    (``preferred_element_type``); float32 master weights, loss and update."""
    dims = (((1,), (0,)), ((), ()))

    def dense(x, w, b):
        return (
            mod.lax.dot_general(
                x.astype(lib.bfloat16),
                w.astype(lib.bfloat16),
                dims,
                preferred_element_type=lib.float32,
            )
            + b
        )

    def loss(params, x, labels):
        for w, b in params[:-1]:
            x = lib.tanh(dense(x, w, b))
        logits = dense(x, *params[-1])
        logp = logits - mod.nn.logsumexp(logits, axis=-1, keepdims=True)
        return -lib.mean(lib.take_along_axis(logp, labels[:, None], axis=-1))

    def step(w1, b1, w2, b2, w3, b3, x, labels):
        params = [(w1, b1), (w2, b2), (w3, b3)]
        value, grads = mod.value_and_grad(loss)(params, x, labels)
        new = mod.tree_util.tree_map(lambda p, g: p - lr * g, params, grads)
        return value, mod.tree_util.tree_leaves(new)

    return step


def bench_bf16_step(scale, batch=256, sizes=(784, 1024, 1024, 10)):
    """(g2) jit of a bfloat16 mixed-precision SGD step (bf16 matmul operands accumulated in
    float32, float32 master weights), MLP 784-1024-1024-10, batch 256."""
    rng = np.random.default_rng(0)
    params = _mlp_params(rng, sizes)
    x = rng.standard_normal((batch, sizes[0])).astype(np.float32)
    labels = rng.integers(0, sizes[-1], batch).astype(np.int32)
    args = (*(a for wb in params for a in wb), x, labels)
    # Both libraries hand XLA bf16 x bf16 -> f32 dots; the master weights stay float32.
    text = xform.jit(_make_bf16_step(xnp, xform)).lower(*args).as_text()
    if "xbf16>) -> tensor<256x1024xf32>" not in text:
        raise RuntimeError("(g2): the forward dots are not bf16 x bf16 -> f32")
    return _timed(_make_bf16_step, args, scale, 10, 3, _allclose(1e-3))


def _make_checkpointed_step(lib, mod, policy):
    """value_and_grad of a residual MLP whose identical layers run under ``lax.scan``, each
    layer under ``checkpoint(policy=...)`` (``policy=None``: no checkpoint)."""

    def layer(h, w):
        z = h @ w
        return h + lib.tanh(z) * lib.sin(z), None

    body = (
        layer
        if policy is None
        else mod.checkpoint(layer, policy=getattr(mod.checkpoint_policies, policy))
    )

    def loss(ws, x):
        h, _ = mod.lax.scan(body, x, ws)
        return lib.mean(h**2)

    return mod.value_and_grad(loss)


def bench_checkpoint_memory(scale, policy, depth=16, batch=256, width=512):
    """(g3) Temporary memory (``compile().memory_analysis().temp_size_in_bytes``) of a
    checkpointed vs plain step, value_and_grad of a 16-layer residual MLP (width 512, batch
    256) under ``lax.scan``, xform against JAX for the same policy; reports bytes, not seconds
    (``unit`` below). The values and gradients are checked equal first."""
    del scale  # a compile-time measurement: nothing to repeat
    rng = np.random.default_rng(0)
    ws = (rng.standard_normal((depth, width, width)) / np.sqrt(width)).astype(np.float32)
    x = rng.standard_normal((batch, width)).astype(np.float32)
    temps, outs = [], []
    for lib, mod in LIBS:
        compiled = mod.jit(_make_checkpointed_step(lib, mod, policy)).lower(ws, x).compile()
        temps.append(compiled.memory_analysis().temp_size_in_bytes)
        outs.append([np.asarray(o) for o in compiled(ws, x)])
    _allclose(1e-4)(*outs)
    return tuple(temps)


bench_checkpoint_memory.unit = "bytes"


BENCHMARKS = [
    (
        "(g1) accumulated-gradient step (4 micro-batches of 64 vs one of 256), MLP 784-512-10",
        bench_accumulated_step,
        (),
        1.0,
    ),
    (
        "(g2) bf16 mixed-precision MLP train step (784-1024-1024-10, batch 256, f32 master "
        "weights)",
        bench_bf16_step,
        (),
        1.0,
    ),
    *[
        (
            "(g3) checkpointed vs plain MLP step, temp bytes (memory_analysis), "
            + (p or "no checkpoint"),
            bench_checkpoint_memory,
            (p,),
            1.0,
        )
        for p in (None, "everything_saveable", "dots_saveable", "nothing_saveable")
    ],
]
