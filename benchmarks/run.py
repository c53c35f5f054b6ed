"""xform and JAX side by side, in one run; prints a markdown table of medians and ratios.

Run from the repository root: ``python benchmarks/run.py`` (``--quick`` for fewer repetitions).

Every benchmark runs the same code for both libraries (``lib`` is ``jax.numpy`` or
``xform.numpy``), interleaving their samples so that drift on a noisy machine hits both
alike; each sample runs with the garbage collector off, as ``timeit`` does. The targets are
ratios xform / JAX; nothing here is asserted by the test suite. A row timed by one
interleaved comparison shows, after its ratio, the 95 % interval of the median of its paired
ratios (each xform sample over the JAX sample right after it): ``1.04× (0.98–1.10)``.
"""

import argparse
import os
import platform
import sys
import time

# Runnable from a checkout without an install: the repository root goes first on the path.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import jax  # noqa: E402

# The pmap rows need several devices: on a CPU backend, 8 host devices. This must happen
# before any backend starts; the other rows run on the first device as before (GPU/TPU
# backends ignore it).
jax.config.update("jax_num_cpu_devices", 8)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import xform  # noqa: E402
import xform.numpy as xnp  # noqa: E402
from benchmarks import (  # noqa: E402
    bench_api,
    bench_callbacks,
    bench_control_flow,
    bench_ecosystem,
    bench_linalg,
    bench_nn,
    bench_numpy,
    bench_pmap,
    bench_random,
    bench_sharding,
    bench_stages,
    bench_techniques,
    bench_vmap,
    common,
)
from benchmarks.common import compare, mlp, mlp_params, on_device  # noqa: E402

# --------------------------------------------------------------------------- the benchmarks


def bench_dispatch(scale):
    """(a) A cached jit call on tiny inputs: the cost of dispatch, not of compute."""
    x = np.linspace(-1.0, 1.0, 16, dtype=np.float32)
    fns = []
    for lib, jit in ((xnp, xform.jit), (jnp, jax.jit)):
        f = jit(lambda x, y: x * y + 1)
        a, b = on_device(lib, x), on_device(lib, x + 1)
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
    xf_t, jax_t = compare(
        lambda: xform.make_jaxpr(_chain(xnp, n_eqns))(x),
        lambda: jax.make_jaxpr(_chain(jnp, n_eqns))(x),
        samples=5 * scale,
    )
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


def bench_first_call(scale):
    """(d) The first call of a fresh jit: trace + lower + compile + run of an MLP forward."""
    rng = np.random.default_rng(0)
    params = mlp_params(rng)
    x = rng.standard_normal((128, 784), np.float32)
    expected = None
    fns = []
    for lib, jit in ((xnp, xform.jit), (jnp, jax.jit)):
        p = [(on_device(lib, w), on_device(lib, b)) for w, b in params]
        xd = on_device(lib, x)
        out = np.asarray(jit(mlp(lib))(p, xd))
        if expected is None:
            expected = out
        np.testing.assert_allclose(out, expected, rtol=2e-4, atol=2e-4)
        fns.append(lambda lib=lib, jit=jit, p=p, xd=xd: jit(mlp(lib))(p, xd).block_until_ready())
    # Cold for both: xform's persistent compilation cache off, as JAX's is by default.
    with common.cold_xform_compiles():
        return compare(*fns, samples=5 * scale, warmup=1)


def _train_step(lib, value_and_grad):
    """A fresh SGD step of an MLP with softmax cross-entropy, for one library."""

    def loss(params, x, labels):
        logits = mlp(lib)(params, x)
        shifted = logits - lib.max(logits, axis=1, keepdims=True)
        log_probs = shifted - lib.log(lib.sum(lib.exp(shifted), axis=1, keepdims=True))
        return -lib.mean(lib.sum(log_probs * labels, axis=1))

    def step(params, x, labels):
        value, grads = value_and_grad(loss)(params, x, labels)
        new = [
            (w - 0.01 * gw, b - 0.01 * gb) for (w, b), (gw, gb) in zip(params, grads, strict=True)
        ]
        return new, value

    return step


