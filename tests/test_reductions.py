"""The reductions family (reduce_<op>, argmax/argmin, cumulative reductions) against JAX:
values, dtypes and weak types, eagerly (NumPy host impls) and under jit (StableHLO); jaxpr
and StableHLO text; every bad-input error.

Each hypothesis example checks several ops in one jitted function, to keep compiles few, and
most compare with JAX's jit only (JAX's eager mode compiles every op separately: slow).
"""

import hypothesis
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import strategies as st
from jax import tree_util

import xform
from tests.harness import assert_same, check_against_jax
from xform import core, lax
from xform.primitives import reductions
from xform.runtime import dispatch

BF16 = np.dtype(jnp.bfloat16)
INTS = [np.dtype(d) for d in (np.int8, np.int32, np.uint8, np.uint32)]
FLOATS = [np.dtype(np.float16), BF16, np.dtype(np.float32)]
NUMBERS = INTS + FLOATS
ALL = [np.dtype(np.bool_)] + NUMBERS

shape_st = st.lists(st.integers(0, 3), max_size=3).map(tuple)


def is_float(dtype):
    return dtype in FLOATS


def exact_values(rng, shape, dtype):
    """Values whose sums and products are exact in every dtype here (no rounding to differ
    between XLA's and NumPy's summation orders), magnitudes never shrinking."""
    if np.issubdtype(dtype, np.unsignedinteger):
        return rng.choice([1, 2, 3], shape).astype(dtype)
    return rng.choice([-1, 1, 2], shape).astype(dtype)


def ordered_values(rng, shape, dtype, specials=True):
    """Few distinct values (many ties) and, for floats, NaN, infinities and signed zeros."""
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    if np.issubdtype(dtype, np.unsignedinteger):
        return rng.integers(0, 4, shape).astype(dtype)
    if np.issubdtype(dtype, np.integer):
        return rng.integers(-3, 3, shape).astype(dtype)
    pool = [-1.5, -1.0, 0.0, 1.0, 2.5]
    if specials:
        pool += [np.nan, np.inf, -np.inf, -0.0]
    return rng.choice(np.array(pool, np.float32), shape).astype(dtype)


def assert_match(got, expected, rtol=None, what=""):
    """``assert_same``, but bfloat16 compared as float32 values (the harness compares its
    bytes, so NaNs with different signs or payloads differ, and ignores ``rtol``)."""
    g_leaves, g_tree = tree_util.tree_flatten(got)
    e_leaves, e_tree = tree_util.tree_flatten(expected)
    assert g_tree == e_tree, f"{what}: structure {g_tree} != {e_tree}"
    for g_leaf, e_leaf in zip(g_leaves, e_leaves, strict=True):
        g, e = np.asarray(g_leaf), np.asarray(e_leaf)
        assert g.dtype == e.dtype, f"{what}: dtype {g.dtype} != {e.dtype}"
        assert bool(getattr(g_leaf, "weak_type", False)) == bool(
            getattr(e_leaf, "weak_type", False)
        ), f"{what}: weak types differ"
        if e.dtype == BF16:
            g, e = g.astype(np.float32), e.astype(np.float32)
        assert_same(g, e, rtol=rtol, what=what)


def check(xf_fn, jax_fn, *args, rtol=None):
    """xform eagerly and under jit against ``jax.jit(jax_fn)`` (values, dtypes, weak types)."""
    expected = jax.jit(jax_fn)(*args)
    got = xf_fn(*args)
    assert_match(got, expected, rtol, what="eager")
    assert_match(xform.jit(xf_fn)(*args), expected, rtol, what="jit")
    return got


def rng_st():
    return st.integers(0, 2**16).map(np.random.default_rng)


@st.composite
def axes_st(draw, ndim):
    """(axes for xform, the same axes for JAX): lax takes non-negative axes only."""
    axes = draw(st.lists(st.integers(0, max(ndim - 1, 0)), unique=True, max_size=ndim))
    axes = tuple(a for a in axes if a < ndim)
    return axes, axes


