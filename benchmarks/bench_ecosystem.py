# ruff: noqa: PLC0415  (each workload imports jax and the libraries when it runs: the same code
# then binds real JAX in one process and xform in the other)
"""The ecosystem rows of ``run.py``: JAX's libraries (flax, optax, equinox) on xform's compat
mode against the same code on JAX.

Compat mode swaps ``jax`` process-wide, so each engine runs in a process of its own:
``python -m benchmarks.bench_ecosystem --child WORKLOAD --engine xform|jax``, where the xform
engine calls ``xform.compat.install()`` before anything imports the libraries (as ``python -m
xform.run`` does). A child prints the loss of its first step, then times training steps when
the parent asks, so that the two engines' samples interleave as in ``common.compare``.

(e1), (e2): a steady-state training step under jit (the step's loss made ready each time).
(e3): time to the first step's loss, from starting a fresh process: interpreter, imports,
model init, trace, lower, compile, run. xform's persistent compilation cache (on by default)
starts cold in a new directory for every process; JAX's is off (its default).
"""

import argparse
import gc
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BATCH, SIZES = 128, (784, 512, 512, 10)  # the MLP of run.py's rows (d) and (e)

# --------------------------------------------------------------------------- the workloads
# Each returns (step, carry, data): ``step(carry, *data)`` gives ``(carry, loss)``.


def _data():
    import jax.numpy as jnp
    import numpy as np

    rng = np.random.default_rng(0)
    x = rng.standard_normal((BATCH, SIZES[0]), np.float32)
    labels = np.eye(SIZES[-1], dtype=np.float32)[rng.integers(0, SIZES[-1], BATCH)]
    return jnp.asarray(x), jnp.asarray(labels)


def _linen_workload():
    """A flax.linen MLP in a flax TrainState with optax's Adam."""
    import jax
    import optax
    from flax import linen as nn
    from flax.training import train_state

    class MLP(nn.Module):
        @nn.compact
        def __call__(self, x):
            for width in SIZES[1:-1]:
                x = nn.relu(nn.Dense(width)(x))
            return nn.Dense(SIZES[-1])(x)

    x, labels = _data()
    model = MLP()
    state = train_state.TrainState.create(
        apply_fn=model.apply, params=model.init(jax.random.key(0), x)["params"], tx=optax.adam(1e-3)
    )

    @jax.jit
    def step(state, x, labels):
        def loss_fn(params):
            logits = state.apply_fn({"params": params}, x)
            return optax.softmax_cross_entropy(logits, labels).mean()

        loss, grads = jax.value_and_grad(loss_fn)(state.params)
        return state.apply_gradients(grads=grads), loss

    return step, state, (x, labels)


def _equinox_workload():
    """An equinox MLP (vmapped over the batch) with optax's Adam, under eqx.filter_jit."""
    import equinox as eqx
    import jax
    import optax

    x, labels = _data()
    model = eqx.nn.MLP(
        SIZES[0], SIZES[-1], SIZES[1], len(SIZES) - 2, activation=jax.nn.relu, key=jax.random.key(0)
    )
    opt = optax.adam(1e-3)
    opt_state = opt.init(eqx.filter(model, eqx.is_array))

    @eqx.filter_jit
    def step(carry, x, labels):
        model, opt_state = carry

        def loss_fn(model):
            return optax.softmax_cross_entropy(jax.vmap(model)(x), labels).mean()

        loss, grads = eqx.filter_value_and_grad(loss_fn)(model)
        updates, opt_state = opt.update(grads, opt_state, eqx.filter(model, eqx.is_array))
        return (eqx.apply_updates(model, updates), opt_state), loss

    return step, (model, opt_state), (x, labels)


WORKLOADS = {"linen": _linen_workload, "equinox": _equinox_workload}


def _child(workload, engine, cache_dir):
    """One engine's process: first step, then timed samples on request (steps per line)."""
    if engine == "xform":
        import xform
        from xform import compat

        xform.config.update("jax_compilation_cache_dir", cache_dir)  # cold: a new directory
        compat.install()
    step, carry, data = WORKLOADS[workload]()
    carry, loss = step(carry, *data)
    print("first", float(loss), flush=True)
    for line in sys.stdin:
        steps = int(line)
        if steps == 0:
            return
        gc.collect()
        gc.disable()
        start = time.perf_counter()
        for _ in range(steps):
            carry, loss = step(carry, *data)
            loss.block_until_ready()
        seconds = (time.perf_counter() - start) / steps
        gc.enable()
        print(seconds, flush=True)


