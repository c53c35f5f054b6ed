"""xform and JAX side by side, in one run; prints a markdown table of medians and ratios.

Run from the repository root: ``python benchmarks/run.py`` (``--quick`` for fewer repetitions).

Every benchmark runs the same code for both libraries (``lib`` is ``jax.numpy`` or
``xform.numpy``), interleaving their samples so that drift on a noisy machine hits both
alike; each sample runs with the garbage collector off, as ``timeit`` does. The targets are
ratios xform / JAX; nothing here is asserted by the test suite.
"""

import argparse
import gc
import itertools
import os
import platform
import statistics
import sys
import time

# Runnable from a checkout without an install: the repository root goes first on the path.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import xform  # noqa: E402
import xform.numpy as xnp  # noqa: E402


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


def _on_device(lib, x):
    """``x`` as the library's own array, already transferred to the device."""
    put = xform.device_put if lib is xnp else jax.device_put
    return put(x).block_until_ready()


# --------------------------------------------------------------------------- the benchmarks


def bench_dispatch(scale):
    """(a) A cached jit call on tiny inputs: the cost of dispatch, not of compute."""
    x = np.linspace(-1.0, 1.0, 16, dtype=np.float32)
    fns = []
    for lib, jit in ((xnp, xform.jit), (jnp, jax.jit)):
        f = jit(lambda x, y: x * y + 1)
        a, b = _on_device(lib, x), _on_device(lib, x + 1)
        np.testing.assert_allclose(np.asarray(f(a, b)), x * (x + 1) + 1, rtol=1e-6)
        fns.append(lambda f=f, a=a, b=b: f(a, b).block_until_ready())
    return compare(*fns, samples=30 * scale, inner=200, warmup=200)


def _chain(lib, n_eqns):
    """A fresh function of ``n_eqns`` equations: rounds of sin, cos, mul, add."""

    def chain(x):
        for _ in range(n_eqns // 4):
            s = lib.sin(x)
            c = lib.cos(x)
            x = s * c + c
        return x

    return chain


def _count_eqns(closed):
    return len(closed.eqns)


def bench_make_jaxpr(scale, n_eqns=2000):
    """(b) make_jaxpr of a ~2000-equation function, per equation."""
    x = np.ones(16, np.float32)
    xf_n = _count_eqns(xform.make_jaxpr(_chain(xnp, n_eqns))(x))
    jax_n = _count_eqns(jax.make_jaxpr(_chain(jnp, n_eqns))(x))
    if xf_n != jax_n:
        raise RuntimeError(f"make_jaxpr benchmark: xform traced {xf_n} equations, JAX {jax_n}")
    # A fresh function object per trace, so no tracing cache keyed on the function can help.
    xf_t, jax_t = compare(lambda: xform.make_jaxpr(_chain(xnp, n_eqns))(x),
                          lambda: jax.make_jaxpr(_chain(jnp, n_eqns))(x),
                          samples=5 * scale)
    return xf_t / xf_n, jax_t / jax_n


def bench_eager(scale, op):
    """(c) One eager op on float32[16] arrays made by each library's constructor."""
    fns = []
    for lib in (xnp, jnp):
        x = lib.ones(16, dtype=np.float32)
        y = lib.ones(16, dtype=np.float32)
        if op == "sin":
            fns.append(lambda lib=lib, x=x: lib.sin(x).block_until_ready())
        else:
            fns.append(lambda lib=lib, x=x, y=y: lib.add(x, y).block_until_ready())
    return compare(*fns, samples=30 * scale, inner=200, warmup=200)


def _mlp_params(rng, sizes=(784, 512, 512, 10)):
    return [(rng.standard_normal((m, n), np.float32) / np.sqrt(m).astype(np.float32),
             np.zeros(n, np.float32)) for m, n in itertools.pairwise(sizes)]


def _mlp(lib):
    """A fresh MLP forward function (tanh hidden layers, plain dot)."""

    def mlp(params, x):
        *hidden, (w_out, b_out) = params
        for w, b in hidden:
            x = lib.tanh(lib.dot(x, w) + b)
        return lib.dot(x, w_out) + b_out

    return mlp


def bench_first_call(scale):
    """(d) The first call of a fresh jit: trace + lower + compile + run of an MLP forward."""
    rng = np.random.default_rng(0)
    params = _mlp_params(rng)
    x = rng.standard_normal((128, 784), np.float32)
    expected = None
    fns = []
    for lib, jit in ((xnp, xform.jit), (jnp, jax.jit)):
        p = [(_on_device(lib, w), _on_device(lib, b)) for w, b in params]
        xd = _on_device(lib, x)
        out = np.asarray(jit(_mlp(lib))(p, xd))
        if expected is None:
            expected = out
        np.testing.assert_allclose(out, expected, rtol=2e-4, atol=2e-4)
        fns.append(lambda lib=lib, jit=jit, p=p, xd=xd:
                   jit(_mlp(lib))(p, xd).block_until_ready())
    return compare(*fns, samples=5 * scale, warmup=1)


BENCHMARKS = [
    ("(a) cached jit call, `x * y + 1` on f32[16]", bench_dispatch, (), 1.5),
    ("(b) make_jaxpr, 2000-eqn sin/cos/mul/add chain, per eqn", bench_make_jaxpr, (), 0.25),
    ("(c) eager `sin`, f32[16]", bench_eager, ("sin",), 0.5),
    ("(c) eager `add`, f32[16]", bench_eager, ("add",), 0.5),
    ("(d) first jit call, MLP 128x784-512-512-10", bench_first_call, (), 1.0),
]


def _fmt(seconds):
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.2f} µs"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = parser.parse_args()
    scale = 1 if args.quick else 3

    device = xform.devices()[0]
    print(f"xform {xform.__version__}, jax {jax.__version__}, Python "
          f"{platform.python_version()}, {device.platform} ({os.cpu_count()} cores), "
          f"{time.strftime('%Y-%m-%d %H:%M')}\n")
    print("| benchmark | xform | JAX | ratio xform/JAX | target | met |")
    print("|---|---:|---:|---:|---:|:-:|")
    for name, fn, extra, target in BENCHMARKS:
        try:
            xf_t, jax_t = fn(scale, *extra)
        except Exception as e:  # a missing feature shows as a row, not a crash
            print(f"| {name} | n/a | n/a | n/a | ≤ {target}× | ({type(e).__name__}: "
                  f"{str(e).splitlines()[0][:80]}) |", flush=True)
            continue
        ratio = xf_t / jax_t
        met = "yes" if ratio <= target else "no"
        print(f"| {name} | {_fmt(xf_t)} | {_fmt(jax_t)} | {ratio:.2f}× | ≤ {target}× | {met} |",
              flush=True)


if __name__ == "__main__":
    main()
