"""xform's flags: JAX's config names, values and context managers, in one place.

Every flag has JAX's name (``jax_enable_x64``, ``jax_debug_nans``, ...); ``update(name,
value)`` sets its global value, ``read(name)`` and ``xform.config.<name>`` read it, and the
``JAX_<NAME>`` environment variable (``JAX_ENABLE_X64=1``, ``JAX_PLATFORMS=cpu``) sets its
default at import, as in JAX. Flags that JAX scopes per thread have a context-manager form
(``xform.debug_nans(True)``, ``xform.config.scope("jax_disable_jit", True)``) that overrides
the global value in the current thread only.

The engine reads hot flags through plain attributes, never through a lookup:

- ``x64_enabled()``: 64-bit dtypes on in this thread;
- ``slow_calls``: True while any thread may have ``jax_disable_jit``, ``jax_debug_nans`` or
  ``jax_debug_infs`` on; jit's cached-call path reads only this (one attribute) and takes a
  slower, checking path when it is set;
- ``check_jaxprs`` (``jax_enable_checks``): typecheck every jaxpr a transformation produces.

``xform_eager_path`` (``XFORM_EAGER_PATH``): eager primitives on a CPU run with NumPy ("host",
the default) or compiled by XLA per primitive as on a GPU ("xla"); a change, at any time, is
installed by the runtime's hook for the next eager op (which reads no flag).

Other layers act on a flag's change through ``on_update(name, hook)`` (the runtime, which this
module may not import, starts its devices from ``jax_num_cpu_devices`` that way).
"""

import contextlib
import difflib
import os
import threading

check_jaxprs = False
slow_calls = False  # see the module docstring

_NO_DEFAULT = object()


class _Flag:
    """One flag: its kind (``bool``, ``int``, ``float``, ``str``, ``enum``, ``any``), default,
    the values an enum accepts, and whether a context manager may set it per thread."""

    __slots__ = ("name", "kind", "default", "choices", "per_thread", "help")

    def __init__(self, name, kind, default, choices=None, per_thread=True, help=""):  # noqa: A002
        self.name = name
        self.kind = kind
        self.default = default
        self.choices = choices
        self.per_thread = per_thread
        self.help = help

    @property
    def attr(self):
        return self.name.removeprefix("jax_").removeprefix("xform_")

    def check(self, value):
        """``value`` as stored, or TypeError/ValueError naming the flag."""
        kind, name = self.kind, self.name
        if kind == "bool":
            numpy_bool = type(value).__module__ == "numpy" and type(value).__name__ in (
                "bool",
                "bool_",
            )
            if isinstance(value, int) and value in (0, 1) or numpy_bool:
                return bool(value)  # a bool, 0/1, or NumPy's bool
            raise TypeError(
                f"config flag {name!r} takes a bool, got {value!r} of type {type(value).__name__}"
            )
        if value is None and self.default is None:
            return None
        if kind == "int":
            if isinstance(value, int) and not isinstance(value, bool):
                return value
            raise ValueError(
                f"config flag {name!r}: new int config value must be None or of "
                f"type int, got {value!r} of type {type(value).__name__}"
            )
        if kind == "float":
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return float(value)
            raise ValueError(
                f"config flag {name!r}: new float config value must be None or "
                f"a number, got {value!r} of type {type(value).__name__}"
            )
        if kind == "str":
            if isinstance(value, str):
                return value
            raise ValueError(
                f"config flag {name!r}: new string config value must be None or "
                f"of type str, got {value!r} of type {type(value).__name__}"
            )
        if kind == "enum":
            value = getattr(value, "value", value)  # JAX's enum members carry their string
            if value in self.choices:
                return value
            none = "None or " if self.default is None else ""
            raise ValueError(
                f"config flag {name!r}: new enum value must be {none}in "
                f"{list(self.choices)}, got {value!r} of type "
                f"{type(value).__name__}"
            )
        return value

    def from_env(self):
        """The default, or the ``JAX_<NAME>`` (``XFORM_<NAME>``) environment variable's."""
        env = self.name.upper()
        raw = os.environ.get(env)
        if raw is None:
            return self.default
        if self.kind == "bool":
            low = raw.lower()
            if low in ("y", "yes", "t", "true", "on", "1"):
                return True
            if low in ("n", "no", "f", "false", "off", "0"):
                return False
            raise ValueError(f"invalid truth value {raw!r} for environment variable {env!r}")
        if self.kind in ("int", "float"):
            try:
                return int(raw) if self.kind == "int" else float(raw)
            except ValueError:
                raise ValueError(
                    f"environment variable {env!r} must be a number, got {raw!r}"
                ) from None
        return self.check(raw)


