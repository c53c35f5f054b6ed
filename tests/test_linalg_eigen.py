"""The eigen family (eigh, eig, schur, hessenberg, tridiagonal) against jax.lax.linalg: values
eagerly and under jit, float32/float64/complex64, batch dimensions, reconstructions, options,
vmap, derivatives (and JAX's refusals), lowered kernel calls, failures and bad input."""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.lax import linalg as jla

import xform
import xform.numpy as xnp
from tests.harness import assert_same, check_vmap, x64_for
from xform.lax import linalg as la
from xform.test_util import check_grads

DTYPES = [np.float32, np.float64, np.complex64]
TOL = {np.float32: 1e-4, np.float64: 1e-10, np.complex64: 1e-4}
BATCH = (2,)
N = 4


def _general(rng, shape, dtype):
    x = rng.standard_normal(shape)
    if np.issubdtype(dtype, np.complexfloating):
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def _hermitian(rng, shape, dtype):
    x = _general(rng, shape, dtype)
    return ((x + np.conj(np.swapaxes(x, -1, -2))) / 2).astype(dtype)


def _h(x):
    return np.conj(np.swapaxes(x, -1, -2))


def _close(got, expected, dtype, what="", scale=1):
    tol = TOL[np.dtype(dtype).type] * scale
    assert_same(got, expected, rtol=tol, atol=tol, check_weak_type=False, what=what)


def _same_columns_up_to_phase(v, v_ref, dtype):
    """Unit-norm columns equal up to a sign (real) or phase (complex): |<v_i, v_ref_i>| = 1."""
    overlap = np.abs(np.sum(np.conj(np.asarray(v)) * np.asarray(v_ref), axis=-2))
    np.testing.assert_allclose(overlap, 1, atol=TOL[np.dtype(dtype).type] * 10)


def _ops(lib):
    """Each op as a function of one matrix, for the value tests."""
    return {
        "eigh": lib.eigh,
        "eig": lib.eig,
        "schur": lib.schur,
        "hessenberg": lib.hessenberg,
        "tridiagonal": lib.tridiagonal,
    }


# --------------------------------------------------------------------------- values


def _check_eigh(x, dtype, v, w, v_ref, w_ref):
    _close(w, w_ref, dtype, "eigh w")
    assert np.asarray(w).dtype == np.finfo(dtype).dtype  # real eigenvalues
    assert np.all(np.diff(np.asarray(w), axis=-1) >= 0)  # ascending
    _same_columns_up_to_phase(v, v_ref, dtype)
    v, w = np.asarray(v), np.asarray(w)
    sym = (x + _h(x)) / 2
    _close((v * w[..., None, :]) @ _h(v), sym, dtype, "V diag(w) V^H == A", 10)
    _close(
        _h(v) @ v,
        np.broadcast_to(np.eye(x.shape[-1], dtype=dtype), x.shape),
        dtype,
        "V^H V == I",
        10,
    )


def _check_eig(x, dtype, outs, outs_ref):
    w, vl, vr = outs
    cdtype = np.result_type(dtype, np.complex64)
    assert all(np.asarray(o).dtype == cdtype for o in outs)
    _close(w, outs_ref[0], dtype, "eig w")
    _same_columns_up_to_phase(vl, outs_ref[1], dtype)
    _same_columns_up_to_phase(vr, outs_ref[2], dtype)
    w, vl, vr = (np.asarray(o) for o in outs)
    _close(x @ vr, vr * w[..., None, :], dtype, "A vr == vr w", 10)
    _close(_h(vl) @ x, w[..., :, None] * _h(vl), dtype, "vl^H A == w vl^H", 10)


def _check_schur(x, dtype, outs, outs_ref):
    _close(outs, outs_ref, dtype, "schur")
    t, vs = (np.asarray(o) for o in outs)
    _close(vs @ t @ _h(vs), x, dtype, "Q T Q^H == A", 10)
    # Upper triangular; real Schur forms have 2x2 blocks on the diagonal.
    k = -2 if np.isrealobj(x) else -1
    assert np.all(np.tril(t, k) == 0)


