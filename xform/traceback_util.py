"""Tracebacks as JAX shows them: xform's own frames hidden from an error that reaches a user.

An API boundary is where a user's call enters xform: ``api_boundary(fun)`` for a function,
or ``try: ... except Exception as e: filter_exception(e); raise`` inline in a hot method
decorated with ``register_boundary`` (a jitted call, ``Primitive.bind``): a ``try`` costs
nothing until something raises. The outermost boundary on the stack acts, according to the
flag ``jax_traceback_filtering``, as JAX's does:

- ``"off"``: the traceback as it is;
- ``"tracebackhide"``: frames of xform's files get ``__tracebackhide__ = True`` (pytest and
  IPython then leave them out);
- ``"remove_frames"``: xform's frames are removed; the whole traceback is kept on an
  ``UnfilteredStackTrace`` set as the exception's ``__cause__``;
- ``"quiet_remove_frames"``: xform's frames are removed and a note says so;
- ``"auto"`` (the default): ``"tracebackhide"`` under IPython, else ``"quiet_remove_frames"``.

Also ``fun_sourceinfo``: a user's function as errors name it, ``f at /path/file.py:12``.
"""

import functools
import inspect
import os
import re
import sys
import traceback
import types

from xform import config

# xform's packages: frames from their files are xform's own (JAX hides its own the same way).
_EXCLUDED = tuple(
    os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), d) + os.sep
    for d in ("xform", "lowering")
)

_UNFILTERED_NOTE = (
    "The stack trace below excludes xform-internal frames.\n"
    "The preceding is the original exception that occurred, unmodified.\n"
    "\n--------------------"
)
_SIMPLIFIED_NOTE = (
    "For simplicity, xform has removed its internal frames from the traceback of the "
    "following exception. Set JAX_TRACEBACK_FILTERING=off to include these."
)

_boundaries = set()  # the code objects of the boundaries' frames


class UnfilteredStackTrace(Exception):
    """The full traceback of an error whose own traceback xform filtered (its ``__cause__``,
    in ``"remove_frames"`` mode)."""


def include_frame(frame):
    """Whether a frame is the user's (not from xform's or its lowering's files)."""
    return not frame.f_code.co_filename.startswith(_EXCLUDED)


def register_boundary(fun):
    """Mark the frames running ``fun`` as boundaries (a decorator, for a function that calls
    ``filter_exception`` itself): an inner boundary leaves an error to the outermost one."""
    _boundaries.add(fun.__code__)
    return fun


def api_boundary(fun):
    """``fun`` as a boundary: an error escaping it has xform's frames filtered out."""

    @functools.wraps(fun)
    def reraise_with_filtered_traceback(*args, **kwargs):
        __tracebackhide__ = True  # noqa: F841 (read by pytest and IPython)
        try:
            return fun(*args, **kwargs)
        except Exception as e:
            filter_exception(e)
            raise

    return reraise_with_filtered_traceback


register_boundary(api_boundary(lambda: None))


def _mode():
    mode = config.values.traceback_filtering
    if mode == "auto":
        ipython = sys.modules.get("IPython")
        running = ipython is not None and getattr(ipython, "get_ipython", lambda: None)()
        return "tracebackhide" if running else "quiet_remove_frames"
    return mode


def _under_boundary(tb):
    frame = tb.tb_frame.f_back
    while frame is not None:
        if frame.f_code in _boundaries:
            return True
        frame = frame.f_back
    return False


def filter_exception(e):
    """Filter ``e``'s traceback in place, as the flag says, unless an outer boundary will.

    Called in the ``except`` block of a boundary, which then re-raises ``e`` with ``raise``.
    """
    tb = e.__traceback__
    if tb is None or _under_boundary(tb):
        return
    mode = _mode()
    if mode == "off":
        return
    if mode == "tracebackhide":
        for frame, _ in traceback.walk_tb(tb):
            if not include_frame(frame):
                frame.f_locals["__tracebackhide__"] = True
        return
    e.with_traceback(_filtered(tb))
    if mode == "quiet_remove_frames":
        e.add_note("--------------------\n" + _SIMPLIFIED_NOTE)
        return
    message = "".join(traceback.format_exception_only(type(e), e)).strip()
    unfiltered = UnfilteredStackTrace(f"{message}\n\n{_UNFILTERED_NOTE}")
    unfiltered.with_traceback(_with_callers(tb))
    unfiltered.__cause__ = e.__cause__
    unfiltered.__context__ = e.__context__
    unfiltered.__suppress_context__ = e.__suppress_context__
    e.__cause__ = unfiltered
    e.__context__ = None


