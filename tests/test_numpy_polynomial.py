"""xform.numpy's polynomial functions against jax.numpy: values, dtypes and weak types
eagerly and under jit; grad and vmap of a few; error types."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import xform
import xform.numpy as xnp
from tests.harness import assert_same, call_id, check_against_jax, check_vmap

_rng = np.random.default_rng(2)
P = np.array([2.0, -1.0, 0.5, 3.0], np.float32)
Q = np.array([1.0, 4.0], np.float32)
XS = _rng.standard_normal((2, 3)).astype(np.float32)
X = np.linspace(-1, 1, 9).astype(np.float32)
Y = (3 * X**2 - X + 0.5 + 0.01 * _rng.standard_normal(9)).astype(np.float32)
Y2 = np.stack([Y, 2 * Y], 1)
LEADING = np.array([0.0, 0.0, 1.0, -3.0, 2.0], np.float32)


def _case(name, *args, jit=True, tol=1e-5, **kwargs):
    return pytest.param(name, args, kwargs, jit, tol, id=call_id(name, args, kwargs))


CASES = [
    _case("polyval", P, XS),
    _case("polyval", P, 2.0),
    _case("polyval", np.arange(4), 3),
    _case("polyval", _rng.standard_normal((4, 3)).astype(np.float32), XS[0], jit=False),
    _case("polyval", P, 2, jit=False),
    _case("polyadd", P, Q),
    _case("polyadd", Q, P, jit=False),
    _case("polyadd", np.arange(3), np.arange(2), jit=False),
    _case("polysub", P, Q),
    _case("polysub", Q, P, jit=False),
    _case("polymul", P, Q),
    _case("polymul", np.arange(3), np.arange(2), jit=False),
    _case("polymul", LEADING, Q, trim_leading_zeros=True, jit=False),
    _case("polydiv", P, Q),
    _case("polydiv", Q, P, jit=False),
    _case("polydiv", np.arange(1, 6), np.array([1, 2]), jit=False),
    _case("polydiv", P, Q, trim_leading_zeros=True, jit=False),
    _case("polyder", P),
    _case("polyder", P, 2, jit=False),
    _case("polyder", P, 0, jit=False),
    _case("polyder", np.arange(5), 3, jit=False),
    _case("polyder", P, 5, jit=False),
    _case("polyint", P),
    _case("polyint", P, 2, jit=False),
    _case("polyint", P, 2, k=np.array([1.0, 2.0]), jit=False),
    _case("polyint", P, 3, k=5, jit=False),
    _case("polyint", np.arange(3), jit=False),
    _case("polyfit", X, Y, 2, jit=False, tol=1e-4),
    _case("polyfit", X, Y2, 2, jit=False, tol=1e-4),
    _case("polyfit", X, Y, 2, w=np.abs(X) + 1, jit=False, tol=1e-4),
    _case("polyfit", X, Y, 2, full=True, jit=False, tol=1e-4),
    _case("polyfit", X, Y, 2, cov=True, jit=False, tol=1e-3),
    _case("polyfit", X, Y, 1, cov="unscaled", jit=False, tol=1e-3),
    _case("polyfit", X, Y2, 2, cov=True, jit=False, tol=1e-3),
    _case("roots", np.array([3.0]), jit=False),
    _case("roots", LEADING, strip_zeros=False, tol=1e-4),
    _case("poly", np.array([1.0, 2.0, 3.0])),
    _case("poly", np.array([1 + 1j, 1 - 1j])),
    _case("poly", np.arange(3), jit=False),
    _case("poly", np.zeros(0), jit=False),
]


@pytest.mark.parametrize(("name", "args", "kwargs", "jit", "tol"), CASES)
def test_against_jax(name, args, kwargs, jit, tol):
    check_against_jax(
        getattr(xnp, name), getattr(jnp, name), *args, rtol=tol, atol=tol, jit=jit, **kwargs
    )


@pytest.mark.parametrize("p", [P, LEADING, np.arange(4)])
def test_roots(p):
    # Eigenvalues come in no particular order: compare them sorted.
    got, expected = xnp.roots(p), jnp.roots(p)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_allclose(
        np.sort_complex(np.asarray(got)),
        np.sort_complex(np.asarray(expected)),
        rtol=1e-4,
        atol=1e-4,
    )


def test_polyfit_and_poly_of_matrix_under_jit():
    def fits(mod):
        return lambda x, y: (mod.polyfit(x, y, 2), mod.poly(mod.outer(x[:2], x[:2]) + 1.0))

    assert_same(xform.jit(fits(xnp))(X, Y), jax.jit(fits(jnp))(X, Y), 1e-4, 1e-4)


@pytest.mark.parametrize(
    ("name", "fn"),
    [
        ("polyval", lambda m, p: m.polyval(p, m.linspace(-1.0, 2.0, 5))),
        ("polyval_x", lambda m, p: m.polyval(P, p)),
        ("polymul", lambda m, p: m.polymul(p, p[::-1])),
        ("polydiv", lambda m, p: m.polydiv(p, p[:2] + 3.0)[0]),
        ("polyder", lambda m, p: m.polyder(p * p, 2)),
        ("polyint", lambda m, p: m.polyint(p, 2, k=p[0])),
        ("polyfit", lambda m, p: m.polyfit(X, m.polyval(p, X), 2)),
        ("poly", lambda m, p: m.poly(p)),
    ],
)
def test_grad(name, fn):
    def loss(mod):
        return lambda p: mod.sum(mod.sin(fn(mod, p)))

    assert_same(xform.grad(loss(xnp))(P), jax.grad(loss(jnp))(P), 1e-4, 1e-4, what=name)


def test_vmap():
    check_vmap(xnp.polyval, jnp.polyval, (np.stack([P, 2 * P]), XS[:, :2]), rtol=1e-5, atol=1e-5)
    check_vmap(
        xnp.polymul,
        jnp.polymul,
        (np.stack([P, P + 1]), np.stack([Q, Q * 2])),
        rtol=1e-5,
        atol=1e-5,
        jit=False,
    )


def test_roots_needs_strip_zeros_false_under_jit():
    with pytest.raises(jax.errors.ConcretizationTypeError):
        jax.jit(jnp.roots)(LEADING)
    with pytest.raises(xform.errors.ConcretizationTypeError, match="strip_zeros=False"):
        xform.jit(xnp.roots)(LEADING)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda m: m.polyder(P, -1), ValueError, "positive"),
        (lambda m: m.polyint(P, -1), ValueError, "positive"),
        (lambda m: m.polyint(P, 2, k=np.ones(3)), ValueError, "length"),
        (lambda m: m.polyfit(X, Y, -1), ValueError, "deg"),
        (lambda m: m.polyfit(XS, XS, 1), TypeError, "1D"),
        (lambda m: m.polyfit(X, Y[:4], 1), TypeError, "same length"),
        (lambda m: m.polyfit(X[:3], Y[:3], 2, cov=True), ValueError, "exceed"),
        (lambda m: m.roots(XS), ValueError, "rank-1"),
        (lambda m: m.poly(XS), ValueError, "square"),
    ],
)
def test_errors(call, error, match):
    with pytest.raises(error):
        call(jnp)
    with pytest.raises(error, match=match):
        call(xnp)