@pytest.mark.parametrize("op", ["reduce_sum", "reduce_max", "argmax", "cumsum", "cummax"])
def test_lax_takes_no_negative_axes_as_jax(op):
    """jax.lax rejects negative axes (jax.numpy is where they count from the end): the same
    ValueError from xform.lax."""
    x = np.ones((2, 3), np.float32)
    calls = {
        "reduce_sum": lambda m: m.reduce_sum(x, (-1,)),
        "reduce_max": lambda m: m.reduce_max(x, (0, -1)),
        "argmax": lambda m: m.argmax(x, -1, np.int32),
        "cumsum": lambda m: m.cumsum(x, axis=-1),
        "cummax": lambda m: m.cummax(x, axis=-2),
    }
    with pytest.raises(ValueError):
        calls[op](jax.lax)
    with pytest.raises(ValueError, match=op):
        calls[op](lax)


def reductions_of(ops, xf_axes, jax_axes):
    def xf(x):
        return {op: getattr(lax, op)(x, xf_axes) for op in ops}

    def jx(x):
        return {op: getattr(jax.lax, op)(x, jax_axes) for op in ops}

    return xf, jx


# --------------------------------------------------------------------------- reduce_<op>


@hypothesis.given(st.sampled_from(NUMBERS), shape_st, rng_st(), st.data())
def test_reduce_sum_prod(dtype, shape, rng, data):
    x = exact_values(rng, shape, dtype)
    xf_axes, jax_axes = data.draw(axes_st(x.ndim))
    check(*reductions_of(["reduce_sum", "reduce_prod"], xf_axes, jax_axes), x)


@hypothesis.given(st.sampled_from(ALL), shape_st, rng_st(), st.data())
def test_reduce_max_min_and_logical(dtype, shape, rng, data):
    x = ordered_values(rng, shape, dtype)
    xf_axes, jax_axes = data.draw(axes_st(x.ndim))
    ops = ["reduce_max", "reduce_min"]
    if not is_float(dtype):
        ops += ["reduce_and", "reduce_or", "reduce_xor"]
    check(*reductions_of(ops, xf_axes, jax_axes), x)


def test_reduce_empty_and_zero_size():
    # Identities: 0, 1, -inf/least int, +inf/greatest int, all-ones, 0; one jit for all dtypes.
    def ops_for(dtype):
        ops = ["reduce_max", "reduce_min"]
        ops += [] if dtype == np.bool_ else ["reduce_sum", "reduce_prod"]
        return ops + ([] if is_float(dtype) else ["reduce_and", "reduce_or", "reduce_xor"])

    def run(lax_module):
        def fn(*xs):
            return [{op: getattr(lax_module, op)(x, (0,)) for op in ops_for(x.dtype)} for x in xs]

        return fn

    check(run(lax), run(jax.lax), *[np.zeros((0, 2), d) for d in ALL])
    # No axes: the identity function; 0-d operand.
    check(*reductions_of(["reduce_sum", "reduce_max"], (), ()), np.float32(3.5))
    check(*reductions_of(["reduce_sum"], (), ()), np.ones((2, 3), np.int8))


def test_reduce_weak_type_and_complex():
    # A Python scalar is weakly typed, and its reduction stays weak, as in JAX.
    check_against_jax(*reductions_of(["reduce_sum", "reduce_max"], (), ()), 2.0)
    check_against_jax(*reductions_of(["reduce_and"], (), ()), True)
    z = np.arange(6).reshape(2, 3) + 1j * np.array([[1, -1, 2], [0, 3, -2]])
    z = z.astype(np.complex64)
    check_against_jax(
        *reductions_of(["reduce_sum", "reduce_prod", "reduce_max", "reduce_min"], (1,), (1,)), z
    )


_HALF_SUMS = {}  # (name, axes) -> the jitted JAX reduction, shared by the cases below


def _jax_half_reduction(name, axes):
    if (name, axes) not in _HALF_SUMS:
        _HALF_SUMS[name, axes] = jax.jit(lambda a: getattr(jax.lax, name)(a, axes))
    return _HALF_SUMS[name, axes]


