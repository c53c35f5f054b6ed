"""Memory per call, xform and JAX side by side: the growth of the resident set (RSS) over
many cached ``jit`` calls on tiny device-resident inputs, the results dropped as a loop
drops them. Each library runs in a fresh process, so neither sees the other's memory.

Run from the repository root: ``python -m benchmarks.bench_memory`` (``--calls N``, default
500,000; ``--quick`` for 100,000). Not a row of ``run.py``: it reports megabytes, not times.

What it shows: every execution of a program on arguments that outlive it leaves jaxlib some
Python objects to free once the execution is done, deferred to jaxlib's garbage hook. JAX
runs that hook from a Python GC callback; a loop of cached xform calls allocates nothing that
wakes the collector, so xform runs the hook after each execution (``lowering/runtime.py``).
Before that change xform grew by about 150 bytes per call (about 70 MB over 500k calls).
"""

import argparse
import json
import os
import subprocess
import sys
import time

_CHILD = r"""
import json, os, sys, time
import numpy as np
lib, calls = sys.argv[1], int(sys.argv[2])

def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

x = np.linspace(-1.0, 1.0, 16, dtype=np.float32)
if lib == "xform":
    import xform
    f = xform.jit(lambda x, y: x * y + 1)
    a, b = xform.device_put(x), xform.device_put(x + 1)
else:
    import jax
    f = jax.jit(lambda x, y: x * y + 1)
    a, b = jax.device_put(x), jax.device_put(x + 1)
for _ in range(5000):
    f(a, b).block_until_ready()
start, t0 = rss_mb(), time.perf_counter()
for _ in range(calls):
    f(a, b)
f(a, b).block_until_ready()
seconds = time.perf_counter() - t0
print(json.dumps({"growth_mb": rss_mb() - start, "us_per_call": seconds / calls * 1e6}))
"""


def measure(lib, calls):
    """RSS growth (MB) and microseconds per call of ``calls`` cached jit calls of ``lib``."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, lib, str(calls)],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=500_000)
    parser.add_argument("--quick", action="store_true", help="100,000 calls")
    args = parser.parse_args()
    calls = 100_000 if args.quick else args.calls
    print(
        f"{calls:,} cached jit calls of `x * y + 1` on f32[16], {time.strftime('%Y-%m-%d %H:%M')}\n"
    )
    print("| library | RSS growth | bytes per call | µs per call |")
    print("|---|---:|---:|---:|")
    for lib in ("xform", "jax"):
        r = measure(lib, calls)
        print(
            f"| {lib} | {r['growth_mb']:.1f} MB | {r['growth_mb'] * 2**20 / calls:.1f} | "
            f"{r['us_per_call']:.2f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
