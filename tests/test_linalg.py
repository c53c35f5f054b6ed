"""The core linear-algebra primitives (cholesky, triangular_solve, lu, lu_pivots_to_permutation,
tridiagonal_solve) against jax.lax.linalg: values, eagerly and under jit, float32/float64/
complex, batch dimensions, vmap, derivatives, lowered kernel calls and bad input."""

import re

import hypothesis.extra.numpy as hnp
import hypothesis.strategies as st
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from jax.lax import linalg as jla

import xform
from tests.harness import assert_same, check_vmap, x64_for
from xform.lax import linalg as la
from xform.test_util import check_grads

DTYPES = [np.float32, np.float64, np.complex64]
TOL = {np.float32: 1e-4, np.float64: 1e-10, np.complex64: 1e-4}


def _spd(rng, batch, n, dtype):
    """Well-conditioned Hermitian positive-definite matrices."""
    m = rng.standard_normal(batch + (n, n))
    if np.issubdtype(dtype, np.complexfloating):
        m = m + 1j * rng.standard_normal(batch + (n, n))
    a = m @ np.conj(np.swapaxes(m, -1, -2)) + n * np.eye(n)
    return a.astype(dtype)


def _general(rng, shape, dtype):
    x = rng.standard_normal(shape)
    if np.issubdtype(dtype, np.complexfloating):
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def _close(got, expected, dtype, what=""):
    assert_same(got, expected, rtol=TOL[dtype], atol=TOL[dtype], check_weak_type=False, what=what)


# --------------------------------------------------------------------------- values


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("batch", [(), (2,)], ids=["matrix", "batched"])
def test_cholesky_matches_jax(dtype, batch):
    rng = np.random.default_rng(0)
    with x64_for(dtype):
        a = _spd(rng, batch, 4, dtype)
        expected = jla.cholesky(a)
        _close(la.cholesky(a), expected, dtype, "eager")
        _close(xform.jit(la.cholesky)(a), expected, dtype, "jit")
        factor = np.asarray(la.cholesky(a))
        np.testing.assert_allclose(
            factor @ np.conj(np.swapaxes(factor, -1, -2)),
            a,
            rtol=TOL[dtype] * 10,
            atol=TOL[dtype] * 10,
        )
        # Only the lower triangle is read without symmetrization.
        upper_junk = a + np.triu(np.ones_like(a), 1) * 7
        _close(
            la.cholesky(upper_junk, symmetrize_input=False),
            jla.cholesky(upper_junk, symmetrize_input=False),
            dtype,
            "lower triangle",
        )


SOLVE_CASES = [
    dict(left_side=True, lower=True),
    dict(left_side=True, lower=False, transpose_a=True),
    dict(left_side=False, lower=True, unit_diagonal=True),
    dict(left_side=False, lower=False, transpose_a=True, conjugate_a=True),
    dict(left_side=True, lower=True, conjugate_a=True),
]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("kw", SOLVE_CASES, ids=lambda kw: "-".join(k for k in kw if kw[k]))
def test_triangular_solve_matches_jax(dtype, kw):
    rng = np.random.default_rng(1)
    with x64_for(dtype):
        a = _general(rng, (2, 4, 4), dtype) + 4 * np.eye(4, dtype=dtype)
        b = _general(rng, (2, 4, 3) if kw["left_side"] else (2, 3, 4), dtype)
        expected = jla.triangular_solve(a, b, **kw)
        _close(la.triangular_solve(a, b, **kw), expected, dtype, "eager")
        _close(
            xform.jit(lambda a, b: la.triangular_solve(a, b, **kw))(a, b), expected, dtype, "jit"
        )