def _householder_q(a, taus, below):
    """The unitary ``Q = H_0 H_1 ...`` of LAPACK's reflectors ``H_i = I - tau_i v_i v_i^H``,
    ``v_i`` one at ``i + below - 1`` and ``a[i + below:, i]`` after it."""
    n = a.shape[-1]
    q = np.eye(n, dtype=a.dtype)
    for i in range(taus.shape[-1]):
        v = np.zeros(n, a.dtype)
        v[i + below - 1] = 1
        v[i + below :] = a[i + below :, i]
        q = q @ (np.eye(n, dtype=a.dtype) - taus[i] * np.outer(v, np.conj(v)))
    return q


def _check_hessenberg(x, dtype, outs, outs_ref):
    _close(outs, outs_ref, dtype, "hessenberg")
    a, taus = (np.asarray(o) for o in outs)
    for b in range(x.shape[0]):
        q = _householder_q(a[b], taus[b], 2)
        _close(q @ np.triu(a[b], -1) @ _h(q), x[b], dtype, "Q H Q^H == A", 10)


def _check_tridiagonal(x, dtype, outs, outs_ref):
    _close(outs, outs_ref, dtype, "tridiagonal")
    _, d, e, _ = (np.asarray(o) for o in outs)
    assert d.dtype == e.dtype == np.finfo(dtype).dtype
    # Same eigenvalues as the (Hermitian) input's lower triangle.
    lower = np.tril(x) + _h(np.tril(x, -1))
    lower[..., range(N), range(N)] = np.real(np.diagonal(x, axis1=-2, axis2=-1))
    t = np.zeros(x.shape, d.dtype)
    t[..., range(N), range(N)] = d
    t[..., range(1, N), range(N - 1)] = e
    t[..., range(N - 1), range(1, N)] = e
    _close(np.linalg.eigvalsh(t), np.linalg.eigvalsh(lower), dtype, "same spectrum", 10)


OPS, JOPS = _ops(la), _ops(jla)
_JIT = {name: jax.jit(f) for name, f in JOPS.items()}
_XJIT = {name: xform.jit(f) for name, f in OPS.items()}


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_values_match_jax_eagerly_and_under_jit(dtype):
    rng = np.random.default_rng(0)
    with x64_for(dtype):
        x = _general(rng, BATCH + (N, N), dtype)
        h = _hermitian(rng, BATCH + (N, N), dtype)
        if not np.iscomplexobj(x):
            # A real matrix with a complex pair: geev's split real and imaginary parts.
            assert np.any(np.iscomplex(np.linalg.eigvals(x)))
        for name in OPS:
            arg = h if name in ("eigh", "tridiagonal") else x
            expected = _JIT[name](arg)
            for how, got in (("eager", OPS[name](arg)), ("jit", _XJIT[name](arg))):
                assert type(got) is type(expected), f"{name} {how}: {type(got)}"
                assert len(got) == len(expected)
                if name == "eigh":
                    _check_eigh(h, dtype, *got, *expected)
                elif name == "eig":
                    _check_eig(x, dtype, got, expected)
                elif name == "schur":
                    _check_schur(x, dtype, got, expected)
                elif name == "hessenberg":
                    _check_hessenberg(x, dtype, got, expected)
                else:
                    _check_tridiagonal(h, dtype, got, expected)


def test_a_single_matrix_and_complex128():
    rng = np.random.default_rng(1)
    x = _general(rng, (3, 3), np.float32)
    for name, f in OPS.items():
        _close(f(x)[-1], _JIT[name](x)[-1], np.float32, name)
    with xform.enable_x64(), jax.enable_x64(True):
        z = _hermitian(rng, (2, 3, 3), np.complex128)
        v, w = la.eigh(z)
        assert np.asarray(v).dtype == np.complex128 and np.asarray(w).dtype == np.float64
        np.testing.assert_allclose(
            (np.asarray(v) * np.asarray(w)[..., None, :]) @ _h(v), z, atol=1e-12
        )
        np.testing.assert_allclose(
            np.asarray(la.eig(z)[0]), np.asarray(_JIT["eig"](z)[0]), atol=1e-12
        )


# --------------------------------------------------------------------------- options


