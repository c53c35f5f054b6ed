"""xform.scipy.stats against jax.scipy.stats: every (distribution, function) on points in and
out of the support and at invalid parameters, eagerly; every log density (and the cheap CDFs)
under one jit; float64 for a few; gradients of the continuous log densities; the multivariate
distributions, the summary statistics and gaussian_kde; bad inputs; and a completeness check of
the public names and signatures.

Time budget: JAX's oracle runs op by op (``_jax_eager``) where its primitives are shared
between cases, and inside one quickly compiled ``jax.jit`` per test where it is not."""

import functools
import inspect
import math

import jax
import jax.numpy as jnp
import jax.scipy.stats as jstats
import numpy as np
import pytest

import xform
import xform.scipy.stats as xstats
from tests.harness import assert_same, x64_for

_QUANTILE_FUNCTIONS = ("ppf", "isf")


def _f(*values):
    return np.array(values, np.float32)


# Per distribution: the points ``x`` (for densities, masses and CDFs), the probabilities ``q``
# (for ppf/isf) and the parameters, each broadcast against the points; a function gets as many
# parameters as JAX's signature takes. Entries past the first few are out of the support or
# invalid parameters.
_X = _f(-1.0, 0.0, 0.3, 1.0, 2.5, 7.0, 0.5, 1.5)
_Q = _f(0.0, 0.1, 0.5, 0.9, 1.0, -0.1, 1.5, 0.3)
_INTS = _f(0.0, 1.0, 2.0, 3.0, 5.0, -1.0, 2.5, 4.0)
_LOC_SCALE = (
    _f(0.0, 0.0, 0.5, -1.0, 1.0, 0.0, 0.0, 0.0),
    _f(1.0, 2.0, 1.0, 0.5, 3.0, 1.0, -1.0, 0.0),
)
_SPECS = {
    "bernoulli": (
        _INTS,
        _Q,
        (_f(0.3, 0.3, 0.6, 0.3, 0.0, 1.0, 1.5, -0.2), _f(0, 0, 1, 0, 0, 0, 0, 0)),
    ),
    "beta": (
        _f(0.2, 0.0, 0.5, 0.9, 1.0, 1.2, 1.5, 0.5),
        _Q,
        (
            _f(2.0, 0.5, 1.0, 3.0, 2.0, 2.0, 0.0, -1.0),
            _f(3.0, 0.7, 2.0, 1.0, 2.0, 2.0, 1.0, 2.0),
            _f(0, 0, 0.2, 0, 0, 0, 0, 0),
            _f(1, 1, 1, 1, 1, 1, 1, -1),
        ),
    ),
    "betabinom": (
        _INTS,
        _Q,
        (
            _f(5, 5, 5, 5, 5, 5, 0, -1),
            _f(2.0, 0.5, 1.0, 3.0, 2.0, 2.0, 2.0, 2.0),
            _f(3.0, 0.7, 2.0, 1.0, 2.0, 2.0, 2.0, -1.0),
            _f(0, 0, 1, 0, 0, 0, 0, 0),
        ),
    ),
    "binom": (
        _INTS,
        _Q,
        (
            _f(5, 5, 5, 3, 4, 5, 0, 2),
            _f(0.3, 0.5, 0.0, 1.0, 0.9, 0.3, 0.4, 0.5),
            _f(0, 0, 0, 1, 0, 0, 0, 0),
        ),
    ),
    "cauchy": (_X, _Q, _LOC_SCALE),
    "chi2": (_X, _Q, (_f(1.0, 2.0, 3.0, 4.5, 1.0, 2.0, 3.0, 0.5),) + _LOC_SCALE),
    "expon": (_X, _Q, _LOC_SCALE),
    "gamma": (_X, _Q, (_f(1.0, 2.0, 0.5, 4.5, 1.0, 2.0, 3.0, 0.5),) + _LOC_SCALE),
    "gennorm": (_X, _Q, (_f(1.0, 2.0, 0.5, 4.5, 1.0, 2.0, 3.0, 8.0),)),
    "geom": (_INTS, _Q, (_f(0.3, 0.5, 0.1, 1.0, 0.9, 0.3, 0.4, 0.5), _f(0, 0, 0, 1, 0, 0, 0, 0))),
    "gumbel_l": (_X, _f(0.0, 0.1, 0.5, 0.9, 1.0, -0.1, 0.3, 0.3), _LOC_SCALE),
    "gumbel_r": (_X, _f(0.0, 0.1, 0.5, 0.9, 1.0, -0.1, 0.3, 0.3), _LOC_SCALE),
    "laplace": (_X, _Q, _LOC_SCALE),
    "logistic": (_X, _Q, _LOC_SCALE),
    "nbinom": (
        _INTS,
        _Q,
        (
            _f(5, 2.5, 5, 3, 4, 5, 1, 2),
            _f(0.3, 0.5, 0.0, 1.0, 0.9, 0.3, 0.4, 0.5),
            _f(0, 0, 0, 1, 0, 0, 0, 0),
        ),
    ),
    "norm": (_X, _Q, _LOC_SCALE),
    "pareto": (
        _X,
        _Q,
        (
            _f(1.0, 2.0, 3.0, 0.5, 1.0, 2.0, 3.0, 0.5),
            _f(-1, 0, 0, 0, 0, 0, 0, 1),
            _f(1, 0.5, 1, 1, 1, 2, 1, 1),
        ),
    ),
    "poisson": (
        _INTS,
        _Q,
        (_f(1.0, 0.5, 3.0, 0.0, 4.0, 2.0, 2.0, 10.0), _f(0, 0, 1, 0, 0, 0, 0, 0)),
    ),
    "t": (_X, _Q, (_f(1.0, 2.0, 3.0, 4.5, 10.0, 2.0, 3.0, 0.5),) + _LOC_SCALE),
    "truncnorm": (
        _X,
        _Q,
        (
            _f(-1.0, -2.0, 0.5, -3.0, 1.0, 3.0, -1.0, 2.0),
            _f(1.0, 0.5, 2.0, 3.0, 9.0, 4.0, -2.0, 1.0),
        )
        + _LOC_SCALE,
    ),
    "uniform": (_X, _Q, _LOC_SCALE),
    "vonmises": (
        _f(-3.0, 0.0, 0.3, 1.0, 2.5, 7.0, 0.5, 1.5),
        _Q,
        (_f(1.0, 2.0, 0.5, 4.5, 30.0, 2.0, 0.0, -1.0),),
    ),
    "wrapcauchy": (
        _f(0.1, 0.0, 0.3, 1.0, 2.5, 6.3, 0.5, -0.5),
        _Q,
        (_f(0.5, 0.2, 0.9, 0.1, 0.5, 0.5, 0.0, 1.0),),
    ),
}
_DISCRETE = {"bernoulli", "betabinom", "binom", "geom", "nbinom", "poisson"}
_CONTINUOUS = sorted(set(_SPECS) - _DISCRETE)
# Looser where the two libraries' special-function kernels differ in the last bits.
_RTOL = {
    "beta": 2e-5,
    "betabinom": 2e-5,
    "chi2": 2e-5,
    "gamma": 2e-5,
    "gennorm": 2e-5,
    "truncnorm": 2e-5,
    "t": 2e-5,
    "poisson": 2e-5,
    "nbinom": 2e-5,
    "binom": 2e-5,
}


