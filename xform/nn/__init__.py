"""``xform.nn``: activations, softmax and friends, as ``jax.nn``.

Everything is a composition of ``xform.numpy``/``xform.lax``, so it works under ``jit``,
``vmap`` and ``grad``. Where JAX makes a gradient stable (the max subtracted under
``stop_gradient`` in ``softmax``/``log_softmax``/``logsumexp``, ``softplus`` through
``logaddexp``, the derivative of ``relu`` at 0) this does the same.
"""

import operator
import warnings

import numpy as np

from xform import dtypes, lax
from xform import numpy as xnp
from xform.custom_derivatives import custom_jvp
from xform.errors import ConcretizationTypeError
from xform.nn import initializers  # noqa: F401
from xform.nn._attention import dot_product_attention
from xform.nn._scaled import get_scaled_dot_general_config, scaled_dot_general, scaled_matmul
from xform.numpy._promote import aval_of, check_arraylike, promote_args_inexact
from xform.numpy._reductions import canonicalize_axis
from xform.numpy._staged import staged
from xform.scipy.special import logsumexp
from xform.scipy.special._basic import log_softmax_over, softmax_over

__all__ = [
    "relu",
    "relu6",
    "leaky_relu",
    "elu",
    "celu",
    "selu",
    "gelu",
    "silu",
    "swish",
    "sigmoid",
    "hard_sigmoid",
    "hard_silu",
    "hard_swish",
    "hard_tanh",
    "soft_sign",
    "softplus",
    "log_sigmoid",
    "mish",
    "identity",
    "softmax",
    "log_softmax",
    "logsumexp",
    "one_hot",
    "standardize",
    "initializers",
    "tanh",
    "squareplus",
    "sparse_plus",
    "sparse_sigmoid",
    "glu",
    "log1mexp",
    "logmeanexp",
    "dot_product_attention",
    "scaled_matmul",
    "scaled_dot_general",
    "get_scaled_dot_general_config",
]


# --------------------------------------------------------------------------- activations


@staged("identity")
def identity(x):
    """``x`` unchanged (as an array)."""
    check_arraylike("identity", x)
    return xnp.asarray(x)


@custom_jvp
@staged("relu")
def relu(x):
    """``max(x, 0)``, with derivative 0 at ``x == 0``.

    Example:
      >>> relu(xform.numpy.array([-1.0, 0.0, 2.0]))  # [0., 0., 2.]
    """
    return xnp.maximum(x, 0)


relu.defjvps(lambda g, ans, x: xnp.where(x > 0, g, xnp.zeros_like(g)))


@custom_jvp
@staged("relu6")
def relu6(x):
    """``min(max(x, 0), 6)``, with derivative 0 at 0 and at 6."""
    return xnp.minimum(xnp.maximum(x, 0), 6.0)


relu6.defjvps(lambda g, ans, x: xnp.where((x > 0) & (x < 6), g, xnp.zeros_like(g)))


@staged("leaky_relu")
def leaky_relu(x, negative_slope=1e-2):
    """``x`` where ``x >= 0``, ``negative_slope * x`` elsewhere."""
    check_arraylike("leaky_relu", x)
    x = xnp.asarray(x)
    return xnp.where(x >= 0, x, negative_slope * x)


@staged("elu")
def elu(x, alpha=1.0):
    """``x`` where ``x > 0``, ``alpha * (exp(x) - 1)`` elsewhere."""
    check_arraylike("elu", x)
    x = xnp.asarray(x)
    positive = x > 0
    # The inner where keeps expm1 away from large x, so its derivative stays finite.
    return xnp.where(positive, x, alpha * xnp.expm1(xnp.where(positive, 0.0, x)))


@staged("celu")
def celu(x, alpha=1.0):
    """``max(x, 0) + alpha * expm1(min(x, 0) / alpha)``."""
    return xnp.maximum(x, 0.0) + alpha * xnp.expm1(xnp.minimum(x, 0.0) / alpha)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


