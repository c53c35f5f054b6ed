"""vmap of the reductions family (reduce_<op>, argmax/argmin, cumulative reductions) against
jax.vmap and a Python loop over the mapped axis (``harness.check_vmap``): in_axes and
out_axes anywhere, eager and under jit, nested, under grad; the batched jaxprs; errors.

The jitted checks use a fixed table (few compiles); hypothesis draws shapes, axes, in_axes and
out_axes for eager checks only (NumPy host impls: cheap)."""

import hypothesis
import jax
import numpy as np
import pytest
from hypothesis import strategies as st

import xform
from tests.harness import assert_same, check_vmap
from tests.test_reductions import exact_values, ordered_values, rng_st
from xform import lax

B = 3  # the mapped axis' size
REDUCE = ["reduce_sum", "reduce_prod", "reduce_max", "reduce_min"]
BITWISE = ["reduce_and", "reduce_or", "reduce_xor"]
ARG = ["argmax", "argmin"]
CUMULATIVE = ["cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"]


def operand(op, shape, rng):
    """Values on which xform and XLA agree exactly, or nearly (cumlogsumexp)."""
    if op in BITWISE:
        return rng.integers(-8, 8, shape).astype(np.int32)
    if op in ("reduce_max", "reduce_min", "argmax", "argmin", "cummax", "cummin"):
        return ordered_values(rng, shape, np.float32, specials=op not in ("cummax", "cummin"))
    if op == "cumlogsumexp":
        return rng.standard_normal(shape).astype(np.float32)
    return exact_values(rng, shape, np.float32)


def op_fns(op, axis, **kw):
    """(xform fn, jax fn) applying ``op`` along ``axis`` (a tuple for reduce_<op>)."""
    if op in ARG:
        return (
            lambda x: getattr(lax, op)(x, axis, np.int32),
            lambda x: getattr(jax.lax, op)(x, axis, np.int32),
        )
    return (
        lambda x: getattr(lax, op)(x, axis, **kw),
        lambda x: getattr(jax.lax, op)(x, axis, **kw),
    )


def in_axis_shape(shape, in_axis):
    """The batched operand shape: ``shape`` with ``B`` inserted at ``in_axis``."""
    full = list(shape)
    full.insert(in_axis % (len(shape) + 1), B)
    return tuple(full)


# --------------------------------------------------------------------------- table, with jit

# (in_axes, axes/axis of the unbatched (4, 5) operand, out_axes)
REDUCE_CASES = [(0, (0,), 0), (1, (1,), -1), (-1, (0, 1), 0), (2, (0,), 1), (1, (), 2)]
AXIS_CASES = [(0, 0, 0), (1, 1, -1), (-1, 0, 1), (1, 0, 2)]


@pytest.mark.parametrize(
    "op,in_axes,axes,out_axes",
    [(op, *c) for op in REDUCE for c in REDUCE_CASES]
    + [(op, *c) for op in BITWISE for c in REDUCE_CASES[1:3]],
)
def test_reduce(op, in_axes, axes, out_axes):
    x = operand(op, in_axis_shape((4, 5), in_axes), np.random.default_rng(0))
    check_vmap(*op_fns(op, axes), (x,), in_axes, out_axes)


@pytest.mark.parametrize("op", ARG)
@pytest.mark.parametrize("in_axes,axis,out_axes", AXIS_CASES[:3])
def test_argminmax(op, in_axes, axis, out_axes):
    x = operand(op, in_axis_shape((4, 5), in_axes), np.random.default_rng(1))
    check_vmap(*op_fns(op, axis), (x,), in_axes, out_axes)


@pytest.mark.parametrize("op", CUMULATIVE)
@pytest.mark.parametrize(
    "in_axes,axis,out_axes,reverse", [c + (False,) for c in AXIS_CASES] + [(1, 0, 0, True)]
)
def test_cumulative(op, in_axes, axis, out_axes, reverse):
    x = operand(op, in_axis_shape((4, 5), in_axes), np.random.default_rng(2))
    check_vmap(*op_fns(op, axis, reverse=reverse), (x,), in_axes, out_axes)


