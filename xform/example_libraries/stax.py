"""``xform.example_libraries.stax``: a small neural-network library, as JAX ships with its
examples.

A layer is an ``(init_fun, apply_fun)`` pair:

- ``init_fun(rng, input_shape)`` returns ``(output_shape, params)``;
- ``apply_fun(params, inputs, **kwargs)`` applies the layer (``rng=`` is the key layers like
  ``Dropout`` need).

Layer constructors are CamelCase (``Dense``, ``Conv``); parameterless layers (``Relu``,
``Flatten``) are layers already. ``serial``, ``parallel``, ``FanOut``/``FanInSum``/
``FanInConcat`` and ``shape_dependent`` combine them. Parameters are drawn from
``xform.random`` through ``xform.nn.initializers`` and equal JAX's for the same key.

Example:
  >>> init_fun, predict = stax.serial(stax.Dense(32), stax.Relu, stax.Dense(10),
  ...                                 stax.LogSoftmax)
  >>> out_shape, params = init_fun(xform.random.PRNGKey(0), (-1, 784))
  >>> logits = predict(params, images)
"""

import functools
import math

from xform import lax, random
from xform import numpy as jnp
from xform.nn import (
    elu,
    gelu,
    leaky_relu,
    log_softmax,
    relu,
    selu,
    sigmoid,
    softmax,
    softplus,
    standardize,
)
from xform.nn.initializers import glorot_normal, normal, ones, zeros

__all__ = [
    "Dense",
    "GeneralConv",
    "Conv",
    "GeneralConvTranspose",
    "Conv1DTranspose",
    "ConvTranspose",
    "BatchNorm",
    "elementwise",
    "Tanh",
    "Relu",
    "Exp",
    "LogSoftmax",
    "Softmax",
    "Softplus",
    "Sigmoid",
    "Elu",
    "LeakyRelu",
    "Selu",
    "Gelu",
    "MaxPool",
    "SumPool",
    "AvgPool",
    "Flatten",
    "Identity",
    "FanOut",
    "FanInSum",
    "FanInConcat",
    "Dropout",
    "serial",
    "parallel",
    "shape_dependent",
    "glorot",
    "randn",
    "logsoftmax",
    # re-exported, as JAX's module does
    "relu",
    "log_softmax",
    "softmax",
    "softplus",
    "sigmoid",
    "elu",
    "leaky_relu",
    "selu",
    "gelu",
    "standardize",
    "glorot_normal",
    "normal",
    "ones",
    "zeros",
]

# Older names JAX keeps.
glorot = glorot_normal
randn = normal
logsoftmax = log_softmax

# Default initializers (shared, as the defaults of JAX's signatures are).
_glorot_normal = glorot_normal()
_normal = normal()
_normal_1e_6 = normal(1e-6)


def _parameterless(apply):
    """A layer with no parameters whose output shape is its input shape."""
    return (lambda rng, input_shape: (input_shape, ())), apply


# --------------------------------------------------------------------------- dense and conv


def Dense(out_dim, W_init=_glorot_normal, b_init=_normal):
    """A fully connected layer ``inputs @ W + b`` with ``out_dim`` outputs."""

    def init_fun(rng, input_shape):
        k1, k2 = random.split(rng)
        params = W_init(k1, (input_shape[-1], out_dim)), b_init(k2, (out_dim,))
        return input_shape[:-1] + (out_dim,), params

    def apply_fun(params, inputs, **kwargs):
        W, b = params
        return jnp.dot(inputs, W) + b

    return init_fun, apply_fun


def _kernel_shape(dimension_numbers, out_chan, filter_shape, input_shape):
    # The kernel's dims in rhs_spec order: 'O' is out_chan, 'I' the input's channel count,
    # spatial dims come from filter_shape in order.
    lhs_spec, rhs_spec, _ = dimension_numbers
    spatial = iter(filter_shape)
    return [
        out_chan if c == "O" else input_shape[lhs_spec.index("C")] if c == "I" else next(spatial)
        for c in rhs_spec
    ]