def _public(module):
    return sorted(n for n in dir(module) if not n.startswith("_") and callable(getattr(module, n)))


def _arity(fn):
    return len(inspect.signature(fn).parameters)


def _all_functions(stats, name):
    """One function of (x, q, *params) giving every public function of the distribution."""
    module = getattr(stats, name)
    names = [n for n in _public(getattr(jstats, name)) if n != "entropy"]

    def evaluate(x, q, *params):
        out = {}
        for fname in names:
            fn = getattr(module, fname)
            first = q if fname in _QUANTILE_FUNCTIONS else x
            out[fname] = fn(first, *params[: _arity(getattr(getattr(jstats, name), fname)) - 1])
        return out

    return evaluate


# The oracle's values need no fast code, and compiling is most of this file's time.
_QUICK_COMPILE = {"xla_backend_optimization_level": 0, "xla_llvm_disable_expensive_passes": True}


def _jax_jit(fn, *args):
    """JAX's ``jit(fn)(*args)``, compiled once at XLA's lowest optimization level."""
    return jax.jit(fn).lower(*args).compile(_QUICK_COMPILE)(*args)


def _jax_eager(fn, *args):
    """JAX's result op by op: its primitives compile once per shape and are shared across the
    distributions, where whole-function jits would each compile the special functions anew."""
    with jax.disable_jit():
        return fn(*args)


