"""Import time of xform against JAX's, each in fresh processes (rows (i1)-(i2) of
benchmarks/README.md).

Run from the repository root: ``python benchmarks/bench_import.py [--repeats N]``. Each
sample is a new Python process that times one import statement; the median of the samples
is reported, with the ratio xform / JAX. ``import xform`` hands its names on lazily, so
(i1) is the package's face alone and (i2) what a program using ``xform.numpy`` loads.
"""

import argparse
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

ROWS = [
    ("(i1) import time: `import xform` vs `import jax`", "import xform", "import jax"),
    (
        "(i2) import time: `import xform.numpy` vs `import jax.numpy`",
        "import xform.numpy",
        "import jax.numpy",
    ),
]


def _sample(statement):
    code = f"import time; t = time.perf_counter(); {statement}; print(time.perf_counter() - t)"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return float(out.stdout.strip())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    for label, ours, theirs in ROWS:
        a, b = [], []
        for _ in range(args.repeats):  # interleaved, so drift hits both alike
            a.append(_sample(ours))
            b.append(_sample(theirs))
        x, j = statistics.median(a), statistics.median(b)
        print(f"{label}: xform {x * 1e3:.0f} ms, JAX {j * 1e3:.0f} ms, ratio {x / j:.2f}x")


if __name__ == "__main__":
    main()
