"""The sharding rows: partitioned ``jit`` and ``shard_map`` of xform against JAX's.

The steps are written once and run with ``lib, mod`` = ``xform.numpy, xform`` and
``jax.numpy, jax``, on the same mesh and shardings, each result checked against the
one-device step before timing. Each timed step waits for its loss.

Needs ``jax.config.update("jax_num_cpu_devices", 8)`` before any backend starts (run it as
``python -m benchmarks.bench_sharding``, or from ``run.py``).
"""

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import xform
import xform.numpy as xnp
from benchmarks.bench_pmap import LEARNING_RATE, SIZES, _data, _loss, _params  # the same MLP
from benchmarks.common import compare

LIBS = ((xnp, xform), (jnp, jax))


def _step(lib, mod):
    def step(params, x, labels):
        value, grads = mod.value_and_grad(_loss(lib))(params, x, labels)
        return [
            (w - LEARNING_RATE * gw, b - LEARNING_RATE * gb)
            for (w, b), (gw, gb) in zip(params, grads, strict=True)
        ], value

    return step


def _require(n):
    if xform.device_count() < n or jax.device_count() < n:
        raise RuntimeError(
            f"needs {n} devices, xform sees {xform.device_count()}, JAX {jax.device_count()}"
        )


def _timed_steps(mesh, param_specs, batch_spec, scale):
    rng = np.random.default_rng(0)
    params = _params(rng)
    x, labels = _data(rng)
    ref_params, ref_loss = jax.jit(_step(jnp, jax))(params, x, labels)
    p_shard = [tuple(NamedSharding(mesh, s) for s in layer) for layer in param_specs]
    b_shard = NamedSharding(mesh, batch_spec)
    fns = []
    for lib, mod in LIBS:
        step = mod.jit(
            _step(lib, mod),
            in_shardings=(p_shard, b_shard, b_shard),
            out_shardings=(p_shard, NamedSharding(mesh, P())),
        )
        state = [mod.device_put(params, p_shard)]
        xd, ld = mod.device_put(x, b_shard), mod.device_put(labels, b_shard)
        new, value = step(state[0], xd, ld)
        np.testing.assert_allclose(np.asarray(value), float(ref_loss), rtol=1e-5)
        for got, want in zip(
            jax.tree_util.tree_leaves(new), jax.tree_util.tree_leaves(ref_params), strict=True
        ):
            np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-4, atol=1e-5)

        def run(step=step, state=state, xd=xd, ld=ld):
            state[0], value = step(state[0], xd, ld)
            value.block_until_ready()

        fns.append(run)
    return compare(*fns, samples=10 * scale, inner=5, warmup=2)


def bench_data_parallel(scale):
    """(s1) A data-parallel SGD step with sharded jit over 8 devices: parameters
    replicated, the batch split; XLA's partitioner adds the all-reduce of the gradients."""
    _require(8)
    mesh = jax.make_mesh((8,), ("batch",))
    specs = [(P(), P())] * (len(SIZES) - 1)
    return _timed_steps(mesh, specs, P("batch"), scale)


def bench_tensor_parallel(scale):
    """(s2) The same step on a 4x2 mesh: the batch over "data", the hidden layers'
    weights column- then row-split over "model" (Megatron style)."""
    _require(8)
    mesh = jax.make_mesh((4, 2), ("data", "model"), axis_types=(jax.sharding.AxisType.Auto,) * 2)
    specs = [(P(None, "model"), P("model")), (P("model", None), P()), (P(), P())]
    return _timed_steps(mesh, specs, P("data"), scale)


def bench_shard_map_psum(scale):
    """(s3) A tiny cached shard_map psum call over 8 devices, jitted, result fed back."""
    _require(8)
    mesh = jax.make_mesh((8,), ("i",))
    x = np.ones((8, 4), np.float32)
    fns = []
    for mod in (xform, jax):
        f = mod.jit(
            mod.shard_map(
                lambda a, mod=mod: mod.lax.psum(a, "i") * 0.125,
                mesh=mesh,
                in_specs=P("i"),
                out_specs=P("i"),
            )
        )
        state = [f(mod.device_put(x, NamedSharding(mesh, P("i"))))]
        np.testing.assert_allclose(np.asarray(state[0]), x, rtol=1e-6)

        def run(f=f, state=state):
            state[0] = f(state[0])
            state[0].block_until_ready()

        fns.append(run)
    return compare(*fns, samples=10 * scale, inner=20, warmup=3)


BENCHMARKS = [
    (
        "(s1) sharded-jit data-parallel SGD step, MLP 784-512-512-10, batch 128 over 8 devices",
        bench_data_parallel,
        (),
        1.0,
    ),
    (
        "(s2) sharded-jit tensor-parallel SGD step of the same MLP on a 4x2 mesh",
        bench_tensor_parallel,
        (),
        1.0,
    ),
    (
        "(s3) a cached jit(shard_map(psum)) call on f32[8, 4] over 8 devices, result fed back",
        bench_shard_map_psum,
        (),
        1.1,
    ),
]


def main():
    for name, fn, args, target in BENCHMARKS:
        xf, jx = fn(1, *args)
        print(
            f"{name}\n    xform {xf * 1e6:9.1f} us   JAX {jx * 1e6:9.1f} us   "
            f"ratio {xf / jx:5.2f} (target <= {target})"
        )


if __name__ == "__main__":
    jax.config.update("jax_num_cpu_devices", 8)
    main()
