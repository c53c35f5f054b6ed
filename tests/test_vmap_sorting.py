"""vmap of the sorting family (sort with several operands, mapped and unmapped, top_k)
against jax.vmap and a Python loop over the mapped axis (``harness.check_vmap``): eager and
under jit, nested, under grad; the batched jaxprs; errors."""

import hypothesis
import jax
import numpy as np
import pytest
from hypothesis import strategies as st

import xform
from tests.harness import assert_same, check_vmap
from tests.test_reductions import ordered_values, rng_st
from xform import lax

B = 3  # the mapped axis' size


def keys(rng, shape, dtype=np.float32):
    """Many ties, and NaN, infinities and signed zeros for floats."""
    return ordered_values(rng, shape, dtype)


def sorts(num_keys, dimension=-1, is_stable=True):
    return (
        lambda *ops: lax.sort(ops, dimension=dimension, is_stable=is_stable, num_keys=num_keys),
        lambda *ops: jax.lax.sort(ops, dimension=dimension, is_stable=is_stable, num_keys=num_keys),
    )


# --------------------------------------------------------------------------- sort


@pytest.mark.parametrize(
    "in_axes,dimension,out_axes", [(0, -1, 0), (1, 0, 1), (-1, 1, -1), (2, 0, 0), (1, -1, 2)]
)
def test_sort_one_operand(in_axes, dimension, out_axes):
    shape = [4, 5]
    shape.insert(in_axes % 3, B)
    x = keys(np.random.default_rng(0), tuple(shape))
    check_vmap(
        lambda a: lax.sort(a, dimension),
        lambda a: jax.lax.sort(a, dimension),
        (x,),
        in_axes,
        out_axes,
    )


# An int32 payload exposes the permutation (stability, NaN and -0.0 placement); unmapped
# operands are broadcast along the batch.
@pytest.mark.parametrize(
    "in_axes,num_keys,out_axes",
    [
        ((0, 0), 1, 0),
        ((1, None), 1, 1),  # mapped keys, unmapped payload
        ((None, 0), 1, (0, -1)),  # unmapped keys, mapped payload
        ((-1, 0), 2, 0),  # two keys, batched at different dims
        ((None, 1), 2, 1),
    ],
)
def test_sort_two_operands(in_axes, num_keys, out_axes):
    rng = np.random.default_rng(1)
    args = []
    for ax, dtype in zip(in_axes, (np.float32, np.int32), strict=True):
        shape = [4, 6]
        if ax is not None:
            shape.insert(ax % 3, B)
        args.append(keys(rng, tuple(shape), dtype))
    check_vmap(*sorts(num_keys, dimension=0), args, in_axes, out_axes)


def test_sort_three_operands_unstable_keys():
    rng = np.random.default_rng(2)
    k = rng.permutation(B * 8).reshape(B, 8).astype(np.float32)  # no ties: unstable is exact
    v = rng.standard_normal((8, B)).astype(np.float32)
    w = np.arange(8, dtype=np.int32)
    check_vmap(*sorts(1, is_stable=False), (k, v, w), (0, 1, None), (1, 0, 0))


def test_sort_key_val():
    rng = np.random.default_rng(3)
    k, v = keys(rng, (5, B), np.int32), rng.standard_normal((B, 5)).astype(np.float32)
    check_vmap(lax.sort_key_val, jax.lax.sort_key_val, (k, v), (1, 0), 0)


@st.composite
def sort_case(draw):
    """(operands, in_axes, dimension, num_keys, out_axes) of rank 1 to 3."""
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    ndim = len(shape)
    n = draw(st.integers(1, 3))
    in_axes = tuple(draw(st.one_of(st.none(), st.integers(-ndim - 1, ndim))) for _ in range(n))
    if all(ax is None for ax in in_axes):
        in_axes = (0,) + in_axes[1:]
    rng = draw(rng_st())
    args = []
    for ax, dtype in zip(
        in_axes, draw(st.permutations([np.float32, np.int32, np.bool_])), strict=False
    ):
        full = list(shape)
        if ax is not None:
            full.insert(ax % (ndim + 1), B)
        args.append(keys(rng, tuple(full), dtype))
    dimension = draw(st.integers(-ndim, ndim - 1))
    num_keys = draw(st.integers(1, n))
    out_axes = draw(st.integers(-ndim - 1, ndim))
    return args, in_axes, dimension, num_keys, out_axes


@hypothesis.given(sort_case())
def test_sort_drawn(case):
    args, in_axes, dimension, num_keys, out_axes = case
    check_vmap(*sorts(num_keys, dimension), args, in_axes, out_axes, jit=False)


# --------------------------------------------------------------------------- top_k


@pytest.mark.parametrize(
    "in_axes,axis,out_axes",
    [(0, -1, 0), (1, -1, 1), (-1, -1, -1), (-1, 0, 0), (0, 0, 2), (1, 0, -1)],
)
def test_top_k(in_axes, axis, out_axes):
    shape = [4, 6]
    shape.insert(in_axes % 3, B)
    x = keys(np.random.default_rng(4), tuple(shape))
    check_vmap(
        lambda a: lax.top_k(a, 3, axis=axis),
        lambda a: jax.lax.top_k(a, 3, axis=axis),
        (x,),
        in_axes,
        out_axes,
    )


