"""Lowering for ``xform.export``: modules in JAX's export calling convention, their portable
(versioned StableHLO bytecode) form, and the rule that inlines an exported module into the
module being lowered.

The calling convention (version 9 and 10, as JAX 0.10.2): a public ``@main`` whose arguments
are the kept array arguments, preceded by an ``i32`` platform index
(``jax.global_constant = "_platform_index"``) when the module serves several platforms;
results carry ``jax.result_info``; the module says ``jax.uses_shape_polymorphism``, true when
it needs shape refinement before compilation (symbolic dimensions, a platform index).
"""

import io
import re

import numpy as np
from jaxlib import _jax
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import func
from jaxlib.mlir.dialects import stablehlo as hlo

from lowering import mlir, runtime
from lowering.mlir import aval_to_ir, lowering_rules

# Custom-call targets with compatibility guarantees (JAX's list; lapack/cusolver FFI kernels
# by their naming pattern).
_STABLE_TARGETS = {
    "Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape", "annotate_device_placement",
    "cu_threefry2x32_ffi", "hip_threefry2x32_ffi", "Eigh", "Qr",
    "ProductOfElementaryHouseholderReflectors", "LuDecomposition", "ApproxTopK",
    "stablehlo.dynamic_approx_top_k", "tf.call_tf_function", "tpu_custom_call",
    "AllocateBuffer", "mosaic_gpu_v2", "stablehlo.dynamic_reduce_window",
    "stablehlo.dynamic_rng_bit_generator", "stablehlo.dynamic_top_k", "shape_assertion",
}
_STABLE_KERNEL = re.compile(r"^(lapack|cusolver|hipsolver|cublas|hipblas|cu|hip)_\w+_ffi$")


def _bool_attr(value):
    return ir.BoolAttr.get(bool(value))


def export_module(jaxpr, consts, name, kept, nr_platforms, result_info):
    """A verified module in JAX's export convention computing ``jaxpr`` (its leading invars
    bound to ``consts``, the rest its arguments, of which only those at ``kept`` reach
    ``main``)."""
    nconsts = len(consts)
    arg_vars = jaxpr.invars[nconsts:]
    multi = nr_platforms > 1

    def emit_main(mctx):
        i32 = ir.RankedTensorType.get([], ir.IntegerType.get_signless(32))
        in_types = ([i32] if multi else []) + [aval_to_ir(arg_vars[k].aval) for k in kept]
        out_types = [aval_to_ir(v.aval) for v in jaxpr.outvars]
        with ir.InsertionPoint(mctx.module.body):
            fn = func.FuncOp("main", ir.FunctionType.get(in_types, out_types))
        fn.attributes["sym_visibility"] = ir.StringAttr.get("public")
        arg_attrs = [ir.DictAttr.get({}) for _ in in_types]
        if multi:
            arg_attrs[0] = ir.DictAttr.get(
                {"jax.global_constant": ir.StringAttr.get("_platform_index")})
        fn.attributes["arg_attrs"] = ir.ArrayAttr.get(arg_attrs)
        fn.attributes["res_attrs"] = ir.ArrayAttr.get(
            [ir.DictAttr.get({"jax.result_info": ir.StringAttr.get(info)})
             for info in result_info])
        block = fn.add_entry_block()
        with ir.InsertionPoint(block):
            args = [None] * len(arg_vars)  # the dropped arguments are never read
            for k, arg in zip(kept, list(block.arguments)[int(multi):], strict=True):
                args[k] = arg
            const_values = [mlir.constant(c, v.aval.dtype)
                            for v, c in zip(jaxpr.invars[:nconsts], consts, strict=True)]
            outs = mlir.lower_jaxpr(mctx, jaxpr, [], const_values + args)
            func.ReturnOp(outs)
        mctx.module.operation.attributes["jax.uses_shape_polymorphism"] = _bool_attr(multi)
        return fn

    # JAX's module name: jit_<name> with characters other than word, "." and "-" replaced.
    return mlir.build_module(re.sub(r"[^\w.-]", "_", f"jit_{name}").rstrip("_"), 1,
                             emit_main)


def custom_call_targets(module):
    """The targets of the module's ``stablehlo.custom_call`` ops, with their text."""
    found = []

    def walk(op):
        if op.name == "stablehlo.custom_call":
            found.append((ir.StringAttr(op.attributes["call_target_name"]).value, str(op)))
        for region in op.regions:
            for block in region:
                for inner in block:
                    walk(inner.operation)

    with mlir._lock, mlir.context():
        walk(module.operation)
    return found


def unstable_custom_calls(module, allowed):
    """The custom calls of ``module`` without compatibility guarantees, unless in
    ``allowed`` (or ``allowed`` holds ``"ALL"``)."""
    if "ALL" in allowed:
        return []
    return [text for target, text in custom_call_targets(module)
            if target not in _STABLE_TARGETS and target not in allowed and
            not _STABLE_KERNEL.match(target)]


def serialize(module):
    """The portable artifact of ``module``: versioned StableHLO bytecode for a consumer at
    least four weeks old, as JAX writes it."""
    target = hlo.get_version_from_compatibility_requirement(
        hlo.StablehloCompatibilityRequirement.WEEK_4)
    with_sdy = bool(getattr(runtime.default_device().client, "serialize_with_sdy", False))
    with mlir._lock, mlir.context():
        return _jax.mlir.serialize_portable_artifact(module, target, with_sdy)


