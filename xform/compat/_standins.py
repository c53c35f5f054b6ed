"""Stand-ins for the ``jax`` names xform lacks: they import, and fail where they are used.

A library imports dozens of JAX names at the top of its modules and uses a few of them. Under
compat mode a name that JAX 0.10.2 has and xform does not resolves to a stand-in, so that
``import numpyro`` works and everything the program does not touch keeps working; the
stand-in raises ``NotImplementedError("xform lacks jax.X (used at file:line; reached at
file:line)")`` when it is called, instantiated, subscripted, iterated or read further. A name
JAX does not have either still raises ``AttributeError``/``ModuleNotFoundError``, so that a
library's ``hasattr(jax, ...)`` feature tests read JAX 0.10.2's answers.

Whether JAX has a name is read from the installed JAX itself, never by running its code: a
module is JAX's when its file exists in the ``jax`` package; a module's names are those of its
loaded copy (most of ``jax._src`` is loaded before compat mode is installed, since xform runs
on jaxlib through JAX), with the deprecated names it still answers, or else the top-level
definitions and imports of its source file.
"""

import ast
import importlib
import importlib.util
import os
import sys
import types

import jax as _real_jax  # imported before compat mode is installed: the real package

_JAX_DIR = os.path.dirname(_real_jax.__file__)
_XFORM_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The code of the runtime under xform: real JAX, jaxlib, and xform's engine and lowering.
_RUNTIME = (
    _JAX_DIR + os.sep,
    os.path.dirname(importlib.util.find_spec("jaxlib").origin) + os.sep,
    _XFORM_DIR + os.sep,
    os.path.join(os.path.dirname(_XFORM_DIR), "lowering") + os.sep,
)
# Real JAX's modules as they were when compat mode was installed (``_finder`` fills it).
real_modules = {}
_names_of = {}  # jax module name -> the names JAX defines in it
_stand_ins = {}  # jax name -> its stand-in (one object per name: ``is`` works on them)
# Compat mode's own code and the import machinery (importlib.import_module's frames too: the
# module that called it asked for the import).
_INTERNAL = (
    os.path.dirname(os.path.abspath(__file__)),
    "<frozen importlib",
    os.path.dirname(importlib.__file__) + os.sep,
)


def _where(depth):
    """``file:line`` of the first frame, ``depth`` frames up or more, outside the import
    machinery and compat mode: the library code that reached or used a name."""
    frame = sys._getframe(depth + 1)
    while frame is not None and frame.f_code.co_filename.startswith(_INTERNAL):
        frame = frame.f_back
    if frame is None:
        return "<unknown>"
    return f"{frame.f_code.co_filename}:{frame.f_lineno}"


def from_runtime():
    """Whether the ``jax`` import or attribute being resolved was asked for by the runtime
    (real JAX's, jaxlib's or xform's own code), which must get real JAX's modules."""
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename.startswith(_INTERNAL):
        frame = frame.f_back
    return frame is not None and frame.f_code.co_filename.startswith(_RUNTIME)


def jax_module_file(jax_name):
    """The source file of JAX's module ``jax_name``, or None if JAX has no such module."""
    path = os.path.join(_JAX_DIR, *jax_name.split(".")[1:])
    for candidate in (os.path.join(path, "__init__.py"), path + ".py"):
        if os.path.isfile(candidate):
            return candidate
    return None


def _defined_names(source_file):
    """The names a module's source binds at its top level (definitions, assignments,
    imports), and for a package its submodules."""
    try:
        with open(source_file, encoding="utf-8") as f:
            tree = ast.parse(f.read())
    except (OSError, SyntaxError, ValueError):
        return set()
    names = set()
    for node in ast.walk(tree):  # (nested ``if``/``try`` blocks bind module names too)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    if os.path.basename(source_file) == "__init__.py":
        folder = os.path.dirname(source_file)
        names.update(
            n.removesuffix(".py")
            for n in os.listdir(folder)
            if n.endswith(".py") or os.path.isfile(os.path.join(folder, n, "__init__.py"))
        )
    return names


