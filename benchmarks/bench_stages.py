"""The first call of a fresh jit, stage by stage: trace, lower, compile, first execution.

Both libraries go through their stages API (``jit(f).trace(*args)``, ``.lower()``,
``.compile()``, then a call of the compiled stage), a fresh function object per sample so
that no cache keyed on the function or its trace helps. Compiling is cold for both: JAX's
persistent compilation cache is off by default, and xform's (on by default) is turned off
while these rows run. Rows (d1)-(d4) split row (d)'s MLP forward, (l1)-(l4) row (l)'s
``value_and_grad`` of the scan RNN.
"""

import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np

import xform
import xform.lax
import xform.numpy as xnp
from benchmarks import bench_control_flow as control_flow
from benchmarks.common import cold_xform_compiles, mlp, mlp_params, on_device

STAGES = ("trace", "lower", "compile", "execute")


def _stage_times(jit, fresh_fn, args):
    """Seconds of each stage of one fresh function's first call."""
    t0 = time.perf_counter()
    traced = jit(fresh_fn()).trace(*args)
    t1 = time.perf_counter()
    lowered = traced.lower()
    t2 = time.perf_counter()
    compiled = lowered.compile()
    t3 = time.perf_counter()
    jax.block_until_ready(compiled(*args))
    t4 = time.perf_counter()
    return t1 - t0, t2 - t1, t3 - t2, t4 - t3


def _breakdown(cases, samples):
    """{stage: (xform median, JAX median)} over interleaved samples of the two ``cases``,
    each ``(jit, fresh_fn, args)``."""
    times = ([], [])
    with cold_xform_compiles():
        for case in cases:  # a first call of each, so that one-time imports are not timed
            _stage_times(*case)
        for _ in range(samples):
            for i, case in enumerate(cases):
                times[i].append(_stage_times(*case))
    return {
        stage: tuple(statistics.median(t[k] for t in lib_times) for lib_times in times)
        for k, stage in enumerate(STAGES)
    }


def _mlp_cases():
    rng = np.random.default_rng(0)
    params = mlp_params(rng)
    x = rng.standard_normal((128, 784), np.float32)
    cases = []
    for lib, mod in ((xnp, xform), (jnp, jax)):
        p = [(on_device(lib, w), on_device(lib, b)) for w, b in params]
        cases.append((mod.jit, lambda lib=lib: mlp(lib), (p, on_device(lib, x))))
    return cases


def _rnn_cases():
    data = control_flow._rnn_data()
    cases = []
    for lib, lax, mod in control_flow.LIBS:
        args = control_flow._on_device(lib, *data)
        cases.append(
            (
                mod.jit,
                lambda lib=lib, lax=lax, mod=mod: mod.value_and_grad(
                    control_flow._rnn_loss(lib, lax)
                ),
                args,
            )
        )
    return cases


_results = {}


def bench_stage(scale, which, stage):
    """One stage's medians; the four stages of a program are measured together, once."""
    if which not in _results:
        cases, samples = {"d": (_mlp_cases, 5), "l": (_rnn_cases, 2)}[which]
        _results[which] = _breakdown(cases(), samples * scale)
    return _results[which][stage]


BENCHMARKS = [
    *(
        (
            f"(d{k}) first jit call of (d)'s MLP, {stage}{' (cold)' if stage == 'compile' else ''}",
            bench_stage,
            ("d", stage),
            None,
        )
        for k, stage in enumerate(STAGES, 1)
    ),
    *(
        (
            f"(l{k}) first call of (l)'s scan RNN, {stage}"
            + (" (cold)" if stage == "compile" else ""),
            bench_stage,
            ("l", stage),
            None,
        )
        for k, stage in enumerate(STAGES, 1)
    ),
]
