"""Running things: eager primitives, and compiled jaxprs for ``jit``.

Eager evaluation on a CPU backend uses a primitive's NumPy implementation when it has one
(a few microseconds, where a compiled XLA call costs over ten); otherwise, and always on a
GPU or TPU, it compiles the single equation with XLA once per signature and runs that.
"""

import contextvars
import logging
import threading
import time
import weakref

import numpy as np

from lowering import mlir, runtime
from xform import config, core, dtypes
from xform.array import Array, ShardedArray
from xform.core import ClosedJaxpr, Jaxpr, JaxprEqn, Tracer, Var, host_impls
from xform.interpreters import dce
from xform.interpreters.staging import out_avals_of
from xform.primitives.pmap import replicas_needed

_log = logging.getLogger(__name__)  # "xform.dispatch": compiles, as JAX's jax._src.dispatch


def concrete_aval(x, prim):
    """The aval of an eager argument; a tracer here has escaped its transformation."""
    if isinstance(x, Tracer):
        raise core.escaped_tracer_error(x, prim.name)
    return core.get_aval(x)


def host_value(x, aval):
    """The NumPy value of a concrete argument, in its canonical dtype."""
    if type(x) is Array:
        return x._host if x._host is not None else x._host_value()
    v = x.__array__() if hasattr(x, "__array__") else x
    return np.asarray(v, aval.dtype)


# XLA's CPU backend runs with denormals-are-zero and flush-to-zero: arithmetic reads a
# subnormal float operand as zero and writes zero for a subnormal result, keeping its sign;
# only bit moves (copy, neg, abs, select, reshape, ...) pass one through. NumPy keeps them,
# so the host path flushes (1) results, when NumPy signalled an underflow, which costs
# nothing until one happens, and (2) the plain Python and NumPy operands of a primitive.
# Results that are exactly subnormal signal nothing and stay, as do subnormals in an xform
# Array made from user data: checking every operand and result would double the cost of an
# eager op. float16 is left alone: XLA computes it in float32, where its subnormals are normal.
_TINY = {np.dtype(d): np.finfo(d).tiny for d in ("float32", "float64", "complex64",
                                                 "complex128")}
_TINY[np.dtype(dtypes.bfloat16)] = np.float32(np.finfo(np.float32).tiny)


def flush_subnormals(x):
    """``x`` with its subnormal floats replaced by zeros of the same sign, as XLA's CPU."""
    tiny = _TINY.get(x.dtype)
    if tiny is None:
        return x
    if x.dtype.kind == "c":
        return flush_subnormals(x.real) + 1j * flush_subnormals(x.imag)
    wide = x.astype(np.float32) if x.dtype == dtypes.bfloat16 else x
    with np.errstate(invalid="ignore"):  # inf * 0 in the unselected branch
        return np.where(np.abs(wide) < tiny, x * 0, x)


def _operand_daz(v):
    """A Python or NumPy operand with subnormals read as zero; ``v`` itself when it has none."""
    tiny = _TINY.get(v.dtype)
    if tiny is None:
        return v
    if v.ndim == 0:  # a scalar: a Python comparison, far cheaper than NumPy's
        return flush_subnormals(v) if 0 < abs(v.item()) < tiny else v
    for part in (v.real, v.imag) if v.dtype.kind == "c" else (v,):
        mags = np.abs(part)
        if np.count_nonzero((mags < tiny) & (mags > 0)):
            return flush_subnormals(v)
    return v


def _note_underflow(kind, flag):
    _quiet.underflow = True


def device_buffer(x, aval, device=None):
    """A device buffer holding concrete argument ``x``."""
    if type(x) is Array:
        return x._device_buffer(device)
    if type(x) is runtime.BufferType and x.dtype == aval.dtype:
        return x
    return runtime.to_device(host_value(x, aval), device)


