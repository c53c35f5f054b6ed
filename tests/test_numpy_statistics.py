"""xform.numpy statistics (quantiles, NaN-aware reductions, ...) against jax.numpy: values,
shapes, dtypes and weak types eagerly and under jit; grad and vmap of a few; error types."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import xform
import xform.numpy as xnp
from tests.harness import assert_same, call_id, check_against_jax, check_vmap

_rng = np.random.default_rng(0)
A = _rng.standard_normal((3, 4, 5)).astype(np.float32)
A_NAN = A.copy()
A_NAN[0, 1, :] = np.nan
A_NAN[1, 2, 3] = np.nan
W = _rng.uniform(0, 2, (3, 4, 5)).astype(np.float32)
Q1 = np.array([0.0, 0.25, 0.5, 1.0], np.float32)
I8 = np.arange(-3, 5, dtype=np.int8)
SPECIAL = np.array([1.0, np.nan, np.inf, -np.inf, 2.0], np.float32)
COUNTS = np.array([0, 3, 1, 1, 7, 2], np.int32)
EDGES = np.array([0.0, 1.0, 2.5, 4.0], np.float32)
X = _rng.uniform(-1, 5, (3, 4)).astype(np.float32)
X[0, 0] = 1.0  # on an edge
XP = np.array([0.0, 1.0, 2.0, 4.0], np.float32)
FP = np.array([1.0, 3.0, -1.0, 0.0], np.float32)
M = _rng.standard_normal((3, 6)).astype(np.float32)
Y = _rng.standard_normal((2, 6)).astype(np.float32)
FW = np.array([1, 2, 0, 3, 1, 1])
AW = _rng.uniform(0, 1, 6).astype(np.float32)
SAMPLE = _rng.standard_normal((20, 3)).astype(np.float32)
SAMPLE[0, 0] = SAMPLE[:, 0].max() + 1  # on the last edge
AW20 = _rng.uniform(0, 1, 20).astype(np.float32)


def _case(name, *args, jit=True, **kwargs):
    return pytest.param(name, args, kwargs, jit, id=call_id(name, args, kwargs))


CASES = [
    # Every method eagerly; under jit (a compile each) only where the code paths differ.
    *[
        _case(f, A, q, axis=ax, method=m, keepdims=kd, jit=kd)
        for f in ("quantile", "nanquantile")
        for m in ("linear", "lower", "higher", "midpoint", "nearest", "inverted_cdf")
        for ax, kd, q in ((None, False, 0.3), (1, True, Q1), ((0, 2), False, Q1))
    ],
    _case("nanquantile", A_NAN, Q1, axis=2),
    _case("quantile", A_NAN, 0.5, axis=2),
    _case("nanquantile", A_NAN, Q1, axis=2, method="inverted_cdf", weights=W),
    _case("quantile", A, 0.4, axis=1, method="inverted_cdf", weights=W[0, :, 0]),
    _case("percentile", A, 30, axis=0),
    _case("percentile", I8, Q1 * 100),
    _case("nanpercentile", A_NAN, 75.0, axis=(1, 2), keepdims=True),
    _case("median", A),
    _case("median", A, axis=(0, 1), keepdims=True),
    _case("median", I8),
    _case("median", 2.5),
    _case("nanmedian", A_NAN, axis=1),
    _case("nanmedian", 3),
    *[
        _case(f, x, axis=ax, keepdims=kd, jit=kd)
        for f in ("nanmean", "nanvar", "nanstd", "nanprod")
        for x, ax, kd in (
            (A_NAN, None, False),
            (A_NAN, (0, 2), True),
            (I8, 0, False),
            (2.5, None, False),
        )
    ],
    _case("nanvar", A_NAN, axis=1, ddof=1),
    _case("nanstd", A_NAN, axis=2, ddof=4),
    _case("nanmean", A_NAN, axis=0, where=A > 0),
    *[
        _case(f, x, axis=ax, jit=ax == 2)
        for f in ("nancumsum", "nancumprod", "nanargmax", "nanargmin")
        for x, ax in ((A_NAN, None), (A_NAN, 2), (I8, 0))
    ],
    _case("nanargmax", A_NAN, axis=2, keepdims=True),
    _case("nan_to_num", SPECIAL),
    _case("nan_to_num", SPECIAL, nan=3.0, posinf=9),
    _case("nan_to_num", SPECIAL.astype(np.complex64) * (1 + 1j)),
    _case("nan_to_num", 2.5),
    _case("nan_to_num", I8),
    _case("bincount", COUNTS, minlength=10, jit=False),
    _case("bincount", COUNTS, length=4),
    _case("bincount", COUNTS, weights=A[0, :2, :3].ravel(), jit=False),
    _case("bincount", COUNTS > 1, length=3, jit=False),
    *[_case("digitize", X, b, right=r, jit=r) for b in (EDGES, EDGES[::-1]) for r in (False, True)],
    _case("digitize", X, np.zeros(0), jit=False),
    _case("digitize", I8, np.array([1, 3])),
    _case("histogram_bin_edges", X),
    _case("histogram_bin_edges", X, 5, range=(0, 2), jit=False),
    _case("histogram_bin_edges", I8, EDGES),
    _case("histogram", X),
    _case("histogram", X, EDGES, jit=False),
    _case("histogram", X, 4, density=True, jit=False),
    _case("histogram", X, 3, weights=X * 2, jit=False),
    _case("histogram", np.ones(3), 2, jit=False),
    _case("interp", X, XP, FP),
    _case("interp", X, XP, FP, left=-5, right=9.0, jit=False),
    _case("interp", X, XP, FP, left="extrapolate", right="extrapolate"),
    _case("interp", X, XP, FP, period=3),
    _case("interp", 2.5, XP, FP, jit=False),
    _case("interp", I8, np.arange(3), np.arange(3), jit=False),
    *[
        _case(f, *args, jit=len(args) > 1, **kw)
        for f in ("cov", "corrcoef")
        for args, kw in (
            ((M,), {}),
            ((M, Y), {}),
            ((M.T,), {"rowvar": False}),
            ((M[0],), {}),
            ((I8,), {}),
            ((M, Y[0]), {}),
            (((M + 1j * M[::-1]).astype(np.complex64),), {}),
        )
    ],
    _case("cov", M, bias=True, jit=False),
    _case("cov", M, ddof=2, jit=False),
    _case("cov", M, fweights=FW, jit=False),
    _case("cov", M, aweights=AW, jit=False),
    _case("cov", M, fweights=FW, aweights=AW),
    _case("cov", M, fweights=FW, aweights=AW, ddof=0, jit=False),
    _case("cov", np.zeros((2, 0)), jit=False),
    _case("histogramdd", SAMPLE),
    _case("histogramdd", SAMPLE, [2, 3, 4], jit=False),
    _case("histogramdd", SAMPLE, 4, weights=AW20, density=True, jit=False),
    _case("histogramdd", SAMPLE, (EDGES - 2, 3, 2), range=[None, (-1, 1), None], jit=False),
    _case("histogram2d", SAMPLE[:, 0], SAMPLE[:, 1]),
    _case("histogram2d", SAMPLE[:, 0], SAMPLE[:, 1], 5, density=True, jit=False),
    _case("histogram2d", SAMPLE[:, 0], SAMPLE[:, 1], [3, 4], weights=AW20, jit=False),
    _case("histogram2d", SAMPLE[:, 0], SAMPLE[:, 1], EDGES - 2, jit=False),
]


@pytest.mark.parametrize(("name", "args", "kwargs", "jit"), CASES)
def test_against_jax(name, args, kwargs, jit):
    check_against_jax(
        getattr(xnp, name), getattr(jnp, name), *args, rtol=1e-6, atol=1e-6, jit=jit, **kwargs
    )


@pytest.mark.parametrize(
    ("name", "kwargs"),
    [
        ("quantile", {"q": Q1, "axis": 1}),
        ("quantile", {"q": 0.3, "method": "nearest"}),
        ("median", {"axis": (0, 2)}),
        ("nanquantile", {"q": 0.7, "axis": 2}),
        ("nanmean", {"axis": 1}),
        ("nanvar", {"axis": 2}),
        ("nanstd", {}),
        ("nan_to_num", {}),
        ("interp", {"xp": XP, "fp": FP}),
        ("cov", {}),
        ("corrcoef", {}),
    ],
)
def test_grad(name, kwargs):
    x = {"interp": X, "cov": M, "corrcoef": M}.get(name, A_NAN if name.startswith("nan") else A)

    def loss(mod):
        return lambda a: mod.sum(mod.sin(getattr(mod, name)(a, **kwargs)))

    got = xform.grad(loss(xnp))(x)
    expected = jax.grad(loss(jnp))(x)
    assert_same(got, expected, 1e-5, 1e-6)


def test_grad_interp_values():
    def loss(mod):
        return lambda fp, x: mod.sum(mod.interp(x, XP, fp, left="extrapolate") ** 2)

    got = xform.grad(loss(xnp), argnums=(0, 1))(FP, X)
    assert_same(got, jax.grad(loss(jnp), argnums=(0, 1))(FP, X), 1e-5, 1e-6)


def test_bincount_under_jit():
    got = xform.jit(lambda x: xnp.bincount(x, length=5))(COUNTS)
    assert_same(got, jnp.bincount(COUNTS, length=5))
    with pytest.raises(xform.errors.ConcretizationTypeError, match="length"):
        xform.jit(xnp.bincount)(COUNTS)
    with pytest.raises(jax.errors.ConcretizationTypeError):
        jax.jit(jnp.bincount)(COUNTS)


def test_vmap():
    check_vmap(
        lambda a: xnp.quantile(a, Q1, axis=1),
        lambda a: jnp.quantile(a, Q1, axis=1),
        (A,),
        rtol=1e-6,
        atol=1e-6,
    )
    check_vmap(
        xnp.nanquantile, jnp.nanquantile, (A_NAN, np.float32([0.1, 0.5, 0.9])), rtol=1e-6, atol=1e-6
    )
    check_vmap(
        lambda a: xnp.nanmean(a, 0),
        lambda a: jnp.nanmean(a, 0),
        (A_NAN,),
        2,
        rtol=1e-6,
        atol=1e-6,
        jit=False,
    )


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda m: m.quantile(A, 0.5, method="bogus"), ValueError, "method"),
        (lambda m: m.quantile(A, np.ones((2, 2)) / 2), ValueError, "rank"),
        (lambda m: m.quantile(A.astype(np.complex64), 0.5), ValueError, "complex"),
        (lambda m: m.quantile(A, 0.5, weights=W), NotImplementedError, "weights"),
        (
            lambda m: m.quantile(A, 0.5, method="inverted_cdf", weights=W[0]),
            ValueError,
            "Weights shape",
        ),
        (lambda m: m.quantile(A, 0.5, axis=3), ValueError, "out of bounds"),
        (lambda m: m.quantile(A, 0.5, overwrite_input=True), ValueError, "overwrite_input"),
        (lambda m: m.median([1.0, 2.0]), TypeError, "median"),
        (lambda m: m.nanmean(A, out=A), NotImplementedError, "out"),
        (lambda m: m.bincount(X), TypeError, "integer"),
        (lambda m: m.bincount(COUNTS[None]), ValueError, "1-dimensional"),
        (lambda m: m.digitize(X, M), ValueError, "1-dimensional"),
        (lambda m: m.histogram_bin_edges(X, "auto"), NotImplementedError, "string"),
        (lambda m: m.histogram(X, weights=M), ValueError, "shape"),
        (lambda m: m.interp(X, XP, FP[:3]), ValueError, "equal size"),
        (lambda m: m.interp(X, XP, FP, left="nope"), ValueError, "extrapolate"),
        (lambda m: m.interp(X, XP, FP, period=XP), ValueError, "scalar"),
        (lambda m: m.cov(A), ValueError, "2 dimensions"),
        (lambda m: m.histogramdd(SAMPLE, [2, 3]), ValueError, "each dimension"),
        (lambda m: m.histogramdd(SAMPLE, weights=AW), ValueError, "one weight"),
        (lambda m: m.histogramdd(SAMPLE, range=[(0, 1)]), ValueError, "range"),
        (lambda m: m.cov(M, fweights=AW), TypeError, "integer"),
        (lambda m: m.cov(M, aweights=AW[:3]), RuntimeError, "incompatible"),
        (lambda m: m.corrcoef(M, dtype=np.int32), ValueError, "dtype"),
    ],
)
def test_errors(call, error, match):
    with pytest.raises(error):
        call(jnp)
    with pytest.raises(error, match=match):
        call(xnp)
