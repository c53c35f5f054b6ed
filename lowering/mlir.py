"""Jaxpr -> StableHLO module, through jaxlib's MLIR bindings.

A lowering rule has the signature ``rule(ctx, *operands, **params) -> list[ir.Value]``, where
``ctx`` is a ``RuleContext`` holding the equation's ``avals_in``/``avals_out`` and the module
being built. Rules are registered in ``lowering_rules`` by the family modules beside this one.
"""

import contextlib
import re
import threading
import weakref

import numpy as np
from jaxlib import _jax
from jaxlib.mlir import ir
from jaxlib.mlir._mlir_libs import _jax_mlir_ext
from jaxlib.mlir.dialects import chlo, func, sdy
from jaxlib.mlir.dialects import stablehlo as hlo

from xform import dtypes
from xform.core import ClosedJaxpr, Literal, source_span
from xform.errors import MissingRuleError

lowering_rules = {}


def make_context():
    """An MLIR context that knows func, stablehlo, chlo and sdy, so modules verify."""
    ctx = ir.Context()
    registry = ir.DialectRegistry()
    _jax_mlir_ext.register_dialects(registry)
    ctx.append_dialect_registry(registry)
    ctx.load_all_available_dialects()
    hlo.register_dialect(ctx)
    chlo.register_dialect(ctx)
    sdy.register_dialect(ctx)  # Shardy: meshes and shardings of partitioned programs
    return ctx


_context = None
# One MLIR context serves every thread; building modules in it is not thread-safe.
_lock = threading.RLock()


def context():
    global _context
    if _context is None:
        _context = make_context()
    return _context


# --------------------------------------------------------------------------- types

_FLOAT_TYPES = {
    dtypes.float16: ir.F16Type,
    dtypes.bfloat16_dtype: ir.BF16Type,
    dtypes.float32: ir.F32Type,
    dtypes.float64: ir.F64Type,
    dtypes.float8_e3m4: ir.Float8E3M4Type,
    dtypes.float8_e4m3: ir.Float8E4M3Type,
    dtypes.float8_e4m3b11fnuz: ir.Float8E4M3B11FNUZType,
    dtypes.float8_e4m3fn: ir.Float8E4M3FNType,
    dtypes.float8_e4m3fnuz: ir.Float8E4M3FNUZType,
    dtypes.float8_e5m2: ir.Float8E5M2Type,
    dtypes.float8_e5m2fnuz: ir.Float8E5M2FNUZType,
    dtypes.float8_e8m0fnu: ir.Float8E8M0FNUType,
    dtypes.float4_e2m1fn: ir.Float4E2M1FNType,
    dtypes.float6_e2m3fn: ir.Float6E2M3FNType,
    dtypes.float6_e3m2fn: ir.Float6E3M2FNType,
}


def dtype_to_ir(dtype):
    if dtype == dtypes.bool_:
        return ir.IntegerType.get_signless(1)
    if dtype in _FLOAT_TYPES:
        return _FLOAT_TYPES[dtype].get()
    # int4 and kin take one host byte each, but their MLIR types have their own bit width.
    bits = dtypes.BITS.get(dtype) or dtype.itemsize * 8
    if dtypes.is_signed_int(dtype):
        return ir.IntegerType.get_signless(bits)
    if dtypes.is_unsigned_int(dtype):
        return ir.IntegerType.get_unsigned(bits)
    if dtype == dtypes.complex64:
        return ir.ComplexType.get(ir.F32Type.get())
    if dtype == dtypes.complex128:
        return ir.ComplexType.get(ir.F64Type.get())
    raise TypeError(f"xform cannot lower values of dtype {dtype}")


def aval_to_ir(aval):
    try:
        return ir.RankedTensorType.get(aval.shape, dtype_to_ir(aval.dtype))
    except TypeError:  # symbolic dimensions (export): dynamic ones
        if not is_symbolic(aval.shape):
            raise
        return ir.RankedTensorType.get(
            [
                d if isinstance(d, (int, np.integer)) else ir.ShapedType.get_dynamic_size()
                for d in aval.shape
            ],
            dtype_to_ir(aval.dtype),
        )


