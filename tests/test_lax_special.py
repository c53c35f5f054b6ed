"""The special functions of ``xform.lax`` (igamma, betainc, bessel, zeta, polygamma) against
JAX: values on grids with the edge cases in float32 and float64, eagerly and under jit;
gradients against ``jax.grad``; vmap against ``jax.vmap``; half floats; weak types; errors.

XLA takes seconds to compile the series and continued fractions of the incomplete gamma
and beta functions, so each test compiles one function that calls every primitive it
checks (on each side), and the eager checks reuse the JAX results of the jitted ones.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import xform
from tests.harness import assert_same, x64_for
from xform import lax

# Grids of (a, x): the edge cases (zeros, negatives, inf, nan), both sides of the switch
# between series and continued fraction at x = max(1, a), large values.
_A = [0.0, 1e-3, 0.5, 1.0, 2.5, 7.0, 30.0, 150.0, -1.0, np.inf, np.nan]
_X = [0.0, 1e-4, 0.3, 1.0, 2.0, 6.5, 40.0, 200.0, -0.5, np.inf, np.nan]
_AX = [g.ravel() for g in np.meshgrid(_A, _X)]

# (a, b, x) for betainc: both sides of the symmetry switch, x at 0 and 1, a or b 0 or inf.
_BETA = list(
    np.array(
        [
            (0.5, 0.5, 0.2),
            (2.0, 3.0, 0.4),
            (2.0, 3.0, 0.9),
            (10.0, 1.5, 0.7),
            (1e-3, 2.0, 0.5),
            (50.0, 60.0, 0.45),
            (3.0, 0.01, 0.999),
            (1.0, 1.0, 0.0),
            (1.0, 1.0, 1.0),
            (0.0, 2.0, 0.5),
            (2.0, 0.0, 0.5),
            (0.0, 0.0, 0.5),
            (np.inf, 2.0, 0.5),
            (2.0, np.inf, 0.5),
            (-1.0, 2.0, 0.5),
            (2.0, 3.0, 1.5),
            (2.0, 3.0, -0.1),
            (np.nan, 2.0, 0.5),
        ]
    ).T
)
# Both sides of the switch at |x| = 8, tiny and huge values.
_BESSEL = [
    np.array([0.0, 1e-30, -1e-3, 0.5, -2.0, 7.99, 8.0, 8.01, -30.0, 1e3, np.inf, -np.inf, np.nan])
]
# (m, x) for polygamma (m not an integer or negative: nan) and (x, q) for zeta.
_POLY = list(
    np.array(
        [
            (0.0, 0.5),
            (1.0, 1.0),
            (1.0, -1.5),
            (2.0, 3.0),
            (3.0, 0.1),
            (4.0, 20.0),
            (1.0, 0.0),
            (1.5, 2.0),
            (-1.0, 2.0),
            (2.0, np.nan),
        ]
    ).T
)
_ZETA = list(
    np.array(
        [
            (2.0, 1.0),
            (3.0, 0.5),
            (1.5, 10.0),
            (1.0, 1.0),
            (0.5, 1.0),
            (2.0, -1.5),
            (4.0, 0.0),
            (8.0, 2.0),
            (np.inf, 2.0),
            (2.0, np.nan),
        ]
    ).T
)

_CASES = [
    ("igamma", _AX),
    ("igammac", _AX),
    ("igamma_grad_a", _AX),
    ("random_gamma_grad", _AX),
    ("betainc", _BETA),
    ("bessel_i0e", _BESSEL),
    ("bessel_i1e", _BESSEL),
    ("polygamma", _POLY),
    ("zeta", _ZETA),
]
# In float64, igammac stands for its siblings (the same two loops as igamma's, in other
# modes): each costs seconds of compiling, and float32 checks them all.
_CASES64 = [c for c in _CASES if c[0] not in ("igamma", "igamma_grad_a", "random_gamma_grad")]
_CASES_OF = {np.dtype(np.float32): _CASES, np.dtype(np.float64): _CASES64}


def _cast(dtype, args):
    return [np.asarray(x, dtype) for x in args]


def _all_values(lib, cases):
    """One function calling every case's function of ``lib`` (xform.lax or jax.lax)."""
    return lambda *argss: [
        getattr(lib, name)(*args) for (name, _), args in zip(cases, argss, strict=True)
    ]