def _conv_layer(name, output_shape_of, apply_conv):
    """A conv-like layer constructor; ``output_shape_of`` and ``apply_conv`` differ between
    plain and transposed convolutions."""

    def constructor(
        dimension_numbers,
        out_chan,
        filter_shape,
        strides=None,
        padding="VALID",
        W_init=None,
        b_init=_normal_1e_6,
    ):
        _, rhs_spec, out_spec = dimension_numbers
        strides = strides or (1,) * len(filter_shape)
        W_init = W_init or glorot_normal(rhs_spec.index("I"), rhs_spec.index("O"))

        def init_fun(rng, input_shape):
            kernel_shape = _kernel_shape(dimension_numbers, out_chan, filter_shape, input_shape)
            output_shape = output_shape_of(
                input_shape, kernel_shape, strides, padding, dimension_numbers
            )
            bias_shape = [out_chan if c == "C" else 1 for c in out_spec]
            k1, k2 = random.split(rng)
            return output_shape, (W_init(k1, kernel_shape), b_init(k2, bias_shape))

        def apply_fun(params, inputs, **kwargs):
            W, b = params
            return apply_conv(inputs, W, strides, padding, len(filter_shape), dimension_numbers) + b

        return init_fun, apply_fun

    constructor.__name__ = constructor.__qualname__ = name
    return constructor


def _conv(inputs, W, strides, padding, ndim, dimension_numbers):
    one = (1,) * ndim
    return lax.conv_general_dilated(
        inputs, W, strides, padding, one, one, dimension_numbers=dimension_numbers
    )


def _conv_transpose(inputs, W, strides, padding, ndim, dimension_numbers):
    return lax.conv_transpose(inputs, W, strides, padding, dimension_numbers=dimension_numbers)


GeneralConv = _conv_layer("GeneralConv", lax.conv_general_shape_tuple, _conv)
GeneralConv.__doc__ = """A convolution layer with the given ``(lhs, rhs, out)`` layout specs,
``out_chan`` output channels and spatial ``filter_shape``."""
Conv = functools.partial(GeneralConv, ("NHWC", "HWIO", "NHWC"))

GeneralConvTranspose = _conv_layer(
    "GeneralConvTranspose", lax.conv_transpose_shape_tuple, _conv_transpose
)
GeneralConvTranspose.__doc__ = """A transposed-convolution layer with the given
``(lhs, rhs, out)`` layout specs, ``out_chan`` output channels and spatial ``filter_shape``."""
Conv1DTranspose = functools.partial(GeneralConvTranspose, ("NHC", "HIO", "NHC"))
ConvTranspose = functools.partial(GeneralConvTranspose, ("NHWC", "HWIO", "NHWC"))


# --------------------------------------------------------------------------- normalization


def BatchNorm(
    axis=(0, 1, 2), epsilon=1e-5, center=True, scale=True, beta_init=zeros, gamma_init=ones
):
    """Batch normalization over ``axis``, then ``gamma * z + beta`` (each optional)."""
    axis = (axis,) if jnp.isscalar(axis) else axis

    def init_fun(rng, input_shape):
        shape = tuple(d for i, d in enumerate(input_shape) if i not in axis)
        k1, k2 = random.split(rng)
        beta = beta_init(k1, shape) if center else ()
        gamma = gamma_init(k2, shape) if scale else ()
        return input_shape, (beta, gamma)

    def apply_fun(params, x, **kwargs):
        beta, gamma = params
        # Index that puts back the normalized axes as size 1.
        ed = tuple(None if i in axis else slice(None) for i in range(jnp.ndim(x)))
        z = standardize(x, axis, epsilon=epsilon)
        if scale:
            z = gamma[ed] * z
        if center:
            z = z + beta[ed]
        return z

    return init_fun, apply_fun


# --------------------------------------------------------------------------- elementwise


def elementwise(fun, **fun_kwargs):
    """A parameterless layer applying ``fun(inputs, **fun_kwargs)``."""
    return _parameterless(lambda params, inputs, **kwargs: fun(inputs, **fun_kwargs))


