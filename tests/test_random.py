"""xform.random against jax.random: bits and values equal for the same key (eagerly, under jit
and under vmap over keys), distributions against scipy, and the errors."""

import hypothesis.strategies as st
import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
import scipy.stats as scipy_stats  # a dev dependency (pyproject.toml)
from hypothesis import given

import xform
import xform.numpy as xnp
from tests.harness import assert_same
from xform import random as xr

jr = jax.random

# Compiling is what costs here (each new shape or dtype compiles a threefry program, for
# xform and for JAX), so hypothesis draws seeds freely but (shape, dtype) pairs from small
# pools, and the batched check goes through one shared jitted function whose cache the
# examples reuse.
seeds = st.integers(0, 2**32 - 1)


def _keys(seed, n=3):
    """A key and a batch of ``n`` keys, as NumPy arrays both libraries accept."""
    key = np.asarray(jr.PRNGKey(seed))
    return key, np.asarray(jr.split(jr.PRNGKey(seed), n))


def _batched(fn, keys, args, kwargs, statics):
    return xform.vmap(lambda k: fn(k, *args, **kwargs, **dict(statics)))(keys)


_jit_vmap = xform.jit(_batched, static_argnames=("fn", "statics"))


def _check(xf_fn, jax_fn, seed, args=(), statics=(), kwargs=None, *, tol=None):
    """``xf_fn(key, *args, **kwargs, **statics)`` equals ``jax_fn``'s value (bit for bit
    unless ``tol``) eagerly and under ``xform.jit(xform.vmap(...))`` over a batch of keys
    (against JAX's values key by key). ``args``/``kwargs`` are arrays, traced under jit;
    ``statics`` is a tuple of (name, value) pairs."""
    key, keys = _keys(seed)
    kwargs = kwargs or {}
    kw = {**kwargs, **dict(statics)}
    tol = {"rtol": 0, "atol": 0} if tol is None else tol
    assert_same(xf_fn(key, *args, **kw), jax_fn(key, *args, **kw), what="eager", **tol)
    expected = np.stack([np.asarray(jax_fn(k, *args, **kw)) for k in keys])
    assert_same(_jit_vmap(xf_fn, keys, args, kwargs, statics), expected, what="jit(vmap)", **tol)


# --------------------------------------------------------------------------- keys


@given(st.integers(-(2**63), 2**63 - 1))
def test_prngkey_matches_jax(seed):
    assert_same(xr.PRNGKey(seed), jr.PRNGKey(seed))
    assert_same(xr.key_data(xr.key(seed)), jr.key_data(jr.key(seed)))


@pytest.mark.parametrize("seed", [np.int8(-1), np.uint32(2**32 - 1), np.int32(-7), True])
def test_prngkey_numpy_seeds(seed):
    assert_same(xr.PRNGKey(seed), jr.PRNGKey(seed))


def test_prngkey_traced_seed():
    seeds = np.array([-3, 0, 5, 2**31 - 1], np.int32)
    assert_same(xform.jit(xr.PRNGKey)(seeds[0]), jr.PRNGKey(seeds[0]))
    assert_same(xform.vmap(xr.PRNGKey)(seeds), jax.vmap(jr.PRNGKey)(seeds))


@given(st.integers(-(2**63), 2**63 - 1))
def test_prngkey_x64(seed):
    with xform.enable_x64(), jax.enable_x64(True):
        assert_same(xr.PRNGKey(seed), jr.PRNGKey(seed))
        assert_same(xr.PRNGKey(np.uint64(seed % 2**64)), jr.PRNGKey(np.uint64(seed % 2**64)))


@given(seeds, st.sampled_from([0, 1, 2, 5, (3, 2), (0,)]))
def test_split_matches_jax(seed, num):
    _check(xr.split, jr.split, seed, statics=(("num", num),))


@given(seeds, st.integers(0, 2**32 - 1))
def test_fold_in_matches_jax(seed, data):
    _check(xr.fold_in, jr.fold_in, seed, args=(np.uint32(data),))
    key, keys = _keys(seed)
    datas = np.array([data, 0, 2**31], np.uint32)
    assert_same(xform.vmap(xr.fold_in)(keys, datas), jax.vmap(jr.fold_in)(keys, datas))
    assert_same(xr.fold_in(key, data), jr.fold_in(key, data))
    assert_same(xr.fold_in(key, np.int32(-5)), jr.fold_in(key, np.int32(-5)))


