"""Lowering for ``xform.export``: modules in JAX's export calling convention, their portable
(versioned StableHLO bytecode) form, and the rule that inlines an exported module into the
module being lowered.

The calling convention (version 9 and 10, as JAX 0.10.2): a public ``@main`` whose arguments
are the kept array arguments, preceded by an ``i32`` platform index
(``jax.global_constant = "_platform_index"``) when the module serves several platforms;
results carry ``jax.result_info``; the module says ``jax.uses_shape_polymorphism``, true when
it needs shape refinement before compilation (symbolic dimensions, a platform index).
With symbolic dimensions (``_export_symbolic``), main computes the dimension variables and
calls ``_wrapped_jax_export_main``, lowered with dynamic shapes (``mlir.symbolic_shape_tensor``
set for its duration: dynamic broadcasts, reshapes and iotas; calls inlined).
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
    "Sharding",
    "SPMDFullToShardShape",
    "SPMDShardToFullShape",
    "annotate_device_placement",
    "cu_threefry2x32_ffi",
    "hip_threefry2x32_ffi",
    "Eigh",
    "Qr",
    "ProductOfElementaryHouseholderReflectors",
    "LuDecomposition",
    "ApproxTopK",
    "stablehlo.dynamic_approx_top_k",
    "tf.call_tf_function",
    "tpu_custom_call",
    "AllocateBuffer",
    "mosaic_gpu_v2",
    "stablehlo.dynamic_reduce_window",
    "stablehlo.dynamic_rng_bit_generator",
    "stablehlo.dynamic_top_k",
    "shape_assertion",
}
_STABLE_KERNEL = re.compile(r"^(lapack|cusolver|hipsolver|cublas|hipblas|cu|hip)_\w+_ffi$")


def _bool_attr(value):
    return ir.BoolAttr.get(bool(value))


def export_module(jaxpr, consts, name, kept, nr_platforms, result_info, describe=None):
    """A verified module in JAX's export convention computing ``jaxpr`` (its leading invars
    bound to ``consts``, the rest its arguments, of which only those at ``kept`` reach
    ``main``). With symbolic dimensions in the arguments' shapes, ``describe(i, d)`` names
    argument ``i``'s dimension ``d`` in the shape assertions' messages."""
    nconsts = len(consts)
    arg_vars = jaxpr.invars[nconsts:]
    multi = nr_platforms > 1
    if any(mlir.is_symbolic(v.aval.shape) for v in arg_vars):
        return _export_symbolic(jaxpr, consts, name, kept, multi, result_info, describe)

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
                {"jax.global_constant": ir.StringAttr.get("_platform_index")}
            )
        fn.attributes["arg_attrs"] = ir.ArrayAttr.get(arg_attrs)
        fn.attributes["res_attrs"] = ir.ArrayAttr.get(
            [ir.DictAttr.get(mlir.result_attrs(info)) for info in result_info]
        )
        block = fn.add_entry_block()
        with ir.InsertionPoint(block):
            args = [None] * len(arg_vars)  # the dropped arguments are never read
            for k, arg in zip(kept, list(block.arguments)[int(multi) :], strict=True):
                args[k] = arg
            const_values = [
                mlir.constant(c, v.aval.dtype)
                for v, c in zip(jaxpr.invars[:nconsts], consts, strict=True)
            ]
            outs = mlir.lower_jaxpr(mctx, jaxpr, [], const_values + args)
            func.ReturnOp(outs)
        mctx.module.operation.attributes["jax.uses_shape_polymorphism"] = _bool_attr(multi)
        return fn

    # JAX's module name: jit_<name> with characters other than word, "." and "-" replaced.
    return mlir.build_module(re.sub(r"[^\w.-]", "_", f"jit_{name}").rstrip("_"), 1, emit_main)


# --------------------------------------------------------------------------- symbolic shapes


def _i32(value):
    return mlir.constant(np.int32(value))


def _dim_value(node, values):
    """The i32 scalar value of a dimension expression's syntax tree (``_shape_poly``)."""
    op = node[0]
    if op == "const":
        return _i32(node[1])
    if op == "var":
        return values[node[1]]
    if op == "neg" and node[1][0] == "const":  # a constant: shape refinement folds no negate
        return _i32(-node[1][1])
    args = [_dim_value(c, values) for c in node[1:]]
    binary = {
        "+": hlo.add,
        "*": hlo.multiply,
        "floordiv": hlo.divide,
        "mod": hlo.remainder,
        "max": hlo.maximum,
        "min": hlo.minimum,
    }
    if op == "neg":
        return hlo.negate(args[0])
    if op == "non_negative":
        return hlo.maximum(args[0], _i32(0))
    out = args[0]
    for a in args[1:]:
        out = binary[op](out, a)
    return out