@staged("selu")
def selu(x):
    """``scale * elu(x, alpha)`` with the self-normalising constants."""
    return _SELU_SCALE * elu(x, _SELU_ALPHA)


def gelu(x, approximate=True):
    """The Gaussian error linear unit ``x * Phi(x)``; ``approximate`` uses the tanh form.

    Args:
      x: input array.
      approximate: ``True`` for ``x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``, ``False``
        for the exact ``x/2 erfc(-x/sqrt(2))``.
    """
    (x,) = promote_args_inexact("gelu", x)
    dtype = aval_of(x).dtype
    if approximate:
        sqrt_2_over_pi = xnp.asarray(np.sqrt(2 / np.pi).astype(dtype))
        cdf = 0.5 * (1.0 + xnp.tanh(sqrt_2_over_pi * (x + 0.044715 * (x**3))))
        return x * cdf
    sqrt_half = xnp.asarray(np.sqrt(0.5).astype(dtype))
    return xnp.asarray(0.5 * x * lax.erfc(-x * sqrt_half), dtype=dtype)


def sigmoid(x):
    """The logistic function ``1 / (1 + exp(-x))``."""
    (x,) = promote_args_inexact("sigmoid", x)
    return lax.logistic(x)


@staged("silu")
def silu(x):
    """``x * sigmoid(x)`` (also called ``swish``)."""
    check_arraylike("silu", x)
    x = xnp.asarray(x)
    return x * sigmoid(x)


swish = silu


@staged("hard_sigmoid")
def hard_sigmoid(x):
    """``relu6(x + 3) / 6``."""
    return relu6(x + 3.0) / 6.0


@staged("hard_silu")
def hard_silu(x):
    """``x * hard_sigmoid(x)`` (also called ``hard_swish``)."""
    check_arraylike("hard_silu", x)
    x = xnp.asarray(x)
    return x * hard_sigmoid(x)


hard_swish = hard_silu


@staged("hard_tanh")
def hard_tanh(x):
    """``x`` clipped to ``[-1, 1]``."""
    check_arraylike("hard_tanh", x)
    x = xnp.asarray(x)
    return xnp.where(x > 1, 1, xnp.where(x < -1, -1, x))


@staged("soft_sign")
def soft_sign(x):
    """``x / (|x| + 1)``."""
    check_arraylike("soft_sign", x)
    x = xnp.asarray(x)
    return x / (xnp.abs(x) + 1)


@staged("softplus")
def softplus(x):
    """``log(1 + exp(x))``, through ``logaddexp`` so large inputs do not overflow; its
    derivative is ``sigmoid(x)`` (0.5 at 0) and is finite at any ``x``."""
    (x,) = promote_args_inexact("softplus", x)
    return _softplus(x)


# The rule is JAX's logaddexp rule, exp(x - softplus(x)), written as sigmoid(x): a plain
# derivative of logaddexp's max/abs formula is 0 at x == 0 instead of 0.5.
@custom_jvp
def _softplus(x):
    return xnp.logaddexp(x, 0)


_softplus.defjvps(lambda g, ans, x: g * lax.logistic(x))


@staged("log_sigmoid")
def log_sigmoid(x):
    """``log(sigmoid(x)) = -softplus(-x)``; finite with a finite gradient at any ``x``."""
    check_arraylike("log_sigmoid", x)
    return -softplus(-xnp.asarray(x))


@staged("mish")
def mish(x):
    """``x * tanh(softplus(x))``."""
    check_arraylike("mish", x)
    x = xnp.asarray(x)
    return x * xnp.tanh(softplus(x))


tanh = xnp.tanh


@staged("squareplus")
def squareplus(x, b=4):
    """``(x + sqrt(x^2 + b)) / 2``, a smooth ReLU with smoothness ``b``."""
    x, b = promote_args_inexact("squareplus", x, b)
    return (x + xnp.sqrt(xnp.square(x) + b)) / 2


