"""``python -m xform``: a short tour of the engine.

It traces a small function to a jaxpr, runs it eagerly and compiled, prints the StableHLO
module ``jit`` hands to XLA, and times the first (trace + lower + compile + run) and a cached
call of the compiled function.
"""

import inspect
import platform
import statistics
import time

import numpy as np

import xform
import xform.numpy as jnp


def f(x):
    return jnp.tanh(jnp.sin(x) * 2.0 + jnp.cos(x))


def _section(title):
    print(f"\n== {title} ==")


def _fmt_seconds(s):
    return f"{s * 1e3:.2f} ms" if s >= 1e-3 else f"{s * 1e6:.1f} µs"


def main(cached_calls=200):
    device = xform.devices()[0]
    print(f"xform {xform.__version__} on {device.platform} ({device}), "
          f"Python {platform.python_version()}")

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
    print("matches eager:", bool(np.allclose(np.asarray(compiled), np.asarray(eager),
                                              rtol=1e-6, atol=1e-6)))

    _section("StableHLO: xform.jit(f).lower(x).as_text()")
    print(f_jit.lower(x).as_text().rstrip())

    _section("Timings (time.perf_counter, block_until_ready)")
    times = []
    for _ in range(cached_calls):
        start = time.perf_counter()
        f_jit(x).block_until_ready()
        times.append(time.perf_counter() - start)
    print(f"first jit call (trace + lower + compile + run): {_fmt_seconds(first)}")
    print(f"cached jit call (median of {cached_calls}): "
          f"{_fmt_seconds(statistics.median(times))}")

    _section("Gradients: xform.grad(lambda x: jnp.sum(f(x)))(x)")
    loss = lambda v: jnp.sum(f(v))  # noqa: E731  (a one-line example)
    grad = xform.grad(loss)(x)
    print(repr(grad))
    _, tangent = xform.jvp(loss, (x,), (jnp.ones_like(x),))
    print("matches forward mode (sum of the gradient = jvp along ones):",
          bool(np.allclose(float(jnp.sum(grad)), float(tangent), rtol=1e-5)))
    _section("The gradient's program: xform.make_jaxpr(xform.grad(loss))(x)")
    print(xform.make_jaxpr(xform.grad(loss))(x))

    _per_example_gradients()
    _scan_rnn()
    _mlp_training()


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
    print("matches a Python loop of grad over the examples:",
          bool(np.allclose(np.asarray(per_example), looped, rtol=1e-5, atol=1e-6)))


def _scan_rnn():
    _section("A loop on the device: xform.lax.scan, differentiated and compiled")

    def rnn_loss(w, xs):  # a tanh recurrence over 10 steps, one traced body
        def step(h, x):
            h = jnp.tanh(w * h + x)
            return h, h
        _, hs = xform.lax.scan(step, jnp.zeros(3), xs)
        return jnp.sum(hs ** 2)

    xs_seq = jnp.reshape(jnp.linspace(-1.0, 1.0, 30), (10, 3))
    value, dw = xform.jit(xform.value_and_grad(rnn_loss))(jnp.float32(0.5), xs_seq)
    print(f"loss = {float(value):.6f}, d loss / d w = {float(dw):.6f}")
    eps = 1e-3
    fd = (float(rnn_loss(jnp.float32(0.5 + eps), xs_seq)) -
          float(rnn_loss(jnp.float32(0.5 - eps), xs_seq))) / (2 * eps)
    print("matches central differences:", bool(np.isclose(float(dw), fd, rtol=1e-2)))
    lowered = xform.jit(xform.grad(rnn_loss)).lower(jnp.float32(0.5), xs_seq).as_text()
    print("the compiled gradient is a stablehlo.while loop, not unrolled:",
          lowered.count("stablehlo.while") >= 1 and lowered.count("stablehlo.tanh") <= 2)



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
        new = [(w - 0.1 * gw, b - 0.1 * gb)
               for (w, b), (gw, gb) in zip(params, grads, strict=True)]
        return new, value

    first = None
    for _ in range(steps):
        params, value = step(params, x, y)
        first = float(value) if first is None else first
    print(f"loss after 1 step: {first:.5f}, after {steps} steps: {float(value):.5f}")
    print("the loss went down:", float(value) < first)


if __name__ == "__main__":
    main()
