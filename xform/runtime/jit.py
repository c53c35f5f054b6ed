"""jit's machinery: a jitted function's call, from its arguments to its cache (jit_cache.py)
and the program that runs them.

``JitFunction.__call__`` tries the fast paths first (Arrays already on the device keyed by the
identity of their avals; then pytrees, Python scalars and static values; then sharded
Arrays), then the general path: split the static arguments, flatten, look the signature up
in the function's ``JitCache`` (tracing on a miss), and run the entry's executable on one
device, partitioned over a mesh (partitioned.py), or bind ``jit_p`` under a transformation.
Pytrees are flattened here; everything below works on flat lists.
"""

import functools
import gc
import inspect
import logging
import threading
import time
import warnings

import numpy as np

from lowering import runtime
from xform import config, core, dtypes, pytree
from xform.core import Tracer
from xform.interpret.staging import convert_constvars, trace_to_jaxpr
from xform.primitives.call import jit_p
from xform.primitives.refs import AbstractRef, has_refs
from xform.runtime import dispatch, jit_refs, partitioned, stages
from xform.runtime.array import Array, CommittedArray, ShardedArray
from xform.runtime.jit_cache import (
    MISS,
    SCALAR_TYPES,
    CacheEntry,
    Trace,
    cache_of,
    direct_call,
    direct_signature,
    flat_tree,
    remember,
    with_scalar_buffers,
)
from xform.traceback_util import TracingName, filter_exception, register_boundary


def fun_name(fun):
    return getattr(fun, "__name__", None) or type(fun).__name__


def arg_avals(leaves, in_tree, fun, abstractify=core.get_aval):
    try:
        return [abstractify(x) for x in leaves]
    except TypeError:
        tree = pytree.tree_unflatten(in_tree, leaves)
        for keys, x in pytree.tree_flatten_with_path(tree)[0]:
            try:
                abstractify(x)
            except TypeError as e:
                where = ("args" if keys[0].idx == 0 else "kwargs") + pytree.keystr(keys[1:])
                raise TypeError(
                    f"Error interpreting argument to {fun_name(fun)} as an abstract array: the "
                    f"value at {where} is of type {type(x).__name__} ({e}). Arguments must be "
                    "arrays or scalars; mark other arguments static with `static_argnums` or "
                    "`static_argnames`."
                ) from None
        raise


def flatten_fun(fun, in_tree, store, statics=None):
    """A function of flat leaves that calls ``fun`` on the pytree and flattens its output."""

    def flat_fun(*leaves):
        args, kwargs = pytree.tree_unflatten(in_tree, leaves)
        if statics is not None:
            args, kwargs = statics.merge(args, kwargs)
        out = fun(*args, **kwargs)
        out_leaves, out_tree = pytree.tree_flatten(out)
        for i, x in enumerate(out_leaves):
            if not isinstance(x, Tracer) and not core.is_concrete_array(x):
                path = pytree.keystr(pytree.tree_flatten_with_path(out)[0][i][0])
                raise TypeError(
                    f"{fun_name(fun)} returned a value of type "
                    f"{type(x).__name__} at output path {path or '(root)'}, which "
                    "is not a valid xform type: outputs must be arrays or scalars"
                )
        store["out_tree"] = out_tree
        return out_leaves

    return flat_fun


# --------------------------------------------------------------------------- static arguments


class _Statics:
    """Static arguments pulled out of a call, and how to put them back."""

    __slots__ = ("positions", "pos_values", "kw_values", "key")

    def __init__(self, positions, pos_values, kw_values):
        self.positions = positions
        self.pos_values = pos_values
        self.kw_values = kw_values
        self.key = (positions, pos_values, tuple(sorted(kw_values.items())))

    def merge(self, args, kwargs):
        args = list(args)
        for i, v in zip(self.positions, self.pos_values, strict=True):
            args.insert(i, v)
        return tuple(args), {**kwargs, **self.kw_values}


def _check_hashable(value, what, fun):
    try:
        hash(value)
    except TypeError as e:
        raise ValueError(
            f"Non-hashable static arguments are not supported: {what} of "
            f"{fun_name(fun)} is a {type(value).__name__} ({e}). Pass a hashable "
            "value (a tuple instead of a list), or make the argument non-static."
        ) from None