@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=lambda d: np.dtype(d).name)
def test_half_float_sums_and_products_as_xla(dtype):
    # XLA's CPU folds float16/bfloat16 in the half type, over a tree of windows of 32 on the
    # longer axes: 4096 + 64 ones gives 4144 (windows of 15 pad + 4096 + 16 ones, 32 ones,
    # 16 ones), not 4096 (one fold) nor 4160 (float32, as jnp.sum widens).
    x = np.array([4096] + [1] * 64, dtype)
    want = 4144.0 if dtype == np.float16 else 4160.0  # bfloat16: 4128 + 16, a tie, to even
    assert float(lax.reduce_sum(x, (0,))) == want == float(jax.lax.reduce_sum(x, (0,)))
    rng = np.random.default_rng(0)
    cases = [((65,), (0,)), ((1000,), (0,)), ((3, 70), (1,)), ((100, 3), (0,)), ((5, 6), (0, 1))]
    if dtype == BF16:  # float16 over several axes: see xform/primitives/reductions.py
        cases += [((40, 50), (0, 1)), ((2, 40, 3), (0, 1))]
    for shape, axes in cases:
        for name, x in [
            ("reduce_sum", (rng.normal(size=shape) * 100).astype(dtype)),
            ("reduce_prod", (1 + rng.normal(size=shape) / 30).astype(dtype)),
        ]:
            got = np.asarray(getattr(lax, name)(x, axes))
            want = np.asarray(_jax_half_reduction(name, axes)(x))
            assert got.tobytes() == want.tobytes(), (name, shape, axes, got, want)


# --------------------------------------------------------------------------- argmax, argmin


@hypothesis.given(
    st.sampled_from(ALL),
    st.sampled_from([np.int32, np.int8, np.uint8]),
    st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple),
    rng_st(),
    st.data(),
)
def test_argmax_argmin(dtype, index_dtype, shape, rng, data):
    x = ordered_values(rng, shape, dtype)
    axis = data.draw(st.integers(0, x.ndim - 1))  # lax: non-negative axes
    check(
        lambda a: (lax.argmax(a, axis, index_dtype), lax.argmin(a, axis, index_dtype)),
        lambda a: (
            jax.lax.argmax(a, axis % a.ndim, index_dtype),
            jax.lax.argmin(a, axis % a.ndim, index_dtype),
        ),
        x,
    )


def test_argmax_nan_and_ties():
    x = np.array([[1, np.nan, 3, np.nan], [2, 5, 5, -0.0], [0.0, -0.0, 0.0, -1]], np.float32)
    fs = (lambda a: lax.argmax(a, 1, np.int32), lambda a: jax.lax.argmax(a, 1, np.int32))
    got = check_against_jax(*fs, x)
    np.testing.assert_array_equal(got, [1, 1, 0])  # first NaN; first of equal maxima
    got = check_against_jax(
        lambda a: lax.argmin(a, 1, np.int32), lambda a: jax.lax.argmin(a, 1, np.int32), x
    )
    np.testing.assert_array_equal(got, [1, 3, 3])
    # Zero-size non-reduced dimension.
    check_against_jax(
        lambda a: lax.argmax(a, 1, np.int32),
        lambda a: jax.lax.argmax(a, 1, np.int32),
        np.zeros((0, 3), np.float32),
    )


# --------------------------------------------------------------------------- cumulative


@hypothesis.given(
    st.sampled_from(NUMBERS),
    st.booleans(),
    st.lists(st.integers(0, 4), min_size=1, max_size=3).map(tuple),
    rng_st(),
    st.data(),
)
def test_cumulative(dtype, reverse, shape, rng, data):
    axis = data.draw(st.integers(0, len(shape) - 1))  # lax: non-negative axes
    x = exact_values(rng, shape, dtype)
    y = ordered_values(rng, shape, dtype)

    def xf(a, b):
        return [
            lax.cumsum(a, axis, reverse),
            lax.cumprod(a, axis, reverse),
            lax.cummax(b, axis, reverse),
            lax.cummin(b, axis, reverse),
        ]

    def jx(a, b):
        ax = axis % a.ndim
        return [
            jax.lax.cumsum(a, ax, reverse),
            jax.lax.cumprod(a, ax, reverse),
            jax.lax.cummax(b, ax, reverse),
            jax.lax.cummin(b, ax, reverse),
        ]

    check(xf, jx, x, y)