_TRANSFER = ("allow", "log", "disallow", "log_explicit", "disallow_explicit")
_PRECISIONS = (
    "default",
    "high",
    "highest",
    "bfloat16",
    "tensorfloat32",
    "float32",
    # and the names of lax.DotAlgorithmPreset, as JAX's flag takes them
    "ANY_F8_ANY_F8_F32",
    "ANY_F8_ANY_F8_F32_FAST_ACCUM",
    "ANY_F8_ANY_F8_ANY",
    "ANY_F8_ANY_F8_ANY_FAST_ACCUM",
    "F16_F16_F16",
    "F16_F16_F32",
    "BF16_BF16_BF16",
    "BF16_BF16_F32",
    "BF16_BF16_F32_X3",
    "BF16_BF16_F32_X6",
    "BF16_BF16_F32_X9",
    "TF32_TF32_F32",
    "TF32_TF32_F32_X3",
    "F32_F32_F32",
    "F64_F64_F64",
)

_FLAGS = {
    f.name: f
    for f in [
        _Flag("jax_enable_x64", "bool", False, help="64-bit dtypes"),
        _Flag(
            "eager_constant_folding",
            "bool",
            False,
            help="while staging (jit), evaluate operations on constants right away "
            "(ensure_compile_time_eval's scope)",
        ),
        _Flag(
            "jax_num_cpu_devices",
            "int",
            -1,
            per_thread=False,
            help="CPU devices the backend starts with (before it starts)",
        ),
        _Flag(
            "jax_platforms",
            "str",
            None,
            per_thread=False,
            help="comma-separated platforms to pick the default backend from",
        ),
        _Flag(
            "jax_platform_name",
            "str",
            "",
            per_thread=False,
            help="the older, single-platform form of jax_platforms",
        ),
        _Flag("jax_default_device", "any", None, help="the device new arrays and programs use"),
        _Flag("jax_disable_jit", "bool", False, help="run jitted functions op by op in Python"),
        _Flag("jax_debug_nans", "bool", False, help="raise FloatingPointError on a NaN result"),
        _Flag("jax_debug_infs", "bool", False, help="raise FloatingPointError on an inf result"),
        _Flag("jax_log_compiles", "bool", False, help="log each XLA compile"),
        _Flag("jax_explain_cache_misses", "bool", False, help="log why jit traces again"),
        _Flag(
            "jax_default_matmul_precision",
            "enum",
            None,
            _PRECISIONS,
            help="precision of dot_general when precision=None",
        ),
        _Flag(
            "jax_numpy_rank_promotion",
            "enum",
            "allow",
            ("allow", "warn", "raise"),
            help="implicit rank promotion in xform.numpy",
        ),
        _Flag(
            "jax_numpy_dtype_promotion",
            "enum",
            "standard",
            ("standard", "strict"),
            help="implicit dtype promotion in xform.numpy",
        ),
        _Flag(
            "jax_default_prng_impl",
            "enum",
            "threefry2x32",
            ("threefry2x32", "threefry4x32", "rbg", "unsafe_rbg", "philox2x32", "philox4x32"),
            help="the PRNG implementation random.key/PRNGKey use",
        ),
        _Flag("jax_threefry_partitionable", "bool", True, help="accepted; not acted on"),
        _Flag(
            "jax_traceback_filtering",
            "enum",
            "auto",
            ("off", "tracebackhide", "remove_frames", "quiet_remove_frames", "auto"),
            help="how xform's frames are hidden from errors' tracebacks (xform/traceback_util.py)",
        ),
        _Flag(
            "jax_check_tracer_leaks",
            "bool",
            False,
            help="raise when a tracer outlives its jit trace",
        ),
        _Flag(
            "jax_compilation_cache_dir",
            "str",
            None,
            per_thread=False,
            help="where the persistent compilation cache lives (default $XDG_CACHE_HOME/xform)",
        ),
        _Flag(
            "jax_enable_compilation_cache",
            "bool",
            True,
            per_thread=False,
            help="the persistent compilation cache on or off",
        ),
        _Flag(
            "jax_persistent_cache_min_compile_time_secs",
            "float",
            0.0,
            per_thread=False,
            help="cache only programs that took this long to compile (xform: 0)",
        ),
        _Flag(
            "jax_persistent_cache_min_entry_size_bytes",
            "int",
            0,
            per_thread=False,
            help="accepted; xform caches entries of every size",
        ),
        _Flag(
            "jax_enable_checks",
            "bool",
            False,
            per_thread=False,
            help="typecheck every jaxpr a transformation produces",
        ),
        _Flag("jax_transfer_guard", "enum", None, _TRANSFER, help="accepted; not acted on"),
        _Flag(
            "jax_transfer_guard_host_to_device",
            "enum",
            None,
            _TRANSFER,
            help="accepted; not acted on",
        ),
        _Flag(
            "jax_transfer_guard_device_to_host",
            "enum",
            None,
            _TRANSFER,
            help="accepted; not acted on",
        ),
        _Flag(
            "jax_transfer_guard_device_to_device",
            "enum",
            None,
            _TRANSFER,
            help="accepted; not acted on",
        ),
        _Flag("jax_enable_custom_prng", "bool", False, help="accepted; not acted on"),
        _Flag("jax_debug_key_reuse", "bool", False, help="accepted; not acted on"),
        # JAX's remaining flags with top-level context managers: accepted, not acted on.
        _Flag("jax_allow_f16_reductions", "bool", True, help="accepted; not acted on"),
        _Flag(
            "jax_array_garbage_collection_guard",
            "enum",
            None,
            ("allow", "log", "fatal"),
            help="accepted; not acted on",
        ),
        _Flag("jax_auto_pcast", "bool", True, help="accepted; not acted on"),
        _Flag("jax2tf_associative_scan_reductions", "bool", False, help="accepted; not acted on"),
        _Flag(
            "jax_legacy_prng_key",
            "enum",
            "allow",
            ("allow", "warn", "error"),
            help="accepted; not acted on",
        ),
        _Flag("jax_no_execution", "bool", False, help="accepted; not acted on"),
        _Flag("jax_no_tracing", "bool", False, help="accepted; not acted on"),
        _Flag(
            "jax_remove_size_one_mesh_axis_from_type", "bool", False, help="accepted; not acted on"
        ),
        _Flag("jax_softmax_custom_jvp", "bool", False, help="accepted; not acted on"),
        _Flag("jax_thread_guard", "bool", False, help="accepted; not acted on"),
        _Flag("xform_eager_path", "enum", "host", ("host", "xla"), False, "eager on a CPU"),
        _Flag(
            "xform_warn_recompiles",
            "bool",
            False,  # off as JAX, which explains retraces only under jax_explain_cache_misses
            help="warn when one jitted function traces a third time, naming what changed",
        ),
    ]
}

