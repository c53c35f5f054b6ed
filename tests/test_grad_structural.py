"""Transpose rules of the structural and indexing families: the transpose identity
``<ct, L t> == <L^T ct, t>``, ``xform.vjp``/``xform.grad`` against ``jax.vjp``/``jax.grad``
(values and dtypes, eagerly and with ``xform.jit`` on either side), second-order checks of a
few compositions, and a rule for every linear primitive of both families."""

import functools

import hypothesis
import jax
import numpy as np
import pytest
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import xform
from xform import lax
from xform.interpret import transpose
from xform.primitives import gather_scatter, indexing, structural
from xform.test_util import check_grads, check_vjp

jlax = jax.lax
F0 = jax.dtypes.float0

# The primitives of both families that appear linearly in some JVP rule's tangent.
LINEAR = [
    structural.broadcast_in_dim_p,
    structural.reshape_p,
    structural.squeeze_p,
    structural.transpose_p,
    structural.rev_p,
    structural.pad_p,
    structural.concatenate_p,
    indexing.slice_p,
    indexing.dynamic_slice_p,
    indexing.dynamic_update_slice_p,
    gather_scatter.gather_p,
    gather_scatter.scatter_add_p,
    gather_scatter.scatter_p,
    gather_scatter.scatter_mul_p,
]


def floats(shape):
    return hnp.arrays(np.float32, shape, elements=st.floats(-4, 4, width=32))


def gdn(mod, *dims):
    return mod.GatherDimensionNumbers(*dims)


def sdn(mod, *dims):
    return mod.ScatterDimensionNumbers(*dims)


ROWS = np.array([[0], [4], [2], [4]], np.int32)  # repeats row 4
UNIQUE_ROWS = np.array([[3], [0], [2]], np.int32)
PAST_END = np.array([[1], [7], [0], [-1]], np.int32)  # rows 7 and -1 of 5 are out of bounds
UNIQUE_PAST_END = np.array([[1], [7], [0]], np.int32)
I32 = np.int32


def _scatter(name, rows, **kw):
    def f(m, x, u):
        return getattr(m, name)(x, rows, u, sdn(m, (1,), (0,), (0,)), **kw)

    return f


def _gather(rows, size, **kw):
    def f(m, x):
        return m.gather(x, rows, gdn(m, (1,), (0,), (0,)), (1, size), **kw)

    return f