def normalize_statics(fun, static_argnums, static_argnames, what="static"):
    """Positions and names of the arguments ``*_argnums``/``*_argnames`` select (``what``:
    "static" or "donate"). Where only one of the two is given the other is inferred from the
    signature. As JAX, where both are given (``()`` included) each is taken as it is:
    positions select positional arguments only, names keyword ones only."""
    infer = static_argnums is None or static_argnames is None
    nums = (
        ()
        if static_argnums is None
        else ((static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums))
    )
    names = (
        ()
        if static_argnames is None
        else ((static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames))
    )
    try:
        params = list(inspect.signature(fun).parameters.values())
    except (TypeError, ValueError):
        params = None
    if params is not None:
        positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        n = len(positional)
        has_varargs = any(p.kind == p.VAR_POSITIONAL for p in params)
        norm = []
        for num in nums:
            i = num
            if i < 0:
                if has_varargs:
                    raise ValueError(
                        f"jit of {fun_name(fun)}: negative {what}_argnums "
                        f"({i}) need a fixed number of positional arguments"
                    )
                i += n
            if not has_varargs and not 0 <= i < n:
                raise ValueError(
                    f"Jitted function has {what}_argnums={nums}, but only "
                    f"accepts {n} positional arguments."
                )  # (JAX's words)
            norm.append(i)
        nums = tuple(norm)
        if not any(p.kind == p.VAR_KEYWORD for p in params):
            unknown = set(names) - {
                p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
            }
            if unknown:
                raise ValueError(
                    f"Jitted function has invalid argnames {unknown} in "
                    f"{what}_argnames. Function does not take these args."
                )
        if infer:  # a name that is also a positional parameter selects its position too
            by_name = {p.name: i for i, p in enumerate(positional)}
            nums = tuple(sorted(set(nums) | {by_name[m] for m in names if m in by_name}))
            names = tuple(sorted(set(names) | {positional[i].name for i in nums if i < n}))
    return tuple(sorted(set(nums))), frozenset(names)


def split_statics(fun, args, kwargs, static_argnums, static_argnames):
    if not static_argnums and not static_argnames:
        return args, kwargs, None
    positions = tuple(i for i in static_argnums if i < len(args))
    pos_values = tuple(args[i] for i in positions)
    for i, v in zip(positions, pos_values, strict=True):
        _check_hashable(v, f"static argument {i}", fun)
    dyn_args = tuple(a for i, a in enumerate(args) if i not in positions)
    kw_values = {k: v for k, v in kwargs.items() if k in static_argnames}
    for k, v in kw_values.items():
        _check_hashable(v, f"static argument {k!r}", fun)
    dyn_kwargs = {k: v for k, v in kwargs.items() if k not in static_argnames}
    return dyn_args, dyn_kwargs, _Statics(positions, pos_values, kw_values)


class JitOptions:
    """The normalized options that the jit wrappers of one function with the same options
    share, and their ``slot`` in the function's ``JitCache``. Holds no reference to the
    function (nor to its cache)."""

    __slots__ = (
        "name",
        "static_argnums",
        "static_argnames",
        "has_statics",
        "donate_argnums",
        "donate_argnames",
        "device",
        "slot",
        "direct_calls",
        "sharded_calls",
        "wrapper_attrs",
        "shardings",
        "plain",
        "keep_unused",
    )

    def __init__(
        self,
        fun,
        slot,
        static_argnums,
        static_argnames,
        donate_argnums,
        donate_argnames,
        device,
        backend,
        in_shardings=None,
        out_shardings=None,
        keep_unused=False,
    ):
        self.name = name = fun_name(fun)
        self.keep_unused = bool(keep_unused)  # programs take the arguments they do not read
        self.static_argnums, self.static_argnames = normalize_statics(
            fun, static_argnums, static_argnames
        )
        self.has_statics = bool(self.static_argnums or self.static_argnames)
        self.donate_argnums, self.donate_argnames = normalize_statics(
            fun, donate_argnums, donate_argnames, "donate"
        )
        both = set(self.donate_argnums) & set(self.static_argnums)
        if both:
            raise ValueError(
                f"jit of {name}: arguments {sorted(both)} are both static "
                "and donated; static arguments are not buffers to donate"
            )
        if backend is not None and device is None:
            device = runtime.devices(backend)[0]
        self.device = device
        # (in_shardings, out_shardings) of a partitioned jit (partitioned.py), else None
        self.shardings = (
            None
            if in_shardings is None and out_shardings is None
            else (in_shardings, out_shardings)
        )
        partitioned.check_constrained(in_shardings, "in_shardings")
        partitioned.check_constrained(out_shardings, "out_shardings")
        # Its key in the cache's entries, and its fast-path indices, which the function's
        # JitCache holds (and clears): a call signature (see direct_signature: the ids of
        # the Arrays' avals, static values, scalar types) -> a function of its leaves, for
        # signatures run before on the default device without donation (jit's fastest path);
        # the same for sharded Arrays, keyed by the ids of their avals and shardings.
        self.slot, self.direct_calls, self.sharded_calls = slot
        # Calls with positional arguments only may take the fastest path's own loop.
        self.plain = not self.has_statics and self.shardings is None
        # The names functools.update_wrapper copies (``__name__``, ``__doc__``, ...), read
        # once; not ``__wrapped__``, which would keep the function alive through its cache.
        self.wrapper_attrs = {
            a: getattr(fun, a) for a in functools.WRAPPER_ASSIGNMENTS if hasattr(fun, a)
        }

    def key(self):
        return (
            self.static_argnums,
            self.static_argnames,
            self.donate_argnums,
            self.donate_argnames,
            self.device,
            self.shardings,
            self.keep_unused,
        )