def test_eigh_options_match_jax():
    rng = np.random.default_rng(2)
    h = _hermitian(rng, (2, 3, 3), np.float32)
    junk = h + np.triu(np.full_like(h, 5), 1)  # only one triangle is read
    for kw in (
        dict(symmetrize_input=False),
        dict(symmetrize_input=False, lower=False),
        dict(sort_eigenvalues=False),
        dict(subset_by_index=(0, 3)),
        dict(implementation=la.EighImplementation.QR),
    ):
        jkw = dict(kw, implementation=jla.EighImplementation.QR) if "implementation" in kw else kw
        got, expected = la.eigh(junk, **kw), jla.eigh(junk, **jkw)
        _close(got[1], expected[1], np.float32, str(kw))
        _same_columns_up_to_phase(got[0], expected[0], np.float32)
    # The CPU kernel computes every eigenvalue: a proper subset cannot be compiled.
    sub = xform.make_jaxpr(lambda x: la.eigh(x, subset_by_index=(1, 3)))(h)
    assert sub.out_avals[0].shape == (2, 3, 2) and sub.out_avals[1].shape == (2, 2)
    with pytest.raises(NotImplementedError, match="subset_by_index not supported on CPU"):
        la.eigh(h, subset_by_index=(1, 3))
    with pytest.raises(NotImplementedError, match="Jacobi implementation is not supported"):
        la.eigh(h, implementation=la.EighImplementation.JACOBI)
    with pytest.raises(ValueError, match=r"eigh: subset_by_index.*\(0, 4\)"):
        la.eigh(h, subset_by_index=(0, 4))


def test_eig_and_schur_options_match_jax():
    rng = np.random.default_rng(3)
    x = _general(rng, (2, 3, 3), np.float32)
    for left, right in ((False, True), (True, False), (False, False)):
        kw = dict(compute_left_eigenvectors=left, compute_right_eigenvectors=right)
        got, expected = la.eig(x, **kw), jla.eig(x, **kw)
        assert type(got) is list and len(got) == len(expected) == 1 + left + right
        _close(got[0], expected[0], np.float32, str(kw))
    with pytest.raises(ValueError, match="Only the lapack implementation"):
        la.eig(x, implementation=la.EigImplementation.MAGMA)
    with pytest.warns(DeprecationWarning, match="use_magma is deprecated"):
        w = la.eig(x, use_magma=False)[0]
    _close(w, jla.eig(x)[0], np.float32, "use_magma=False")
    got, expected = (
        la.schur(x, compute_schur_vectors=False),
        jla.schur(x, compute_schur_vectors=False),
    )
    assert len(got) == len(expected) == 1
    _close(got, expected, np.float32, "schur without vectors")
    with pytest.raises(NotImplementedError, match="sort feature of LAPACK's gees"):
        la.schur(x, sort_eig_vals=True)
    h = _hermitian(rng, (2, 3, 3), np.complex64)
    _close(
        la.tridiagonal(h, lower=False),
        jla.tridiagonal(h, lower=False),
        np.complex64,
        "tridiagonal upper",
    )


def test_failures_give_nan_and_empty_matrices_as_jax():
    bad = np.full((2, 3, 3), np.nan, np.float32)
    bad[0] = np.eye(3)
    for name, f in OPS.items():
        got, expected = f(bad), _JIT[name](bad)
        for g, e in zip(got, expected, strict=True):
            nan = np.isnan(np.asarray(g))
            np.testing.assert_array_equal(nan, np.isnan(np.asarray(e)), err_msg=name)
            assert not nan[0].any(), name  # one bad matrix spoils only its own results
    for shape in [(0, 0), (2, 0, 0)]:
        z = np.zeros(shape, np.float32)
        for name in ("eigh", "eig", "schur"):
            assert_same(OPS[name](z), _JIT[name](z), check_weak_type=False, what=name)
    one = np.full((1, 1), 2.0, np.float32)
    for name in ("hessenberg", "tridiagonal"):
        assert_same(OPS[name](one), _JIT[name](one), check_weak_type=False, what=name)


# --------------------------------------------------------------------------- vmap


def test_vmap_over_a_non_leading_axis():
    rng = np.random.default_rng(4)
    x = np.moveaxis(_general(rng, (3, N, N), np.float32), 0, 1)  # mapped axis 1
    h = np.moveaxis(_hermitian(rng, (3, N, N), np.float32), 0, 2)  # mapped axis 2
    for name in OPS:
        arg, axis = (h, 2) if name in ("eigh", "tridiagonal") else (x, 1)
        check_vmap(
            OPS[name],
            JOPS[name],
            (arg,),
            in_axes=axis,
            rtol=1e-5,
            atol=1e-5,
            check_weak_type=False,
            jit=name in ("eigh", "eig"),
        )


