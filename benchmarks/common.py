"""What every benchmark shares: interleaved timing of xform against JAX."""

import contextlib
import gc
import itertools
import math
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


# The paired ratios of every compare() since the last take_interval(): run.py turns them
# into the interval it prints next to a row's ratio.
_paired_ratios = []


def compare(xf_fn, jax_fn, *, samples, inner=1, warmup=1):
    """Median seconds per call of the two functions, samples interleaved."""
    for _ in range(warmup):
        xf_fn()
        jax_fn()
    xf_times, jax_times = [], []
    for _ in range(samples):
        xf_times.append(_sample(xf_fn, inner))
        jax_times.append(_sample(jax_fn, inner))
    _paired_ratios.append([x / j for x, j in zip(xf_times, jax_times, strict=True)])
    return statistics.median(xf_times), statistics.median(jax_times)


def median_interval(values, z=1.96):
    """A distribution-free 95 % confidence interval of the median of ``values``: the order
    statistics at ranks n/2 ∓ z·√n/2 (the binomial approximation); None below 6 values."""
    n = len(values)
    if n < 6:
        return None
    ordered = sorted(values)
    half = z * math.sqrt(n) / 2
    return ordered[max(0, math.floor(n / 2 - half))], ordered[min(n - 1, math.ceil(n / 2 + half))]


def take_interval():
    """The 95 % interval of the median paired ratio (an xform sample over the JAX sample
    taken right after it) of the one compare() run since the last call, or None when a row
    ran none or several (its ratio then comes from more than one pairing)."""
    runs = _paired_ratios[:]
    _paired_ratios.clear()
    return median_interval(runs[0]) if len(runs) == 1 else None


def on_device(lib, x):
    """``x`` as the library's own array, already transferred to the device."""
    put = xform.device_put if lib is xnp else jax.device_put
    return put(x).block_until_ready()


def mlp_params(rng, sizes=(784, 512, 512, 10)):
    """(weight, bias) per layer of an MLP of layer ``sizes``, as NumPy float32 arrays."""
    return [
        (
            rng.standard_normal((m, n), np.float32) / np.sqrt(m).astype(np.float32),
            np.zeros(n, np.float32),
        )
        for m, n in itertools.pairwise(sizes)
    ]


def mlp(lib):
    """A fresh MLP forward function (tanh hidden layers, plain dot) written with ``lib``."""

    def forward(params, x):
        *hidden, (w_out, b_out) = params
        for w, b in hidden:
            x = lib.tanh(lib.dot(x, w) + b)
        return lib.dot(x, w_out) + b_out

    return forward


@contextlib.contextmanager
def cold_xform_compiles():
    """xform's persistent compilation cache off (as JAX's is by default), then restored."""
    was_on = xform.config.read("jax_enable_compilation_cache")
    xform.config.update("jax_enable_compilation_cache", False)
    try:
        yield
    finally:
        xform.config.update("jax_enable_compilation_cache", was_on)