def test_key_data_round_trip():
    key = xr.PRNGKey(3)
    assert_same(xr.key_data(key), key)
    assert_same(xr.key_data(xr.wrap_key_data(xr.split(key, 4))), xr.split(key, 4))
    assert_same(xr.key_data(xr.split(key, (2, 3))), xr.split(key, (2, 3)))


def test_threefry_is_one_uint32_primitive():
    text = str(xform.make_jaxpr(lambda k: xr.split(k, 3))(np.zeros(2, np.uint32)))
    assert "threefry2x32" in text and "u32" in text
    assert "shift_right_logical" not in text  # the hash itself is inside the primitive


# --------------------------------------------------------------------------- bits, floats


@given(
    seeds,
    st.sampled_from(
        [
            ((), np.uint32),
            ((5,), np.uint8),
            ((2, 3), np.uint16),
            ((0, 4), np.uint32),
            ((2, 3), np.uint32),
        ]
    ),
)
def test_bits_matches_jax(seed, shape_dtype):
    shape, dtype = shape_dtype
    _check(xr.bits, jr.bits, seed, statics=(("shape", shape), ("dtype", dtype)))


_FLOAT_CASES = st.sampled_from(
    [
        ((), np.float32),
        ((5,), np.float16),
        ((2, 3), ml_dtypes.bfloat16),
        ((0, 4), np.float32),
        ((2, 3), np.float32),
    ]
)


@given(seeds, _FLOAT_CASES, st.floats(-10, 10, width=32), st.floats(0.125, 10, width=32))
def test_uniform_matches_jax(seed, shape_dtype, minval, width):
    shape, dtype = shape_dtype
    bounds = {"minval": np.float32(minval), "maxval": np.float32(minval + width)}
    _check(
        xr.uniform, jr.uniform, seed, statics=(("shape", shape), ("dtype", dtype)), kwargs=bounds
    )


@given(seeds, _FLOAT_CASES)
def test_normal_matches_jax(seed, shape_dtype):
    shape, dtype = shape_dtype
    _check(xr.normal, jr.normal, seed, statics=(("shape", shape), ("dtype", dtype)))


def test_uniform_array_bounds_and_default_dtype():
    key = np.asarray(jr.PRNGKey(11))
    lo, hi = np.arange(4, dtype=np.float32), np.arange(4, dtype=np.float32) * 2 + 1
    assert_same(
        xr.uniform(key, (3, 4), minval=lo, maxval=hi), jr.uniform(key, (3, 4), minval=lo, maxval=hi)
    )
    assert_same(xr.normal(key, (5,), np.complex64), jr.normal(key, (5,), np.complex64))


def test_uniform_normal_x64(x64):
    with jax.enable_x64(True):
        for seed in (0, 2**31 + 5):
            key = np.asarray(jr.PRNGKey(seed))
            assert_same(xr.normal(key, (50,)), jr.normal(key, (50,)))
            assert_same(xr.bits(key, (6,)), jr.bits(key, (6,)))


# --------------------------------------------------------------------------- integers


@st.composite
def _int_case(draw):
    shape, dtype = draw(
        st.sampled_from(
            [
                ((5,), np.int8),
                ((2, 3), np.uint8),
                ((5,), np.int16),
                ((5,), np.int32),
                ((2, 3), np.uint32),
            ]
        )
    )
    info = np.iinfo(dtype)
    # minval > maxval included (JAX returns minval there), and maxval = max + 1 for the
    # narrow types (the whole range)
    bound = st.integers(max(int(info.min), -(2**31)), min(int(info.max) + 1, 2**31 - 1))
    return shape, dtype, np.int32(draw(bound)), np.int32(draw(bound))


@given(seeds, _int_case())
def test_randint_matches_jax(seed, case):
    shape, dtype, minval, maxval = case
    _check(
        xr.randint,
        jr.randint,
        seed,
        statics=(("shape", shape), ("dtype", dtype)),
        kwargs={"minval": minval, "maxval": maxval},
    )


def test_randint_edge_cases():
    key = np.asarray(jr.PRNGKey(5))
    lo, hi = np.int32(-(2**31)), np.int32(2**31 - 1)
    for args in [
        ((5,), lo, hi, np.int32),
        ((3, 4), np.arange(4), 10, None),
        ((4,), 0.0, 9.5, None),
    ]:
        assert_same(xr.randint(key, *args), jr.randint(key, *args))
    maxs = np.arange(1, 6, dtype=np.int32)  # vmap over a bound, against the loop
    assert_same(
        xform.vmap(lambda m: xr.randint(key, (5,), 0, m))(maxs),
        np.stack([np.asarray(xr.randint(key, (5,), np.int32(0), m)) for m in maxs]),
    )


