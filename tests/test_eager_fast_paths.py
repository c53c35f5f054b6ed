"""The memos behind eager speed (issue 21): type rules memoized on params, dot_general's host
plans and transpose dimensions, matmul's no-promotion path, and a ``Lowered`` stage compiled
without lowering again. Each must give what the unmemoized path gives, checked against JAX.
"""

import hypothesis
import hypothesis.strategies as st
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import xform
import xform.numpy as xnp
from lowering import mlir
from xform import core, lax
from xform.interpret import staging
from xform.primitives import dot, reductions, structural

F32 = core.ShapedArray((2, 3), np.dtype("float32"))


@pytest.mark.parametrize(
    "prim, avals, params",
    [
        (
            dot.dot_general_p,
            (F32, core.ShapedArray((3, 4), np.dtype("float32"))),
            {
                "dimension_numbers": (((1,), (0,)), ((), ())),
                "precision": None,
                "preferred_element_type": np.dtype("float32"),
            },
        ),
        (
            structural.broadcast_in_dim_p,
            (F32,),
            {"shape": (5, 2, 3), "broadcast_dimensions": (1, 2)},
        ),
        (reductions.reduce_sum_p, (F32.update(weak_type=True),), {"axes": (1,)}),
        (structural.transpose_p, (F32,), {"permutation": (1, 0)}),
    ],
)
def test_type_rules_memoized_on_params_match_the_rule(prim, avals, params):
    expected = core.abstract_eval_rules[prim](*avals, **params)
    first = staging.out_avals_of(prim, list(avals), params)
    assert first == expected
    assert staging.out_avals_of(prim, list(avals), dict(params)) is first  # a memo hit


def test_type_rules_with_jaxpr_params_are_not_memoized():
    # reduce_p's params hold a jaxpr (residuals must not be kept alive by a memo entry).
    assert reductions.reduce_p not in staging.memoized_with_params
    assert dot.dot_general_p in staging.memoized_with_params


def test_memoized_type_rule_still_raises_each_time():
    bad = (F32, core.ShapedArray((4, 4), np.dtype("float32")))
    params = {
        "dimension_numbers": (((1,), (0,)), ((), ())),
        "precision": None,
        "preferred_element_type": None,
    }
    for _ in range(2):
        with pytest.raises(TypeError, match="contracting dimensions to have the same shape"):
            staging.out_avals_of(dot.dot_general_p, list(bad), params)


def test_unhashable_params_fall_back_to_the_rule():
    params = {
        "dimension_numbers": [[[1], [0]], [[], []]],
        "precision": None,
        "preferred_element_type": None,
    }
    out = staging.out_avals_of(
        dot.dot_general_p, [F32, core.ShapedArray((3, 4), np.dtype("float32"))], params
    )
    assert out[0].shape == (2, 4)


DNUMS = [
    ((2, 3), (3, 4), (((1,), (0,)), ((), ()))),
    ((3, 2), (3, 4), (((0,), (0,)), ((), ()))),
    ((2, 3), (4, 3), (((1,), (1,)), ((), ()))),
    ((5, 2, 3), (5, 4, 3), (((2,), (2,)), ((0,), (0,)))),
    ((2, 3, 4), (4, 3), (((1, 2), (1, 0)), ((), ()))),
]


@pytest.mark.parametrize("ls, rs, dnums", DNUMS)
def test_eager_dot_general_and_its_gradients_match_jax(ls, rs, dnums):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(ls).astype(np.float32)
    y = rng.standard_normal(rs).astype(np.float32)
    want = jax.lax.dot_general(x, y, dnums)
    for dn in (dnums, [[list(d) for d in pair] for pair in dnums]):  # lists: no memo
        got = lax.dot_general(xnp.asarray(x), xnp.asarray(y), dn)
        assert got.dtype == want.dtype
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)

    def loss(lib_lax, lib):
        return lambda a, b: lib.sum(lib_lax.dot_general(a, b, dnums) ** 2)

    got = xform.grad(loss(lax, xnp), argnums=(0, 1))(xnp.asarray(x), xnp.asarray(y))
    want = jax.grad(loss(jax.lax, jnp), argnums=(0, 1))(x, y)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-4, atol=1e-4)


def _weak_matrix(lib):
    return lib.broadcast_to(lib.asarray(2.0), (3, 3))  # a weakly typed float32 matrix


