"""Transpose rules of the reduction, sorting and linalg families: the transpose identity
``<ct, L t> == <L^T ct, t>`` for each linear primitive, ``xform.grad`` of small composite
functions against ``jax.grad`` (values and dtypes; eagerly, ``jit`` of ``grad`` and ``grad``
of ``jit``), second-order checks, and every linear primitive of the families has a rule."""

import functools

import hypothesis
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import strategies as st

import xform
from xform import lax
from xform.interpret import ad, transpose
from xform.primitives import convolution, dot, reductions, sorting
from xform.test_util import check_grads, check_vjp

jlax = jax.lax

# The primitives of the three families that are linear (in at least one operand).
LINEAR = [
    reductions.reduce_sum_p,
    reductions.cumsum_p,
    sorting.sort_p,
    dot.dot_general_p,
    convolution.conv_general_dilated_p,
]


def test_every_linear_primitive_has_a_transpose_rule():
    missing = [p.name for p in LINEAR if p not in transpose.transpose_rules]
    assert not missing, f"linear primitives without a transpose rule: {missing}"


def _randn(seed, *shape, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


# --------------------------------------------------------------------------- transpose identity

K = np.array(
    [[2.0, 0.0, 1.0, 0.0, 2.0], [1.0, 1.0, 0.0, 3.0, -1.0]], np.float32
)  # ties in each row
K2 = np.array([[1.0, 0.0, 1.0, 0.0, 1.0], [5.0, 4.0, 3.0, 2.0, 1.0]], np.float32)


def _conv(x, w, **kw):
    params = dict(
        window_strides=(2, 1),
        padding=((1, 0), (0, 1)),
        lhs_dilation=(1, 2),
        rhs_dilation=(2, 1),
        dimension_numbers=("NHWC", "HWIO", "NHWC"),
    )
    params.update(kw)
    return lax.conv_general_dilated(x, w, **params)


X4 = _randn(0, 2, 5, 4, 4)  # NHWC, 4 features
W4 = _randn(1, 2, 3, 4, 6)  # HWIO, 6 out features
W4G = _randn(2, 2, 3, 2, 6)  # feature_group_count=2
XB = _randn(3, 4, 3, 5, 5)  # NCHW, batch 4
WB = _randn(4, 4, 3, 2, 2)  # OIHW, batch_group_count=2

# name -> (linear function, args)
LINEAR_MAPS = {
    "reduce_sum": (lambda x: lax.reduce_sum(x, (0, 2)), (_randn(0, 2, 3, 4),)),
    "reduce_sum_all": (lambda x: lax.reduce_sum(x, (0, 1)), (_randn(0, 3, 2),)),
    "reduce_sum_none": (lambda x: lax.reduce_sum(x, ()), (_randn(0, 3, 2),)),
    "cumsum": (lambda x: lax.cumsum(x, axis=1), (_randn(1, 2, 5),)),
    "cumsum_reverse": (lambda x: lax.cumsum(x, axis=0, reverse=True), (_randn(1, 5, 2),)),
    "sort_values": (lambda v: lax.sort_key_val(K, v, dimension=1)[1], (_randn(2, 2, 5),)),
    "sort_values_dim0": (
        lambda v: lax.sort((K.T, v), dimension=0, num_keys=1)[1],
        (_randn(2, 5, 2),),
    ),
    "sort_two_keys": (
        lambda a, b: lax.sort((K, K2, a, b), dimension=1, num_keys=2)[2:],
        (_randn(3, 2, 5), _randn(4, 2, 5)),
    ),
    "dot_lhs": (lambda x: lax.dot(x, _randn(5, 4, 3)), (_randn(6, 2, 4),)),
    "dot_rhs": (lambda y: lax.dot(_randn(6, 2, 4), y), (_randn(5, 4, 3),)),
    "dot_general_batched": (
        lambda x, y: lax.dot_general(x, y, (((1, 3), (3, 0)), ((0,), (1,)))),
        (_randn(7, 2, 3, 4, 5), _randn(8, 5, 2, 6, 3)),
    ),
    "conv_lhs": (lambda x: _conv(x, W4), (X4,)),
    "conv_rhs": (lambda w: _conv(X4, w), (W4,)),
    "conv_feature_groups": (
        lambda x, w: _conv(x, W4G, feature_group_count=2) + _conv(X4, w, feature_group_count=2),
        (X4, W4G),
    ),
    "conv_batch_groups": (
        lambda x, w: (
            lax.conv_general_dilated(x, WB, (1, 2), "VALID", batch_group_count=2)
            + lax.conv_general_dilated(XB, w, (1, 2), "VALID", batch_group_count=2)
        ),
        (XB, WB),
    ),
}


@pytest.mark.parametrize("name", LINEAR_MAPS)
def test_transpose_identity(name):
    f, args = LINEAR_MAPS[name]
    check_vjp(f, args, atol=1e-3, rtol=1e-4)


@hypothesis.given(st.data())
def test_transpose_identity_reduce_sum_and_cumsum(data):
    shape = data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple))
    ndim = len(shape)
    axes = tuple(sorted(data.draw(st.sets(st.integers(0, ndim - 1)))))
    axis = data.draw(st.integers(0, ndim - 1))
    reverse = data.draw(st.booleans())
    x = _randn(data.draw(st.integers(0, 100)), *shape)
    check_vjp(lambda x: lax.reduce_sum(x, axes), (x,), atol=1e-4, rtol=1e-4)
    check_vjp(lambda x: lax.cumsum(x, axis, reverse), (x,), atol=1e-4, rtol=1e-4)


