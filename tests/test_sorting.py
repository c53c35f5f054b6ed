"""The sorting family (sort, sort_key_val, top_k) against JAX: values, permutations (hence
stability and the order of NaNs and signed zeros), dtypes and weak types, eagerly (NumPy host
impls) and under jit (StableHLO); jaxpr and StableHLO text; every bad-input error."""

import hypothesis
import jax
import numpy as np
import pytest
from hypothesis import strategies as st

import xform
from tests.harness import assert_same, check_against_jax
from tests.test_reductions import ALL, BF16, assert_match, check, ordered_values, rng_st
from xform import core, lax
from xform.primitives import sorting
from xform.runtime import dispatch

COMPLEX = np.dtype(np.complex64)
shape_st = st.lists(st.integers(0, 4), min_size=1, max_size=3).map(tuple)


def bits(x):
    """The bytes of ``x``, to tell -0.0 from 0.0."""
    x = np.asarray(x)
    return x.view({2: np.uint16, 4: np.uint32, 8: np.uint64, 1: np.uint8}[x.dtype.itemsize])


# --------------------------------------------------------------------------- sort


@hypothesis.given(st.sampled_from(ALL + [COMPLEX]), shape_st, rng_st(), st.data())
def test_sort(dtype, shape, rng, data):
    if dtype == COMPLEX:
        x = (
            ordered_values(rng, shape, np.float32)
            + 1j * ordered_values(rng, shape, np.float32, specials=False)
        ).astype(dtype)
    else:
        x = ordered_values(rng, shape, dtype)
    dimension = data.draw(st.integers(-x.ndim, x.ndim - 1))
    # An iota payload exposes the permutation: stability, NaN and -0.0 placement.
    iota = np.broadcast_to(
        np.arange(x.shape[dimension], dtype=np.int32).reshape(
            (-1,) + (1,) * (x.ndim - dimension % x.ndim - 1)
        ),
        x.shape,
    ).copy()
    check(
        lambda a, i: (lax.sort(a, dimension), lax.sort((a, i), dimension, num_keys=1)),
        lambda a, i: (jax.lax.sort(a, dimension), jax.lax.sort((a, i), dimension)),
        x,
        iota,
    )


@hypothesis.given(st.sampled_from(ALL), st.sampled_from(ALL), shape_st, rng_st(), st.data())
def test_sort_multiple_keys(dtype0, dtype1, shape, rng, data):
    x0, x1 = ordered_values(rng, shape, dtype0), ordered_values(rng, shape, dtype1)
    x2 = rng.integers(-100, 100, shape).astype(np.int32)
    dimension = data.draw(st.integers(0, len(shape) - 1))
    num_keys = data.draw(st.integers(1, 3))
    check(
        lambda a, b, c: lax.sort([a, b, c], dimension, True, num_keys),
        lambda a, b, c: jax.lax.sort([a, b, c], dimension, True, num_keys),
        x0,
        x1,
        x2,
    )


def test_sort_total_order():
    x = np.array([np.nan, -np.nan, 1, -0.0, 0.0, -np.inf, np.inf, -0.0], np.float32)
    i = np.arange(8, dtype=np.int32)
    for dtype in (np.float32, np.float16, BF16):
        keys, perm = check(
            lambda a, b: lax.sort((a, b)), lambda a, b: jax.lax.sort((a, b)), x.astype(dtype), i
        )
        # -0.0 equals 0.0 (kept in input order), NaNs of either sign last.
        np.testing.assert_array_equal(perm, [5, 3, 4, 7, 2, 6, 0, 1])
    got = lax.sort(x)
    assert list(bits(got)[1:4]) == list(bits(np.array([-0.0, 0.0, -0.0], np.float32)))


def test_sort_key_val_unstable_weak_and_empty():
    keys = np.array([[3, 1, 2], [0, 0, -1]], np.int32)
    vals = np.array([[1.5, 2.5, 3.5], [4.0, 5.0, 6.0]], np.float32)
    got = check_against_jax(
        lambda k, v: lax.sort_key_val(k, v, 0),
        lambda k, v: jax.lax.sort_key_val(k, v, 0),
        keys,
        vals,
    )
    assert isinstance(got, tuple) and len(got) == 2
    check_against_jax(lax.sort_key_val, jax.lax.sort_key_val, keys, vals)
    # Without stability the order of equal keys is free; the sorted keys are not.
    check_against_jax(
        lambda k: lax.sort(k, is_stable=False), lambda k: jax.lax.sort(k, is_stable=False), keys
    )
    # Weak types are kept; a list of one operand gives a tuple of one.
    check_against_jax(
        lambda a: lax.sort([lax.broadcast(a, (3,))]),
        lambda a: jax.lax.sort([jax.lax.broadcast(a, (3,))]),
        2.0,
    )
    check(lax.sort, jax.lax.sort, np.zeros((0, 3), BF16))
    check_against_jax(
        lambda a: lax.sort(a, 0), lambda a: jax.lax.sort(a, 0), np.zeros((0, 3), np.uint8)
    )