@pytest.mark.parametrize("left_side", [True, False])
def test_triangular_solve_of_a_vector_per_matrix_matches_jax(left_side):
    # b with one dimension less than a: a column (left_side) or a row per matrix, as JAX.
    rng = np.random.default_rng(3)
    a = _general(rng, (2, 4, 4), np.float32) + 4 * np.eye(4, dtype=np.float32)
    b = _general(rng, (2, 4), np.float32)
    kw = dict(left_side=left_side, lower=True, transpose_a=True)
    expected = jla.triangular_solve(a, b, **kw)
    assert expected.shape == (2, 4)
    _close(la.triangular_solve(a, b, **kw), expected, np.float32, "eager")
    grad = xform.grad(lambda a, b: la.triangular_solve(a, b, **kw).sum(), (0, 1))(a, b)
    want = jax.grad(lambda a, b: jla.triangular_solve(a, b, **kw).sum(), (0, 1))(a, b)
    for g, w in zip(grad, want, strict=True):
        _close(g, w, np.float32, "grad")


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", [(4, 4), (2, 5, 3), (3, 5)], ids=str)
def test_lu_matches_jax(dtype, shape):
    rng = np.random.default_rng(2)
    with x64_for(dtype):
        x = _general(rng, shape, dtype)
        expected = jla.lu(x)
        got = la.lu(x)
        _close(got[0], expected[0], dtype, "lu")
        for g, e in zip(got[1:], expected[1:], strict=True):
            assert_same(g, e, what="pivots/permutation")
        got_jit = xform.jit(la.lu)(x)
        for g, e in zip(got_jit, got, strict=True):
            np.testing.assert_array_equal(np.asarray(g), np.asarray(e))  # eager equals jit
        # P x == L U
        lu_, _, perm = (np.asarray(v) for v in got)
        m, n = shape[-2:]
        k = min(m, n)
        lower = np.tril(lu_[..., :, :k], -1) + np.eye(m, k, dtype=dtype)
        upper = np.triu(lu_[..., :k, :])
        permuted = np.take_along_axis(x, perm[..., :, None], axis=-2)
        np.testing.assert_allclose(
            lower @ upper, permuted, rtol=TOL[dtype] * 10, atol=TOL[dtype] * 10
        )


def test_lu_pivots_to_permutation_matches_jax():
    pivots = np.array([[2, 2, 3], [0, 1, 2], [3, 3, 3]], np.int32)
    for size in (3, 5):
        p = pivots if size == 5 else np.minimum(pivots, 2)
        expected = jla.lu_pivots_to_permutation(p, size)
        assert_same(la.lu_pivots_to_permutation(p, size), expected)
        assert_same(xform.jit(lambda p, s=size: la.lu_pivots_to_permutation(p, s))(p), expected)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_tridiagonal_solve_matches_jax(dtype):
    rng = np.random.default_rng(3)
    with x64_for(dtype):
        dl, du = (_general(rng, (2, 5), dtype) for _ in range(2))
        d = _general(rng, (2, 5), dtype) + 5
        b = _general(rng, (2, 5, 3), dtype)
        expected = jla.tridiagonal_solve(dl, d, du, b)
        _close(la.tridiagonal_solve(dl, d, du, b), expected, dtype, "eager")
        _close(xform.jit(la.tridiagonal_solve)(dl, d, du, b), expected, dtype, "jit")


def test_tridiagonal_solve_perturbed_for_singular_systems():
    ones = np.ones(3, np.float32)
    d = np.array([1.0, 0.0, 1.0], np.float32)  # a zero pivot: gtsv fails, the perturbed solve
    b = np.ones((3, 2), np.float32)
    for perturb in (False, True):
        expected = jla.tridiagonal_solve(ones, d, ones, b, perturb_singular=perturb)
        got = la.tridiagonal_solve(ones, d, ones, b, perturb_singular=perturb)
        assert_same(got, expected, rtol=1e-5, atol=1e-5, check_weak_type=False)
    got = xform.jvp(
        lambda d: la.tridiagonal_solve(ones, d, ones, b, perturb_singular=True), (d + 2,), (ones,)
    )
    expected = jax.jvp(
        lambda d: jla.tridiagonal_solve(ones, d, ones, b, perturb_singular=True), (d + 2,), (ones,)
    )
    assert_same(got, expected, rtol=1e-5, atol=1e-5, check_weak_type=False)
    text = (
        xform.jit(lambda *a: la.tridiagonal_solve(*a, perturb_singular=True))
        .lower(ones, d, ones, b)
        .as_text()
    )
    assert "@tridiagonal_solve_perturbed_ffi" in text


def test_failures_give_nan_as_jax():
    indefinite = -np.eye(3, dtype=np.float32)
    assert_same(la.cholesky(indefinite), jla.cholesky(indefinite), check_weak_type=False)
    singular = np.zeros((3, 3), np.float32)
    for g, e in zip(la.lu(singular), jla.lu(singular), strict=True):
        assert_same(g, e, check_weak_type=False)
    # One bad matrix in a batch spoils only its own result.
    batch = np.stack([np.eye(3, dtype=np.float32), indefinite])
    got = np.asarray(xform.jit(la.cholesky)(batch))
    assert np.isnan(got[1]).any() and not np.isnan(got[0]).any()


def test_empty_matrices():
    for shape in [(0, 0), (2, 0, 0)]:
        x = np.zeros(shape, np.float32)
        assert_same(la.cholesky(x), jla.cholesky(x), check_weak_type=False)
        for g, e in zip(la.lu(x), jla.lu(x), strict=True):
            assert_same(g, e, check_weak_type=False)


# --------------------------------------------------------------------------- vmap