@hypothesis.given(st.lists(st.integers(1, 4), min_size=1, max_size=3), st.data(), rng_st())
def test_top_k_drawn(shape, data, rng):
    ndim = len(shape)
    axis = data.draw(st.integers(-ndim, ndim - 1))
    k = data.draw(st.integers(0, shape[axis]))
    in_axes = data.draw(st.integers(-ndim - 1, ndim))
    shape.insert(in_axes % (ndim + 1), B)
    x = keys(rng, tuple(shape), data.draw(st.sampled_from([np.float32, np.int32])))
    check_vmap(
        lambda a: lax.top_k(a, k, axis=axis),
        lambda a: jax.lax.top_k(a, k, axis=axis),
        (x,),
        in_axes,
        data.draw(st.integers(-ndim - 1, ndim)),
        jit=False,
    )


def test_top_k_batch_last_moves_once():
    # top_k is lowered on the last axis: with the batch dim last, the rule moves it to the
    # front once rather than top_k on a middle axis (a transpose in and two out).
    x = np.ones((4, 6, B), np.float32)
    jaxpr = xform.make_jaxpr(xform.vmap(lambda a: lax.top_k(a, 2), in_axes=-1))(x).jaxpr
    assert [e.primitive.name for e in jaxpr.eqns] == ["transpose", "top_k"]
    assert jaxpr.eqns[1].params["axis"] == 2
    # Elsewhere the batch dim stays where it is.
    jaxpr = xform.make_jaxpr(xform.vmap(lambda a: lax.top_k(a, 2, axis=0), in_axes=1, out_axes=1))(
        x
    ).jaxpr
    assert [(e.primitive.name, e.params["axis"]) for e in jaxpr.eqns] == [("top_k", 0)]


def test_sort_jaxpr_broadcasts_unmapped_only():
    k, v = np.ones((B, 5), np.float32), np.ones(5, np.int32)
    jaxpr = xform.make_jaxpr(
        xform.vmap(lambda a, b: lax.sort((a, b), num_keys=1), in_axes=(0, None))
    )(k, v).jaxpr
    assert [e.primitive.name for e in jaxpr.eqns] == ["broadcast_in_dim", "sort"]
    assert jaxpr.eqns[1].params["dimension"] == 1


# --------------------------------------------------------------------------- nested, grad


def test_nested_vmap():
    rng = np.random.default_rng(5)
    x = keys(rng, (2, 5, B, 4))
    v = rng.standard_normal((4, 2)).astype(np.float32)

    def f(lib):
        def g(a, b):  # a: (5, 4), b: (4,)
            s = lib.sort((a, lib.broadcast_in_dim(b, (5, 4), (1,))), dimension=0, num_keys=1)
            return s, lib.top_k(a, 2)

        return g

    expected = jax.vmap(
        jax.vmap(f(jax.lax), in_axes=(1, None), out_axes=1), in_axes=(0, 1), out_axes=-1
    )(x, v)
    got = xform.vmap(
        xform.vmap(f(lax), in_axes=(1, None), out_axes=1), in_axes=(0, 1), out_axes=-1
    )(x, v)
    assert_same(got, expected)
    got_jit = xform.jit(
        xform.vmap(xform.vmap(f(lax), in_axes=(1, None), out_axes=1), in_axes=(0, 1), out_axes=-1)
    )(x, v)
    assert_same(got_jit, expected)


def loss(lib):
    def f(a, w):  # a: (4, 6), w: (6,): differentiable in the sorted and the top-k values
        s = lib.sort(a, dimension=1)
        vals, _ = lib.top_k(a, 2)
        k, p = lib.sort_key_val(w, a[0])
        return (s * w).sum() + (vals**2).sum() + (p * k).sum()

    return f


def test_per_example_grad():
    rng = np.random.default_rng(6)
    x = rng.permutation(B * 24).reshape(4, B, 6).astype(np.float32) / 10  # no ties
    w = rng.standard_normal(6).astype(np.float32)
    expected = jax.jit(jax.vmap(jax.grad(loss(jax.lax)), in_axes=(1, None)))(x, w)
    assert_same(
        xform.vmap(xform.grad(loss(lax)), in_axes=(1, None))(x, w), expected, rtol=1e-5, atol=1e-6
    )
    assert_same(
        xform.jit(xform.vmap(xform.grad(loss(lax)), in_axes=(1, None)))(x, w),
        expected,
        rtol=1e-5,
        atol=1e-6,
    )
    # the gradient of a vmapped function, with respect to a mapped and an unmapped input
    expected = jax.jit(
        jax.grad(lambda a, b: jax.vmap(loss(jax.lax), (1, None))(a, b).sum(), (0, 1))
    )(x, w)
    got = xform.grad(lambda a, b: xform.vmap(loss(lax), (1, None))(a, b).sum(), (0, 1))(x, w)
    assert_same(got, expected, rtol=1e-5, atol=1e-5)


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "f,error,match",
    [
        (lambda a: lax.top_k(a, 6), ValueError, "k=6"),
        (lambda a: lax.top_k(a, 1, axis=2), ValueError, "top_k"),
        (lambda a: lax.sort(a, dimension=2), ValueError, "sort"),
        (lambda a: lax.sort((a, np.ones(5, np.float32)), num_keys=1), TypeError, "equal shapes"),
        (lambda a: lax.sort((a, a), num_keys=3), ValueError, "num_keys"),
        (lambda a: lax.top_k(a.astype(np.complex64), 1), TypeError, "top_k"),
    ],
)
def test_errors_match_unbatched(f, error, match):
    with pytest.raises(error, match=match):
        f(np.ones((4, 5), np.float32))
    with pytest.raises(error, match=match):
        xform.vmap(f)(np.ones((B, 4, 5), np.float32))
