"""Running things: eager primitives, and compiled jaxprs for ``jit``.

Eager evaluation on a CPU backend uses a primitive's NumPy implementation when it has one
(a few microseconds, where a compiled XLA call costs over ten); otherwise, and always on a
GPU or TPU, it compiles the single equation with XLA once per signature and runs that.
The flag ``xform_eager_path="xla"`` makes a CPU backend take the compiled path too.
The common eager op (no params, one or two Arrays on the host) takes a fast path: a NumPy
function memoized per primitive and operand avals, called directly (``host_apply``).
"""

import collections
import contextvars
import logging
import math
import threading
import time
import weakref

import numpy as np

from lowering import mlir, runtime
from xform import config, core, dtypes
from xform.core import ClosedJaxpr, Jaxpr, JaxprEqn, Tracer, Var, host_impls, intern_aval
from xform.interpret import dce
from xform.interpret.staging import memoized_with_params, out_avals_of
from xform.primitives import (
    autodiff,
    comparisons,
    compiler,
    elementwise,
    gather_scatter,
    indexing,
    remat,
    sorting,
    structural,
)
from xform.primitives.base import direct_host_fn
from xform.primitives.pmap import replicas_needed
from xform.runtime.array import (
    TINY,
    Array,
    CommittedArray,
    ShardedArray,
    has_subnormals,
)

_log = logging.getLogger(__name__)  # "xform.runtime.dispatch": compiles, as JAX's jax._src.dispatch


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
# only bit moves (``_BIT_MOVES``) pass one through. NumPy keeps them, so the host path
# flushes (1) results, when NumPy signalled an underflow, which costs nothing until one
# happens, (2) the plain Python and NumPy operands of a primitive, and (3) operands that are
# Arrays marked ``_subnormal`` (made from user data holding subnormals, see
# ``xform.runtime.array.mark_subnormals``), except in a bit move, whose results stay marked. Results
# that are exactly subnormal signal nothing and stay: checking every result would double the
# cost of an eager op. float16 is left alone: XLA computes it in float32, where its
# subnormals are normal.


def flush_subnormals(x):
    """``x`` with its subnormal floats replaced by zeros of the same sign, as XLA's CPU."""
    tiny = TINY.get(x.dtype)
    if tiny is None:
        return x
    if x.dtype.kind == "c":  # part by part: adding the parts would lose a zero's sign
        out = np.empty_like(x)
        out.real, out.imag = flush_subnormals(x.real), flush_subnormals(x.imag)
        return out
    wide = x.astype(np.float32) if x.dtype == dtypes.bfloat16 else x
    with np.errstate(invalid="ignore"):  # inf * 0 in the unselected branch
        return np.where(np.abs(wide) < tiny, x * 0, x)


def _operand_daz(v):
    """A Python or NumPy operand with subnormals read as zero; ``v`` itself when it has none."""
    tiny = TINY.get(v.dtype)
    if tiny is None:
        return v
    if v.ndim == 0:  # a scalar: a Python comparison, far cheaper than NumPy's
        return flush_subnormals(v) if 0 < abs(v.item()) < tiny else v
    for part in (v.real, v.imag) if v.dtype.kind == "c" else (v,):
        mags = np.abs(part)
        if np.count_nonzero((mags < tiny) & (mags > 0)):
            return flush_subnormals(v)
    return v


# The primitives whose results are bits of their operands, which XLA's CPU passes through
# as they are, subnormals included (each checked against ``jax.jit`` on a CPU): a marked
# Array's subnormals reach their results. Comparisons, max/min, ``abs`` of a
# complex number and widening conversions read them as zero like any arithmetic; sort orders
# them as zero (its key function flushes them) and top_k compares them exactly. See
# ``_keeps_subnormals`` for abs and convert_element_type.
_BIT_MOVES = frozenset(
    [
        elementwise.neg_p,
        elementwise.copy_p,
        comparisons.select_n_p,
        elementwise.real_p,
        elementwise.imag_p,
        elementwise.conj_p,
        elementwise.complex_p,
        elementwise.stage_p,
        elementwise.bitcast_convert_type_p,
        structural.reshape_p,
        structural.transpose_p,
        structural.broadcast_in_dim_p,
        structural.squeeze_p,
        structural.concatenate_p,
        structural.pad_p,
        structural.rev_p,
        structural.tile_p,
        structural.split_p,
        structural.stack_p,
        structural.unstack_p,
        indexing.slice_p,
        gather_scatter.gather_p,
        indexing.dynamic_slice_p,
        indexing.dynamic_update_slice_p,
        gather_scatter.scatter_p,
        sorting.sort_p,
        sorting.top_k_p,
        compiler.device_put_p,
        compiler.optimization_barrier_p,
        autodiff.stop_gradient_p,
        remat.name_p,
    ]
)