def jax_names(jax_name):
    """The names JAX's module ``jax_name`` defines (empty if JAX has no such module)."""
    names = _names_of.get(jax_name)
    if names is None:
        module = real_modules.get(jax_name)
        if module is not None:
            # (with the deprecated names its ``__getattr__`` still answers)
            deprecated = vars(module).get("_deprecations", {})
            names = set(vars(module)) | {k for k, v in deprecated.items() if v[1] is not None}
        else:
            source = jax_module_file(jax_name)
            names = _defined_names(source) if source else set()
        _names_of[jax_name] = names
    return names


def jax_has(jax_name):
    """Whether JAX 0.10.2 has ``jax_name`` (a module, or a name in its parent module)."""
    parent, _, attr = jax_name.rpartition(".")
    return jax_module_file(jax_name) is not None or (bool(parent) and attr in jax_names(parent))


def lacking(jax_name, message=None):
    """The ``NotImplementedError`` that a use of ``jax_name`` raises."""
    text = f"xform lacks {jax_name}" + (f": {message}" if message else "")
    return NotImplementedError(f"{text} (xform.compat stands in for jax in this process)")


def _fail(cls, how):
    raise lacking(cls.jax_name, f"{how} at {_where(2)}; the name was reached at {cls.reached}")


class StandIn(type):
    """The type of stand-ins: each is a class, so that a library may subclass it, name it in
    annotations and ``isinstance`` tests (nothing is an instance) or compare it; calling,
    instantiating, subscripting, iterating or reading an attribute of it raises."""

    def __call__(cls, *args, **kwargs):
        _fail(cls, "called")

    def __getattr__(cls, attr):
        if attr.startswith("__") and attr.endswith("__"):  # protocol probes (copy, inspect)
            raise AttributeError(attr)
        _fail(cls, f"read as .{attr}")

    def __getitem__(cls, key):
        _fail(cls, "subscripted")

    def __setitem__(cls, key, value):
        _fail(cls, "assigned into")

    def __iter__(cls):
        _fail(cls, "iterated")

    def __len__(cls):  # noqa: PLE0303  (it never returns: a use of the stand-in raises)
        _fail(cls, "measured")

    def __contains__(cls, item):
        _fail(cls, "searched")

    def __repr__(cls):
        return f"<xform stand-in for {cls.jax_name}>"


def stand_in(jax_name):
    """The stand-in for ``jax_name``, a name JAX has and xform lacks (one per name)."""
    obj = _stand_ins.get(jax_name)
    if obj is None:
        module, _, name = jax_name.rpartition(".")
        obj = StandIn(
            name,
            (),
            {
                "jax_name": jax_name,
                "reached": _where(1),
                "__module__": module,
                "__qualname__": name,
                "__doc__": f"A stand-in for {jax_name}, which xform lacks.",
            },
        )
        # A subclass a library defines is a stand-in for the same name (its calls fail too).
        _stand_ins[jax_name] = obj
    return obj


def is_stand_in(obj):
    """Whether ``obj`` is a stand-in (or a library's subclass of one)."""
    return isinstance(obj, StandIn)


def lacking_function(jax_name, message=None):
    """A function standing for ``jax_name``, where a library needs a real function object
    (``functools.wraps``, signatures): calling it raises."""

    def lacks(*args, **kwargs):
        raise lacking(jax_name, message)

    lacks.__name__ = lacks.__qualname__ = jax_name.rsplit(".", 1)[1]
    return lacks


def empty_module(jax_name):
    """A module standing for JAX's module ``jax_name``: its names are stand-ins."""
    mod = types.ModuleType(jax_name, f"A stand-in for {jax_name}, which xform lacks.")
    mod.__path__ = []
    return mod