def _filtered(tb):
    kept = []
    while tb is not None:
        if include_frame(tb.tb_frame):
            kept.append(tb)
        tb = tb.tb_next
    out = None
    for entry in reversed(kept):
        out = types.TracebackType(out, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
    return out


def _with_callers(tb):
    """``tb`` continued up the call stack to the first run of module-level frames (as JAX's:
    not past the statement a REPL runs), the callers' xform frames left out."""
    out, at_module_level = tb, False
    for frame, lineno in traceback.walk_stack(tb.tb_frame):
        if "importlib._bootstrap" in frame.f_code.co_filename:
            continue
        if at_module_level and frame.f_code.co_name != "<module>":
            break
        if include_frame(frame):
            out = types.TracebackType(out, frame, frame.f_lasti, lineno)
        at_module_level = at_module_level or frame.f_code.co_name == "<module>"
    return out


_BUILTIN_NAME = re.compile(r"(?:<built-in function (\S+)>)")


def positional_names(fun):
    """The names of ``fun``'s positional parameters (none if its signature is unreadable),
    with which JAX's messages name the arguments."""
    try:
        parameters = inspect.signature(fun).parameters.values()
    except (TypeError, ValueError):
        return []
    return [p.name for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def fun_sourceinfo(fun):
    """``name at file:line`` of a user's function, as JAX's errors name it (a builtin by its
    name, ``<unknown>`` for other callables without code)."""
    while isinstance(fun, functools.partial):
        fun = fun.func
    fun = inspect.unwrap(fun)
    try:
        code = fun.__code__
        return f"{fun.__name__} at {code.co_filename}:{code.co_firstlineno}"
    except AttributeError:
        try:
            match = _BUILTIN_NAME.match(str(fun))
        except Exception:  # noqa: BLE001 (a user's __str__)
            return "<unknown>"
        return match.group(1) if match else "<unknown>"


# --------------------------------------------------------------------------- tracer errors

_ERRORS_PAGE = "https://docs.jax.dev/en/latest/errors.html"


class TracingName(str):
    """What a trace is tracing, as errors say it (``tracing `f` for jit``), carrying what
    JAX's debug info gives its tracer errors: the function, the transformation, and
    ``arg_names()``, a name per input (``x``, ``d['a']``), computed only when an error asks."""

    def __new__(cls, text, fun, traced_for, arg_names):
        self = super().__new__(cls, text)
        self.fun, self.traced_for, self.arg_names = fun, traced_for, arg_names
        return self


def origin_message(name, invars, eqns, var):
    """JAX's account of where a staged value came from: the traced function and the
    arguments ``var`` depends on (found by walking ``eqns`` back to ``invars``)."""
    if not isinstance(name, TracingName):
        return f"\nThe error occurred while {name}." if name else ""
    origin = (
        f"The error occurred while tracing the function {fun_sourceinfo(name.fun)} for "
        f"{name.traced_for}. "
    )
    active = {var}
    for eqn in reversed(eqns):
        if any(v in active for v in eqn.outvars):
            active.update(v for v in eqn.invars if not hasattr(v, "val"))  # (not Literals)
    positions = [i for i, v in enumerate(invars) if v in active]
    if positions:
        names = name.arg_names()
        named = [names[i] if i < len(names) else "unknown" for i in positions]
        if len(named) == 1:
            which = f"the argument {named[0]}"
        elif len(named) == 2:
            which = f"the arguments {named[0]} and {named[1]}"
        else:
            which = f"the arguments {', '.join(named[:-1])}, and {named[-1]}"
        s = "s" if len(named) > 1 else ""
        origin += (
            "This concrete value was not available in Python because it depends on the "
            f"value{s} of {which}."
        )
    return "\n" + origin


def concretization_message(tracer, what):
    """``(error class name, message)`` for ``what`` (``bool``, ``int``, ``float``,
    ``complex``, ``__index__``, ``__array__``, ``tolist``, ``item``) applied to a tracer
    whose value is not known, as JAX words it, with JAX's page on the error."""
    described = f"traced array with shape {tracer.aval.str_short(False)}"
    origin = tracer._origin_msg()
    name = getattr(tracer._trace, "name", None)
    if not origin and name:  # (JAX says where a BatchTracer was made; xform, what made it)
        origin = f"\nThe error occurred while {name}."
    if what == "bool":
        error = "TracerBoolConversionError"
        text = f"Attempted boolean conversion of {described}."
    elif what == "__index__":
        error = "TracerIntegerConversionError"
        text = f"The __index__() method was called on {described}"
    elif what == "__array__":
        error = "TracerArrayConversionError"
        text = f"The numpy.ndarray conversion method __array__() was called on {described}"
    else:
        error = "ConcretizationTypeError"
        if what in ("int", "float", "complex"):
            context = (
                f"The problem arose with the `{what}` function. If trying to convert the data "
                f"type of a value, try using `x.astype({what})` or `jnp.array(x, {what})` "
                "instead."
            )
        elif what == "item":
            context = "This occurred in the item() method of jax.Array"
        else:  # (JAX names the origin twice here)
            context = f"The {what}() method was called on {described}.{origin}"
        text = (
            "Abstract tracer value encountered where concrete value is expected: "
            f"{described}\n{context}"
        )
        origin += "\n"
    return error, f"{text}{origin}\nSee {_ERRORS_PAGE}#jax.errors.{error}"
