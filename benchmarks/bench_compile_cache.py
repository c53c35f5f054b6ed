"""Time to first result in a fresh process, with the persistent compilation cache cold and
warm, for xform and JAX (JAX's cache on, its thresholds at 0 so it caches these programs).

Run from the repository root: ``python benchmarks/bench_compile_cache.py [--repeats N]``.
Each sample is a new Python process that imports the library, builds the program, and times
its first call (trace, lower, compile or load, run) to a ready result; process start and
imports are outside the timing. Rows (c1) and (c2) of benchmarks/README.md.
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_PROGRAM = textwrap.dedent("""
    import sys, time
    lib_name, program, cache = sys.argv[1:4]
    import numpy as np
    if lib_name == "jax":
        import jax as lib, jax.numpy as np_
        lib.config.update("jax_compilation_cache_dir", cache)
        lib.config.update("jax_persistent_cache_min_compile_time_secs", 0)
        lib.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    else:
        import xform as lib, xform.numpy as np_
        from lowering import compile_cache
        compile_cache.set_directory(cache)

    def mlp_step(params, x, y):
        def loss(params):
            h = x
            for w, b in params[:-1]:
                h = np_.tanh(h @ w + b)
            w, b = params[-1]
            return np_.mean((h @ w + b - y) ** 2)
        grads = lib.grad(loss)(params)
        return [(w - 0.01 * gw, b - 0.01 * gb) for (w, b), (gw, gb) in zip(params, grads)]

    def rnn_loss(w, xs):
        def cell(h, x):
            h = np_.tanh(h @ w + x)
            return h, np_.sum(h)
        _, ys = lib.lax.scan(cell, np_.zeros(xs.shape[1:]), xs)
        return np_.sum(ys)

    rng = np.random.default_rng(0)
    if program == "mlp":
        sizes = [784, 512, 512, 256, 10]
        args = ([(rng.standard_normal((m, n)).astype(np.float32) * 0.05,
                  np.zeros(n, np.float32)) for m, n in zip(sizes[:-1], sizes[1:])],
                rng.standard_normal((64, 784)).astype(np.float32),
                rng.standard_normal((64, 10)).astype(np.float32))
        fn = lib.jit(mlp_step)
    else:
        args = (rng.standard_normal((128, 128)).astype(np.float32) * 0.05,
                rng.standard_normal((200, 16, 128)).astype(np.float32))
        fn = lib.jit(lib.value_and_grad(rnn_loss))
    start = time.perf_counter()
    lib.block_until_ready(fn(*args))
    print(time.perf_counter() - start)
""")


def _first_call(lib, program, cache):
    out = subprocess.run(
        [sys.executable, "-c", _PROGRAM, lib, program, cache],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return float(out.stdout.strip().splitlines()[-1])


def measure(program, repeats):
    """Median seconds of the first call: {(lib, "cold"|"warm"): seconds}."""
    times = {}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(repeats):
            for lib in ("xform", "jax"):  # interleaved, so drift hits both alike
                cold = os.path.join(tmp, f"{lib}-cold-{i}")
                times.setdefault((lib, "cold"), []).append(_first_call(lib, program, cold))
                # the cold run filled ``cold``: the next process finds its program there
                times.setdefault((lib, "warm"), []).append(_first_call(lib, program, cold))
    return {k: statistics.median(v) for k, v in times.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print("| program | xform cold | xform warm | warm/cold | JAX warm | xform warm / JAX warm |")
    print("|---|---|---|---|---|---|")
    for program, label in (
        ("mlp", "(c1) MLP train step 784-512-512-256-10, batch 64"),
        ("rnn", "(c2) value_and_grad of a 200-step scan RNN, 128 units"),
    ):
        t = measure(program, args.repeats)
        print(
            f"| {label} | {t['xform', 'cold'] * 1e3:.0f} ms | {t['xform', 'warm'] * 1e3:.0f} ms"
            f" | {t['xform', 'warm'] / t['xform', 'cold']:.2f}× | "
            f"{t['jax', 'warm'] * 1e3:.0f} ms | {t['xform', 'warm'] / t['jax', 'warm']:.2f}× |"
        )


if __name__ == "__main__":
    main()