# --------------------------------------------------------------------------- the parent side


class _Process:
    """A child process; ``first_seconds`` is the time from starting it to its first loss."""

    def __init__(self, workload, engine, cache_dir):
        self._stderr = tempfile.TemporaryFile(mode="w+")
        start = time.perf_counter()
        self._proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "benchmarks.bench_ecosystem",
                "--child",
                workload,
                "--engine",
                engine,
                "--cache",
                cache_dir,
            ],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            env={**os.environ, "PYTHONWARNINGS": "ignore"},
        )
        words = self._read().split()
        self.first_seconds = time.perf_counter() - start
        self.first_loss = float(words[1])

    def _read(self):
        line = self._proc.stdout.readline()
        if not line:
            self._proc.wait()
            self._stderr.seek(0)
            raise RuntimeError(f"benchmark child failed:\n{self._stderr.read()[-3000:]}")
        return line

    def sample(self, steps):
        self._proc.stdin.write(f"{steps}\n")
        self._proc.stdin.flush()
        return float(self._read())

    def close(self):
        if self._proc.poll() is None:
            try:
                self._proc.stdin.write("0\n")
                self._proc.stdin.close()
                self._proc.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                self._proc.kill()
                self._proc.wait()
        self._stderr.close()


def _check_losses(xf, jx, workload):
    if abs(xf.first_loss - jx.first_loss) > 1e-4 * abs(jx.first_loss):
        raise RuntimeError(
            f"{workload}: xform's first loss {xf.first_loss} differs from JAX's {jx.first_loss}"
        )


def bench_step(scale, workload):
    """(e1), (e2) A steady-state training step, the two engines' samples interleaved."""
    with tempfile.TemporaryDirectory() as cache:
        procs = []
        try:
            procs.append(_Process(workload, "xform", cache))
            procs.append(_Process(workload, "jax", cache))
            xf, jx = procs
            _check_losses(xf, jx, workload)
            xf.sample(3)  # warm-up
            jx.sample(3)
            xf_times, jax_times = [], []
            for _ in range(10 * scale):
                xf_times.append(xf.sample(5))
                jax_times.append(jx.sample(5))
        finally:
            for proc in procs:
                proc.close()
    return statistics.median(xf_times), statistics.median(jax_times)


def bench_first_step(scale, workload="linen"):
    """(e3) Time to the first step's loss from a fresh process, engines alternating."""
    times = {"xform": [], "jax": []}
    for round_ in range(2 + scale):
        order = ("xform", "jax") if round_ % 2 == 0 else ("jax", "xform")
        procs = {}
        try:
            for engine in order:
                with tempfile.TemporaryDirectory() as cache:
                    procs[engine] = _Process(workload, engine, cache)
                    procs[engine].close()  # before the other starts: no competition for cores
                times[engine].append(procs[engine].first_seconds)
        finally:
            for proc in procs.values():
                proc.close()
        _check_losses(procs["xform"], procs["jax"], workload)
    return statistics.median(times["xform"]), statistics.median(times["jax"])


BENCHMARKS = [
    (
        "(e1) flax.linen MLP 128x784-512-512-10 + optax adam, jit train step, compat mode",
        bench_step,
        ("linen",),
        1.0,
    ),
    (
        "(e2) the same with equinox (eqx.filter_jit, filter_value_and_grad)",
        bench_step,
        ("equinox",),
        1.0,
    ),
    (
        "(e3) time to first step of (e1) from a fresh process (imports, init, compile)",
        bench_first_step,
        (),
        1.0,
    ),
]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", choices=sorted(WORKLOADS), required=True)
    parser.add_argument("--engine", choices=("xform", "jax"), required=True)
    parser.add_argument("--cache", required=True)
    args = parser.parse_args()
    _child(args.child, args.engine, args.cache)
