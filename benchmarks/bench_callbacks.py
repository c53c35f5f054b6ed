"""Host callbacks against JAX: what a ``debug.print`` that never fires costs a compiled loop,
and the round trip of a ``pure_callback``.

Run from the repository root: ``python benchmarks/bench_callbacks.py`` (``--quick``). The
rows follow ``run.py``'s ``BENCHMARKS`` convention (each returns xform's and JAX's median
seconds); the script also prints the overhead of the print within each library, the target
being at most 1.1x the loop without it.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import xform  # noqa: E402
import xform.numpy as xnp  # noqa: E402
from benchmarks.common import compare, on_device  # noqa: E402

LIBS = ((xnp, xform), (jnp, jax))
STEPS = 1000


def _loop(mod, with_print):
    """A jitted 1000-step scan; with ``with_print``, each step holds a ``debug.print`` in a
    ``lax.cond`` branch that never runs."""

    def noop(c):
        return None

    def shout(c):
        mod.debug.print("carry blew up: {}", c)

    def step(c, x):
        c = c * 0.999 + x
        if with_print:
            mod.lax.cond(c > 1e30, shout, noop, c)
        return c, c

    return mod.jit(lambda xs: mod.lax.scan(step, np.float32(0), xs))


def _scan_row(with_print, scale):
    xs = np.linspace(0, 1, STEPS, dtype=np.float32)
    fns, outs = [], []
    for lib, mod in LIBS:
        f = _loop(mod, with_print)
        x = on_device(lib, xs)
        outs.append(f(x))
        fns.append(lambda f=f, x=x: jax.block_until_ready(f(x)))
    np.testing.assert_allclose(np.asarray(outs[0][1]), np.asarray(outs[1][1]), rtol=1e-5)
    return compare(*fns, samples=20 * scale, inner=20, warmup=5)


def bench_scan_with_print(scale):
    """(cb1) jit(scan) of 1000 steps, a debug.print in a lax.cond that never fires."""
    return _scan_row(True, scale)


def bench_scan_without_print(scale):
    """(cb2) the same jit(scan) of 1000 steps without the print."""
    return _scan_row(False, scale)


def _double(a):
    return np.asarray(a) * 2


def bench_pure_callback(scale):
    """(cb3) jit(pure_callback) round trip per call: 16 float32 to the host and back."""
    x = np.linspace(-1, 1, 16, dtype=np.float32)
    fns = []
    for lib, mod in LIBS:
        spec = mod.ShapeDtypeStruct(x.shape, x.dtype)
        f = mod.jit(lambda v, mod=mod, spec=spec: mod.pure_callback(_double, spec, v))
        a = on_device(lib, x)
        np.testing.assert_allclose(np.asarray(f(a)), x * 2)
        fns.append(lambda f=f, a=a: f(a).block_until_ready())
    return compare(*fns, samples=20 * scale, inner=100, warmup=50)


BENCHMARKS = [
    ("(cb1) jit(scan 1000) + never-firing debug.print in cond", bench_scan_with_print, (), None),
    ("(cb2) jit(scan 1000), no print", bench_scan_without_print, (), None),
    ("(cb3) jit(pure_callback) round trip, 16 f32", bench_pure_callback, (), 1.2),
]


def main():
    scale = 1 if "--quick" in sys.argv else 3
    results = {}
    print("| benchmark | xform | JAX | xform / JAX |")
    print("|---|---|---|---|")
    for label, fn, args, _ in BENCHMARKS:
        xf, jx = fn(scale, *args)
        results[fn.__name__] = (xf, jx)
        print(f"| {label} | {xf * 1e6:.1f} us | {jx * 1e6:.1f} us | {xf / jx:.2f}x |")
    (xw, jw), (xo, jo) = results["bench_scan_with_print"], results["bench_scan_without_print"]
    print(
        f"\nprint overhead in the loop (target <= 1.1x): xform {xw / xo:.2f}x, JAX {jw / jo:.2f}x"
    )


if __name__ == "__main__":
    main()