# Only while lowering a program with symbolic dimensions (``symbolic_shapes``): a function
# from such a shape to its 1-D i32 shape tensor. Free for every other lowering.
symbolic_shape_tensor = None


@contextlib.contextmanager
def symbolic_shapes(shape_tensor):
    """Lower with symbolic dimensions meanwhile (lowering/export.py): ``shape_tensor`` maps
    a shape holding them to its 1-D i32 shape tensor."""
    global symbolic_shape_tensor
    previous, symbolic_shape_tensor = symbolic_shape_tensor, shape_tensor
    try:
        yield
    finally:
        symbolic_shape_tensor = previous


def is_symbolic(shape):
    return not all(isinstance(d, (int, np.integer)) for d in shape)


def is_dynamic(shape):
    """Whether ``shape`` needs dynamic ops (while lowering symbolic dimensions)."""
    return symbolic_shape_tensor is not None and is_symbolic(shape)


def broadcast_dynamic(typ, x, shape, dims):
    """``broadcast_in_dim`` of ``x`` to ``typ`` (of ``shape``); dynamic when ``shape`` holds
    symbolic dimensions."""
    if is_dynamic(shape):
        return hlo.dynamic_broadcast_in_dim(
            typ, x, symbolic_shape_tensor(shape), ir.DenseI64ArrayAttr.get(list(dims))
        )
    return hlo.broadcast_in_dim(typ, x, ir.DenseI64ArrayAttr.get(list(dims)))


def iota(aval, dimension):
    """``stablehlo.iota`` of type ``aval`` along ``dimension``; dynamic when its shape holds
    symbolic dimensions."""
    dim = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), dimension)
    if is_dynamic(aval.shape):
        return hlo.dynamic_iota(aval_to_ir(aval), symbolic_shape_tensor(aval.shape), dim)
    return hlo.iota(aval_to_ir(aval), dim)


_NO_LITERALS = (dtypes.float6_e2m3fn, dtypes.float6_e3m2fn)


def constant(value, dtype=None):
    """A ``stablehlo.constant`` holding ``value`` (converted to ``dtype`` if given). The
    bindings read ml_dtypes' narrow types (float8, int4, ...) from their one-byte storage."""
    x = np.asarray(value, dtype)
    if x.dtype in _NO_LITERALS:
        # XLA aborts the process on a literal of these types; JAX's CPU runtime rejects
        # them with this error type before getting that far.
        raise _jax.JaxRuntimeError(
            f"INVALID_ARGUMENT: XLA has no literals of type {x.dtype}: a {x.dtype} constant "
            "cannot be compiled; compute in float32 and convert at the end"
        )
    if not x.flags.c_contiguous:
        x = np.ascontiguousarray(x)
    elt = dtype_to_ir(x.dtype)
    if x.dtype == dtypes.bfloat16:
        x = x.view(np.uint16)
    elif x.dtype == dtypes.float16 and x.ndim == 0:
        x = x.reshape(1)
        return hlo.reshape(
            ir.RankedTensorType.get([], elt), hlo.constant(ir.DenseElementsAttr.get(x, type=elt))
        )
    attr = ir.DenseElementsAttr.get(x, type=elt, shape=list(x.shape))
    return hlo.constant(attr)


def full_like_aval(value, aval):
    """A constant of ``aval``'s dtype, broadcast to its shape."""
    c = constant(value, aval.dtype)
    if not aval.shape:
        return c
    if is_dynamic(aval.shape):
        return broadcast_dynamic(aval_to_ir(aval), c, aval.shape, [])
    return hlo.broadcast_in_dim(aval_to_ir(aval), c, ir.DenseI64ArrayAttr.get([]))


def broadcast_to(x, aval_in, aval_out):
    """Broadcast an operand of an elementwise op to the op's result shape: a rank-0 one, or
    one of the same rank along its size-1 dimensions."""
    if aval_in.shape == aval_out.shape:
        return x
    if is_dynamic(aval_out.shape):
        return broadcast_dynamic(
            aval_to_ir(aval_out.update(dtype=aval_in.dtype)), x, aval_out.shape, range(aval_in.ndim)
        )
    typ = ir.RankedTensorType.get(aval_out.shape, dtype_to_ir(aval_in.dtype))
    return hlo.broadcast_in_dim(typ, x, ir.DenseI64ArrayAttr.get(list(range(aval_in.ndim))))


