"""One process of a two-process ``xform.pmap`` run, started by ``tests/test_multiprocess.py``.

    python tests/multiprocess_worker.py SCENARIO PROCESS_ID PORT OUT_DIR [LIBRARY]

Each process joins XLA's distributed runtime (``jax.distributed.initialize``, gloo
collectives on CPU) with ``LOCAL_DEVICES`` CPU devices of its own, so a pmap spans
``2 * LOCAL_DEVICES`` devices; as in JAX, each process passes the slices of its own devices
and gets back the results of its own devices. Results go to ``OUT_DIR`` as ``.npy`` files
(XLA's gloo writes its own lines to stdout, so stdout is not for results).

LIBRARY is ``xform`` (the default) or ``jax``: the same program with ``jax.pmap``, which
checks the harness and JAX's conventions.

Scenarios (inputs from ``OUT_DIR/inputs.npz``):
  psum     a psum with the axis index over all devices.
  train    two data-parallel SGD steps of a small MLP.
  dead     both processes run a psum; then process 1 waits to be killed by the test and
           process 0 runs another psum, which must fail when its peer dies, not hang; the
           error goes to ``OUT_DIR/error_0.txt``.
"""

import os
import sys
import time
import traceback

import jax
import numpy as np

LOCAL_DEVICES = 4
# Bounds on every wait for a dead or missing peer (seconds; JAX's defaults are 300/100/300).
INIT_TIMEOUT = 60
HEARTBEAT_TIMEOUT = 10
SHUTDOWN_TIMEOUT = 10


def start(process_id, port):
    """Join the two-process cluster; before anything else touches a JAX backend."""
    jax.config.update("jax_num_cpu_devices", LOCAL_DEVICES)
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(
        coordinator_address=f"127.0.0.1:{port}",
        num_processes=2,
        process_id=process_id,
        initialization_timeout=INIT_TIMEOUT,
        heartbeat_timeout_seconds=HEARTBEAT_TIMEOUT,
        shutdown_timeout_seconds=SHUTDOWN_TIMEOUT,
    )


def mlp_loss(params, x, y, xnp):
    """Mean squared error of a one-hidden-layer tanh MLP; ``xnp`` is a NumPy-like module."""
    w1, b1, w2, b2 = params
    hidden = xnp.tanh(xnp.dot(x, w1) + b1)
    return xnp.mean((xnp.dot(hidden, w2) + b2 - y) ** 2)


def local_slices(x, process_id):
    """This process's devices' part of a global array whose leading axis is the device axis."""
    return x[process_id * LOCAL_DEVICES : (process_id + 1) * LOCAL_DEVICES]


def library(name):
    """``(lib, lib.numpy)`` for ``xform`` or ``jax``; imported only after
    ``jax.distributed.initialize``, which must come before any backend starts."""
    if name == "jax":
        import jax.numpy as jnp  # noqa: PLC0415

        return jax, jnp
    import xform  # noqa: PLC0415
    import xform.numpy as xnp  # noqa: PLC0415

    xform.config.update("check_jaxprs", True)  # as in the test suite (tests/conftest.py)
    return xform, xnp


def psum_step(lib):
    return lib.pmap(lambda x: (lib.lax.psum(x, "i"), lib.lax.axis_index("i")), "i")


def psum(process_id, out_dir, lib, lnp):
    inputs = np.load(os.path.join(out_dir, "inputs.npz"))
    total, index = psum_step(lib)(local_slices(inputs["shards"], process_id))
    np.save(os.path.join(out_dir, f"psum_{process_id}.npy"), np.asarray(total))
    np.save(os.path.join(out_dir, f"axis_index_{process_id}.npy"), np.asarray(index))


def train(process_id, out_dir, lib, lnp):
    inputs = np.load(os.path.join(out_dir, "inputs.npz"))

    def train_step(params, x, y, lr):
        loss, grads = lib.value_and_grad(lambda p: mlp_loss(p, x, y, lnp))(params)
        grads = lib.lax.pmean(grads, "i")
        new = tuple(p - lr * g for p, g in zip(params, grads, strict=True))
        return new, lib.lax.pmean(loss, "i")

    # Step 1 takes the params whole (in_axes None); step 2 takes step 1's results, one copy
    # per device, where they are, as a training loop does.
    params = tuple(inputs[f"param{k}"] for k in range(4))
    x = local_slices(inputs["batch_x"], process_id)
    y = local_slices(inputs["batch_y"], process_id)
    lr = np.float32(inputs["lr"])
    first = lib.pmap(train_step, "i", in_axes=(None, 0, 0, None))
    params, loss = first(params, x, y, lr)
    save_step(out_dir, process_id, 1, params, loss)
    params, loss = lib.pmap(train_step, "i", in_axes=(0, 0, 0, None))(params, x, y, lr)
    save_step(out_dir, process_id, 2, params, loss)


def save_step(out_dir, process_id, step, params, loss):
    for k, p in enumerate(params):
        np.save(os.path.join(out_dir, f"step{step}_param{k}_{process_id}.npy"), np.asarray(p))
    np.save(os.path.join(out_dir, f"step{step}_loss_{process_id}.npy"), np.asarray(loss))


def dead_peer(process_id, out_dir, lib, lnp):
    step = psum_step(lib)
    x = np.ones((LOCAL_DEVICES, 3), np.float32)
    np.asarray(step(x)[0])  # both processes have run a collective together
    with open(os.path.join(out_dir, f"ready_{process_id}"), "w"):
        pass
    if process_id == 1:
        time.sleep(600)  # until the test kills this process
        return
    try:
        # Blocks until process 1 joins (never) or dies: execution is asynchronous, the error
        # surfaces when the result is read.
        np.asarray(step(x)[0])
    except Exception:
        with open(os.path.join(out_dir, "error_0.txt"), "w") as f:
            f.write(traceback.format_exc())
        # Leave at once: a normal exit would wait in jax.distributed's shutdown barrier for the
        # dead peer (until the heartbeat timeout) and then abort.
        sys.stdout.flush()
        os._exit(3)
    with open(os.path.join(out_dir, "error_0.txt"), "w") as f:
        f.write("no error: the psum finished without its peer")
    os._exit(0)


def main():
    scenario, process_id, port, out_dir = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    start(process_id, port)
    lib, lnp = library(sys.argv[5] if len(sys.argv) > 5 else "xform")
    {"psum": psum, "train": train, "dead": dead_peer}[scenario](process_id, out_dir, lib, lnp)


if __name__ == "__main__":
    main()