Tanh = elementwise(jnp.tanh)
Relu = elementwise(relu)
Exp = elementwise(jnp.exp)
LogSoftmax = elementwise(log_softmax, axis=-1)
Softmax = elementwise(softmax, axis=-1)
Softplus = elementwise(softplus)
Sigmoid = elementwise(sigmoid)
Elu = elementwise(elu)
LeakyRelu = elementwise(leaky_relu)
Selu = elementwise(selu)
Gelu = elementwise(gelu)


# --------------------------------------------------------------------------- pooling


def _insert_ones(dims, axes):
    """``dims`` with a 1 inserted at each of ``axes`` (ascending)."""
    dims = tuple(dims)
    for i in sorted(axes):
        dims = dims[:i] + (1,) + dims[i:]
    return dims


def _pooling_layer(name, reducer, init_val, rescaler=None):
    def PoolingLayer(window_shape, strides=None, padding="VALID", spec=None):
        """A pooling layer over the spatial dims: ``window_shape`` and ``strides`` name only
        those; ``spec`` (e.g. ``'NHWC'``) places the batch and channel dims (default: first
        and last)."""
        strides = strides or (1,) * len(window_shape)
        rescale = rescaler(window_shape, strides, padding) if rescaler else None
        if spec is None:
            non_spatial_axes = 0, len(window_shape) + 1
        else:
            non_spatial_axes = spec.index("N"), spec.index("C")
        full_window = _insert_ones(window_shape, non_spatial_axes)
        full_strides = _insert_ones(strides, non_spatial_axes)

        def init_fun(rng, input_shape):
            pads = lax.padtype_to_pads(input_shape, full_window, full_strides, padding)
            ones_ = (1,) * len(full_window)
            out_shape = lax.reduce_window_shape_tuple(
                input_shape, full_window, full_strides, pads, ones_, ones_
            )
            return out_shape, ()

        def apply_fun(params, inputs, **kwargs):
            out = lax.reduce_window(inputs, init_val, reducer, full_window, full_strides, padding)
            return rescale(out, inputs, spec) if rescale else out

        return init_fun, apply_fun

    PoolingLayer.__name__ = PoolingLayer.__qualname__ = name
    return PoolingLayer


def _normalize_by_window_size(window_shape, strides, padding):
    # Divides by the number of in-bounds elements under each window (fewer at padded edges).
    def rescale(outputs, inputs, spec):
        if spec is None:
            non_spatial_axes = 0, inputs.ndim - 1
        else:
            non_spatial_axes = spec.index("N"), spec.index("C")
        spatial_shape = tuple(d for i, d in enumerate(inputs.shape) if i not in non_spatial_axes)
        one = jnp.ones(spatial_shape, dtype=inputs.dtype)
        window_sizes = lax.reduce_window(one, 0.0, lax.add, window_shape, strides, padding)
        for i in sorted(non_spatial_axes):
            window_sizes = jnp.expand_dims(window_sizes, i)
        return outputs / window_sizes

    return rescale


MaxPool = _pooling_layer("MaxPool", lax.max, -jnp.inf)
SumPool = _pooling_layer("SumPool", lax.add, 0.0)
AvgPool = _pooling_layer("AvgPool", lax.add, 0.0, _normalize_by_window_size)


# --------------------------------------------------------------------------- structural


def _flatten_init(rng, input_shape):
    return (input_shape[0], math.prod(input_shape[1:])), ()


def _flatten_apply(params, inputs, **kwargs):
    return jnp.reshape(inputs, (inputs.shape[0], -1))


Flatten = (_flatten_init, _flatten_apply)
"""A layer flattening all but the leading dimension."""

Identity = _parameterless(lambda params, inputs, **kwargs: inputs)
"""A layer returning its inputs."""


def FanOut(num):
    """A layer giving a list of ``num`` copies of its input (for ``parallel``)."""

    def init_fun(rng, input_shape):
        return [input_shape] * num, ()

    def apply_fun(params, inputs, **kwargs):
        return [inputs] * num

    return init_fun, apply_fun


def _fan_in_sum_init(rng, input_shape):
    return input_shape[0], ()


def _fan_in_sum_apply(params, inputs, **kwargs):
    return sum(inputs)