# Older xform names, still accepted.
_ALIASES = {"enable_x64": "jax_enable_x64", "check_jaxprs": "jax_enable_checks"}

# The flags jit's cached-call path must notice (see ``slow_calls``).
_SLOW = frozenset(("jax_disable_jit", "jax_debug_nans", "jax_debug_infs"))
# The flags besides x64 that change what a trace makes: part of jit's cache key (see
# ``trace_context``) while any is away from its default.
_TRACE = (
    "jax_default_matmul_precision",
    "jax_numpy_rank_promotion",
    "jax_numpy_dtype_promotion",
    "jax_default_prng_impl",
)


class _PerThread(threading.local):
    """Flag values. A class attribute is the global value, which a thread sees until it sets
    its own (an instance attribute, that thread's only) inside a ``scope``."""


for _f in _FLAGS.values():
    setattr(_PerThread, _f.attr, _f.from_env())
check_jaxprs = check_jaxprs or _PerThread.enable_checks
_PerThread.enable_checks = check_jaxprs

_per_thread = _PerThread()
values = _per_thread  # read flags as ``config.values.debug_nans`` (this thread's value)
_scopes_slow = 0  # scopes now open, in any thread, that set a _SLOW flag
_scopes_trace = 0  # scopes now open, in any thread, that set a _TRACE flag
_trace_flags_set = False  # a _TRACE flag is away from its default in some thread
_lock = threading.Lock()
_hooks = {}  # flag name -> [hook(value)] called on each global update


def _update_slow_calls():
    global slow_calls
    new = _scopes_slow > 0 or any(getattr(_PerThread, _FLAGS[n].attr) for n in _SLOW)
    if new != slow_calls:
        slow_calls = new
        for hook in _hooks.get("slow_calls", ()):
            hook(new)


_update_slow_calls()


# The UserContexts made (xform/api/user_context.py): their values are in jit's cache key.
_user_contexts = []


def _update_trace_flags():
    global _trace_flags_set
    _trace_flags_set = _scopes_trace > 0 or any(
        getattr(_PerThread, _FLAGS[n].attr) != _FLAGS[n].default for n in _TRACE
    )


_update_trace_flags()