def test_randint_x64(x64):
    with jax.enable_x64(True):
        key = np.asarray(jr.PRNGKey(9))
        assert_same(
            xr.randint(key, (20,), -(2**40), 2**50), jr.randint(key, (20,), -(2**40), 2**50)
        )


# --------------------------------------------------------------------------- permutations


@given(seeds, st.sampled_from([0, 1, 7, 40]))
def test_permutation_of_int_matches_jax(seed, n):
    _check(xr.permutation, jr.permutation, seed, statics=(("x", n),))


_ARRAY = np.arange(24, dtype=np.float32).reshape(2, 3, 4)


@given(seeds, st.sampled_from([(0, False), (-1, True)]))
def test_permutation_of_array_matches_jax(seed, axis_independent):
    axis, independent = axis_independent
    _check(
        xr.permutation,
        jr.permutation,
        seed,
        (_ARRAY,),
        (("axis", axis), ("independent", independent)),
    )


def test_permutation_several_rounds():
    key = np.asarray(jr.PRNGKey(1))  # 3000 elements: two sorting rounds
    assert_same(xr.permutation(key, 3000), jr.permutation(key, 3000))


def test_jit_and_eager_vmap_paths():
    """Plain ``jit`` and eager ``vmap`` against the eager values (which the tests above hold
    equal to JAX's; they run ``jit(vmap)``)."""
    key, keys = _keys(17)
    for fn in [lambda k: xr.split(k, 3), lambda k: xr.randint(k, (4,), -3, 9)]:
        assert_same(xform.jit(fn)(key), fn(key), rtol=0, atol=0, what="jit")
        expected = np.stack([np.asarray(fn(k)) for k in keys])
        assert_same(xform.vmap(fn)(keys), expected, rtol=0, atol=0, what="vmap")


def test_choice_matches_jax():
    key = np.asarray(jr.PRNGKey(2))
    x = np.arange(20.0, dtype=np.float32).reshape(4, 5)
    p = np.array([0.25, 0.5, 0.125, 0.125], np.float32)  # cumulative sums are exact
    cases = [(10, (2, 3), False), (x, (2,), True, None, 1), (4, (6,), True, p), (x, (3,), False, p)]
    for a, shape, *rest in cases:
        assert_same(xr.choice(key, a, shape, *rest), jr.choice(key, a, shape, *rest))
    assert_same(xr.choice(key, 5, (0,)), jr.choice(key, 5, (0,)))


# --------------------------------------------------------------------------- other samplers


def test_simple_samplers_match_jax():
    key = np.asarray(jr.PRNGKey(4))
    for name in ("exponential", "laplace", "logistic", "gumbel"):
        assert_same(getattr(xr, name)(key, (4, 3)), getattr(jr, name)(key, (4, 3)), what=name)
    assert_same(xr.gumbel(key, (7,), mode="high"), jr.gumbel(key, (7,), mode="high"))
    lower = np.array([-3.0, 0.0, 1.0], np.float32)
    assert_same(xr.truncated_normal(key, lower, 2.0), jr.truncated_normal(key, lower, 2.0))


def test_bernoulli_matches_jax():
    key = np.asarray(jr.PRNGKey(6))
    p = np.linspace(0, 1, 7).astype(np.float32)
    assert_same(xr.bernoulli(key, p), jr.bernoulli(key, p))
    assert_same(xr.bernoulli(key, 0.3, (4, 7)), jr.bernoulli(key, 0.3, (4, 7)))
    assert_same(
        xr.bernoulli(key, p, (2, 7), mode="high"), jr.bernoulli(key, p, (2, 7), mode="high")
    )
    # p outside [0, 1] is no error in JAX: it saturates
    outside = np.array([1.5, -0.5, 2.0, -1.0, 0.5, 3.0, -2.0], np.float32)
    assert_same(xr.bernoulli(key, outside), jr.bernoulli(key, outside))


def test_categorical_matches_jax():
    key = np.asarray(jr.PRNGKey(8))
    logits = np.random.default_rng(0).standard_normal((3, 5)).astype(np.float32)
    for kwargs in [{}, {"axis": 0, "shape": (2, 5)}, {"shape": (2, 3), "replace": False}]:
        assert_same(
            xr.categorical(key, logits, **kwargs),
            jr.categorical(key, logits, **kwargs),
            what=str(kwargs),
        )


_N = 4000
_GAMMA_A = np.full(_N, 0.4, np.float32)


