"""The primitive of ``pmap``: ``pmap[jaxpr=..., axis_name=..., axis_size=n, in_axes, out_axes]``
runs a closed, const-free per-device jaxpr on ``n`` devices.

Its operands and results are whole arrays: operand ``i`` is split along ``in_axes[i]`` (one
slice per device) or, where that is None, given whole to every device; result ``j`` is the
per-device results stacked along ``out_axes[j]``, or, where None, the (equal) result of one
device. Transformations rewrite the per-device jaxpr and bind another ``pmap``: the JVP is
the pmap of the body's JVP, reverse mode splits the body into a known and an unknown pmap
whose residuals stay on their devices (mapped along 0), and the transpose is the pmap of
the transposed body. ``vmap`` of a ``pmap`` maps the body.

Execution is SPMD with XLA replicas: see ``xform/api/pmap.py`` (a top-level call) and
``lowering/pmap.py`` (a pmap inside a jit or inside another pmap).
"""

import weakref

import numpy as np

from xform import core
from xform.core import Primitive, ShapedArray, abstract_eval_rules, get_aval
from xform.interpret import ad, batching, partial_eval, transpose
from xform.interpret.batching import moveaxis, not_mapped
from xform.primitives.call import (
    call_abstract_eval,
    call_jvp,
    split_jaxpr,
    transposed_jaxpr,
)
from xform.primitives.reductions import reduce_sum

pmap_p = Primitive("pmap", multiple_results=True)


def unmapped_aval(aval, axis):
    """The per-device type of an operand of type ``aval`` split along ``axis``."""
    if axis is None:
        return aval
    return ShapedArray(aval.shape[:axis] + aval.shape[axis + 1 :], aval.dtype, aval.weak_type)


def _pmap_abstract_eval(
    *avals, jaxpr, name, axis_name, axis_size, in_axes, out_axes, devices, donated
):
    for i, (a, ax) in enumerate(zip(avals, in_axes, strict=True)):
        if ax is not None and a.shape[ax] != axis_size:
            raise ValueError(
                f"pmap of {name}: operand {i} of type {a.str_short()} has size "
                f"{a.shape[ax]} along its mapped axis {ax}, but the axis "
                f"{axis_name!r} has size {axis_size}"
            )
    per_device = [unmapped_aval(a, ax) for a, ax in zip(avals, in_axes, strict=True)]
    outs = call_abstract_eval(f"pmap of {name}", per_device, jaxpr)
    return [batching.batched_aval(a, ax, axis_size) for a, ax in zip(outs, out_axes, strict=True)]


abstract_eval_rules[pmap_p] = _pmap_abstract_eval


def bind_like(params, args, jaxpr, in_axes, out_axes, name=None):
    """Bind ``pmap_p`` with ``params`` but another body and axes (donation does not carry
    over to transformed programs)."""
    return pmap_p.bind(
        *args,
        **{
            **params,
            "jaxpr": jaxpr,
            "in_axes": tuple(in_axes),
            "out_axes": tuple(out_axes),
            "donated": None,
            "name": name or params["name"],
        },
    )


def replicas_needed(jaxpr):
    """How many devices a jaxpr's pmaps need at once: the largest product of the sizes of
    nested pmaps (1 when it has none)."""
    hit = _replicas.get(jaxpr)
    if hit is not None:
        return hit
    count = 1
    for eqn in jaxpr.eqns:
        inner = max((replicas_needed(j) for j in core.subjaxprs(eqn.params)), default=1)
        if eqn.primitive is pmap_p:
            inner *= eqn.params["axis_size"]
        count = max(count, inner)
    _replicas[jaxpr] = count
    return count


_replicas = weakref.WeakKeyDictionary()


# --------------------------------------------------------------------------- jvp


def _pmap_jvp(primals, tangents, **params):
    in_axes, out_axes = params["in_axes"], params["out_axes"]

    def bind(body, operands, num_consts, nonzeros, out_nonzeros):
        # tangents are split over the devices as their primals are
        return bind_like(
            params,
            operands,
            body,
            [None] * num_consts + list(in_axes) + _pick(in_axes, nonzeros),
            list(out_axes) + _pick(out_axes, out_nonzeros),
            f"jvp({params['name']})",
        )

    return call_jvp(params["jaxpr"], primals, tangents, bind)


def _pick(xs, mask):
    return [x for x, m in zip(xs, mask, strict=True) if m]


ad.jvp_rules[pmap_p] = _pmap_jvp


# --------------------------------------------------------------------------- partial eval


