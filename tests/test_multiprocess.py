"""xform.pmap across two processes on XLA's distributed runtime (``jax.distributed``, gloo
collectives on CPU), four CPU devices each: a psum over all eight devices, two data-parallel
SGD steps against the same steps on the whole batch in this process (JAX as the oracle), and
a dead peer that must give an error, not a hang.

The processes are ``tests/multiprocess_worker.py``; they write their results as ``.npy``
files. Every wait is bounded, and a worker left running is killed (SIGKILL: a process in
``jax.distributed`` catches SIGTERM and goes on).
"""

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from tests.multiprocess_worker import LOCAL_DEVICES, local_slices, mlp_loss

WORKER = Path(__file__).with_name("multiprocess_worker.py")
ROOT = WORKER.parent.parent
PROCESSES = 2
DEVICES = PROCESSES * LOCAL_DEVICES
RUN_TIMEOUT = 120  # seconds for a whole two-process run (each takes a few seconds)
DEAD_PEER_TIMEOUT = 30  # seconds from the kill to the survivor's exit (heartbeat timeout: 10)
F32_TOL = dict(rtol=1e-5, atol=1e-5)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _launch(scenario, out_dir):
    """Start both workers of ``scenario``; their output goes to ``out_dir/worker_<id>.log``."""
    port = _free_port()
    env = dict(os.environ, JAX_PLATFORMS="cpu", PYTHONUNBUFFERED="1")
    procs = []
    for process_id in range(PROCESSES):
        with open(out_dir / f"worker_{process_id}.log", "w") as log:
            procs.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        str(WORKER),
                        scenario,
                        str(process_id),
                        str(port),
                        str(out_dir),
                    ],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    cwd=ROOT,
                    env=env,
                )
            )
    return procs


def _logs(out_dir):
    text = []
    for process_id in range(PROCESSES):
        log = (out_dir / f"worker_{process_id}.log").read_text()
        lines = [ln for ln in log.splitlines() if not ln.startswith("[Gloo]")]
        text.append(f"--- worker {process_id}:\n" + "\n".join(lines[-40:]))
    return "\n".join(text)


def _kill(procs):
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.wait(timeout=10)


def _wait(procs, out_dir, timeout):
    """Wait for every worker to exit 0 within ``timeout`` seconds in all."""
    deadline = time.monotonic() + timeout
    try:
        for p in procs:
            p.wait(timeout=max(deadline - time.monotonic(), 0.1))
    except subprocess.TimeoutExpired:
        _kill(procs)
        pytest.fail(f"the workers did not finish within {timeout} s:\n{_logs(out_dir)}")
    codes = [p.returncode for p in procs]
    assert codes == [0] * PROCESSES, f"worker exit codes {codes}:\n{_logs(out_dir)}"


def _run(scenario, out_dir, inputs):
    """Run both workers of ``scenario`` on ``inputs`` to the end; ``load(name, process_id)``
    reads a result."""
    np.savez(out_dir / "inputs.npz", **inputs)
    procs = _launch(scenario, out_dir)
    try:
        _wait(procs, out_dir, RUN_TIMEOUT)
    finally:
        _kill(procs)
    return lambda name, process_id: np.load(out_dir / f"{name}_{process_id}.npy")


def _normal(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def test_psum_over_all_devices(tmp_path):
    # Each process passes its devices' slices (leading axis: its local device count) and gets
    # back its devices' results; the axis spans all eight devices.
    shards = _normal(np.random.default_rng(0), DEVICES, 2, 3)
    load = _run("psum", tmp_path, dict(shards=shards))
    expected = np.broadcast_to(shards.sum(0), (LOCAL_DEVICES, *shards.shape[1:]))
    for process_id in range(PROCESSES):
        np.testing.assert_allclose(
            load("psum", process_id), expected, **F32_TOL, err_msg=f"process {process_id}"
        )
        np.testing.assert_array_equal(
            load("axis_index", process_id), local_slices(np.arange(DEVICES), process_id)
        )


def test_data_parallel_steps_equal_whole_batch_steps(tmp_path):
    # Params replicated, the batch split over eight devices, gradients averaged with pmean: the
    # same SGD steps as on the whole batch in one process (equal batch sizes per device). The
    # second step takes the first one's results as they are left on the devices.
    rng = np.random.default_rng(1)
    features, hidden, outputs, per_device = 3, 5, 2, 2
    inputs = dict(
        param0=_normal(rng, features, hidden),
        param1=_normal(rng, hidden),
        param2=_normal(rng, hidden, outputs),
        param3=_normal(rng, outputs),
        batch_x=_normal(rng, DEVICES, per_device, features),
        batch_y=_normal(rng, DEVICES, per_device, outputs),
        lr=np.float32(0.1),
    )
    load = _run("train", tmp_path, inputs)
    params = tuple(jnp.asarray(inputs[f"param{k}"]) for k in range(4))
    x = inputs["batch_x"].reshape(-1, features)
    y = inputs["batch_y"].reshape(-1, outputs)
    for step in (1, 2):
        loss, grads = jax.value_and_grad(lambda p: mlp_loss(p, x, y, jnp))(params)
        params = tuple(p - inputs["lr"] * g for p, g in zip(params, grads, strict=True))
        for process_id in range(PROCESSES):
            where = f"step {step}, process {process_id}"
            for k, p in enumerate(params):
                np.testing.assert_allclose(
                    load(f"step{step}_param{k}", process_id),
                    np.broadcast_to(p, (LOCAL_DEVICES, *p.shape)),
                    **F32_TOL,
                    err_msg=f"{where}, param{k}",
                )
            np.testing.assert_allclose(
                load(f"step{step}_loss", process_id),
                np.full(LOCAL_DEVICES, loss),
                **F32_TOL,
                err_msg=where,
            )


def test_dead_peer_gives_an_error_not_a_hang(tmp_path):
    # Both processes run a psum together; then process 1 is killed while process 0 waits in
    # the next psum for it. Process 0 must raise (and exit) within a bounded time.
    procs = _launch("dead", tmp_path)
    try:
        deadline = time.monotonic() + RUN_TIMEOUT
        while not all((tmp_path / f"ready_{k}").exists() for k in range(PROCESSES)):
            if any(p.poll() is not None for p in procs) or time.monotonic() > deadline:
                pytest.fail(f"the workers did not both run the first psum:\n{_logs(tmp_path)}")
            time.sleep(0.1)
        time.sleep(0.5)  # let process 0 enter the second psum
        procs[1].kill()
        killed = time.monotonic()
        try:
            procs[0].wait(timeout=DEAD_PEER_TIMEOUT)
        except subprocess.TimeoutExpired:
            pytest.fail(
                f"process 0 still waits {DEAD_PEER_TIMEOUT} s after its peer died:\n"
                f"{_logs(tmp_path)}"
            )
        elapsed = time.monotonic() - killed
    finally:
        _kill(procs)
    error = (tmp_path / "error_0.txt").read_text() if (tmp_path / "error_0.txt").exists() else ""
    assert procs[0].returncode == 3, (
        f"exit code {procs[0].returncode} after {elapsed:.1f} s, "
        f"error {error!r}:\n{_logs(tmp_path)}"
    )
    assert "Gloo all-reduce failed" in error, error
    assert elapsed < DEAD_PEER_TIMEOUT
