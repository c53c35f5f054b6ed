"""``python -m xform``: a short tour of the engine.

It traces a small function to a jaxpr, runs it eagerly and compiled, prints the StableHLO
module ``jit`` hands to XLA, and times the first (trace + lower + compile + run) and a cached
call of the compiled function; then gradients, vmap, scan, a small training loop and a
data-parallel ``pmap`` step over the host devices.
"""

import inspect
import pathlib
import platform
import statistics
import time

import numpy as np

import xform
import xform.numpy as jnp
import xform.scipy.linalg
from lowering import runtime

if __name__ == "__main__":
    # The pmap section wants several devices: on a CPU backend, 8 host devices. This must
    # come before anything starts a backend (no import above does); it changes nothing when
    # the default backend is a GPU or TPU, whose devices pmap then uses.
    runtime.use_host_devices(8)


def f(x):
    return jnp.tanh(jnp.sin(x) * 2.0 + jnp.cos(x))


def _section(title):
    print(f"\n== {title} ==")


def _fmt_seconds(s):
    return f"{s * 1e3:.2f} ms" if s >= 1e-3 else f"{s * 1e6:.1f} µs"


def main(cached_calls=200):
    device = xform.devices()[0]
    print(
        f"xform {xform.__version__} on {device.platform} ({device}), "
        f"Python {platform.python_version()}"
    )

    _section("The function")
    print(inspect.getsource(f).rstrip())

    x = jnp.linspace(-1.0, 1.0, 8)
    print(f"x = {x!r}")

    _section("Its jaxpr: xform.make_jaxpr(f)(x)")
    print(xform.make_jaxpr(f)(x))

    _section("Eager: f(x), one primitive at a time")
    eager = f(x)
    print(repr(eager))

    _section("Compiled: xform.jit(f)(x)")
    f_jit = xform.jit(f)
    start = time.perf_counter()
    compiled = f_jit(x).block_until_ready()
    first = time.perf_counter() - start
    print(repr(compiled))
    print(
        "matches eager:",
        bool(np.allclose(np.asarray(compiled), np.asarray(eager), rtol=1e-6, atol=1e-6)),
    )

    _section("StableHLO: xform.jit(f).lower(x).as_text()")
    print(f_jit.lower(x).as_text().rstrip())

    _section("Timings (time.perf_counter, block_until_ready)")
    times = []
    for _ in range(cached_calls):
        start = time.perf_counter()
        f_jit(x).block_until_ready()
        times.append(time.perf_counter() - start)
    print(f"first jit call (trace + lower + compile + run): {_fmt_seconds(first)}")
    print(f"cached jit call (median of {cached_calls}): {_fmt_seconds(statistics.median(times))}")

    _section("Gradients: xform.grad(lambda x: jnp.sum(f(x)))(x)")
    loss = lambda v: jnp.sum(f(v))  # noqa: E731  (a one-line example)
    grad = xform.grad(loss)(x)
    print(repr(grad))
    _, tangent = xform.jvp(loss, (x,), (jnp.ones_like(x),))
    print(
        "matches forward mode (sum of the gradient = jvp along ones):",
        bool(np.allclose(float(jnp.sum(grad)), float(tangent), rtol=1e-5)),
    )
    _section("The gradient's program: xform.make_jaxpr(xform.grad(loss))(x)")
    print(xform.make_jaxpr(xform.grad(loss))(x))

    _per_example_gradients()
    _scan_rnn()
    _mlp_training()
    _gaussian_process()
    _data_parallel_step()
    _notebooks()


def _per_example_gradients():
    _section("Per-example gradients: xform.vmap(xform.grad(loss_one), in_axes=(None, 0, 0))")
    w = jnp.linspace(-0.5, 0.5, 3)
    xs = jnp.reshape(jnp.linspace(-1.0, 1.0, 12), (4, 3))
    ys = jnp.array([1.0, -1.0, 1.0, -1.0])

    def loss_one(w, x, y):  # logistic loss of one example
        return jnp.log(1.0 + jnp.exp(-y * jnp.dot(x, w)))

    per_example = xform.jit(xform.vmap(xform.grad(loss_one), in_axes=(None, 0, 0)))(w, xs, ys)
    print(repr(per_example))
    looped = np.stack([np.asarray(xform.grad(loss_one)(w, xs[i], ys[i])) for i in range(4)])
    print(
        "matches a Python loop of grad over the examples:",
        bool(np.allclose(np.asarray(per_example), looped, rtol=1e-5, atol=1e-6)),
    )