@pytest.mark.parametrize(
    "make_a, make_b",
    [
        (lambda lib: lib.ones((3, 3), np.float32), lambda lib: lib.ones((3, 3), np.float32)),
        (lambda lib: lib.ones((3, 3), np.float32), _weak_matrix),
        (_weak_matrix, _weak_matrix),
        (lambda lib: lib.ones((3, 3), np.int32), lambda lib: lib.ones((3, 3), np.float32)),
        (lambda lib: lib.ones((2, 3, 3), np.float32), lambda lib: lib.ones((3, 3), np.float32)),
    ],
)
def test_matmul_types_match_jax(make_a, make_b):
    got = xnp.matmul(make_a(xnp), make_b(xnp))
    want = jnp.matmul(make_a(jnp), make_b(jnp))
    assert (got.shape, got.dtype, got.weak_type) == (want.shape, want.dtype, want.weak_type)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_compiling_a_lowered_stage_does_not_lower_again(monkeypatch):
    calls = []
    lower = mlir.lower_to_module

    def counting(*args, **kwargs):
        calls.append(args[1])
        return lower(*args, **kwargs)

    monkeypatch.setattr(mlir, "lower_to_module", counting)
    x = np.arange(6.0, dtype=np.float32)
    lowered = xform.jit(lambda v: xnp.sin(v) * 3.0).lower(x)
    compiled = lowered.compile()
    assert len(calls) == 1
    np.testing.assert_allclose(np.asarray(compiled(x)), np.sin(x) * 3.0, rtol=1e-6)


def test_eager_ops_with_params_repeat_correctly_on_their_fast_path():
    # The first call takes the slow path and leaves a plan; later ones (other values, other
    # params on the same types) must still compute their own results, as JAX's.
    rng = np.random.default_rng(1)
    for _ in range(3):
        x = rng.standard_normal((4, 5)).astype(np.float32)
        for axes in ((0,), (1,), (0, 1)):
            got = lax.reduce_sum(xnp.asarray(x), axes)
            want = jax.lax.reduce_sum(x, axes)
            assert (got.shape, got.dtype) == (want.shape, want.dtype)
            np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6, atol=1e-6)
        got = lax.broadcast_in_dim(xnp.asarray(x[0]), (3, 5), (1,))
        np.testing.assert_array_equal(np.asarray(got), jax.lax.broadcast_in_dim(x[0], (3, 5), (1,)))


@pytest.mark.parametrize(
    "make_op",
    [
        lambda c: lambda x: x * c,
        lambda c: lambda x: c - x,
        lambda c: lambda x: x / c,
    ],
)
@pytest.mark.parametrize(
    "c",
    [
        2.0,
        -0.0,
        0.0,
        float("nan"),
        3,
        np.float32(1.5),
        np.array(-0.0, np.float32),
        np.array(7, np.int32),
    ],
)
def test_constant_operands_match_jax_and_keep_signed_zeros(make_op, c):
    # Eager binary ops take a Python or 0-d NumPy constant as a cached Array: the results,
    # dtypes and weak types stay JAX's, zeros keep their sign, NaNs stay NaNs.
    x = np.array([1.0, -2.0, 0.0, 3.5], np.float32)
    for _ in range(2):  # the second call finds the constant cached
        got = make_op(c)(xnp.asarray(x))
        want = make_op(c)(jnp.asarray(x))
        assert (got.dtype, got.weak_type) == (want.dtype, want.weak_type)
        np.testing.assert_array_equal(np.signbit(np.asarray(got)), np.signbit(want))
        # (XLA divides by a constant through its reciprocal: an ulp from NumPy's quotient)
        np.testing.assert_allclose(np.asarray(got), want, rtol=2e-7)


def test_constant_operands_follow_x64_and_are_copies():
    x = xnp.asarray(np.float32(2.0))
    assert (x * 1.5).dtype == np.float32
    with xform.enable_x64():
        assert lax.mul(xnp.asarray(np.float64(2.0)), 1.5).dtype == np.float64
    c = np.array(3.0, np.float32)
    assert float(x * c) == 6.0
    c[...] = 5.0  # the cache holds a copy, not the caller's array
    assert float(x * c) == 10.0


def test_small_and_large_broadcasts_match_jax():
    rng = np.random.default_rng(0)
    for shape, operand, dims in [
        ((8, 32), (32,), (1,)),
        ((300, 300), (300,), (0,)),
        ((2, 3, 4), (4, 3), (2, 1)),
    ]:
        v = rng.standard_normal(operand).astype(np.float32)
        got = lax.broadcast_in_dim(xnp.asarray(v), shape, dims)
        np.testing.assert_array_equal(np.asarray(got), jax.lax.broadcast_in_dim(v, shape, dims))


# The memos keyed by operand types (issue 36): a one-operand call of a primitive must not
# find the plan of a two-operand call whose operands share an aval, nor the reverse, and a
# 0-d NumPy constant's cached Array depends on the x64 mode. Each case once broke.


def _grad_of_split_head(n):
    return lambda m, v: m.grad(lambda v: m.numpy.sum(m.lax.split(v, (1,) * n, 0)[0]))(v)


