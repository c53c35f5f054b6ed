"""xform.scipy.special and xform.scipy.stats.norm against jax.scipy: values (eager, jit,
float32/float64), check_grads to order 2, JAX's gradients at extreme inputs, vmap, errors."""

import functools

import jax
import jax.scipy.special as jsp
import jax.scipy.stats.norm as jnorm
import numpy as np
import pytest

import xform
from tests.harness import assert_same, check_vmap
from xform.scipy import special as xsp
from xform.scipy.stats import norm as xnorm
from xform.test_util import check_grads

_WIDE = [-30.0, -6.0, -2.5, -1.0, -0.3, 0.0, 0.2, 0.9, 2.0, 4.5, 9.0, 30.0]
_UNIT = [0.0, 1e-30, 1e-12, 1e-3, 0.05, 0.13, 0.5, 0.8, 0.9, 0.999, 1 - 1e-7, 1.0]

# name -> (xform function, jax function, test values, smooth points for check_grads).
UNARY = {
    "erf": (xsp.erf, jsp.erf, _WIDE, [-1.3, 0.2, 0.9]),
    "erfc": (xsp.erfc, jsp.erfc, _WIDE, [-1.3, 0.2, 0.9]),
    "erfinv": (xsp.erfinv, jsp.erfinv, [-1.0, -0.999, -0.5, 0.0, 0.3, 0.9, 0.99999, 1.0],
               [-0.7, 0.1, 0.6]),
    "expit": (xsp.expit, jsp.expit, _WIDE + [-100.0, 100.0], [-3.0, 0.2, 2.5]),
    "logit": (xsp.logit, jsp.logit, _UNIT, [0.1, 0.45, 0.8]),
    "gammaln": (xsp.gammaln, jsp.gammaln, [-2.5, -0.5, 0.1, 0.5, 1.0, 2.0, 3.7, 30.0],
                [-1.5, 0.4, 2.3]),
    "digamma": (xsp.digamma, jsp.digamma, [-2.5, -0.5, 0.1, 0.5, 1.0, 2.0, 3.7, 30.0],
                [-1.5, 0.4, 2.3]),
    "entr": (xsp.entr, jsp.entr, [-1.0, 0.0, 1e-20, 0.3, 1.0, 2.5], [0.2, 0.7, 2.0]),
    "ndtr": (xsp.ndtr, jsp.ndtr, _WIDE, [-1.3, 0.2, 0.9]),
    "log_ndtr": (xsp.log_ndtr, jsp.log_ndtr, _WIDE + [-100.0, -12.0, 6.0],
                 [-25.0, -12.0, -1.3, 0.2, 5.5, 9.0]),
    "log_ndtr_order_0": (functools.partial(xsp.log_ndtr, series_order=0),
                         functools.partial(jsp.log_ndtr, series_order=0), _WIDE, None),
    "log_ndtr_order_5": (functools.partial(xsp.log_ndtr, series_order=5),
                         functools.partial(jsp.log_ndtr, series_order=5), _WIDE, None),
    "ndtri": (xsp.ndtri, jsp.ndtri, _UNIT, [0.02, 0.3, 0.6, 0.97]),
}
# Functions of several arrays, with their arguments (values and check_grads points).
_XY = (np.array([0.0, 0.0, 0.0, 1.5, -2.0, 3.0]), np.array([0.0, 2.0, -0.5, 0.5, 3.0, 1e-3]))
_X3 = (np.array(_WIDE[1:-1]), np.array(1.0), np.array(2.0))
NARY = {
    "xlogy": (xsp.xlogy, jsp.xlogy, _XY, (np.array([0.3, -1.2]), np.array([0.7, 2.5]))),
    "xlog1py": (xsp.xlog1py, jsp.xlog1py, (_XY[0], _XY[1] - 1),
                (np.array([0.3, -1.2]), np.array([-0.3, 1.5]))),
    "norm.pdf": (xnorm.pdf, jnorm.pdf, _X3, (np.array([-1.0, 0.5]), 0.3, 1.7)),
    "norm.logpdf": (xnorm.logpdf, jnorm.logpdf, _X3, (np.array([-1.0, 0.5]), 0.3, 1.7)),
    "norm.cdf": (xnorm.cdf, jnorm.cdf, _X3, (np.array([-1.0, 0.5]), 0.3, 1.7)),
    "norm.logcdf": (xnorm.logcdf, jnorm.logcdf, _X3, (np.array([-1.0, 0.5]), 0.3, 1.7)),
    "norm.sf": (xnorm.sf, jnorm.sf, _X3, (np.array([-1.0, 0.5]), 0.3, 1.7)),
    "norm.logsf": (xnorm.logsf, jnorm.logsf, _X3, (np.array([-1.0, 0.5]), 0.3, 1.7)),
    "norm.ppf": (xnorm.ppf, jnorm.ppf, (np.array(_UNIT[1:-1]), np.array(1.0), np.array(2.0)),
                 (np.array([0.2, 0.7]), 0.3, 1.7)),
    "norm.isf": (xnorm.isf, jnorm.isf, (np.array(_UNIT[1:-1]), np.array(1.0), np.array(2.0)),
                 (np.array([0.2, 0.7]), 0.3, 1.7)),
}