# --------------------------------------------------------------------------- grad vs jax.grad


def _loss_cummax(m, x):
    return m.reduce_sum(m.cummax(x, axis=1), (0, 1))


def _loss_cumsum(m, x):
    return m.reduce_sum(m.sin(m.cumsum(x, axis=0, reverse=True)), (0, 1))


_W = np.arange(5, dtype=np.float32)


def _loss_sort(m, x):
    w = m.broadcast_in_dim(_W.astype(x.dtype), (3, 5), (1,))
    return m.reduce_sum(m.mul(m.sin(m.sort(x, dimension=1)), w), (0, 1))


def _loss_sort_key_val(m, k, v):
    _, vs = m.sort_key_val(m.exp(k), m.mul(v, v), dimension=0)
    return m.reduce_sum(m.mul(vs, m.broadcast_in_dim(_W.astype(v.dtype), (5, 2), (0,))), (0, 1))


def _loss_mlp(m, x, w1, b1, w2):
    h = m.tanh(m.add(m.dot(x, w1), m.broadcast_in_dim(b1, (4, 8), (1,))))
    logits = m.dot_general(h, w2, (((1,), (0,)), ((), ())))
    top = m.reduce_max(logits, (1,))
    shifted = m.sub(logits, m.broadcast_in_dim(top, (4, 3), (0,)))
    lse = m.add(m.log(m.reduce_sum(m.exp(shifted), (1,))), top)
    return m.reduce_sum(m.sub(lse, m.reduce_sum(m.mul(logits, logits), (1,))), (0,))


def _loss_batched_dot(m, x, y):
    out = m.dot_general(x, y, (((1, 3), (3, 0)), ((0,), (1,))))
    return m.reduce_sum(m.sin(out), (0, 1, 2))


def _loss_preferred(m, x, y):
    out = m.dot_general(x, y, (((1,), (0,)), ((), ())), preferred_element_type=np.float32)
    return m.reduce_sum(m.mul(out, out), (0, 1))


def _conv_layer(m, x, w, **kw):
    params = dict(
        window_strides=(2, 1),
        padding=((1, 0), (0, 1)),
        lhs_dilation=(1, 2),
        rhs_dilation=(2, 1),
        dimension_numbers=("NHWC", "HWIO", "NHWC"),
    )
    params.update(kw)
    return m.reduce_sum(m.tanh(m.conv_general_dilated(x, w, **params)), (0, 1, 2, 3))


def _loss_conv_same(m, x, w):
    y = m.conv_general_dilated(x, w, (1, 1), "SAME")
    return m.reduce_sum(m.mul(y, y), (0, 1, 2, 3))


def _loss_conv_batch_groups(m, x, w):
    y = m.conv_general_dilated(
        x,
        w,
        (2, 1),
        ((1, 1), (0, 2)),
        batch_group_count=2,
        dimension_numbers=("NCHW", "OIHW", "CNHW"),
    )
    return m.reduce_sum(m.tanh(y), (0, 1, 2, 3))


BF = jnp.bfloat16

# name -> (loss(m, *args), args)
GRAD_CASES = {
    "sum_cummax": (_loss_cummax, (_randn(0, 3, 6),)),
    "sum_sin_cumsum": (_loss_cumsum, (_randn(1, 5, 3),)),
    "sort": (_loss_sort, (_randn(2, 3, 5),)),
    "sort_key_val": (_loss_sort_key_val, (_randn(3, 5, 2), _randn(4, 5, 2))),
    "mlp": (_loss_mlp, (_randn(5, 4, 6), _randn(6, 6, 8) / 2, _randn(7, 8), _randn(8, 8, 3) / 2)),
    "batched_dot": (_loss_batched_dot, (_randn(9, 2, 3, 4, 5), _randn(10, 5, 2, 6, 3))),
    "preferred_bf16": (_loss_preferred, (_randn(11, 3, 4, dtype=BF), _randn(12, 4, 2, dtype=BF))),
    "conv": (_conv_layer, (X4, W4)),
    "conv_feature_groups": (functools.partial(_conv_layer, feature_group_count=2), (X4, W4G)),
    "conv_same_nchw": (_loss_conv_same, (_randn(13, 2, 3, 6, 5), _randn(14, 4, 3, 3, 3))),
    "conv_batch_groups": (
        _loss_conv_batch_groups,
        (_randn(15, 4, 2, 5, 6), _randn(16, 6, 2, 3, 2)),
    ),
}