def _shape_tensor(values):
    def shape_tensor(shape):
        i32_1 = ir.RankedTensorType.get([1], ir.IntegerType.get_signless(32))
        parts = [
            hlo.reshape(
                i32_1, _i32(d) if isinstance(d, (int, np.integer)) else _dim_value(d.node, values)
            )
            for d in shape
        ]
        return parts[0] if len(parts) == 1 else hlo.concatenate(parts, 0)

    return shape_tensor


# The primitives whose lowering handles symbolic dimensions: those whose StableHLO op takes
# its result's shape from its type (dynamic), plus broadcasts and dimension values.
SYMBOLIC_OK = {
    "abs",
    "acos",
    "acosh",
    "add",
    "add_any",
    "and",
    "asin",
    "asinh",
    "atan",
    "atan2",
    "atanh",
    "broadcast_in_dim",
    "cbrt",
    "ceil",
    "clamp",
    "concatenate",
    "convert_element_type",
    "copy",
    "copy_p",
    "cos",
    "cosh",
    "dimension_as_value",
    "div",
    "dot_general",
    "eq",
    "erf",
    "erf_inv",
    "exp",
    "exp2",
    "expm1",
    "floor",
    "ge",
    "gt",
    "imag",
    "integer_pow",
    "is_finite",
    "le",
    "log",
    "log1p",
    "logistic",
    "lt",
    "max",
    "min",
    "mul",
    "ne",
    "neg",
    "not",
    "or",
    "pow",
    "real",
    "reduce_and",
    "reduce_max",
    "reduce_min",
    "reduce_or",
    "reduce_prod",
    "reduce_sum",
    "rem",
    "round",
    "rsqrt",
    "select_n",
    "sign",
    "sin",
    "sinh",
    "sqrt",
    "square",
    "stop_gradient",
    "sub",
    "tan",
    "tanh",
    "transpose",
    "xor",
    "squeeze",
    "expand_dims",
    "argmax",
    "argmin",
    "reshape",
    "iota",
    "slice",
    "pad",  # with constant padding (its abstract evaluation needs integers)
    "sort",
    # calls: inlined (lowering/call.py), their bodies checked in turn
    "jit",
    "custom_jvp_call",
    "custom_vjp_call",
}


def _symbolic_axes(aval):
    return {i for i, d in enumerate(aval.shape) if not isinstance(d, (int, np.integer))}


def _windows_skip_symbolic(eqn):
    # A window of one element, stride 1 and no padding along each symbolic axis: the op's
    # attributes do not depend on that axis' size.
    p = eqn.params
    return all(
        p["window_dimensions"][i] == 1
        and p["window_strides"][i] == 1
        and tuple(p["padding"][i]) == (0, 0)
        for i in _symbolic_axes(eqn.invars[0].aval)
    )


def _conv_symbolic_batch_only(eqn):
    lhs_spec, rhs_spec, out_spec = eqn.params["dimension_numbers"]
    return _symbolic_axes(eqn.invars[0].aval) <= {lhs_spec[0]} and not _symbolic_axes(
        eqn.invars[1].aval
    )


# The primitives whose lowering handles symbolic dimensions only in some positions.
SYMBOLIC_WHEN = {
    **{
        name: (lambda eqn: eqn.params["axis"] not in _symbolic_axes(eqn.invars[0].aval))
        for name in ("cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp")
    },
    **{
        name: _windows_skip_symbolic
        for name in ("reduce_window_sum", "reduce_window_max", "reduce_window_min")
    },
    "conv_general_dilated": _conv_symbolic_batch_only,
}


