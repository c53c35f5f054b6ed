"""``xform.debug``: printing, callbacks and breakpoints that work inside transformed code, as
JAX's ``jax.debug``.

Each is a ``debug_callback`` (xform/primitives/callback.py): run at once eagerly, and inside
compiled programs as an XLA host callback at the point the program reaches it (every
iteration of a loop body, once per lane under ``vmap``, on primal values under ``grad``).
"""

import builtins
import cmd
import inspect
import logging
import os
import pprint
import string
import sys
import threading
import traceback

import numpy as np

from xform import pytree
from xform.api.sharding import (  # noqa: F401  (jax.debug's sharding pictures)
    inspect_array_sharding,
    visualize_array_sharding,
    visualize_sharding,
)
from xform.core import Tracer
from xform.primitives.autodiff import stop_gradient
from xform.primitives.callback import (
    FlatCallback,
    debug_callback,
    pure_callback,
    split_callback_args,
)

__all__ = [
    "callback",
    "print",
    "log",
    "breakpoint",
    "DebugEffect",
    "OrderedDebugEffect",
    "visualize_array_sharding",
    "visualize_sharding",
    "inspect_array_sharding",
]

# jax.debug's names that xform does not have yet, and why.
NOT_PROVIDED = {}


class DebugEffect:
    """The effect of an unordered debug callback (JAX's name; xform tracks it per primitive)."""

    def __str__(self):
        return "Debug"


class OrderedDebugEffect:
    """The effect of an ordered debug callback (JAX's name)."""

    def __str__(self):
        return "OrderedDebug"


def _stage(fn, args, kwargs, ordered, partitioned):
    in_tree, dynamic, static = split_callback_args(args, kwargs)
    debug_callback(
        FlatCallback(fn, in_tree, static), *dynamic, ordered=ordered, partitioned=partitioned
    )


def callback(callback=None, *args, ordered=False, partitioned=False, **kwargs):
    """Call ``callback(*args, **kwargs)`` for its side effects, from inside programs too.

    Args:
      callback: a Python function returning None; it receives ``xform.Array``s for the
        array leaves of ``args``/``kwargs`` and the other leaves as they are. Without it,
        the options-first form: ``callback(ordered=True)(fn, *args)``.
      ordered: run in program order relative to the other ordered callbacks and prints.
      partitioned: accepted for JAX's signature (xform runs the callback on whole values).

    Example:
      >>> xform.debug.callback(lambda x: print(x.sum()), x)
    """

    def stage(fn, *c_args, **c_kwargs):
        if not callable(fn):
            raise TypeError(
                "first argument to jax.debug.callback must be callable, but got "
                f"an object of type {type(fn)}"
            )
        _stage(fn, c_args, c_kwargs, ordered, partitioned)

    if callback is not None:
        stage(callback, *args, **kwargs)
        return None
    if args or kwargs:
        raise TypeError(
            "debug_callback received unexpected arguments in the two-call form: "
            f"args={args} kwargs={kwargs}"
        )
    return stage


class _FormatChecker(string.Formatter):
    """Checks a format string against its arguments without formatting anything (the
    arguments are tracers while tracing)."""

    def format_field(self, value, format_spec):
        return ""

    def check_unused_args(self, used_args, args, kwargs):
        unused = [a for i, a in enumerate(args) if i not in used_args]
        if unused:
            raise ValueError(f"Unused positional arguments to `jax.debug.print`: {unused}")
        unused_kwargs = [k for k in kwargs if k not in used_args]
        if unused_kwargs:
            raise ValueError(
                f"Unused keyword arguments to `jax.debug.print`: {unused_kwargs}. You may be "
                'passing an f-string (i.e, `f"{x}"`) into `jax.debug.print` and instead '
                "should pass in a regular string."
            )


_checker = _FormatChecker()
_logger = logging.getLogger(__name__)


def _has_placeholders(fmt):
    if not fmt:
        return False
    _, field, *_ = next(iter(string.Formatter().parse(fmt)))
    return field is not None


def _printer(fmt, printoptions, placeholders, to_log):
    def show(*args, **kwargs):
        if placeholders:
            with np.printoptions(**printoptions):
                msg = fmt.format(*args, **kwargs)
        else:
            msg = " ".join((fmt, *(str(a) for a in args)))
        if to_log:
            _logger.info(msg)
        else:
            sys.stdout.write(msg + "\n")

    return show