@pytest.mark.parametrize("name", sorted(_SPECS))
def test_distribution_values(name):
    x, q, params = _SPECS[name]
    expected = _jax_eager(_all_functions(jstats, name), x, q, *params)
    got = _all_functions(xstats, name)(x, q, *params)
    assert_same(got, expected, rtol=_RTOL.get(name, 5e-6), atol=1e-6, what=name)


def _log_densities(stats, points):
    """``logpdf``/``logpmf`` (and ``cdf`` where it is cheap) of every distribution."""
    out = {}
    for name, (x, _, params) in points.items():
        if name == "betabinom":  # its betaln is beta's, which is here; saves a second
            continue
        module = getattr(stats, name)
        log_density = getattr(module, "logpmf" if name in _DISCRETE else "logpdf")
        out[name] = log_density(x, *params)
        if name in ("bernoulli", "cauchy", "expon", "laplace", "logistic", "uniform"):
            out[name + ".cdf"] = module.cdf(x, *params[: 1 if name == "bernoulli" else 2])
    return out


def test_distribution_values_under_jit():
    """One compiled function for every distribution's log density, against JAX's values."""
    expected = _jax_eager(_log_densities, jstats, _SPECS)
    got = xform.jit(_log_densities, static_argnums=0)(xstats, _SPECS)
    assert_same(got, expected, rtol=2e-5, atol=1e-6, what="jit")


@pytest.mark.parametrize("name", ["cauchy", "t", "binom", "pareto"])
def test_distribution_values_float64(name):
    x, q, params = _SPECS[name]
    with x64_for(np.float64):
        args = [a.astype(np.float64) for a in (x, q, *params)]
        expected = _jax_eager(_all_functions(jstats, name), *args)
        got = _all_functions(xstats, name)(*args)
        assert_same(got, expected, rtol=1e-11, atol=1e-13, what=f"{name} float64")


# JAX's results from all-Python-scalar arguments are weakly typed float32 except these (its
# ndtr, log_ndtr and jnp.array constants are strongly typed); found by running JAX on them all.
_JAX_STRONG_FROM_SCALARS = {("norm", f) for f in ("cdf", "isf", "logcdf", "logsf", "ppf", "sf")}
_JAX_STRONG_FROM_SCALARS |= {
    ("truncnorm", f) for f in ("cdf", "logcdf", "logpdf", "logsf", "pdf", "sf")
}
_JAX_STRONG_FROM_SCALARS |= {("uniform", "cdf")}


def test_python_scalars_weak_types():
    """All-Python-scalar arguments: float32, weakly typed exactly where JAX's are (two cases
    compared with JAX here, the table above for the rest)."""
    assert_same(xstats.laplace.logpdf(1.5, 2.0), jstats.laplace.logpdf(1.5, 2.0))
    assert_same(xstats.norm.cdf(0.5), jstats.norm.cdf(0.5))
    for name, (x, q, params) in _SPECS.items():
        for fname in _public(getattr(jstats, name)):
            if fname == "entropy":
                continue
            first = float(q[2] if fname in _QUANTILE_FUNCTIONS else x[2])
            fn = getattr(getattr(xstats, name), fname)
            args = [first] + [float(p[2]) for p in params[: _arity(fn) - 1]]
            out = xform.eval_shape(lambda fn=fn, args=args: fn(*args))  # types only: no compile
            weak = (name, fname) not in _JAX_STRONG_FROM_SCALARS
            assert out.dtype == np.float32 and out.weak_type == weak, f"{name}.{fname}"


# Interior points for gradients: every argument of logpdf/logpmf, where JAX differentiates.
_GRAD_POINTS = {
    "beta": (0.3, 2.0, 3.0, -0.1, 1.5),
    "cauchy": (0.4, 0.1, 1.5),
    "chi2": (1.3, 3.0, 0.1, 1.2),
    "expon": (1.3, 0.1, 1.5),
    "gamma": (1.3, 2.5, 0.1, 1.2),
    "gennorm": (0.7, 1.5),
    "laplace": (0.4, 0.1, 1.5),
    "logistic": (0.4, 0.1, 1.5),
    "norm": (0.4, 0.1, 1.5),
    "pareto": (2.5, 2.0, 0.1, 1.5),
    "t": (0.4, 3.0, 0.1, 1.5),
    "truncnorm": (0.4, -1.0, 2.0, 0.1, 1.5),
    "uniform": (0.4, 0.1, 1.5),
    "vonmises": (0.4, 2.0),
    "wrapcauchy": (0.4, 0.3),
}


