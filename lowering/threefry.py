"""Lowering of ``threefry2x32_p``: a private ``func.func`` per module and operand types, and a
``func.call`` of it at each use, as JAX lowers its ``threefry2x32_p`` (outlined, not inlined).

The function body is the hash written with the primitives' wrappers (``lax``'s ops) and
traced once per operand types: on CPU, as in JAX, the five groups of four rounds are a
rolled ``fori_loop`` whose carry holds the key schedule and the two rotation vectors, each
step rotating them by one; elsewhere (as JAX's default GPU lowering) the rounds are
unrolled. The key words keep their own shape (a column of keys is not widened to the
counters' shape). A sampler that draws inside a ``while_loop`` (poisson, gamma) thus carries
a call of a small loop, not ~100 inlined ops per draw, and XLA compiles the program JAX's
does.
"""

import functools

import numpy as np

from lowering import runtime
from lowering.call import emit_call
from lowering.mlir import lowering_rules
from xform import dtypes
from xform.core import ShapedArray
from xform.interpret.staging import trace_to_jaxpr
from xform.primitives import elementwise, indexing, loops, structural
from xform.primitives.threefry import PARITY, ROTATIONS, threefry2x32_p

_U32 = np.dtype(np.uint32)


def _rotate_left(x, r):
    """``x`` rotated left by ``r`` bits (``r`` a uint32 scalar, traced or not)."""
    return elementwise.bitwise_or(
        elementwise.shift_left(x, r),
        elementwise.shift_right_logical(x, elementwise.sub(_U32.type(32), r)),
    )


def _round(x1, x2, r):
    x1 = elementwise.add(x1, x2)
    return x1, elementwise.bitwise_xor(x1, _rotate_left(x2, r))


def _hash_rolled(k1, k2, x1, x2):
    ks = (k1, k2, elementwise.bitwise_xor(elementwise.bitwise_xor(k1, k2), _U32.type(PARITY)))
    x1, x2 = elementwise.add(x1, ks[0]), elementwise.add(x2, ks[1])
    rotations = tuple(np.array(r, _U32) for r in ROTATIONS)

    def step(i, carry):
        x1, x2, ks, rotations = carry
        for j in range(4):
            x1, x2 = _round(x1, x2, indexing.index_in_dim(rotations[0], j, keepdims=False))
        x1 = elementwise.add(x1, ks[0])
        # the step index is int64 under x64: convert it before adding
        x2 = elementwise.add(
            elementwise.add(x2, ks[1]),
            elementwise.add(elementwise.convert_element_type(i, _U32), _U32.type(1)),
        )
        return x1, x2, (ks[1], ks[2], ks[0]), (rotations[1], rotations[0])

    x1, x2, _, _ = loops.fori_loop(0, 5, step, (x1, x2, (ks[1], ks[2], ks[0]), rotations))
    return x1, x2


def _hash_unrolled(k1, k2, x1, x2):
    ks = (k1, k2, elementwise.bitwise_xor(elementwise.bitwise_xor(k1, k2), _U32.type(PARITY)))
    x1, x2 = elementwise.add(x1, ks[0]), elementwise.add(x2, ks[1])
    for i in range(1, 6):
        for r in ROTATIONS[(i - 1) % 2]:
            x1, x2 = _round(x1, x2, _U32.type(r))
        x1 = elementwise.add(x1, ks[i % 3])
        x2 = elementwise.add(elementwise.add(x2, ks[(i + 1) % 3]), _U32.type(i))
    return x1, x2


def _broadcast(x, shape):
    if x.aval.shape == shape:
        return x
    return structural.broadcast_in_dim(x, shape, tuple(range(x.aval.ndim)))


@functools.lru_cache(maxsize=256)
def _hash_jaxpr(avals_in, rolled):
    """The traced hash for these operand types (cached: the module context emits one
    function per jaxpr, so a stable jaxpr per types means one function per types)."""
    out_shape = tuple(np.broadcast_shapes(*(a.shape for a in avals_in)))

    def fn(k1, k2, x1, x2):
        # Counters take the result shape (the loop carries them); the key words take their
        # common shape (the loop rotates the key schedule, so its words share one type),
        # which may stay smaller than the result, as JAX's (a column of keys, say).
        key_shape = tuple(np.broadcast_shapes(k1.aval.shape, k2.aval.shape))
        k1, k2 = (_broadcast(k, key_shape) for k in (k1, k2))
        x1, x2 = (_broadcast(x, out_shape) for x in (x1, x2))
        return list((_hash_rolled if rolled else _hash_unrolled)(k1, k2, x1, x2))

    return trace_to_jaxpr(fn, list(avals_in), "tracing threefry2x32 for lowering")


def _threefry2x32_lower(ctx, k1, k2, x1, x2):
    avals = tuple(ShapedArray(a.shape, dtypes.uint32) for a in ctx.avals_in)
    closed = _hash_jaxpr(avals, runtime.platform() == "cpu")
    return emit_call(ctx, [k1, k2, x1, x2], closed, "threefry2x32")


lowering_rules[threefry2x32_p] = _threefry2x32_lower