FanInSum = (_fan_in_sum_init, _fan_in_sum_apply)
"""A layer summing a sequence of inputs."""


def FanInConcat(axis=-1):
    """A layer concatenating a sequence of inputs along ``axis``."""

    def init_fun(rng, input_shape):
        ax = axis % len(input_shape[0])
        size = sum(shape[ax] for shape in input_shape)
        first = input_shape[0]
        return first[:ax] + (size,) + first[ax + 1 :], ()

    def apply_fun(params, inputs, **kwargs):
        return jnp.concatenate(inputs, axis)

    return init_fun, apply_fun


def Dropout(rate, mode="train"):
    """Dropout keeping each input with probability ``rate`` (scaled by ``1 / rate``) when
    ``mode == 'train'``; the identity otherwise. ``apply_fun`` needs ``rng=`` in train mode.

    Note ``rate`` is the keep probability, as in JAX's stax.
    """

    def init_fun(rng, input_shape):
        return input_shape, ()

    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.get("rng", None)
        if rng is None:
            raise ValueError(
                "Dropout: the layer's apply_fun needs a PRNG key: call it as "
                "apply_fun(params, inputs, rng=key) instead of apply_fun(params, inputs), "
                "with key e.g. from xform.random.PRNGKey."
            )
        if mode != "train":
            return inputs
        keep = random.bernoulli(rng, rate, inputs.shape)
        return jnp.where(keep, inputs / rate, 0)

    return init_fun, apply_fun


# --------------------------------------------------------------------------- combinators


def serial(*layers):
    """Compose ``layers`` in sequence.

    Args:
      *layers: ``(init_fun, apply_fun)`` pairs.

    Returns:
      One layer applying each of ``layers`` to the previous one's output; its params are a
      list with one entry per layer.
    """
    nlayers = len(layers)
    init_funs, apply_funs = zip(*layers, strict=True)

    def init_fun(rng, input_shape):
        params = []
        for init in init_funs:
            rng, layer_rng = random.split(rng)
            input_shape, param = init(layer_rng, input_shape)
            params.append(param)
        return input_shape, params

    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.pop("rng", None)
        rngs = random.split(rng, nlayers) if rng is not None else (None,) * nlayers
        for fun, param, layer_rng in zip(apply_funs, params, rngs, strict=False):
            inputs = fun(param, inputs, rng=layer_rng, **kwargs)
        return inputs

    return init_fun, apply_fun


def parallel(*layers):
    """Apply ``layers`` side by side, the k-th to the k-th of a sequence of inputs.

    Usually sits between ``FanOut`` and ``FanInSum``/``FanInConcat``.

    Args:
      *layers: ``(init_fun, apply_fun)`` pairs.

    Returns:
      One layer taking and returning sequences as long as ``layers``.
    """
    nlayers = len(layers)
    init_funs, apply_funs = zip(*layers, strict=True)

    def init_fun(rng, input_shape):
        rngs = random.split(rng, nlayers)
        # As JAX: a lazy pair of (output shapes, params) tuples.
        pairs = [
            init(r, shape) for init, r, shape in zip(init_funs, rngs, input_shape, strict=False)
        ]
        return zip(*pairs, strict=True)

    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.pop("rng", None)
        rngs = random.split(rng, nlayers) if rng is not None else (None,) * nlayers
        return [
            f(p, x, rng=r, **kwargs)
            for f, p, x, r in zip(apply_funs, params, inputs, rngs, strict=False)
        ]

    return init_fun, apply_fun


def shape_dependent(make_layer):
    """A layer built by ``make_layer(input_shape)`` once the input shape is known.

    Args:
      make_layer: a function from an input shape to an ``(init_fun, apply_fun)`` pair.

    Returns:
      An ``(init_fun, apply_fun)`` pair deferring to ``make_layer``'s layer.
    """

    def init_fun(rng, input_shape):
        return make_layer(input_shape)[0](rng, input_shape)

    def apply_fun(params, inputs, **kwargs):
        return make_layer(inputs.shape)[1](params, inputs, **kwargs)

    return init_fun, apply_fun