def elementwise_rule(op):
    """The lowering rule of an elementwise primitive whose StableHLO (or CHLO) counterpart
    ``op(*operands)`` takes same-shaped operands: each operand is broadcast to the result's
    shape (``broadcast_to``) first. Built-ins and extensions alike:
    ``lowering_rules[add_p] = elementwise_rule(hlo.add)``."""

    def rule(ctx, *args, **params):
        out = ctx.avals_out[0]
        args = [broadcast_to(x, a, out) for x, a in zip(args, ctx.avals_in, strict=True)]
        return [op(*args)]

    return rule


# --------------------------------------------------------------------------- jaxpr -> ops


class RuleContext:
    """What a lowering rule may know about its equation."""

    __slots__ = ("module", "avals_in", "avals_out")

    def __init__(self, module, avals_in, avals_out):
        self.module = module
        self.avals_in = avals_in
        self.avals_out = avals_out


class ModuleContext:
    """The module under construction, and the private functions already emitted into it."""

    def __init__(self, module, num_replicas=1, axis_env=()):
        self.module = module
        self.functions = {}
        self.symbol_count = 0
        # Symbols taken, and the count MLIR's symbol table renames clashes with (``f``,
        # ``f_0``, ``g_1``, ...): private functions are named as JAX names them.
        self.symbols = {"main"}
        self.uniquing_count = 0
        self.num_replicas = num_replicas
        # The pmap axes being lowered, outermost first: ((name, size), ...). Replica ``r``
        # sits at index ``(r // stride) % size`` along each (lowering/collectives.py).
        self.axis_env = axis_env
        # A partitioned program (lowering/sharding.py): its mesh; inside a shard_map's region
        # (lowering/shard_map.py) ``spmd`` is set and the "replicas" are the mesh's devices.
        self.mesh = None
        self.spmd = False
        # A partitioned program's way to lower an equation, ``lower_equation(rule, ctx, args,
        # params, prim) -> outs`` (lowering/sharding.py): it lays out the results whose types
        # carry shardings (explicit sharding mode) as their types say, as JAX does.
        self.lower_equation = None
        # The Python functions the module's host-callback custom calls name by index
        # (lowering/callback.py); the runtime passes them to the compiler.
        self.host_callbacks = []
        # The program's name in its ops' locations (``jit(f)``): XLA's op metadata reads
        # ``op_name="jit(f)/<named scopes>/<primitive>"`` from them, as from JAX's.
        self.scope = ""

    def function_for(self, closed, name):
        """The symbol of a private function computing ``closed`` (emitted once per jaxpr and
        axis environment: its collectives' replica groups depend on the axes around it)."""
        key = (id(closed.jaxpr), self.axis_env)
        entry = self.functions.get(key)
        if entry is None:
            # The symbol is taken before emitting: the body may emit functions of its own
            # (nested calls), which must not get the same symbol.
            symbol = self.unique_symbol(name)
            fn = emit_function(self, closed, symbol, public=False)
            entry = self.functions[key] = (symbol, fn, closed)
        return entry[0]

    def unique_symbol(self, name):
        """``name`` as a private function's symbol (kept as it is, as JAX keeps it: MLIR
        quotes ``@"<lambda>"``), renamed as MLIR's symbol table renames a clash:
        ``name_<k>``, ``k`` counting the module's renames."""
        base = symbol = name or "fn"
        while symbol in self.symbols:
            symbol = f"{base}_{self.uniquing_count}"
            self.uniquing_count += 1
        self.symbols.add(symbol)
        return symbol


def sanitize(name):
    return "".join(c if c.isalnum() or c == "_" else "_" for c in name) or "fn"


# Set by lowering/callback.py: ``rule(eqn_rule, ctx, args, params) -> outs`` lowers an
# equation that holds jaxprs in program order with the ordered host callbacks around it;
# ``rule.applies(jaxpr)`` says whether a jaxpr has any (else nothing changes).
ordered_region_rule = None


