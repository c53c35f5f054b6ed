"""The exceptions xform raises at its users, each with a message that says what to do."""


class XformError(Exception):
    """Base class of xform's own error types."""


class ConcretizationTypeError(TypeError, XformError):
    """A traced value was used where Python needs a concrete one (``if``, ``int()``, a shape)."""


class TracerBoolConversionError(ConcretizationTypeError):
    """``bool()`` of a traced value, usually a Python ``if`` or ``while`` on it."""


class TracerIntegerConversionError(ConcretizationTypeError):
    """``int()`` or ``__index__`` of a traced value."""


class NonConcreteBooleanIndexError(IndexError, XformError):
    """A boolean mask index was traced: the result's shape would depend on its values."""


class IncompatibleShapesError(ValueError, TypeError, XformError):
    """Operands whose shapes do not broadcast. jax.numpy raises ``ValueError`` from
    ``broadcast_arrays``/``where`` and ``TypeError`` from its ufuncs; this is both."""


class UnexpectedTracerError(XformError):
    """A tracer escaped the transformation that created it and was used afterwards."""


class MissingRuleError(NotImplementedError, XformError):
    """A primitive has no rule for the transformation being applied to it."""


class JaxprTypeError(TypeError, XformError):
    """The jaxpr typechecker found an ill-typed equation."""