_NO_OPTIONS = (None,) * 8 + (False,)


def _hashable(option):
    return tuple(option) if isinstance(option, list) else option


def jit_state(fun, options):
    """The cache of ``fun`` and the options object of ``jit(fun, **options)`` (``options``:
    jit's keyword arguments in order), made on first use."""
    cache = cache_of(fun)
    if options == _NO_OPTIONS and cache.default is not None:
        return cache.default, cache
    try:
        state = cache.options.get(options)
    except TypeError:  # unhashable options: lists of argnums, say
        options = tuple(_hashable(o) for o in options)
        try:
            state = cache.options.get(options)
        except TypeError:  # (shardings as dicts, say): found by equality
            state = JitOptions(fun, (None, None, None), *options)
            for known in cache.unhashable:
                if known.key() == state.key():
                    return known, cache
            state.slot, state.direct_calls, state.sharded_calls = cache.new_slot()
            cache.unhashable.append(state)
            return state, cache
    if state is None:
        state = JitOptions(fun, cache.new_slot(), *options)
        state = cache.options.setdefault(state.key(), state)
        cache.options[options] = state
    if options == _NO_OPTIONS:
        cache.default = state
    return state, cache


class _Checking(threading.local):
    active = False  # inside _checked_call's own call of the jitted function


_checking = _Checking()
_log = logging.getLogger(__name__)  # "xform.runtime.jit": cache misses, as JAX's jax._src.pjit


def _leaf_names(fun, in_tree, statics_key):
    """A name per argument leaf, as the user wrote it: ``'x'``, ``'params' at ['w']``."""
    return [
        f"{name!r}{' at ' + rest if rest else ''}"
        for name, rest in stages.leaf_paths(fun, in_tree, statics_key)
    ]


def _describe(aval):
    return aval.str_short() + (" (weakly typed)" if aval.weak_type else "")


def _why_retraced(fun, key, previous):
    """What differs between two trace keys of ``fun``: which argument, and how."""
    in_tree, statics, avals, context, axis_env = key
    old_tree, old_statics, old_avals, old_context, _ = previous
    if in_tree != old_tree:
        return f"the pytree structure of the arguments changed from {old_tree} to {in_tree}"
    if statics != old_statics:
        try:
            params = list(inspect.signature(fun).parameters)
        except (TypeError, ValueError):
            params = []
        old_pos = dict(zip(old_statics[0], old_statics[1], strict=True)) if old_statics else {}
        new_pos = dict(zip(statics[0], statics[1], strict=True)) if statics else {}
        changed = [
            (repr(params[i]) if i < len(params) else f"args[{i}]", old_pos.get(i), v)
            for i, v in new_pos.items()
            if old_pos.get(i, v) != v or i not in old_pos
        ]
        old_kw, new_kw = (
            dict(old_statics[2]) if old_statics else {},
            dict(statics[2]) if statics else {},
        )
        changed += [(repr(k), old_kw.get(k), v) for k, v in new_kw.items() if old_kw.get(k) != v]
        if changed:
            name, old, new = changed[0]
            return f"static argument {name} changed from {old!r} to {new!r}"
        return "the static arguments changed"
    for name, new, old in zip(_leaf_names(fun, in_tree, statics), avals, old_avals, strict=True):
        if new != old:
            what = (
                "shape"
                if new.shape != old.shape
                else "dtype"
                if new.dtype != old.dtype
                else "weak type"
            )
            return f"argument {name} changed {what}: {_describe(old)} -> {_describe(new)}"
    if context != old_context:
        return (
            f"the flags a trace depends on changed (x64, matmul precision, promotion, "
            f"PRNG): {old_context} -> {context}"
        )
    return f"the named axes in scope changed to {axis_env}"