def _keeps_subnormals(prim, avals, params):
    """Does XLA's CPU pass the subnormals of ``prim``'s operands through to its results?"""
    if prim in _BIT_MOVES:
        return True
    if prim is elementwise.abs_p:  # a sign bit cleared; a complex magnitude is computed
        return avals[0].dtype.kind == "f"
    if prim is elementwise.convert_element_type_p:  # same precision: a float in a complex
        old, new = avals[0].dtype, np.dtype(params["new_dtype"])
        return new == old or (
            old.kind == "f" and new.kind == "c" and new.itemsize == 2 * old.itemsize
        )
    return False


def _subnormal_apply(prim, impl, args, vals, avals, out_avals, params):
    """``host_apply`` with operands marked ``_subnormal``: flushed first, as XLA reads them,
    unless ``prim`` moves bits; then its results are marked when they hold any."""
    keeps = _keeps_subnormals(prim, avals, params)
    if not keeps:
        vals = [
            flush_subnormals(v) if type(x) is Array and x._subnormal else v
            for x, v in zip(args, vals, strict=True)
        ]
    outs = _run_impl(impl, vals, params)
    result = [_as_array(out, intern_aval(a)) for out, a in zip(outs, out_avals, strict=True)]
    for array in result:
        array._subnormal = keeps and has_subnormals(array._host)
    return result


def device_buffer(x, aval, device=None):
    """A device buffer holding concrete argument ``x``."""
    if type(x) is Array or type(x) is CommittedArray:
        return x._device_buffer(device)
    if type(x) is runtime.BufferType and x.dtype == aval.dtype:
        return x
    return runtime.to_device(host_value(x, aval), device)


class _Quiet(threading.local):
    """Per-thread contexts where NumPy does not warn: XLA returns inf/nan silently, and so
    must the host path. Entering a context costs nothing, unlike ``np.errstate``.

    In ``context`` an underflow raises ``FloatingPointError`` (free until one happens); the
    impl then runs again in ``lenient`` and its results are flushed to zero, as XLA's are."""

    def __init__(self):
        self.context = contextvars.copy_context()
        self.context.run(np.seterr, all="ignore", under="raise")
        self.lenient = contextvars.copy_context()
        self.lenient.run(np.seterr, all="ignore")


_quiet = _Quiet()


# Eager rules by operand type, registered by the runner of that type: array type ->
# ``rule(prim, args, params)``. ShardedArray's (xform/runtime/partitioned.py) runs the
# primitive as one partitioned program, as JAX does (never gathered to a host).
array_rules = {}


# The eager fast path's memo, for a primitive without params applied to one or two Arrays
# on the host: prim -> {id(aval) or (id(aval), id(aval)): (NumPy function, result aval,
# exact, operand avals)} (two levels: no key tuple to build for one operand),
# ``exact`` when the function returns an ndarray of the result's dtype (it did the first
# time; NumPy's result types depend on the operand types alone). The entry holds the operand
# avals, so their ids cannot be reused while it exists; eager results share interned avals
# (``core.intern_aval``), so a loop of eager ops finds its plans every time.
_plans = collections.defaultdict(dict)


def host_apply(prim, args, params):
    """Evaluate ``prim`` eagerly with its NumPy implementation (``device_apply`` without one)."""
    if not params:  # the fast path: a plan, Arrays on the host, nothing to flush
        if len(args) == 1:
            x = args[0]
            if type(x) is Array and not x._subnormal:
                plan = _plans[prim].get(id(x.aval))
                if plan is not None and x._host is not None:
                    try:
                        out = _quiet.context.run(plan[0], x._host)
                    except FloatingPointError:  # an underflow: the slow path flushes
                        return _host_apply(prim, args, params)
                    return [Array(plan[1], out) if plan[2] else _as_array(out, plan[1])]
        elif len(args) == 2:
            x, y = args
            if type(y) is not Array:  # a constant operand (``x * 2.0``) as a cached Array
                y = _constant_operand(y)
                args = (x, y) if y is not None else args
            elif type(x) is not Array:
                x = _constant_operand(x)
                args = (x, y) if x is not None else args
            if type(x) is Array and type(y) is Array and not (x._subnormal or y._subnormal):
                plan = _plans[prim].get((id(x.aval), id(y.aval)))
                if plan is not None and x._host is not None and y._host is not None:
                    try:
                        out = _quiet.context.run(plan[0], x._host, y._host)
                    except FloatingPointError:
                        return _host_apply(prim, args, params)
                    return [Array(plan[1], out) if plan[2] else _as_array(out, plan[1])]
    elif prim in memoized_with_params and (len(args) == 1 or len(args) == 2):
        # The same for an op with params whose type rule is memoized: one Array or two.
        x = args[0]
        y = args[1] if len(args) == 2 else x
        if type(x) is Array and type(y) is Array and not (x._subnormal or y._subnormal):
            # One aval id per operand: a one-operand call must not find the plan of a
            # two-operand call whose operands share an aval (its result type differs).
            ids = (id(x.aval),) if len(args) == 1 else (id(x.aval), id(y.aval))
            try:
                plan = _param_plans.get((prim, *ids, *params.items()))
            except TypeError:  # an unhashable param value: the slow path
                plan = None
            if plan is not None and x._host is not None and y._host is not None:
                try:
                    outs = _quiet.context.run(plan[0], *[a._host for a in args], **params)
                except FloatingPointError:
                    return _host_apply(prim, args, params)
                return [_as_array(outs[0], plan[1])]
    return _host_apply(prim, args, params)