def lower_inline(mctx, closed, args):
    """Emit ClosedJaxpr ``closed`` applied to ``args`` at the current insertion point (its
    consts as constants); return its outputs."""
    consts = [
        constant(c, v.aval.dtype)
        for v, c in zip(closed.jaxpr.constvars, closed.consts, strict=True)
    ]
    return lower_jaxpr(mctx, closed.jaxpr, consts, list(args))


def lower_jaxpr(mctx, jaxpr, consts, args):
    """Emit the equations of ``jaxpr`` at the current insertion point; return its outputs."""
    env = {}
    for v, x in zip(jaxpr.constvars, consts, strict=True):
        env[v] = x
    for v, x in zip(jaxpr.invars, args, strict=True):
        env[v] = x

    def read(x):
        if type(x) is Literal:
            return constant(x.val, x.aval.dtype)
        return env[x]

    ordered = ordered_region_rule is not None and ordered_region_rule.applies(jaxpr)
    for eqn in jaxpr.eqns:
        rule = lowering_rules.get(eqn.primitive)
        if rule is None:
            raise MissingRuleError(
                f"primitive '{eqn.primitive.name}' has no lowering rule, "
                "so it cannot be compiled with jit"
            )
        ctx = RuleContext(mctx, [x.aval for x in eqn.invars], [v.aval for v in eqn.outvars])
        with location(mctx, eqn):
            if ordered and eqn.params:  # a loop, branch or call may hold ordered callbacks
                outs = ordered_region_rule(rule, ctx, [read(x) for x in eqn.invars], eqn.params)
            elif mctx.lower_equation is not None:
                outs = mctx.lower_equation(
                    rule, ctx, [read(x) for x in eqn.invars], eqn.params, eqn.primitive
                )
            else:
                outs = rule(ctx, *[read(x) for x in eqn.invars], **eqn.params)
        for v, out in zip(eqn.outvars, outs, strict=True):
            env[v] = out
    return [read(x) for x in jaxpr.outvars]


def location(mctx, eqn):
    """The location of ``eqn``'s ops, as JAX's: named ``jit(f)/<named scopes>/<primitive>``,
    at the user's file, line and column where the equation was traced."""
    info = eqn.source_info
    scope = info[5] if info is not None and len(info) > 5 else ""
    name = "/".join(s for s in (mctx.scope, scope, eqn.primitive.name) if s)
    if info is None:
        return ir.Location.name(name)
    file, line, function = info[:3]
    span = source_span(info)
    where = ir.Location.file(file, line, 0) if span is None else ir.Location.file(file, *span)
    return ir.Location.name(name, ir.Location.name(function, where))


def emit_function(mctx, closed, symbol, public):
    """Emit ``func.func @symbol`` computing ``closed`` (consts inlined as constants)."""
    jaxpr = closed.jaxpr
    in_types = [aval_to_ir(v.aval) for v in jaxpr.invars]
    out_types = [aval_to_ir(v.aval) for v in jaxpr.outvars]
    with ir.InsertionPoint(mctx.module.body):
        fn = func.FuncOp(symbol, ir.FunctionType.get(in_types, out_types))
    fn.attributes["sym_visibility"] = ir.StringAttr.get("public" if public else "private")
    block = fn.add_entry_block()
    with ir.InsertionPoint(block):
        consts = [
            constant(c, v.aval.dtype) for v, c in zip(jaxpr.constvars, closed.consts, strict=True)
        ]
        outs = lower_jaxpr(mctx, jaxpr, consts, list(block.arguments))
        func.ReturnOp(outs)
    return fn


