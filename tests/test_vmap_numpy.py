"""vmap of xform.numpy functions (compositions of many primitives, of every family) against
jax.vmap of the jax.numpy counterpart and a Python loop (``harness.check_vmap``).

A table: each row is a function of the numpy module, its per-example operands, and a few
(in_axes, out_axes) choices; the first choice also runs under jit. JAX's side is jitted
inside the vmap (its eager mode compiles every op separately: slow)."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import xform
import xform.numpy as xnp
from tests.harness import assert_same, check_vmap

B = 3  # the mapped axis' size


# Operand specs: a per-example array is drawn B times and stacked along its in_axes.
def F(*shape):
    return lambda rng: rng.standard_normal(shape).astype(np.float32)


def I(n, *shape):  # noqa: E743 - ints in [0, n)
    return lambda rng: rng.integers(0, n, shape).astype(np.int32)


def Perm(n, k):  # k distinct ints in [0, n)
    return lambda rng: rng.permutation(n)[:k].astype(np.int32)


def Pos(*shape):  # away from 0: safe divisors
    return lambda rng: rng.uniform(0.5, 1.5, shape).astype(np.float32)


def Bool(*shape):
    return lambda rng: rng.integers(0, 2, shape).astype(bool)


def softmax(np_, x):
    e = np_.exp(x - np_.max(x, axis=-1, keepdims=True))
    return e / np_.sum(e, axis=-1, keepdims=True)


def logsumexp(np_, x):
    m = np_.max(x, axis=-1, keepdims=True)
    return np_.squeeze(m, -1) + np_.log(np_.sum(np_.exp(x - m), axis=-1))


def layernorm(np_, x, g):
    mu = np_.mean(x, axis=-1, keepdims=True)
    return (x - mu) / np_.sqrt(np_.var(x, axis=-1, keepdims=True) + 1e-5) * g


def xent(np_, logits, label):
    return -np_.sum(np_.log(softmax(np_, logits)) * (np_.arange(5) == label))


# name: (fn(np_module, *args), per-example operand specs, [(in_axes, out_axes), ...])
ROWS = {
    # reductions
    "sum": (lambda np_, x: np_.sum(x, axis=1), [F(4, 5)], [(0, 0), (1, 1), (-1, 0)]),
    "sum_all": (lambda np_, x: np_.sum(x), [F(4, 5)], [(1, 0)]),
    "mean_keepdims": (
        lambda np_, x: np_.mean(x, axis=0, keepdims=True),
        [F(4, 5)],
        [(0, 0), (2, -1)],
    ),
    "var": (lambda np_, x: np_.var(x, axis=-1), [F(4, 5)], [(1, 0), (0, 1)]),
    "std_ddof": (lambda np_, x: np_.std(x, axis=0, ddof=1), [F(4, 5)], [(-1, 0)]),
    "max": (lambda np_, x: np_.max(x, axis=0), [F(4, 5)], [(0, 0), (1, 1)]),
    "min_keepdims": (lambda np_, x: np_.min(x, axis=1, keepdims=True), [F(4, 5)], [(2, 0)]),
    "prod": (lambda np_, x: np_.prod(x, axis=1), [F(4, 5)], [(1, 0)]),
    "argmax": (lambda np_, x: np_.argmax(x, axis=1), [F(4, 5)], [(0, 0), (2, 1)]),
    "argmin_flat": (lambda np_, x: np_.argmin(x), [F(4, 5)], [(1, 0)]),
    "cumsum": (lambda np_, x: np_.cumsum(x, axis=0), [F(4, 5)], [(0, 0), (1, -1)]),
    "cumprod_flat": (lambda np_, x: np_.cumprod(x), [F(4, 5)], [(2, 0)]),
    "all_any": (lambda np_, b: (np_.all(b, axis=0), np_.any(b)), [Bool(4, 5)], [(1, 0)]),
    "ptp": (lambda np_, x: np_.ptp(x, axis=0), [F(4, 5)], [(1, 0)]),
    "count_nonzero": (lambda np_, x: np_.count_nonzero(x > 0, axis=1), [F(4, 5)], [(0, 0)]),
    # weights of x's shape: xform's average does not take 1-d weights along axis yet
    "average_weights": (
        lambda np_, x, w: np_.average(x, axis=1, weights=w),
        [F(4, 5), Pos(4, 5)],
        [((0, None), 0), ((None, 0), 0), ((1, 2), 1)],
    ),
    # sorting
    "sort": (lambda np_, x: np_.sort(x, axis=0), [F(4, 5)], [(0, 0), (1, 1), (-1, 0)]),
    "argsort": (lambda np_, x: np_.argsort(x, axis=-1), [F(4, 5)], [(0, 0), (-1, 1)]),
    "sort_descending": (lambda np_, x: np_.sort(x, descending=True), [F(6)], [(0, 0)]),
    # elementwise and broadcasting
    "where": (
        lambda np_, x, y: np_.where(x > 0, x, y),
        [F(4, 5), F(4, 5)],
        [((0, None), 0), ((1, 0), 1), ((None, -1), 0)],
    ),
    "clip": (lambda np_, x: np_.clip(x, -0.5, 0.5), [F(4, 5)], [(1, 0)]),
    "clip_arrays": (
        lambda np_, x, lo: np_.clip(x, lo, 1.0),
        [F(4, 5), F(5)],
        [((0, None), 0), ((None, 0), 0), ((1, 0), 2)],
    ),
    "broadcast_add": (
        lambda np_, x, y: x * 2.0 + y,
        [F(4, 5), F(5)],
        [((0, None), 0), ((None, 0), 1), ((2, 0), 0)],
    ),
    "maximum_int": (
        lambda np_, a, b: np_.maximum(a, b),
        [I(9, 4), I(9, 4)],
        [((0, None), 0), ((1, 0), 0)],
    ),
    "round_astype": (lambda np_, x: np_.round(x * 3).astype(np_.int32), [F(4, 5)], [(1, 0)]),
    # contractions
    "einsum_matmul": (
        lambda np_, a, b: np_.einsum("ij,jk->ik", a, b),
        [F(3, 4), F(4, 5)],
        [((0, None), 0), ((None, 1), 0), ((1, 0), 2)],
    ),
    "einsum_batched": (
        lambda np_, a, b: np_.einsum("bij,bjk->bik", a, b),
        [F(2, 3, 4), F(2, 4, 5)],
        [((0, 0), 0), ((3, None), 1)],
    ),
    "dot_mv": (
        lambda np_, a, v: np_.dot(a, v),
        [F(4, 5), F(5)],
        [((0, None), 0), ((None, 0), 0), ((1, 0), 1)],
    ),
    "matmul": (
        lambda np_, a, b: np_.matmul(a, b),
        [F(2, 4, 5), F(5, 3)],
        [((0, None), 0), ((3, 1), 2)],
    ),
    "outer": (lambda np_, u, v: np_.outer(u, v), [F(4), F(5)], [((0, None), 0), ((1, 0), 1)]),
    "inner": (lambda np_, u, v: np_.inner(u, v), [F(5), F(5)], [((0, 0), 0), ((None, 1), 0)]),
    "tensordot": (
        lambda np_, a, b: np_.tensordot(a, b, axes=1),
        [F(3, 4), F(4, 2)],
        [((0, 1), 0), ((None, 2), 1)],
    ),
    # structural
    "concatenate": (
        lambda np_, x, y: np_.concatenate([x, y], axis=1),
        [F(4, 5), F(4, 2)],
        [((0, None), 0), ((None, 1), 0), ((1, -1), 2)],
    ),
    "stack": (
        lambda np_, x, y: np_.stack([x, y], axis=1),
        [F(4, 5), F(4, 5)],
        [((0, None), 0), ((2, 0), -1)],
    ),
    "transpose": (lambda np_, x: np_.transpose(x, (2, 0, 1)), [F(2, 3, 4)], [(0, 0), (2, 3)]),
    "swapaxes": (lambda np_, x: np_.swapaxes(x, 0, 1), [F(4, 5)], [(1, 0)]),
    "reshape": (lambda np_, x: np_.reshape(x, (10, 2)), [F(4, 5)], [(0, 0), (1, 1), (-1, 2)]),
    "ravel": (lambda np_, x: np_.ravel(x), [F(4, 5)], [(1, 0)]),
    "expand_squeeze": (
        lambda np_, x: np_.expand_dims(np_.squeeze(x, 1), -1),
        [F(4, 1, 5)],
        [(2, 0)],
    ),
    "flip": (lambda np_, x: np_.flip(x, 1), [F(4, 5)], [(1, 0)]),
    "tile_repeat": (
        lambda np_, x: (np_.tile(x, (2, 1)), np_.repeat(x, 2, axis=1)),
        [F(4, 5)],
        [(0, 0), (2, 1)],
    ),
    "triu": (lambda np_, x: np_.triu(x, 1), [F(4, 4)], [(1, 0)]),
    "diagonal_trace": (lambda np_, x: (np_.diagonal(x), np_.trace(x)), [F(4, 4)], [(0, 0), (2, 0)]),
    # indexing
    "slice": (lambda np_, x: x[1:3, ::2], [F(4, 5)], [(0, 0), (1, 1)]),
    "take_rows": (
        lambda np_, x, i: np_.asarray(x)[i],
        [F(5, 4), I(5, 3)],
        [((0, None), 0), ((None, 0), 0), ((1, 0), 1)],
    ),
    "take_pairs": (
        lambda np_, x, i: np_.asarray(x)[np_.arange(4), i],
        [F(4, 5), I(5, 4)],
        [((0, None), 0), ((2, 0), 0)],
    ),
    "dynamic_index": (
        lambda np_, x, i: np_.asarray(x)[i],
        [F(5, 4), I(5)],
        [((None, 0), 0), ((0, 0), 1)],
    ),
    "at_set": (
        lambda np_, x, i, v: np_.asarray(x).at[i].set(v),
        [F(5, 4), Perm(5, 2), F(2, 4)],
        [((0, None, None), 0), ((None, 0, 0), 0), ((1, 0, None), 1)],
    ),
    "at_add": (
        lambda np_, x, i, v: np_.asarray(x).at[i].add(v),
        [F(5, 4), I(5, 3), F(3, 4)],
        [((None, 0, 0), 0), ((1, None, 2), 0)],
    ),
    # compositions
    "softmax": (softmax, [F(4, 5)], [(0, 0), (1, 1), (-1, 0)]),
    "logsumexp": (logsumexp, [F(4, 5)], [(0, 0), (2, 1)]),
    "layernorm": (layernorm, [F(4, 5), F(5)], [((0, None), 0), ((1, 0), 2)]),
    "xent": (xent, [F(5), I(5)], [((0, 0), 0), ((None, 0), 0)]),
}


def operands(specs, in_axes, seed):
    rng = np.random.default_rng(seed)
    axes = in_axes if isinstance(in_axes, tuple) else (in_axes,)
    return [
        make(rng) if ax is None else np.stack([make(rng) for _ in range(B)], axis=ax)
        for make, ax in zip(specs, axes, strict=True)
    ]


CASES = [
    pytest.param(name, k, id=f"{name}-{k}")
    for name, (_, _, choices) in ROWS.items()
    for k in range(len(choices))
]


@pytest.mark.parametrize("name,k", CASES)
def test_numpy_vmap(name, k):
    fn, specs, choices = ROWS[name]
    in_axes, out_axes = choices[k]
    args = operands(specs, in_axes, seed=k)
    check_vmap(
        functools.partial(fn, xnp),
        jax.jit(functools.partial(fn, jnp)),
        args,
        in_axes,
        out_axes,
        rtol=1e-5,
        atol=1e-5,
        jit=k == 0,
    )


def test_nested_softmax():
    x = np.random.default_rng(0).standard_normal((2, 4, 3, 5)).astype(np.float32)
    expected = jax.jit(
        jax.vmap(jax.vmap(functools.partial(softmax, jnp), in_axes=1), in_axes=2, out_axes=-1)
    )(x)
    got = xform.vmap(
        xform.vmap(functools.partial(softmax, xnp), in_axes=1), in_axes=2, out_axes=-1
    )(x)
    assert_same(got, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["xent", "layernorm", "logsumexp", "einsum_matmul"])
def test_per_example_grad(name):
    fn, specs, choices = ROWS[name]
    in_axes = choices[-1][0]
    args = operands(specs, in_axes, seed=1)

    def loss(np_):
        return lambda *a: np_.sum(fn(np_, *a) ** 2) if name != "xent" else fn(np_, *a)

    expected = jax.jit(jax.vmap(jax.grad(loss(jnp)), in_axes))(*args)
    got = xform.vmap(xform.grad(loss(xnp)), in_axes)(*args)
    assert_same(got, expected, rtol=1e-5, atol=1e-5)
