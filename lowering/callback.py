"""Lowering of the callback family: XLA host callbacks, jaxlib's mechanism as JAX 0.10.2 uses it.

Each call is a ``stablehlo.custom_call`` to jaxlib's Python-callback FFI target
(``xla_ffi_python_cpu_callback``, or ``xla_ffi_python_gpu_callback`` on GPUs) whose
``mhlo.backend_config`` ``{index = i : ui64}`` names entry ``i`` of the module's host
callbacks: the Python functions collected on the ``ModuleContext`` while lowering, which the
runtime hands to ``compile_and_load(..., host_callbacks=...)``. The program is not split:
XLA calls back into Python where the custom call sits (in loop bodies every iteration).

``debug_callback`` and ``io_callback`` have ``has_side_effect = true`` so that XLA neither
drops nor merges them; ``pure_callback`` may be dropped when unused, as in JAX.

Ordered callbacks thread a ``!stablehlo.token`` from one to the next within a block (a
function body or control-flow region, each starting a fresh token), so XLA runs them in
program order. A loop, branch or call holding ordered callbacks joins the chain of the block
around it (``mlir.ordered_region_rule``): its operands pass through an optimization barrier
with the token, and the chain continues from its results, or, for a result-less
``stablehlo.case``, from a token its branches return. (A result-less nested ``jit`` call
holding ordered callbacks is ordered after what precedes it, not before what follows.)
"""

import weakref

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import sdy
from jaxlib.mlir.dialects import stablehlo as hlo

from lowering import mlir, runtime
from lowering.mlir import aval_to_ir, lowering_rules
from xform.core import subjaxprs
from xform.primitives import callback as cb

# ModuleContext -> {block: the last ordered callback's token in that block}
_tokens = weakref.WeakKeyDictionary()


def _target():
    platform = runtime.platform()
    if platform not in ("cpu", "gpu"):
        raise NotImplementedError(
            f"host callbacks are not supported on the {platform} "
            "backend (xform lowers them for CPU and GPU)"
        )
    return f"xla_ffi_python_{platform}_callback"


def _layouts(types):
    index = ir.IndexType.get()
    return ir.ArrayAttr.get(
        [
            ir.DenseIntElementsAttr.get(np.arange(n - 1, -1, -1, dtype=np.int64), type=index)
            if n
            else ir.DenseIntElementsAttr.get(np.zeros((0,), np.int64), type=index)
            for n in types
        ]
    )


def host_function(name, callback, avals_in, result_avals):
    """The function XLA calls: NumPy buffers in, the user's function on ``xform.Array``s
    (copies: the buffers are XLA's, valid only during the call), checked NumPy results out."""

    def call(*buffers):
        args = []
        for buf, aval in zip(buffers, avals_in, strict=True):
            host = np.array(buf, aval.dtype)
            host.flags.writeable = False
            args.append(cb.as_callback_argument(host))
        outs = callback(*args)
        if result_avals is None:
            return ()
        # (not np.ascontiguousarray: it would make 0-d results 1-d)
        return tuple(
            v if v.flags.c_contiguous else v.copy(order="C")
            for v in cb.check_results(name, outs, result_avals)
        )

    return call


def emit_callback(ctx, function, operands, result_avals, *, has_side_effect, ordered):
    """Emit the custom call running ``function`` (NumPy buffers in, a tuple out) on the host;
    returns its results."""
    mctx = ctx.module
    operands = list(operands)
    operand_ranks = [a.ndim for a in ctx.avals_in]
    result_types = [aval_to_ir(a) for a in result_avals]
    result_ranks = [a.ndim for a in result_avals]
    block = token = None
    if ordered:  # a token in, a token out: the call waits for the last ordered one
        block = ir.InsertionPoint.current.block
        tokens = _tokens.setdefault(mctx, {})
        token = tokens.get(block)
        if token is None:
            token = hlo.after_all([])
        operands.insert(0, token)
        operand_ranks.insert(0, 0)
        result_types.insert(0, hlo.TokenType.get())
        result_ranks.insert(0, 0)
        untokened = function

        def function(token, *args):
            return (token, *untokened(*args))

    mctx.host_callbacks.append(function)
    attributes = {
        "call_target_name": ir.StringAttr.get(_target()),
        "has_side_effect": ir.BoolAttr.get(has_side_effect),
        "backend_config": ir.StringAttr.get(""),
        "api_version": ir.IntegerAttr.get(ir.IntegerType.get_signless(32), 1),
        "called_computations": ir.ArrayAttr.get([]),
        "operand_layouts": _layouts(operand_ranks),
        "result_layouts": _layouts(result_ranks),
    }
    op = hlo.CustomCallOp.build_generic(
        results=result_types, operands=operands, attributes=attributes
    )
    index = len(mctx.host_callbacks) - 1
    op.operation.attributes["mhlo.backend_config"] = ir.DictAttr.get(
        {"index": ir.IntegerAttr.get(ir.IntegerType.get_unsigned(64), index)}
    )
    _place_callback(mctx, op, len(result_types))
    results = list(op.results)
    if ordered:
        _tokens[mctx][block] = results[0]
        results = results[1:]
    return results