def test_gamma_family_close_to_jax():
    # JAX's algorithm; bit-equality is not promised (while loops fuse differently).
    key = np.asarray(jr.PRNGKey(10))
    a = _GAMMA_A.copy()
    a[:5] = [0.1, 0.5, 1.0, 2.5, 30.0]
    assert_same(xr.gamma(key, a), jr.gamma(key, a), rtol=1e-4, atol=1e-6)


def test_gamma_under_vmap_over_keys_and_alphas():
    key, keys = _keys(1)
    alphas = np.array([0.5, 1.0, 4.0], np.float32)
    got = xform.vmap(lambda k, al: xr.gamma(k, al, (2,)))(keys, alphas)
    expected = np.stack(
        [np.asarray(jr.gamma(k, al, (2,))) for k, al in zip(keys, alphas, strict=True)]
    )
    assert_same(got, expected, rtol=1e-4, atol=1e-6)


def test_multivariate_normal_and_orthogonal_close_to_jax():
    key = np.asarray(jr.PRNGKey(12))
    rng = np.random.default_rng(1)
    m = rng.standard_normal((4, 4)).astype(np.float32)
    cov = (m @ m.T + 4 * np.eye(4)).astype(np.float32)
    mean = rng.standard_normal(4).astype(np.float32)
    tol = {"rtol": 1e-4, "atol": 1e-4}
    for method in ("cholesky", "eigh", "svd"):
        _check(
            xr.multivariate_normal,
            jr.multivariate_normal,
            2,
            (mean, cov),
            (("shape", (3,)), ("method", method)),
            tol=tol,
        )
    for n, m_, shape in [(4, None, (2,)), (2, 5, ())]:
        q = xr.orthogonal(key, n, shape, m=m_)
        assert_same(q, jr.orthogonal(key, n, shape, m=m_), **tol)
        q = np.asarray(q)
        small = min(n, m_ or n)
        gram = q @ np.swapaxes(q, -1, -2) if n <= (m_ or n) else np.swapaxes(q, -1, -2) @ q
        np.testing.assert_allclose(gram, np.broadcast_to(np.eye(small), gram.shape), atol=1e-5)


def test_gradients_match_jax():
    key = np.asarray(jr.PRNGKey(13))
    eye = np.eye(2, dtype=np.float32)
    for xf_fn, jax_fn, arg in [
        (
            lambda m: xr.uniform(key, (5,), minval=m, maxval=4.0).sum(),
            lambda m: jr.uniform(key, (5,), minval=m, maxval=4.0).sum(),
            np.float32(1.0),
        ),
        (
            lambda c: xr.multivariate_normal(key, np.ones(2, np.float32), c).sum(),
            lambda c: jr.multivariate_normal(key, np.ones(2, np.float32), c).sum(),
            2 * eye + 0.5,
        ),
    ]:
        assert_same(xform.grad(xf_fn)(arg), jax.grad(jax_fn)(arg), rtol=1e-5, atol=1e-6)


# --------------------------------------------------------------------------- distributions


@pytest.mark.parametrize(
    "name, sample, cdf",
    [
        ("uniform", lambda k: xr.uniform(k, (_N,)), scipy_stats.uniform.cdf),
        ("normal", lambda k: xr.normal(k, (_N,)), scipy_stats.norm.cdf),
        ("exponential", lambda k: xr.exponential(k, (_N,)), scipy_stats.expon.cdf),
        ("gamma(0.4)", lambda k: xr.gamma(k, _GAMMA_A), scipy_stats.gamma(0.4).cdf),
        ("gamma(3)", lambda k: xr.gamma(k, _GAMMA_A * 7.5), scipy_stats.gamma(3.0).cdf),
        ("beta(2, 5)", lambda k: xr.beta(k, 2.0, 5.0, (_N,)), scipy_stats.beta(2.0, 5.0).cdf),
    ],
)
def test_kolmogorov_smirnov(name, sample, cdf):
    for seed in (0, 1):
        values = np.asarray(sample(xr.PRNGKey(seed)), np.float64)
        assert scipy_stats.kstest(values, cdf).pvalue > 1e-3, name


def test_dirichlet_moments():
    # (the other samplers equal JAX's values, so JAX vouches for their distributions)
    alpha = np.array([1.0, 2.0, 5.0], np.float32)
    d = np.asarray(xr.dirichlet(xr.PRNGKey(21), alpha, (_N,)))
    np.testing.assert_allclose(d.sum(-1), 1, rtol=1e-5)
    np.testing.assert_allclose(d.mean(0), alpha / alpha.sum(), atol=0.01)
    var = alpha * (alpha.sum() - alpha) / (alpha.sum() ** 2 * (alpha.sum() + 1))
    np.testing.assert_allclose(d.var(0), var, rtol=0.1)