@hypothesis.given(
    st.sampled_from(FLOATS),
    st.booleans(),
    st.lists(st.integers(0, 4), min_size=1, max_size=2).map(tuple),
    rng_st(),
    st.data(),
)
def test_cumlogsumexp(dtype, reverse, shape, rng, data):
    axis = data.draw(st.integers(0, len(shape) - 1))  # lax: non-negative axes
    x = rng.uniform(-3, 3, shape).astype(dtype)

    def xf(a):
        return lax.cumlogsumexp(a, axis, reverse)

    def jx(a):
        return jax.lax.cumlogsumexp(a, axis % a.ndim, reverse)

    # XLA computes in the half type, the host in float32: allow a few half-type ulps.
    check(xf, jx, x, rtol={np.float16: 4e-3, BF16: 3e-2}.get(dtype))


def test_cumlogsumexp_stable_with_infinities():
    x = np.array([1000.0, 1000.0, -np.inf, np.inf, 3.0], np.float32)
    got = check_against_jax(lax.cumlogsumexp, jax.lax.cumlogsumexp, x)
    assert np.isfinite(np.asarray(got)[:3]).all()  # no overflow to inf for large inputs
    y = np.array([-np.inf, -np.inf, 0.0], np.float32)
    check_against_jax(
        lambda a: lax.cumlogsumexp(a, reverse=True),
        lambda a: jax.lax.cumlogsumexp(a, reverse=True),
        y,
    )


def test_cumulative_weak_complex_and_empty():
    check_against_jax(
        lambda a: lax.cumsum(lax.broadcast(a, (3,))),
        lambda a: jax.lax.cumsum(jax.lax.broadcast(a, (3,))),
        2.0,
    )
    z = (np.array([1, 3, 3, 0, 2]) + 1j * np.array([0, -1, 2, 5, 1])).astype(np.complex64)
    check_against_jax(
        lambda a: (
            lax.cumsum(a),
            lax.cumprod(a, reverse=True),
            lax.cummax(a),
            lax.cummin(a, reverse=True),
        ),
        lambda a: (
            jax.lax.cumsum(a),
            jax.lax.cumprod(a, reverse=True),
            jax.lax.cummax(a),
            jax.lax.cummin(a, reverse=True),
        ),
        z,
    )
    # Complex max/min order lexicographically, real part first.
    text = lowered(lax.cummax, z)
    assert "stablehlo.real" in text and "stablehlo.imag" in text and "stablehlo.select" in text
    e = np.zeros((0, 3), np.float32)
    check_against_jax(
        lambda a: (lax.cumsum(a), lax.cummax(a, 1)),
        lambda a: (jax.lax.cumsum(a), jax.lax.cummax(a, 1)),
        e,
    )


def test_weak_type_through_jit():
    got = xform.jit(lambda a: lax.cumsum(lax.broadcast(lax.reduce_sum(a, ()), (2,))))(2.0)
    assert got.weak_type and got.dtype == np.float32


# --------------------------------------------------------------------------- IR text


def test_jaxpr_text():
    x = np.ones((3, 4), np.float32)
    text = str(
        xform.make_jaxpr(
            lambda a: (
                lax.reduce_sum(a, (1,)),
                lax.argmax(a, 1, np.int32),
                lax.cumsum(a, 1, reverse=True),
            )
        )(x)
    )
    assert "reduce_sum[axes=(1,) out_sharding=None] a" in text  # as JAX prints it
    assert "i32[3] = argmax[axes=(1,) index_dtype=int32] a" in text
    assert "f32[3,4] = cumsum[axis=1 reverse=True] a" in text


def lowered(fn, *args):
    return xform.jit(fn).lower(*args).as_text()