def test_logpdf_gradients():
    # JAX cannot differentiate gumbel_l/gumbel_r.logpdf (its xlogy(-1, scale) meets a float0
    # tangent); they are checked against their closed forms below.
    assert set(_GRAD_POINTS) | {"gumbel_l", "gumbel_r"} == set(_CONTINUOUS)

    def total(stats):
        def f(points):
            return sum(getattr(stats, name).logpdf(*pts) for name, pts in points.items())

        return f

    points = {name: tuple(np.float32(p) for p in pts) for name, pts in _GRAD_POINTS.items()}
    expected = _jax_jit(jax.grad(total(jstats)), points)
    got = xform.grad(total(xstats))(points)
    assert_same(got, expected, rtol=5e-5, atol=1e-6, what="grad of logpdf")

    def gumbel_l(x, loc, scale):
        z = (x - loc) / scale
        return z - jnp.exp(z) - jnp.log(scale)

    def gumbel_r(x, loc, scale):
        return gumbel_l(-x, -loc, scale)

    args = (np.float32(0.4), np.float32(0.1), np.float32(1.5))
    for name, closed_form in (("gumbel_l", gumbel_l), ("gumbel_r", gumbel_r)):
        assert_same(
            xform.grad(getattr(xstats, name).logpdf, argnums=(0, 1, 2))(*args),
            jax.grad(closed_form, argnums=(0, 1, 2))(*args),
            rtol=5e-6,
            what=name,
        )


def test_multivariate():
    rng = np.random.default_rng(0)
    cov = _f(2.0, 0.5, 0.0, 0.5, 1.0, 0.2, 0.0, 0.2, 1.5).reshape(3, 3)
    x = rng.standard_normal((4, 3)).astype(np.float32)
    mean = _f(0.1, -0.2, 0.3)
    alpha = _f(1.5, 2.0, 3.0)
    simplex = np.abs(x) / np.abs(x).sum(1, keepdims=True)
    counts = np.array([[1, 2, 3], [0, 6, 0], [2, 2, 1]], np.int32)
    p = _f(0.2, 0.3, 0.5)

    def cases(stats):
        """Every multivariate function once (and the Poisson entropy, which needs 2-D sums)."""
        mvn, dirichlet, multinomial = (
            stats.multivariate_normal,
            stats.dirichlet,
            stats.multinomial,
        )
        return {
            "mvn": mvn.logpdf(x, mean, cov),
            "mvn_pdf": mvn.pdf(x[0], mean, cov),
            "mvn_scalar_cov": mvn.logpdf(x, mean, 2.0),
            "mvn_1d": mvn.logpdf(x[:, 0], 0.5, 2.0),
            "dirichlet": dirichlet.logpdf(simplex.T, alpha),
            "dirichlet_short": dirichlet.pdf(simplex.T[:2], alpha),
            "dirichlet_off": dirichlet.logpdf(_f(0.5, 0.6, 0.1), alpha),
            "multinomial": multinomial.logpmf(counts, 6, p),
            "multinomial_pmf": multinomial.pmf(counts[0], 6, p),
            "poisson_entropy": stats.poisson.entropy(_f(0.0, 0.5, 3.0, 20.0, 150.0)),
        }

    expected = _jax_jit(lambda: cases(jstats))
    assert_same(cases(xstats), expected, rtol=2e-5, atol=1e-6)
    assert_same(
        xform.vmap(xstats.multivariate_normal.logpdf, (0, None, None))(x, mean, cov),
        expected["mvn"],
        rtol=2e-5,
        what="vmap",
    )

    def log_densities(stats):
        def f(x, mean, cov, simplex, alpha):
            return (
                stats.multivariate_normal.logpdf(x, mean, cov).sum()
                + stats.dirichlet.logpdf(simplex, alpha).sum()
            )

        return f

    args = (x, mean, cov, simplex.T, alpha)
    assert_same(
        xform.grad(log_densities(xstats), argnums=(0, 1, 2, 3, 4))(*args),
        _jax_jit(jax.grad(log_densities(jstats), argnums=(0, 1, 2, 3, 4)), *args),
        rtol=5e-5,
        atol=1e-6,
        what="grad",
    )