def _cast(args, dtype):
    return tuple(np.asarray(a, dtype) for a in args)


def _tables(dtype):
    """(xform table, jax table, arguments per name): every function of one or more arrays."""
    xfs = {k: v[0] for k, v in {**UNARY, **NARY}.items()}
    jfs = {k: v[1] for k, v in {**UNARY, **NARY}.items()}
    args = {k: (np.asarray(v[2], dtype),) for k, v in UNARY.items()}
    args.update({k: _cast(v[2], dtype) for k, v in NARY.items()})
    return xfs, jfs, args


def check_table(dtype, rtol, atol, jit):
    """Every function against JAX's, eagerly and under one ``xform.jit`` of all of them; the
    oracle is one ``jax.jit`` of all of them (one compile each: compiles dominate here)."""
    xfs, jfs, args = _tables(dtype)
    expected = jax.jit(lambda a: {k: f(*a[k]) for k, f in jfs.items()})(args)
    got_jit = xform.jit(lambda a: {k: f(*a[k]) for k, f in xfs.items()})(args) if jit else {}
    for name, xf in xfs.items():
        assert_same(xf(*args[name]), expected[name], rtol, atol, what=f"{name}, eager")
        if jit:
            assert_same(got_jit[name], expected[name], rtol, atol, what=f"{name}, jit")


# --------------------------------------------------------------------------- values


def test_values_f32():
    check_table(np.float32, rtol=2e-6, atol=1e-7, jit=True)


def test_values_f64(x64):
    with jax.enable_x64(True):
        check_table(np.float64, rtol=1e-13, atol=1e-300, jit=False)


def test_xlogy_at_zero():
    # 0 log 0 == 0; NaN in y still propagates, as in SciPy.
    assert float(xsp.xlogy(0.0, 0.0)) == 0.0
    assert float(xsp.xlog1py(0.0, -1.0)) == 0.0
    assert np.isnan(float(xsp.xlogy(0.0, np.nan)))
    assert float(xsp.entr(0.0)) == 0.0


# --------------------------------------------------------------------------- gradients


# A truncated asymptotic series is not differentiable to the exact derivative its rule gives.
@pytest.mark.parametrize("name", [k for k, v in UNARY.items() if v[3] is not None])
def test_unary_check_grads(name, x64):
    xf, _, _, points = UNARY[name]
    check_grads(xf, (np.asarray(points, np.float64),), order=2)


@pytest.mark.parametrize("name", NARY)
def test_nary_check_grads(name, x64):
    xf, _, _, points = NARY[name]
    check_grads(xf, tuple(np.asarray(p, np.float64) for p in points), order=2)


def _grads(xf, jf, *args, argnums=0):
    got = xform.grad(lambda *a: xf(*a).sum(), argnums)(*args)
    expected = jax.jit(jax.grad(lambda *a: jf(*a).sum(), argnums))(*args)
    return got, expected


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_log_ndtr_tails(dtype):
    # Far in the lower tail log(ndtr) would be log(0); the asymptotic series stays finite and
    # so does its derivative (about -x), as JAX's.
    x = np.array([-1e3, -100.0, -38.0, -21.0, -19.0, -11.0, -9.0, 5.5, 8.5, 40.0], dtype)
    with jax.enable_x64(dtype == np.float64), xform.enable_x64(dtype == np.float64):
        got, expected = _grads(xsp.log_ndtr, jsp.log_ndtr, x)
        assert np.all(np.isfinite(np.asarray(xsp.log_ndtr(x))))
        assert np.all(np.isfinite(np.asarray(got)))
        assert_same(got, expected, rtol=1e-6 if dtype == np.float32 else 1e-13, atol=0)
        np.testing.assert_allclose(np.asarray(got)[:2], [1e3, 100.0], rtol=2e-3)