def test_half_and_int_dtypes():
    rng = np.random.default_rng(3)
    x = exact_values(rng, (2, B, 3), np.float16)
    check_vmap(lambda a: lax.reduce_sum(a, (0,)), lambda a: jax.lax.reduce_sum(a, (0,)), (x,), 1, 0)
    i = rng.integers(-5, 5, (B, 4)).astype(np.int8)
    check_vmap(lambda a: lax.cummax(a, 0), lambda a: jax.lax.cummax(a, 0), (i,), 0, 1)
    check_vmap(
        lambda a: lax.argmin(a, 0, np.int8), lambda a: jax.lax.argmin(a, 0, np.int8), (i,), 1, 0
    )
    b = rng.integers(0, 2, (4, B)).astype(bool)
    check_vmap(lambda a: lax.reduce_or(a, (0,)), lambda a: jax.lax.reduce_or(a, (0,)), (b,), 1, 0)


# --------------------------------------------------------------------------- hypothesis, eager


@st.composite
def batched_case(draw, ops, min_rank=0):
    """(op, operand, in_axes, axis param for xform, for JAX, out_axes)."""
    op = draw(st.sampled_from(ops))
    shape = tuple(draw(st.lists(st.integers(1, 3), min_size=min_rank, max_size=3)))
    ndim = len(shape)
    in_axes = draw(st.integers(-ndim - 1, ndim))
    x = operand(op, in_axis_shape(shape, in_axes), draw(rng_st()))
    if op in REDUCE + BITWISE:
        axes = draw(st.lists(st.integers(0, ndim - 1), unique=True, max_size=ndim)) if ndim else []
        jax_axis = xf_axis = tuple(axes)  # lax takes non-negative axes only, as JAX's
        out_ndim = ndim - len(axes)
    else:
        jax_axis = xf_axis = draw(st.integers(0, ndim - 1))
        out_ndim = ndim - (op in ARG)
    out_axes = draw(st.integers(-out_ndim - 1, out_ndim))
    return op, x, in_axes, xf_axis, jax_axis, out_axes


@hypothesis.given(batched_case(REDUCE + BITWISE))
def test_reduce_drawn(case):
    op, x, in_axes, xf_axes, jax_axes, out_axes = case
    check_vmap(op_fns(op, xf_axes)[0], op_fns(op, jax_axes)[1], (x,), in_axes, out_axes, jit=False)


@hypothesis.given(batched_case(ARG + CUMULATIVE, min_rank=1), st.booleans())
def test_axis_ops_drawn(case, reverse):
    op, x, in_axes, xf_axis, jax_axis, out_axes = case
    kw = {} if op in ARG else {"reverse": reverse}
    check_vmap(
        op_fns(op, xf_axis, **kw)[0],
        op_fns(op, jax_axis, **kw)[1],
        (x,),
        in_axes,
        out_axes,
        jit=False,
    )


# --------------------------------------------------------------------------- nested, mixed


def test_nested_vmap():
    x = exact_values(np.random.default_rng(4), (4, 2, 5, 3), np.float32)

    def f(lib):
        def g(a):  # a: (4, 5) per example
            return (
                lib.reduce_sum(a, (1,)),
                lib.cumsum(a, 0, reverse=True),
                lib.argmax(a, 1, np.int32),
            )

        return g

    expected = jax.vmap(jax.vmap(f(jax.lax), in_axes=2, out_axes=1), in_axes=1, out_axes=-1)(x)
    got = xform.vmap(xform.vmap(f(lax), in_axes=2, out_axes=1), in_axes=1, out_axes=-1)(x)
    assert_same(got, expected)
    got_jit = xform.jit(
        xform.vmap(xform.vmap(f(lax), in_axes=2, out_axes=1), in_axes=1, out_axes=-1)
    )(x)
    assert_same(got_jit, expected)


def test_mapped_and_unmapped_operands():
    rng = np.random.default_rng(5)
    x, y = exact_values(rng, (B, 4), np.float32), exact_values(rng, (4, 5), np.float32)

    def f(lib):
        return lambda a, b: lib.reduce_max(b, (1,)) * a + lib.cumprod(a, 0)

    check_vmap(f(lax), f(jax.lax), (x, y), (0, None), 1)


# --------------------------------------------------------------------------- under grad

GRAD_OPS = [
    "reduce_sum",
    "reduce_prod",
    "reduce_max",
    "cumsum",
    "cumprod",
    "cummax",
    "cumlogsumexp",
]