@functools.cache
def _jax_values(dtype):
    """JAX's values of every case, computed by one jitted function."""
    cases = _CASES_OF[np.dtype(dtype)]
    with x64_for(dtype):
        argss = [_cast(dtype, args) for _, args in cases]
        return argss, jax.jit(_all_values(jax.lax, cases))(*argss)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_values_under_jit(dtype):
    argss, expected = _jax_values(dtype)
    # random_gamma_grad is no primitive: it is checked eagerly, loops and all, below.
    keep = [
        i for i, (name, _) in enumerate(_CASES_OF[np.dtype(dtype)]) if name != "random_gamma_grad"
    ]
    cases = [_CASES_OF[np.dtype(dtype)][i] for i in keep]
    with x64_for(dtype):
        got = xform.jit(_all_values(lax, cases))(*[argss[i] for i in keep])
    for (name, _), g, i in zip(cases, got, keep, strict=True):
        assert_same(g, expected[i], atol=0, what=name)


# Eagerly, a primitive compiles its one equation (bessel_i0e: through the same composition
# rule as igamma's); random_gamma_grad, a composition, runs op by op (loops in Python).
@pytest.mark.parametrize(
    "name", ["random_gamma_grad", "bessel_i0e", "bessel_i1e", "polygamma", "zeta"]
)
def test_values_eagerly(name):
    argss, expected = _jax_values(np.float32)
    i = [n for n, _ in _CASES].index(name)
    assert_same(getattr(lax, name)(*argss[i]), expected[i], atol=0, what=name)


def test_half_floats_compute_in_float32():
    a, x = np.array([0.5, 2.0, 5.0, 3.0]), np.array([0.3, 1.5, 9.0, 0.5])
    y = np.array([0.1, 0.5, 0.9, 0.3])
    f16, bf16 = np.float16, jnp.bfloat16
    # One composition with a loop (all share the float32 wrapper), one without, a CHLO op.
    cases = [
        ("bessel_i0e", _cast(f16, (x,))),
        ("polygamma", _cast(f16, (a, x))),
        ("betainc", _cast(bf16, (a, x, y))),
        ("bessel_i0e", _cast(bf16, (x,))),
        ("bessel_i1e", _cast(bf16, (x,))),
    ]
    argss = [args for _, args in cases]
    got = xform.jit(_all_values(lax, cases))(*argss)
    expected = jax.jit(_all_values(jax.lax, cases))(*argss)
    for (name, _), g, e in zip(cases, got, expected, strict=True):
        assert_same(g, e, what=name)


def test_weak_types_and_broadcasting():
    def f(lib):
        return lambda v: [
            lib.igamma(2.0, 1.5),
            lib.igammac(v, 1.5),
            lib.igamma_grad_a(2.0, v),
            lib.betainc(2.0, 3.0, v),
            lib.bessel_i0e(0.5),
            lib.bessel_i1e(v),
            lib.polygamma(1.0, np.float32(2.0)),
            lib.zeta(2.0, 1.0),
            lib.zeta(v[:, None], v[None, :]),  # size-1 dimensions broadcast
            lib.random_gamma_grad(np.float32(2.0), v),
        ]

    v = np.array([0.25, 0.5], "f4")
    got, expected = xform.eval_shape(f(lax), v), jax.eval_shape(f(jax.lax), v)
    assert [(s.shape, s.dtype, s.weak_type) for s in got] == [
        (s.shape, s.dtype, s.weak_type) for s in expected
    ]

    # The results themselves carry the weak types (the cheap functions only, under jit).
    def cheap(lib):
        return lambda v: f(lib)(v)[6:9]

    assert_same(xform.jit(cheap(lax))(v), jax.jit(cheap(jax.lax))(v))


# --------------------------------------------------------------------------- derivatives


def _grads(lib, grad):
    """The gradients of every differentiable operand of every primitive (and so the
    rules of igamma_grad_a, bessel_i1e and polygamma(m + 1) inside them)."""

    def f(a, x, y):
        return [
            grad(lambda a, x: lib.igamma(a, x).sum(), argnums=(0, 1))(a, x),
            grad(lambda a, x: lib.igammac(a, x).sum(), argnums=(0, 1))(a, x),
            grad(lambda y: lib.betainc(a, x, y).sum())(y),
            grad(lambda x: lib.bessel_i0e(x).sum())(y - 0.5),
            grad(lambda x: lib.bessel_i1e(x).sum())(y - 0.5),
            grad(lambda x: lib.polygamma(np.float32(1.0), x).sum())(x),
        ]

    return f