def _check_symbolic_support(jaxpr, name):
    for eqn in jaxpr.eqns:
        avals = [getattr(x, "aval", None) for x in (*eqn.invars, *eqn.outvars)]
        symbolic = (
            any(a is not None and mlir.is_symbolic(getattr(a, "shape", ())) for a in avals)
            or eqn.primitive.name == "dimension_as_value"
        )
        prim = eqn.primitive.name
        if (
            symbolic
            and prim not in SYMBOLIC_OK
            and not (prim in SYMBOLIC_WHEN and SYMBOLIC_WHEN[prim](eqn))
        ):
            shapes = ", ".join(str(a) for a in avals if a is not None)
            raise NotImplementedError(
                f"export of {name}: the primitive '{prim}' is not supported with "
                f"a symbolic dimension there (its operands and results: {shapes}); export with "
                "concrete shapes"
            )
        for p in eqn.params.values():
            sub = getattr(p, "jaxpr", p)
            if symbolic and hasattr(sub, "eqns"):
                _check_symbolic_support(sub, name)


def _assertion(ok, value, message):
    """JAX's ``shape_assertion`` custom call: the program fails with ``message`` ({0}: the
    value) unless ``ok``."""
    hlo.CustomCallOp(
        [],
        [ok, value],
        call_target_name=ir.StringAttr.get("shape_assertion"),
        has_side_effect=ir.BoolAttr.get(True),
        api_version=ir.IntegerAttr.get(ir.IntegerType.get_signless(32), 2),
        backend_config=None,
    ).attributes["error_message"] = ir.StringAttr.get(message)


def _dim_var_locations(arg_vars, kept, name):
    """Dimension variable -> (position among the kept arguments, dimension) where it is a
    dimension by itself: main reads it from there."""
    where = {}
    for pos, k in enumerate(kept):
        for d, e in enumerate(arg_vars[k].aval.shape):
            lin = None if isinstance(e, (int, np.integer)) else e.linear()
            if lin is not None and lin[1] == 0 and list(lin[0].values()) == [1]:
                where.setdefault(next(iter(lin[0])), (pos, d))
    all_vars = set()
    for v in arg_vars:
        for e in v.aval.shape:
            if not isinstance(e, (int, np.integer)):
                all_vars |= e.variables()
    missing = sorted(all_vars - set(where))
    if missing:
        raise NotImplementedError(
            f"export of {name}: the dimension variable '{missing[0]}' must be some "
            "argument's dimension by itself (xform solves a variable from such a dimension)"
        )
    return where


def _shape_assertions(main_args, arg_vars, kept, where, values, describe, specs):
    """JAX's assertions in main: each variable >= 1, every other symbolic dimension equal
    to its expression."""
    one = _i32(1)
    for v in sorted(where):
        pos, d = where[v]
        _assertion(
            hlo.compare(
                values[v],
                one,
                hlo.ComparisonDirectionAttr.get("GE"),
                compare_type=hlo.ComparisonTypeAttr.get("SIGNED"),
            ),
            values[v],
            "Input shapes do not match the polymorphic shapes specification. "
            f"Expected value >= 1 for dimension variable '{v}'. Using the "
            f"following polymorphic shapes specifications: {specs}. Obtained "
            f"dimension variables: '{v}' = {{0}} from specification '{v}' for "
            f"dimension {describe(kept[pos], d)} (= {{0}}), .",
        )
    for pos, k in enumerate(kept):
        for d, e in enumerate(arg_vars[k].aval.shape):
            if isinstance(e, (int, np.integer)) or where.get(str(e)) == (pos, d):
                continue
            actual = hlo.get_dimension_size(main_args[pos], d)
            want = _dim_value(e.node, values)
            _assertion(
                hlo.compare(
                    actual,
                    want,
                    hlo.ComparisonDirectionAttr.get("EQ"),
                    compare_type=hlo.ComparisonTypeAttr.get("SIGNED"),
                ),
                actual,
                "Input shapes do not match the polymorphic shapes "
                f"specification. Found inconsistency between dimension size "
                f"{describe(k, d)} (= {{0}}) and the specification '{e}'. "
                f"Using the following polymorphic shapes specifications: "
                f"{specs}.",
            )