def bench_train_step(scale):
    """(e) A steady-state jit(value_and_grad) SGD step of the MLP (batch 128)."""
    rng = np.random.default_rng(0)
    params = mlp_params(rng)
    x = rng.standard_normal((128, 784), np.float32)
    labels = np.eye(10, dtype=np.float32)[rng.integers(0, 10, 128)]
    fns, losses = [], []
    for lib, jit, vg in (
        (xnp, xform.jit, xform.value_and_grad),
        (jnp, jax.jit, jax.value_and_grad),
    ):
        p = [(on_device(lib, w), on_device(lib, b)) for w, b in params]
        xd, ld = on_device(lib, x), on_device(lib, labels)
        step = jit(_train_step(lib, vg))
        losses.append(float(step(p, xd, ld)[1]))
        fns.append(lambda step=step, p=p, xd=xd, ld=ld: step(p, xd, ld)[1].block_until_ready())
    np.testing.assert_allclose(losses[0], losses[1], rtol=1e-4)
    return compare(*fns, samples=10 * scale, inner=5, warmup=2)


def _ten_ops(lib):
    def f(x):
        y = lib.sin(x) * 2.0 + lib.cos(x)
        y = lib.tanh(y) * x - lib.exp(-x * x)
        return lib.sum(y * y)

    return f


def bench_eager_grad(scale):
    """(f) Eager (no jit) grad of a 10-op scalar function on float32[16]."""
    x = np.linspace(-1, 1, 16, dtype=np.float32)
    xf_x, jax_x = xnp.asarray(x), jnp.asarray(x)
    xf_g, jax_g = xform.grad(_ten_ops(xnp)), jax.grad(_ten_ops(jnp))
    np.testing.assert_allclose(np.asarray(xf_g(xf_x)), np.asarray(jax_g(jax_x)), rtol=1e-5)
    return compare(lambda: xf_g(xf_x), lambda: jax_g(jax_x), samples=10 * scale, inner=5, warmup=3)


def bench_eager_grad_autograd(scale):
    """(f') The same eager grad against HIPS autograd (the reference for eager speed)."""
    import autograd  # noqa: PLC0415  (optional: only this row needs it)
    import autograd.numpy as anp  # noqa: PLC0415

    x = np.linspace(-1, 1, 16, dtype=np.float32)
    xf_x = xnp.asarray(x)
    xf_g, ag_g = xform.grad(_ten_ops(xnp)), autograd.grad(_ten_ops(anp))
    np.testing.assert_allclose(np.asarray(xf_g(xf_x)), ag_g(x), rtol=1e-4)
    return compare(lambda: xf_g(xf_x), lambda: ag_g(x), samples=10 * scale, inner=20, warmup=3)


def _mlp_loss(lib):
    def loss(params, x, target):
        h = x
        for w, b in params[:-1]:
            h = lib.tanh(h @ w + b)
        w, b = params[-1]
        return lib.mean((h @ w + b - target) ** 2)

    return loss


def bench_eager_grad_mlp_autograd(scale, sizes=(16, 32, 32, 1), batch=8):
    """(f'') Eager grad of a tanh MLP's squared loss w.r.t. its params, against autograd."""
    import autograd  # noqa: PLC0415  (optional: only this row needs it)
    import autograd.numpy as anp  # noqa: PLC0415

    rng = np.random.default_rng(0)
    params = [
        (
            rng.normal(0, m**-0.5, (m, n)).astype(np.float32),
            rng.normal(0, 0.1, n).astype(np.float32),
        )
        for m, n in zip(sizes[:-1], sizes[1:], strict=True)
    ]
    x = rng.normal(size=(batch, sizes[0])).astype(np.float32)
    target = rng.normal(size=(batch, sizes[-1])).astype(np.float32)
    xf_p = [(xnp.asarray(w), xnp.asarray(b)) for w, b in params]
    xf_x, xf_t = xnp.asarray(x), xnp.asarray(target)
    xf_g, ag_g = xform.grad(_mlp_loss(xnp)), autograd.grad(_mlp_loss(anp))
    for got, want in zip(
        jax.tree.leaves(xf_g(xf_p, xf_x, xf_t)),
        jax.tree.leaves(ag_g(params, x, target)),
        strict=True,
    ):
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-4, atol=1e-6)
    return compare(
        lambda: xf_g(xf_p, xf_x, xf_t),
        lambda: ag_g(params, x, target),
        samples=10 * scale,
        inner=20,
        warmup=3,
    )