def test_xlogy_grads_at_zero_equal_jax():
    # At x == 0 the derivative in x is log(y) (-inf at y == 0) and in y is x / y, as JAX's.
    x, y = np.array([0.0, 0.0, 0.0], np.float32), np.array([0.0, 2.0, 0.5], np.float32)
    for xf, jf, y_arg in ((xsp.xlogy, jsp.xlogy, y), (xsp.xlog1py, jsp.xlog1py, y - 1)):
        got, expected = _grads(xf, jf, x, y_arg, argnums=(0, 1))
        assert_same(got, expected, check_weak_type=False)
        assert np.all(np.isfinite(np.asarray(got[0])[1:])), got
    got, expected = _grads(xsp.entr, jsp.entr, np.array([0.0, 0.5], np.float32))
    assert_same(got, expected)


def test_second_derivatives_of_gammaln_and_digamma(x64):
    # lax.digamma has no derivative rule; these go through a trigamma written here.
    x = np.array([-2.5, -0.5, 1e-3, 0.5, 1.0, 3.7, 30.0, 1e4])
    with jax.enable_x64(True):
        for xf, jf in ((xsp.gammaln, jsp.gammaln), (xsp.digamma, jsp.digamma)):
            got = xform.grad(lambda v, xf=xf: xform.grad(lambda u: xf(u).sum())(v).sum())(x)
            expected = jax.jit(jax.grad(lambda v, jf=jf: jax.grad(
                lambda u: jf(u).sum())(v).sum()))(x)
            assert_same(got, expected, rtol=1e-12, atol=0)


def test_scalar_grads_at_extremes():
    cases = {"expit": [-100.0, 100.0], "logit": [1e-6, 1 - 1e-6], "ndtr": [-30.0, 30.0],
             "ndtri": [1e-30, 0.5, 1 - 1e-7], "erfinv": [-0.999999, 0.999999],
             "gammaln": [-2.5, 1e-3, 1.0, 1e4], "digamma": [-2.5, -0.3, 1e-3, 1.0, 1e4]}
    for name, values in cases.items():
        xf, jf = UNARY[name][:2]
        got, expected = _grads(xf, jf, np.asarray(values, np.float32))
        assert np.all(np.isfinite(np.asarray(got))), name
        assert_same(got, expected, rtol=1e-5, atol=0, what=name)


# --------------------------------------------------------------------------- logsumexp

_A = np.array([[0.5, -1.0, 2.0, 1000.0], [3.0, 3.0, -np.inf, 0.25], [1.0, 2.0, 3.0, 4.0]],
              np.float32)
_B = np.array([[1.0, -2.0, 0.5, 0.0], [-1.0, 1.0, 3.0, 2.0], [-0.5, -0.5, 1.0, -4.0]],
              np.float32)
_WHERE = np.array([[True, True, False, True], [True, True, True, False],
                   [False, True, True, True]])
LOGSUMEXP_CASES = {
    "all": {}, "axis 0": {"axis": 0}, "axis -1 keepdims": {"axis": -1, "keepdims": True},
    "axes (0, 1)": {"axis": (0, 1)},
    "b": {"b": np.abs(_B)}, "b negative": {"b": _B, "axis": 1},
    "b negative, sign": {"b": _B, "axis": 1, "return_sign": True},
    "b scalar": {"b": np.float32(2.0), "axis": 0},
    "sign": {"axis": 0, "return_sign": True},
    "where": {"where": _WHERE, "axis": 1}, "where, b": {"where": _WHERE, "b": _B, "axis": 0},
}


