"""The public transformations: ``jit``, ``make_jaxpr``, ``eval_shape``, devices and transfer.

Pytrees are handled here, at the edge; everything below works on flat lists.
"""

import contextlib
import copy
import functools
import gc
import inspect
import logging
import math
import threading
import time
import warnings
import weakref

import numpy as np

from lowering import runtime
from xform import config, core, dtypes, pytree, stages
from xform.api import sharding as api_sharding
from xform.core import ShapedArray, Tracer
from xform.interpret.staging import convert_constvars, trace_to_jaxpr
from xform.primitives.call import jit_p
from xform.runtime import dispatch
from xform.runtime.array import Array, CommittedArray, ShardedArray


class ShapeDtypeStruct:
    """The shape and dtype of an array, without data (``eval_shape``'s outputs, a
    ``pure_callback``'s result type). Immutable and hashable, as JAX's.

    Args:
      shape: a sequence of ints.
      dtype: a dtype (not canonicalized: ``int64`` stays ``int64``), or a key dtype.
      sharding: optional, a ``jax.sharding.Sharding`` the array is laid out by.
      weak_type: whether the type is weak (a Python scalar's).
    """

    __slots__ = ("shape", "dtype", "sharding", "weak_type")

    def __init__(self, shape, dtype, *, sharding=None, weak_type=False):
        if dtype is None:
            raise ValueError("ShapeDtypeStruct: dtype must be specified.")
        if sharding is not None and not runtime.is_sharding(sharding):
            raise ValueError(
                "ShapeDtypeStruct: sharding should be an instance of "
                f"`jax.sharding.Sharding`. Got {sharding} of type "
                f"{type(sharding)}."
            )
        set_ = object.__setattr__
        set_(self, "shape", tuple(shape))
        set_(self, "dtype", dtype if dtypes.issubdtype(dtype, dtypes.extended) else np.dtype(dtype))
        set_(self, "sharding", sharding)
        set_(self, "weak_type", bool(weak_type))

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))

    @classmethod
    def like(cls, x):
        """The shape, dtype, weak type and sharding of an array (or of anything with
        ``shape`` and ``dtype``)."""
        aval = _abstractify(x)
        sharding = getattr(x, "sharding", None) if isinstance(x, ShardedArray) else None
        return cls(aval.shape, aval.dtype, sharding=sharding, weak_type=aval.weak_type)

    def update(self, **kwargs):
        """A copy with some of ``shape``, ``dtype``, ``sharding``, ``weak_type`` replaced."""
        unknown = set(kwargs) - set(self.__slots__)
        if unknown:
            raise TypeError(f"ShapeDtypeStruct.update: unexpected fields {sorted(unknown)}")
        fields = {k: getattr(self, k) for k in self.__slots__}
        return ShapeDtypeStruct(**{**fields, **kwargs})

    def __setattr__(self, name, value):
        raise RuntimeError(
            f"Cannot reassign attributes ({name}) of immutable ShapeDtypeStruct objects"
        )

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __array__(self, dtype=None, copy=None):
        # Whatever needs the value of a constant (a jit program's inputs, eager evaluation,
        # an inline literal) reads it as NumPy: here is where it learns there is none.
        raise TypeError(
            "A ShapeDtypeStruct does not have a value and cannot be used as a "
            "constant in an xform function."
        )

    def _key(self):
        return (self.shape, self.dtype, self.sharding, self.weak_type)

    def __eq__(self, other):
        return isinstance(other, ShapeDtypeStruct) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        sharding = f", sharding={self.sharding}" if self.sharding is not None else ""
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name}{sharding}{weak})"

    __str__ = __repr__


def _shape_dtype_struct_aval(x):
    return ShapedArray(x.shape, dtypes.canonicalize(x.dtype), x.weak_type)


# As in JAX, a ShapeDtypeStruct is a type without a value: a traced function may return one
# or compute with one it closes over (equinox's filtered and closure-converted functions
# do), staged as a constant of its type, so eval_shape and make_jaxpr see through it; only
# running the program needs a value (``__array__`` above).
core.pytype_aval_mappings[ShapeDtypeStruct] = _shape_dtype_struct_aval
core.valueless_types.add(ShapeDtypeStruct)


def _fun_name(fun):
    return getattr(fun, "__name__", None) or type(fun).__name__