def bench_grad_trace(scale, n_eqns=2000):
    """(g) make_jaxpr(grad(f)) of a fresh ~2000-equation f, per equation of f."""
    x = np.ones(16, np.float32)

    def chain(lib):
        inner = _chain(lib, n_eqns)
        return lambda x: lib.sum(inner(x))

    xf_t, jax_t = compare(
        lambda: xform.make_jaxpr(xform.grad(chain(xnp)))(x),
        lambda: jax.make_jaxpr(jax.grad(chain(jnp)))(x),
        samples=3 * scale,
    )
    return xf_t / n_eqns, jax_t / n_eqns


BENCHMARKS = [
    ("(a) cached jit call, `x * y + 1` on f32[16]", bench_dispatch, (), 1.0),
    *bench_api.BENCHMARKS,
    ("(b) make_jaxpr, 2000-eqn sin/cos/mul/add chain, per eqn", bench_make_jaxpr, (), 0.25),
    ("(c) eager `sin`, f32[16]", bench_eager, ("sin",), 0.25),
    ("(c) eager `add`, f32[16]", bench_eager, ("add",), 0.25),
    *bench_api.EAGER_REFERENCE_BENCHMARKS,
    ("(d) first jit call, MLP 128x784-512-512-10, cold compiles", bench_first_call, (), 0.8),
    *bench_stages.BENCHMARKS,
    ("(e) jit(value_and_grad) SGD step, MLP 128x784-512-512-10", bench_train_step, (), 1.0),
    ("(f) eager grad, 10-op scalar function on f32[16]", bench_eager_grad, (), 0.1),
    (
        "(f') the same, against HIPS autograd (ratio xform/autograd)",
        bench_eager_grad_autograd,
        (),
        1.0,
    ),
    (
        "(f'') eager grad, MLP 8x16-32-32-1 tanh squared loss, against HIPS autograd (ratio "
        "xform/autograd)",
        bench_eager_grad_mlp_autograd,
        (),
        1.0,
    ),
    ("(g) make_jaxpr(grad(f)), 2000-eqn f, per eqn of f", bench_grad_trace, (), 0.25),
    *bench_vmap.BENCHMARKS,
    *bench_control_flow.BENCHMARKS,
    *bench_random.BENCHMARKS,
    *bench_pmap.BENCHMARKS,
    *bench_linalg.BENCHMARKS,
    *bench_numpy.BENCHMARKS,
    *bench_nn.BENCHMARKS,
    *bench_callbacks.BENCHMARKS,
    *bench_techniques.BENCHMARKS,
    *bench_sharding.BENCHMARKS,
    *bench_ecosystem.BENCHMARKS,
]


def _fmt(seconds, unit="s"):
    if unit == "bytes":  # a memory row (g3): bytes from XLA's memory analysis
        return f"{int(seconds):,} B"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.2f} µs"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument(
        "--only", default="", help="rows to run, by label: --only h,i,j or --only p1,p2"
    )
    args = parser.parse_args()
    only = {f"({r.strip()})" for r in args.only.split(",") if r.strip()}
    scale = 1 if args.quick else 3

    device = xform.devices()[0]
    print(
        f"xform {xform.__version__}, jax {jax.__version__}, Python "
        f"{platform.python_version()}, {device.platform} ({os.cpu_count()} cores, "
        f"{xform.device_count()} devices), "
        f"{time.strftime('%Y-%m-%d %H:%M')}\n"
    )
    print("| benchmark | xform | JAX | ratio xform/JAX | target | met |")
    print("|---|---:|---:|---:|---:|:-:|")
    for name, fn, extra, target in BENCHMARKS:
        if only and name.split()[0] not in only:
            continue
        common.take_interval()  # forget what an earlier row left
        try:
            xf_t, jax_t = fn(scale, *extra)
        except Exception as e:  # a missing feature shows as a row, not a crash
            print(
                f"| {name} | n/a | n/a | n/a | ≤ {target}× | ({type(e).__name__}: "
                f"{str(e).splitlines()[0][:80]}) |",
                flush=True,
            )
            continue
        ratio = xf_t / jax_t
        met = "—" if target is None else "yes" if ratio <= target else "no"
        unit = getattr(fn, "unit", "s")
        goal = "—" if target is None else f"≤ {target}×"  # a row other rows are read against
        interval = common.take_interval()
        shown = (
            f"{ratio:.2f}×"
            if interval is None
            else f"{ratio:.2f}× ({interval[0]:.2f}–{interval[1]:.2f})"
        )
        print(
            f"| {name} | {_fmt(xf_t, unit)} | {_fmt(jax_t, unit)} | {shown} | {goal} | {met} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
