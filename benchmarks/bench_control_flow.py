"""The control-flow rows of ``run.py``: a ``lax.scan`` RNN trained under jit, steady state and
first call."""

import jax
import jax.numpy as jnp
import numpy as np

import xform
import xform.lax
import xform.numpy as xnp
from benchmarks.common import cold_xform_compiles, compare, on_device

# (numpy, lax, library) per library; the benchmarked code is the same for both.
LIBS = ((xnp, xform.lax, xform), (jnp, jax.lax, jax))

HIDDEN, FEATURES, STEPS, BATCH = 256, 256, 100, 32


def _rnn_loss(lib, lax):
    """A fresh loss: a tanh RNN over ``xs`` (steps, batch, features) as a ``lax.scan``, then
    the sum of squares of every hidden state."""

    def loss(params, h0, xs):
        w_h, w_x, b = params

        def step(h, x):
            h = lib.tanh(lib.dot(h, w_h) + lib.dot(x, w_x) + b)
            return h, h

        _, hs = lax.scan(step, h0, xs)
        return lib.sum(hs**2)

    return loss


def _rnn_data():
    rng = np.random.default_rng(0)
    params = (
        rng.standard_normal((HIDDEN, HIDDEN)).astype(np.float32) / np.sqrt(HIDDEN),
        rng.standard_normal((FEATURES, HIDDEN)).astype(np.float32) / np.sqrt(FEATURES),
        np.zeros(HIDDEN, np.float32),
    )
    h0 = np.zeros((BATCH, HIDDEN), np.float32)
    xs = rng.standard_normal((STEPS, BATCH, FEATURES)).astype(np.float32)
    return params, h0, xs


def _on_device(lib, params, h0, xs):
    return tuple(on_device(lib, p) for p in params), on_device(lib, h0), on_device(lib, xs)


def _fresh_step(lib, lax, mod):
    return mod.jit(mod.value_and_grad(_rnn_loss(lib, lax)))


def _check_same(outs):
    for a, b in zip(*outs, strict=True):
        np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-3 * max(1.0, float(np.abs(b).max())))


def _leaves(out):
    return [np.asarray(x) for x in jax.tree_util.tree_leaves(out)]


def bench_scan_rnn(scale):
    """(k) jit(value_and_grad) of a lax.scan tanh RNN (hidden 256, 100 steps, batch 32) with
    respect to (W_h, W_x, b), steady state."""
    data = _rnn_data()
    fns, outs = [], []
    for lib, lax, mod in LIBS:
        params, h0, xs = _on_device(lib, *data)
        step = _fresh_step(lib, lax, mod)
        outs.append(_leaves(step(params, h0, xs)))
        fns.append(
            lambda step=step, params=params, h0=h0, xs=xs: step(params, h0, xs)[1][
                0
            ].block_until_ready()
        )
    _check_same(outs)
    return compare(*fns, samples=10 * scale, inner=3, warmup=2)


def bench_scan_rnn_compile(scale):
    """(l) The first call of a fresh jit(value_and_grad) of the scan RNN: trace + lower +
    compile + run."""
    data = _rnn_data()
    fns, outs = [], []
    for lib, lax, mod in LIBS:
        params, h0, xs = _on_device(lib, *data)
        outs.append(_leaves(_fresh_step(lib, lax, mod)(params, h0, xs)))
        fns.append(
            lambda lib=lib, lax=lax, mod=mod, params=params, h0=h0, xs=xs: _fresh_step(
                lib, lax, mod
            )(params, h0, xs)[1][0].block_until_ready()
        )
    _check_same(outs)
    with cold_xform_compiles():  # xform's persistent compilation cache off, as JAX's is
        return compare(*fns, samples=5 * scale, warmup=1)


BENCHMARKS = [
    (
        "(k) jit(value_and_grad) lax.scan tanh RNN, hidden 256, 100 steps, batch 32",
        bench_scan_rnn,
        (),
        1.0,
    ),
    ("(l) first call (trace + compile) of the same scan RNN", bench_scan_rnn_compile, (), 1.0),
]