def _export_symbolic(jaxpr, consts, name, kept, multi, result_info, describe):
    """``export_module`` for arguments of symbolic shapes, in JAX's form: ``main`` reads each
    dimension variable from an argument's dimension (``get_dimension_size``), asserts
    ``>= 1`` and the other dimensions' consistency, and calls ``_wrapped_jax_export_main``,
    which takes the variables first (``jax.global_constant``) and lowers with dynamic
    shapes."""
    nconsts = len(consts)
    arg_vars = jaxpr.invars[nconsts:]
    _check_symbolic_support(jaxpr, name)
    where = _dim_var_locations(arg_vars, kept, name)
    dim_vars = sorted(where)
    describe = describe or (lambda i, d: f"args[{i}].shape[{d}]")
    specs = ", ".join(
        f"{describe(k, None)}.shape = ({', '.join(str(d) for d in arg_vars[k].aval.shape)})"
        for k in kept
        if mlir.is_symbolic(arg_vars[k].aval.shape)
    )

    def emit_main(mctx):
        i32 = ir.RankedTensorType.get([], ir.IntegerType.get_signless(32))
        kept_types = [aval_to_ir(arg_vars[k].aval) for k in kept]
        out_types = [aval_to_ir(v.aval) for v in jaxpr.outvars]
        lead = [i32] if multi else []
        inner_types = lead + [i32] * len(dim_vars) + kept_types
        with ir.InsertionPoint(mctx.module.body):
            inner = func.FuncOp(
                "_wrapped_jax_export_main", ir.FunctionType.get(inner_types, out_types)
            )
            fn = func.FuncOp("main", ir.FunctionType.get(lead + kept_types, out_types))
        # main first, as JAX's module
        fn.operation.move_before(inner.operation)
        fn.attributes["sym_visibility"] = ir.StringAttr.get("public")
        inner.attributes["sym_visibility"] = ir.StringAttr.get("private")
        platform_attr = (
            [ir.DictAttr.get({"jax.global_constant": ir.StringAttr.get("_platform_index")})]
            if multi
            else []
        )
        fn.attributes["arg_attrs"] = ir.ArrayAttr.get(
            platform_attr + [ir.DictAttr.get({}) for _ in kept_types]
        )
        inner.attributes["arg_attrs"] = ir.ArrayAttr.get(
            platform_attr
            + [ir.DictAttr.get({"jax.global_constant": ir.StringAttr.get(v)}) for v in dim_vars]
            + [ir.DictAttr.get({}) for _ in kept_types]
        )
        res_attrs = ir.ArrayAttr.get(
            [ir.DictAttr.get(mlir.result_attrs(info)) for info in result_info]
        )
        fn.attributes["res_attrs"] = res_attrs
        inner.attributes["res_attrs"] = res_attrs
        block = fn.add_entry_block()
        with ir.InsertionPoint(block):
            main_args = list(block.arguments)[int(multi) :]
            values = {
                v: hlo.get_dimension_size(main_args[where[v][0]], where[v][1]) for v in dim_vars
            }
            _shape_assertions(main_args, arg_vars, kept, where, values, describe, specs)
            call = func.CallOp(
                out_types,
                ir.FlatSymbolRefAttr.get("_wrapped_jax_export_main"),
                list(block.arguments)[: int(multi)] + [values[v] for v in dim_vars] + main_args,
            )
            func.ReturnOp(list(call.results))
        inner_block = inner.add_entry_block()
        with ir.InsertionPoint(inner_block):
            inner_args = list(inner_block.arguments)
            dim_values = dict(
                zip(dim_vars, inner_args[int(multi) : int(multi) + len(dim_vars)], strict=True)
            )
            args = [None] * len(arg_vars)  # the dropped arguments are never read
            for k, arg in zip(kept, inner_args[int(multi) + len(dim_vars) :], strict=True):
                args[k] = arg
            const_values = [
                mlir.constant(c, v.aval.dtype)
                for v, c in zip(jaxpr.invars[:nconsts], consts, strict=True)
            ]
            mctx.dim_values = dim_values
            with mlir.symbolic_shapes(_shape_tensor(dim_values)):
                outs = mlir.lower_jaxpr(mctx, jaxpr, [], const_values + args)
            func.ReturnOp(outs)
        mctx.module.operation.attributes["jax.uses_shape_polymorphism"] = _bool_attr(True)
        return fn

    return mlir.build_module(re.sub(r"[^\w.-]", "_", f"jit_{name}").rstrip("_"), 1, emit_main)


