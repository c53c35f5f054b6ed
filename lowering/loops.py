"""Lowering of the loops: ``stablehlo.while`` for ``while`` and for ``scan``.

A ``while`` passes its consts through the loop with the carry, as JAX does, so its regions
read only their block arguments. A ``scan`` is a ``while`` over a trip counter whose body
takes each iteration's ``xs`` slice with ``dynamic_slice`` and writes its ``ys`` into
buffers allocated before the loop with ``dynamic_update_slice``; ``reverse`` only changes
the index. With ``unroll = u`` one trip runs ``u`` copies of the body; the ``length % u``
iterations left over run in a second loop of one copy per trip.
"""

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from lowering.mlir import aval_to_ir, constant, full_like_aval, lower_jaxpr, lowering_rules
from xform.primitives import scan, while_loop


def _while_lower(ctx, *args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    nconsts = cond_nconsts + body_nconsts
    types = [aval_to_ir(a) for a in ctx.avals_in]
    op = hlo.WhileOp(types, list(args))
    cond_block = op.regions[0].blocks.append(*types)
    with ir.InsertionPoint(cond_block):
        a = list(cond_block.arguments)
        (pred,) = lower_jaxpr(ctx.module, cond_jaxpr.jaxpr, [], a[:cond_nconsts] + a[nconsts:])
        hlo.return_([pred])
    body_block = op.regions[1].blocks.append(*types)
    with ir.InsertionPoint(body_block):
        a = list(body_block.arguments)
        outs = lower_jaxpr(ctx.module, body_jaxpr.jaxpr, [], a[cond_nconsts:])
        hlo.return_(a[:nconsts] + outs)
    return list(op.results)[nconsts:]


lowering_rules[while_loop.while_p] = _while_lower


def _i32(value):
    return constant(np.int32(value))


def _lt(x, y):
    return hlo.compare(
        x,
        y,
        hlo.ComparisonDirectionAttr.get("LT"),
        compare_type=hlo.ComparisonTypeAttr.get("SIGNED"),
    )


def _scan_loop(ctx, jaxpr, consts, carry, xs, ys, *, start, trips, copies, length, reverse):
    """A ``stablehlo.while`` running ``trips`` trips of ``copies`` iterations each, the first
    being iteration ``start``; returns the carry and the ys buffers after it."""
    # The loop state in JAX's order (its scan is a while_loop closing over the consts and
    # xs): the loop-invariant operands first, then the trip counter, the carry and the ys.
    nc, nk, nx = len(consts), len(carry), len(xs)
    operands = [*consts, *xs, _i32(0), *carry, *ys]
    types = [v.type for v in operands]
    op = hlo.WhileOp(types, operands)
    cond_block = op.regions[0].blocks.append(*types)
    with ir.InsertionPoint(cond_block):
        hlo.return_([_lt(cond_block.arguments[nc + nx], _i32(trips))])
    body_block = op.regions[1].blocks.append(*types)
    with ir.InsertionPoint(body_block):
        a = list(body_block.arguments)
        consts, xs, trip = a[:nc], a[nc : nc + nx], a[nc + nx]
        carry, ys = a[nc + nx + 1 : nc + nx + 1 + nk], a[nc + nx + 1 + nk :]
        first = (
            trip
            if copies == 1 and start == 0
            else hlo.add(hlo.multiply(trip, _i32(copies)), _i32(start))
        )
        for k in range(copies):
            step = hlo.add(first, _i32(k)) if k else first
            index = hlo.subtract(_i32(length - 1), step) if reverse else step
            slices = [_index(x, index) for x in xs]
            outs = lower_jaxpr(ctx.module, jaxpr.jaxpr, [], consts + carry + slices)
            carry = outs[:nk]
            ys = [_update(buf, y, index) for buf, y in zip(ys, outs[nk:], strict=True)]
        hlo.return_([*consts, *xs, hlo.add(trip, _i32(1)), *carry, *ys])
    results = list(op.results)
    return results[nc + nx + 1 : nc + nx + 1 + nk], results[nc + nx + 1 + nk :]


def _index(x, index):
    """``x[index]`` along the leading axis."""
    shape = ir.RankedTensorType(x.type).shape
    zero = _i32(0)
    window = hlo.dynamic_slice(
        x, [index] + [zero] * (len(shape) - 1), ir.DenseI64ArrayAttr.get([1] + shape[1:])
    )
    elt = ir.RankedTensorType(x.type).element_type
    return hlo.reshape(ir.RankedTensorType.get(shape[1:], elt), window)


def _update(buf, y, index):
    """``buf`` with ``y`` written at ``index`` along the leading axis."""
    t = ir.RankedTensorType(y.type)
    row = hlo.reshape(ir.RankedTensorType.get([1] + list(t.shape), t.element_type), y)
    zero = _i32(0)
    return hlo.dynamic_update_slice(buf, row, [index] + [zero] * len(t.shape))


def _scan_lower(ctx, *args, jaxpr, num_consts, num_carry, length, reverse, unroll, linear):
    consts = list(args[:num_consts])
    carry = list(args[num_consts : num_consts + num_carry])
    xs = list(args[num_consts + num_carry :])
    ys = [full_like_aval(0, a) for a in ctx.avals_out[num_carry:]]
    copies = max(1, min(unroll or length, length))  # unroll=0: the whole loop, as JAX
    trips, rest = divmod(length, copies)
    common = dict(length=length, reverse=reverse)
    if trips:
        carry, ys = _scan_loop(
            ctx, jaxpr, consts, carry, xs, ys, start=0, trips=trips, copies=copies, **common
        )
    if rest:
        carry, ys = _scan_loop(
            ctx, jaxpr, consts, carry, xs, ys, start=trips * copies, trips=rest, copies=1, **common
        )
    return carry + ys


lowering_rules[scan.scan_p] = _scan_lower