class _Quiet(threading.local):
    """A per-thread context where NumPy does not warn: XLA returns inf/nan silently, and so
    must the host path. Entering a context costs nothing, unlike ``np.errstate``."""

    def __init__(self):
        self.underflow = False  # set by NumPy, through _note_underflow, in self.context
        self.context = contextvars.copy_context()
        self.context.run(np.seterr, all="ignore", under="call")
        self.context.run(np.seterrcall, _note_underflow)


_quiet = _Quiet()


# Set by xform/api_sharding.py: ``sharded_apply(prim, args, params)`` runs an eager primitive
# with a sharded operand as one partitioned program, as JAX does (never gathered to a host).
sharded_apply = None


def host_apply(prim, args, params):
    impl = host_impls.get(prim)
    if impl is None:
        return device_apply(prim, args, params)
    avals, vals = [], []
    for x in args:
        if type(x) is Array:
            avals.append(x.aval)
            host = x._host
            vals.append(host if host is not None else x._host_value())
        elif type(x) is ShardedArray and sharded_apply is not None:
            return sharded_apply(prim, args, params)
        else:
            aval = concrete_aval(x, prim)
            avals.append(aval)
            vals.append(_operand_daz(host_value(x, aval)))
    out_avals = out_avals_of(prim, avals, params)
    outs = _quiet.context.run(impl, *vals, **params)
    if _quiet.underflow:  # rare: flush to zero as XLA does
        _quiet.underflow = False
        outs = [flush_subnormals(np.asarray(out)) for out in outs]
    if len(outs) == 1 == len(out_avals):  # most primitives: no loop to set up
        out, a = outs[0], out_avals[0]
        if type(out) is not np.ndarray:
            out = np.asarray(out)  # NumPy gives 0-d scalars
        return [Array(a, out if out.dtype == a.dtype else out.astype(a.dtype))]
    result = []
    for out, a in zip(outs, out_avals, strict=True):
        value = out if type(out) is np.ndarray else np.asarray(out)  # NumPy gives 0-d scalars
        if value.dtype != a.dtype:
            value = value.astype(a.dtype)
        result.append(Array(a, value))
    return result


class Compiled:
    """An executable together with the types of what it returns."""

    __slots__ = ("executable", "out_avals", "device")

    def __init__(self, executable, out_avals, device):
        self.executable = executable
        self.out_avals = out_avals
        self.device = device

    def run(self, args, avals):
        device = self.device
        bufs = [x._buf if type(x) is Array and device is None else None for x in args]
        for i, buf in enumerate(bufs):
            if buf is None:  # NumPy data, scalars, host-only arrays, another device
                bufs[i] = device_buffer(args[i], avals[i], device)
        outs = self.executable.call(bufs)
        return [Array(a, None, b) for a, b in zip(self.out_avals, outs, strict=True)]


# jaxpr -> {(device, donated): Compiled}; weak, so executables go when their jaxpr does.
_compiled = weakref.WeakKeyDictionary()


def without_dead_code(closed):
    """``closed`` as it is lowered: equations whose results nothing reads are dropped (in jit
    bodies too); the inputs stay, since callers pass every argument."""
    if not dce.has_dead_code(closed.jaxpr):
        return closed
    return dce.dce_closed_jaxpr(closed, [True] * len(closed.jaxpr.outvars))[0]


def compile_jaxpr(closed, name, device=None, donated=None, min_cache_secs=0.0, options=()):
    """Compile a const-free ClosedJaxpr (cached per jaxpr, device, donated inputs and XLA
    ``options``, ``(name, value)`` pairs; on disk too, if compiling took ``min_cache_secs``
    or more)."""
    per_jaxpr = _compiled.setdefault(closed.jaxpr, {})
    key = (device, donated, options) if options else (device, donated)
    entry = per_jaxpr.get(key)
    if entry is None:
        # A program holding pmaps runs as one replica per device they need.
        replicas = replicas_needed(closed.jaxpr)
        log = config.values.log_compiles  # as JAX: WARNINGs while the flag is on
        if log:
            _log.warning("Compiling %s with global shapes and types %s.", name,
                         [v.aval for v in closed.jaxpr.invars])
            start = time.perf_counter()
        module = mlir.lower_to_module(without_dead_code(closed), name, replicas, donated)
        if log:
            lowered = time.perf_counter()
            _log.warning("Finished jaxpr to MLIR module conversion jit(%s) in %.6f sec", name,
                         lowered - start)
        if replicas == 1:
            exe = runtime.compile_module(module, closed.out_avals, device, min_cache_secs,
                                         options)
        else:
            exe = runtime.compile_replicated(module, closed.out_avals, replicas, options)
        if log:
            _log.warning("Finished XLA compilation of jit(%s) in %.6f sec", name,
                         time.perf_counter() - lowered)
        entry = per_jaxpr[key] = Compiled(exe, closed.out_avals, device)
    return entry


