"""What every benchmark shares: interleaved timing of xform against JAX."""

import gc
import itertools
import statistics
import time

import jax
import numpy as np

import xform
import xform.numpy as xnp


def _sample(fn, inner):
    """Seconds per call of ``fn()``, over ``inner`` back-to-back calls."""
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        for _ in range(inner):
            fn()
        return (time.perf_counter() - start) / inner
    finally:
        gc.enable()


def compare(xf_fn, jax_fn, *, samples, inner=1, warmup=1):
    """Median seconds per call of the two functions, samples interleaved."""
    for _ in range(warmup):
        xf_fn()
        jax_fn()
    xf_times, jax_times = [], []
    for _ in range(samples):
        xf_times.append(_sample(xf_fn, inner))
        jax_times.append(_sample(jax_fn, inner))
    return statistics.median(xf_times), statistics.median(jax_times)


def on_device(lib, x):
    """``x`` as the library's own array, already transferred to the device."""
    put = xform.device_put if lib is xnp else jax.device_put
    return put(x).block_until_ready()


def mlp_params(rng, sizes=(784, 512, 512, 10)):
    """(weight, bias) per layer of an MLP of layer ``sizes``, as NumPy float32 arrays."""
    return [(rng.standard_normal((m, n), np.float32) / np.sqrt(m).astype(np.float32),
             np.zeros(n, np.float32)) for m, n in itertools.pairwise(sizes)]


def mlp(lib):
    """A fresh MLP forward function (tanh hidden layers, plain dot) written with ``lib``."""

    def forward(params, x):
        *hidden, (w_out, b_out) = params
        for w, b in hidden:
            x = lib.tanh(lib.dot(x, w) + b)
        return lib.dot(x, w_out) + b_out

    return forward