MODES = {
    "eager": lambda g: g,
    "jit_of_grad": xform.jit,
}


def _assert_close(got, want, dtype):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    tol = 2e-2 if dtype == BF else 1e-4
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol)


@pytest.mark.parametrize("mode", ["eager", "jit_of_grad", "grad_of_jit"])
@pytest.mark.parametrize("name", GRAD_CASES)
def test_grad_matches_jax(name, mode):
    loss, args = GRAD_CASES[name]
    argnums = tuple(range(len(args)))
    f = functools.partial(loss, lax)
    if mode == "grad_of_jit":
        f = xform.jit(f)
    grad = xform.grad(f, argnums)
    if mode == "jit_of_grad":
        grad = xform.jit(grad)
    got = grad(*args)
    want = jax.grad(functools.partial(loss, jlax), argnums)(*args)
    assert len(got) == len(want)
    for g, w, a in zip(got, want, args, strict=True):
        _assert_close(g, w, np.asarray(a).dtype)


def test_vjp_of_sort_matches_jax_with_several_outputs():
    k, v = _randn(20, 3, 6), _randn(21, 3, 6)
    ct = (_randn(22, 3, 6), _randn(23, 3, 6))
    got = xform.vjp(lambda k, v: lax.sort((k, v), dimension=1), k, v)[1](ct)
    want = jax.vjp(lambda k, v: jlax.sort((k, v), dimension=1), k, v)[1](ct)
    for g, w in zip(got, want, strict=True):
        _assert_close(g, w, np.float32)


def test_vjp_of_dot_general_matches_jax_under_jit():
    x, y = _randn(24, 3, 4), _randn(25, 4, 5)
    ct = _randn(26, 3, 5)

    def pullback(f, ct, x, y):
        return f.vjp(f.lax.dot, x, y)[1](ct)

    got = xform.jit(functools.partial(pullback, xform))(ct, x, y)
    want = jax.jit(functools.partial(pullback, jax))(ct, x, y)
    for g, w in zip(got, want, strict=True):
        _assert_close(g, w, np.float32)


# --------------------------------------------------------------------------- second order

ORDER2 = ["sum_sin_cumsum", "sort", "mlp", "conv", "conv_batch_groups"]


@pytest.mark.parametrize("name", ORDER2)
def test_check_grads_order_2(name, x64):
    loss, args = GRAD_CASES[name]
    check_grads(functools.partial(loss, lax), [np.asarray(a, np.float64) for a in args], order=2)


def test_grad_of_grad_matches_jax():
    x = _randn(30, 5, 3)
    got = xform.grad(
        lambda x: lax.reduce_sum(xform.grad(functools.partial(_loss_cumsum, lax))(x) ** 2, (0, 1))
    )(x)
    want = jax.grad(lambda x: jnp.sum(jax.grad(functools.partial(_loss_cumsum, jlax))(x) ** 2))(x)
    _assert_close(got, want, np.float32)


# --------------------------------------------------------------------------- errors


def test_sort_is_not_linear_in_its_keys():
    aval = xform.core.ShapedArray((3,), np.float32)
    rule = transpose.transpose_rules[sorting.sort_p]
    cts = [np.ones(3, np.float32), np.ones(3, np.float32)]
    with pytest.raises(ValueError, match="sort is not linear in its key operand 0"):
        rule(
            cts,
            transpose.UndefinedPrimal(aval),
            np.ones(3, np.float32),
            dimension=0,
            is_stable=True,
            num_keys=1,
        )


def test_dot_general_is_not_linear_in_both_operands():
    aval = xform.core.ShapedArray((2, 2), np.float32)
    rule = transpose.transpose_rules[dot.dot_general_p]
    with pytest.raises(ValueError, match="dot_general of two linear operands is not linear"):
        rule(
            np.ones((2, 2), np.float32),
            transpose.UndefinedPrimal(aval),
            transpose.UndefinedPrimal(aval),
            dimension_numbers=(((1,), (0,)), ((), ())),
            precision=None,
            preferred_element_type=None,
        )


def test_zero_cotangents_give_zero_cotangents():
    aval = xform.core.ShapedArray((2, 3), np.float32)
    out_aval = xform.core.ShapedArray((3,), np.float32)
    rule = transpose.transpose_rules[reductions.reduce_sum_p]
    (ct,) = rule(ad.Zero(out_aval), transpose.UndefinedPrimal(aval), axes=(0,))
    assert type(ct) is ad.Zero and ct.aval.shape == (2, 3)