def test_logsumexp_options():
    expected = jax.jit(lambda a: {k: jsp.logsumexp(a, **kw)
                                  for k, kw in LOGSUMEXP_CASES.items()})(_A)
    got_jit = xform.jit(lambda a: {k: xsp.logsumexp(a, **kw)
                                   for k, kw in LOGSUMEXP_CASES.items()})(_A)
    for name, kwargs in LOGSUMEXP_CASES.items():
        assert_same(xsp.logsumexp(_A, **kwargs), expected[name], 2e-6, 1e-6, what=name)
        assert_same(got_jit[name], expected[name], 2e-6, 1e-6, what=f"{name}, jit")
    # A negative sum is NaN without return_sign, and (log|s|, -1) with it.
    out, sign = xsp.logsumexp(np.array([0.0, 1.0]), b=np.array([1.0, -2.0]), return_sign=True)
    assert float(sign) == -1.0 and np.isclose(float(out), np.log(2 * np.e - 1))
    assert np.isnan(float(xsp.logsumexp(np.array([0.0, 1.0]), b=np.array([1.0, -2.0]))))


def test_logsumexp_grads():
    a = np.array([[1000.0, 1000.0, -3.0], [0.5, -1.0, 2.0]], np.float32)
    b = np.array([[1.0, 2.0, -1.0], [-0.5, 1.0, 3.0]], np.float32)

    def xf(a, b):
        out, sign = xsp.logsumexp(a, axis=1, b=b, return_sign=True)
        return (out * sign).sum() + xsp.logsumexp(a)

    def jf(a, b):
        out, sign = jsp.logsumexp(a, axis=1, b=b, return_sign=True)
        return (out * sign).sum() + jsp.logsumexp(a)

    got = xform.grad(xf, (0, 1))(a, b)
    expected = jax.jit(jax.grad(jf, (0, 1)))(a, b)
    assert all(np.all(np.isfinite(np.asarray(g))) for g in got)
    assert_same(got, expected, rtol=1e-6, atol=1e-7)


def test_logsumexp_check_grads(x64):
    a = np.random.default_rng(0).standard_normal((3, 4))
    b = np.random.default_rng(1).uniform(0.5, 2.0, (3, 4))
    check_grads(lambda a: xsp.logsumexp(a, axis=1), (a,), order=2)
    check_grads(lambda a, b: xsp.logsumexp(a, axis=0, b=b, keepdims=True), (a, b), order=2)
    check_grads(lambda a: xsp.logsumexp(a, axis=1, b=-b, return_sign=True)[0], (a,), order=2)


# --------------------------------------------------------------------------- vmap


def test_vmap():
    a = np.random.default_rng(2).standard_normal((4, 3, 5)).astype(np.float32)
    check_vmap(functools.partial(xsp.logsumexp, axis=0),
               jax.jit(functools.partial(jsp.logsumexp, axis=0)), (a,), in_axes=1,
               rtol=2e-6, atol=1e-6, jit=False)
    x, y = np.array([0.0, 1.0, 2.0], np.float32), np.array([[0.0, 0.5, 3.0]] * 2, np.float32)
    check_vmap(xsp.xlogy, jax.jit(jsp.xlogy), (x, y), in_axes=(None, 0), jit=False)
    p = np.array([[1e-20, 0.3], [0.5, 0.999]], np.float32)
    check_vmap(xsp.ndtri, jax.jit(jsp.ndtri), (p,), rtol=2e-6, atol=1e-7, jit=False)
    check_vmap(xform.grad(xsp.log_ndtr), jax.jit(jax.grad(jsp.log_ndtr)),
               (np.array([-50.0, -3.0, 0.0, 7.0], np.float32),), rtol=1e-6, jit=False)


# --------------------------------------------------------------------------- errors


def test_errors():
    with pytest.raises(TypeError, match="ndtr.*int32"):
        xsp.ndtr(np.array([1, 2], np.int32))
    with pytest.raises(TypeError, match="ndtri.*int32"):
        xsp.ndtri(np.array([1], np.int32))
    with pytest.raises(TypeError, match="series_order"):
        xsp.log_ndtr(1.0, series_order=1.5)
    with pytest.raises(ValueError, match="series_order"):
        xsp.log_ndtr(1.0, series_order=-1)
    with pytest.raises(ValueError, match="series_order"):
        xsp.log_ndtr(1.0, series_order=31)
    with pytest.raises(TypeError, match="log_ndtr.*int32"):
        xsp.log_ndtr(np.array([1], np.int32))
    with pytest.raises(ValueError, match="complex"):
        xsp.entr(np.array([1j]))
    with pytest.raises(TypeError, match="logsumexp"):
        xsp.logsumexp([1.0, 2.0])
    with pytest.raises(ValueError, match="out of bounds"):
        xsp.logsumexp(np.ones((2, 3)), axis=2)