def test_grads_match_jax():
    # igamma: both sides of the switch at x = max(1, a); bessel at 0 and 1e-9 (i1e'(0) = 1/2).
    a = np.array([0.5, 2.0, 3.0, 20.0, 1.0], "f4")
    x = np.array([0.7, 1.5, 5.0, 18.0, 3.0], "f4")
    y = np.array([0.3, 0.5, 0.9, 0.5 + 1e-9, 0.1], "f4")
    got = xform.jit(_grads(lax, xform.grad))(a, x, y)
    assert_same(got, jax.jit(_grads(jax.lax, jax.grad))(a, x, y), rtol=1e-5)


@pytest.mark.parametrize(
    "fn, argnum, err, match",
    [
        (lax.betainc, 0, ValueError, "Betainc gradient with respect to a and b not supported"),
        (lax.betainc, 1, ValueError, "Betainc gradient with respect to a and b not supported"),
        (lax.polygamma, 0, ValueError, "polygamma gradient with respect to m is not supported"),
        (lax.zeta, 0, NotImplementedError, "Differentiation rule for 'zeta' not implemented"),
        (lax.zeta, 1, NotImplementedError, "Differentiation rule for 'zeta' not implemented"),
        (
            lax.igamma_grad_a,
            0,
            NotImplementedError,
            "Differentiation rule for 'igamma_grad_a' not implemented",
        ),
    ],
)
def test_derivatives_jax_does_not_have(fn, argnum, err, match):
    args = [np.float32(2.0), np.float32(3.0), np.float32(0.5)][: 3 if fn is lax.betainc else 2]
    with pytest.raises(err, match=match):
        xform.jit(xform.grad(fn, argnums=argnum))(*args)


def test_zeta_without_tangents_is_no_obstacle():
    fn = xform.jit(xform.grad(lambda x: x * lax.zeta(np.float32(2.0), np.float32(1.0))))
    np.testing.assert_allclose(fn(1.0), np.pi**2 / 6, rtol=1e-6)


# --------------------------------------------------------------------------- vmap


def test_vmap_matches_jax():
    # One batching rule serves every binary and ternary op (defbroadcasting): betainc stands
    # for the incomplete gamma functions, whose loops take seconds to compile.
    def f(lib, vmap):
        return lambda m, v: [
            vmap(lib.betainc, (0, None, 1))(m, np.float32(2.0), m.T),
            vmap(lib.bessel_i1e, 1)(m),
            vmap(vmap(lib.zeta, (0, None)), (None, 0))(v + 1, m[:, :1]),
            vmap(lib.polygamma, (None, 0))(np.float32(1.0), m),
        ]

    m = np.array([[0.5, 2.0], [3.0, 1.0], [9.0, 4.0]], "f4")
    v = np.array([1.0, 2.5, 0.2], "f4")
    assert_same(xform.jit(f(lax, xform.vmap))(m, v), jax.jit(f(jax.lax, jax.vmap))(m, v))


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "call, err, match",
    [
        (lambda: lax.igamma(1, 2), TypeError, "igamma does not accept dtype int32"),
        (lambda: lax.bessel_i1e(np.int32(1)), TypeError, "bessel_i1e does not accept dtype int32"),
        (
            lambda: lax.zeta(np.ones(3, "i4"), np.ones(3, "i4")),
            TypeError,
            "zeta does not accept dtype int32",
        ),
        (
            lambda: lax.betainc(np.ones(2, "f4"), np.ones(2, "f4"), np.ones(2, "f2")),
            TypeError,
            r"lax.regularized_incomplete_beta requires arguments to have the same dtypes",
        ),
        (
            lambda: lax.igammac(np.ones(3, "f4"), np.ones(4, "f4")),
            TypeError,
            r"igammac got incompatible shapes for broadcasting: \(3,\), \(4,\)",
        ),
        (
            lambda: lax.polygamma(np.ones((2, 3), "f4"), np.ones((3, 2), "f4")),
            TypeError,
            "polygamma got incompatible shapes",
        ),
        (
            lambda: lax.random_gamma_grad(np.ones(3, "i4"), np.ones(3, "i4")),
            TypeError,
            "random_gamma_grad does not accept dtype int32",
        ),
        (
            lambda: lax.random_gamma_grad(np.ones(3, "f4"), np.ones(3, "f2")),
            TypeError,
            "random_gamma_grad requires arguments to have the same dtypes",
        ),
    ],
)
def test_bad_input(call, err, match):
    with pytest.raises(err, match=match):
        call()