def _abstractify(x):
    """The aval of an argument of a function being traced; shape-dtype structs allowed."""
    if (
        not core.is_concrete_array(x)
        and not isinstance(x, Tracer)
        and hasattr(x, "shape")
        and hasattr(x, "dtype")
    ):
        return ShapedArray(
            tuple(x.shape), dtypes.canonicalize(x.dtype), bool(getattr(x, "weak_type", False))
        )
    return core.get_aval(x)


def _arg_avals(leaves, in_tree, fun, abstractify=core.get_aval):
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
                    f"Error interpreting argument to {_fun_name(fun)} as an abstract array: the "
                    f"value at {where} is of type {type(x).__name__} ({e}). Arguments must be "
                    "arrays or scalars; mark other arguments static with `static_argnums` or "
                    "`static_argnames`."
                ) from None
        raise


def _flatten_fun(fun, in_tree, store, statics=None):
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
                    f"{_fun_name(fun)} returned a value of type "
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
            f"{_fun_name(fun)} is a {type(value).__name__} ({e}). Pass a hashable "
            "value (a tuple instead of a list), or make the argument non-static."
        ) from None


def _normalize_statics(fun, static_argnums, static_argnames, what="static"):
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
                        f"jit of {_fun_name(fun)}: negative {what}_argnums "
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


def _split_statics(fun, args, kwargs, static_argnums, static_argnames):
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


# --------------------------------------------------------------------------- jit


_LEAF = pytree.tree_structure(0)


@functools.lru_cache(maxsize=64)
def _flat_tree(n):
    return pytree.tree_structure((tuple(range(n)), {}))


class _CacheEntry:
    """One traced signature of a jitted function; compiled on its first eager call."""

    __slots__ = (
        "jaxpr",
        "consts",
        "const_avals",
        "out_tree",
        "out_avals",
        "compiled",
        "name",
        "single_output",
        "consts_are_traced",
        "donated",
        "direct",
        "float0s",
        "statics_key",
        "keep_unused",
    )

    def __init__(
        self,
        jaxpr,
        consts,
        out_tree,
        name,
        donated=None,
        float0s=(),
        statics_key=None,
        keep_unused=False,
    ):
        self.keep_unused = keep_unused  # jit(keep_unused=True): the program takes every input
        self.jaxpr = jaxpr
        self.float0s = float0s  # (position, shape) of the outputs that are float0 zeros
        self.donated = donated  # a bool per jaxpr input, or None when nothing is donated
        self.consts = consts
        self.const_avals = [core.get_aval(c) for c in consts]
        self.consts_are_traced = any(isinstance(c, Tracer) for c in consts)
        self.out_tree = out_tree
        self.single_output = out_tree == _LEAF
        # interned: a result fed to the next call finds that call's fast path by identity
        self.out_avals = [core.intern_aval(a) for a in jaxpr.out_avals]
        self.statics_key = statics_key  # the static arguments' part of the key (for messages)
        self.compiled = None
        self.name = name
        # The executable, when a call can hand it the argument buffers as they are (no consts,
        # no donation, the default device): jit's fastest path.
        self.direct = None

    def run(self, leaves, avals, device):
        if self.consts_are_traced:
            # Run with no transformation active, a tracer the program closes over has
            # outlived its own (a custom_vjp bwd closing over a value being differentiated):
            # the escaped-tracer error, not a failed conversion of the tracer to data.
            tracer = next(c for c in self.consts if isinstance(c, Tracer))
            raise core.escaped_tracer_error(tracer, f"jit of {self.name}")
        compiled = self.compiled
        if compiled is None or compiled.device is not device:
            # (another device: arguments committed elsewhere, compiled once per device)
            compiled = dispatch.compile_jaxpr(
                self.jaxpr,
                self.name,
                device,
                self.donated,
                consts=self.consts,
                keep_unused=self.keep_unused,
            )
            if self.compiled is None:
                self.compiled = compiled
        if self.direct is None and self.donated is None and device is None and not self.float0s:
            self.direct = _leaves_only(compiled.executable, len(self.consts))
        return self.run_with(compiled, leaves, avals)

    def run_with(self, compiled, leaves, avals):
        """Run ``compiled`` (this signature's program, maybe compiled with other options)."""
        if self.consts:
            outs = compiled.run(self.consts + leaves, self.const_avals + avals)
        else:
            outs = compiled.run(leaves, avals)
        if self.donated is not None:
            for x, donated in zip(leaves, self.donated[len(self.consts) :], strict=True):
                if donated and type(x) is Array:
                    x._donated()
        return self.restore_float0s(outs)

    def restore_float0s(self, outs):
        """The float0 outputs, which the program returns as bool zeros, as NumPy float0
        arrays (the values JAX's jit returns for them)."""
        for i, shape in self.float0s:
            outs[i] = np.zeros(shape, dtypes.float0)
        return outs