def _scan_rnn():
    _section("A loop on the device: xform.lax.scan, differentiated and compiled")

    def rnn_loss(w, xs):  # a tanh recurrence over 10 steps, one traced body
        def step(h, x):
            h = jnp.tanh(w * h + x)
            return h, h

        _, hs = xform.lax.scan(step, jnp.zeros(3), xs)
        return jnp.sum(hs**2)

    xs_seq = jnp.reshape(jnp.linspace(-1.0, 1.0, 30), (10, 3))
    value, dw = xform.jit(xform.value_and_grad(rnn_loss))(jnp.float32(0.5), xs_seq)
    print(f"loss = {float(value):.6f}, d loss / d w = {float(dw):.6f}")
    eps = 1e-3
    fd = (
        float(rnn_loss(jnp.float32(0.5 + eps), xs_seq))
        - float(rnn_loss(jnp.float32(0.5 - eps), xs_seq))
    ) / (2 * eps)
    print("matches central differences:", bool(np.isclose(float(dw), fd, rtol=1e-2)))
    lowered = xform.jit(xform.grad(rnn_loss)).lower(jnp.float32(0.5), xs_seq).as_text()
    print(
        "the compiled gradient is a stablehlo.while loop, not unrolled:",
        lowered.count("stablehlo.while") >= 1 and lowered.count("stablehlo.tanh") <= 2,
    )


def _mlp_training(steps=50):
    _section("An MLP initialised with xform.random and xform.nn.initializers, trained with SGD")
    key = xform.random.PRNGKey(0)
    k_data, k1, k2 = xform.random.split(key, 3)
    init = xform.nn.initializers.glorot_normal()
    params = [(init(k1, (2, 16)), jnp.zeros(16)), (init(k2, (16, 1)), jnp.zeros(1))]
    x = xform.random.normal(k_data, (64, 2))
    y = jnp.sin(x[:, :1]) * jnp.cos(x[:, 1:])

    def loss(params, x, y):
        (w1, b1), (w2, b2) = params
        h = xform.nn.gelu(x @ w1 + b1)
        return jnp.mean((h @ w2 + b2 - y) ** 2)

    @xform.jit
    def step(params, x, y):
        value, grads = xform.value_and_grad(loss)(params, x, y)
        new = [(w - 0.1 * gw, b - 0.1 * gb) for (w, b), (gw, gb) in zip(params, grads, strict=True)]
        return new, value

    first = None
    for _ in range(steps):
        params, value = step(params, x, y)
        first = float(value) if first is None else first
    print(f"loss after 1 step: {first:.5f}, after {steps} steps: {float(value):.5f}")
    print("the loss went down:", float(value) < first)


def _gaussian_process():
    _section("Gaussian-process regression: cholesky, solve_triangular, slogdet and gradients")

    def neg_log_marginal_likelihood(log_params, x, y):
        lengthscale, noise = jnp.exp(log_params[0]), jnp.exp(log_params[1])
        k = jnp.exp(-0.5 * ((x[:, None] - x[None, :]) / lengthscale) ** 2)
        k = k + (noise + 1e-6) * jnp.eye(x.shape[0])
        factor = jnp.linalg.cholesky(k)  # K = L L^T, on LAPACK's potrf
        alpha = xform.scipy.linalg.solve_triangular(factor, y, lower=True)  # L^{-1} y
        logdet = 2 * jnp.sum(jnp.log(jnp.diagonal(factor)))
        return 0.5 * jnp.sum(alpha**2) + 0.5 * logdet + 0.5 * x.shape[0] * jnp.log(2 * jnp.pi)

    print(inspect.getsource(neg_log_marginal_likelihood).rstrip())
    rng = np.random.default_rng(0)
    x = jnp.asarray(np.sort(rng.uniform(-3, 3, 40)), jnp.float32)
    y = jnp.sin(x) + 0.1 * jnp.asarray(rng.standard_normal(40), jnp.float32)
    log_params = jnp.array([0.0, -2.0])
    value_and_grad = xform.jit(xform.value_and_grad(neg_log_marginal_likelihood))
    value, grad = value_and_grad(log_params, x, y)
    print(
        f"-log p(y) = {float(value):.4f}, gradient w.r.t. (log lengthscale, log noise) = "
        f"{np.asarray(grad)}"
    )
    k = jnp.exp(-0.5 * (x[:, None] - x[None, :]) ** 2) + (jnp.exp(-2.0) + 1e-6) * jnp.eye(40)
    sign, logdet = jnp.linalg.slogdet(k)
    chol_logdet = 2 * jnp.sum(jnp.log(jnp.diagonal(jnp.linalg.cholesky(k))))
    print(
        f"slogdet (LU) = ({float(sign):.0f}, {float(logdet):.4f}), "
        f"2 sum log diag(L) = {float(chol_logdet):.4f}"
    )
    eps = 1e-2
    fd = [
        (
            float(neg_log_marginal_likelihood(log_params + eps * e, x, y))
            - float(neg_log_marginal_likelihood(log_params - eps * e, x, y))
        )
        / (2 * eps)
        for e in np.eye(2, dtype=np.float32)
    ]
    print(
        "the gradient matches central differences:",
        bool(np.allclose(np.asarray(grad), fd, rtol=2e-2, atol=2e-2)),
    )
    for _ in range(100):  # a few steps of gradient descent on the hyperparameters
        value_now, grad = value_and_grad(log_params, x, y)
        log_params = log_params - 0.01 * grad
    print(
        f"after 100 gradient steps: -log p(y) = {float(value_now):.4f} (lengthscale "
        f"{float(jnp.exp(log_params[0])):.3f}, noise {float(jnp.exp(log_params[1])):.4f})"
    )
    print("the marginal likelihood went up:", float(value_now) < float(value))