# The Python and 0-d NumPy constants of eager ops (the ``2.0`` of ``x * 2.0``, the ``1`` a
# JVP rule subtracts from), each made an Array once per value and x64 mode, so that the op
# takes the fast path. Not zeros (0.0 and -0.0 are one key) nor NaNs (never equal to a key).
_constants = {}


def _constant_operand(v):
    """``v`` as the Array the slow path would compute with, or None if not cached."""
    t = type(v)
    if t is float or t is int:
        if not v or math.isnan(v):
            return None
        key = (t, v, config.x64_enabled())
    elif t is np.ndarray and v.ndim == 0 and v.dtype.kind in "fiu":
        item = v.item()
        if not item or math.isnan(item):
            return None
        key = (v.dtype, item, config.x64_enabled())  # int64 data is int32 without x64
    else:
        return None
    array = _constants.get(key)
    if array is None:
        try:
            aval = intern_aval(core.get_aval(v))
            host = _operand_daz(np.array(v, aval.dtype))  # a copy: ``v`` may change
        except (TypeError, OverflowError):  # the slow path raises what it should
            return None
        host.flags.writeable = False
        if len(_constants) > 256:
            _constants.clear()
        array = _constants[key] = Array(aval, host)
    return array


# The params fast path's memo: (prim, id(aval) of each operand, *params.items()) -> (impl,
# result aval, operand avals), for the primitives whose type rules are memoized on params
# (plain hashable params, one result). The ids (ints) and the params (name-value pairs)
# cannot be mistaken for each other, so a key's operand count is part of it; the entry holds
# the operand avals, so their ids are not reused while it exists.
_param_plans = {}


def _make_param_plan(prim, impl, args, avals, params, out_aval):
    if prim not in memoized_with_params or not 1 <= len(args) <= 2:
        return
    if any(type(x) is not Array or x._subnormal or x._host is None for x in args):
        return
    ids = tuple(id(a) for a in avals)
    try:
        if len(_param_plans) > 1024:
            _param_plans.clear()
        _param_plans[(prim, *ids, *params.items())] = (impl, out_aval, tuple(avals))
    except TypeError:  # an unhashable param value: no plan
        pass


def _as_array(out, aval):
    """A NumPy function's result as an Array of type ``aval``."""
    if type(out) is not np.ndarray:
        out = np.asarray(out)  # NumPy gives 0-d scalars
    return Array(aval, out if out.dtype == aval.dtype else out.astype(aval.dtype))


def _make_plan(prim, impl, args, avals, out_aval, out):
    """Memoize a direct NumPy call for ``host_apply``'s fast path when one applies."""
    if not 1 <= len(args) <= 2:
        return
    if any(type(x) is not Array or x._subnormal or x._host is None for x in args):
        return
    fn = direct_host_fn(impl, avals[0].dtype)
    if fn is not None:
        plans = _plans[prim]
        if len(plans) > 1024:
            plans.clear()
        # Not for rank 0: NumPy's functions give a scalar there (a flushed result would not).
        exact = bool(out_aval.shape) and type(out) is np.ndarray and out.dtype == out_aval.dtype
        key = id(avals[0]) if len(avals) == 1 else (id(avals[0]), id(avals[1]))
        plans[key] = (fn, out_aval, exact, tuple(avals))


def _run_impl(impl, vals, params):
    try:
        return _quiet.context.run(impl, *vals, **params)
    except FloatingPointError:  # rare: an underflow, flushed to zero as XLA does
        outs = _quiet.lenient.run(impl, *vals, **params)
        return [flush_subnormals(np.asarray(out)) for out in outs]