def _print(fmt, args, kwargs, ordered, partitioned, skip_format_check, to_log):
    if not skip_format_check:
        _checker.format(fmt, *args, **kwargs)  # a bad format raises now, at trace time
    show = _printer(fmt, np.get_printoptions(), _has_placeholders(fmt), to_log)
    _stage(show, args, kwargs, ordered, partitioned)


def print(  # noqa: A001
    fmt=None,
    *args,
    ordered=False,
    partitioned=False,
    skip_format_check=False,
    **kwargs,
):
    """Print ``fmt.format(*args, **kwargs)`` with the runtime values, from inside programs.

    Not an f-string: formatting waits for the values, so write
    ``print("x = {x}", x=x)``. A format string that does not fit its arguments raises at
    once (at trace time under ``jit``).

    Args:
      fmt: a ``str.format`` string. Without it, the options-first form:
        ``print(ordered=True)("x = {}", x)``.
      *args, **kwargs: the values to format (arrays, or any Python value).
      ordered: print in program order relative to the other ordered prints and callbacks.
      partitioned: accepted for JAX's signature.
      skip_format_check: do not check ``fmt`` against the arguments.

    Example:
      >>> xform.debug.print("x = {x}", x=x)
    """
    if fmt is not None:
        _print(fmt, args, kwargs, ordered, partitioned, skip_format_check, False)
        return None
    if args or kwargs:
        raise TypeError(
            "debug_print received unexpected arguments in the two-call form: "
            f"args={args} kwargs={kwargs}"
        )
    return lambda fmt, *a, **k: _print(fmt, a, k, ordered, partitioned, skip_format_check, False)


def log(fmt, *args, ordered=False, partitioned=False, skip_format_check=False, **kwargs):
    """As ``print``, but the message goes to the ``xform.debug`` logger at level INFO."""
    _print(fmt, args, kwargs, ordered, partitioned, skip_format_check, True)


# --------------------------------------------------------------------------- breakpoint

_XFORM_DIR = os.path.dirname(os.path.abspath(__file__))
_LOWERING_DIR = os.path.join(os.path.dirname(_XFORM_DIR), "lowering")
_debug_lock = threading.Lock()


class _Frame:
    """A Python frame as the debugger shows it: file, line, source and its variables."""

    def __init__(self, info, local_vars, global_vars):
        self.filename = info.filename
        self.lineno = info.lineno
        self.locals = local_vars
        self.globals = global_vars
        try:
            self.source, start = inspect.getsourcelines(info.frame)
            self.source = [line.rstrip("\n") for line in self.source]
            self.offset = info.lineno - max(start, 1)
        except (OSError, TypeError):
            self.source, self.offset = [], None


def _user_frames(filter_frames, num_frames):
    infos = inspect.stack()[2:]  # past breakpoint and this function
    if filter_frames:
        infos = [
            f
            for f in infos
            if not f.filename.startswith((_XFORM_DIR, _LOWERING_DIR))
            and "/_pytest/" not in f.filename
            and "/pluggy/" not in f.filename
        ]
    return infos[:num_frames] if num_frames is not None else infos


class _Debugger(cmd.Cmd):
    """The text debugger ``breakpoint`` starts (JAX's ``jdb`` commands)."""

    prompt = "(jdb) "

    def __init__(self, frames, stdin=None, stdout=None):
        super().__init__(stdin=stdin, stdout=stdout)
        self.use_rawinput = stdin is None
        self.frames = frames
        self.index = 0
        self.intro = "Entering jdb:"

    def _say(self, text):
        builtins.print(text, file=self.stdout)

    def _eval(self, expr):
        frame = self.frames[self.index]
        return eval(expr, {}, {**frame.globals, **frame.locals})

    def _show(self, expr, fmt):
        try:
            self._say(fmt(self._eval(expr)))
        except Exception:
            self._say("*** " + traceback.format_exception_only(*sys.exc_info()[:2])[-1].strip())

    def default(self, line):
        self._show(line, repr)

    def do_p(self, arg):
        """p expression: print the value of an expression."""
        self._show(arg, repr)

    def do_pp(self, arg):
        """pp expression: pretty-print the value of an expression."""
        self._show(arg, pprint.pformat)

    def _context(self, n=2):
        frame = self.frames[self.index]
        lines = [f"> {frame.filename}({frame.lineno})"]
        for i, line in enumerate(frame.source):
            if frame.offset is not None and frame.offset - 1 - n <= i <= frame.offset + n:
                lines.append(("->  " if i == frame.offset else "    ") + line)
        self._say("\n".join(lines))

    def do_up(self, arg):
        """u(p): move up a stack frame."""
        if self.index == len(self.frames) - 1:
            self._say("At topmost frame.")
        else:
            self.index += 1
        self._context()

    def do_down(self, arg):
        """d(own): move down a stack frame."""
        if self.index == 0:
            self._say("At bottommost frame.")
        else:
            self.index -= 1
        self._context()

    def do_list(self, arg):
        """l(ist): the source around the current line."""
        self._context(5)

    def do_where(self, arg):
        """w(here): the stack, most recent frame last."""
        lines = ["Traceback:"]
        for frame in reversed(self.frames):
            lines.append(f'  File "{frame.filename}", line {frame.lineno}')
            lines.append(
                "    "
                + (
                    frame.source[frame.offset].strip()
                    if frame.offset is not None
                    else "<no source>"
                )
            )
        self._say("\n".join(lines))

    def do_continue(self, arg):
        """c(ont(inue)): continue the program."""
        return True

    def do_quit(self, arg):
        """q(uit): exit the program."""
        sys.exit(0)

    do_u, do_d, do_l, do_w, do_bt = do_up, do_down, do_list, do_where, do_where
    do_c = do_cont = do_continue
    do_q = do_exit = do_EOF = do_quit


