"""vmap of dot_general and conv_general_dilated against jax.vmap and a Python loop: either
operand or both mapped at any axis, out_axes, nested vmaps, one contraction in the lowered
program (no per-example loop), and per-example gradients (vmap of grad)."""

import hypothesis.strategies as st
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given

import xform
import xform.numpy as xnp
from tests.harness import assert_same, check_vmap
from xform import lax

jlax = jax.lax
RNG = np.random.default_rng(0)
B = 3  # the size of the mapped axis


def _rand(shape, dtype=np.float32):
    if np.issubdtype(dtype, np.integer):
        return RNG.integers(-4, 5, shape).astype(dtype)
    return RNG.standard_normal(shape).astype(dtype)


def _with_axis(shape, axis, size=B):
    """``shape`` with the mapped axis inserted at ``axis`` (None: not mapped)."""
    if axis is None:
        return tuple(shape)
    shape = list(shape)
    shape.insert(axis % (len(shape) + 1), size)
    return tuple(shape)


def _args(shapes, in_axes, dtype=np.float32):
    return tuple(_rand(_with_axis(s, a), dtype) for s, a in zip(shapes, in_axes, strict=True))


# --------------------------------------------------------------------------- dot_general


def _dot(lib, dnums, **kw):
    return lambda a, b: lib.dot_general(a, b, dnums, **kw)


# The oracles run jax.vmap of a jax.jit: one compilation per case rather than one per
# operation of JAX's eager batched program.
def _jdot(dnums, **kw):
    return jax.jit(_dot(jlax, dnums, **kw))


MATMUL = (((1,), (0,)), ((), ()))
BMM = (((2,), (1,)), ((0,), (0,)))

# (dimension numbers, unbatched lhs and rhs shapes)
_DOT_CASES = [
    (MATMUL, (2, 3), (3, 4)),
    (BMM, (5, 2, 3), (5, 3, 4)),
    ((((0,), (0,)), ((), ())), (3,), (3,)),  # vector . vector: a scalar per example
    ((((1,), (0,)), ((), ())), (2, 3), (3,)),  # matrix . vector
    ((((), ()), ((), ())), (2,), (4,)),  # outer product: no contraction
    ((((0, 2), (2, 1)), ((1,), (0,))), (3, 5, 4), (5, 4, 3, 2)),  # two contracted, batch last
]
_DOT_AXES = [(0, 0), (1, None), (None, -1), (-1, 1), (0, None), (None, 0)]


@pytest.mark.parametrize("case", _DOT_CASES, ids=lambda c: f"{c[1]}x{c[2]}")
def test_dot_general(case):
    dnums, ls, rs = case
    k = _DOT_CASES.index(case)
    for j, in_axes in enumerate(_DOT_AXES):
        args = _args((ls, rs), in_axes)
        out_rank = len(
            lax.dot_general(np.zeros(ls, np.float32), np.zeros(rs, np.float32), dnums).shape
        )
        check_vmap(
            _dot(lax, dnums),
            _jdot(dnums),
            args,
            in_axes,
            out_axes=j % (out_rank + 1),
            rtol=1e-5,
            atol=1e-5,
            jit=j == k % 6,
        )


@st.composite
def _dot_general_case(draw):
    """Any dot_general: batch, contracted and free dimensions in any order in each operand,
    each operand mapped at any position (or not: at least one is)."""
    nb, nc, nl, nr = (draw(st.integers(0, n)) for n in (1, 2, 2, 1))
    size = st.integers(1, 3)
    sizes = {
        (kind, i): draw(size)
        for kind, n in (("b", nb), ("c", nc), ("l", nl), ("r", nr))
        for i in range(n)
    }
    lhs = draw(st.permutations([k for k in sizes if k[0] in "bcl"]))
    rhs = draw(st.permutations([k for k in sizes if k[0] in "bcr"]))

    def positions(dims, kind, n):
        return tuple(dims.index((kind, i)) for i in range(n))

    dnums = (
        (positions(lhs, "c", nc), positions(rhs, "c", nc)),
        (positions(lhs, "b", nb), positions(rhs, "b", nb)),
    )
    shapes = (tuple(sizes[k] for k in lhs), tuple(sizes[k] for k in rhs))
    in_axes = tuple(draw(st.none() | st.integers(0, len(s))) for s in shapes)
    if in_axes == (None, None):
        in_axes = (0, None)
    out_rank = nb + nl + nr
    out_axis = draw(st.integers(-out_rank - 1, out_rank))
    return dnums, shapes, in_axes, out_axis


@given(_dot_general_case())
def test_dot_general_hypothesis(case):
    dnums, shapes, in_axes, out_axis = case
    args = _args(shapes, in_axes)
    check_vmap(_dot(lax, dnums), _jdot(dnums), args, in_axes, out_axis, rtol=1e-5, atol=1e-5)