def _sgd_step(params, x, y, axis_name=None):
    """One SGD step of a small tanh MLP; with ``axis_name``, gradients and loss are averaged
    over the devices of that pmap axis first."""

    def loss(params, x, y):
        (w1, b1), (w2, b2) = params
        return jnp.mean((jnp.tanh(x @ w1 + b1) @ w2 + b2 - y) ** 2)

    value, grads = xform.value_and_grad(loss)(params, x, y)
    if axis_name is not None:
        value, grads = xform.lax.pmean((value, grads), axis_name)
    new = [(w - 0.1 * gw, b - 0.1 * gb) for (w, b), (gw, gb) in zip(params, grads, strict=True)]
    return new, value


def _data_parallel_step(per_device=16, timed_steps=20):
    _section("pmap: a data-parallel training step over the host devices")
    n = xform.device_count()
    print(
        f"{n} {xform.devices()[0].platform} device{'s' * (n > 1)}; the batch is split "
        f"{per_device} examples per device, the parameters are replicated (a leading device "
        "axis)"
    )
    rng = np.random.default_rng(1)  # NumPy data: no random-number programs to compile here
    params = [
        (jnp.asarray(rng.normal(0.0, 0.5, (4, 32)), jnp.float32), jnp.zeros(32)),
        (jnp.asarray(rng.normal(0.0, 0.2, (32, 1)), jnp.float32), jnp.zeros(1)),
    ]
    x = jnp.asarray(rng.normal(size=(n * per_device, 4)), jnp.float32)
    y = jnp.sum(jnp.sin(x), axis=1, keepdims=True)

    print(inspect.getsource(_sgd_step).rstrip())
    step = xform.pmap(lambda p, x, y: _sgd_step(p, x, y, "i"), axis_name="i")
    print('step = xform.pmap(lambda p, x, y: _sgd_step(p, x, y, "i"), axis_name="i")')
    replicated = xform.tree_util.tree_map(lambda a: jnp.broadcast_to(a, (n, *a.shape)), params)
    xs, ys = (jnp.reshape(a, (n, per_device, -1)) for a in (x, y))
    new, value = step(replicated, xs, ys)

    # The same step on one device, eagerly (nothing more to compile), on the whole batch:
    # equal slices make the mean of the devices' mean gradients the whole batch's gradient.
    ref_new, ref_value = _sgd_step(params, x, y)
    diff = max(
        float(np.max(np.abs(np.asarray(a) - np.asarray(b)[None])))
        for a, b in zip(
            xform.tree_util.tree_leaves(new), xform.tree_util.tree_leaves(ref_new), strict=True
        )
    )
    print(f"loss {float(value[0]):.6f} on every device, one-device step {float(ref_value):.6f}")
    print(f"max |pmap step - one-device step| over the new parameters: {diff:.2e}")
    print(
        "matches the one-device step:",
        diff < 1e-5 and bool(np.allclose(np.asarray(value), float(ref_value), rtol=1e-5)),
    )

    # Steady state: the new parameters stay on their devices and feed the next step (each
    # step waited for, to time it).
    times = []
    for _ in range(timed_steps):
        start = time.perf_counter()
        new, value = step(new, xs, ys)
        value.block_until_ready()
        times.append(time.perf_counter() - start)
    print(
        f"pmap step over {n} device{'s' * (n > 1)} (median of {timed_steps}, parameters "
        f"fed back): {_fmt_seconds(statistics.median(times))}; loss now "
        f"{float(value[0]):.6f}"
    )


def _notebooks():
    _section("Next: the notebooks")
    folder = pathlib.Path(__file__).resolve().parent.parent / "notebooks"
    names = sorted(p.name for p in folder.glob("*.ipynb")) if folder.is_dir() else []
    if names:
        print(f"in {folder}: " + ", ".join(names))
    else:
        print("in notebooks/ of the xform repository (not installed with the package)")


if __name__ == "__main__":
    main()