@staged("sparse_plus")
def sparse_plus(x):
    """0 for ``x <= -1``, ``(x + 1)^2 / 4`` on ``(-1, 1)``, ``x`` for ``x >= 1``."""
    check_arraylike("sparse_plus", x)
    x = xnp.asarray(x)
    return xnp.where(x <= -1.0, 0.0, xnp.where(x >= 1.0, x, (x + 1.0) ** 2 / 4))


@staged("sparse_sigmoid")
def sparse_sigmoid(x):
    """``clip((x + 1) / 2, 0, 1)``, the derivative of ``sparse_plus``."""
    check_arraylike("sparse_sigmoid", x)
    return 0.5 * xnp.clip(xnp.asarray(x) + 1.0, 0.0, 2.0)


@staged("glu", static_argnames=("axis",))
def glu(x, axis=-1):
    """The gated linear unit: the first half of ``x`` along ``axis`` times the sigmoid of the
    second half.

    Args:
      x: input array; its ``axis`` dimension must have an even size.
      axis: the axis that is split in two.
    """
    check_arraylike("glu", x)
    x = xnp.asarray(x)
    shape = aval_of(x).shape
    size = shape[canonicalize_axis(axis, len(shape), "glu")]
    if size % 2 != 0:  # AssertionError, as JAX's
        raise AssertionError(
            f"glu: the size of axis {axis} must be divisible by 2, got shape {shape}"
        )
    x1, x2 = xnp.split(x, 2, axis)
    return x1 * sigmoid(x2)


@custom_jvp
@staged("log1mexp")
def log1mexp(x):
    """``log(1 - exp(-x))`` computed stably (through ``expm1`` below ``log 2``); undefined for
    ``x < 0``."""
    (x,) = promote_args_inexact("log1mexp", x)
    return xnp.where(x < np.log(2.0), xnp.log(-xnp.expm1(-x)), xnp.log1p(-xnp.exp(-x)))


log1mexp.defjvps(lambda g, ans, x: g / xnp.expm1(x))


@staged("logmeanexp", static_argnames=("axis", "keepdims"))
def logmeanexp(x, axis=None, where=None, keepdims=False):
    """``log(mean(exp(x)))`` over ``axis``: ``logsumexp(x) - log(n)``.

    Args:
      x: input array.
      axis: an int, a tuple of ints or ``None`` (all axes).
      where: elements to include.
      keepdims: keep the reduced axes with size 1.
    """
    check_arraylike("logmeanexp", x)
    lse = logsumexp(x, axis=axis, where=where, keepdims=keepdims)
    ones = xnp.ones(aval_of(xnp.asarray(x)).shape, aval_of(lse).dtype)
    if where is not None:
        ones = xnp.where(where, ones, 0)
    count = xnp.sum(ones, axis=axis, keepdims=keepdims)
    return lse - xnp.log(count)


# --------------------------------------------------------------------------- softmax


def softmax(x, axis=-1, where=None):
    """``exp(x) / sum(exp(x), axis)``, with the maximum subtracted under ``stop_gradient`` so
    large logits neither overflow nor spoil the gradient.

    Args:
      x: input array.
      axis: an int, a tuple of ints or ``None`` (all axes): where the output sums to 1.
      where: elements to include; the output is 0 elsewhere.

    Example:
      >>> softmax(xform.numpy.array([1000.0, 1000.0]))  # [0.5, 0.5]
    """
    return softmax_over(x, axis, where)


@staged("log_softmax", static_argnames=("axis",))
def log_softmax(x, axis=-1, where=None):
    """``x - logsumexp(x, axis)``, stable for large logits (see ``softmax``).

    Args:
      x: input array.
      axis: an int, a tuple of ints or ``None`` (all axes).
      where: elements to include; the output is ``-inf`` elsewhere.
    """
    return log_softmax_over(x, axis, where)


# --------------------------------------------------------------------------- one_hot, standardize