def test_lowered_text():
    x = np.ones((3, 4), np.float32)
    text = lowered(lambda a: lax.reduce_sum(a, (1,)), x)
    assert (
        "stablehlo.reduce(%arg0 init: %cst) applies stablehlo.add across dimensions = [1]" in text
    )
    text = lowered(lambda a: lax.reduce_max(a, (0, 1)), x)
    assert "stablehlo.constant dense<0xFF800000>" in text  # -inf
    assert "applies stablehlo.maximum across dimensions = [0, 1]" in text
    text = lowered(lambda a: lax.reduce_min(a, (1,)), x.astype(np.int32))
    assert "dense<2147483647>" in text and "applies stablehlo.minimum" in text
    text = lowered(
        lambda a: (lax.reduce_and(a, (1,)), lax.reduce_or(a, (1,)), lax.reduce_xor(a, (1,))),
        x.astype(bool),
    )
    assert "dense<true>" in text and "applies stablehlo.and" in text
    assert "applies stablehlo.or" in text and "applies stablehlo.xor" in text
    assert "applies stablehlo.multiply" in lowered(lambda a: lax.reduce_prod(a, (0,)), x)
    text = lowered(lambda a: lax.argmax(a, 1, np.int32), x)
    assert "stablehlo.iota dim = 1 : tensor<3x4xi32>" in text
    assert (
        "%1:2 = stablehlo.reduce(%arg0 init: %cst), (%0 init: %c) across dimensions = [1]" in text
    )
    assert "stablehlo.compare GT, %arg1, %arg3, FLOAT" in text
    assert "stablehlo.compare LT, %arg2, %arg4, SIGNED" in text  # first index on ties
    text = lowered(lambda a: lax.cumsum(a, 1), x)
    assert '"stablehlo.reduce_window"' in text
    assert "padding = dense<[[0, 0], [3, 0]]>" in text
    assert "window_dimensions = array<i64: 1, 4>" in text and "stablehlo.add" in text
    text = lowered(lambda a: lax.cummax(a, 0, reverse=True), x)
    assert "padding = dense<[[0, 2], [0, 0]]>" in text and "stablehlo.maximum" in text
    text = lowered(lambda a: lax.cumlogsumexp(a, 1), x)
    assert "stablehlo.log_plus_one" in text and '"stablehlo.reduce_window"' in text


# --------------------------------------------------------------------------- errors


X = np.ones((3, 4), np.float32)


@pytest.mark.parametrize(
    "fn, exc, match",
    [
        (
            lambda: lax.reduce_sum(X, (2,)),
            ValueError,
            r"lax.reduce_sum: reduction axes \(2,\) contain out-of-bounds indices .*\(3, 4\)",
        ),
        (lambda: lax.reduce_max(X, (-3,)), ValueError, r"lax.reduce_max: reduction axes \(-3,\)"),
        (
            lambda: lax.reduce_min(X, (0, 0)),
            ValueError,
            r"lax.reduce_min: duplicate value in the reduction axes \(0, 0\)",
        ),
        (lambda: lax.reduce_sum(X > 0, (0,)), TypeError, "reduce_sum does not accept dtype bool"),
        (lambda: lax.reduce_prod(X > 0, (0,)), TypeError, "reduce_prod does not accept dtype bool"),
        (lambda: lax.reduce_and(X, (0,)), TypeError, "reduce_and does not accept dtype float32"),
        (lambda: lax.reduce_or(X, (0,)), TypeError, "reduce_or does not accept dtype float32"),
        (lambda: lax.reduce_xor(X, (0,)), TypeError, "reduce_xor does not accept dtype float32"),
        (lambda: lax.argmax(X, 2, np.int32), ValueError, "lax.argmax: invalid axis 2"),
        (
            lambda: lax.argmin(X, 0, np.float32),
            TypeError,
            "lax.argmin: index_dtype must be an integer type, got float32",
        ),
        (
            lambda: lax.argmax(X, 0, "not a dtype"),
            TypeError,
            "lax.argmax: index_dtype must be an integer type",
        ),
        (
            lambda: lax.argmax(X.astype(np.complex64), 0, np.int32),
            TypeError,
            "argmax does not accept dtype complex64",
        ),
        (
            lambda: lax.argmin(np.zeros((0, 3), np.float32), 0, np.int32),
            ValueError,
            r"lax.argmin requires a non-empty reduced dimension: operand shape \(0, 3\), axis 0",
        ),
        (
            lambda: lax.argmax(np.float32(1), 0, np.int32),
            ValueError,
            "lax.argmax: invalid axis 0 for an operand of rank 0",
        ),
        (lambda: lax.cumsum(X, 2), ValueError, "lax.cumsum: invalid axis 2"),
        (lambda: lax.cumprod(np.float32(1)), ValueError, "lax.cumprod: invalid axis 0"),
        (lambda: lax.cummax(X > 0), TypeError, "cummax does not accept dtype bool"),
        (lambda: lax.cummin(X > 0), TypeError, "cummin does not accept dtype bool"),
        (lambda: lax.cumsum(X > 0), TypeError, "cumsum does not accept dtype bool"),
        (
            lambda: lax.cumlogsumexp(X.astype(np.int32)),
            TypeError,
            "cumlogsumexp does not accept dtype int32",
        ),
    ],
)
def test_errors(fn, exc, match):
    with pytest.raises(exc, match=match):
        fn()
    with pytest.raises(exc, match=match):  # the same error while tracing for jit
        xform.jit(fn)()