def trace_context():
    """What a jit trace depends on besides its arguments: the x64 mode of this thread, and
    the other flags that change traces (``_TRACE``) and user contexts' values when any is
    set. A cache key part, cheap while those flags keep their defaults."""
    v = _per_thread
    if not _trace_flags_set and not _user_contexts:
        return v.enable_x64
    return (
        v.enable_x64,
        v.default_matmul_precision,
        v.numpy_rank_promotion,
        v.numpy_dtype_promotion,
        v.default_prng_impl,
        *[c.value for c in _user_contexts],
    )


def _flag(name, what):
    flag = _FLAGS.get(_ALIASES.get(name, name)) if isinstance(name, str) else None
    if flag is None:
        close = difflib.get_close_matches(str(name), list(_FLAGS) + list(_ALIASES), n=3)
        hint = f"; did you mean {' or '.join(map(repr, close))}?" if close else ""
        raise AttributeError(f"xform.config.{what}: unrecognized config option {name!r}{hint}")
    return flag


def on_update(name, hook):
    """Call ``hook(value)`` whenever flag ``name`` is set globally (and once now, if it is not
    at its default). ``name`` may also be ``"slow_calls"``."""
    _hooks.setdefault(name, []).append(hook)
    if name != "slow_calls":
        flag = _FLAGS[name]
        value = getattr(_PerThread, flag.attr)
        if value != flag.default:
            hook(value)


def x64_enabled():
    """Whether 64-bit dtypes are on in this thread (its innermost scope, else the global
    flag)."""
    return _per_thread.enable_x64


def update(name, value):
    """Set a flag's global value, e.g. ``xform.config.update("jax_enable_x64", True)``.

    An unknown name raises ``AttributeError`` naming the close matches; a value of the wrong
    type ``TypeError`` or ``ValueError`` naming the flag.
    """
    global check_jaxprs
    flag = _flag(name, "update")
    value = flag.check(value)
    for hook in _hooks.get(flag.name, ()):
        hook(value)  # may refuse (the backend already started): before the value is stored
    setattr(_PerThread, flag.attr, value)
    if flag.name == "jax_enable_checks":
        check_jaxprs = value
    if flag.name in _SLOW:
        _update_slow_calls()
    if flag.name in _TRACE:
        _update_trace_flags()


def read(name):
    """A flag's value in this thread, by name (``read("jax_debug_nans")``)."""
    return getattr(_per_thread, _flag(name, "read").attr)


def __getattr__(name):
    """``xform.config.jax_enable_x64`` and the other flags, read as attributes."""
    if name.startswith(("jax_", "xform_")):
        return read(name)
    close = difflib.get_close_matches(name, list(_FLAGS), n=3)
    hint = f"; did you mean {' or '.join(map(repr, close))}?" if close else ""
    raise AttributeError(f"module 'xform.config' has no attribute {name!r}{hint}")


class scope:
    """``with scope(name, value):`` sets a flag in this thread for the block (JAX's context
    manager forms, ``xform.debug_nans(True)`` and the like); usable as a decorator too."""

    __slots__ = ("flag", "value", "saved")

    def __init__(self, name, value=_NO_DEFAULT):
        flag = _flag(name, "scope")
        if value is _NO_DEFAULT:
            if flag.kind != "bool":
                raise TypeError(
                    f"Context manager for {flag.name} config option requires an "
                    "argument representing the new value for the config option."
                )
            value = True
        self.flag = flag
        self.value = flag.check(value)

    def __enter__(self):
        global _scopes_slow, _scopes_trace
        flag = self.flag
        if not flag.per_thread:  # a process-wide flag: set and restore the global value
            self.saved = read(flag.name)
            update(flag.name, self.value)
            return
        attr = flag.attr
        own = vars(_per_thread)  # this thread's overrides
        self.saved = own.get(attr, _NO_DEFAULT)
        setattr(_per_thread, attr, self.value)
        if flag.name in _SLOW:
            with _lock:
                _scopes_slow += 1
                _update_slow_calls()
        if flag.name in _TRACE:
            with _lock:
                _scopes_trace += 1
                _update_trace_flags()

    def __exit__(self, *exc):
        global _scopes_slow, _scopes_trace
        flag = self.flag
        if not flag.per_thread:
            update(flag.name, self.saved)
            return
        if self.saved is _NO_DEFAULT:
            delattr(_per_thread, flag.attr)  # back to the global value, whatever it is now
        else:
            setattr(_per_thread, flag.attr, self.saved)
        if flag.name in _SLOW:
            with _lock:
                _scopes_slow -= 1
                _update_slow_calls()
        if flag.name in _TRACE:
            with _lock:
                _scopes_trace -= 1
                _update_trace_flags()

    def __call__(self, fun):
        def scoped(*args, **kwargs):
            with scope(self.flag.name, self.value):
                return fun(*args, **kwargs)

        scoped.__name__ = getattr(fun, "__name__", "scoped")
        scoped.__doc__ = getattr(fun, "__doc__", None)
        scoped.__wrapped__ = fun
        return scoped