def test_dot_general_params_pass_through():
    dnums = BMM
    args = _args(((5, 2, 3), (5, 3, 4)), (1, None), np.int8)
    check_vmap(
        _dot(lax, dnums, preferred_element_type=np.int32),
        _dot(jlax, dnums, preferred_element_type=np.int32),
        args,
        (1, None),
    )
    args = _args(((2, 3), (3, 4)), (0, 0))
    check_vmap(
        _dot(lax, MATMUL, precision=lax.Precision.HIGHEST),
        _dot(jlax, MATMUL, precision=jlax.Precision.HIGHEST),
        args,
        (0, 0),
        jit=False,
    )
    half = tuple(a.astype(np.float16) for a in args)
    check_vmap(
        _dot(lax, MATMUL, preferred_element_type=np.float32),
        _dot(jlax, MATMUL, preferred_element_type=np.float32),
        half,
        (0, 0),
        rtol=1e-3,
        atol=1e-3,
        jit=False,
    )


def _count(text, op):
    return text.count(f"stablehlo.{op}")


@pytest.mark.parametrize("in_axes", [(0, None), (0, 0), (None, 1), (2, 0)])
def test_batched_matmul_lowers_to_one_dot_general(in_axes):
    # jit(vmap(f)) is one contraction over the whole batch, as a hand-batched program.
    args = _args(((8, 16), (16, 4)), in_axes)
    text = xform.jit(xform.vmap(xnp.matmul, in_axes)).lower(*args).as_text()
    assert _count(text, "dot_general") == 1, text
    assert "stablehlo.while" not in text and "stablehlo.slice" not in text, text


def test_one_sided_batch_is_a_free_dimension_where_it_falls():
    # A batch of lhs rows needs no transpose: it comes out where the lhs free dims fall.
    jaxpr = str(
        xform.make_jaxpr(xform.vmap(xnp.matmul, (1, None), 1))(_rand((4, B, 3)), _rand((3, 2)))
    )
    assert jaxpr.count("dot_general") == 1 and "transpose" not in jaxpr, jaxpr


def test_nested_vmap_of_dot():
    # Outer: rows of x with a shared w; inner: a per-row kernel against that row.
    x, w = _rand((4, B, 3)), _rand((B, 3, 2))
    inner_x = xform.vmap(lax.dot, (0, 0))
    inner_j = jax.vmap(jlax.dot, (0, 0))
    expected = jax.vmap(inner_j, (0, None), 2)(x, w)
    assert_same(xform.vmap(inner_x, (0, None), 2)(x, w), expected, rtol=1e-5, atol=1e-5)
    assert_same(xform.jit(xform.vmap(inner_x, (0, None), 2))(x, w), expected, rtol=1e-5, atol=1e-5)
    expected = jax.vmap(jax.vmap(jnp.dot, (None, 1)), (1, None))(x[0], w)
    got = xform.vmap(xform.vmap(xnp.dot, (None, 1)), (1, None))(x[0], w)
    assert_same(got, expected, rtol=1e-5, atol=1e-5)


def test_dot_errors_match_the_unbatched_ones():
    with pytest.raises(TypeError, match="contracting dimensions to have the same shape"):
        xform.vmap(_dot(lax, MATMUL), (0, None))(_rand((B, 2, 3)), _rand((4, 5)))
    with pytest.raises(TypeError, match="lhs batch dimensions and rhs batch dimensions"):
        xform.vmap(_dot(lax, BMM), (1, None))(_rand((5, B, 2, 3)), _rand((4, 3, 4)))


# --------------------------------------------------------------------------- convolution


def _conv(lib, **kw):
    return lambda a, b: lib.conv_general_dilated(a, b, **kw)


def _jconv(**kw):
    return jax.jit(_conv(jlax, **kw))


# (params, unbatched lhs and rhs shapes)
_CONV_CASES = [
    (dict(window_strides=(1, 1), padding="SAME"), (2, 4, 5, 5), (6, 4, 3, 3)),
    (
        dict(
            window_strides=(2, 1),
            padding=((1, 0), (0, 2)),
            rhs_dilation=(1, 2),
            feature_group_count=2,
        ),
        (2, 4, 6, 5),
        (6, 2, 3, 2),
    ),
    (dict(window_strides=(1,), padding="VALID", batch_group_count=2), (4, 3, 7), (6, 3, 3)),
    (
        dict(
            window_strides=(1, 1),
            padding="SAME",
            dimension_numbers=("NHWC", "HWIO", "NHWC"),
            feature_group_count=2,
        ),
        (2, 5, 5, 4),
        (3, 3, 2, 6),
    ),
    (
        dict(
            window_strides=(1,),
            padding=((1, 1),),
            lhs_dilation=(2,),
            dimension_numbers=("NWC", "WIO", "NCW"),
            batch_group_count=3,
        ),
        (6, 7, 2),
        (3, 2, 3),
    ),
]


def _conv_axes(ls, k):
    n = len(ls)
    last = (n, None) if k % 2 else (None, n)  # one operand mapped last, by turns
    return [(0, None), (None, 0), (0, 0), last, (2, 1), (n, n)]


