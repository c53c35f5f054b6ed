"""The accelerator check: jit, grad and pmap on the default backend against JAX.

Prepared for a machine with a GPU (``python -m benchmarks.gpu_check``): it prints the
backend and its devices, then one line per check, and exits non-zero if any fails. On a CPU
machine it asks for 8 host devices and runs the same checks there.
"""

import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

import xform
import xform.numpy as xnp
from lowering import runtime

runtime.use_host_devices(8)  # no backend has started yet; only the CPU backend reads it


def _mlp(lib):
    def loss(params, x):
        (w1, b1), (w2, b2) = params
        return lib.mean((lib.tanh(x @ w1 + b1) @ w2 + b2) ** 2)

    return loss


def main():
    rng = np.random.default_rng(0)
    params = [
        (rng.normal(size=(64, 128)).astype(np.float32) / 8, np.zeros(128, np.float32)),
        (rng.normal(size=(128, 1)).astype(np.float32) / 11, np.zeros(1, np.float32)),
    ]
    x = rng.normal(size=(256, 64)).astype(np.float32)
    n = xform.device_count()
    print(f"backend {xform.default_backend()}: {n} devices {xform.devices()}")
    checks = []

    def check(name, got, want, tol=1e-4):
        flat_got = [np.asarray(a) for a in jax.tree_util.tree_leaves(got)]
        flat_want = [np.asarray(a) for a in jax.tree_util.tree_leaves(want)]
        ok = all(
            np.allclose(g, w, rtol=tol, atol=tol) for g, w in zip(flat_got, flat_want, strict=True)
        )
        checks.append(ok)
        print(f"{'PASS' if ok else 'FAIL'} {name}")

    start = time.perf_counter()
    check(
        "jit(loss) == jax.jit(loss)", xform.jit(_mlp(xnp))(params, x), jax.jit(_mlp(jnp))(params, x)
    )
    check(
        "jit(grad(loss)) == jax.jit(jax.grad(loss))",
        xform.jit(xform.grad(_mlp(xnp)))(params, x),
        jax.jit(jax.grad(_mlp(jnp)))(params, x),
    )
    shards = x.reshape(n, -1, 64)

    def step(lib, mod):
        def one(params, x):
            grads = mod.lax.pmean(mod.grad(_mlp(lib))(params, x), "i")
            return [
                (w - 0.1 * gw, b - 0.1 * gb) for (w, b), (gw, gb) in zip(params, grads, strict=True)
            ]

        return mod.pmap(one, axis_name="i", in_axes=(None, 0))

    got = step(xnp, xform)(params, shards)
    check(f"pmap SGD step over {n} devices == jax.pmap", got, step(jnp, jax)(params, shards))
    check("pmap result is sharded over every device", len(got[0][0].devices()) == n, True)
    psum = xform.pmap(lambda a: xform.lax.psum(a, "i"), axis_name="i")(shards)
    check("pmap psum == the sum over devices", psum, np.broadcast_to(shards.sum(0), shards.shape))
    _sharded_checks(check, params, x, n)
    print(f"{sum(checks)}/{len(checks)} checks passed in {time.perf_counter() - start:.1f} s")
    return 0 if all(checks) else 1


def _mesh(mod, n, name):
    # Auto axes: the partitioner places the step's collectives (Explicit ones would ask for
    # the out_sharding of the gradient's contraction over the batch)
    return mod.make_mesh((n,), (name,), axis_types=(mod.sharding.AxisType.Auto,))


def _sharded_checks(check, params, x, n):
    """A data-parallel SGD step as a partitioned jit (the batch split over a mesh of every
    device, the parameters replicated) and a shard_map psum, each against JAX's."""

    def step(lib, mod):
        mesh = _mesh(mod, n, "batch")
        batch = mod.NamedSharding(mesh, mod.P("batch"))
        replicated = mod.NamedSharding(mesh, mod.P())

        def one(params, x):
            grads = mod.grad(_mlp(lib))(params, x)
            return [
                (w - 0.1 * gw, b - 0.1 * gb) for (w, b), (gw, gb) in zip(params, grads, strict=True)
            ]

        stepped = mod.jit(one, in_shardings=(replicated, batch), out_shardings=replicated)
        return stepped(params, mod.device_put(x, batch)), batch

    (got, batch), (want, _) = step(xnp, xform), step(jnp, jax)
    check(f"sharded jit SGD step over {n} devices == JAX's", got, want)
    check(
        "its batch is laid out over every device",
        len(xform.device_put(x, batch).addressable_shards) == n,
        True,
    )

    def total(mod):
        mesh = _mesh(mod, n, "i")
        summed = mod.shard_map(
            lambda a: mod.lax.psum(a, "i"), mesh=mesh, in_specs=mod.P("i"), out_specs=mod.P()
        )
        return mod.jit(summed)(x)

    check("jit(shard_map(psum)) == JAX's", total(xform), total(jax))


if __name__ == "__main__":
    sys.exit(main())