def _note_retrace(fun, state, traces, key):
    """A jitted function traces again: log why (jax_explain_cache_misses) and, on its third
    trace, warn once naming what changed (xform_warn_recompiles)."""
    flags = config.values
    # xform's own jitted helpers (random's samplers, ...) retrace per user shape by design:
    # the warning is for the user's functions.
    third = len(traces) == 2 and flags.warn_recompiles and not _is_xform_internal(fun)
    if not (third or flags.explain_cache_misses):
        return
    info = core.source_info()
    reason = _why_retraced(fun, key, next(reversed(traces)))
    where = core.format_source_info(info)
    if flags.explain_cache_misses:
        _log.warning("TRACING CACHE MISS at %s because: for %s, %s", where, state.name, reason)
    if third:
        message = (
            f"jit of {state.name} is tracing for the third time (called at {where}): "
            f"{reason}. Each new signature traces and compiles again; keep shapes, "
            "dtypes and static values fixed, or silence this with "
            "xform.config.update('xform_warn_recompiles', False)."
        )
        if info is None:
            warnings.warn(message, UserWarning, stacklevel=2)
        else:
            warnings.warn_explicit(message, UserWarning, info[0], info[1])


def _is_xform_internal(fun):
    module = getattr(fun, "__module__", None) or ""
    return module == "xform" or module.startswith(("xform.", "lowering."))


def _check_tracer_leaks(jaxpr, name):
    """jax_check_tracer_leaks: raise when a tracer of the trace that made ``jaxpr`` outlives
    it (stored in a global, a closure, an object), as JAX's ``Leaked trace`` error."""
    gc.collect()
    own = {id(v) for v in jaxpr.invars} | {id(v) for e in jaxpr.eqns for v in e.outvars}
    leaked = [
        t
        for t in gc.get_objects()
        if isinstance(t, Tracer) and id(getattr(t, "jaxpr_var", None)) in own
    ]
    if leaked:
        shown = leaked[:3]
        holders = [
            type(r).__name__
            for t in shown
            for r in gc.get_referrers(t)
            if r is not leaked and r is not shown
        ]
        raise Exception(  # noqa: TRY002  (JAX raises a plain Exception)
            f"Leaked trace of jit of {name}: {len(leaked)} tracer(s) outlived it "
            f"({', '.join(repr(t.aval) for t in shown)}), referred to by "
            f"{', '.join(holders) or 'unknown objects'}. A traced value was kept after the "
            "function returned (in a global, a closure or an object's attribute)."
        )


def _warn_unusable_donations(avals, donated, out_avals):
    """Warn, as JAX does, of donated arguments that no output of the same shape and dtype can
    reuse (their buffers stay alive: the program cannot write a result there). One that a
    leftover output of as many elements may reuse is offered to XLA instead (lowering/mlir.py)."""
    free = [(a.shape, a.dtype) for a in out_avals]
    unmatched = []
    for aval, d in zip(avals, donated, strict=True):
        if d:
            try:
                free.remove((aval.shape, aval.dtype))
            except ValueError:
                unmatched.append(aval)
    sizes = [int(np.prod(shape)) for shape, _ in free]
    unusable = []
    for aval in unmatched:
        if aval.size in sizes:
            sizes.remove(aval.size)
        else:
            unusable.append(f"{aval.dtype.name}[{','.join(map(str, aval.shape))}]")
    if unusable:
        warnings.warn(
            f"Some donated buffers were not usable: {', '.join(unusable)}.\n"
            "See an explanation at "
            "https://docs.jax.dev/en/latest/faq.html#buffer-donation.",
            stacklevel=4,
        )


