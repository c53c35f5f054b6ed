"""lax.custom_linear_solve and lax.custom_root: values, implicit derivatives (jvp, grad,
linearize, second order), vmap, jit and errors, against JAX."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import xform
import xform.numpy as xnp
from tests.harness import assert_same, check_vmap
from xform import core, lax
from xform.primitives.solves import linear_solve_p

LIBS = {"xform": (xform, xnp, lax), "jax": (jax, jnp, jax.lax)}
RNG = np.random.default_rng(0)
N = 3


def _spd(rng, scale=1.0):
    m = rng.standard_normal((N, N)).astype(np.float32)
    return (scale * (m @ m.T + N * np.eye(N))).astype(np.float32)


A = _spd(RNG)
A2 = np.stack([A, _spd(RNG, 2.0)])
G = (RNG.standard_normal((N, N)) + 3 * np.eye(N)).astype(np.float32)  # not symmetric
B = RNG.standard_normal(N).astype(np.float32)
B2 = RNG.standard_normal((2, N)).astype(np.float32)
TOL = {"rtol": 2e-5, "atol": 2e-6}


def check_against_jax(xf_fn, jax_fn, *args, rtol=None, atol=None):
    """``xf_fn(*args)``, eagerly and under jit, equals ``jax.jit(jax_fn)(*args)`` (JAX's
    eager op-by-op dispatch of these programs would dominate the file's time)."""
    expected = jax.jit(jax_fn)(*args)
    got = xf_fn(*args)
    assert_same(got, expected, rtol, atol, what="eager")
    assert_same(xform.jit(xf_fn)(*args), expected, rtol, atol, what="jit")
    return got


def both(make):
    """``make(api, np_lib, lax_lib)`` built for xform and for JAX."""
    return make(*LIBS["xform"]), make(*LIBS["jax"])


def _chol_solve(lax_, a, b):
    """``a^-1 b`` for a symmetric positive-definite ``a``, by Cholesky."""
    lower = lax_.linalg.cholesky(a)
    y = lax_.linalg.triangular_solve(lower, b[:, None], left_side=True, lower=True)
    return lax_.linalg.triangular_solve(lower, y, left_side=True, lower=True, transpose_a=True)[
        :, 0
    ]


def make_dense(api, np_, lax_):
    """Symmetric: solve and transpose_solve are one Cholesky solve of ``a``."""

    def f(a, b):
        return lax_.custom_linear_solve(
            lambda x: a @ x, b, lambda mv, r: _chol_solve(lax_, a, r), symmetric=True
        )

    return f


def make_general(api, np_, lax_):
    """Not symmetric: solve through the normal equations, transpose_solve likewise."""

    def f(g, b):
        def solve(mv, r):
            return _chol_solve(lax_, g.T @ g, g.T @ r)

        def transpose_solve(vm, r):
            return _chol_solve(lax_, g @ g.T, g @ r)

        return lax_.custom_linear_solve(lambda x: g @ x, b, solve, transpose_solve)

    return f


def _cg(api, np_, lax_, steps):
    """Conjugate gradient for ``steps`` iterations of a while_loop (which reverse mode cannot
    differentiate through: only the implicit rule makes grad work)."""

    def solve(matvec, b):
        def body(state):
            i, x, r, p, rr = state
            ap = matvec(p)
            alpha = rr / np_.vdot(p, ap)
            x, r = x + alpha * p, r - alpha * ap
            rr_new = np_.vdot(r, r)
            return i + 1, x, r, r + (rr_new / rr) * p, rr_new

        init = (0, np_.zeros_like(b), b, b, np_.vdot(b, b))
        return lax_.while_loop(lambda s: s[0] < steps, body, init)[1]

    return solve


def make_cg(api, np_, lax_):
    solve = _cg(api, np_, lax_, N)

    def f(a, b):
        return lax_.custom_linear_solve(lambda x: a @ x, b, solve, symmetric=True)

    return f


DENSE, DENSE_JAX = both(make_dense)
GENERAL, GENERAL_JAX = both(make_general)
CG, CG_JAX = both(make_cg)


def _loss(f):
    return lambda a, b: (f(a, b) * np.arange(1.0, N + 1, dtype=np.float32)).sum()


# --------------------------------------------------------------------------- values


@pytest.mark.parametrize(
    "f,f_jax,a",
    [(DENSE, DENSE_JAX, A), (GENERAL, GENERAL_JAX, G), (CG, CG_JAX, A)],
    ids=["dense", "general", "cg"],
)
def test_values_against_jax_and_numpy(f, f_jax, a):
    x = check_against_jax(f, f_jax, a, B, **TOL)
    np.testing.assert_allclose(np.asarray(x), np.linalg.solve(a, B), rtol=1e-4, atol=1e-5)


def test_the_primitive_and_its_jaxpr():
    jaxpr = xform.make_jaxpr(DENSE)(A, B)
    (eqn,) = jaxpr.eqns
    assert eqn.primitive is linear_solve_p and lax.linear_solve_p is linear_solve_p
    assert eqn.params["const_lengths"] == (1, 1, 1, 1)
    assert eqn.params["vecmat"] is eqn.params["matvec"]  # symmetric: matvec is its transpose
    assert "custom_linear_solve[" in str(jaxpr)
    core.check_jaxpr(jaxpr)


def test_lowering_inlines_the_solve_only():
    text = xform.jit(DENSE).lower(A, B).as_text()
    assert "lapack_spotrf_ffi" in text and "lapack_strsm_ffi" in text
    # matvec (a dot) exists for the transformations only; nothing is outlined.
    assert "stablehlo.dot_general" not in text and text.count("func.func") == 1


def test_grad_solves_twice_and_never_differentiates_solve():
    def count(jaxpr, name):
        return sum(e.primitive.name == name for e in jaxpr.eqns)

    got = xform.make_jaxpr(xform.grad(_loss(CG), (0, 1)))(A, B)
    expected = jax.make_jaxpr(jax.grad(_loss(CG_JAX), (0, 1)))(A, B).jaxpr
    assert count(got, "custom_linear_solve") == count(expected, "custom_linear_solve") == 2
    assert count(got, "while") == count(expected, "while") == 0


def test_scalar_weak_b_and_no_transpose_solve():
    def make(api, np_, lax_):
        return lambda: lax_.custom_linear_solve(lambda x: 4.0 * x, 3.0, lambda mv, b: b / 4.0)

    f, f_jax = both(make)
    check_against_jax(f, f_jax)


def test_pytree_b_and_has_aux():
    def make(api, np_, lax_):
        def f(a, b, c):
            def matvec(v):
                return {"u": a @ v["u"], "w": 2.0 * v["w"]}

            def solve(mv, r):
                return {"u": _chol_solve(lax_, a, r["u"]), "w": r["w"] / 2.0}, r["w"].sum()

            x, aux = lax_.custom_linear_solve(
                matvec, {"u": b, "w": c}, solve, symmetric=True, has_aux=True
            )
            return x, aux

        return f

    f, f_jax = both(make)
    c = np.float32([1.0, -2.0])
    check_against_jax(f, f_jax, A, B, c, **TOL)

    def loss(f):
        def g(a, b, c):
            x, aux = f(a, b, c)
            return (x["u"] ** 2).sum() + (x["w"] * c).sum() + 0.0 * aux

        return g

    check_against_jax(
        xform.grad(loss(f), (0, 1, 2)), jax.grad(loss(f_jax), (0, 1, 2)), A, B, c, **TOL
    )
    tb, tc = np.ones(N, np.float32), np.zeros(2, np.float32)
    _, tangents = xform.jvp(lambda b, c: f(A, b, c), (B, c), (tb, tc))
    _, tangents_j = jax.jvp(jax.jit(lambda b, c: f_jax(A, b, c)), (B, c), (tb, tc))
    assert_same(tangents, tangents_j, **TOL)
    assert np.asarray(tangents[1]) == 0.0  # aux has a zero derivative
    # Only w's leaf is batched; solve keeps u unbatched.
    check_vmap(f, jax.jit(f_jax), (A, B, np.stack([c, 2 * c])), in_axes=(None, None, 0), **TOL)
    # A symbolic-zero tangent for part of b (JAX 0.10.2 fails here: it binds the Zero).
    _, tangents_b = xform.jvp(lambda b: f(A, b, c), (B,), (tb,))
    assert_same(tangents_b, tangents, **TOL)


# --------------------------------------------------------------------------- derivatives


@pytest.mark.parametrize(
    "f,f_jax,a",
    [(DENSE, DENSE_JAX, A), (GENERAL, GENERAL_JAX, G), (CG, CG_JAX, A)],
    ids=["dense", "general", "cg"],
)
def test_grad_against_jax(f, f_jax, a):
    check_against_jax(xform.grad(_loss(f), (0, 1)), jax.grad(_loss(f_jax), (0, 1)), a, B, **TOL)


def test_grad_against_the_closed_form():
    # x = A^-1 b, L = w.x: dL/db = A^-T w, dL/dA = -(A^-T w) x^T.
    w = np.arange(1.0, N + 1)
    ga, gb = xform.grad(_loss(GENERAL), (0, 1))(G, B)
    x = np.linalg.solve(G.astype(np.float64), B)
    lam = np.linalg.solve(G.T.astype(np.float64), w)
    np.testing.assert_allclose(np.asarray(gb), lam, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.asarray(ga), -np.outer(lam, x), rtol=1e-4, atol=1e-5)


def test_jvp_and_linearize_against_jax():
    ta = RNG.standard_normal((N, N)).astype(np.float32)
    tb = RNG.standard_normal(N).astype(np.float32)
    got = xform.jvp(GENERAL, (G, B), (ta, tb))
    expected = jax.jvp(jax.jit(GENERAL_JAX), (G, B), (ta, tb))
    assert_same(got, expected, **TOL)
    out, f_jvp = xform.linearize(CG, A, B)
    out_j, f_jvp_j = jax.linearize(jax.jit(CG_JAX), A, B)
    assert_same(out, out_j, **TOL)
    assert_same(f_jvp(ta, tb), f_jvp_j(ta, tb), **TOL)


def test_second_order_and_nesting_with_jit():
    check_against_jax(xform.hessian(_loss(DENSE), 1), jax.hessian(_loss(DENSE_JAX), 1), A, B, **TOL)
    check_against_jax(
        xform.grad(lambda b: xform.grad(_loss(DENSE), 0)(A, b).sum()),
        jax.grad(lambda b: jax.grad(_loss(DENSE_JAX), 0)(A, b).sum()),
        B,
        rtol=1e-4,
        atol=1e-5,
    )
    expected = jax.jit(jax.grad(_loss(CG_JAX), (0, 1)))(A, B)
    assert_same(xform.grad(xform.jit(_loss(CG)), (0, 1))(A, B), expected, **TOL)


def test_transpose_needs_transpose_solve():
    def f(b):
        return lax.custom_linear_solve(
            lambda x: A @ x, b, lambda mv, r: _chol_solve(lax, A, r)
        ).sum()

    with pytest.raises(TypeError, match="transpose_solve required for backwards mode"):
        xform.grad(f)(B)
    with pytest.raises(TypeError, match="transpose_solve required for backwards mode"):
        jax.grad(
            lambda b: jax.lax.custom_linear_solve(
                lambda x: A @ x, b, lambda mv, r: _chol_solve(jax.lax, A, r)
            ).sum()
        )(B)
    # Forward mode needs none.
    assert_same(
        xform.jvp(f, (B,), (B,)),
        jax.jvp(
            lambda b: jax.lax.custom_linear_solve(
                lambda x: A @ x, b, lambda mv, r: _chol_solve(jax.lax, A, r)
            ).sum(),
            (B,),
            (B,),
        ),
        **TOL,
    )


# --------------------------------------------------------------------------- vmap


@pytest.mark.parametrize(
    "f,f_jax,a",
    [(DENSE, DENSE_JAX, A), (GENERAL, GENERAL_JAX, G), (CG, CG_JAX, A)],
    ids=["dense", "general", "cg"],
)
def test_vmap_over_b(f, f_jax, a):
    check_vmap(f, jax.jit(f_jax), (a, B2), in_axes=(None, 0), **TOL)


def test_vmap_over_the_matrix_and_b():
    check_vmap(DENSE, jax.jit(DENSE_JAX), (A2, B2), **TOL)
    check_vmap(CG, jax.jit(CG_JAX), (A2, B), in_axes=(0, None), **TOL)
    check_vmap(DENSE, jax.jit(DENSE_JAX), (A2, B2.T), in_axes=(0, 1), **TOL)


def test_vmap_of_grad_and_grad_of_vmap():
    got = xform.vmap(xform.grad(_loss(CG), (0, 1)))(A2, B2)
    expected = jax.jit(jax.vmap(jax.grad(_loss(CG_JAX), (0, 1))))(A2, B2)
    assert_same(got, expected, **TOL)
    got = xform.grad(lambda a, b: xform.vmap(_loss(GENERAL), (None, 0))(a, b).sum(), (0, 1))(G, B2)
    expected = jax.jit(
        jax.grad(lambda a, b: jax.vmap(_loss(GENERAL_JAX), (None, 0))(a, b).sum(), (0, 1))
    )(G, B2)
    assert_same(got, expected, **TOL)


def make_coupled(api, np_, lax_):
    """A pytree b whose leaves matvec couples (w feeds u), not symmetric: batching one leaf
    batches the other in some of the four maps, which must still agree."""

    def f(a, b, c):
        def matvec(v):
            return {"u": a @ v["u"] + v["w"].sum(), "w": 2.0 * v["w"]}

        def solve(mv, r):
            w = r["w"] / 2.0
            return {"u": _chol_solve(lax_, a, r["u"] - w.sum()), "w": w}

        def transpose_solve(vm, r):  # vecmat(y) = {u: a y_u, w: sum(y_u) + 2 y_w}
            u = _chol_solve(lax_, a, r["u"])
            return {"u": u, "w": (r["w"] - u.sum()) / 2.0}

        x = lax_.custom_linear_solve(matvec, {"u": b, "w": c}, solve, transpose_solve)
        return (x["u"] * np_.arange(3.0)).sum() + (x["w"] ** 2).sum()

    return f


@pytest.mark.parametrize("axes", [(None, None, 0), (0, None, None)], ids=["c", "a"])
def test_vmap_of_grad_with_coupled_pytree_b(axes):
    f, f_jax = both(make_coupled)
    c = np.float32([1.0, -2.0])
    args = [A2 if axes[0] == 0 else A, B, np.stack([c, 2 * c]) if axes[2] == 0 else c]
    got = xform.vmap(xform.grad(f, (0, 1, 2)), axes)(*args)
    expected = jax.jit(jax.vmap(jax.grad(f_jax, (0, 1, 2)), axes))(*args)
    assert_same(got, expected, rtol=1e-4, atol=1e-5)


# --------------------------------------------------------------------------- errors


def _error_cases(lax_):
    b = {"a": B, "b": B}
    return {
        "solve shape": (
            lambda: lax_.custom_linear_solve(lambda x: x, B, lambda mv, r: r[:1]),
            ValueError,
            r"solve\(\) output shapes must match b, got \[\(1,\)\] "
            r"and \[\(3,\)\]",
        ),
        "matvec shape": (
            lambda: lax_.custom_linear_solve(lambda x: x[:2], B, lambda mv, r: r),
            ValueError,
            r"matvec\(\) output shapes must match b",
        ),
        "solve tree": (
            lambda: lax_.custom_linear_solve(lambda x: x, b, lambda mv, r: (r["a"], r["b"])),
            TypeError,
            r"solve\(\) output pytree structure must match b, got "
            r"PyTreeDef\(\(\*, \*\)\) and PyTreeDef\(\{'a': \*, 'b': \*\}\)",
        ),
        "transpose_solve tree": (
            lambda: lax_.custom_linear_solve(
                lambda x: x, b, lambda mv, r: r, lambda vm, r: [r["a"], r["b"]]
            ),
            TypeError,
            r"transpose_solve\(\) output pytree structure must match b",
        ),
        "has_aux": (
            lambda: lax_.custom_linear_solve(lambda x: x, b, lambda mv, r: r, has_aux=True),
            # JAX unpacks the dict (its keys) and complains about shapes.
            ValueError,
            r"solve\(\) ",
        ),
    }


@pytest.mark.parametrize("case", list(_error_cases(lax)))
def test_errors_as_jax(case):
    fn, error, match = _error_cases(lax)[case]
    with pytest.raises(error, match=match):
        fn()
    fn, error, match = _error_cases(jax.lax)[case]
    with pytest.raises(error, match=match):
        fn()


def test_has_aux_needs_a_pair():
    with pytest.raises(
        ValueError,
        match=r"solve\(\) produced a pytree with structure "
        r"PyTreeDef\(\{'a': \*, 'b': \*\}\), but a pytree "
        r"tuple with auxiliary output was expected",
    ):
        _error_cases(lax)["has_aux"][0]()


def test_solve_dtype_must_match_b():
    # JAX lets this through (and returns int32 eagerly, breaking under jit); xform says why.
    with pytest.raises(
        TypeError,
        match=r"solve\(\) output dtypes must match b, got "
        r"\['int32'\] and \['float32'\]",
    ):
        lax.custom_linear_solve(lambda x: x, B, lambda mv, r: r.astype(np.int32))


# --------------------------------------------------------------------------- custom_root


def make_sqrt(api, np_, lax_):
    """sqrt(a) as the root of x^2 - a, by Newton's method in a fori_loop."""

    def newton(f, x0):
        return lax_.fori_loop(0, 20, lambda i, x: x - f(x) / api.grad(f)(x), x0)

    def sqrt(a):
        return lax_.custom_root(lambda x: x**2 - a, 1.0, newton, lambda g, y: y / g(1.0))

    return sqrt


SQRT, SQRT_JAX = both(make_sqrt)
AS = np.float32([0.5, 2.0, 9.0])


def test_custom_root_scalar_against_jax_and_closed_form():
    a = np.float32(2.0)
    check_against_jax(SQRT, SQRT_JAX, a, **TOL)
    g = check_against_jax(xform.grad(SQRT), jax.grad(SQRT_JAX), a, **TOL)
    np.testing.assert_allclose(np.asarray(g), 0.5 / np.sqrt(2.0), rtol=1e-6)
    gg = check_against_jax(xform.grad(xform.grad(SQRT)), jax.grad(jax.grad(SQRT_JAX)), a, **TOL)
    np.testing.assert_allclose(np.asarray(gg), -0.25 * 2.0**-1.5, rtol=1e-5)
    assert_same(
        xform.jvp(SQRT, (a,), (np.float32(3.0),)),
        jax.jvp(jax.jit(SQRT_JAX), (a,), (np.float32(3.0),)),
        **TOL,
    )


def test_custom_root_vmap():
    check_vmap(SQRT, jax.jit(SQRT_JAX), (AS,), **TOL)
    got = xform.vmap(xform.grad(SQRT))(AS)
    assert_same(got, jax.jit(jax.vmap(jax.grad(SQRT_JAX)))(AS), **TOL)
    np.testing.assert_allclose(np.asarray(got), 0.5 / np.sqrt(AS), rtol=1e-5)


def make_vector_root(api, np_, lax_):
    """The root of ``A x + x^3 / 10 - b`` by Newton, with a tangent solve that is itself a
    custom_linear_solve (through the Jacobian of the linearized map)."""

    def jac_solve(g, y):
        def solve(mv, r):
            return _chol_solve(lax_, api.jacfwd(mv)(r), r)

        return lax_.custom_linear_solve(g, y, solve, symmetric=True)

    def newton(f, x0):
        return lax_.fori_loop(
            0, 8, lambda i, x: x - jac_solve(lambda v: api.jvp(f, (x,), (v,))[1], f(x)), x0
        )

    def root(a, b):
        return lax_.custom_root(
            lambda x: a @ x + x**3 / 10.0 - b, np_.zeros_like(b), newton, jac_solve
        )

    return root


def test_custom_root_vector_with_custom_linear_solve_inside():
    root, root_jax = both(make_vector_root)
    x = check_against_jax(root, root_jax, A, B, **TOL)
    np.testing.assert_allclose(np.asarray(A @ x + x**3 / 10 - B), 0.0, atol=1e-5)
    check_against_jax(
        xform.grad(_loss(root), (0, 1)),
        jax.grad(_loss(root_jax), (0, 1)),
        A,
        B,
        rtol=1e-4,
        atol=1e-5,
    )


def test_custom_root_has_aux_and_pytrees():
    def make(api, np_, lax_):
        def solve(f, x0):
            x = lax_.fori_loop(0, 20, lambda i, x: {"r": x["r"] - f(x)["r"] / (2 * x["r"])}, x0)
            return x, x["r"] * 0 + 20

        def f(a):
            return lax_.custom_root(
                lambda x: {"r": x["r"] ** 2 - a},
                {"r": 1.0},
                solve,
                lambda g, y: {"r": y["r"] / g({"r": 1.0})["r"]},
                has_aux=True,
            )

        return f

    f, f_jax = both(make)
    check_against_jax(f, f_jax, np.float32(3.0), **TOL)
    check_against_jax(
        xform.grad(lambda a: f(a)[0]["r"]),
        jax.grad(lambda a: f_jax(a)[0]["r"]),
        np.float32(3.0),
        **TOL,
    )


def _root_error_cases(lax_):
    def newton(f, x0):
        return x0

    return {
        "f tree": (
            lambda: lax_.custom_root(lambda x: (x, x), 1.0, newton, lambda g, y: y),
            TypeError,
            r"f\(\) output pytree structure must match initial_guess",
        ),
        "solve tree": (
            lambda: lax_.custom_root(lambda x: x, 1.0, lambda f, x: (x, x), lambda g, y: y),
            TypeError,
            r"solve\(\) output pytree structure must match "
            r"initial_guess, got PyTreeDef\(\(\*, \*\)\) and "
            r"PyTreeDef\(\*\)",
        ),
        "tangent_solve tree": (
            lambda: lax_.custom_root(lambda x: x, 1.0, newton, lambda g, y: [y]),
            TypeError,
            r"tangent_solve\(\) output pytree structure must "
            r"match x",
        ),
        "has_aux": (
            lambda: lax_.custom_root(lambda x: x, 1.0, newton, lambda g, y: y, has_aux=True),
            ValueError,
            r"solve\(\) produced a pytree with structure PyTreeDef\(\*\), "
            r"but a pytree tuple with auxiliary output was expected",
        ),
    }


@pytest.mark.parametrize("case", list(_root_error_cases(lax)))
def test_custom_root_errors_as_jax(case):
    for lax_ in (lax, jax.lax):
        fn, error, match = _root_error_cases(lax_)[case]
        with pytest.raises(error, match=match):
            fn()