def _host_apply(prim, args, params):
    impl = host_impls.get(prim)
    if impl is None:
        return device_apply(prim, args, params)
    avals, vals = [], []
    marked = False
    for x in args:
        if type(x) is Array:
            avals.append(x.aval)
            host = x._host
            vals.append(host if host is not None else x._host_value())
            marked = marked or x._subnormal
        elif type(x) is ShardedArray and ShardedArray in array_rules:
            return array_rules[ShardedArray](prim, args, params)
        elif type(x) is CommittedArray:
            return _committed_apply(prim, args, params)
        else:
            aval = concrete_aval(x, prim)
            avals.append(aval)
            vals.append(_operand_daz(host_value(x, aval)))
    out_avals = out_avals_of(prim, avals, params)
    if marked:
        return _subnormal_apply(prim, impl, args, vals, avals, out_avals, params)
    outs = _run_impl(impl, vals, params)
    if len(outs) == 1 == len(out_avals):  # most primitives: no loop to set up
        out, a = outs[0], intern_aval(out_avals[0])
        if not params:
            _make_plan(prim, impl, args, avals, a, out)
        else:
            _make_param_plan(prim, impl, args, avals, params, a)
        return [_as_array(out, a)]
    return [_as_array(out, intern_aval(a)) for out, a in zip(outs, out_avals, strict=True)]


def committed_device(args, avals, name):
    """The device that the committed Arrays among ``args`` are on (None if there are none),
    where an operation on them runs, as in JAX; ``ValueError`` when they are committed to
    different devices."""
    first = None
    for i, x in enumerate(args):
        if type(x) is CommittedArray:
            device = x.device
            if first is None:
                first = (i, device)
            elif device != first[1]:
                k = first[0]
                raise incompatible_devices(name, (k, avals[k], [first[1]]), (i, avals[i], [device]))
    return None if first is None else first[1]


def incompatible_devices(name, *arguments):
    """JAX's ValueError for a call of ``name`` whose arguments, each ``(position, aval,
    devices)``, are committed to different devices."""
    described = [
        f"argument {k} of {name} with shape {aval.str_short(short_dtypes=False)} and "
        f"with device ids {sorted(d.id for d in devices)} on platform "
        f"{next(iter(devices)).platform.upper()}"
        for k, aval, devices in arguments
    ]
    return ValueError(
        "Received incompatible devices for jitted computation. Got " + " and ".join(described)
    )


def _committed_apply(prim, args, params):
    """An eager primitive with operands committed to a device: its results are committed to
    that device too. (Computed as any other, from host copies, then put there.)"""
    device = committed_device(args, [getattr(x, "aval", None) for x in args], prim.name)
    plain = [Array(x.aval, x._host_value()) if type(x) is CommittedArray else x for x in args]
    return [
        CommittedArray(o.aval, None, o._device_buffer(device))
        for o in host_apply(prim, plain, params)
    ]


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


def lowered_form(closed, donated=None, consts=(), keep_unused=False):
    """``closed`` as jit lowers it, as JAX's: its first ``len(consts)`` inputs (a trace's
    constants, which callers pass first) inlined as the constants ``consts``; without the
    equations whose results nothing reads and without the inputs nothing reads
    (unless ``keep_unused``). Returns the jaxpr, the positions of the inputs kept (None: all)
    and ``donated`` for those. A program holding pmaps keeps every input (its replicas take
    the whole arguments)."""
    if replicas_needed(closed.jaxpr) != 1:
        return without_dead_code(closed), None, donated
    n = len(consts)
    if n:
        jaxpr = closed.jaxpr
        closed = ClosedJaxpr(
            Jaxpr(
                list(jaxpr.constvars) + jaxpr.invars[:n],
                jaxpr.invars[n:],
                jaxpr.outvars,
                jaxpr.eqns,
            ),
            list(closed.consts) + list(consts),
        )
    pruned, used = dce.dce_closed_jaxpr(
        closed, [True] * len(closed.jaxpr.outvars), prune_inputs=not keep_unused
    )
    if keep_unused:
        used = [True] * len(used)
    if all(used) and not n:
        return pruned, None, donated
    kept = tuple(n + i for i, u in enumerate(used) if u)
    return pruned, kept, None if donated is None else tuple(donated[i] for i in kept)


