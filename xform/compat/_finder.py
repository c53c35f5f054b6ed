"""The import hook behind ``xform.compat.install()``: ``jax`` and ``jax.*`` resolve to xform.

A meta-path finder answers every ``jax`` import. Its loader puts the xform module in
``sys.modules`` under the ``jax`` name during ``exec_module`` (the import system returns what
``sys.modules`` holds after it), so ``import jax.numpy`` binds ``xform.numpy`` itself and a
second import finds the same module. Real JAX's modules are set aside on install and put back on
uninstall; xform keeps the references it bound to them (it runs on jaxlib).

The imports of the runtime under xform (real JAX's and jaxlib's own code, and xform's, which
import JAX's internals lazily inside functions) get real JAX's modules, so that programs run
under compat mode as they do outside it. Such a module then stays in ``sys.modules``: a library
importing the same ``jax._src`` internal later gets real JAX's (else it would get a stand-in).
"""

import importlib
import importlib.abc
import importlib.machinery
import sys
import types

import xform
from xform import config, dtypes, errors
from xform.compat import _config, _jax_core, _jax_src, _standins, _types, _version

# ``jax.<name>`` -> the module that stands for it, where that is not ``xform.<name>``.
ALIASES = {
    "jax.core": "xform.compat._jax_core",
    "jax.version": "xform.compat._version",
    "jax.interpreters.ad": "xform.extend.ad",
    "jax.interpreters.batching": "xform.compat._batching",
    "jax.interpreters.mlir": "xform.extend.mlir",
}
# ``jax.<name>`` modules made here from a table of names (``jax._src.*``: see ``_jax_src``).
# Those with an empty table import (libraries bind them at import time) but name what xform lacks
# on first use: ``jax.extend.linear_util`` and ``partial_eval`` are JAX's tracing internals.
_TABLES = {
    "jax.interpreters": {},
    **_jax_src.LACKING,
    "jax._src": {},
    **{f"jax._src.{name}": table for name, table in _jax_src.MODULES.items()},
}
_LACKS = "xform lacks it (xform.compat stands in for jax in this process)"


def _lacks_attribute(jax_name, name, previous=None):
    """A module ``__getattr__`` whose error names the missing jax name."""

    def __getattr__(attr):
        if previous is not None:
            try:
                return previous(attr)
            except AttributeError:
                pass
        if attr.startswith("__"):  # protocol probes (``__path__``, ``__wrapped__``, ...)
            raise AttributeError(f"module {name!r} has no attribute {attr!r}")
        if _standins.from_runtime():
            return _real_attribute(jax_name, attr)
        extra = _jax_src.EXTRAS.get(jax_name, {})
        if attr in extra:
            return extra[attr]
        sub = f"{jax_name}.{attr}"
        if (
            sub in ALIASES
            or sub in _TABLES
            or sub in _jax_src.FALLBACKS
            or _standins.jax_module_file(sub)
        ):
            return importlib.import_module(sub)  # ``from jax.extend import linear_util``
        if attr in _standins.jax_names(jax_name):  # JAX has it: fail where it is used
            return _standins.stand_in(sub)
        raise AttributeError(
            f"module {jax_name!r} has no attribute {attr!r}: "
            f"{jax_name}.{attr} is not available, {_LACKS}"
        )

    __getattr__.xform_compat = True
    return __getattr__


class _JaxModule(types.ModuleType):
    """``jax`` itself: xform's top-level names, JAX's version, and errors that name what
    xform lacks. Names are looked up in ``xform`` on first use and then kept here."""

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(f"module 'jax' has no attribute {attr!r}")
        if _standins.from_runtime():
            return _real_attribute("jax", attr)  # (not kept: the runtime's own view)
        sub = f"jax.{attr}"
        if (
            sub in ALIASES
            or sub in _TABLES
            or sub in _jax_src.FALLBACKS
            or isinstance(getattr(xform, attr, None), types.ModuleType)
        ):
            value = importlib.import_module(sub)  # through the finder: registered and patched
        elif hasattr(xform, attr):
            value = getattr(xform, attr)
        elif _standins.jax_module_file(sub):
            value = importlib.import_module(sub)  # a stand-in module
        elif attr in _standins.jax_names("jax"):  # JAX has it: fail where it is used
            value = _standins.stand_in(sub)
        else:
            raise AttributeError(
                f"module 'jax' has no attribute {attr!r}: jax.{attr} is not available, {_LACKS}"
            )
        setattr(self, attr, value)
        return value

    def __dir__(self):
        names = set(dir(xform)) | {n.split(".")[1] for n in (*ALIASES, *_TABLES)}
        return sorted(names | set(self.__dict__))