def _summaries(stats, data, with_nan):
    """mode, rankdata and sem over their options (JAX's compile once, inside one jit)."""
    out = {
        f"mode {axis} {keepdims}": tuple(stats.mode(data, axis, keepdims=keepdims))
        for axis, keepdims in ((-1, False), (None, True))
    }
    for method in ("average", "min", "max", "dense", "ordinal"):
        out[method] = stats.rankdata(data, method)
    out["rank axis=1"] = stats.rankdata(data, "min", axis=1)
    out["rank nan"] = stats.rankdata(with_nan)
    for axis, ddof in ((0, 1), (None, 0)):
        out[f"sem {axis} {ddof}"] = stats.sem(data, axis, ddof)
    out["sem omit"] = stats.sem(with_nan, 1, nan_policy="omit", keepdims=True)
    return out


def test_mode_rankdata_sem():
    data = _f(3, 1, 3, 2, 2, 2, 0, 5, 5, 1, 1, 4).reshape(3, 4)
    with_nan = data.copy()
    with_nan[1, 2] = np.nan
    result = xstats.mode(data)
    assert type(result).__name__ == "ModeResult" and result._fields == ("mode", "count")
    expected = _jax_jit(functools.partial(_summaries, jstats), data, with_nan)
    assert_same(_summaries(xstats, data, with_nan), expected, rtol=1e-6)
    assert_same(xform.jit(xstats.rankdata)(data), expected["average"])


def _kde_results(stats, random, data, weights, points):
    """Every gaussian_kde method once (JAX's compile once, inside one jit)."""
    kde = stats.gaussian_kde(data, None, weights)
    out = {
        name: getattr(kde, name) for name in ("neff", "dataset", "weights", "covariance", "inv_cov")
    }
    for i, bw in enumerate(("silverman", lambda kde: 0.3)):
        out[f"covariance {i}"] = stats.gaussian_kde(data, bw).covariance
    out["evaluate"] = kde.evaluate(points)
    out["logpdf"] = kde.logpdf(points)
    out["pdf"] = kde.pdf(points[:, 0])
    out["integrate_gaussian"] = kde.integrate_gaussian(points[:, 0], np.eye(2, dtype=np.float32))
    out["integrate_kde"] = kde.integrate_kde(stats.gaussian_kde(points))
    one = stats.gaussian_kde(data[0])
    out["integrate_box_1d"] = one.integrate_box_1d(-0.5, 1.0)
    out["resample"] = kde.resample(random.key(3), (4,))
    return out


def test_gaussian_kde():
    rng = np.random.default_rng(1)
    data = rng.standard_normal((2, 30)).astype(np.float32)
    weights = rng.uniform(0.5, 1.5, 30).astype(np.float32)
    points = rng.standard_normal((2, 6)).astype(np.float32)
    expected = _jax_jit(functools.partial(_kde_results, jstats, jax.random), data, weights, points)
    got = _kde_results(xstats, xform.random, data, weights, points)
    assert_same(got, expected, rtol=2e-5, atol=1e-7)
    kde = xstats.gaussian_kde(data, None, weights)
    assert (kde.d, kde.n) == (2, 30)
    # A pytree: its leaves pass through jit as an argument and come back whole.
    rebuilt = xform.jit(lambda kde: kde)(kde)
    assert isinstance(rebuilt, xstats.gaussian_kde)
    assert_same(rebuilt.inv_cov, expected["inv_cov"], rtol=2e-5)


# --------------------------------------------------------------------------- bad inputs


@pytest.mark.parametrize(
    "name", sorted(_SPECS) + ["multivariate_normal", "dirichlet", "multinomial"]
)
def test_non_array_arguments(name):
    """A list argument is refused with TypeError naming the op, as JAX does."""
    for fname in _public(getattr(jstats, name)):
        fn = getattr(getattr(xstats, name), fname)
        args = [1.0] * sum(
            p.default is inspect.Parameter.empty for p in inspect.signature(fn).parameters.values()
        )
        if name in ("multivariate_normal", "dirichlet", "multinomial"):
            with pytest.raises(TypeError, match="dtype|requires ndarray"):
                fn([1.0, 2.0], *args[1:])
        else:
            with pytest.raises(TypeError, match=rf"{name}\.\w+ requires ndarray"):
                fn([1.0, 2.0], *args[1:])