# --------------------------------------------------------------------------- derivatives


@pytest.mark.parametrize("dtype", [np.float32, np.complex64], ids=lambda d: np.dtype(d).name)
def test_eigh_jvp_matches_jax(dtype):
    rng = np.random.default_rng(5)
    x = _hermitian(rng, BATCH + (N, N), dtype)
    t = _general(rng, BATCH + (N, N), dtype)
    expected = jax.jit(lambda x, t: jax.jvp(jla.eigh, (x,), (t,)))(x, t)
    got = xform.jvp(la.eigh, (x,), (t,))
    _close(got, expected, dtype, "jvp", 10)
    got = xform.jit(lambda x, t: xform.jvp(la.eigh, (x,), (t,)))(x, t)
    _close(got, expected, dtype, "jit(jvp)", 10)
    # As in JAX, the JVP decomposes the symmetrized input even without symmetrize_input.
    y = _general(rng, (N, N), dtype)

    def raw(lib):
        return lambda y: lib.eigh(y, symmetrize_input=False)

    _close(
        xform.jvp(raw(la), (y,), (t[0],)),
        jax.jvp(raw(jla), (y,), (t[0],)),
        dtype,
        "unsymmetrized",
        10,
    )


def _eigh_loss(lib, np_):
    """Invariant to the eigenvectors' signs and phases: |V diag(sin w) V^H|^2 + |w|^2, of a
    real matrix and of a complex one made of two real ones."""

    def of_matrix(x):
        v, w = lib.eigh(x)
        m = (v * np_.sin(w)[..., None, :]) @ np_.conj(np_.swapaxes(v, -1, -2))
        return np_.sum(np_.real(m * np_.conj(m))) + np_.sum(w * w)

    return of_matrix, lambda xr, xi: of_matrix(xr + 1j * xi)


def test_eigh_grad_matches_jax():
    rng = np.random.default_rng(6)
    xr, xi = (_general(rng, BATCH + (N, N), np.float32) for _ in range(2))
    for k, args in ((0, (xr,)), (1, (xr, xi))):
        nums = tuple(range(len(args)))
        expected = jax.jit(jax.grad(_eigh_loss(jla, jnp)[k], nums))(*args)
        grad = xform.grad(_eigh_loss(la, xnp)[k], nums)
        _close(grad(*args), expected, np.float32, "grad", 10)
        _close(xform.jit(grad)(*args), expected, np.float32, "jit(grad)", 10)


def test_eigh_second_order():
    rng = np.random.default_rng(7)
    with xform.enable_x64(), jax.enable_x64(True):
        x = _hermitian(rng, (3, 3), np.float64)
        check_grads(lambda x: la.eigh(x)[1], (x,), order=2, atol=1e-5, rtol=1e-5)

        def loss(lib, np_):
            return lambda x: np_.sum(lib.eigh(x)[1] ** 3)

        assert_same(
            xform.hessian(loss(la, xnp))(x),
            jax.jit(jax.hessian(loss(jla, jnp)))(x),
            rtol=1e-8,
            atol=1e-8,
            check_weak_type=False,
        )


def _eigvals(lib):
    return lambda x: lib.eig(x, compute_left_eigenvectors=False, compute_right_eigenvectors=False)


def _eigvecs(lib):
    return lambda x: lib.eig(x, enable_eigvec_derivs=True)


@pytest.mark.parametrize("dtype", [np.float32, np.complex64], ids=lambda d: np.dtype(d).name)
def test_eig_jvp_matches_jax(dtype):
    rng = np.random.default_rng(8)
    x = _general(rng, BATCH + (N, N), dtype)
    t = _general(rng, BATCH + (N, N), dtype)
    for make in (_eigvals, _eigvecs):
        expected = jax.jit(lambda x, t, make=make: jax.jvp(make(jla), (x,), (t,)))(x, t)
        _close(xform.jvp(make(la), (x,), (t,)), expected, dtype, make.__name__, 10)
        got = xform.jit(lambda x, t, make=make: xform.jvp(make(la), (x,), (t,)))(x, t)
        _close(got, expected, dtype, f"jit {make.__name__}", 10)