class _State:
    finder = None
    real_modules = {}  # real JAX's sys.modules entries, set aside while installed
    patched = []  # (module, previous __getattr__ or None) to undo on uninstall
    replaced = []  # (module, name, previous value) to undo on uninstall
    added = []  # (class, name) of attributes added on install, deleted on uninstall
    warn_recompiles = True  # xform's flag as it was before install


# Names of xform modules that compat mode replaces while installed (see ``_types``).
REPLACED = {"xform.numpy": {"ndarray": _types.Array, "Array": _types.Array}}


def _make_jax_module():
    mod = _JaxModule("jax", xform.__doc__)
    mod.__path__ = []  # a package: submodules are found by the finder, not on a path
    mod.__file__ = xform.__file__
    mod.__version__ = _version.__version__
    mod.__version_info__ = _version.__version_info__
    mod.version = _version
    mod.core = _jax_core
    mod.Array = _types.Array
    mod.config = _config.config  # JAX's Config object (``x64_enabled`` a bool), not a module
    return mod


def _table_module(jax_name, table):
    mod = types.ModuleType(jax_name, f"{jax_name} under xform.compat (see xform.compat._jax_src)")
    mod.__path__ = []
    for key, value in table.items():
        if not (key.startswith("__") and key.endswith("__")) or key == "__version__":
            setattr(mod, key, value)
    mod.__getattr__ = _lacks_attribute(jax_name, jax_name)
    return mod


def _patch_errors(module, jax_name):
    """Gives an xform module an attribute error that names the jax name (undone on uninstall)."""
    previous = module.__dict__.get("__getattr__")
    if getattr(previous, "xform_compat", False):
        return
    module.__getattr__ = _lacks_attribute(jax_name, module.__name__, previous)
    _State.patched.append((module, previous))
    for attr, value in REPLACED.get(module.__name__, {}).items():
        _State.replaced.append((module, attr, getattr(module, attr)))
        setattr(module, attr, value)
    prefix = module.__name__ + "."
    for attr, value in list(vars(module).items()):  # submodules reached as attributes
        if isinstance(value, types.ModuleType) and value.__name__ == prefix + attr:
            _patch_errors(value, f"{jax_name}.{attr}")


def _missing(jax_name):
    return ModuleNotFoundError(
        f"No module named {jax_name!r}: {jax_name} is not available, {_LACKS}", name=jax_name
    )


# ``jax.<name>`` that are xform modules but not modules of JAX (``jax.config`` is an object).
_NOT_MODULES = frozenset({"jax.config"})


def _stand_in_module(jax_name):
    """A module of JAX's that xform lacks imports as one whose names are stand-ins (see
    ``_standins``); a module JAX lacks too is ``ModuleNotFoundError``, as in JAX."""
    if _standins.jax_module_file(jax_name) is None:
        raise _missing(jax_name)
    return _table_module(jax_name, {})


def _resolve(jax_name):
    """The module that ``jax_name`` stands for under compat mode."""
    if jax_name == "jax":
        return _make_jax_module()
    if jax_name in _TABLES:
        return _table_module(jax_name, _TABLES[jax_name])
    if jax_name.startswith("jax._src.") or jax_name in _NOT_MODULES:
        return _stand_in_module(jax_name)
    target = ALIASES.get(jax_name, "xform" + jax_name[len("jax") :])
    try:
        module = importlib.import_module(target)
    except ModuleNotFoundError as e:
        if not (target == e.name or target.startswith(f"{e.name}.")):
            raise  # a module that the xform module itself imports is missing
        if jax_name in _jax_src.FALLBACKS:
            return _table_module(jax_name, _jax_src.FALLBACKS[jax_name])
        return _stand_in_module(jax_name)
    if module.__name__.startswith("xform."):
        _patch_errors(module, jax_name)
    return module