def test_vmap_over_a_non_leading_axis():
    rng = np.random.default_rng(4)
    a = _spd(rng, (3,), 4, np.float32)
    b = _general(rng, (3, 4, 2), np.float32)
    moved = np.moveaxis(a, 0, 2)
    check_vmap(
        la.cholesky, jla.cholesky, (moved,), in_axes=2, rtol=1e-4, atol=1e-4, check_weak_type=False
    )
    solve = dict(left_side=True, lower=True)
    check_vmap(
        lambda a, b: la.triangular_solve(a, b, **solve),
        lambda a, b: jla.triangular_solve(a, b, **solve),
        (moved, b),
        in_axes=(2, 0),
        rtol=1e-4,
        atol=1e-4,
        check_weak_type=False,
    )
    # An unmapped matrix with mapped right-hand sides.
    check_vmap(
        lambda b: la.triangular_solve(a[0], b, **solve),
        lambda b: jla.triangular_solve(a[0], b, **solve),
        (np.moveaxis(b, 0, 2),),
        in_axes=2,
        rtol=1e-4,
        atol=1e-4,
        check_weak_type=False,
    )
    x = _general(rng, (4, 3, 4), np.float32)
    check_vmap(la.lu, jla.lu, (x,), in_axes=1, rtol=1e-5, atol=1e-5, check_weak_type=False)


# --------------------------------------------------------------------------- derivatives


def _grads_close(xf, jf, args, argnums, tol):
    # Under jit: one compile per program, where eager evaluation compiles each kernel call.
    got = xform.jit(xform.grad(xf, argnums))(*args)
    expected = jax.jit(jax.grad(jf, argnums))(*args)
    assert_same(got, expected, rtol=tol, atol=tol, check_weak_type=False, what="grad")


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: np.dtype(d).name)
def test_gradients_match_jax(dtype):
    rng = np.random.default_rng(5)
    tol = TOL[dtype] * 10
    with x64_for(dtype):
        a = _spd(rng, (2,), 4, dtype)
        b = _general(rng, (2, 4, 3), dtype)
        w = _general(rng, (2, 4, 4), dtype)

        def chol(lib):
            return lambda a: (lib.cholesky(a) * w).sum()

        _grads_close(chol(la), chol(jla), (a,), 0, tol)
        for kw in SOLVE_CASES[:3]:
            bb = b if kw["left_side"] else np.swapaxes(b, -1, -2)

            def tri(lib, kw=kw):
                return lambda a, b: (lib.triangular_solve(a, b, **kw) ** 2).sum()

            _grads_close(tri(la), tri(jla), (a, bb), (0, 1), tol)

        def lu_loss(lib):
            return lambda x: (lib.lu(x)[0] * w[..., :, :3]).sum()

        x = _general(rng, (2, 4, 3), dtype)
        _grads_close(lu_loss(la), lu_loss(jla), (x,), 0, tol)
        dl, du = (_general(rng, (2, 4), dtype) for _ in range(2))
        d = _general(rng, (2, 4), dtype) + 4

        def tridiag(lib):
            return lambda dl, d, du, b: (lib.tridiagonal_solve(dl, d, du, b) ** 2).sum()

        _grads_close(tridiag(la), tridiag(jla), (dl, d, du, b), (0, 1, 2, 3), tol)


def test_jvp_of_cholesky_and_second_order():
    rng = np.random.default_rng(6)
    a = _spd(rng, (), 3, np.float32)
    t = _general(rng, (3, 3), np.float32)
    t = t + t.T
    got = xform.jvp(la.cholesky, (a,), (t,))
    expected = jax.jvp(jla.cholesky, (a,), (t,))
    assert_same(got, expected, rtol=1e-4, atol=1e-4, check_weak_type=False)

    def logdet(lib):
        return lambda a: 2 * jnp.sum(jnp.log(jnp.diagonal(lib.cholesky(a))))

    def xf_logdet(a):
        factor = la.cholesky(a)
        return 2 * xform.numpy.sum(xform.numpy.log(xform.numpy.diagonal(factor)))

    h = xform.jit(xform.hessian(xf_logdet))(a)
    h_jax = jax.jit(jax.hessian(logdet(jla)))(a)
    assert_same(h, h_jax, rtol=1e-3, atol=1e-3, check_weak_type=False)


def test_check_grads_to_second_order():
    rng = np.random.default_rng(7)
    with xform.enable_x64():
        a = _spd(rng, (), 3, np.float64)
        b = _general(rng, (3, 2), np.float64)
        check_grads(la.cholesky, (a,), order=2, atol=1e-5, rtol=1e-5)
        check_grads(
            lambda a, b: la.triangular_solve(a, b, left_side=True, lower=True),
            (a, b),
            order=2,
            atol=1e-5,
            rtol=1e-5,
        )
        check_grads(lambda x: la.lu(x)[0], (a,), order=2, atol=1e-5, rtol=1e-5)