_single_eqn = {}


def clear_caches():
    """Forget the compiled programs of jaxprs and of eager single primitives."""
    _compiled.clear()
    _single_eqn.clear()


def device_apply(prim, args, params):
    rule = core.eager_rules.get(prim)
    if rule is not None:
        return rule(*args, **params)
    if sharded_apply is not None and any(type(x) is ShardedArray for x in args):
        return sharded_apply(prim, args, params)
    avals = tuple(concrete_aval(x, prim) for x in args)
    key = (prim, tuple(params.items()), avals)
    try:
        compiled = _single_eqn.get(key)
    except TypeError:  # unhashable params: compile without caching
        compiled, key = None, None
    if compiled is None:
        invars = [Var(a) for a in avals]
        out_avals = core.abstract_eval(prim, *avals, **params)
        outvars = [Var(a) for a in out_avals]
        jaxpr = Jaxpr([], invars, outvars, [JaxprEqn(prim, invars, outvars, params)])
        # One primitive: trivially small for the disk cache on a CPU unless slow to compile.
        min_secs = 0.01 if runtime.platform() == "cpu" else 0.0
        compiled = compile_jaxpr(ClosedJaxpr(jaxpr, []), prim.name, min_cache_secs=min_secs)
        if key is not None:
            _single_eqn[key] = compiled
    return compiled.run(args, avals)


_eager_apply = None  # the eager path chosen by _first_apply: host_apply or device_apply


def _first_apply(prim, args, params):
    """Choose the eager path once the backend is known, then use it."""
    global _eager_apply
    use_host = config.host_eager and runtime.platform() == "cpu"
    _eager_apply = host_apply if use_host else device_apply
    _install_eager_impl(config.slow_calls)
    return core.eval_trace.apply(prim, args, params)


# --------------------------------------------------------------------------- debug_nans/infs


def invalid_value(values):
    """"nan" or "inf" when a concrete floating-point value among ``values`` holds one that
    ``jax_debug_nans`` / ``jax_debug_infs`` (this thread's) asks to catch, else None."""
    flags = config.values
    for x in values:
        if type(x) is not Array or not dtypes.is_inexact(x.aval.dtype):
            continue
        value = np.asarray(x._host if x._host is not None else x._host_value())
        if flags.debug_nans and np.isnan(value).any():
            return "nan"
        if flags.debug_infs and np.isinf(value).any():
            return "inf"
    return None


def _checked_apply(prim, args, params):
    """Eager evaluation while some thread may want NaNs/infs caught: JAX's
    ``FloatingPointError`` naming the primitive and the user's line."""
    outs = _eager_apply(prim, args, params)
    flags = config.values
    if flags.debug_nans or flags.debug_infs:
        kind = invalid_value(outs)
        if kind is not None:
            where = core.format_source_info(core.source_info())
            raise FloatingPointError(f"invalid value ({kind}) encountered in {prim.name} "
                                     f"(at {where})")
    return outs


def _install_eager_impl(slow):
    if _eager_apply is None:  # the backend has not started: _first_apply installs it later
        return
    core.set_eager_impl(_checked_apply if slow else _eager_apply)


core.set_eager_impl(_first_apply)
config.on_update("slow_calls", _install_eager_impl)