def _real_spec(jax_name):
    """The spec of real JAX's module ``jax_name``, for an import by the runtime itself."""
    module = _State.real_modules.get(jax_name)
    if module is not None:
        return importlib.machinery.ModuleSpec(
            jax_name, _AliasLoader(module), is_package=hasattr(module, "__path__")
        )
    parent = _State.real_modules.get(jax_name.rpartition(".")[0])
    return importlib.machinery.PathFinder.find_spec(jax_name, getattr(parent, "__path__", None))


def _real_attribute(jax_name, attr):
    """``attr`` of real JAX's module ``jax_name`` (a submodule imported if need be)."""
    module = _State.real_modules.get(jax_name) or sys.modules.get(jax_name)
    try:
        return getattr(module, attr)
    except AttributeError:
        return importlib.import_module(f"{jax_name}.{attr}")  # (found as the runtime's import)


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, module):
        self.module = module

    def create_module(self, spec):
        return None  # a placeholder: exec_module replaces it in sys.modules

    def exec_module(self, module):
        sys.modules[module.__name__] = self.module


class JaxFinder(importlib.abc.MetaPathFinder):
    """Finds ``jax`` and ``jax.*`` as xform's modules (see the module docstring)."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "jax" and not fullname.startswith("jax."):
            return None
        if _standins.from_runtime():
            return _real_spec(fullname)
        module = _resolve(fullname)
        return importlib.machinery.ModuleSpec(
            fullname, _AliasLoader(module), is_package=hasattr(module, "__path__")
        )


def install():
    """Makes ``import jax`` (and every ``jax.*`` module) resolve to xform in this process.

    Call it before importing the libraries that should run on xform; modules that already
    imported real JAX keep it. Idempotent: a second call changes nothing.
    """
    if _State.finder is not None:
        return
    # What xform loads lazily loads now, while ``jax`` is still real JAX: xform's modules
    # import JAX's (xform/tree.py reads jax.tree), and xform.errors and xform.dtypes make
    # their JAX-based classes from jax.errors and jax.dtypes, names that compat mode gives
    # to xform's own modules once installed.
    for name in dir(xform):
        getattr(xform, name)
    for module in (errors, dtypes):
        for name in dir(module):
            getattr(module, name)
    for name in [n for n in sys.modules if n == "jax" or n.startswith("jax.")]:
        _State.real_modules[name] = sys.modules.pop(name)
    _standins.real_modules.update(_State.real_modules)  # what JAX's modules define
    # JAX does not warn when a function is traced again; JAX code (and the libraries' own
    # tests, which turn warnings into errors) retraces on purpose.
    _State.warn_recompiles = config.read("xform_warn_recompiles")
    config.update("xform_warn_recompiles", False)
    # Under compat mode an xform array is a jax.Array: the protocol that turns it into one
    # (returning jaxlib's array) would hand libraries a foreign array.
    protocol = xform.Array.__dict__.get("__jax_array__")
    if protocol is not None:
        _State.replaced.append((xform.Array, "__jax_array__", protocol))
        del xform.Array.__jax_array__
    for cls, attr, value in _jax_src.ADDED_ATTRIBUTES:
        if attr not in vars(cls):
            setattr(cls, attr, value)
            _State.added.append((cls, attr))
    _State.finder = JaxFinder()
    sys.meta_path.insert(0, _State.finder)


def uninstall():
    """Undoes ``install()``: later ``import jax`` gets real JAX again. Modules imported under
    compat mode keep the xform modules they bound. Idempotent."""
    if _State.finder is None:
        return
    sys.meta_path.remove(_State.finder)
    _State.finder = None
    config.update("xform_warn_recompiles", _State.warn_recompiles)
    for name in [n for n in sys.modules if n == "jax" or n.startswith("jax.")]:
        del sys.modules[name]
    sys.modules.update(_State.real_modules)
    _State.real_modules = {}
    for module, previous in reversed(_State.patched):
        if previous is None:
            del module.__getattr__
        else:
            module.__getattr__ = previous
    _State.patched = []
    for module, attr, previous in reversed(_State.replaced):
        setattr(module, attr, previous)
    _State.replaced = []
    for cls, attr in _State.added:
        delattr(cls, attr)
    _State.added = []


def is_installed():
    """Whether ``install()`` is in effect."""
    return _State.finder is not None