# --------------------------------------------------------------------------- lowering


def _targets(text):
    return sorted(set(re.findall(r"@(lapack_\w+)", text)))


@pytest.mark.parametrize("dtype", [np.float32, np.complex64], ids=lambda d: np.dtype(d).name)
def test_lowered_kernels_are_jaxs(dtype):
    a = np.eye(3, dtype=dtype)[None].repeat(2, 0)
    b = np.ones((2, 3, 2), dtype)
    d = np.ones((2, 3), dtype)
    cases = [
        (la.cholesky, jla.cholesky, (a,)),
        (
            lambda a, b: la.triangular_solve(a, b, left_side=True),
            lambda a, b: jla.triangular_solve(a, b, left_side=True),
            (a, b),
        ),
        (la.lu, jla.lu, (a,)),
        (la.tridiagonal_solve, jla.tridiagonal_solve, (d, d, d, b)),
    ]
    for xf, jf, args in cases:
        ours = xform.jit(xf).lower(*args).as_text()
        theirs = jax.jit(jf).lower(*args).as_text()
        assert _targets(ours) == _targets(theirs) != []
        assert 'num_batch_dims = "1"' in ours


# --------------------------------------------------------------------------- bad input


def test_bad_input_errors():
    with pytest.raises(ValueError, match=r"cholesky.*square.*\(3, 4\)"):
        la.cholesky(np.ones((3, 4), np.float32))
    with pytest.raises(ValueError, match=r"cholesky.*square.*\(3, 4\)"):
        la.cholesky(np.ones((3, 4), np.float32), symmetrize_input=False)
    with pytest.raises(TypeError, match=r"cholesky.*at least 2 dimensions"):
        la.cholesky(np.ones((3,), np.float32))
    with pytest.raises(TypeError, match=r"cholesky does not accept dtype int32"):
        la.cholesky(np.eye(3, dtype=np.int32))
    with pytest.raises(TypeError, match=r"cholesky does not accept dtype int32"):
        la.cholesky(np.eye(3, dtype=np.int32), symmetrize_input=False)
    with pytest.raises(ValueError, match=r"triangular_solve.*b's rows \(3\)"):
        la.triangular_solve(
            np.eye(4, dtype=np.float32), np.ones((3, 2), np.float32), left_side=True
        )
    with pytest.raises(TypeError, match=r"triangular_solve.*same dtype"):
        la.triangular_solve(
            np.eye(2, dtype=np.float32), np.ones((2, 2), np.complex64), left_side=True
        )
    with pytest.raises(ValueError, match=r"lu_pivots_to_permutation.*at least"):
        la.lu_pivots_to_permutation(np.zeros((4,), np.int32), 2)


# --------------------------------------------------------------------------- completeness

# Names of jax.lax.linalg that cannot exist here, with the reason.
LAX_LINALG_EXEMPT = {
    "cholesky_update_p": "xform's cholesky_update is a composition of lax operations (a loop "
    "of Givens rotations), so it has no primitive object",
}


def test_every_name_of_jax_lax_linalg():
    public = {n for n in dir(jla) if not n.startswith("_")}
    missing = sorted(public - set(dir(la)) - set(LAX_LINALG_EXEMPT))
    assert not missing, f"xform.lax.linalg lacks {missing}"
    assert not set(LAX_LINALG_EXEMPT) & set(dir(la)), "an exempt name exists: drop its entry"


# --------------------------------------------------------------------------- property tests


@st.composite
def _well_conditioned(draw, n=3):
    """An SPD float64 matrix with eigenvalues at least 1 and 0.5 apart (so eigenvalues are
    differentiable), and a right-hand side."""
    m = draw(hnp.arrays(np.float64, (n, n), elements=st.floats(-1, 1)))
    q, _ = np.linalg.qr(m + 3 * np.eye(n))
    gaps = draw(hnp.arrays(np.float64, (n,), elements=st.floats(0.5, 2)))
    w = 0.5 + np.cumsum(gaps)
    b = draw(hnp.arrays(np.float64, (n,), elements=st.floats(-2, 2)))
    return q @ np.diag(w) @ q.T, b


@given(_well_conditioned())
def test_check_grads_on_drawn_matrices(ab):
    a, b = ab
    with xform.enable_x64():
        check_grads(la.cholesky, (a,), order=2, atol=1e-4, rtol=1e-4)
        check_grads(xform.numpy.linalg.solve, (a, b), order=2, atol=1e-4, rtol=1e-4)
        check_grads(lambda a: xform.numpy.linalg.slogdet(a)[1], (a,), order=2, atol=1e-4, rtol=1e-4)
        check_grads(xform.numpy.linalg.eigvalsh, (a,), order=1, atol=1e-4, rtol=1e-4)