def compile_jaxpr(
    closed,
    name,
    device=None,
    donated=None,
    min_cache_secs=0.0,
    options=(),
    module=None,
    consts=(),
    keep_unused=False,
):
    """Compile a const-free ClosedJaxpr (cached per jaxpr, device, donated inputs and XLA
    ``options``, ``(name, value)`` pairs; on disk too, if compiling took ``min_cache_secs``
    or more). ``consts``: the values of its first inputs, inlined (``lowered_form``): callers
    still pass every input, and the executable drops those it inlined or does not read
    (unless ``keep_unused``). ``module``: the jaxpr already lowered by ``lower_to_module``
    with these arguments (a ``Lowered`` stage's), so that compiling does not lower it again."""
    per_jaxpr = _compiled.setdefault(closed.jaxpr, {})
    key = (device, donated, options, keep_unused) if options or keep_unused else (device, donated)
    entry = per_jaxpr.get(key)
    if entry is None:
        # A program holding pmaps runs as one replica per device they need.
        replicas = replicas_needed(closed.jaxpr)
        log = config.values.log_compiles  # as JAX: WARNINGs while the flag is on
        if log:
            _log.warning(
                "Compiling %s with global shapes and types %s.",
                name,
                [v.aval for v in closed.jaxpr.invars],
            )
            start = time.perf_counter()
        lowered, kept, kept_donated = lowered_form(closed, donated, consts, keep_unused)
        num_inputs = len(lowered.in_avals)
        if module is None:
            module = mlir.lower_to_module(lowered, name, replicas, kept_donated)
        if log:
            lowered = time.perf_counter()
            _log.warning(
                "Finished jaxpr to MLIR module conversion jit(%s) in %.6f sec",
                name,
                lowered - start,
            )
        if replicas == 1:
            exe = runtime.compile_module(
                module, closed.out_avals, device, min_cache_secs, options, num_inputs
            )
            exe.kept = kept
        else:
            exe = runtime.compile_replicated(module, closed.out_avals, replicas, options)
        if log:
            _log.warning(
                "Finished XLA compilation of jit(%s) in %.6f sec",
                name,
                time.perf_counter() - lowered,
            )
        entry = per_jaxpr[key] = Compiled(exe, closed.out_avals, device)
    return entry


_single_eqn = {}


def clear_caches():
    """Forget the compiled programs of jaxprs and of eager single primitives."""
    _compiled.clear()
    _single_eqn.clear()
    _plans.clear()
    _param_plans.clear()


def device_apply(prim, args, params):
    rule = core.eager_rules.get(prim)
    if rule is not None:
        return rule(*args, **params)
    if ShardedArray in array_rules and any(type(x) is ShardedArray for x in args):
        return array_rules[ShardedArray](prim, args, params)
    if any(type(x) is CommittedArray for x in args):
        return _committed_apply(prim, args, params)
    avals = tuple(concrete_aval(x, prim) for x in args)
    key = (prim, tuple(params.items()), avals)
    try:
        compiled = _single_eqn.get(key)
    except TypeError:  # unhashable params: compile without caching
        compiled, key = None, None
    if compiled is None:
        if prim not in mlir.lowering_rules:  # nothing runs it: JAX's error for an impl-less one
            raise NotImplementedError(f"Evaluation rule for '{prim.name}' not implemented")
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


_eager_apply = None  # the eager path chosen by _choose_eager_path: host_apply or device_apply


def _choose_eager_path(path):
    """Install the eager path for flag value ``path`` ("host": NumPy on a CPU backend,
    "xla": compiled per primitive, as always on a GPU/TPU). The backend must have started."""
    global _eager_apply
    use_host = path == "host" and runtime.platform() == "cpu"
    _eager_apply = host_apply if use_host else device_apply
    _install_eager_impl(config.slow_calls)


def _first_apply(prim, args, params):
    """Choose the eager path once the backend is known, then use it."""
    _choose_eager_path(config.values.eager_path)
    return core.eval_trace.apply(prim, args, params)


def _eager_path_changed(path):
    # Before the first eager op the backend may not have started (jax_num_cpu_devices can
    # still change): _first_apply reads the flag then.
    if _eager_apply is not None:
        _choose_eager_path(path)


# --------------------------------------------------------------------------- debug_nans/infs


def invalid_value(values):
    """ "nan" or "inf" when a concrete floating-point value among ``values`` holds one that
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
            raise FloatingPointError(
                f"invalid value ({kind}) encountered in {prim.name} (at {where})"
            )
    return outs


def _install_eager_impl(slow):
    if _eager_apply is None:  # the backend has not started: _first_apply installs it later
        return
    core.set_eager_impl(_checked_apply if slow else _eager_apply)


core.set_eager_impl(_first_apply)
config.on_update("slow_calls", _install_eager_impl)
config.on_update("xform_eager_path", _eager_path_changed)