def test_direct_bind_errors():
    # The abstract evaluation checks params that the wrappers would have canonicalized.
    with pytest.raises(ValueError, match="lax.argmax: invalid axes"):
        reductions.argmax_p.bind(X, axes=(0, 1), index_dtype=np.dtype(np.int32))
    with pytest.raises(ValueError, match="lax.cumsum: axis -1 is out of bounds"):
        reductions.cumsum_p.bind(X, axis=-1, reverse=False)


# --------------------------------------------------------------------------- host impls

F16 = np.arange(6, dtype=np.float16).reshape(2, 3)
HOST_CASES = [
    (reductions.reduce_sum_p, F16, dict(axes=(0, 1))),
    (reductions.reduce_prod_p, F16.astype(BF16), dict(axes=(1,))),
    (reductions.reduce_max_p, F16.astype(np.uint8), dict(axes=(0, 1))),
    (reductions.reduce_min_p, F16 > 2, dict(axes=(0,))),
    (reductions.reduce_and_p, F16.astype(np.int8), dict(axes=(0, 1))),
    (reductions.reduce_or_p, F16.astype(np.uint32), dict(axes=())),
    (reductions.reduce_xor_p, F16 > 1, dict(axes=(0, 1))),
    (reductions.argmax_p, F16[0], dict(axes=(0,), index_dtype=np.dtype(np.uint8))),
    (reductions.argmin_p, F16.astype(BF16), dict(axes=(1,), index_dtype=np.dtype(np.int32))),
    (reductions.cumsum_p, F16, dict(axis=1, reverse=True)),
    (reductions.cumprod_p, F16.astype(np.int8), dict(axis=0, reverse=False)),
    (reductions.cummax_p, F16.astype(BF16), dict(axis=1, reverse=False)),
    (reductions.cummin_p, F16.astype(np.uint8), dict(axis=0, reverse=True)),
    (reductions.cumlogsumexp_p, F16.astype(np.float32), dict(axis=1, reverse=False)),
]


@pytest.mark.parametrize("prim,x,params", HOST_CASES, ids=[str(c[0]) for c in HOST_CASES])
def test_host_impl_matches_aval_and_device(prim, x, params):
    (aval,) = core.abstract_eval(prim, core.get_aval(x), **params)
    (out,) = core.host_impls[prim](x, **params)
    assert isinstance(out, np.ndarray)  # not a NumPy scalar, even when 0-d
    assert out.shape == aval.shape and out.dtype == aval.dtype
    # The eager path without NumPy (GPU, TPU) compiles the single primitive with XLA.
    (dev,) = dispatch.device_apply(prim, [x], params)
    assert_match(dev, out, rtol=1e-2 if aval.dtype in FLOATS else None, what=str(prim))


# --------------------------------------------------------------------------- 64-bit


def test_x64(x64):
    x = np.arange(12, dtype=np.float64).reshape(3, 4) - 5.5
    i = np.arange(12, dtype=np.int64).reshape(3, 4) * 10**10

    def fn(a, b):
        return (
            lax.reduce_sum(a, (1,)),
            lax.reduce_max(b, (0,)),
            lax.argmin(a, 1, np.int64),
            lax.cumsum(b, 1),
        )

    expected = (x.sum(1), i.max(0), x.argmin(1), np.cumsum(i, 1))
    assert_same(fn(x, i), expected, what="eager")
    assert_same(xform.jit(fn)(x, i), expected, what="jit")