# --------------------------------------------------------------------------- errors


def test_bad_keys():
    with pytest.raises(TypeError, match=r"`key` must be a uint32 array of shape \(2,\)"):
        xr.normal(np.zeros(3, np.uint32))
    with pytest.raises(TypeError, match=r"`key` must be a uint32 array of shape \(2,\)"):
        xr.uniform(np.zeros((), np.uint32))
    with pytest.raises(TypeError, match="`key` must have dtype uint32"):
        xr.split(np.zeros(2, np.int32))
    with pytest.raises(TypeError, match="`key` must have dtype uint32"):
        xr.randint(np.zeros(2, np.float32), (2,), 0, 3)
    with pytest.raises(ValueError, match=r"split accepts a single key.*xform.vmap"):
        xr.split(np.zeros((4, 2), np.uint32))
    with pytest.raises(TypeError, match="`key` must be a uint32 array"):
        xr.normal("key")


def test_bad_shapes_and_dtypes():
    key = xr.PRNGKey(0)
    with pytest.raises(TypeError, match="uniform: `shape` must be a tuple of ints"):
        xr.uniform(key, (3.0,))
    with pytest.raises(TypeError, match="normal: `shape` must be a tuple of ints"):
        xr.normal(key, None)
    with pytest.raises(ValueError, match="`shape` must have non-negative dimensions"):
        xr.bits(key, (-1,))
    with pytest.raises(TypeError, match="choice: `shape` must be a sequence"):
        xr.choice(key, 5, 3)
    with pytest.raises(ValueError, match=r"parameter shapes .* must broadcast to the `shape`"):
        xr.randint(key, (3,), np.zeros(4, np.int32), 5)
    with pytest.raises(ValueError, match="uniform: `dtype` must be a float dtype"):
        xr.uniform(key, (2,), np.int32)
    with pytest.raises(TypeError, match="randint: `dtype` must be an integer dtype"):
        xr.randint(key, (2,), 0, 3, np.float32)
    with pytest.raises(ValueError, match="bits: `dtype` must be an unsigned integer dtype"):
        xr.bits(key, (2,), np.int32)
    # an int shape is accepted, as in JAX
    assert_same(xr.normal(key, 3), jr.normal(np.asarray(key), 3))


def test_bad_arguments():
    key = xr.PRNGKey(0)
    with pytest.raises(TypeError, match="`seed` must be an integer"):
        xr.PRNGKey(1.5)
    with pytest.raises(TypeError, match="accepts a scalar seed"):
        xr.PRNGKey(np.array([1, 2]))
    with pytest.raises(TypeError, match="fold_in accepts a scalar `data`"):
        xr.fold_in(key, np.arange(3))
    with pytest.raises(OverflowError, match="fold_in `data`"):
        xr.fold_in(key, -1)
    with pytest.raises(TypeError, match="`p` must have a floating dtype"):
        xr.bernoulli(key, 1, (3,))
    with pytest.raises(ValueError, match="expected 'high' or 'low'"):
        xr.bernoulli(key, 0.5, mode="middle")
    with pytest.raises(TypeError, match="`x` must be an integer or at least 1-dimensional"):
        xr.permutation(key, 3.0)
    with pytest.raises(ValueError, match="cannot take a larger sample"):
        xr.choice(key, 3, (4,), replace=False)
    with pytest.raises(ValueError, match="`p` must be None or a 1-d vector"):
        xr.choice(key, 3, (2,), p=np.ones(4, np.float32) / 4)
    with pytest.raises(ValueError, match="cannot exceed number of categories"):
        xr.categorical(key, np.zeros(3, np.float32), shape=(4,), replace=False)
    with pytest.raises(ValueError, match="method must be one of"):
        xr.multivariate_normal(key, np.zeros(2), np.eye(2), method="qr")
    with pytest.raises(ValueError, match="requires cov.shape"):
        xr.multivariate_normal(key, np.zeros(2), np.eye(3))
    with pytest.raises(ValueError, match="unrecognized PRNG implementation 'philox'"):
        xr.PRNGKey(0, impl="philox")


def test_jnp_sized_keys_work_with_numpy_namespace():
    # keys are plain arrays: they index, stack and pass through xform.numpy
    keys = xr.split(xr.PRNGKey(0), 4)
    assert isinstance(keys, xnp.ndarray) and keys.shape == (4, 2) and keys.dtype == np.uint32
    assert_same(xr.normal(keys[2], (3,)), jr.normal(jnp.asarray(np.asarray(keys)[2]), (3,)))