# name -> (f(lax_module, *args), strategies of the float args, int args (no cotangent))
CASES = {
    "broadcast_in_dim": (lambda m, x: m.broadcast_in_dim(x, (2, 3, 4), (2, 1)), [floats((4, 1))]),
    "broadcast_in_dim_permuted": (
        lambda m, x: m.broadcast_in_dim(x, (4, 2, 3), (2, 0)),
        [floats((3, 4))],
    ),
    "broadcast_scalar": (lambda m, x: m.broadcast_in_dim(x, (2, 3), ()), [floats(())]),
    "broadcast_keep_ones": (
        lambda m, x: m.broadcast_in_dim(x, (1, 3, 2), (0, 1)),
        [floats((1, 3))],
    ),
    "reshape": (lambda m, x: m.reshape(x, (3, 2)), [floats((2, 3))]),
    "reshape_dimensions": (lambda m, x: m.reshape(x, (6,), (1, 0)), [floats((2, 3))]),
    "squeeze": (lambda m, x: m.squeeze(x, (0, 2)), [floats((1, 3, 1))]),
    "transpose": (lambda m, x: m.transpose(x, (2, 0, 1)), [floats((2, 3, 4))]),
    "rev": (lambda m, x: m.rev(x, (1,)), [floats((2, 3))]),
    "pad": (lambda m, x, v: m.pad(x, v, [(1, -1, 1), (0, 2, 0)]), [floats((3, 2)), floats(())]),
    "pad_negative_interior": (
        lambda m, x, v: m.pad(x, v, [(-2, -3, 2), (-1, 1, 1)]),
        [floats((4, 3)), floats(())],
    ),
    "pad_scalar": (lambda m, x, v: m.pad(x, v, []), [floats(()), floats(())]),
    "pad_operand_only": (lambda m, x: m.pad(x, np.array(7, x.dtype), [(2, 1, 2)]), [floats((3,))]),
    "pad_value_only": (
        lambda m, v: m.pad(np.ones((2, 2), np.float32), v, [(1, 0, 1), (-1, 1, 0)]),
        [floats(())],
    ),
    "concatenate": (lambda m, x, y: m.concatenate([x, y, x], 1), [floats((2, 1)), floats((2, 3))]),
    "concatenate_constant": (
        lambda m, x: m.concatenate([np.ones(2, x.dtype), x], 0),
        [floats((3,))],
    ),
    "slice": (lambda m, x: m.slice(x, (1, 0), (5, 4), (2, 3)), [floats((5, 4))]),
    "slice_unstrided": (lambda m, x: m.slice(x, (1, 1), (3, 2)), [floats((4, 3))]),
    "slice_empty": (lambda m, x: m.slice(x, (2, 0), (2, 3), (2, 1)), [floats((4, 3))]),
    "dynamic_slice": (lambda m, x: m.dynamic_slice(x, (I32(3), I32(1)), (2, 2)), [floats((4, 3))]),
    "dynamic_slice_traced_index": (
        lambda m, x, i: m.dynamic_slice(x, (i,), (2,)),
        [floats((5,))],
        [I32(4)],
    ),
    "dynamic_update_slice": (
        lambda m, x, u, i: m.dynamic_update_slice(x, u, (i, I32(0))),
        [floats((4, 2)), floats((2, 2))],
        [I32(3)],
    ),
    "dynamic_update_slice_operand_only": (
        lambda m, x: m.dynamic_update_slice(x, np.zeros(2, x.dtype), (I32(1),)),
        [floats((4,))],
    ),
    "dynamic_update_slice_update_only": (
        lambda m, u: m.dynamic_update_slice(np.ones((3, 3), u.dtype), u, (I32(1), I32(-1))),
        [floats((2, 1))],
    ),
    "gather": (_gather(ROWS, 3), [floats((5, 3))]),
    "gather_fill": (_gather(PAST_END, 2, mode="fill"), [floats((5, 3))]),
    "gather_clip": (_gather(PAST_END, 2, mode="clip"), [floats((5, 3))]),
    "gather_batched": (
        lambda m, x: m.gather(
            x,
            np.array([[[1], [0]], [[2], [2]]], np.int32),
            gdn(m, (2,), (1,), (1,), (0,), (0,)),
            (1, 1, 2),
        ),
        [floats((2, 3, 2))],
    ),
    "scatter_add": (_scatter("scatter_add", ROWS), [floats((5, 2)), floats((4, 2))]),
    "scatter_add_past_end": (_scatter("scatter_add", PAST_END), [floats((5, 2)), floats((4, 2))]),
    "scatter_add_clip": (
        _scatter("scatter_add", PAST_END, mode="clip"),
        [floats((5, 2)), floats((4, 2))],
    ),
    "scatter_add_updates_only": (
        lambda m, u: m.scatter_add(np.ones((5, 2), u.dtype), ROWS, u, sdn(m, (1,), (0,), (0,))),
        [floats((4, 2))],
    ),
    "scatter_unique": (
        _scatter("scatter", UNIQUE_ROWS, unique_indices=True),
        [floats((5, 2)), floats((3, 2))],
    ),
    "scatter_unique_past_end": (
        _scatter("scatter", UNIQUE_PAST_END, unique_indices=True),
        [floats((5, 2)), floats((3, 2))],
    ),
    "scatter_repeated": (_scatter("scatter", ROWS), [floats((5, 2)), floats((4, 2))]),
    "scatter_mul_operand_only": (
        lambda m, x: m.scatter_mul(x, ROWS, np.full((4, 2), 3, x.dtype), sdn(m, (1,), (0,), (0,))),
        [floats((5, 2))],
    ),
    "scatter_mul_unique": (
        _scatter("scatter_mul", UNIQUE_ROWS, unique_indices=True),
        [floats((5, 2)), floats((3, 2))],
    ),
}