def _alias_donated_inputs(fn, in_avals, out_avals, donated):
    """Let each donated input's buffer hold an output of the same type (``tf.aliasing_output``),
    so XLA writes the result in place and the input array is consumed, as in JAX. A donated
    input that no output of its type takes is offered to XLA (``jax.buffer_donor``) when an
    output left over has as many elements, as JAX does: XLA may then reuse it."""
    free = list(enumerate(out_avals))
    entries = [{} for _ in in_avals]
    unmatched = []
    for i, (aval, donate) in enumerate(zip(in_avals, donated, strict=True)):
        if donate:
            match = next(
                (
                    k
                    for k, (_, a) in enumerate(free)
                    if a.shape == aval.shape and a.dtype == aval.dtype
                ),
                None,
            )
            if match is None:
                unmatched.append(i)
                continue
            out_index, _ = free.pop(match)
            i32 = ir.IntegerType.get_signless(32)
            entries[i]["tf.aliasing_output"] = ir.IntegerAttr.get(i32, out_index)
    for i in unmatched:
        match = next((k for k, (_, a) in enumerate(free) if a.size == in_avals[i].size), None)
        if match is not None:
            free.pop(match)
            entries[i]["jax.buffer_donor"] = ir.BoolAttr.get(True)
    fn.attributes["arg_attrs"] = ir.ArrayAttr.get([ir.DictAttr.get(e) for e in entries])


def lower_to_module(closed, name, num_replicas=1, donated=None, result_info=None):
    """A verified StableHLO module whose public ``main`` computes ``closed``.

    ``closed`` should carry no large consts: jit passes them as arguments instead.
    ``donated`` (a bool per input) marks inputs whose buffers the program may reuse.
    ``result_info``: a name per result (``result[0]``, ...), set as JAX's
    ``jax.result_info`` attributes (text only: XLA ignores them).
    """
    if not isinstance(closed, ClosedJaxpr):
        raise TypeError(f"lower_to_module expects a ClosedJaxpr, got {type(closed).__name__}")
    if any(is_symbolic(a.shape) for a in closed.in_avals):
        raise NotImplementedError(
            f"lowering {name} for arguments with symbolic dimensions "
            f"({[str(a) for a in closed.in_avals]}): xform lowers symbolic dimensions only in "
            "xform.export.export"
        )

    # JAX's module name: the symbol characters XLA keeps, no trailing underscores.
    def emit_main(mctx):
        main = emit_function(mctx, closed, "main", public=True)
        if result_info is not None:
            main.attributes["res_attrs"] = ir.ArrayAttr.get(
                [ir.DictAttr.get(result_attrs(info)) for info in result_info]
            )
        return main

    donation = (closed.in_avals, closed.out_avals, donated)
    symbol = module_symbol(name)
    return build_module(symbol, num_replicas, emit_main, donation, scope=f"jit({name})")


def module_symbol(name):
    """A jit module's name, as JAX's: ``jit_`` and the function's name in the symbol
    characters XLA keeps, no trailing underscores."""
    return re.sub(r"[^\w.-]", "_", f"jit_{name}").rstrip("_")


def result_attrs(info):
    """The attributes of a main's result named ``info`` (JAX's ``jax.result_info``)."""
    return {} if info is None else {"jax.result_info": ir.StringAttr.get(info)}


def build_module(symbol, num_replicas, emit_main, donation=None, axis_env=(), scope=""):
    """A verified module named ``symbol`` run by ``num_replicas`` replicas, whose public main
    ``emit_main(module_context)`` emits. ``donation``: None, or ``(in_avals, out_avals,
    donated)``, main's types and a bool per input whose buffer the program may reuse."""
    with _lock, context(), ir.Location.unknown():
        module = ir.Module.create()
        module.operation.attributes["sym_name"] = ir.StringAttr.get(symbol)
        i32 = ir.IntegerType.get_signless(32)
        module.operation.attributes["mhlo.num_replicas"] = ir.IntegerAttr.get(i32, num_replicas)
        module.operation.attributes["mhlo.num_partitions"] = ir.IntegerAttr.get(i32, 1)
        mctx = ModuleContext(module, num_replicas, axis_env)
        mctx.scope = scope
        main = emit_main(mctx)
        if mctx.host_callbacks:
            host_callbacks[module] = mctx.host_callbacks
        if donation is not None and donation[2] is not None and any(donation[2]):
            _alias_donated_inputs(main, *donation)
        if not module.operation.verify():
            raise RuntimeError(f"internal error: the StableHLO module {symbol} does not verify")
        return module


# module -> the host callbacks it calls (only modules that call any are here)
host_callbacks = weakref.WeakKeyDictionary()


def module_text(module, debug_info=False):
    """The module's text; with ``debug_info``, its ops' locations too."""
    with _lock, context():
        return module.operation.get_asm(enable_debug_info=debug_info)