class JitFunction:
    """A function compiled with XLA on first call per signature; see ``jit``."""

    # No instance dict to fill: a fresh wrapper per call (``jit(f)(x)`` inline) costs little.
    # What functools.update_wrapper would copy (the name, the docstring, the function's own
    # attributes, ``__wrapped__``) is read through to the function instead.
    __slots__ = ("_fun", "_state", "_cache", "__weakref__")

    def __init__(self, fun, state, cache):
        self._fun = fun
        self._state = state  # its JitOptions
        self._cache = cache  # its function's JitCache

    def __getattr__(self, name):
        if name == "__wrapped__":
            return self._fun
        if name in JitFunction.__slots__:  # not set (yet): no state to read through
            raise AttributeError(name)
        attrs = self._state.wrapper_attrs
        if name in attrs:
            return attrs[name]
        try:
            return vars(self._fun)[name]
        except (KeyError, TypeError):
            raise AttributeError(
                f"{type(self).__name__!r} object has no attribute {name!r}"
            ) from None

    __doc__ = property(lambda self: self._state.wrapper_attrs.get("__doc__"))
    __module__ = property(lambda self: self._state.wrapper_attrs.get("__module__"))

    _name = property(lambda self: self._state.name)
    _device = property(lambda self: self._state.device)

    def __get__(self, instance, owner):  # jit on methods
        return self if instance is None else functools.partial(self, instance)

    def _signature(self, args, kwargs, abstractify=core.get_aval):
        """``(cache key, leaves, in_tree, statics, avals)`` of a call's arguments."""
        state = self._state
        dyn_args, dyn_kwargs, statics = split_statics(
            self._fun, args, kwargs, state.static_argnums, state.static_argnames
        )
        leaves, in_tree = pytree.tree_flatten((dyn_args, dyn_kwargs))
        avals = arg_avals(leaves, in_tree, self._fun, abstractify)
        key = (
            in_tree,
            None if statics is None else statics.key,
            tuple(avals),
            config.trace_context(),
            core.trace_state.axis_env,
        )
        return key, leaves, in_tree, statics, avals

    def _entry(self, args, kwargs, abstractify=core.get_aval):
        key, leaves, in_tree, statics, avals = self._signature(args, kwargs, abstractify)
        return self._lookup(key, in_tree, statics, avals), leaves, avals

    def _lookup(self, key, in_tree, statics, avals):
        state, cache = self._state, self._cache
        trace = cache.traces.get(key)
        if trace is not None:
            entry = trace.entries.get(state.slot)
            if entry is not None:
                return entry
        else:
            if cache.traces:
                _note_retrace(self._fun, state, cache.traces, key)
            trace = self._trace(in_tree, statics, avals)
        donated = self._donated_leaves(in_tree, statics)
        if donated is not None:
            _warn_unusable_donations(avals, donated, trace.jaxpr.out_avals)
            donated = (False,) * len(trace.consts) + donated
        entry = CacheEntry(
            trace.jaxpr,
            trace.consts,
            trace.out_tree,
            state.name,
            donated,
            trace.float0s,
            key[1],
            state.keep_unused,
        )
        if not entry.consts_are_traced:
            cache.add(key, trace, state.slot, entry)
        return entry

    def _lookup_refs(self, key, in_tree, statics, avals, leaves):
        """``_lookup``, or for a call that involves references the call's results."""
        try:
            if key in jit_refs.known.get(self._cache, ()) or any(
                type(a) is AbstractRef for a in avals
            ):
                raise jit_refs.RefsFound
            return self._lookup(key, in_tree, statics, avals)
        except jit_refs.RefsFound:
            names = lambda: [  # noqa: E731  (as JAX names them: x_ref, c[0])
                n + r for n, r in stages.leaf_paths(self._fun, in_tree, key[1])
            ]
            return jit_refs.call(self, key, in_tree, statics, avals, leaves, names)

    def _trace(self, in_tree, statics, avals, refs_ok=False):
        store = {}
        flat = flatten_fun(self._fun, in_tree, store, statics)

        def float0s_as_bools(*leaves):
            # float0 (the tangent type of integers) has no XLA type: the program returns bool
            # zeros in its place, and the call puts float0 zeros back.
            outs = flat(*leaves)
            store["float0s"] = tuple(
                (i, np.shape(x))
                for i, x in enumerate(outs)
                if getattr(x, "dtype", None) == dtypes.float0
            )
            for i, shape in store["float0s"]:
                outs[i] = np.zeros(shape, np.bool_)
            return outs

        log = config.values.log_compiles
        start = time.perf_counter() if log else 0.0
        name = TracingName(
            f"tracing `{self._state.name}` for jit",
            self._fun,
            "jit",
            lambda: [
                f"{n}{path}"
                for n, path in stages.leaf_paths(self._fun, in_tree, statics and statics.key)
            ],
        )
        closed = trace_to_jaxpr(float0s_as_bools, avals, name)
        if log:  # as JAX's, with the line that called the function
            _log.warning(
                "Finished tracing + transforming %s for jit in %.6f sec (called at %s)",
                self._state.name,
                time.perf_counter() - start,
                core.format_source_info(core.source_info()),
            )
        if config.values.check_tracer_leaks:
            _check_tracer_leaks(closed.jaxpr, self._state.name)
        if not refs_ok and has_refs(closed.jaxpr):
            raise jit_refs.RefsFound  # the call discharges them (jit_refs.call)
        jaxpr, consts = convert_constvars(closed)
        return Trace(jaxpr, consts, store["out_tree"], store["float0s"])

    def _donated_leaves(self, in_tree, statics):
        """A bool per argument leaf: is it inside a donated argument? None if none is."""
        state = self._state
        if not state.donate_argnums and not state.donate_argnames:
            return None
        dyn_args, dyn_kwargs = pytree.tree_unflatten(in_tree, range(in_tree.num_leaves))
        static_positions = () if statics is None else statics.positions
        positions = [
            i for i in range(len(dyn_args) + len(static_positions)) if i not in static_positions
        ]
        donated = set()
        for position, arg in zip(positions, dyn_args, strict=True):
            if position in state.donate_argnums:
                donated.update(pytree.tree_leaves(arg))
        for name, arg in dyn_kwargs.items():
            if name in state.donate_argnames:
                donated.update(pytree.tree_leaves(arg))
        if not donated:  # (donate_argnums naming arguments without leaves: nothing donated)
            return None
        return tuple(i in donated for i in range(in_tree.num_leaves))

    @register_boundary
    def __call__(self, *args, **kwargs):
        try:  # an API boundary (xform/traceback_util.py): a try costs nothing until it raises
            return self._call(*args, **kwargs)
        except Exception as e:
            filter_exception(e)
            raise

    def _call(self, *args, **kwargs):
        if config.slow_calls and not _checking.active:  # disable_jit, debug_nans/infs
            return self._checked_call(args, kwargs)
        if (
            (state := self._state).plain
            and not kwargs
            and core.trace_state.trace is core.eval_trace
        ):
            # Fastest path: every argument is one Array already on the device, and these
            # very avals (keyed by identity: no Python hash per aval) were called before
            # with a program that takes the buffers as they are.
            key, bufs = [config.trace_context()], []
            for x in args:
                if type(x) is not Array or x._buf is None:
                    out = (
                        self._sharded_call(args)
                        if type(x) is ShardedArray
                        else self._keyed_call(args, kwargs)
                    )  # maybe Python scalars among Arrays
                    if out is not MISS:
                        return out
                    break
                key.append(id(x.aval))
                bufs.append(x._buf)
            else:
                key.append(len(args))  # (as _direct_signature's keys end)
                call = state.direct_calls.get(tuple(key))
                if call is not None:
                    return call(bufs)
        elif (
            state.direct_calls or state.sharded_calls
        ) and core.trace_state.trace is core.eval_trace:
            out = self._keyed_call(args, kwargs)
            if out is not MISS:
                return out
        statics = None
        if state.has_statics:
            dyn_args, dyn_kwargs, statics = split_statics(
                self._fun, args, kwargs, state.static_argnums, state.static_argnames
            )
            leaves, in_tree = pytree.tree_flatten((dyn_args, dyn_kwargs))
        else:
            leaves, in_tree = pytree.tree_flatten((args, kwargs))
        statics_key = None if statics is None else statics.key
        context, axis_env = config.trace_context(), core.trace_state.axis_env
        # One pass over the leaves: plain Arrays give their avals and buffers as they are.
        avals, on_device = [], True
        for x in leaves:
            if type(x) is not Array:
                avals = arg_avals(leaves, in_tree, self._fun)
                concrete = not any(isinstance(x, Tracer) for x in leaves)
                break
            avals.append(x.aval)
            on_device = on_device and x._buf is not None
        else:
            concrete = True
            if on_device and core.trace_state.trace is core.eval_trace and state.shardings is None:
                # Second fastest path: pytrees, keywords or static arguments around Arrays
                # already on the default device, for a signature whose program takes them.
                entry = self._cache.entry(
                    (in_tree, statics_key, tuple(avals), context, axis_env), state.slot
                )
                if entry is not None and entry.direct is not None:
                    outs = entry.direct.call([x._buf for x in leaves])
                    return entry.out_tree.unflatten(
                        [Array(a, None, b) for a, b in zip(entry.out_avals, outs, strict=True)]
                    )
        key = (in_tree, statics_key, tuple(avals), context, axis_env)
        if type(entry := self._lookup_refs(key, in_tree, statics, avals, leaves)) is not CacheEntry:
            return entry  # a call with references (jit_refs.call): its results
        if concrete and core.trace_state.trace is core.eval_trace:
            if state.shardings is not None or partitioned.needs_partitioning(entry, leaves):
                outs = self._run_partitioned(entry, args, kwargs, leaves, avals, in_tree)
            elif state.device is None and any(type(x) is CommittedArray for x in leaves):
                device = dispatch.committed_device(leaves, avals, state.name)
                outs = [
                    CommittedArray(x.aval, None, x._buf) if type(x) is Array else x
                    for x in entry.run(leaves, avals, device)
                ]
            else:
                outs = entry.run(leaves, avals, state.device)
                if not axis_env:
                    self._remember_keyed_call(entry, args, kwargs)
        else:
            jaxpr = (
                entry.jaxpr
                if state.shardings is None
                else partitioned.constrained_jaxpr(
                    entry, self._positional(args, kwargs), *state.shardings, state.name
                )
            )
            outs = entry.restore_float0s(
                jit_p.bind(*entry.consts, *leaves, jaxpr=jaxpr, name=state.name)
            )
        return pytree.tree_unflatten(entry.out_tree, outs)

    def _sharded_call(self, args):
        """The call of sharded Arrays (positional, or a pytree of them) whose avals and
        layouts (by identity) were called before with a program that takes their buffers as
        they are (``MISS`` if not)."""
        calls = self._state.sharded_calls
        if not calls:
            return MISS
        key, bufs, leaves = [config.trace_context()], [], args
        if any(type(x) is not ShardedArray for x in args):  # a pytree: keyed by its structure
            leaves, tree = pytree.tree_flatten(args)
            key.append(tree)
        for x in leaves:
            if type(x) is not ShardedArray:
                return MISS
            buf = x._buf
            key.append(id(x.aval))
            key.append(id(buf.sharding))
            bufs.append(buf)
        call = calls.get(tuple(key))
        return MISS if call is None else call(bufs)

    def _run_partitioned(self, entry, args, kwargs, leaves, avals, in_tree):
        """Run ``entry`` as one partitioned program; a call of sharded Arrays alone is made
        the fast path for their types and layouts."""
        state = self._state
        positional = self._positional(args, kwargs)
        outs = partitioned.run_partitioned(
            entry, leaves, avals, positional, *(state.shardings or (None, None)), state.name
        )
        if not kwargs and not state.has_statics and all(type(x) is ShardedArray for x in leaves):
            self._remember_sharded_call(entry, args, leaves, avals, in_tree, positional)
        return outs

    def _remember_sharded_call(self, entry, args, leaves, avals, in_tree, positional):
        """Make a partitioned call of sharded Arrays ``args`` (or a pytree of them) jit's
        fast path for them: keyed as ``_sharded_call`` keys it."""
        state = self._state
        call = partitioned.direct_call(
            entry, leaves, avals, positional, *(state.shardings or (None, None)), state.name
        )
        if call is None:
            return
        shardings = [x._buf.sharding for x in leaves]
        key = [config.trace_context()]
        if in_tree != flat_tree(len(args)):
            key.append(pytree.tree_structure(args))
        for a, s in zip(avals, shardings, strict=True):
            key += [id(a), id(s)]
        # The entry keeps the avals and shardings whose ids key it.
        remember(state.sharded_calls, tuple(key), lambda bufs, _keep=(avals, shardings): call(bufs))

    def _keyed_call(self, args, kwargs):
        """The call of a signature seen before by ``_remember_keyed_call`` (``MISS`` if
        not): Arrays keyed by their avals' ids, static arguments by value, Python scalars
        by type; or of a pytree of sharded Arrays seen before (``_sharded_call``)."""
        state = self._state
        if state.sharded_calls and not kwargs:
            out = self._sharded_call(args)
            if out is not MISS:
                return out
        if not state.direct_calls:
            return MISS
        signature = direct_signature(state, args, kwargs)
        if signature is None:
            return MISS
        try:
            call = state.direct_calls.get(signature[0])
        except TypeError:  # an unhashable static argument: the ordinary path says so
            return MISS
        return MISS if call is None else call(signature[1])

    def _remember_keyed_call(self, entry, args, kwargs):
        """Make this call's signature a fast path (on the default device, without
        donation or a mesh)."""
        state = self._state
        if (
            state.shardings is not None
            or state.device is not None
            or entry.donated is not None
            or partitioned.jaxpr_mesh(entry.jaxpr.jaxpr)
        ):
            return
        signature = direct_signature(state, args, kwargs)
        if signature is None:
            return
        key, bufs = signature
        avals = [x.aval for x in pytree.tree_leaves((args, kwargs)) if type(x) is Array]
        scalars = [
            (i, a.dtype)
            for i, (b, a) in enumerate(
                zip(bufs, entry.jaxpr.in_avals[len(entry.consts) :], strict=True)
            )
            if type(b) in SCALAR_TYPES
        ]
        # The argument avals whose ids key the call live as long as it.
        call = direct_call(entry, avals)
        if scalars:
            call = with_scalar_buffers(call, scalars)
        remember(state.direct_calls, key, call)

    def _positional(self, args, kwargs):
        """The dynamic positional arguments (what ``in_shardings`` is a prefix of)."""
        state = self._state
        return split_statics(self._fun, args, kwargs, state.static_argnums, state.static_argnames)[
            0
        ]

    def _checked_call(self, args, kwargs):
        """A call while some thread may have ``jax_disable_jit``, ``jax_debug_nans`` or
        ``jax_debug_infs`` on: as JAX, disable_jit calls the function itself (op by op, its
        Python control flow on concrete values), and a NaN/inf in the results re-runs the
        call op by op to raise ``FloatingPointError`` at the primitive that made it."""
        flags = config.values
        if flags.disable_jit:
            return self._fun(*args, **kwargs)
        _checking.active = True
        try:
            out = self(*args, **kwargs)
        finally:
            _checking.active = False
        if not (flags.debug_nans or flags.debug_infs):
            return out
        kind = dispatch.invalid_value(pytree.tree_leaves(out))
        if kind is None:
            return out
        print(
            f"Invalid {kind} value encountered in the output of a jit function "
            f"({self._state.name}). Calling the de-optimized version."
        )
        with config.disable_jit():
            self._fun(*args, **kwargs)  # raises FloatingPointError at the primitive
        raise FloatingPointError(
            f"invalid value ({kind}) encountered in {self._state.name}. Because "
            "jax_debug_nans and/or jax_debug_infs is set, the de-optimized function (the "
            "function as if the `jit` decorator were removed) was called to find the "
            "primitive, but it did not produce invalid values: the compiled program's "
            "optimizations may have made the value, or it is a nan/inf input or constant."
        )

    def trace(self, *args, **kwargs):
        """Trace for these arguments (arrays or ``ShapeDtypeStruct``s): a ``Traced`` stage,
        whose ``.jaxpr`` is the trace and ``.lower()`` the next stage."""
        key, _, in_tree, statics, avals = self._signature(args, kwargs, stages.abstractify)
        traced = stages.Traced(
            self,
            self._lookup(key, in_tree, statics, avals),
            in_tree,
            avals,
            lambda: partitioned.lower(self, traced, args, kwargs),
        )
        return traced

    def lower(self, *args, **kwargs):
        """Trace and lower for these arguments: a ``Lowered`` stage (``.as_text()`` is the
        StableHLO module, ``.compile()`` the next stage)."""
        return self.trace(*args, **kwargs).lower()

    def eval_shape(self, *args, **kwargs):
        entry, _, _ = self._entry(args, kwargs, stages.abstractify)
        return pytree.tree_unflatten(
            entry.out_tree, [stages.shape_struct(a) for a in entry.jaxpr.out_avals]
        )

    def clear_cache(self):
        """Forget this function's traces and compiled programs (of all its jit options)."""
        self._cache.clear()

    def _cache_size(self):
        return self._cache.count(self._state.slot)

    def __repr__(self):
        return f"<jit-compiled function {self._state.name}>"