def deserialize(serialized):
    """The module of a portable artifact, in xform's MLIR context."""
    with mlir._lock, mlir.context():
        return _jax.mlir.deserialize_portable_artifact(serialized, mlir.context())


def module_text(serialized):
    """The MLIR text of a portable artifact."""
    with mlir._lock, mlir.context():
        return str(deserialize(serialized))


# --------------------------------------------------------------------------- calling


def _bytecode(module):
    out = io.BytesIO()
    module.operation.write_bytecode(file=out)
    return out.getvalue()


def _merge(dst, src, prefix):
    """Move every symbol of ``src`` into ``dst``, private and renamed ``prefix.name`` (xform
    never makes a symbol with a dot, so none can clash); return the new name of main."""
    src_table = ir.SymbolTable(src.operation)
    dst_table = ir.SymbolTable(dst.operation)
    names = [ir.StringAttr(op.attributes["sym_name"]).value for op in src.body.operations
             if "sym_name" in op.attributes]
    renamed = {}
    for name in names:
        new = f"{prefix}.{name}"
        k = 0
        while new in dst_table:
            k += 1
            new = f"{prefix}_{k}.{name}"
        renamed[name] = new
    for op in src.body.operations:
        if "sym_name" in op.attributes:
            src_table.set_symbol_name(op, renamed[ir.StringAttr(op.attributes["sym_name"]).value])
            op.attributes["sym_visibility"] = ir.StringAttr.get("private")
    for old, new in renamed.items():
        for op in src.body.operations:
            src_table.replace_all_symbol_uses(old, new, op)
    for op in list(src.body.operations):
        dst.body.append(op)
        dst_table.insert(op)
    return renamed["main"]


def _refined(src, in_avals, out_avals, platform_index):
    """``src`` (symbolic shapes, a platform index argument) as a module whose ``main`` takes
    ``in_avals`` and returns ``out_avals``, static throughout: a wrapper that converts the
    arguments to ``src``'s types and calls it, put through jaxlib's shape refinement."""
    wrapper = ir.Module.create()
    callee = _merge(wrapper, src, "refined")
    callee_op = ir.SymbolTable(wrapper.operation)[callee]
    callee_type = ir.FunctionType(ir.TypeAttr(callee_op.attributes["function_type"]).value)
    in_types = [aval_to_ir(a) for a in in_avals]
    out_types = [aval_to_ir(a) for a in out_avals]
    with ir.InsertionPoint(wrapper.body):
        fn = func.FuncOp("main", ir.FunctionType.get(in_types, out_types))
    fn.attributes["sym_visibility"] = ir.StringAttr.get("public")
    block = fn.add_entry_block()
    with ir.InsertionPoint(block):
        args = []
        if platform_index is not None:
            args.append(_convert(mlir.constant(np.int32(platform_index)),
                                 callee_type.inputs[0]))
        args += [_convert(a, t) for a, t in
                 zip(block.arguments, list(callee_type.inputs)[len(args):], strict=True)]
        call = func.CallOp(list(callee_type.results), ir.FlatSymbolRefAttr.get(callee), args)
        func.ReturnOp([_convert(r, t) for r, t in zip(call.results, out_types, strict=True)])
    try:
        refined = _jax.mlir.refine_polymorphic_shapes(
            _bytecode(wrapper), enable_shape_assertions=True, validate_static_shapes=True)
    except Exception as e:
        raise ValueError(f"Error refining the shapes of the exported module for arguments "
                         f"{[a.str_short() for a in in_avals]}: {e}") from e
    return ir.Module.parse(refined)


def _convert(x, typ):
    return x if x.type == typ else hlo.convert(typ, x)


def _call_exported_lower(ctx, *args, exported):
    if exported.nr_devices != 1:
        raise ValueError(f"Function {exported.fun_name} was exported for "
                         f"{exported.nr_devices} devices and is called in a context with 1 "
                         "devices, which is not allowed.")
    src = deserialize(exported.mlir_module_serialized)
    kept_avals = [ctx.avals_in[k] for k in exported.module_kept_var_idx]
    kept_args = [args[k] for k in exported.module_kept_var_idx]
    platform = exported.platform_index(current_platform())
    nr_platforms = len(exported.platforms)
    if exported.uses_global_constants or nr_platforms > 1:
        src = _refined(src, kept_avals, ctx.avals_out,
                       platform if nr_platforms > 1 else None)
    ctx.module.symbol_count += 1
    callee = _merge(ctx.module.module, src,
                    f"call_exported_{mlir.sanitize(exported.fun_name)}_"
                    f"{ctx.module.symbol_count}")
    out_types = [aval_to_ir(a) for a in ctx.avals_out]
    call = func.CallOp(out_types, ir.FlatSymbolRefAttr.get(callee), kept_args)
    return list(call.results)


def current_platform():
    """The platform being compiled for, in JAX's export names (cpu, cuda, rocm, tpu)."""
    platform = runtime.platform()
    if platform == "gpu":
        return "rocm" if "rocm" in str(runtime.default_device().client.platform_version) \
            else "cuda"
    return platform


def register(call_exported_p):
    lowering_rules[call_exported_p] = _call_exported_lower
