"""jit's cache: one ``JitCache`` per jitted function, holding its traces, their executables
and the fast paths' indices into them.

As in JAX, the cache belongs to the function, not to the wrapper ``jit`` returns:
``jit(f)(x)`` written inline reuses the trace and the executable of every earlier ``jit(f)``.
A function's traces are shared by all its jit options (static arguments are in the key;
donation and the device change the program, not the trace); each trace keeps a
``CacheEntry`` per jit options (its donation, its executables). Functions are held weakly:
their caches go with them.
"""

import copy
import functools
import math
import weakref

import numpy as np

from lowering import runtime
from xform import config, core, dtypes, pytree
from xform.core import Tracer
from xform.runtime import dispatch
from xform.runtime.array import Array

_LEAF = pytree.tree_structure(0)


@functools.lru_cache(maxsize=64)
def flat_tree(n):
    return pytree.tree_structure((tuple(range(n)), {}))


class CacheEntry:
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
        "partitioned",
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
        # (in shardings, out shardings, open outputs) -> its partitioned program
        # (xform/runtime/partitioned.py)
        self.partitioned = {}

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


def direct_call(entry, avals):
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


SCALAR_TYPES = (float, int, bool)
_INT32 = np.iinfo(np.int32)


def direct_signature(options, args, kwargs):
    """``(key, leaves)`` of a call for jit's keyed fast path, or None where it cannot
    take it. Each argument adds its key items: an Array on the device its aval's id (and its
    buffer to the leaves), a static argument its value, a Python scalar its type (and
    itself to the leaves), a pytree of those its structure and its leaves' items; keywords
    follow in sorted order (the order of their leaves) as name and items, then the number
    of positional arguments (after the trace context, which starts the key)."""
    key, leaves, static = [config.trace_context()], [], options.static_argnums
    for i, x in enumerate(args):
        if not _signature_item(x, i in static, key, leaves):
            return None
    if kwargs:
        names = options.static_argnames
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


def with_scalar_buffers(call, scalars):
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


# --------------------------------------------------------------------------- the cache


class Trace:
    """One traced signature of a function: its jaxpr (constants as leading inputs), constants,
    output tree and float0 outputs, and the ``CacheEntry`` of each jit options that ran it
    (``entries``: options' slot -> entry)."""

    __slots__ = ("jaxpr", "consts", "out_tree", "float0s", "entries")

    def __init__(self, jaxpr, consts, out_tree, float0s):
        self.jaxpr = jaxpr
        self.consts = consts
        self.out_tree = out_tree
        self.float0s = float0s
        self.entries = {}


MISS = object()  # the fast paths' answer for a signature not seen yet
_MAX_FAST_KEYS = 32  # avals, shardings or static values new call after call: start again


class JitCache:
    """Everything jit keeps for one function, for all its wrappers and options.

    ``traces``: a signature (in_tree, static values, avals, trace context, axis env) -> its
    ``Trace``, which holds a ``CacheEntry`` per jit options (the executables: one per device,
    the partitioned programs by shardings). The fast paths are indices into those entries,
    one pair per jit options (``direct_calls[slot]``, ``sharded_calls[slot]``, which the
    options object holds too, to reach them in one step): they map a call's cheap key (the
    trace context, then the ids of the arguments' avals and shardings, static values, scalar
    types) to a function of the argument buffers running an entry; each such function holds
    the objects whose ids key it. ``clear`` forgets all of it at once; an index starts again
    past 32 keys.
    """

    __slots__ = (
        "traces",
        "direct_calls",
        "sharded_calls",
        "options",
        "unhashable",
        "default",
        "slots",
        "__weakref__",  # (jit_refs keeps its signatures by cache)
    )

    def __init__(self):
        self.traces = {}
        self.direct_calls = {}  # options' slot -> {fast key -> call}
        self.sharded_calls = {}  # options' slot -> {fast key of sharded Arrays -> call}
        self.options = {}  # jit options as passed, and as normalized -> their options object
        self.unhashable = []  # options objects of options that cannot be hashed
        self.default = None  # the options object of jit(fun) without options
        self.slots = 0  # how many options objects were made: the next one's slot

    def new_slot(self):
        """A number for a new options object (its key in ``Trace.entries``), and its two
        fast-path indices."""
        self.slots += 1
        slot = self.slots
        return slot, self.direct_calls.setdefault(slot, {}), self.sharded_calls.setdefault(slot, {})

    def entry(self, key, slot):
        """The cache entry of signature ``key`` for options ``slot``, or None."""
        trace = self.traces.get(key)
        return None if trace is None else trace.entries.get(slot)

    def add(self, key, trace, slot, entry):
        self.traces[key] = trace
        trace.entries[slot] = entry

    def count(self, slot):
        """How many signatures options ``slot`` has an entry for."""
        return sum(slot in trace.entries for trace in self.traces.values())

    def clear(self):
        """Forget every trace, executable and fast path (the options stay)."""
        self.traces.clear()
        for index in (*self.direct_calls.values(), *self.sharded_calls.values()):
            index.clear()


def remember(index, key, call):
    """Put ``call`` in fast-path ``index`` (one of a ``JitCache``'s) under ``key``."""
    if len(index) > _MAX_FAST_KEYS:
        index.clear()
    try:
        index[key] = call
    except TypeError:  # an unhashable static value
        pass


_caches = weakref.WeakKeyDictionary()  # function -> JitCache


def cache_of(fun):
    """The ``JitCache`` of ``fun``; a fresh one for a function that cannot be weakly
    referenced or hashed."""
    try:
        cache = _caches.get(fun)
        if cache is None:
            cache = _caches[fun] = JitCache()
    except TypeError:
        return JitCache()
    return cache


def clear_caches():
    """Forget every trace and compiled program: those of all jitted functions (their next
    call retraces and recompiles, wrappers made earlier included) and eager's per-primitive
    programs. As ``jax.clear_caches``."""
    for cache in list(_caches.values()):
        cache.clear()
    _caches.clear()
    dispatch.clear_caches()