def enable_x64_scope(on=True):
    """Context manager: 64-bit dtypes on (or off) inside the block, in this thread only."""
    return scope("jax_enable_x64", on)


def flags():
    """Every flag's name, with a line on what it does in xform."""
    return {f.name: f.help for f in _FLAGS.values()}


# --------------------------------------------------------------------------- JAX's context
# managers (``xform.debug_nans(True)``, ...): each sets its flag in this thread for a block.


def _scoped(flag_name, jax_name):
    def manager(new_val=_NO_DEFAULT):
        return scope(flag_name, new_val)

    manager.__name__ = manager.__qualname__ = jax_name
    manager.__doc__ = (
        f"Context manager (or decorator): set ``{flag_name}`` to ``new_val`` in "
        "this thread for the block, as JAX's ``" + jax_name + "``."
    )
    return manager


def disable_jit(disable=True):
    """Context manager: jitted functions run op by op in Python (their control flow sees
    concrete values) inside the block, in this thread; as JAX's ``disable_jit``."""
    return scope("jax_disable_jit", disable)


debug_nans = _scoped("jax_debug_nans", "debug_nans")
debug_infs = _scoped("jax_debug_infs", "debug_infs")
log_compiles = _scoped("jax_log_compiles", "log_compiles")
explain_cache_misses = _scoped("jax_explain_cache_misses", "explain_cache_misses")
default_matmul_precision = _scoped("jax_default_matmul_precision", "default_matmul_precision")
numpy_rank_promotion = _scoped("jax_numpy_rank_promotion", "numpy_rank_promotion")
numpy_dtype_promotion = _scoped("jax_numpy_dtype_promotion", "numpy_dtype_promotion")
default_prng_impl = _scoped("jax_default_prng_impl", "default_prng_impl")
threefry_partitionable = _scoped("jax_threefry_partitionable", "threefry_partitionable")
check_tracer_leaks = _scoped("jax_check_tracer_leaks", "check_tracer_leaks")
enable_checks = _scoped("jax_enable_checks", "enable_checks")
default_device = _scoped("jax_default_device", "default_device")
allow_f16_reductions = _scoped("jax_allow_f16_reductions", "allow_f16_reductions")
array_garbage_collection_guard = _scoped(
    "jax_array_garbage_collection_guard", "array_garbage_collection_guard"
)
auto_pcast = _scoped("jax_auto_pcast", "auto_pcast")
jax2tf_associative_scan_reductions = _scoped(
    "jax2tf_associative_scan_reductions", "jax2tf_associative_scan_reductions"
)
legacy_prng_key = _scoped("jax_legacy_prng_key", "legacy_prng_key")
no_execution = _scoped("jax_no_execution", "no_execution")
no_tracing = _scoped("jax_no_tracing", "no_tracing")
remove_size_one_mesh_axis_from_type = _scoped(
    "jax_remove_size_one_mesh_axis_from_type", "remove_size_one_mesh_axis_from_type"
)
softmax_custom_jvp = _scoped("jax_softmax_custom_jvp", "softmax_custom_jvp")
thread_guard = _scoped("jax_thread_guard", "thread_guard")
transfer_guard_host_to_device = _scoped(
    "jax_transfer_guard_host_to_device", "transfer_guard_host_to_device"
)
transfer_guard_device_to_host = _scoped(
    "jax_transfer_guard_device_to_host", "transfer_guard_device_to_host"
)
transfer_guard_device_to_device = _scoped(
    "jax_transfer_guard_device_to_device", "transfer_guard_device_to_device"
)
enable_custom_prng = _scoped("jax_enable_custom_prng", "enable_custom_prng")
debug_key_reuse = _scoped("jax_debug_key_reuse", "debug_key_reuse")


def checking_leaks():
    """Context manager: ``check_tracer_leaks(True)``, as JAX's ``checking_leaks``."""
    return scope("jax_check_tracer_leaks", True)


@contextlib.contextmanager
def transfer_guard(new_val):
    """Context manager: set all three transfer guards in this thread, as JAX's
    ``transfer_guard`` (accepted; xform does not guard transfers yet)."""
    with contextlib.ExitStack() as stack:
        for name in (
            "jax_transfer_guard_host_to_device",
            "jax_transfer_guard_device_to_host",
            "jax_transfer_guard_device_to_device",
        ):
            stack.enter_context(scope(name, new_val))
        yield