def test_sort_x64(x64):
    x = np.array([3.0, -0.0, np.nan, 0.0, -1e300, 1e-300], np.float64)
    i = np.arange(6, dtype=np.int64) * 10**10
    expected = (
        np.array([-1e300, -0.0, 0.0, 1e-300, 3.0, np.nan]),
        np.array([4, 1, 3, 5, 0, 2]) * 10**10,
    )
    assert_same(lax.sort((x, i)), expected, what="eager")
    assert_same(xform.jit(lambda a, b: lax.sort((a, b)))(x, i), expected, what="jit")


# --------------------------------------------------------------------------- top_k


@hypothesis.given(st.sampled_from(ALL), shape_st, rng_st(), st.data())
def test_top_k(dtype, shape, rng, data):
    x = ordered_values(rng, shape, dtype)
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    k = data.draw(st.integers(0, x.shape[axis]))
    check(lambda a: lax.top_k(a, k, axis=axis), lambda a: jax.lax.top_k(a, k, axis=axis), x)


def test_top_k_order():
    # XLA's order: positive NaN largest, negative NaN smallest, -0.0 < 0.0, ties by index.
    x = np.array([1, -np.nan, np.nan, -np.inf, 0.0, -0.0, 1, 0.0], np.float32)
    for dtype in (np.float32, np.float16, BF16):
        values, indices = check(
            lambda a: lax.top_k(a, 8), lambda a: jax.lax.top_k(a, 8), x.astype(dtype)
        )
        np.testing.assert_array_equal(indices, [2, 0, 6, 4, 7, 5, 3, 1])
        assert indices.dtype == np.int32
    check_against_jax(
        lambda a: lax.top_k(a, 2),
        lambda a: jax.lax.top_k(a, 2),
        np.array([np.iinfo(np.int8).min, 5, np.iinfo(np.int8).max], np.int8),
    )
    # Weakly typed operand: both outputs are weak, as in JAX.
    check_against_jax(
        lambda a: lax.top_k(lax.broadcast(a, (3,)), 1),
        lambda a: jax.lax.top_k(jax.lax.broadcast(a, (3,)), 1),
        2.0,
    )


def test_host_impls_match_avals_and_device():
    x = np.array([[2.0, -0.0, np.nan, 0.0], [1.0, 1.0, -1.0, 3.0]], np.float16)
    i = np.arange(8, dtype=np.uint8).reshape(2, 4)
    cases = [
        (sorting.sort_p, [x, i], dict(dimension=1, is_stable=True, num_keys=2)),
        (sorting.sort_p, [x.astype(BF16)], dict(dimension=0, is_stable=True, num_keys=1)),
        (sorting.top_k_p, [x], dict(k=2, axis=1)),
        (sorting.top_k_p, [i > 3], dict(k=1, axis=0)),
    ]
    for prim, args, params in cases:
        avals = core.abstract_eval(prim, *[core.get_aval(a) for a in args], **params)
        outs = core.host_impls[prim](*args, **params)
        assert [(o.shape, o.dtype) for o in outs] == [(a.shape, a.dtype) for a in avals]
        assert all(isinstance(o, np.ndarray) for o in outs)
        # The eager path without NumPy (GPU, TPU) compiles the single primitive with XLA.
        assert_match(dispatch.device_apply(prim, args, params), outs, what=str(prim))


# --------------------------------------------------------------------------- IR text


def test_jaxpr_text():
    x = np.ones((3, 4), np.float32)
    text = str(
        xform.make_jaxpr(
            lambda a: (lax.sort((a, a), num_keys=1), lax.top_k(a, 2), lax.top_k(a, 2, axis=0))
        )(x)
    )
    assert "b:f32[3,4] c:f32[3,4] = sort[dimension=1 is_stable=True num_keys=1] a a" in text
    assert "d:f32[3,2] e:i32[3,2] = top_k[axis=1 k=2] a" in text
    assert "f:f32[2,4] g:i32[2,4] = top_k[axis=0 k=2] a" in text


def test_lowered_text():
    x = np.ones((3, 4), np.float32)
    text = xform.jit(lax.sort).lower(x).as_text()
    assert '"stablehlo.sort"(%arg0) <{dimension = 1 : i64, is_stable = true}>' in text
    assert "stablehlo.compare LT" in text and "TOTALORDER" in text
    assert "dense<0x7FC00000>" in text  # NaNs canonicalized
    text = (
        xform.jit(lambda a, b: lax.sort((a, b), num_keys=2)).lower(x, x.astype(np.int32)).as_text()
    )
    assert "stablehlo.compare LT, %arg4, %arg5, SIGNED" in text
    assert "stablehlo.compare EQ" in text and "stablehlo.or" in text
    text = xform.jit(lambda a: lax.sort(a, is_stable=False)).lower(x > 0).as_text()
    assert "is_stable = false" in text and "UNSIGNED" in text
    text = xform.jit(lambda a: lax.top_k(a, 2)).lower(x).as_text()
    assert (
        "chlo.top_k(%arg0, k = 2) : tensor<3x4xf32> -> (tensor<3x2xf32>, tensor<3x2xi32>)" in text
    )
    text = xform.jit(lambda a: lax.top_k(a, 2, axis=0)).lower(x).as_text()
    assert "stablehlo.transpose %arg0, dims = [1, 0]" in text and "chlo.top_k" in text