# As JAX's: a callback runs on the program's first device (a "maximal" sharding over a mesh
# of that device alone), or, inside a shard_map's region, on each device (the empty mesh).
_ONE_DEVICE = (
    "maximal_mesh_0",
    "<[], device_ids=[0]>",
    "{axes = [], device_ids = dense<0> : tensor<1xi64>}",
)
_EACH_DEVICE = ("empty_mesh", "<[]>", "{axes = []}")


def _place_callback(mctx, op, num_results):
    """Give a callback's custom call JAX's ``sdy.sharding`` (one entry per result, at least
    one), declaring its mesh at the top of the module once."""
    if mctx.num_replicas != 1 and not mctx.spmd:  # a pmap's replicas: no Shardy annotations
        return
    name, mesh, description = _EACH_DEVICE if mctx.spmd else _ONE_DEVICE
    if name not in mctx.symbols:
        mctx.symbols.add(name)
        body = mctx.module.body
        # after the meshes already declared (JAX's order: a jit's own mesh first)
        first = next((o for o in body.operations if o.operation.name != "sdy.mesh"), None)
        with ir.InsertionPoint(first) if first is not None else ir.InsertionPoint(body):
            decl = sdy.MeshOp(name, ir.Attribute.parse(f"#sdy.mesh{mesh}"))
        decl.attributes["stablehlo.mesh"] = ir.Attribute.parse(description)
    entries = ", ".join([f"<@{name}, []>"] * max(num_results, 1))
    op.operation.attributes["sdy.sharding"] = ir.Attribute.parse(
        f"#sdy.sharding_per_value<[{entries}]>"
    )


def _debug_callback_lower(ctx, *args, callback, ordered, partitioned):
    function = host_function("debug.callback", callback, ctx.avals_in, None)
    return emit_callback(ctx, function, args, [], has_side_effect=True, ordered=ordered)


def _pure_callback_lower(ctx, *args, callback, result_avals, sharding, vmap_method):
    function = host_function("pure_callback", callback, ctx.avals_in, result_avals)
    return emit_callback(ctx, function, args, ctx.avals_out, has_side_effect=False, ordered=False)


def _io_callback_lower(ctx, *args, callback, result_avals, sharding, ordered):
    function = host_function("io_callback", callback, ctx.avals_in, result_avals)
    return emit_callback(ctx, function, args, ctx.avals_out, has_side_effect=True, ordered=ordered)


def _ordered_region(rule, ctx, args, params):
    """Lower an equation holding jaxprs (a loop, a branch, a call) in the chain of ordered
    callbacks around it when its jaxprs hold ordered ones: its operands wait for the last
    ordered callback before it (an optimization barrier with the token), and the ordered
    callbacks after it wait for its results, or, for a ``stablehlo.case`` without results,
    for the token its branches then return."""
    if not any(cb.has_ordered_effects(j) for j in subjaxprs(params)):
        return rule(ctx, *args, **params)
    block = ir.InsertionPoint.current.block
    tokens = _tokens.setdefault(ctx.module, {})
    token = tokens.get(block)
    if token is None:
        token = hlo.after_all([])
    token, *args = hlo.OptimizationBarrierOp([token, *args]).results
    outs = rule(ctx, *args, **params)
    if outs:
        token, *outs = hlo.OptimizationBarrierOp([token, *outs]).results
    else:
        ops = block.operations
        last = ops[len(ops) - 1].operation
        if last.name == "stablehlo.case" and not last.results:
            token = _case_returning_token(last, tokens)
    tokens[block] = token
    return outs


def _case_returning_token(case, tokens):
    """``case`` (no results) rebuilt to return the last ordered token of each branch, so
    that what follows can wait for it; its blocks move over, their returns get the token."""
    new = hlo.CaseOp([hlo.TokenType.get()], case.operands[0], len(case.regions))
    for old_region, region in zip(case.regions, new.regions, strict=True):
        branch = old_region.blocks[0]
        branch.append_to(region)
        ops = branch.operations
        ops[len(ops) - 1].operation.erase()  # the result-less stablehlo.return
        with ir.InsertionPoint(branch):
            token = tokens.get(branch)
            hlo.ReturnOp([token if token is not None else hlo.after_all([])])
    case.erase()
    return new.results[0]


_ordered_region.applies = cb.has_ordered_effects
mlir.ordered_region_rule = _ordered_region

lowering_rules[cb.debug_callback_p] = _debug_callback_lower
lowering_rules[cb.pure_callback_p] = _pure_callback_lower
lowering_rules[cb.io_callback_p] = _io_callback_lower