def _leaves_only(executable, n_consts):
    """``executable`` called with the argument leaves alone (its ``kept`` counting from the
    first leaf), or None where it cannot be: it takes the trace's constants as arguments (a
    program holding pmaps)."""
    if not n_consts:
        return executable
    kept = getattr(executable, "kept", None)
    if kept is None:
        return None
    leaves_only = copy.copy(executable)  # its constants inlined: it drops their places
    leaves_only.kept = tuple(i - n_consts for i in kept)
    return leaves_only


def _direct_call(entry, avals):
    """jit's fastest call of ``entry``: its executable on the argument buffers, the results
    wrapped as Arrays, in one frame. Holds ``avals``, so the ids that key it stay theirs."""
    if entry.direct is None:  # consts to pass, or float0 outputs to restore
        in_avals = entry.jaxpr.in_avals[len(entry.consts) :]

        def call(bufs, _avals=avals):
            outs = entry.run(bufs, in_avals, None)
            return outs[0] if entry.single_output else entry.out_tree.unflatten(outs)

        return call
    execute, handlers = entry.direct.loaded.execute_sharded, entry.direct.handlers
    kept = getattr(entry.direct, "kept", None)
    if kept is not None:  # the program takes only the arguments it reads
        execute_kept = execute

        def execute(bufs):
            return execute_kept([bufs[i] for i in kept])

    collect_garbage = runtime.collect_garbage
    if entry.single_output:
        aval = entry.out_avals[0]

        def call(bufs, _avals=avals):
            out = execute(bufs).consume_with_handlers(handlers)[0]
            collect_garbage()
            return Array(aval, None, out)
    else:
        out_tree, out_avals = entry.out_tree, entry.out_avals

        def call(bufs, _avals=avals):
            outs = execute(bufs).consume_with_handlers(handlers)
            collect_garbage()
            return out_tree.unflatten(
                [Array(a, None, b) for a, b in zip(out_avals, outs, strict=True)]
            )

    return call


_SCALAR_TYPES = (float, int, bool)
_INT32 = np.iinfo(np.int32)


def _direct_signature(state, args, kwargs):
    """``(key, leaves)`` of a call for jit's keyed fast path, or None where it cannot
    take it. Each argument adds its key items: an Array on the device its aval's id (and its
    buffer to the leaves), a static argument its value, a Python scalar its type (and
    itself to the leaves), a pytree of those its structure and its leaves' items; keywords
    follow in sorted order (the order of their leaves) as name and items, then the number
    of positional arguments."""
    key, leaves, static = [config.trace_context()], [], state.static_argnums
    for i, x in enumerate(args):
        if not _signature_item(x, i in static, key, leaves):
            return None
    if kwargs:
        names = state.static_argnames
        for name in sorted(kwargs):
            key.append(name)
            if not _signature_item(kwargs[name], name in names, key, leaves):
                return None
    key.append(len(args))
    return tuple(key), leaves


def _signature_item(x, static, key, leaves):
    t = type(x)
    if static:
        key.append(x)
    elif t is Array and x._buf is not None:
        key.append(id(x.aval))
        leaves.append(x._buf)
    elif t is float or t is bool or (t is int and _INT32.min <= x <= _INT32.max):
        key.append(t)
        leaves.append(x)
    else:  # a pytree of such leaves: its structure, then theirs
        flat, tree = pytree.tree_flatten(x)
        if tree.num_nodes == 1 and tree.num_leaves == 1:
            return False  # a leaf of another kind (NumPy data, a tracer, a bad argument)
        key.append(tree)
        for leaf in flat:
            if type(leaf) is Array and leaf._buf is not None:
                key.append(id(leaf.aval))
                leaves.append(leaf._buf)
            elif not _signature_item(leaf, False, key, leaves):
                return False
    return True


def _with_scalar_buffers(call, scalars):
    """``call`` with the Python scalars at ``scalars`` (position, dtype) made buffers."""

    def call_with_scalars(leaves):
        for i, dtype in scalars:
            leaves[i] = _scalar_buffer(leaves[i], dtype)
        return call(leaves)

    return call_with_scalars


_scalar_buffers = {}