def one_hot(x, num_classes, *, dtype=None, axis=-1):
    """One-hot encode the integer indices ``x``; indices outside ``[0, num_classes)`` give
    all zeros.

    Args:
      x: an array of indices.
      num_classes: the number of classes, a concrete Python int.
      dtype: the output dtype (default: the default float dtype).
      axis: where the new class axis goes in the output.

    Example:
      >>> one_hot(xform.numpy.array([0, 2]), 3)  # [[1, 0, 0], [0, 0, 1]]
    """
    try:
        num_classes = operator.index(num_classes)
    except ConcretizationTypeError as e:
        raise ConcretizationTypeError(
            f"one_hot: argument `num_classes` must be concrete (a "
            f"Python int, or static under jit): {e}"
        ) from e
    except TypeError:
        raise TypeError(
            f"one_hot: argument `num_classes` must be an integer, got {num_classes!r}"
        ) from None
    if num_classes < 0:  # TypeError, as JAX's (a negative shape)
        raise TypeError(f"one_hot: argument `num_classes` must be non-negative, got {num_classes}")
    x = xnp.asarray(x)
    aval = aval_of(x)
    if aval.dtype == dtypes.bool_ or dtypes.is_complex(aval.dtype):
        raise TypeError(f"one_hot: argument `x` must hold integer indices, got dtype {aval.dtype}")
    if not dtypes.is_int(aval.dtype):
        warnings.warn(
            f"one_hot input should be integer-typed; got dtype={aval.dtype}",
            DeprecationWarning,
            stacklevel=2,
        )
    dtype = dtypes.default_float() if dtype is None else dtype
    if not isinstance(axis, (int, np.integer)):
        raise TypeError(
            f"one_hot: argument `axis` must be an int, got {axis!r} (named axes are not supported)"
        )
    return _one_hot(x, num_classes, dtype=dtype, axis=axis)


@staged("_one_hot", static_argnames=("num_classes", "dtype", "axis"))
def _one_hot(x, num_classes, *, dtype, axis):
    aval = aval_of(x)
    out_axis = canonicalize_axis(axis, aval.ndim + 1, "one_hot")
    lhs = xnp.expand_dims(x, out_axis)
    rhs_shape = [1] * aval.ndim
    rhs_shape.insert(out_axis, num_classes)
    rhs = lax.broadcasted_iota(aval.dtype, tuple(rhs_shape), out_axis)
    return (lhs == rhs).astype(dtype)


@staged("standardize", static_argnames=("axis", "algorithm"))
def standardize(
    x, axis=-1, mean=None, variance=None, epsilon=1e-5, where=None, *, algorithm="fast"
):
    """``(x - mean) / sqrt(variance + epsilon)`` over ``axis``.

    Args:
      x: input array.
      axis: an int, a tuple of ints or ``None`` (all axes).
      mean, variance: use these instead of the statistics of ``x``.
      epsilon: added to the variance.
      where: elements used for the statistics.
      algorithm: ``"fast"`` (``mean(x^2) - mean(x)^2``, clipped at 0) or ``"stable"``
        (two-pass ``mean((x - mean)^2)``).
    """
    check_arraylike("standardize", x)
    for name, value in (("mean", mean), ("variance", variance), ("where", where)):
        if value is not None:
            check_arraylike(f"standardize argument `{name}`", value)
    if mean is None:
        mean = xnp.mean(x, axis, keepdims=True, where=where)
    if variance is None:
        if algorithm == "stable":
            variance = xnp.mean(xnp.square(xnp.subtract(x, mean)), axis, keepdims=True, where=where)
        elif algorithm == "fast":
            variance = xnp.mean(xnp.square(x), axis, keepdims=True, where=where) - xnp.square(mean)
            variance = xnp.clip(variance, 0)
        else:
            raise ValueError(
                f"standardize: unknown algorithm {algorithm!r}; expected 'fast' or 'stable'"
            )
    return xnp.subtract(x, mean) * lax.rsqrt(variance + epsilon)