def breakpoint(  # noqa: A001
    *,
    backend=None,
    filter_frames=True,
    num_frames=None,
    ordered=False,
    token=None,
    **kwargs,
):
    """Stop in a text debugger (prompt ``(jdb)``) where the program reaches this call.

    The debugger shows the user's frames at the call, with the traced values in them
    concrete: eagerly it stops at once; under ``jit`` it stops when the compiled program
    runs the call (not while tracing), once per lane under ``vmap``. Commands: ``p``/``pp``
    (evaluate), ``u``/``d`` (move between frames), ``l`` (list), ``w`` (where), ``c``
    (continue), ``q`` (quit).

    Args:
      backend: the debugger; only ``"cli"`` (the default) is provided.
      filter_frames: leave out xform's own frames.
      num_frames: how many frames, from the innermost, to show.
      ordered: order it relative to other ordered callbacks and prints.
      token: an array (or pytree of arrays), the alternative to ``ordered``: the debugger
        starts once it is computed, and it is returned unchanged (use the result, or the
        breakpoint may be dropped).
      **kwargs: ``stdin``/``stdout`` for the debugger.

    Returns:
      ``token`` if given, else None.

    Example:
      >>> xform.debug.breakpoint()
    """
    if backend not in (None, "cli"):
        raise ValueError(f"Debugger backend {backend!r} is not available; xform provides 'cli'")
    if token is not None and ordered:
        raise ValueError("`ordered` and `token` are mutually exclusive arguments.")
    infos = _user_frames(filter_frames, num_frames)
    names, dynamic = [], []  # the traced values in each frame's locals
    for k, info in enumerate(infos):
        for name, value in info.frame.f_locals.items():
            leaves = pytree.tree_leaves(value) if _flattens(value) else []
            if leaves and any(isinstance(x, Tracer) for x in leaves):
                names.append((k, name, pytree.tree_structure(value), len(leaves)))
                dynamic.extend(leaves)
    static_locals = [dict(info.frame.f_locals) for info in infos]
    global_vars = [info.frame.f_globals for info in infos]

    def stop(*values):
        local_vars = [dict(d) for d in static_locals]
        it = iter(values)
        for k, name, treedef, n in names:
            local_vars[k][name] = pytree.tree_unflatten(treedef, [next(it) for _ in range(n)])
        frames = [
            _Frame(info, loc, glob)
            for info, loc, glob in zip(infos, local_vars, global_vars, strict=True)
        ]
        with _debug_lock:
            _Debugger(frames, **kwargs).cmdloop()

    if token is None:
        debug_callback(
            FlatCallback(stop, pytree.tree_structure(((*dynamic,), {}))),
            *dynamic,
            ordered=ordered,
            partitioned=False,
        )
        return None
    # Run once ``token`` is computed, and hand it back: what uses the result waits for it.
    token, dynamic = stop_gradient((token, dynamic))

    def stop_then_pass(token, *values):
        stop(*values)
        return token

    return pure_callback(stop_then_pass, token, token, *dynamic)


def _flattens(value):
    try:
        pytree.tree_leaves(value)
    except Exception:  # a local that is not a pytree: shown as it is
        return False
    return True
