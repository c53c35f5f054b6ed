"""The exceptions xform raises at its users, each with a message that says what to do.

The tracer errors subclass their namesakes in ``jax.errors``, so code written for JAX
(``except jax.errors.ConcretizationTypeError``) catches xform's too. JAX's constructors take
a tracer and build the message themselves; xform's take the message, as any exception does.

JAX's classes live in ``jax``, whose import loads jaxlib, and the IR (``xform.core``) must
import without it: so the classes with a JAX base are made the first time they are read
(this module's ``__getattr__``), which is when the first such error is raised or caught.
``JaxRuntimeError`` is jaxlib's own class (the runtime under xform raises it), not a subclass.
"""

import importlib


class XformError(Exception):
    """Base class of xform's own error types."""

    def __init__(self, *args):
        # Skips the constructors of JAX's error classes: they take a tracer, not a message.
        Exception.__init__(self, *args)


class IncompatibleShapesError(ValueError, TypeError, XformError):
    """Operands whose shapes do not broadcast. jax.numpy raises ``ValueError`` from
    ``broadcast_arrays``/``where`` and ``TypeError`` from its ufuncs; this is both."""


class MissingRuleError(NotImplementedError, XformError):
    """A primitive has no rule for the transformation being applied to it."""


class ShardingTypeError(XformError):
    """Operands whose types carry shardings (explicit sharding mode) that an operation cannot
    combine, as JAX's ``ShardingTypeError``: ``reshard`` one of them first."""


# name -> (xform base, docstring); each class also subclasses ``jax.errors.<name>``.
_WITH_JAX_BASE = {
    "JAXTypeError": (
        "XformError",
        "A ``TypeError`` specific to xform (a subclass of ``jax.errors.JAXTypeError``).",
    ),
    "JAXIndexError": (
        "XformError",
        "An ``IndexError`` specific to xform (a subclass of ``jax.errors.JAXIndexError``).",
    ),
    "InconclusiveDimensionOperation": (
        "XformError",
        "A comparison or arithmetic on symbolic dimensions (``xform.export``'s shape\n"
        "polymorphism) whose result the dimensions' constraints do not determine.",
    ),
    "KeyReuseError": (
        "JAXTypeError",
        "A PRNG key used twice where key-reuse checking is on (a ``JAXTypeError``).",
    ),
    "ConcretizationTypeError": (
        "XformError",
        "A traced value was used where Python needs a concrete one (``if``, ``int()``, a\nshape).",
    ),
    "TracerBoolConversionError": (
        "ConcretizationTypeError",
        "``bool()`` of a traced value, usually a Python ``if`` or ``while`` on it.",
    ),
    "TracerIntegerConversionError": (
        "ConcretizationTypeError",
        "``__index__`` of a traced value (a list index, ``range``, a shape).\n\n"
        "Also a ``ConcretizationTypeError``, which JAX's is not: xform's own code catches\n"
        "both kinds as one.",
    ),
    "TracerArrayConversionError": (
        "ConcretizationTypeError",
        "``np.asarray`` (or any NumPy function) applied to a traced value.",
    ),
    "NonConcreteBooleanIndexError": (
        "XformError",
        "A boolean mask index was traced: the result's shape would depend on its values.",
    ),
    "UnexpectedTracerError": (
        "XformError",
        "A tracer escaped the transformation that created it and was used afterwards.",
    ),
    "JaxprTypeError": ("XformError", "The jaxpr typechecker found an ill-typed equation."),
}


def __getattr__(name):
    if name != "JaxRuntimeError" and name not in _WITH_JAX_BASE:  # (__path__, ...: no JAX)
        raise AttributeError(f"module 'xform.errors' has no attribute '{name}'")
    jax_errors = importlib.import_module("jax.errors")
    if name == "JaxRuntimeError":
        cls = jax_errors.JaxRuntimeError
    else:
        base, doc = _WITH_JAX_BASE[name]
        bases = (globals()[base] if base in globals() else __getattr__(base),)
        cls = type(name, (*bases, getattr(jax_errors, name)), {"__doc__": doc})
        cls.__module__ = __name__
    globals()[name] = cls
    return cls


def __dir__():
    return sorted([*globals(), *_WITH_JAX_BASE, "JaxRuntimeError"])
