"""The exceptions xform raises at its users, each with a message that says what to do.

The tracer errors subclass their namesakes in ``jax.errors``, so code written for JAX
(``except jax.errors.ConcretizationTypeError``) catches xform's too. JAX's constructors take
a tracer and build the message themselves; xform's take the message, as any exception does.
"""

import jax.errors as _jax_errors


class XformError(Exception):
    """Base class of xform's own error types."""

    def __init__(self, *args):
        # Skips the constructors of JAX's error classes: they take a tracer, not a message.
        Exception.__init__(self, *args)


# JaxRuntimeError is the error jaxlib's runtime (PJRT: compiling, running, transferring)
# raises; xform runs on that runtime, so it is the same class, not a subclass.
JaxRuntimeError = _jax_errors.JaxRuntimeError


class JAXTypeError(XformError, _jax_errors.JAXTypeError):
    """A ``TypeError`` specific to xform (a subclass of ``jax.errors.JAXTypeError``)."""


class JAXIndexError(XformError, _jax_errors.JAXIndexError):
    """An ``IndexError`` specific to xform (a subclass of ``jax.errors.JAXIndexError``)."""


class InconclusiveDimensionOperation(XformError, _jax_errors.InconclusiveDimensionOperation):
    """A comparison or arithmetic on symbolic dimensions whose result is not determined.

    xform has no symbolic shapes, so it never raises this; it exists so that code written for
    JAX (``except jax.errors.InconclusiveDimensionOperation``) also reads with xform."""


class KeyReuseError(JAXTypeError, _jax_errors.KeyReuseError):
    """A PRNG key used twice where key-reuse checking is on (a ``JAXTypeError``)."""


class ConcretizationTypeError(XformError, _jax_errors.ConcretizationTypeError):
    """A traced value was used where Python needs a concrete one (``if``, ``int()``, a shape)."""


class TracerBoolConversionError(ConcretizationTypeError, _jax_errors.TracerBoolConversionError):
    """``bool()`` of a traced value, usually a Python ``if`` or ``while`` on it."""


class TracerIntegerConversionError(
    ConcretizationTypeError, _jax_errors.TracerIntegerConversionError
):
    """``__index__`` of a traced value (a list index, ``range``, a shape).

    Also a ``ConcretizationTypeError``, which JAX's is not: xform's own code catches both
    kinds as one."""


class TracerArrayConversionError(ConcretizationTypeError, _jax_errors.TracerArrayConversionError):
    """``np.asarray`` (or any NumPy function) applied to a traced value."""


class NonConcreteBooleanIndexError(XformError, _jax_errors.NonConcreteBooleanIndexError):
    """A boolean mask index was traced: the result's shape would depend on its values."""


class IncompatibleShapesError(ValueError, TypeError, XformError):
    """Operands whose shapes do not broadcast. jax.numpy raises ``ValueError`` from
    ``broadcast_arrays``/``where`` and ``TypeError`` from its ufuncs; this is both."""


class UnexpectedTracerError(XformError, _jax_errors.UnexpectedTracerError):
    """A tracer escaped the transformation that created it and was used afterwards."""


class MissingRuleError(NotImplementedError, XformError):
    """A primitive has no rule for the transformation being applied to it."""


class JaxprTypeError(XformError, _jax_errors.JaxprTypeError):
    """The jaxpr typechecker found an ill-typed equation."""


class ShardingTypeError(XformError):
    """Operands whose types carry shardings (explicit sharding mode) that an operation cannot
    combine, as JAX's ``ShardingTypeError``: ``reshard`` one of them first."""