def _scalar_buffer(x, dtype):
    """A device buffer of Python scalar ``x`` as ``dtype``; the buffers of recent values are
    kept (a learning rate passed on each step), but not of a float 0 (the key cannot tell
    -0.0 from 0.0) nor NaN."""
    key = (type(x), x, dtype)
    buf = _scalar_buffers.get(key)
    if buf is None:
        buf = runtime.to_device(np.asarray(x, dtype))
        if x and not math.isnan(x):
            if len(_scalar_buffers) > 256:
                _scalar_buffers.clear()
            _scalar_buffers[key] = buf
    return buf


# --------------------------------------------------------------------------- jit's caches
# As in JAX, the caches belong to the function, not to the wrapper ``jit`` returns:
# ``jit(f)(x)`` written inline reuses the trace and the executable of every earlier
# ``jit(f)``. A function's traces are shared by all its jit options (static arguments are in
# the key; donation and the device change the program, not the trace); its cache entries and
# executables are per options. Functions are held weakly: their caches go with them.


class _JitState:
    """The caches and normalized options that the jit wrappers of one function with the same
    options share. Holds no reference to the function (its key in ``_jit_states``)."""

    __slots__ = (
        "name",
        "static_argnums",
        "static_argnames",
        "has_statics",
        "donate_argnums",
        "donate_argnames",
        "device",
        "traces",
        "cache",
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
        traces,
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
        self.name = name = _fun_name(fun)
        self.keep_unused = bool(keep_unused)  # programs take the arguments they do not read
        self.static_argnums, self.static_argnames = _normalize_statics(
            fun, static_argnums, static_argnames
        )
        self.has_statics = bool(self.static_argnums or self.static_argnames)
        self.donate_argnums, self.donate_argnames = _normalize_statics(
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
        # (in_shardings, out_shardings) of a partitioned jit (xform/api/sharding.py), else None
        self.shardings = (
            None
            if in_shardings is None and out_shardings is None
            else (in_shardings, out_shardings)
        )
        api_sharding.check_constrained(in_shardings, "in_shardings")
        api_sharding.check_constrained(out_shardings, "out_shardings")
        # (in_tree, statics, avals, trace context, axis env) -> (jaxpr, consts, out_tree):
        # shared by every options of the function
        self.traces = traces
        # The same key -> _CacheEntry: the trace with this options' donation and executable.
        self.cache = {}
        # A call signature (see _direct_signature: the ids of the Arrays' avals, static
        # values, scalar types) -> a function of its leaves, for signatures run before on
        # the default device without donation (jit's fastest path)
        self.direct_calls = {}
        # The same for sharded Arrays, keyed by the ids of their avals and shardings.
        self.sharded_calls = {}
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


class _FunCaches:
    """Everything jit keeps for one function: its traces and a state per jit options."""

    __slots__ = ("traces", "states", "default")

    def __init__(self):
        self.traces = {}
        self.states = {}  # options as passed, and as normalized -> _JitState
        self.default = None  # the state of jit(fun) without options


# function -> _FunCaches
_jit_states = weakref.WeakKeyDictionary()
_NO_OPTIONS = (None,) * 8 + (False,)
_MISS = object()  # the fast paths' answer for a signature not seen yet


def _hashable(option):
    return tuple(option) if isinstance(option, list) else option


def _jit_state(fun, options):
    """The shared state of ``jit(fun, **options)`` (``options``: jit's keyword arguments in
    order); a state of its own for a function that cannot be weakly referenced or hashed."""
    try:
        caches = _jit_states.get(fun)
        if caches is None:
            caches = _jit_states[fun] = _FunCaches()
    except TypeError:
        return _JitState(fun, {}, *options)
    if options == _NO_OPTIONS and caches.default is not None:
        return caches.default
    try:
        state = caches.states.get(options)
    except TypeError:  # unhashable options: lists of argnums, say
        options = tuple(_hashable(o) for o in options)
        try:
            state = caches.states.get(options)
        except TypeError:
            return _JitState(fun, caches.traces, *options)
    if state is None:
        state = _JitState(fun, caches.traces, *options)
        state = caches.states.setdefault(state.key(), state)
        caches.states[options] = state
    if options == _NO_OPTIONS:
        caches.default = state
    return state


def clear_caches():
    """Forget every trace and compiled program: those of all jitted functions (their next
    call retraces and recompiles, wrappers made earlier included) and eager's per-primitive
    programs. As ``jax.clear_caches``."""
    for caches in list(_jit_states.values()):
        caches.traces.clear()
        for state in caches.states.values():
            state.cache.clear()
            state.direct_calls.clear()
            state.sharded_calls.clear()
    _jit_states.clear()
    dispatch.clear_caches()


class _Checking(threading.local):
    active = False  # inside _checked_call's own call of the jitted function


_checking = _Checking()
_log = logging.getLogger(__name__)  # "xform.api.jit": cache misses, as JAX's jax._src.pjit


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


def _note_retrace(fun, state, key):
    """A jitted function traces again: log why (jax_explain_cache_misses) and, on its third
    trace, warn once naming what changed (xform_warn_recompiles)."""
    flags = config.values
    # xform's own jitted helpers (random's samplers, ...) retrace per user shape by design:
    # the warning is for the user's functions.
    third = len(state.traces) == 2 and flags.warn_recompiles and not _is_xform_internal(fun)
    if not (third or flags.explain_cache_misses):
        return
    info = core.source_info()
    reason = _why_retraced(fun, key, next(reversed(state.traces)))
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
    __slots__ = ("_fun", "_state", "__weakref__")

    def __init__(self, fun, state):
        self._fun = fun
        self._state = state

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
        dyn_args, dyn_kwargs, statics = _split_statics(
            self._fun, args, kwargs, state.static_argnums, state.static_argnames
        )
        leaves, in_tree = pytree.tree_flatten((dyn_args, dyn_kwargs))
        avals = _arg_avals(leaves, in_tree, self._fun, abstractify)
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
        state = self._state
        entry = state.cache.get(key)
        if entry is None:
            traced = state.traces.get(key)
            if traced is None:
                if state.traces:
                    _note_retrace(self._fun, state, key)
                traced = self._trace(in_tree, statics, avals)
            jaxpr, consts, out_tree, float0s = traced
            donated = self._donated_leaves(in_tree, statics)
            if donated is not None:
                _warn_unusable_donations(avals, donated, jaxpr.out_avals)
                donated = (False,) * len(consts) + donated
            entry = _CacheEntry(
                jaxpr, consts, out_tree, state.name, donated, float0s, key[1], state.keep_unused
            )
            if not entry.consts_are_traced:
                state.traces[key] = traced
                state.cache[key] = entry
        return entry

    def _trace(self, in_tree, statics, avals):
        store = {}
        flat = _flatten_fun(self._fun, in_tree, store, statics)

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
        closed = trace_to_jaxpr(float0s_as_bools, avals, f"tracing `{self._state.name}` for jit")
        if log:  # as JAX's, with the line that called the function
            _log.warning(
                "Finished tracing + transforming %s for jit in %.6f sec (called at %s)",
                self._state.name,
                time.perf_counter() - start,
                core.format_source_info(core.source_info()),
            )
        if config.values.check_tracer_leaks:
            _check_tracer_leaks(closed.jaxpr, self._state.name)
        jaxpr, consts = convert_constvars(closed)
        return jaxpr, consts, store["out_tree"], store["float0s"]

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

    def __call__(self, *args, **kwargs):
        if config.slow_calls and not _checking.active:  # disable_jit, debug_nans/infs
            return self._checked_call(args, kwargs)
        state = self._state
        if state.plain and not kwargs and core.trace_state.trace is core.eval_trace:
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
                    if out is not _MISS:
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
            if out is not _MISS:
                return out
        statics = None
        if state.has_statics:
            dyn_args, dyn_kwargs, statics = _split_statics(
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
                avals = _arg_avals(leaves, in_tree, self._fun)
                concrete = not any(isinstance(x, Tracer) for x in leaves)
                break
            avals.append(x.aval)
            on_device = on_device and x._buf is not None
        else:
            concrete = True
            if on_device and core.trace_state.trace is core.eval_trace and state.shardings is None:
                # Second fastest path: pytrees, keywords or static arguments around Arrays
                # already on the default device, for a signature whose program takes them.
                entry = state.cache.get((in_tree, statics_key, tuple(avals), context, axis_env))
                if entry is not None and entry.direct is not None:
                    outs = entry.direct.call([x._buf for x in leaves])
                    return entry.out_tree.unflatten(
                        [Array(a, None, b) for a, b in zip(entry.out_avals, outs, strict=True)]
                    )
        entry = self._lookup(
            (in_tree, statics_key, tuple(avals), context, axis_env), in_tree, statics, avals
        )
        if concrete and core.trace_state.trace is core.eval_trace:
            if state.shardings is not None or api_sharding.needs_partitioning(entry, leaves):
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
                else api_sharding.constrained_jaxpr(
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
        they are (``_MISS`` if not)."""
        calls = self._state.sharded_calls
        if not calls:
            return _MISS
        key, bufs, leaves = [config.trace_context()], [], args
        if any(type(x) is not ShardedArray for x in args):  # a pytree: keyed by its structure
            leaves, tree = pytree.tree_flatten(args)
            key.append(tree)
        for x in leaves:
            if type(x) is not ShardedArray:
                return _MISS
            buf = x._buf
            key.append(id(x.aval))
            key.append(id(buf.sharding))
            bufs.append(buf)
        call = calls.get(tuple(key))
        return _MISS if call is None else call(bufs)

    def _run_partitioned(self, entry, args, kwargs, leaves, avals, in_tree):
        """Run ``entry`` as one partitioned program; a call of sharded Arrays alone is made
        the fast path for their types and layouts."""
        state = self._state
        positional = self._positional(args, kwargs)
        outs = api_sharding.run_partitioned(
            entry, leaves, avals, positional, *(state.shardings or (None, None)), state.name
        )
        if not kwargs and not state.has_statics and all(type(x) is ShardedArray for x in leaves):
            self._remember_sharded_call(entry, args, leaves, avals, in_tree, positional)
        return outs

    def _remember_sharded_call(self, entry, args, leaves, avals, in_tree, positional):
        """Make a partitioned call of sharded Arrays ``args`` (or a pytree of them) jit's
        fast path for them: keyed as ``_sharded_call`` keys it."""
        state = self._state
        call = api_sharding.direct_call(
            entry, leaves, avals, positional, *(state.shardings or (None, None)), state.name
        )
        if call is None:
            return
        if len(state.sharded_calls) > 32:  # avals or shardings new objects call after call
            state.sharded_calls.clear()
        shardings = [x._buf.sharding for x in leaves]
        key = [config.trace_context()]
        if in_tree != _flat_tree(len(args)):
            key.append(pytree.tree_structure(args))
        for a, s in zip(avals, shardings, strict=True):
            key += [id(a), id(s)]
        # The entry keeps the avals and shardings whose ids key it.
        state.sharded_calls[tuple(key)] = lambda bufs, _keep=(avals, shardings): call(bufs)

    def _keyed_call(self, args, kwargs):
        """The call of a signature seen before by ``_remember_keyed_call`` (``_MISS`` if
        not): Arrays keyed by their avals' ids, static arguments by value, Python scalars
        by type; or of a pytree of sharded Arrays seen before (``_sharded_call``)."""
        state = self._state
        if state.sharded_calls and not kwargs:
            out = self._sharded_call(args)
            if out is not _MISS:
                return out
        if not state.direct_calls:
            return _MISS
        signature = _direct_signature(state, args, kwargs)
        if signature is None:
            return _MISS
        try:
            call = self._state.direct_calls.get(signature[0])
        except TypeError:  # an unhashable static argument: the ordinary path says so
            return _MISS
        return _MISS if call is None else call(signature[1])

    def _remember_keyed_call(self, entry, args, kwargs):
        """Make this call's signature a fast path (on the default device, without
        donation or a mesh)."""
        state = self._state
        if (
            state.shardings is not None
            or state.device is not None
            or entry.donated is not None
            or api_sharding.jaxpr_mesh(entry.jaxpr.jaxpr)
        ):
            return
        signature = _direct_signature(state, args, kwargs)
        if signature is None:
            return
        key, bufs = signature
        avals = [x.aval for x in pytree.tree_leaves((args, kwargs)) if type(x) is Array]
        scalars = [
            (i, a.dtype)
            for i, (b, a) in enumerate(
                zip(bufs, entry.jaxpr.in_avals[len(entry.consts) :], strict=True)
            )
            if type(b) in _SCALAR_TYPES
        ]
        # The argument avals whose ids key the call live as long as it.
        call = _direct_call(entry, avals)
        if scalars:
            call = _with_scalar_buffers(call, scalars)
        if len(state.direct_calls) > 32:  # avals or static values new call after call
            state.direct_calls.clear()
        try:
            state.direct_calls[key] = call
        except TypeError:
            pass

    def _positional(self, args, kwargs):
        """The dynamic positional arguments (what ``in_shardings`` is a prefix of)."""
        state = self._state
        return _split_statics(self._fun, args, kwargs, state.static_argnums, state.static_argnames)[
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
        key, _, in_tree, statics, avals = self._signature(args, kwargs, _abstractify)
        traced = stages.Traced(
            self,
            self._lookup(key, in_tree, statics, avals),
            in_tree,
            avals,
            lambda: api_sharding.lower(self, traced, args, kwargs),
        )
        return traced

    def lower(self, *args, **kwargs):
        """Trace and lower for these arguments: a ``Lowered`` stage (``.as_text()`` is the
        StableHLO module, ``.compile()`` the next stage)."""
        return self.trace(*args, **kwargs).lower()

    def eval_shape(self, *args, **kwargs):
        entry, _, _ = self._entry(args, kwargs, _abstractify)
        return pytree.tree_unflatten(
            entry.out_tree, [_shape_struct(a) for a in entry.jaxpr.out_avals]
        )

    def clear_cache(self):
        """Forget this function's traces, and the programs compiled for these options."""
        state = self._state
        state.traces.clear()
        state.cache.clear()
        state.direct_calls.clear()
        state.sharded_calls.clear()

    def _cache_size(self):
        return len(self._state.cache)

    def __repr__(self):
        return f"<jit-compiled function {self._state.name}>"


def jit(
    fun=None,
    *,
    in_shardings=None,
    out_shardings=None,
    static_argnums=None,
    static_argnames=None,
    donate_argnums=None,
    donate_argnames=None,
    device=None,
    backend=None,
    inline=False,
    keep_unused=False,
):
    """Compile ``fun`` with XLA: traced once per signature, cached, run as one program.

    As in JAX, the cache belongs to ``fun`` (held weakly), not to the wrapper: a fresh
    ``jit(fun)`` reuses the traces and programs of earlier ones.

    Args:
      fun: the function; pytrees of arrays in and out.
      static_argnums, static_argnames: arguments that are Python values baked into the
        trace (hashable; a new value retraces).
      donate_argnums, donate_argnames: arguments whose buffers the program may reuse for an
        output of the same shape and dtype; a donated array is deleted by the call.
      device: the device to run on (default: the first device of the default backend).
      in_shardings, out_shardings: shardings (or pytree prefixes of the positional arguments
        and of the result) that make the call one program partitioned over their mesh;
        arrays already spread over devices are partitioned by their own shardings.

    Returns:
      The jitted function, which also has ``.lower(*args)``.

    Example:
      >>> f = xform.jit(lambda x: xform.numpy.sin(x) * 2.0)
      >>> f(xform.numpy.ones(3))
    """
    if fun is None:
        return functools.partial(
            jit,
            in_shardings=in_shardings,
            out_shardings=out_shardings,
            static_argnums=static_argnums,
            static_argnames=static_argnames,
            donate_argnums=donate_argnums,
            donate_argnames=donate_argnames,
            device=device,
            backend=backend,
            inline=inline,
            keep_unused=keep_unused,
        )
    if not callable(fun):
        raise TypeError(f"jit: expected a callable, got {type(fun).__name__}")
    # inline changes neither the trace nor the program here.
    return JitFunction(
        fun,
        _jit_state(
            fun,
            (
                static_argnums,
                static_argnames,
                donate_argnums,
                donate_argnames,
                device,
                backend,
                in_shardings,
                out_shardings,
                keep_unused,
            ),
        ),
    )


# --------------------------------------------------------------------------- make_jaxpr & co


def make_jaxpr(fun, static_argnums=(), axis_env=None, return_shape=False):
    """A function returning the closed jaxpr ``fun`` traces to for the given arguments.

    Example:
      >>> print(xform.make_jaxpr(lambda x: xform.numpy.sin(x) * 2.0)(1.0))
      { lambda ; a:f32[]. let b:f32[] = sin a; c:f32[] = mul b 2.0:f32[] in (c,) }
    """
    nums, _ = _normalize_statics(fun, static_argnums, None)

    @functools.wraps(fun)
    def make(*args, **kwargs):
        dyn_args, dyn_kwargs, statics = _split_statics(fun, args, kwargs, nums, frozenset())
        leaves, in_tree = pytree.tree_flatten((dyn_args, dyn_kwargs))
        avals = _arg_avals(leaves, in_tree, fun, _abstractify)
        store = {}
        flat = _flatten_fun(fun, in_tree, store, statics)
        with contextlib.ExitStack() as scope:
            for name, size in axis_env or ():  # named axes for collectives, as pmap would bind
                scope.enter_context(core.extend_axis_env(name, size))
            closed = trace_to_jaxpr(flat, avals, f"tracing `{_fun_name(fun)}` for make_jaxpr")
        if return_shape:
            shapes = [_shape_struct(a) for a in closed.out_avals]
            return closed, pytree.tree_unflatten(store["out_tree"], shapes)
        return closed

    return make


def _shape_struct(aval):
    return ShapeDtypeStruct(aval.shape, aval.dtype, weak_type=aval.weak_type)


def eval_shape(fun, *args, **kwargs):
    """The shapes and dtypes ``fun`` would return, computed without running it."""
    leaves, in_tree = pytree.tree_flatten((args, kwargs))
    avals = _arg_avals(leaves, in_tree, fun, _abstractify)
    store = {}
    closed = trace_to_jaxpr(
        _flatten_fun(fun, in_tree, store), avals, f"tracing `{_fun_name(fun)}` for eval_shape"
    )
    return pytree.tree_unflatten(store["out_tree"], [_shape_struct(a) for a in closed.out_avals])


# --------------------------------------------------------------------------- devices


def devices(backend=None):
    """The devices of ``backend`` (default: GPU or TPU if JAX sees one, else CPU)."""
    return list(runtime.devices(backend))


def local_devices(process_index=None, backend=None):
    """The devices driven by this process (or by ``process_index``): all of them unless
    several processes were started with ``jax.distributed.initialize``."""
    me = runtime.process_index() if process_index is None else process_index
    return [d for d in runtime.devices(backend) if d.process_index == me]


def device_count(backend=None):
    return len(runtime.devices(backend))


def local_device_count(backend=None):
    return len(local_devices(backend=backend))


def process_index(backend=None):
    """This process's index among those started with ``jax.distributed.initialize`` (0)."""
    return runtime.process_index()


def process_count(backend=None):
    """How many processes share the devices (1 unless ``jax.distributed`` started several)."""
    return runtime.process_count()


def default_backend():
    return runtime.platform()


def device_put(x, device=None):
    """Copy a pytree of arrays to ``device`` (default device if None), or lay them out over
    several devices as a ``Sharding`` (or a pytree prefix of shardings) says; arrays already
    on the mesh's devices move device to device (xform/api/sharding.py)."""
    return api_sharding.device_put(x, device)


def device_put_sharded(shards, devices):
    """Stack a list of pytrees (one per device) along a new leading axis, entry ``i`` on
    ``devices[i]``: the layout ``pmap`` reads without copying. Returns ShardedArrays."""
    if len(shards) != len(devices):
        raise ValueError(
            f"device_put_sharded: got {len(shards)} shards for {len(devices)} "
            "devices; pass one shard per device"
        )
    return pytree.tree_map(
        lambda *xs: _put_stacked(np.stack([_host(x) for x in xs]), devices), *shards
    )


def device_put_replicated(x, devices):
    """A copy of pytree ``x`` on each of ``devices``, stacked along a new leading axis (as
    ``pmap`` reads replicated parameters). Returns ShardedArrays."""
    return pytree.tree_map(
        lambda leaf: _put_stacked(
            np.broadcast_to(_host(leaf)[None], (len(devices),) + np.shape(leaf)), devices
        ),
        x,
    )


def _host(x):
    aval = core.get_aval(x)
    return dispatch.host_value(x, aval)


def _put_stacked(stacked, devices):
    sharding = runtime.mapped_sharding(tuple(devices), "_pmap", len(devices), 0)
    buf = runtime.put_sharded(stacked, sharding, 0, len(devices))
    return ShardedArray(ShapedArray(stacked.shape, dtypes.canonicalize(stacked.dtype)), None, buf)


def block_until_ready(x):
    """Wait for every array in the pytree ``x``; returns ``x``."""
    for leaf in pytree.tree_leaves(x):
        if hasattr(leaf, "block_until_ready"):
            leaf.block_until_ready()
    return x


def ensure_compile_time_eval():
    """Context manager: evaluate operations right away, even inside ``jit``, as JAX's.

    Values that do not depend on traced arguments become concrete (a Python ``if`` may read
    them); operations on traced values are traced as outside the block (numpyro validates
    a distribution's traced parameters in one).
    """
    return config.scope("eager_constant_folding", True)


def timed(fn, *args):
    """(result, seconds) of one call, waiting for the result: used by the demo."""
    start = time.perf_counter()
    out = block_until_ready(fn(*args))
    return out, time.perf_counter() - start
