"""The pmap rows of ``run.py``: a data-parallel SGD step of an MLP over the host devices.

The step is written once and run with ``lib, mod`` = ``xform.numpy, xform`` and
``jax.numpy, jax``: each device takes its slice of the batch, computes the loss and its
gradient, and ``lax.pmean`` averages both over the devices before the SGD update.

Both libraries use the same idiom, the standard one of JAX's data-parallel examples: the
parameters are replicated up front with a leading device axis (``in_axes=0``), and the step
returns the new, still replicated parameters, which the next step reads where they are. (The
alternative, ``in_axes=None`` for the parameters and ``out_axes=None`` for the new ones, timed
within noise of it for both libraries here.) The batch is split across the devices once,
before timing, so that the steady-state step moves nothing between host and devices. Each
timed step waits for its loss: XLA's CPU collectives can abort with hundreds of steps in
flight (see README.md).

Needs ``jax.config.update("jax_num_cpu_devices", 8)`` before any backend starts (``run.py``
does it); with fewer devices the rows that need more show as n/a.
"""

import itertools

import jax
import jax.numpy as jnp
import numpy as np

import xform
import xform.numpy as xnp
from benchmarks.common import compare

LIBS = ((xnp, xform), (jnp, jax))
SIZES = (784, 512, 512, 10)
GLOBAL_BATCH = 128
LEARNING_RATE = 0.01


def _params(rng):
    return [
        (
            rng.standard_normal((m, n), np.float32) / np.sqrt(m).astype(np.float32),
            np.zeros(n, np.float32),
        )
        for m, n in itertools.pairwise(SIZES)
    ]


def _data(rng):
    x = rng.standard_normal((GLOBAL_BATCH, SIZES[0]), np.float32)
    labels = np.eye(SIZES[-1], dtype=np.float32)[rng.integers(0, SIZES[-1], GLOBAL_BATCH)]
    return x, labels


def _loss(lib):
    """Softmax cross-entropy of a tanh MLP, for one library."""

    def loss(params, x, labels):
        *hidden, (w_out, b_out) = params
        for w, b in hidden:
            x = lib.tanh(lib.dot(x, w) + b)
        logits = lib.dot(x, w_out) + b_out
        shifted = logits - lib.max(logits, axis=1, keepdims=True)
        log_probs = shifted - lib.log(lib.sum(lib.exp(shifted), axis=1, keepdims=True))
        return -lib.mean(lib.sum(log_probs * labels, axis=1))

    return loss


def _sgd(params, grads):
    return [
        (w - LEARNING_RATE * gw, b - LEARNING_RATE * gb)
        for (w, b), (gw, gb) in zip(params, grads, strict=True)
    ]


def _train_step(lib, mod):
    """The per-device SGD step, for one library (``mod`` is ``xform`` or ``jax``)."""

    def step(params, x, labels):
        value, grads = mod.value_and_grad(_loss(lib))(params, x, labels)
        value, grads = mod.lax.pmean((value, grads), "i")
        return _sgd(params, grads), value

    return step


def _one_device_step(params, x, labels):
    """The same step on one device with JAX's jit, on the whole batch: the reference."""

    def step(params, x, labels):
        value, grads = jax.value_and_grad(_loss(jnp))(params, x, labels)
        return _sgd(params, grads), value

    return jax.jit(step)(params, x, labels)


def _tree_np(tree):
    return [np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(tree)]


def bench_data_parallel(scale, n_devices):
    """(p1), (p2) Median steady-state step time of xform and JAX over ``n_devices`` devices,
    the global batch of 128 split evenly (128 / n examples per device)."""
    if xform.device_count() < n_devices or jax.device_count() < n_devices:
        raise RuntimeError(
            f"needs {n_devices} devices, xform sees {xform.device_count()}, "
            f"JAX {jax.device_count()}"
        )
    rng = np.random.default_rng(0)
    params = _params(rng)
    x, labels = _data(rng)
    x_split, labels_split = (
        a.reshape(n_devices, GLOBAL_BATCH // n_devices, -1) for a in (x, labels)
    )
    replicated = [tuple(np.repeat(a[None], n_devices, axis=0) for a in layer) for layer in params]
    ref_params, ref_loss = _one_device_step(params, x, labels)

    fns = []
    for lib, mod in LIBS:
        # The identity pmap puts each array on the devices as the step's pmap will read it.
        place = mod.pmap(lambda a: a, axis_name="i")
        xd, ld = place(x_split), place(labels_split)
        state = [jax.tree_util.tree_map(place, replicated)]
        step = mod.pmap(_train_step(lib, mod), axis_name="i")
        new, value = step(state[0], xd, ld)
        if len(value.devices()) != n_devices:
            raise RuntimeError(f"{mod.__name__}.pmap ran on {len(value.devices())} devices")
        # Every device holds the same new parameters: those of the one-device step.
        np.testing.assert_allclose(np.asarray(value), float(ref_loss), rtol=1e-5)
        for got, want in zip(_tree_np(new), _tree_np(ref_params), strict=True):
            np.testing.assert_allclose(got, np.broadcast_to(want, got.shape), rtol=1e-4, atol=1e-5)

        def run(step=step, state=state, xd=xd, ld=ld):
            state[0], value = step(state[0], xd, ld)
            value.block_until_ready()

        fns.append(run)
    return compare(*fns, samples=10 * scale, inner=5, warmup=2)


def bench_dispatch(scale, with_psum):
    """(p3) A cached pmap call on tiny inputs over 8 devices, its result fed back and waited
    for: the cost of dispatching the SPMD program (with a psum: and of its rendezvous)."""
    if xform.device_count() < 8:
        raise RuntimeError(f"needs 8 devices, xform sees {xform.device_count()}")
    x = np.ones((8, 4), np.float32)
    fns = []
    for mod in (xform, jax):
        body = (
            (lambda a, mod=mod: mod.lax.psum(a, "i") * 0.125) if with_psum else (lambda a: a * 1.0)
        )
        f = mod.pmap(body, axis_name="i")
        state = [f(x)]
        np.testing.assert_allclose(np.asarray(state[0]), x, rtol=1e-6)

        def run(f=f, state=state):
            state[0] = f(state[0])
            state[0].block_until_ready()

        fns.append(run)
    return compare(*fns, samples=10 * scale, inner=20, warmup=3)


BENCHMARKS = [
    (
        "(p1) pmap data-parallel SGD step, pmean of grads, MLP 784-512-512-10, batch 128 "
        "over 8 devices",
        bench_data_parallel,
        (8,),
        1.0,
    ),
    *[
        (
            f"(p2) the same step over {n} device{'s' * (n > 1)} (global batch 128, "
            f"{GLOBAL_BATCH // n} per device)",
            bench_data_parallel,
            (n,),
            1.0,
        )
        for n in (1, 2, 4, 8)
    ],
    (
        "(p3) a cached pmap call on f32[8, 4] over 8 devices, result fed back (x * 1.0)",
        bench_dispatch,
        (False,),
        1.0,
    ),
    ("(p3) the same with a psum (psum(x) / 8)", bench_dispatch, (True,), 1.0),
]