def test_one_operand_calls_do_not_take_a_two_operand_plan():
    one, two = np.ones(1, np.float32), np.ones(2, np.float32)
    for n, v in ((2, two), (1, one), (2, two)):
        got = _grad_of_split_head(n)(xform, xnp.asarray(v))
        assert got.shape == np.asarray(got).shape == (n,)
        np.testing.assert_array_equal(np.asarray(got), _grad_of_split_head(n)(jax, v))
    x = xnp.asarray(one)
    for operands in ([x, x], [x], [x, x, x], [x]):
        got = lax.concatenate(operands, 0)
        assert got.shape == np.asarray(got).shape == (len(operands),)


def test_gradients_through_split_then_concatenate_match_jax():
    # Two f16[1] operands share one interned aval: their concatenate's plan once answered a
    # one-operand split's cotangent concatenation with the wrong weights.
    def weighted_split(m):
        return m.grad(lambda p: 0.25 * m.lax.split(p, (1,))[0].sum())

    def weighted_concat(m):
        return m.grad(
            lambda a, b: (
                m.numpy.array([0.25, 0.5], np.float16) * m.lax.concatenate([a, b], 0)
            ).sum(),
            argnums=(0, 1),
        )

    p = np.ones(1, np.float16)
    for _ in range(2):
        np.testing.assert_array_equal(
            np.asarray(weighted_split(xform)(xnp.asarray(p))), weighted_split(jax)(p)
        )
        got = weighted_concat(xform)(xnp.asarray(p), xnp.asarray(p))
        want = weighted_concat(jax)(p, p)
        for g, w in zip(got, want, strict=True):
            assert g.shape == np.asarray(g).shape == w.shape
            np.testing.assert_array_equal(np.asarray(g), w)


def test_numpy_constants_are_cached_per_x64_mode():
    # JAX reads an int64 0-d NumPy constant as int32 without x64 (and adds it to int32 data),
    # but as int64 with it (and refuses to add it to int32 data).
    a = np.array([4], np.int32)
    for _ in range(2):
        with xform.enable_x64(), pytest.raises(TypeError, match="add"):
            lax.add(xnp.asarray(a), np.array(-2, np.int64))
        got = lax.add(xnp.asarray(a), np.array(-2, np.int64))
        want = jax.lax.add(jnp.asarray(a), np.array(-2, np.int64))
        assert got.dtype == want.dtype == np.int32
        np.testing.assert_array_equal(np.asarray(got), want)


def _memo_case(m, op, xs):
    """One eager op of the memoized families on operands ``xs`` (NumPy) with library ``m``."""
    lax_, arr = m.lax, [m.numpy.asarray(x) for x in xs]
    if op == "concatenate":
        return lax_.concatenate(arr, 0)
    if op == "split":
        return lax_.split(arr[0], (1,) * arr[0].shape[0], 0)[-1]
    if op == "grad_split":
        return m.grad(lambda v: (lax_.split(v, (1,) * v.shape[0], 0)[0] * 3.0).sum())(arr[0])
    if op == "grad_concat":
        return m.grad(
            lambda *vs: (lax_.concatenate(vs, 0) * 2.0).sum(), argnums=tuple(range(len(arr)))
        )(*arr)[-1]
    if op == "pad":
        return lax_.pad(arr[0], arr[-1].reshape(-1)[0], ((1, 0, 0),))
    if op == "dot":
        return lax_.dot_general(arr[0], arr[-1], (((0,), (0,)), ((), ())))
    if op == "add":
        return arr[0] + arr[-1]
    if op == "reduce_sum":
        return lax_.reduce_sum(arr[0], (0,))
    return lax_.broadcast_in_dim(arr[0], (2, arr[0].shape[0]), (1,))


_MEMO_OPS = [
    "concatenate",
    "split",
    "grad_split",
    "grad_concat",
    "pad",
    "dot",
    "add",
    "reduce_sum",
    "broadcast",
]


@hypothesis.given(
    st.lists(
        st.tuples(
            st.sampled_from(_MEMO_OPS),
            st.integers(1, 3),
            st.integers(1, 2),
            st.sampled_from(["float32", "float16"]),
        ),
        min_size=4,
        max_size=12,
    )
)
def test_memoized_primitives_keep_their_types_across_operand_counts(calls):
    # One process, one sequence of calls of the memoized primitives with varying operand
    # counts and shapes (operands of one size share an interned aval): each result's type is
    # its data's, and JAX's.
    for op, drawn, size, dtype in calls:
        count = (
            drawn
            if op in ("concatenate", "grad_concat")
            else 1
            if op in ("split", "grad_split", "reduce_sum", "broadcast")
            else 2
        )
        xs = [np.arange(1, size + 1, dtype=dtype) * (i + 1) for i in range(count)]
        got, want = _memo_case(xform, op, xs), _memo_case(jax, op, xs)
        assert got.shape == np.asarray(got).shape == want.shape, (op, count, size, dtype)
        assert got.dtype == want.dtype
        np.testing.assert_allclose(
            np.asarray(got, np.float32), np.asarray(want, np.float32), rtol=1e-3
        )