# --------------------------------------------------------------------------- errors

X = np.ones((3, 4), np.float32)


@pytest.mark.parametrize(
    "fn, exc, match",
    [
        (
            lambda: lax.sort((X, X[:2])),
            TypeError,
            r"lax.sort: operands must have equal shapes, got \(3, 4\), \(2, 4\)",
        ),
        (lambda: lax.sort(X, 2), ValueError, "lax.sort: axis 2 is out of bounds .* rank 2"),
        (
            lambda: lax.sort(np.float32(1)),
            ValueError,
            "lax.sort: axis -1 is out of bounds for an array of rank 0",
        ),
        (
            lambda: lax.sort((X, X), num_keys=3),
            ValueError,
            "lax.sort: num_keys=3 must be between 1 and the number of operands, 2",
        ),
        (lambda: lax.sort((X, X), num_keys=0), ValueError, "lax.sort: num_keys=0"),
        (lambda: lax.sort(()), TypeError, "lax.sort needs at least one operand"),
        (lambda: lax.sort_key_val(X, X[0]), TypeError, "lax.sort: operands must have equal"),
        (
            lambda: lax.top_k(X, 5),
            ValueError,
            r"lax.top_k: k=5 must be non-negative and at most the size 4 of axis 1 .*\(3, 4\)",
        ),
        (lambda: lax.top_k(X, -1), ValueError, "lax.top_k: k=-1 must be non-negative"),
        (lambda: lax.top_k(X, 2.0), TypeError, "lax.top_k: k must be an integer, got 2.0"),
        (
            lambda: lax.top_k(np.float32(1), 1),
            ValueError,
            "lax.top_k: axis -1 is out of bounds for an array of rank 0",
        ),
        (lambda: lax.top_k(X, 1, axis=2), ValueError, "lax.top_k: axis 2 is out of bounds"),
        (
            lambda: lax.top_k(X.astype(np.complex64), 1),
            TypeError,
            "top_k does not accept dtype complex64",
        ),
    ],
)
def test_errors(fn, exc, match):
    with pytest.raises(exc, match=match):
        fn()
    with pytest.raises(exc, match=match):  # the same error while tracing for jit
        xform.jit(fn)()


def test_direct_bind_errors():
    # The abstract evaluation checks what the wrappers canonicalize.
    with pytest.raises(ValueError, match=r"lax.sort: dimension -1 is out of bounds .* \(3, 4\)"):
        sorting.sort_p.bind(X, dimension=-1, is_stable=True, num_keys=1)
    with pytest.raises(ValueError, match="lax.sort: dimension 0 is out of bounds .* 0-d"):
        sorting.sort_p.bind(np.float32(1), dimension=0, is_stable=True, num_keys=1)
    with pytest.raises(TypeError, match="lax.sort needs at least one operand"):
        sorting.sort_p.bind(dimension=0, is_stable=True, num_keys=1)
    with pytest.raises(ValueError, match="lax.top_k: axis -1 is out of bounds"):
        sorting.top_k_p.bind(X, k=1, axis=-1)


# --------------------------------------------------------------------------- subnormals


@pytest.mark.parametrize(
    "dtype, tiny",
    [(np.float32, 1e-40), (BF16, 1e-40), (COMPLEX, 1e-40), (np.float64, 1e-310)],
    ids=["float32", "bfloat16", "complex64", "float64"],
)
def test_eager_sort_of_subnormals_gives_jits_bits(dtype, tiny):
    """XLA's CPU orders subnormals as zeros (ties with ±0.0, kept in order by a stable sort)
    and moves their bits unchanged; eager sort of an Array marked as holding them does too."""
    x = np.array([3, tiny, -tiny, 0, -0.0, -1, 2 * tiny, -2 * tiny, 1, 5 * tiny]).astype(dtype)
    if dtype == COMPLEX:
        x = x + 1j * x[::-1]
    wide = dtype == np.float64
    with jax.enable_x64(wide), xform.enable_x64(wide):
        ours = xform.numpy.asarray(x)
        assert ours._subnormal
        for stable in (True, False):
            got = lax.sort((ours, xform.numpy.arange(10)), num_keys=1, is_stable=stable)
            want = jax.jit(
                lambda a, s=stable: jax.lax.sort((a, jax.numpy.arange(10)), num_keys=1, is_stable=s)
            )(x)
            for g, w in zip(got, want, strict=True):
                assert np.asarray(g).tobytes() == np.asarray(w).tobytes()
            assert got[0]._subnormal  # the results hold them, and say so
