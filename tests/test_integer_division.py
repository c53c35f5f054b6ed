"""Integer division by zero (and INT_MIN / -1) under jit: XLA's defined values, never a crash.

XLA's constant folder divides in C++, so a division whose operands are known at compile time
used to kill the process with SIGFPE. Each case runs in a fresh interpreter, and its value is
compared with JAX's (or, where JAX itself crashes, with XLA's definition: x / 0 = -1, x % 0 = x,
INT_MIN / -1 = INT_MIN, INT_MIN % -1 = 0).
"""

import json
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import xform.numpy as xjnp
from xform import lax as xlax

ROOT = Path(__file__).resolve().parent.parent

# (expression over `jnp`/`lax`/`jit`, whether JAX itself survives it under jit)
CASES = [
    ("jit(lambda: jnp.int32(7) // 0)()", True),
    ("jit(lambda x: jnp.sum(x) // x.size)(jnp.zeros((0,), jnp.int32))", True),
    ("jit(lambda x: jnp.var(x, dtype=jnp.int32))(jnp.zeros((0,), jnp.int32))", True),
    ("jit(lambda x: x % 0)(jnp.int32(3))", True),
    ("jit(lambda: jnp.int32(-7) % 0)()", True),
    ("jit(lambda: jnp.uint8(7) // 0)()", True),
    ("jit(lambda: lax.div(jnp.int32(7), jnp.int32(0)))()", False),
    ("jit(lambda: lax.rem(jnp.int32(-7), jnp.int32(0)))()", False),
    ("jit(lambda: lax.div(jnp.uint16(9), jnp.uint16(0)))()", False),
    ("jit(lambda: lax.div(jnp.int32(-2**31), jnp.int32(-1)))()", False),
    ("jit(lambda: lax.rem(jnp.int32(-2**31), jnp.int32(-1)))()", False),
    ("jit(lambda: lax.div(jnp.int8(-128), jnp.int8(-1)))()", False),
]

XLA_VALUES = {  # where JAX crashes, XLA's definition of the result
    "jit(lambda: lax.div(jnp.int32(7), jnp.int32(0)))()": -1,
    "jit(lambda: lax.rem(jnp.int32(-7), jnp.int32(0)))()": -7,
    "jit(lambda: lax.div(jnp.uint16(9), jnp.uint16(0)))()": 65535,
    "jit(lambda: lax.div(jnp.int32(-2**31), jnp.int32(-1)))()": -(2**31),
    "jit(lambda: lax.rem(jnp.int32(-2**31), jnp.int32(-1)))()": 0,
    "jit(lambda: lax.div(jnp.int8(-128), jnp.int8(-1)))()": -128,
}

_SCRIPT = """
import json, sys
import numpy as np
import xform.numpy as jnp
from xform import jit, lax
out = []
for expr in json.loads(sys.argv[1]):
    v = np.asarray(eval(expr))
    out.append([v.tolist() if not np.isnan(v).any() else "nan", str(v.dtype)])
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def xform_results():
    exprs = [e for e, _ in CASES]
    proc = subprocess.run(
        [sys.executable, "-c", _SCRIPT, json.dumps(exprs)],
        cwd=ROOT,
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, f"the process died ({proc.returncode}): {proc.stderr[-2000:]}"
    return dict(zip(exprs, json.loads(proc.stdout.strip().splitlines()[-1]), strict=True))


@pytest.mark.parametrize(("expr", "jax_survives"), CASES)
def test_integer_division_under_jit(xform_results, expr, jax_survives):
    value, dtype = xform_results[expr]
    if jax_survives:
        expected = np.asarray(eval(expr, {"jit": jax.jit, "jnp": jnp, "lax": jax.lax}))
        assert dtype == str(expected.dtype)
        if np.isnan(expected).any():
            assert value == "nan"
        else:
            assert value == expected.tolist()
    else:
        assert value == XLA_VALUES[expr]


def test_eager_integer_division_matches_jit(xform_results):
    for expr, _ in CASES:
        if "jnp.var" in expr or "x.size" in expr or "lambda x" in expr:
            continue
        eager = expr.replace("jit(lambda: ", "(lambda: ")
        value = np.asarray(eval(eager, {"jnp": xjnp, "lax": xlax}))
        assert value.tolist() == xform_results[expr][0], expr