@pytest.mark.parametrize(
    "call, error, match",
    [
        (
            lambda s: s.dirichlet.logpdf(np.ones((3,)), np.ones((3, 1))),
            ValueError,
            "alpha` must be one-dimensional",
        ),
        (lambda s: s.dirichlet.logpdf(np.ones((5,)), np.ones(3)), ValueError, "one entry fewer"),
        (
            lambda s: s.multivariate_normal.logpdf(np.ones(3), np.ones(3), np.eye(2)),
            ValueError,
            "incompatible shapes",
        ),
        (
            lambda s: s.multivariate_normal.logpdf(np.ones(3), np.ones(3), np.eye(3), True),
            NotImplementedError,
            "allow_singular",
        ),
        (
            lambda s: s.multinomial.logpmf(np.ones(3), 3.0, np.ones(3) / 3),
            ValueError,
            "integer type",
        ),
        (lambda s: s.mode(np.ones(3), nan_policy="bogus"), ValueError, "nan_policy"),
        (lambda s: s.mode(np.ones(3), nan_policy="omit"), NotImplementedError, "omit"),
        (lambda s: s.rankdata(np.ones(3), "bogus"), ValueError, "unknown method"),
        (lambda s: s.rankdata(np.ones(3), nan_policy="raise"), NotImplementedError, "raise"),
        (lambda s: s.sem(np.ones(3), nan_policy="raise"), ValueError, "not supported"),
        (lambda s: s.gaussian_kde(np.ones((2, 5)), "bogus"), ValueError, "bw_method"),
        (lambda s: s.gaussian_kde(np.ones(1)), ValueError, "multiple elements"),
        (lambda s: s.gaussian_kde(np.ones(5), weights=np.ones(4)), ValueError, "length n"),
        (
            lambda s: s.gaussian_kde(
                np.ones((2, 5)) + np.arange(10).reshape(2, 5) ** 2
            ).integrate_box_1d(0.0, 1.0),
            ValueError,
            "only handles 1D",
        ),
        (
            lambda s: s.gaussian_kde(np.arange(10.0).reshape(2, 5) ** 2).evaluate(np.ones((3, 2))),
            ValueError,
            "points have dimension 3",
        ),
        (
            lambda s: s.gaussian_kde(np.arange(5.0)).integrate_box(0.0, 1.0),
            NotImplementedError,
            "integrate_box_1d",
        ),
    ],
)
def test_bad_inputs(call, error, match):
    if "1D" not in match:  # JAX's would first build a KDE op by op: slow, and checked by hand
        with pytest.raises(error):
            call(jstats)
    with pytest.raises(error, match=match):
        call(xstats)


# --------------------------------------------------------------------------- completeness


_MODULE_EXEMPT = {}  # distribution module -> names JAX has that xform leaves out, with reasons


def test_every_public_name():
    public = sorted(n for n in dir(jstats) if not n.startswith("_"))
    missing = [n for n in public if not hasattr(xstats, n)]
    assert not missing, f"xform.scipy.stats lacks {missing}"
    for name in public:
        jmod, xmod = getattr(jstats, name), getattr(xstats, name)
        if not inspect.ismodule(jmod):
            continue
        assert name in _SPECS or name in ("dirichlet", "multinomial", "multivariate_normal")
        lacking = set(_public(jmod)) - set(_public(xmod)) - set(_MODULE_EXEMPT.get(name, ()))
        assert not lacking, f"xform.scipy.stats.{name} lacks {sorted(lacking)}"
        for fname in _public(jmod):
            j_sig, x_sig = (
                inspect.signature(getattr(jmod, fname)),
                inspect.signature(getattr(xmod, fname)),
            )
            j_params = [(p.name, p.default, p.kind) for p in j_sig.parameters.values()]
            x_params = [(p.name, p.default, p.kind) for p in x_sig.parameters.values()]
            assert x_params == j_params, f"{name}.{fname}: {x_sig} != {j_sig}"
            assert getattr(xmod, fname).__doc__, f"{name}.{fname} has no docstring"
    for name in ("mode", "rankdata", "sem"):
        j_params = [
            (p.name, p.default)
            for p in inspect.signature(getattr(jstats, name)).parameters.values()
        ]
        x_params = [
            (p.name, p.default)
            for p in inspect.signature(getattr(xstats, name)).parameters.values()
        ]
        assert x_params == j_params, name
    kde_methods = {n for n in dir(jstats.gaussian_kde) if not n.startswith("_")}
    assert kde_methods <= set(dir(xstats.gaussian_kde)), kde_methods - set(dir(xstats.gaussian_kde))
    assert math.isfinite(float(xstats.norm.logpdf(0.0)))