@pytest.mark.parametrize("case", _CONV_CASES, ids=lambda c: f"{c[1]}*{c[2]}")
def test_conv_general_dilated(case):
    # The lhs mapped, the kernel mapped (with feature and batch groups), or both.
    kw, ls, rs = case
    for j, in_axes in enumerate(_conv_axes(ls, _CONV_CASES.index(case))):
        args = _args((ls, rs), in_axes)
        check_vmap(
            _conv(lax, **kw),
            _jconv(**kw),
            args,
            in_axes,
            out_axes=j % 3,
            rtol=1e-5,
            atol=1e-5,
            jit=j == 2,
        )


@pytest.mark.parametrize("in_axes", [(0, None), (None, 0), (0, 0)])
def test_batched_conv_lowers_to_one_convolution(in_axes):
    kw, ls, rs = _CONV_CASES[1]
    args = _args((ls, rs), in_axes)
    text = xform.jit(xform.vmap(_conv(lax, **kw), in_axes)).lower(*args).as_text()
    assert _count(text, "convolution") == 1, text
    assert "stablehlo.while" not in text, text


def test_nested_vmap_of_conv():
    kw, ls, rs = _CONV_CASES[0]
    x, w = _rand((2,) + _with_axis(ls, 1)), _rand(_with_axis(rs, 0, 2))
    got = xform.vmap(xform.vmap(_conv(lax, **kw), (1, None)), (0, 0), 1)(x, w)
    expected = jax.vmap(jax.vmap(_conv(jlax, **kw), (1, None)), (0, 0), 1)(x, w)
    assert_same(got, expected, rtol=1e-5, atol=1e-5)


# --------------------------------------------------------------------------- per-example gradients


def _logistic_loss(np_):
    # One example: features x (d,), label y in {0, 1}; log(1 + e^z) - y z, from jnp ops.
    def loss(params, x, y):
        w, b = params
        z = np_.dot(x, w) + b
        return np_.logaddexp(0.0, z) - y * z

    return loss


def test_vmap_of_grad_logistic_regression():
    params = (_rand((5,)), np.float32(0.3))
    xs, ys = _rand((8, 5)), (RNG.random(8) < 0.5).astype(np.float32)
    in_axes = (None, 0, 0)
    expected = jax.vmap(jax.grad(_logistic_loss(jnp)), in_axes)(params, xs, ys)
    got = xform.vmap(xform.grad(_logistic_loss(xnp)), in_axes)(params, xs, ys)
    assert_same(got, expected, rtol=1e-5, atol=1e-6)
    got = xform.jit(xform.vmap(xform.grad(_logistic_loss(xnp)), in_axes))(params, xs, ys)
    assert_same(got, expected, rtol=1e-5, atol=1e-6)


def test_vmap_of_grad_logistic_regression_minibatches():
    # Each example is a minibatch whose loss is a mean: needs reduce_sum's batching rule too.
    def loss(np_, vmap):
        one = vmap(_logistic_loss(np_), (None, 0, 0))
        return lambda params, x, y: np_.mean(one(params, x, y))

    params = (_rand((5,)), np.float32(0.3))
    xs, ys = _rand((4, 6, 5)), (RNG.random((4, 6)) < 0.5).astype(np.float32)
    in_axes = (None, 0, 0)
    expected = jax.vmap(jax.grad(loss(jnp, jax.vmap)), in_axes)(params, xs, ys)
    got = xform.vmap(xform.grad(loss(xnp, xform.vmap)), in_axes)(params, xs, ys)
    assert_same(got, expected, rtol=1e-5, atol=1e-6)


def test_vmap_of_grad_through_a_conv_layer():
    # Per-example kernel gradients: the transposed convolutions (with batch and feature
    # groups swapped) batched too. The loss contracts the output with fixed weights.
    kw, ls, rs = _CONV_CASES[1]
    x, w = _rand((B,) + ls), _rand(rs)
    out_shape = jlax.conv_general_dilated(x[0], w, **kw).shape
    c = _rand(out_shape)
    dims = tuple(range(len(out_shape)))

    def loss(lib):
        return lambda w, x: lib.dot_general(
            lib.tanh(lib.conv_general_dilated(x, w, **kw)), c, ((dims, dims), ((), ()))
        )

    ws = _rand((B,) + rs)
    for k, (in_axes, argnums) in enumerate(
        [((None, 0), 0), ((None, 0), 1), ((0, 0), 0), ((0, 0), 1)]
    ):
        args = (w if in_axes[0] is None else ws, x)
        expected = jax.jit(jax.vmap(jax.grad(loss(jlax), argnums), in_axes))(*args)
        got = xform.vmap(xform.grad(loss(lax), argnums), in_axes)
        assert_same((xform.jit(got) if k == 3 else got)(*args), expected, rtol=1e-4, atol=1e-5)