def loss(lib, op):
    axis = (1,) if op.startswith("reduce") else 1

    def f(a, w):  # a: (4, 5), w: (4,) weights
        y = getattr(lib, op)(a, axis)
        return (y * (w if y.ndim == 1 else w[:, None])).sum()

    return f


@pytest.mark.parametrize("op", GRAD_OPS)
def test_per_example_grad(op):
    rng = np.random.default_rng(6)
    # Distinct values: no ties, whose gradient split is a convention.
    x = rng.permutation(B * 20).reshape(4, B, 5).astype(np.float32) / 10 - 3
    w = rng.standard_normal(4).astype(np.float32)
    # JAX's side jitted: its eager mode compiles each op of the scans separately (slow).
    expected = jax.jit(jax.vmap(jax.grad(loss(jax.lax, op)), in_axes=(1, None)))(x, w)
    got = xform.vmap(xform.grad(loss(lax, op)), in_axes=(1, None))(x, w)
    assert_same(got, expected, rtol=1e-5, atol=1e-5)
    # and the gradient of a vmapped function
    expected = jax.jit(jax.grad(lambda a: jax.vmap(loss(jax.lax, op), (1, None))(a, w).sum()))(x)
    got = xform.grad(lambda a: xform.vmap(loss(lax, op), (1, None))(a, w).sum())(x)
    assert_same(got, expected, rtol=1e-5, atol=1e-5)


def test_per_example_grad_under_jit():
    x = np.random.default_rng(7).standard_normal((B, 4, 5)).astype(np.float32)
    w = np.linspace(-1, 1, 4, dtype=np.float32)
    f = loss(lax, "cumlogsumexp")
    expected = jax.jit(jax.vmap(jax.grad(loss(jax.lax, "cumlogsumexp")), (0, None)))(x, w)
    assert_same(
        xform.jit(xform.vmap(xform.grad(f), (0, None)))(x, w), expected, rtol=1e-5, atol=1e-5
    )


# --------------------------------------------------------------------------- jaxprs


def test_batch_dim_is_not_moved():
    # One primitive on the whole batch, the batch dim left where it falls: out_axes there
    # gives a jaxpr of that one equation.
    x = np.ones((4, B, 5), np.float32)
    for f, out_axes, params in [
        (lambda a: lax.reduce_max(a, (0, 1)), 0, {"axes": (0, 2)}),
        (lambda a: lax.argmin(a, 1, np.int32), 1, {"axes": (2,)}),
        (lambda a: lax.cumsum(a, 0, reverse=True), 1, {"axis": 0, "reverse": True}),
    ]:
        (eqn,) = xform.make_jaxpr(xform.vmap(f, in_axes=1, out_axes=out_axes))(x).jaxpr.eqns
        assert {k: eqn.params[k] for k in params} == params


def test_unmapped_operand_stays_unmapped():
    x, y = np.ones((B, 4), np.float32), np.ones((4, 5), np.float32)
    jaxpr = xform.make_jaxpr(
        xform.vmap(lambda a, b: lax.reduce_sum(b, (1,)) + a, in_axes=(0, None))
    )(x, y)
    (red,) = [e for e in jaxpr.jaxpr.eqns if e.primitive.name == "reduce_sum"]
    assert red.invars[0].aval.shape == (4, 5)  # reduced once, not per example


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "f,error,match",
    [
        (lambda a: lax.reduce_sum(a, (2,)), ValueError, "out-of-bounds"),
        (lambda a: lax.reduce_max(a, (0, 0)), ValueError, "duplicate"),
        (lambda a: lax.reduce_and(a, (0,)), TypeError, "reduce_and"),
        (lambda a: lax.argmax(a, 2, np.int32), ValueError, "argmax"),
        (lambda a: lax.argmax(a[:, :0], 1, np.int32), ValueError, "non-empty"),
        (lambda a: lax.cumsum(a, 3), ValueError, "cumsum"),
    ],
)
def test_errors_match_unbatched(f, error, match):
    x = np.ones((4, 5), np.float32)
    with pytest.raises(error, match=match):
        f(x)
    with pytest.raises(error, match=match):
        xform.vmap(f)(np.ones((B, 4, 5), np.float32))