def test_eig_grad_matches_jax():
    rng = np.random.default_rng(9)
    xr, xi = (_general(rng, BATCH + (N, N), np.float32) for _ in range(2))

    def loss(lib, np_):
        def f(xr, xi):
            (w,) = _eigvals(lib)(xr + 1j * xi)
            (w_real,) = _eigvals(lib)(xr)
            return np_.sum(np_.real(w) ** 2 + np_.imag(w)) + np_.sum(np_.abs(w_real) ** 2)

        return f

    expected = jax.jit(jax.grad(loss(jla, jnp), (0, 1)))(xr, xi)
    _close(xform.grad(loss(la, xnp), (0, 1))(xr, xi), expected, np.float32, "grad", 10)


def test_what_jax_cannot_differentiate_raises_as_jax():
    x = np.eye(3, dtype=np.float32) + np.triu(np.ones((3, 3), np.float32), 1)
    for name in ("schur", "hessenberg", "tridiagonal"):
        message = f"Differentiation rule for '{name}' not implemented"
        with pytest.raises(NotImplementedError, match=message):
            jax.jvp(JOPS[name], (x,), (x,))
        with pytest.raises(NotImplementedError, match=message):
            xform.jvp(OPS[name], (x,), (x,))
    # eig's eigenvectors need an explicit opt-in; eigh's subset has no derivative.
    for f in (la.eig, lambda x: la.eig(x)[0], lambda x: la.eig(x, compute_left_eigenvectors=False)):
        with pytest.raises(NotImplementedError, match="enable_eigvec_derivs=True"):
            xform.jvp(f, (x,), (x,))
    with pytest.raises(NotImplementedError, match="partial eigen decomposition"):
        xform.jvp(lambda x: la.eigh(x, subset_by_index=(0, 2)), (x,), (x,))


# --------------------------------------------------------------------------- lowering


def _custom_calls(text):
    """Each kernel call's line, without SSA names and JAX's Shardy rule."""
    lines = [line for line in text.splitlines() if "custom_call" in line]
    lines = [
        re.sub(r", sdy\.sharding_rule = #sdy\.op_sharding_rule<.*?custom>", "", line)
        for line in lines
    ]
    return [re.sub(r"%[\w#:]+", "%", line).strip() for line in lines]


@pytest.mark.parametrize("dtype", [np.float32, np.complex64], ids=lambda d: np.dtype(d).name)
def test_lowered_kernel_calls_are_jaxs(dtype):
    x = np.ones((2, 3, 3), dtype)
    cases = [
        ("eigh", dict(lower=False)),
        ("eig", dict(compute_left_eigenvectors=False)),
        ("schur", {}),
        ("schur", dict(compute_schur_vectors=False)),
        ("hessenberg", {}),
        ("tridiagonal", {}),
    ]
    for name, kw in cases:
        ours = xform.jit(lambda x, f=OPS[name], kw=kw: f(x, **kw)).lower(x).as_text()
        theirs = jax.jit(lambda x, f=JOPS[name], kw=kw: f(x, **kw)).lower(x).as_text()
        assert _custom_calls(ours) == _custom_calls(theirs) != [], name
        assert re.search(r"@lapack_[sc](syevd|heevd|geev|gees|gehrd|sytrd|hetrd)_ffi", ours)


# --------------------------------------------------------------------------- bad input


def test_bad_input_errors():
    for name, f in OPS.items():
        with pytest.raises(ValueError, match=rf"{name}.*square.*\(2, 3\)"):
            f(np.ones((2, 3), np.float32))
        with pytest.raises(TypeError, match=rf"{name}.*at least 2 dimensions.*\(3,\)"):
            f(np.ones((3,), np.float32))
        with pytest.raises(TypeError, match=rf"{name} does not accept dtype int32"):
            f(np.eye(3, dtype=np.int32))
    for name in ("hessenberg", "tridiagonal"):
        with pytest.raises(ValueError, match=rf"{name}: the matrices must not be empty"):
            OPS[name](np.zeros((0, 0), np.float32))