# Cases jax.vjp itself fails on: it rejects its own cotangent for a broadcast_in_dim with
# unsorted dimensions, and its pad transpose needs the operand to be linear too.
JAX_FAILS = {"broadcast_in_dim_permuted", "pad_value_only"}


def case(name):
    f, strategies, *ints = CASES[name]
    return f, strategies, (ints[0] if ints else [])


@functools.cache
def jitted(name):
    """One jitted function per case, so that examples share its compilations."""
    return xform.jit(functools.partial(CASES[name][0], lax))


def assert_same(x, j):
    x, j = np.asarray(x), np.asarray(j)
    assert x.dtype == j.dtype, (x.dtype, j.dtype)
    assert x.shape == j.shape, (x.shape, j.shape)
    if x.dtype != F0:
        np.testing.assert_allclose(x, j, rtol=2e-6, atol=1e-5)


def draw(data, strategies):
    return [data.draw(s) for s in strategies]


@pytest.mark.parametrize("name", sorted(CASES))
@hypothesis.settings(max_examples=4)
@hypothesis.given(data=st.data())
def test_transpose_identity(name, data):
    f, strategies, ints = case(name)
    primals = draw(data, strategies)
    check_vjp(lambda *xs: f(lax, *xs, *ints), primals, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("name", sorted(set(CASES) - JAX_FAILS))
@pytest.mark.parametrize("jit", ["eager", "jit_inside", "jit_outside"])
@hypothesis.settings(max_examples=3)
@hypothesis.given(data=st.data())
def test_vjp_matches_jax(name, jit, data):
    f, strategies, ints = case(name)
    primals = draw(data, strategies)
    fx = jitted(name) if jit == "jit_inside" else functools.partial(f, lax)
    jf = functools.partial(f, jlax)
    out, pullback = xform.vjp(fx, *primals, *ints)
    ct = data.draw(floats(np.shape(out)))
    n = len(primals)
    if jit == "jit_outside":  # the int arguments stay outside: jit has no float0 outputs
        cts = xform.jit(lambda *a: xform.vjp(fx, *a, *ints)[1](ct)[:n])(*primals)
    else:
        cts = pullback(ct)
    jout, jpullback = jax.vjp(jf, *primals, *ints)
    assert_same(out, jout)
    for got, expected in zip(cts, jpullback(ct)[: len(cts)], strict=True):
        assert_same(got, expected)


def _first_element(y):
    """A scalar from ``y`` with structural ops only: its first element."""
    flat = lax.reshape(y, (int(np.prod(np.shape(y), dtype=int)),))
    return lax.reshape(lax.slice(flat, (0,), (1,)), ())


@pytest.mark.parametrize(
    "name",
    [
        "broadcast_in_dim",
        "pad",
        "concatenate",
        "slice",
        "gather",
        "dynamic_update_slice",
        "scatter_add",
        "scatter_unique",
    ],
)
@pytest.mark.parametrize("jit", ["eager", "grad_of_jit", "jit_of_grad"])
@hypothesis.settings(max_examples=3)
@hypothesis.given(data=st.data())
def test_grad_matches_jax(name, jit, data):
    f, strategies, ints = case(name)
    primals = draw(data, strategies)
    n = len(primals)

    def loss(m, first):
        return lambda *a: first(f(m, *a, *ints))

    g = loss(lax, _first_element)
    g = xform.jit(g) if jit == "grad_of_jit" else g
    grad = xform.grad(g, argnums=tuple(range(n)))
    grad = xform.jit(grad) if jit == "jit_of_grad" else grad
    jgrad = jax.grad(loss(jlax, lambda y: y.reshape(-1)[0]), argnums=tuple(range(n)))
    for got, expected in zip(grad(*primals), jgrad(*primals), strict=True):
        assert_same(got, expected)


# Compositions: gradients of gradients, transposes of transposes.
COMPOSITIONS = {
    "pad_slice_rev": (
        lambda x, v: lax.rev(
            lax.slice(lax.pad(x, v, [(2, -1, 1), (1, 1, 0)]), (1, 0), (6, 4), (2, 3)), (0, 1)
        ),
        [(3, 2), ()],
    ),
    "broadcast_transpose_reshape": (
        lambda x: lax.reshape(
            lax.transpose(lax.broadcast_in_dim(x, (4, 2, 3), (2, 0)), (1, 2, 0)), (4, 6)
        ),
        [(3, 4)],
    ),
    "concat_dynamic": (
        lambda x, y: lax.dynamic_update_slice(
            lax.concatenate([x, y], 0),
            lax.dynamic_slice(y, (I32(1), I32(0)), (1, 2)),
            (I32(0), I32(0)),
        ),
        [(2, 2), (3, 2)],
    ),
    "gather_scatter": (
        lambda x, u: lax.gather(
            lax.scatter_add(x, ROWS, u, lax.ScatterDimensionNumbers((1,), (0,), (0,))),
            UNIQUE_ROWS,
            lax.GatherDimensionNumbers((1,), (0,), (0,)),
            (1, 2),
        ),
        [(5, 2), (4, 2)],
    ),
    "squeeze_scatter_unique": (
        lambda x, u: lax.squeeze(
            lax.scatter(
                lax.reshape(x, (5, 1, 2)),
                UNIQUE_ROWS,
                u,
                lax.ScatterDimensionNumbers((1, 2), (0,), (0,)),
                unique_indices=True,
            ),
            (1,),
        ),
        [(5, 2), (3, 1, 2)],
    ),
}


@pytest.mark.parametrize("name", sorted(COMPOSITIONS))
def test_check_grads_second_order(name):
    f, shapes = COMPOSITIONS[name]
    rng = np.random.default_rng(1)
    with xform.enable_x64():
        args = [rng.standard_normal(s) for s in shapes]
        check_grads(f, args, order=2)


def test_scatter_mul_updates_are_not_linear():
    rule = transpose.transpose_rules[gather_scatter.scatter_mul_p]
    u = transpose.UndefinedPrimal(xform.core.ShapedArray((4, 2), np.dtype(np.float32)))
    with pytest.raises(NotImplementedError, match="linear in its operand only"):
        rule(
            np.ones((5, 2), np.float32),
            np.ones((5, 2), np.float32),
            ROWS,
            u,
            dimension_numbers=lax.ScatterDimensionNumbers((1,), (0,), (0,)),
            indices_are_sorted=False,
            unique_indices=False,
            mode=lax.GatherScatterMode.FILL_OR_DROP,
        )


def test_scatter_transpose_needs_unique_indices():
    rule = transpose.transpose_rules[gather_scatter.scatter_p]
    x = transpose.UndefinedPrimal(xform.core.ShapedArray((5, 2), np.dtype(np.float32)))
    with pytest.raises(NotImplementedError, match="unique_indices=True"):
        rule(
            np.ones((5, 2), np.float32),
            x,
            ROWS,
            np.ones((4, 2), np.float32),
            dimension_numbers=lax.ScatterDimensionNumbers((1,), (0,), (0,)),
            indices_are_sorted=False,
            unique_indices=False,
            mode=lax.GatherScatterMode.FILL_OR_DROP,
        )


def test_every_linear_primitive_has_a_transpose_rule():
    missing = [p.name for p in LINEAR if p not in transpose.transpose_rules]
    assert not missing, f"linear primitives without a transpose rule: {missing}"