def _pmap_partial_eval(trace, args, params):
    """Run the known part of the body now (a pmap of its own, its residuals left on their
    devices: mapped along 0), and stage a pmap of the unknown part that reads them."""
    jaxpr, in_axes, out_axes = params["jaxpr"], params["in_axes"], params["out_axes"]
    unknowns = tuple(trace.is_unknown(x) for x in args)
    split = split_jaxpr(jaxpr, unknowns, f"partially evaluating pmap of `{params['name']}`")
    known_jaxpr, known_consts, unknown_jaxpr, out_unknowns, num_res = split
    known_args = [x for x, u in zip(args, unknowns, strict=True) if not u]
    known_in = [a for a, u in zip(in_axes, unknowns, strict=True) if not u]
    known_out = [a for a, u in zip(out_axes, out_unknowns, strict=True) if not u]
    with core.set_current_trace(trace.parent):
        known_outs = bind_like(
            params,
            [*known_consts, *known_args],
            known_jaxpr,
            [None] * len(known_consts) + known_in,
            known_out + [0] * num_res,
        )
    residuals = known_outs[len(known_outs) - num_res :]
    unknown_args = [x for x, u in zip(args, unknowns, strict=True) if u]
    unknown_in = [0] * num_res + [a for a, u in zip(in_axes, unknowns, strict=True) if u]
    unknown_out = [a for a, u in zip(out_axes, out_unknowns, strict=True) if u]
    unknown_params = {
        **params,
        "jaxpr": unknown_jaxpr,
        "in_axes": tuple(unknown_in),
        "out_axes": tuple(unknown_out),
        "donated": None,
    }
    operands = residuals + unknown_args
    out_avals = _pmap_abstract_eval(*[get_aval(x) for x in operands], **unknown_params)
    unknown_outs = iter(trace.stage(pmap_p, operands, unknown_params, out_avals))
    known_outs = iter(known_outs[: len(known_outs) - num_res])
    return [next(unknown_outs) if u else next(known_outs) for u in out_unknowns]


partial_eval.partial_eval_rules[pmap_p] = _pmap_partial_eval


# --------------------------------------------------------------------------- transpose


def _pmap_transpose(cts, *invals, **params):
    jaxpr, in_axes, out_axes = params["jaxpr"], params["in_axes"], params["out_axes"]
    size = params["axis_size"]
    linear = tuple(transpose.is_undefined(x) for x in invals)
    body, consts = transposed_jaxpr(jaxpr, linear)
    values = [x for x in invals if not transpose.is_undefined(x)]
    value_axes = [a for x, a in zip(invals, in_axes, strict=True) if not transpose.is_undefined(x)]
    # An unmapped result is one device's value (all are equal): its cotangent is shared out
    # evenly, so that the devices' contributions add up to it once.
    cts = [
        ad.instantiate(ct) if a is not None else _divide(ad.instantiate(ct), size)
        for ct, a in zip(cts, out_axes, strict=True)
    ]
    # An unmapped linear input gets one cotangent per device; they are summed here.
    ct_axes = [0 if a is None else a for lin, a in zip(linear, in_axes, strict=True) if lin]
    cts_in = bind_like(
        params,
        [*consts, *values, *cts],
        body,
        [None] * len(consts) + value_axes + list(out_axes),
        ct_axes,
        f"transpose({params['name']})",
    )
    cts_in = iter(cts_in)
    out = []
    for lin, a in zip(linear, in_axes, strict=True):
        if not lin:
            out.append(None)
            continue
        ct = next(cts_in)
        out.append(reduce_sum(ct, (0,)) if a is None else ct)
    return out


def _divide(x, n):
    return x / np.asarray(n, get_aval(x).dtype)


transpose.transpose_rules[pmap_p] = _pmap_transpose


# --------------------------------------------------------------------------- vmap


def _pmap_batch(axis, args, dims, **params):
    """vmap of pmap: each device's value gets the vmapped dimension first, and the body is
    batched along it."""
    jaxpr, in_axes, out_axes = params["jaxpr"], params["in_axes"], params["out_axes"]
    new_args, body_dims, new_in = [], [], []
    for x, d, a in zip(args, dims, in_axes, strict=True):
        if d is not_mapped:
            new_args.append(x)
            body_dims.append(not_mapped)
            new_in.append(a)
        elif a is None:
            new_args.append(moveaxis(x, d, 0))
            body_dims.append(0)
            new_in.append(None)
        else:  # the full value as (devices, batch, per-device dims...)
            p = a if a < d else a + 1  # the device axis of x
            devices_first = moveaxis(x, p, 0)
            new_args.append(moveaxis(devices_first, d + 1 if d < p else d, 1))
            body_dims.append(0)
            new_in.append(0)
    body, consts, out_batched = batching.batch_jaxpr(jaxpr, axis, body_dims)
    outs = bind_like(
        params,
        [*consts, *new_args],
        body,
        [None] * len(consts) + new_in,
        [a if a is None or not b else 0 for a, b in zip(out_axes, out_batched, strict=True)],
        f"vmap({params['name']})",
    )
    results, result_dims = [], []
    for x, a, b in zip(outs, out_axes, out_batched, strict=True):
        if not b:
            results.append(x)
            result_dims.append(not_mapped)
        elif a is None:
            results.append(x)
            result_dims.append(0)
        else:  # (devices, batch, ...) -> the batch first, the device axis at a after it
            results.append(moveaxis(x, 0, a + 1))
            result_dims.append(0)
    return results, result_dims


batching.batch_rules[pmap_p] = _pmap_batch