def _dimension_as_value_lower(ctx, *, dim):
    value = _dim_value(dim.node, ctx.module.dim_values)
    return [_convert(value, aval_to_ir(ctx.avals_out[0]))]


def register_dimension_as_value(prim):
    lowering_rules[prim] = _dimension_as_value_lower


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
    return [
        text
        for target, text in custom_call_targets(module)
        if target not in _STABLE_TARGETS
        and target not in allowed
        and not _STABLE_KERNEL.match(target)
    ]


def serialize(module):
    """The portable artifact of ``module``: versioned StableHLO bytecode for a consumer at
    least four weeks old, as JAX writes it."""
    target = hlo.get_version_from_compatibility_requirement(
        hlo.StablehloCompatibilityRequirement.WEEK_4
    )
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
    names = [
        ir.StringAttr(op.attributes["sym_name"]).value
        for op in src.body.operations
        if "sym_name" in op.attributes
    ]
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
            args.append(_convert(mlir.constant(np.int32(platform_index)), callee_type.inputs[0]))
        args += [
            _convert(a, t)
            for a, t in zip(block.arguments, list(callee_type.inputs)[len(args) :], strict=True)
        ]
        call = func.CallOp(list(callee_type.results), ir.FlatSymbolRefAttr.get(callee), args)
        func.ReturnOp([_convert(r, t) for r, t in zip(call.results, out_types, strict=True)])
    try:
        refined = _jax.mlir.refine_polymorphic_shapes(
            _bytecode(wrapper), enable_shape_assertions=True, validate_static_shapes=True
        )
    except Exception as e:
        raise ValueError(
            f"Error refining the shapes of the exported module for arguments "
            f"{[a.str_short() for a in in_avals]}: {e}"
        ) from e
    return ir.Module.parse(refined)


def _convert(x, typ):
    return x if x.type == typ else hlo.convert(typ, x)


def _call_exported_lower(ctx, *args, exported):
    if exported.nr_devices != 1:
        raise ValueError(
            f"Function {exported.fun_name} was exported for "
            f"{exported.nr_devices} devices and is called in a context with 1 "
            "devices, which is not allowed."
        )
    src = deserialize(exported.mlir_module_serialized)
    kept_avals = [ctx.avals_in[k] for k in exported.module_kept_var_idx]
    kept_args = [args[k] for k in exported.module_kept_var_idx]
    platform = exported.platform_index(current_platform())
    nr_platforms = len(exported.platforms)
    if exported.uses_global_constants or nr_platforms > 1:
        src = _refined(src, kept_avals, ctx.avals_out, platform if nr_platforms > 1 else None)
    ctx.module.symbol_count += 1
    callee = _merge(
        ctx.module.module,
        src,
        f"call_exported_{mlir.sanitize(exported.fun_name)}_{ctx.module.symbol_count}",
    )
    out_types = [aval_to_ir(a) for a in ctx.avals_out]
    call = func.CallOp(out_types, ir.FlatSymbolRefAttr.get(callee), kept_args)
    return list(call.results)


def current_platform():
    """The platform being compiled for, in JAX's export names (cpu, cuda, rocm, tpu)."""
    platform = runtime.platform()
    if platform == "gpu":
        return "rocm" if "rocm" in str(runtime.default_device().client.platform_version) else "cuda"
    return platform


def register(call_exported_p):
    lowering_rules[call_exported_p] = _call_exported_lower
