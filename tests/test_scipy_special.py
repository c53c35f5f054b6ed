"""xform.scipy.special and xform.scipy.stats.norm against jax.scipy: values (eager, jit,
float32/float64), check_grads to order 2, JAX's gradients at extreme inputs, vmap, errors."""

import functools
import inspect

import jax
import jax.scipy.special as jsp
import jax.scipy.stats.norm as jnorm
import numpy as np
import pytest
import scipy.special as osp

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
    "erfinv": (
        xsp.erfinv,
        jsp.erfinv,
        [-1.0, -0.999, -0.5, 0.0, 0.3, 0.9, 0.99999, 1.0],
        [-0.7, 0.1, 0.6],
    ),
    "expit": (xsp.expit, jsp.expit, _WIDE + [-100.0, 100.0], [-3.0, 0.2, 2.5]),
    "logit": (xsp.logit, jsp.logit, _UNIT, [0.1, 0.45, 0.8]),
    "gammaln": (
        xsp.gammaln,
        jsp.gammaln,
        [-2.5, -0.5, 0.1, 0.5, 1.0, 2.0, 3.7, 30.0],
        [-1.5, 0.4, 2.3],
    ),
    "digamma": (
        xsp.digamma,
        jsp.digamma,
        [-2.5, -0.5, 0.1, 0.5, 1.0, 2.0, 3.7, 30.0],
        [-1.5, 0.4, 2.3],
    ),
    "entr": (xsp.entr, jsp.entr, [-1.0, 0.0, 1e-20, 0.3, 1.0, 2.5], [0.2, 0.7, 2.0]),
    "ndtr": (xsp.ndtr, jsp.ndtr, _WIDE, [-1.3, 0.2, 0.9]),
    "log_ndtr": (
        xsp.log_ndtr,
        jsp.log_ndtr,
        _WIDE + [-100.0, -12.0, 6.0],
        [-25.0, -12.0, -1.3, 0.2, 5.5, 9.0],
    ),
    "log_ndtr_order_0": (
        functools.partial(xsp.log_ndtr, series_order=0),
        functools.partial(jsp.log_ndtr, series_order=0),
        _WIDE,
        None,
    ),
    "log_ndtr_order_5": (
        functools.partial(xsp.log_ndtr, series_order=5),
        functools.partial(jsp.log_ndtr, series_order=5),
        _WIDE,
        None,
    ),
    "ndtri": (xsp.ndtri, jsp.ndtri, _UNIT, [0.02, 0.3, 0.6, 0.97]),
}
# Functions of several arrays, with their arguments (values and check_grads points).
_XY = (np.array([0.0, 0.0, 0.0, 1.5, -2.0, 3.0]), np.array([0.0, 2.0, -0.5, 0.5, 3.0, 1e-3]))
_X3 = (np.array(_WIDE[1:-1]), np.array(1.0), np.array(2.0))
NARY = {
    "xlogy": (xsp.xlogy, jsp.xlogy, _XY, (np.array([0.3, -1.2]), np.array([0.7, 2.5]))),
    "xlog1py": (
        xsp.xlog1py,
        jsp.xlog1py,
        (_XY[0], _XY[1] - 1),
        (np.array([0.3, -1.2]), np.array([-0.3, 1.5])),
    ),
    "norm.pdf": (xnorm.pdf, jnorm.pdf, _X3, (np.array([-1.0, 0.5]), 0.3, 1.7)),
    "norm.logpdf": (xnorm.logpdf, jnorm.logpdf, _X3, (np.array([-1.0, 0.5]), 0.3, 1.7)),
    "norm.cdf": (xnorm.cdf, jnorm.cdf, _X3, (np.array([-1.0, 0.5]), 0.3, 1.7)),
    "norm.logcdf": (xnorm.logcdf, jnorm.logcdf, _X3, (np.array([-1.0, 0.5]), 0.3, 1.7)),
    "norm.sf": (xnorm.sf, jnorm.sf, _X3, (np.array([-1.0, 0.5]), 0.3, 1.7)),
    "norm.logsf": (xnorm.logsf, jnorm.logsf, _X3, (np.array([-1.0, 0.5]), 0.3, 1.7)),
    "norm.ppf": (
        xnorm.ppf,
        jnorm.ppf,
        (np.array(_UNIT[1:-1]), np.array(1.0), np.array(2.0)),
        (np.array([0.2, 0.7]), 0.3, 1.7),
    ),
    "norm.isf": (
        xnorm.isf,
        jnorm.isf,
        (np.array(_UNIT[1:-1]), np.array(1.0), np.array(2.0)),
        (np.array([0.2, 0.7]), 0.3, 1.7),
    ),
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
            expected = jax.jit(jax.grad(lambda v, jf=jf: jax.grad(lambda u: jf(u).sum())(v).sum()))(
                x
            )
            assert_same(got, expected, rtol=1e-12, atol=0)


def test_scalar_grads_at_extremes():
    cases = {
        "expit": [-100.0, 100.0],
        "logit": [1e-6, 1 - 1e-6],
        "ndtr": [-30.0, 30.0],
        "ndtri": [1e-30, 0.5, 1 - 1e-7],
        "erfinv": [-0.999999, 0.999999],
        "gammaln": [-2.5, 1e-3, 1.0, 1e4],
        "digamma": [-2.5, -0.3, 1e-3, 1.0, 1e4],
    }
    for name, values in cases.items():
        xf, jf = UNARY[name][:2]
        got, expected = _grads(xf, jf, np.asarray(values, np.float32))
        assert np.all(np.isfinite(np.asarray(got))), name
        assert_same(got, expected, rtol=1e-5, atol=0, what=name)


# --------------------------------------------------------------------------- logsumexp

_A = np.array(
    [[0.5, -1.0, 2.0, 1000.0], [3.0, 3.0, -np.inf, 0.25], [1.0, 2.0, 3.0, 4.0]], np.float32
)
_B = np.array([[1.0, -2.0, 0.5, 0.0], [-1.0, 1.0, 3.0, 2.0], [-0.5, -0.5, 1.0, -4.0]], np.float32)
_WHERE = np.array([[True, True, False, True], [True, True, True, False], [False, True, True, True]])
LOGSUMEXP_CASES = {
    "all": {},
    "axis 0": {"axis": 0},
    "axis -1 keepdims": {"axis": -1, "keepdims": True},
    "axes (0, 1)": {"axis": (0, 1)},
    "b": {"b": np.abs(_B)},
    "b negative": {"b": _B, "axis": 1},
    "b negative, sign": {"b": _B, "axis": 1, "return_sign": True},
    "b scalar": {"b": np.float32(2.0), "axis": 0},
    "sign": {"axis": 0, "return_sign": True},
    "where": {"where": _WHERE, "axis": 1},
    "where, b": {"where": _WHERE, "b": _B, "axis": 0},
}


def test_logsumexp_options():
    expected = jax.jit(lambda a: {k: jsp.logsumexp(a, **kw) for k, kw in LOGSUMEXP_CASES.items()})(
        _A
    )
    got_jit = xform.jit(lambda a: {k: xsp.logsumexp(a, **kw) for k, kw in LOGSUMEXP_CASES.items()})(
        _A
    )
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
    check_vmap(
        functools.partial(xsp.logsumexp, axis=0),
        jax.jit(functools.partial(jsp.logsumexp, axis=0)),
        (a,),
        in_axes=1,
        rtol=2e-6,
        atol=1e-6,
        jit=False,
    )
    x, y = np.array([0.0, 1.0, 2.0], np.float32), np.array([[0.0, 0.5, 3.0]] * 2, np.float32)
    check_vmap(xsp.xlogy, jax.jit(jsp.xlogy), (x, y), in_axes=(None, 0), jit=False)
    p = np.array([[1e-20, 0.3], [0.5, 0.999]], np.float32)
    check_vmap(xsp.ndtri, jax.jit(jsp.ndtri), (p,), rtol=2e-6, atol=1e-7, jit=False)
    check_vmap(
        xform.grad(xsp.log_ndtr),
        jax.jit(jax.grad(jsp.log_ndtr)),
        (np.array([-50.0, -3.0, 0.0, 7.0], np.float32),),
        rtol=1e-6,
        jit=False,
    )


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


# --------------------------------------------------------------------------- the rest of the module

# JAX's compiles of these (igamma's loops, expn's three loops, per function) cost far more than
# this file's budget, so the values are checked against SciPy in float64 on the host, and the
# dtypes and weak types against ``jax.eval_shape`` of JAX's function (a trace, no compile).
# name -> (xform function, jax function, scipy function, arguments, argnums for the gradient
# test against jax.grad or None). Grids hold poles, zeros and branch edges.
_GAMMA_X = [-2.5, -1.0, -0.5, -0.0, 0.0, 0.1, 0.5, 1.0, 3.7, 20.0]
_NN = np.array([-1.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 10.0, 0.0, 7.0])
_NK = np.array([1.0, 0.0, 0.0, 3.0, 2.0, 2.0, -1.0, 4.5, 2.0, 7.0])
_BA = np.array([0.5, 3.0, 10.0, 1e3, 2.0, 0.7, 1e5])
_BB = np.array([2.0, 9.0, 20.0, 1e5, 8.0, 0.3, 3.0])
_PQ = (
    np.array([0.0, 0.0, 0.0, -1.0, 0.3, 1.5, 2.0, 1e-3]),
    np.array([0.0, 1.0, -1.0, 0.5, 0.3, 0.5, 4.0, 1e-3]),
)
_EXP_X = np.array([-3.0, -0.5, 0.0, 1e-3, 0.3, 1.0, 1.5, 3.0, 10.0, 50.0, 100.0])
_LOGITS = np.array([[0.5, -1.0, 2.0, 80.0], [3.0, 3.0, -np.inf, 0.25]])
REST = {
    "gamma": (xsp.gamma, jsp.gamma, osp.gamma, (_GAMMA_X,), 0),
    "gammasgn": (
        xsp.gammasgn,
        jsp.gammasgn,
        osp.gammasgn,
        ([-np.inf, -3.0, -2.5, -1.5, -0.0, 0.0, 0.5, np.inf, np.nan],),
        None,
    ),
    "loggamma": (xsp.loggamma, jsp.loggamma, osp.loggamma, ([-1.5, -1.0, 0.5, 2.0, 30.0],), None),
    "factorial": (
        xsp.factorial,
        jsp.factorial,
        osp.factorial,
        ([-1.0, 0.0, 3.0, 4.5, 10.0, 30.0],),
        None,
    ),
    "comb": (xsp.comb, jsp.comb, osp.comb, (_NN, _NK), None),
    "comb_repetition": (
        functools.partial(xsp.comb, repetition=True),
        functools.partial(jsp.comb, repetition=True),
        functools.partial(osp.comb, repetition=True),
        (_NN[1:], _NK[1:]),
        None,
    ),
    "betaln": (xsp.betaln, jsp.betaln, osp.betaln, (_BA, _BB), (0, 1)),
    "beta": (xsp.beta, jsp.beta, osp.beta, ([0.5, 3.0, -0.5, 2.5], [2.0, 9.0, 1.5, -3.2]), None),
    "betainc": (
        xsp.betainc,
        jsp.betainc,
        osp.betainc,
        ([0.5, 2.0, 5.0, 1.0, 3.0], [0.5, 3.0, 1.0, 2.0, 3.0], [0.0, 0.2, 0.5, 0.9, 1.0]),
        None,
    ),
    "gammainc": (
        xsp.gammainc,
        jsp.gammainc,
        osp.gammainc,
        ([0.5, 1.0, 3.0, 10.0, 2.0, 0.1], [0.0, 0.5, 2.0, 12.0, 30.0, 1e-3]),
        None,
    ),
    "gammaincc": (
        xsp.gammaincc,
        jsp.gammaincc,
        osp.gammaincc,
        ([0.5, 1.0, 3.0, 10.0, 2.0, 0.1], [0.0, 0.5, 2.0, 12.0, 30.0, 1e-3]),
        None,
    ),
    "multigammaln": (
        functools.partial(xsp.multigammaln, d=3),
        functools.partial(jsp.multigammaln, d=3),
        np.vectorize(functools.partial(osp.multigammaln, d=3)),
        ([1.5, 2.5, 4.0, 10.0],),
        None,
    ),
    "poch": (
        xsp.poch,
        jsp.poch,
        osp.poch,
        ([0.5, 1.0, 2.5, -1.5, 3.0], [0.0, 2.0, 1.5, 2.0, -0.5]),
        (0, 1),
    ),
    "polygamma": (
        xsp.polygamma,
        jsp.polygamma,
        osp.polygamma,
        (np.array([0, 1, 2, 3, 1], np.int32), [0.5, 2.0, 3.5, 10.0, -1.5]),
        1,
    ),
    "zeta": (
        xsp.zeta,
        jsp.zeta,
        osp.zeta,
        ([2.0, 3.0, 4.5, 1.5, 10.0], [1.0, 0.5, 3.0, 2.0, 1.5]),
        (0, 1),
    ),
    "i0": (xsp.i0, jsp.i0, osp.i0, (_WIDE[1:-1],), 0),
    "i0e": (xsp.i0e, jsp.i0e, osp.i0e, (_WIDE,), None),
    "i1": (xsp.i1, jsp.i1, osp.i1, (_WIDE[1:-1],), 0),
    "i1e": (xsp.i1e, jsp.i1e, osp.i1e, (_WIDE,), None),
    "rel_entr": (xsp.rel_entr, jsp.rel_entr, osp.rel_entr, _PQ, (0, 1)),
    "kl_div": (xsp.kl_div, jsp.kl_div, osp.kl_div, _PQ, None),
    "boxcox": (
        xsp.boxcox,
        jsp.boxcox,
        osp.boxcox,
        ([0.5, 1.0, 2.0, 3.0, 0.0], [0.0, 1.5, -0.5, 0.0, 2.0]),
        None,
    ),
    "boxcox1p": (
        xsp.boxcox1p,
        jsp.boxcox1p,
        osp.boxcox1p,
        ([0.5, 1e-6, 2.0, -0.5, 0.0], [0.0, 1.5, -0.5, 0.0, 2.0]),
        (0, 1),
    ),
    "softmax": (xsp.softmax, jsp.softmax, osp.softmax, (_LOGITS,), None),
    "softmax_axis0": (
        functools.partial(xsp.softmax, axis=0),
        functools.partial(jsp.softmax, axis=0),
        functools.partial(osp.softmax, axis=0),
        (_LOGITS,),
        None,
    ),
    "log_softmax": (
        xsp.log_softmax,
        jsp.log_softmax,
        functools.partial(osp.log_softmax, axis=-1),
        (_LOGITS[:1],),
        0,
    ),
    "log_softmax_none": (
        functools.partial(xsp.log_softmax, axis=None),
        functools.partial(jsp.log_softmax, axis=None),
        functools.partial(osp.log_softmax, axis=None),
        (_LOGITS,),
        None,
    ),
    "expi": (xsp.expi, jsp.expi, osp.expi, (_EXP_X,), 0),
    "exp1": (xsp.exp1, jsp.exp1, osp.exp1, (_EXP_X,), None),
    "expn": (
        xsp.expn,
        jsp.expn,
        osp.expn,
        (np.array([0, 1, 2, 3, 5, 2, 0, 4, 1, 3, 5000]), np.abs(_EXP_X)),
        1,
    ),
    "erfcx": (
        xsp.erfcx,
        jsp.erfcx,
        osp.erfcx,
        ([-30.0, -5.0, -0.3, 0.0, 0.5, 2.0, 9.0, 9.5, 26.0, 27.0, 1e5],),
        None,
    ),
    "dawsn": (
        xsp.dawsn,
        jsp.dawsn,
        osp.dawsn,
        ([-5.0, -1.0, 0.0, 1e-3, 0.5, 3.2, 3.3, 6.2, 6.3, 20.0, 1e5],),
        None,
    ),
    "sici": (
        xsp.sici,
        jsp.sici,
        osp.sici,
        (
            [
                -np.inf,
                -5.0,
                -1.0,
                0.0,
                1e-3,
                0.5,
                3.9,
                4.1,
                7.9,
                8.1,
                100.0,
                1e8,
                2e9,
                np.inf,
                np.nan,
            ],
        ),
        None,
    ),
    "owens_t": (
        xsp.owens_t,
        jsp.owens_t,
        osp.owens_t,
        (
            [0.0, 0.0, 0.5, -1.0, 2.0, 0.3, 3.0, np.nan, 1.0, 0.1],
            [0.5, 2.0, 1.0, 0.7, -3.0, 5.0, 0.2, 1.0, 1e3, 1.0],
        ),
        None,
    ),
    "fresnel": (
        xsp.fresnel,
        jsp.fresnel,
        osp.fresnel,
        ([-np.inf, -3.0, -0.5, 0.0, 1e-3, 0.5, 1.6, 1.61, 5.0, 9.9, 100.0, 4e4, np.inf, np.nan],),
        None,
    ),
    "hyp1f1": (
        xsp.hyp1f1,
        jsp.hyp1f1,
        osp.hyp1f1,
        (
            [0.5, 1.0, 2.0, -1.5, 3.0, 1.0, 0.7, 0.0],
            [1.5, 2.0, 1.0, 2.5, 3.0, 0.0, 1.2, 2.0],
            [0.3, -2.0, 5.0, 1.0, 0.5, 1.0, -0.7, 3.0],
        ),
        None,
    ),
    # Cases: series, c pole, finite sum, a = 0, near 1 with c - a - b integer (both signs),
    # x = 1, Euler's transformation, b = c.
    "hyp2f1": (
        xsp.hyp2f1,
        jsp.hyp2f1,
        osp.hyp2f1,
        (
            [0.5, 1.5, -3.0, 0.0, 1.0, 1.0, 0.7, 2.0, -2.0, 0.5, 1.0],
            [1.5, 2.0, 2.5, 1.0, 3.0, 2.0, 1.2, 3.0, 1.5, 0.5, 2.0],
            [2.5, 0.0, 1.5, 1.0, 2.0, 3.0, 3.2, 1.0, 3.0, 2.0, 2.0],
            [0.3, 0.5, 0.7, 0.2, 0.95, 0.95, 1.0, 0.5, 0.99, -0.5, 0.6],
        ),
        None,
    ),
    "spence": (
        xsp.spence,
        jsp.spence,
        osp.spence,
        ([-1.0, 0.0, 1e-3, 0.3, 0.5, 0.7, 1.0, 1.5, 1.7, 2.0, 3.0, 50.0, 1e10],),
        0,
    ),
}
# Where float64 values are less accurate than SciPy's: long series; betaln's algdiv, sici's
# Cephes approximations and owens_t's 13-point rule (all as JAX's).
_REST_RTOL_F64 = {
    "betaln": 1e-6,
    "beta": 1e-6,
    "expn": 1e-9,
    "exp1": 1e-9,
    "expi": 1e-9,
    "betainc": 1e-9,
    "gammainc": 1e-9,
    "gammaincc": 1e-9,
    "zeta": 1e-9,
    "sici": 1e-6,
    "owens_t": 1e-6,
    "hyp2f1": 1e-10,
}


def _rest_args(name, dtype):
    return tuple(
        np.asarray(a) if np.asarray(a).dtype.kind in "iu" else np.asarray(a, dtype)
        for a in REST[name][3]
    )


# Thin wrappers of lax primitives whose values are checked in tests/test_lax_special.py: here
# only their promotion (shapes, dtypes, weak types, by xform.eval_shape), to save compiles.
_LAX_WRAPPERS = ("betainc", "gammainc", "gammaincc")


def _as_tuple(x):
    return x if isinstance(x, tuple) else (x,)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rest_values(dtype):
    with jax.enable_x64(dtype == np.float64), xform.enable_x64(dtype == np.float64):
        for name, (xf, jf, sf, _, _) in REST.items():
            args = _rest_args(name, dtype)
            avals = _as_tuple(jax.eval_shape(jf, *args))
            if name in _LAX_WRAPPERS:
                got = xform.eval_shape(xf, *args)
                assert (got.shape, got.dtype, got.weak_type) == (
                    avals[0].shape,
                    avals[0].dtype,
                    avals[0].weak_type,
                ), name
                continue
            with np.errstate(all="ignore"):
                expected = [
                    e.astype(dtype)
                    for e in _as_tuple(
                        sf(*(np.asarray(a, np.float64) if a.dtype.kind == "f" else a for a in args))
                    )
                ]
            rtol = 2e-5 if dtype == np.float32 else _REST_RTOL_F64.get(name, 1e-12)
            for got, aval, want in zip(_as_tuple(xf(*args)), avals, expected, strict=True):
                assert (got.shape, got.dtype, got.weak_type) == (
                    aval.shape,
                    aval.dtype,
                    aval.weak_type,
                ), name
                np.testing.assert_allclose(
                    np.asarray(got, np.float64),
                    want,
                    rtol=rtol,
                    atol=1e-30,
                    equal_nan=True,
                    err_msg=name,
                )


def test_rest_jit_and_scipy_edges():
    # Under jit as eagerly; and SciPy's values at the points where JAX departs from them.
    names = ("poch", "rel_entr", "spence")
    args = {name: _rest_args(name, np.float32) for name in names}
    got = xform.jit(lambda a: {k: REST[k][0](*a[k]) for k in names})(args)
    for name in names:
        assert_same(got[name], REST[name][0](*args[name]), 1e-6, 0, what=name)
    # SciPy's (and the mathematical) values where JAX 0.10.2 has NaN and 1 / n.
    assert float(xsp.expi(0.0)) == -np.inf
    assert float(xsp.expn(3, 0.0)) == 0.5
    # JAX's convention 1F1(0; 0; x) = 1 (SciPy: inf); its asymptotic branch (|x| >= 100).
    assert float(xsp.hyp1f1(0.0, 0.0, 2.0)) == 1.0
    with xform.enable_x64():
        np.testing.assert_allclose(
            float(xsp.hyp1f1(2.5, 4.0, np.float64(120.0))), osp.hyp1f1(2.5, 4.0, 120.0), rtol=1e-12
        )


# Gradients against jax.grad (one jit for JAX) where JAX compiles them fast; the custom rules
# of poch, zeta and spence against their closed forms in SciPy (JAX's rules are the same
# formulas; compiling JAX's would cost seconds), and expi's and expn's by check_grads below.
_GRAD_CASES = {
    "rel_entr": (xsp.rel_entr, jsp.rel_entr, ([0.3, 1.5], [0.7, 0.5]), (0, 1)),
    "gamma": (xsp.gamma, jsp.gamma, ([-1.5, 0.4, 3.7],), 0),
    "log_softmax": (xsp.log_softmax, jsp.log_softmax, (_LOGITS[:1],), 0),
}


def _sum_grad(grad, f, argnums, *args):
    return grad(lambda *v: f(*v).sum(), argnums)(*args)


def test_rest_grads():
    args = {k: tuple(np.asarray(a, np.float32) for a in v[2]) for k, v in _GRAD_CASES.items()}
    expected = jax.jit(
        lambda a: {k: _sum_grad(jax.grad, c[1], c[3], *a[k]) for k, c in _GRAD_CASES.items()}
    )(args)
    got = {k: _sum_grad(xform.grad, c[0], c[3], *args[k]) for k, c in _GRAD_CASES.items()}
    assert_same(got, expected, 1e-5, 1e-7)


def test_rest_custom_rules(x64):
    # The rules against their closed forms in SciPy's float64 functions.
    z, m = np.array([0.5, 2.5, -1.5]), np.array([2.0, 1.5, 0.5])
    dz, dm = _sum_grad(xform.grad, xsp.poch, (0, 1), z, m)
    poch = osp.poch(z, m)
    np.testing.assert_allclose(dz, (osp.digamma(z + m) - osp.digamma(z)) * poch, rtol=1e-12)
    np.testing.assert_allclose(dm, osp.digamma(z + m) * poch, rtol=1e-12)
    x, q = np.array([2.0, 4.5, 1.5]), np.array([1.0, 3.0, 0.5])
    dx, dq = _sum_grad(xform.grad, xsp.zeta, (0, 1), x, q)
    np.testing.assert_allclose(dq, -x * osp.zeta(x + 1, q), rtol=1e-12)
    h = 1e-6
    np.testing.assert_allclose(dx, (osp.zeta(x + h, q) - osp.zeta(x - h, q)) / (2 * h), rtol=1e-7)
    x = np.array([-2.0, 0.3, 4.0, 7.0, 30.0])
    np.testing.assert_allclose(
        _sum_grad(xform.grad, xsp.erfcx, 0, x),
        2 * x * osp.erfcx(x) - 2 / np.sqrt(np.pi),
        rtol=1e-12,
    )
    np.testing.assert_allclose(
        _sum_grad(xform.grad, xsp.dawsn, 0, x), 1 - 2 * x * osp.dawsn(x), rtol=1e-11
    )
    si_dot, ci_dot = (_sum_grad(xform.grad, lambda v, i=i: xsp.sici(v)[i], 0, x) for i in (0, 1))
    np.testing.assert_allclose(si_dot, np.sin(x) / x, rtol=1e-12)
    np.testing.assert_allclose(ci_dot, np.cos(x) / x, rtol=1e-12)
    x = np.array([-1.2, 0.3, 1.7, 4.0])
    s_dot, c_dot = (_sum_grad(xform.grad, lambda v, i=i: xsp.fresnel(v)[i], 0, x) for i in (0, 1))
    np.testing.assert_allclose(s_dot, np.sin(np.pi * x * x / 2), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(c_dot, np.cos(np.pi * x * x / 2), rtol=1e-12)
    # hyp1f1's and hyp2f1's series rules against central differences of SciPy's functions.
    for xf, sf, points in (
        (xsp.hyp1f1, osp.hyp1f1, ([0.5, 2.0], [1.5, 3.5], [0.8, -1.5])),
        (xsp.hyp2f1, osp.hyp2f1, ([0.5, 1.2], [1.5, -0.7], [2.5, 3.1], [0.3, -0.4])),
    ):
        args = [np.array(a) for a in points]
        got = _sum_grad(xform.grad, xf, tuple(range(len(args))), *args)
        for i, g in enumerate(got):
            step = [np.full(2, 1e-6) if j == i else 0 for j in range(len(args))]
            diff = (
                sf(*(a + h for a, h in zip(args, step, strict=True)))
                - sf(*(a - h for a, h in zip(args, step, strict=True)))
            ) / 2e-6
            np.testing.assert_allclose(g, diff, rtol=1e-6, err_msg=f"{xf.__name__} {i}")
    # gammainc in a, through lax.igamma_grad_a (JAX's rule); gammaincc is its negative.
    a, x = np.array([0.5, 3.0]), np.array([0.7, 2.0])
    diff = (osp.gammainc(a + 1e-6, x) - osp.gammainc(a - 1e-6, x)) / 2e-6
    np.testing.assert_allclose(_sum_grad(xform.grad, xsp.gammainc, 0, a, x), diff, rtol=1e-6)
    h, a = np.array([0.5, -1.0, 2.0]), np.array([0.7, 3.0, -0.4])
    dh, da = _sum_grad(xform.grad, xsp.owens_t, (0, 1), h, a)
    np.testing.assert_allclose(
        dh, -np.exp(-h * h / 2) * osp.erf(a * h / np.sqrt(2)) / (2 * np.sqrt(2 * np.pi)), rtol=1e-12
    )
    np.testing.assert_allclose(
        da, np.exp(-(a * a + 1) * h * h / 2) / (2 * np.pi * (a * a + 1)), rtol=1e-12
    )
    x = np.array([0.3, 0.7, 1.7, 3.0, 60.0])
    np.testing.assert_allclose(
        _sum_grad(xform.grad, xsp.spence, 0, x), np.log(x) / (1 - x), rtol=1e-12
    )


def test_rest_check_grads(x64):
    check_grads(xsp.zeta, (np.array([2.5, 4.0]), np.array([1.5, 3.0])), order=1)
    check_grads(functools.partial(xsp.expn, 2), (np.array([0.3, 4.0]),), order=1)
    check_grads(xsp.expi, (np.array([-1.5, 0.4, 7.0]),), order=1)

    check_grads(xsp.betaln, (np.array([0.5, 3.0]), np.array([2.0, 12.0])), order=1)


def test_bernoulli():
    for n in (0, 1, 2, 5, 30):
        np.testing.assert_allclose(np.asarray(xsp.bernoulli(n)), osp.bernoulli(n), rtol=1e-6)
        aval = jax.eval_shape(functools.partial(jsp.bernoulli, n))
        assert xsp.bernoulli(n).dtype == aval.dtype and xsp.bernoulli(n).shape == aval.shape


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_bessel_jn(dtype):
    # Where the recurrence's start 1e-16 does not overflow (as JAX's, small |z| gives NaN).
    z = np.array([7.0, -9.5, 20.0, 33.0], dtype)
    with jax.enable_x64(dtype == np.float64), xform.enable_x64(dtype == np.float64):
        got = xsp.bessel_jn(z, v=3)
        aval = jax.eval_shape(functools.partial(jsp.bessel_jn, v=3), z)
    assert (got.shape, got.dtype) == (aval.shape, aval.dtype) == ((4, 4), dtype)
    np.testing.assert_allclose(
        np.asarray(got),
        osp.jv(np.arange(4)[:, None], z),
        rtol=1e-4 if dtype == np.float32 else 1e-10,
        atol=1e-6,
    )
    with pytest.raises(ValueError, match="bessel_jn.*complex"):
        xsp.bessel_jn(np.array([1j]), v=1)
    with pytest.raises(TypeError):
        xsp.bessel_jn(z, v=1.5)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_gamma_and_loggamma(dtype):
    # Poles and NaN give NaN; loggamma's branch cut is SciPy's (the negative real axis).
    z = np.array(
        [0.5, 1 + 2j, -2.5 + 0.3j, -3, 10 - 4j, -0.7 - 2j, np.nan, -7.3 + 0.01j, 0.2], dtype
    )
    rtol = 5e-6 if dtype == np.complex64 else 1e-13
    with jax.enable_x64(dtype == np.complex128), xform.enable_x64(dtype == np.complex128):
        for xf, jf, sf in (
            (xsp.gamma, jsp.gamma, osp.gamma),
            (xsp.loggamma, jsp.loggamma, osp.loggamma),
        ):
            got = xf(z)
            assert got.dtype == jax.eval_shape(jf, z).dtype == dtype
            np.testing.assert_allclose(np.asarray(got), sf(z.astype(np.complex128)), rtol=rtol)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_wofz_and_complex_erfcx(dtype):
    z = np.array([0, 1 + 2j, -0.5 + 0.1j, 3 - 4j, -2 - 0.5j, 10 + 0.01j, 1e-3j], dtype)
    rtol = 1e-6 if dtype == np.complex64 else 1e-12  # Weideman's N = 32: about 1e-13
    with jax.enable_x64(dtype == np.complex128), xform.enable_x64(dtype == np.complex128):
        for xf, jf, sf in ((xsp.wofz, jsp.wofz, osp.wofz), (xsp.erfcx, jsp.erfcx, osp.erfcx)):
            got = xf(z)
            aval = jax.eval_shape(jf, z)
            assert (got.dtype, got.shape) == (aval.dtype, aval.shape)
            np.testing.assert_allclose(np.asarray(got), sf(z.astype(np.complex128)), rtol=rtol)
        real = xsp.wofz(np.array([0.5, -2.0], dtype(0).real.dtype))
        assert real.dtype == dtype
        _, tangent = xform.jvp(xsp.wofz, (z,), (np.ones_like(z),))
        w = osp.wofz(z.astype(np.complex128))
        np.testing.assert_allclose(
            np.asarray(tangent), -2 * z * w + 2j / np.sqrt(np.pi), rtol=10 * rtol, atol=10 * rtol
        )


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sph_harm_y(dtype):
    n, m = np.array([0, 1, 1, 2, 3, 4, 5, 5, 2, 7]), np.array([0, 0, -1, 1, -2, 4, 3, -5, 2, 6])
    theta = np.array([0.3, 1.0, 2.0, 0.7, 0.1, 1.5, 2.9, 1.2, 0.0, np.pi], dtype)
    phi = np.array([0.1, 0.5, 3.0, 1.0, 6.0, 2.0, 0.3, 4.0, 1.0, 5.0], dtype)
    with jax.enable_x64(dtype == np.float64), xform.enable_x64(dtype == np.float64):
        got = xsp.sph_harm_y(n, m, theta, phi, n_max=7)
        aval = jax.eval_shape(functools.partial(jsp.sph_harm_y, n_max=7), n, m, theta, phi)
        assert (got.shape, got.dtype) == (aval.shape, aval.dtype)
        np.testing.assert_allclose(
            np.asarray(got),
            osp.sph_harm_y(n, m, theta, phi),
            rtol=1e-5 if dtype == np.float32 else 1e-12,
            atol=1e-6 if dtype == np.float32 else 1e-14,
        )
        # n_max defaults to max(n); larger degrees are clipped to n_max, as JAX's.
        assert_same(xsp.sph_harm_y(n, m, theta, phi), got)
        clipped = xsp.sph_harm_y(np.array([6]), np.array([2]), theta[:1], phi[:1], n_max=4)
        np.testing.assert_allclose(
            np.asarray(clipped), osp.sph_harm_y(4, 2, theta[0], phi[0]), rtol=1e-5
        )
    with pytest.raises(NotImplementedError, match="diff_n"):
        xsp.sph_harm_y(n, m, theta, phi, diff_n=1)


def test_rest_vmap():
    x = np.array([[0.3, 1.5, 7.0], [0.01, 2.0, 40.0]], np.float32)
    expn2 = functools.partial(xsp.expn, 2)
    assert_same(xform.vmap(expn2, 1)(x), expn2(x.T), 1e-6, 0)
    assert_same(xform.vmap(xsp.softmax, 1)(x), xsp.softmax(x.T, axis=-1), 1e-6, 0)
    assert_same(xform.vmap(xsp.poch, (None, 0))(x[0], x), xsp.poch(x[0], x), 1e-6, 0)


def test_public_names():
    # Every public name of jax.scipy.special exists here; exemptions carry their reason.
    exempt = {}
    missing = {n for n in dir(jsp) if not n.startswith("_")} - set(dir(xsp)) - set(exempt)
    assert not missing, sorted(missing)


def test_rest_errors():
    with pytest.raises(ValueError, match="polygamma.*integer"):
        xsp.polygamma(1.0, 2.0)
    with pytest.raises(NotImplementedError, match="Riemann zeta"):
        xsp.zeta(2.0)
    with pytest.raises(NotImplementedError, match="exact=True"):
        xsp.factorial(3.0, exact=True)
    with pytest.raises(ValueError, match="bernoulli.*non-negative"):
        xsp.bernoulli(-1)
    with pytest.raises(TypeError, match="spence.*int32"):
        xsp.spence(np.array([1], np.int32))
    for f in (xsp.gammasgn, xsp.expi, xsp.exp1, xsp.dawsn):
        with pytest.raises(ValueError, match="complex"):
            f(np.array([1j]))
    for f in (xsp.beta, xsp.rel_entr, xsp.kl_div):
        with pytest.raises(ValueError, match="complex"):
            f(np.array([1j]), 1.0)
    with pytest.raises(ValueError, match="sici.*real-valued"):
        xsp.sici(np.array([1j]))
    with pytest.raises(TypeError, match="softmax"):
        xsp.softmax([1.0, 2.0])


def test_softmax_defaults_to_all_axes_and_takes_axis_by_keyword_as_jax():
    x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    for name in ("softmax", "log_softmax"):
        xf, jf = getattr(xsp, name), getattr(jsp, name)
        shape = [(p.name, p.kind, p.default) for p in inspect.signature(xf).parameters.values()]
        assert shape == [
            (p.name, p.kind, p.default) for p in inspect.signature(jf).parameters.values()
        ], name
        np.testing.assert_allclose(xf(x), jf(x), rtol=1e-6, err_msg=name)
        np.testing.assert_allclose(xf(x, axis=0), jf(x, axis=0), rtol=1e-6, err_msg=name)
        with pytest.raises(TypeError):
            jf(x, 0)
        with pytest.raises(TypeError):
            xf(x, 0)
