"""``python -m xform`` runs in a fresh interpreter and prints every part of the tour."""

import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_demo_prints_the_tour():
    # cwd is the repo root, so `-m xform` imports this checkout even without an install.
    proc = subprocess.run(
        [sys.executable, "-m", "xform"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    for header in ("== Its jaxpr", "== Eager", "== Compiled", "== StableHLO", "== Timings"):
        assert header in out, f"missing section {header!r} in:\n{out}"
    # The jaxpr: a binder line, typed equations, and the output tuple.
    assert re.search(r"\{ lambda ; a:f32\[8\]\. let", out), out
    assert re.search(r"b:f32\[8\] = sin a", out), out
    assert re.search(r"= tanh \w+\n\s+in \(\w+,\) \}", out), out
    # The StableHLO module of the jitted function.
    assert "module @jit_f" in out
    for op in ("stablehlo.sine", "stablehlo.cosine", "stablehlo.tanh"):
        assert op in out, f"{op} missing from the StableHLO section"
    assert "matches eager: True" in out
    assert "matches a Python loop of grad over the examples: True" in out
    assert "matches central differences: True" in out
    assert "the compiled gradient is a stablehlo.while loop, not unrolled: True" in out
    assert "the loss went down: True" in out
    assert "== Gaussian-process regression" in out
    assert "the gradient matches central differences: True" in out
    assert "the marginal likelihood went up: True" in out
    sign, slogdet, chol = re.search(
        r"slogdet \(LU\) = \((-?\d+), (-?[\d.]+)\), 2 sum log "
        r"diag\(L\) = (-?[\d.]+)",
        out,
    ).groups()
    assert sign == "1" and abs(float(slogdet) - float(chol)) < 1e-2 * abs(float(chol))
    assert "== pmap: a data-parallel training step" in out
    assert re.search(r"^8 cpu devices", out, re.M), "the demo's pmap step should get 8 CPU devices"
    assert "matches the one-device step: True" in out
    assert re.search(r"== Next: the notebooks.*\n.*01_tour\.ipynb", out), out[-400:]
    # Both timings, with a number and a unit.
    number = r"\d+(\.\d+)? (ms|µs)"
    assert re.search(r"first jit call \(trace \+ lower \+ compile \+ run\): " + number, out)
    assert re.search(r"cached jit call \(median of \d+\): " + number, out)
