"""xform.scipy.linalg against jax.scipy.linalg: every public name exists; values, shapes,
dtypes and weak types eagerly and under jit, float32/float64/complex, batch dimensions;
gradients against jax.grad; the batched-1D deprecation warning; errors for bad input."""

import contextlib
import inspect
import warnings

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
import numpy as np
import pytest

import xform
from tests.harness import assert_same
from xform import numpy as xnp
from xform.lax import linalg as lax_linalg
from xform.scipy import linalg as xsl

F32, F64, C64, C128 = np.float32, np.float64, np.complex64, np.complex128
TOL = {F32: 2e-4, C64: 2e-4, F64: 1e-9, C128: 1e-9}

# Public names of jax.scipy.linalg that xform.scipy.linalg does not have, with the reason.
EXEMPT = {}


@contextlib.contextmanager
def _x64(dtype):
    """Both libraries' 64-bit modes for a 64-bit case; nothing otherwise."""
    wide = np.dtype(dtype) in (F64, C128)
    with xform.enable_x64(wide), jax.enable_x64(wide):
        yield


# --------------------------------------------------------------------------- inputs


def _normal(rng, shape, dtype):
    x = rng.standard_normal(shape)
    if np.issubdtype(dtype, np.complexfloating):
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def _general(rng, n, dtype, batch=()):
    """A well-conditioned square matrix (diagonally weighted)."""
    return (_normal(rng, batch + (n, n), dtype) + 2 * n * np.eye(n) / 3).astype(dtype)


def _spd(rng, n, dtype, batch=()):
    m = _normal(rng, batch + (n, n), dtype)
    return (m @ np.conj(np.swapaxes(m, -1, -2)) + n * np.eye(n)).astype(dtype)


def _triangular(rng, n, dtype, lower, batch=()):
    a = _general(rng, n, dtype, batch) + 2 * np.eye(n, dtype=dtype)
    return np.tril(a) if lower else np.triu(a)


def _hermitian(rng, n, dtype, batch=()):
    m = _normal(rng, batch + (n, n), dtype)
    return ((m + np.conj(np.swapaxes(m, -1, -2))) / 2).astype(dtype)


# --------------------------------------------------------------------------- the harness
#
# A table maps a case name to (needs, function of (module, *arrays), arrays): ``needs`` names
# the xform.lax.linalg primitives the case uses; sizes and options are closed over and the
# arrays are traced under jit. XLA compiles are what costs here (JAX's scipy functions are
# jitted, so even its eager calls compile), so each table runs in one jax.jit (JAX's values)
# and one xform.jit, and xform alone runs eagerly, case by case.


def _has(need):
    """Whether xform.lax.linalg has ``need``: a name, or ``name:keyword`` for a parameter."""
    name, _, param = need.partition(":")
    fn = getattr(lax_linalg, name, None)
    return fn is not None and (not param or param in inspect.signature(fn).parameters)


def _available(needs):
    return all(_has(n) for n in needs)


def _skip_unless(needs):
    absent = [n for n in needs if not _has(n)]
    return pytest.mark.skipif(bool(absent), reason=f"xform.lax.linalg has no {absent} yet")


def _run_all(module, cases):
    def run(args):
        return {name: fn(module, *args[name]) for name, (_, fn, _) in cases.items()}

    return run


_RESULTS = {}


def _table_results(table, dtype, with_jit):
    """``(cases, JAX's values, xform.jit's values or None)`` for a table at ``dtype``, computed
    once (a failure too: it is raised again for every case rather than recompiled)."""
    key = (table, np.dtype(dtype), with_jit)
    if key not in _RESULTS:
        try:
            _RESULTS[key] = _compute_table(table, dtype, with_jit)
        except Exception as e:  # noqa: BLE001  (kept, and raised for each case)
            _RESULTS[key] = e
    if isinstance(_RESULTS[key], Exception):
        raise _RESULTS[key]
    return _RESULTS[key]


def _compute_table(table, dtype, with_jit):
    cases = {name: case for name, case in _cases(table, dtype).items() if _available(case[0])}
    args = {name: case[2] for name, case in cases.items()}
    with _x64(dtype), warnings.catch_warnings():
        # JAX's solve(a, b, assume_a="pos") with stacked vectors b warns from inside (its
        # cho_solve sees a batched 1-D solve); xform does not.
        warnings.simplefilter("ignore", FutureWarning)
        # LLVM's optimizations only cost compile time here (the arithmetic is XLA's either
        # way, and these programs are tiny): off, JAX's values come twice as fast.
        expected = (
            jax.jit(_run_all(jsl, cases))
            .lower(args)
            .compile(compiler_options={"xla_backend_optimization_level": 0})(args)
        )
        got_jit = xform.jit(_run_all(xsl, cases))(args) if with_jit else None
    return cases, expected, got_jit


def _check_case(table, name, dtype, *, with_jit, scale=1):
    """One case of a table: xform eagerly (and, from the table's xform.jit, compiled) against
    JAX, within ``scale`` times the dtype's tolerance."""
    cases, expected, got_jit = _table_results(table, dtype, with_jit)
    _, fn, args = cases[name]
    tol = TOL[dtype] * scale
    with _x64(dtype):
        got = fn(xsl, *args)
    assert_same(got, expected[name], tol, tol, what=f"{name} eager")
    if with_jit:
        assert_same(got_jit[name], expected[name], tol, tol, what=f"{name} jit")


def _cases(table, dtype):
    """A table's cases at ``dtype``: all of them, or the ``_SUBSETS`` entry for the table and
    dtype if there is one."""
    cases = TABLES[table](np.random.default_rng(7), dtype)
    subset = _SUBSETS.get((table, np.dtype(dtype)))
    return cases if subset is None else {name: cases[name] for name in subset}


def _params(table, dtypes, jit_dtypes=(F32,)):
    """pytest parameters ``(name, dtype, with_jit)`` for every case of a table, skipped while
    a primitive it needs is missing."""
    return [
        pytest.param(
            name,
            dtype,
            dtype in jit_dtypes,
            marks=_skip_unless(needs),
            id=f"{name}-{np.dtype(dtype).name}",
        )
        for dtype in dtypes
        for name, (needs, _, _) in _cases(table, dtype).items()
    ]


# --------------------------------------------------------------------------- completeness


def test_every_public_name_of_jax_scipy_linalg_exists():
    public = sorted(n for n in dir(jsl) if not n.startswith("_"))
    missing = [n for n in public if not hasattr(xsl, n) and n not in EXEMPT]
    assert not missing, f"xform.scipy.linalg lacks {missing}"
    assert sorted(xsl.__all__) == sorted(n for n in public if n not in EXEMPT)
    for name in xsl.__all__:
        assert callable(getattr(xsl, name)), name


def test_signatures_follow_jax():
    """The same parameter names, kinds and defaults as JAX's functions."""
    for name in xsl.__all__:
        theirs = inspect.signature(getattr(jsl, name)).parameters
        ours = inspect.signature(getattr(xsl, name)).parameters
        assert list(ours) == list(theirs), name
        for p in theirs:
            assert ours[p].kind == theirs[p].kind, (name, p)
            assert ours[p].default == theirs[p].default, (name, p)


# --------------------------------------------------------------------------- special matrices


def _constructions(rng, dtype):
    del dtype  # the dtypes are the inputs' own (or the default float type)
    v4, v3, b22 = (_normal(rng, s, F32) for s in ((4,), (3,), (2, 2)))
    ints = np.arange(1, 4)
    return {
        "block_diag": (
            (),
            lambda L, a, b, c: L.block_diag(a, b, c),
            (np.ones((2, 2), np.int32), v3, np.float32(3)),
        ),
        "block_diag_none": ((), lambda L: L.block_diag(), ()),
        "block_diag_weak": ((), lambda L: L.block_diag(1, 2.0), ()),
        "circulant": ((), lambda L, c: L.circulant(c), (v4,)),
        "circulant_batch": ((), lambda L, c: L.circulant(c), (b22,)),
        "circulant_int": ((), lambda L, c: L.circulant(c), (ints,)),
        "circulant_scalar": ((), lambda L: L.circulant(3.0), ()),
        "companion": ((), lambda L, a: L.companion(a), (v4,)),
        "companion_int": ((), lambda L, a: L.companion(a), (ints,)),
        "companion_batch": ((), lambda L, a: L.companion(a), (b22,)),
        "convolution_matrix": ((), lambda L, a: L.convolution_matrix(a, 4), (v3,)),
        "convolution_matrix_same": ((), lambda L, a: L.convolution_matrix(a, 5, "same"), (v3,)),
        "convolution_matrix_valid": ((), lambda L, a: L.convolution_matrix(a, 2, "valid"), (v4,)),
        "convolution_matrix_int": ((), lambda L, a: L.convolution_matrix(a, 2, "same"), (ints,)),
        "convolution_matrix_batch": ((), lambda L, a: L.convolution_matrix(a, 3, "same"), (b22,)),
        "dft": ((), lambda L: L.dft(4), ()),
        "dft_sqrtn": ((), lambda L: L.dft(5, "sqrtn"), ()),
        "dft_n": ((), lambda L: L.dft(3, "n", dtype=np.complex64), ()),
        "fiedler": ((), lambda L, a: L.fiedler(a), (v4,)),
        "fiedler_int": ((), lambda L, a: L.fiedler(a), (ints,)),
        "fiedler_scalar": ((), lambda L: L.fiedler(2.0), ()),
        "fiedler_companion": ((), lambda L, a: L.fiedler_companion(a), (v4,)),
        "fiedler_companion_7": (
            (),
            lambda L, a: L.fiedler_companion(a),
            (np.arange(1.0, 8.0, dtype=F32),),
        ),
        "fiedler_companion_2": ((), lambda L, a: L.fiedler_companion(a), (v4[:2],)),
        "fiedler_companion_1": ((), lambda L, a: L.fiedler_companion(a), (v4[:1],)),
        "fiedler_companion_batch": ((), lambda L, a: L.fiedler_companion(a), (b22,)),
        "hadamard": ((), lambda L: L.hadamard(4), ()),
        "hadamard_1": ((), lambda L: L.hadamard(1), ()),
        "hadamard_float": ((), lambda L: L.hadamard(8, np.float32), ()),
        "hankel": ((), lambda L, c: L.hankel(c), (v4,)),
        "hankel_r": ((), lambda L, c, r: L.hankel(c, r), (v3, np.arange(4))),
        "hankel_batch": ((), lambda L, c, r: L.hankel(c, r), (b22, v3)),
        "hankel_int": ((), lambda L, c: L.hankel(c), (ints,)),
        "helmert": ((), lambda L: L.helmert(4), ()),
        "helmert_1": ((), lambda L: L.helmert(1), ()),
        "helmert_full": ((), lambda L: L.helmert(5, True), ()),
        "hilbert": ((), lambda L: L.hilbert(4), ()),
        "invhilbert": ((), lambda L: L.invhilbert(5), ()),
        "pascal": ((), lambda L: L.pascal(5), ()),
        "pascal_lower": ((), lambda L: L.pascal(4, "lower"), ()),
        "pascal_upper": ((), lambda L: L.pascal(4, "upper"), ()),
        "invpascal": ((), lambda L: L.invpascal(5), ()),
        "invpascal_lower": ((), lambda L: L.invpascal(4, "lower"), ()),
        "invpascal_upper": ((), lambda L: L.invpascal(4, "upper"), ()),
        "leslie": ((), lambda L, f, s: L.leslie(f, s), (v4, v3)),
        "leslie_int": ((), lambda L, f, s: L.leslie(f, s), (np.arange(3), np.arange(2))),
        "leslie_weak_s": ((), lambda L, f: L.leslie(f, 1.0), (np.ones(2, F32),)),
        "leslie_batch": ((), lambda L, f, s: L.leslie(f, s), (b22, v4[:1])),
        "toeplitz": ((), lambda L, c: L.toeplitz(c), (v4,)),
        "toeplitz_r": ((), lambda L, c, r: L.toeplitz(c, r), (v3, np.arange(4))),
        "toeplitz_scalar": ((), lambda L: L.toeplitz(3.0), ()),
        "toeplitz_complex": ((), lambda L, c: L.toeplitz(c), (_normal(rng, (3,), C64),)),
        "toeplitz_batch": ((), lambda L, c, r: L.toeplitz(c, r), (b22, v3)),
        "toeplitz_empty": ((), lambda L, c, r: L.toeplitz(c, r), (np.zeros(0, F32), v3)),
    }


# Constructions whose dtype is the default float or complex type, checked with x64 too (the
# pascal matrices are float32 in JAX whatever the mode).
_DEFAULT_DTYPE = [
    "dft",
    "dft_sqrtn",
    "hadamard",
    "helmert_full",
    "hilbert",
    "invhilbert",
    "invpascal",
    "companion_int",
    "pascal",
]


def _constructions_x64(rng, dtype):
    return {
        name: case for name, case in _constructions(rng, dtype).items() if name in _DEFAULT_DTYPE
    }


# --------------------------------------------------------------------------- solvers and LU


def _solvers(rng, dtype):
    a, spd, b2 = _general(rng, 4, dtype), _spd(rng, 4, dtype), _normal(rng, (4, 2), dtype)
    b1 = _normal(rng, (4,), dtype)
    upper, lower = _triangular(rng, 4, dtype, False), _triangular(rng, 4, dtype, True)
    batch_a, batch_spd = _general(rng, 3, dtype, (2,)), _spd(rng, 3, dtype, (2,))
    batch_b = _normal(rng, (2, 3, 2), dtype)
    wide, tall = _normal(rng, (3, 5), dtype), _normal(rng, (5, 3), dtype)
    return {
        "cholesky": ((), lambda L, a: L.cholesky(a), (spd,)),
        "cholesky_lower_batch": ((), lambda L, a: L.cholesky(a, lower=True), (batch_spd,)),
        "cho_factor": ((), lambda L, a: L.cho_factor(a), (spd,)),
        "cho_solve": ((), lambda L, a, b: L.cho_solve(L.cho_factor(a), b), (spd, b2)),
        "cho_solve_lower_vector": (
            (),
            lambda L, a, b: L.cho_solve(L.cho_factor(a, True), b),
            (spd, b1),
        ),
        "cho_solve_batch_broadcast": (
            (),
            lambda L, a, b: L.cho_solve((L.cholesky(a, True), True), b),
            (batch_spd, b2[:3]),
        ),
        "solve_triangular": ((), lambda L, a, b: L.solve_triangular(a, b), (upper, b2)),
        "solve_triangular_lower": (
            (),
            lambda L, a, b: L.solve_triangular(a, b, lower=True),
            (lower, b1),
        ),
        "solve_triangular_T": (
            (),
            lambda L, a, b: L.solve_triangular(a, b, trans="T", lower=True),
            (lower, b2),
        ),
        "solve_triangular_C": ((), lambda L, a, b: L.solve_triangular(a, b, trans=2), (upper, b2)),
        "solve_triangular_1": ((), lambda L, a, b: L.solve_triangular(a, b, trans=1), (upper, b1)),
        "solve_triangular_unit": (
            (),
            lambda L, a, b: L.solve_triangular(a, b, lower=True, unit_diagonal=True),
            (lower, b2),
        ),
        "solve_triangular_batch": (
            (),
            lambda L, a, b: L.solve_triangular(a, b),
            (np.triu(batch_a), batch_b),
        ),
        "lu_factor": ((), lambda L, a: L.lu_factor(a), (a,)),
        "lu_factor_batch": ((), lambda L, a: L.lu_factor(a), (batch_a,)),
        "lu_factor_wide": ((), lambda L, a: L.lu_factor(a), (wide,)),
        "lu_solve": ((), lambda L, a, b: L.lu_solve(L.lu_factor(a), b), (a, b2)),
        "lu_solve_T": ((), lambda L, a, b: L.lu_solve(L.lu_factor(a), b, trans=1), (a, b1)),
        "lu_solve_H": ((), lambda L, a, b: L.lu_solve(L.lu_factor(a), b, trans=2), (a, b2)),
        "lu_solve_batch": ((), lambda L, a, b: L.lu_solve(L.lu_factor(a), b), (batch_a, batch_b)),
        "lu": ((), lambda L, a: L.lu(a), (a,)),
        "lu_permute_l": ((), lambda L, a: L.lu(a, permute_l=True), (a,)),
        "lu_wide": ((), lambda L, a: L.lu(a), (wide,)),
        "lu_tall": ((), lambda L, a: L.lu(a), (tall,)),
        "solve": ((), lambda L, a, b: L.solve(a, b), (a, b2)),
        "solve_vector": ((), lambda L, a, b: L.solve(a, b), (a, b1)),
        "solve_her": ((), lambda L, a, b: L.solve(a, b, assume_a="her"), (a, b1)),
        "solve_batch_vector": ((), lambda L, a, b: L.solve(a, b), (batch_a, b1[:3])),
        "solve_batch": ((), lambda L, a, b: L.solve(a, b), (batch_a, batch_b)),
        "solve_pos": ((), lambda L, a, b: L.solve(a, b, assume_a="pos"), (spd, b2)),
        "solve_pos_lower_vector": (
            (),
            lambda L, a, b: L.solve(a, b, assume_a="pos", lower=True),
            (spd, b1),
        ),
        "solve_pos_batch": (
            (),
            lambda L, a, b: L.solve(a, b, assume_a="pos"),
            (batch_spd, batch_b[:, :, 0]),
        ),
        "det": ((), lambda L, a: L.det(a), (a,)),
        "det_batch": ((), lambda L, a: L.det(a), (batch_a,)),
        "inv": ((), lambda L, a: L.inv(a), (a,)),
    }


# --------------------------------------------------------------------------- matrix functions


def _matrix_functions(rng, dtype):
    a, e = _normal(rng, (4, 4), dtype), _normal(rng, (4, 4), dtype)
    # Norms from 0.01 to 10 in one batch: every Pade degree, with and without squarings.
    norms = np.array([0.01, 0.2, 0.6, 1.5, 4.0, 10.0])[:, None, None]
    batch = _normal(rng, (6, 3, 3), dtype)
    batch = (batch * norms / np.abs(batch).sum(-2).max(-1)[:, None, None]).astype(dtype)
    d, off = _normal(rng, (6,), dtype), _normal(rng, (5,), dtype)
    # Each expm compiles all its Pade branches: the cases are few, and cover much each.
    return {
        "expm": ((), lambda L, a: L.expm(a), (a,)),
        "expm_batch": ((), lambda L, a: L.expm(a), (batch,)),
        "expm_upper": ((), lambda L, a: L.expm(a, upper_triangular=True), (np.triu(a),)),
        "expm_too_many_squarings": ((), lambda L, a: L.expm(a, max_squarings=2), (1e4 * a,)),
        "expm_frechet": ((), lambda L, a, e: L.expm_frechet(a, e), (a, e)),
        "eigh_tridiagonal_values": (
            (),
            lambda L, d, e: L.eigh_tridiagonal(d, e, eigvals_only=True),
            (d, off),
        ),
        "eigh_tridiagonal_index_range": (
            (),
            lambda L, d, e: L.eigh_tridiagonal(
                d, e, eigvals_only=True, select="i", select_range=(1, 3)
            ),
            (d, off),
        ),
        "eigh_tridiagonal_tol": (
            (),
            lambda L, d, e: L.eigh_tridiagonal(d, e, eigvals_only=True, tol=1e-3),
            (d, off),
        ),
    }


# --------------------------------------------------------------------------- decompositions

_SIN = {jsl: jnp.sin, xsl: xnp.sin}
_ABS = {jsl: jnp.abs, xsl: xnp.abs}


def _eigenpairs_up_to_phase(L, w, v):
    """Eigenvalues and the moduli of the eigenvectors' entries: inverse iteration's vectors
    are unique only up to a sign (a phase for complex), which rounding may flip."""
    return w, _ABS[L](v)


_PERTURBED = ("qr", "tridiagonal_solve:perturb_singular")


def _decompositions(rng, dtype):
    a, tall, wide = (_normal(rng, s, dtype) for s in ((4, 4), (5, 3), (3, 5)))
    herm, spd = _hermitian(rng, 4, dtype), _spd(rng, 4, dtype)
    m3, m2, c32 = _general(rng, 3, dtype), _general(rng, 2, dtype), _normal(rng, (3, 2), dtype)
    d, off = _normal(rng, (5,), dtype), _normal(rng, (4,), dtype)
    return {
        "qr": (("qr",), lambda L, a: L.qr(a), (tall,)),
        "qr_economic": (("qr",), lambda L, a: L.qr(a, mode="economic"), (tall,)),
        "qr_r": (("qr",), lambda L, a: L.qr(a, mode="r"), (wide,)),
        "qr_pivoting": (("qr",), lambda L, a: L.qr(a, pivoting=True), (tall,)),
        "qr_batch": (
            ("qr",),
            lambda L, a: L.qr(a, mode="economic"),
            (_normal(rng, (2, 4, 3), dtype),),
        ),
        "qr_multiply_right": (("qr",), lambda L, a, c: L.qr_multiply(a, c), (tall, wide)),
        "qr_multiply_left": (
            ("qr",),
            lambda L, a, c: L.qr_multiply(a, c, mode="left"),
            (tall, c32),
        ),
        "qr_multiply_vector": (
            ("qr",),
            lambda L, a, c: L.qr_multiply(a, c, conjugate=True),
            (tall, _normal(rng, (5,), dtype)),
        ),
        "qr_multiply_pivoting": (
            ("qr",),
            lambda L, a, c: L.qr_multiply(a, c, mode="left", pivoting=True),
            (wide, _normal(rng, (3,), dtype)),
        ),
        "svd": (("svd",), lambda L, a: L.svd(a), (tall,)),
        "svd_thin": (("svd",), lambda L, a: L.svd(a, full_matrices=False), (wide,)),
        "svd_values": (
            ("svd",),
            lambda L, a: L.svd(a, compute_uv=False),
            (_normal(rng, (2, 3, 4), dtype),),
        ),
        "eigh": (("eigh",), lambda L, a: L.eigh(a), (herm,)),
        "eigh_upper_values": (
            ("eigh",),
            lambda L, a: L.eigh(a, lower=False, eigvals_only=True),
            (herm,),
        ),
        "schur": (("schur",), lambda L, a: L.schur(a), (a,)),
        "schur_complex": (("schur",), lambda L, a: L.schur(a, output="complex"), (a,)),
        "hessenberg": (("hessenberg",), lambda L, a: L.hessenberg(a), (a,)),
        "hessenberg_q": (
            ("hessenberg", "householder_product"),
            lambda L, a: L.hessenberg(a, calc_q=True),
            (a,),
        ),
        "polar_left": (("qr",), lambda L, a: L.polar(a, "left"), (wide,)),
        "polar_svd": (("svd",), lambda L, a: L.polar(a, "left", method="svd"), (tall,)),
        "polar_batch": (("qr",), lambda L, a: L.polar(a), (_normal(rng, (2, 4, 3), dtype),)),
        "sqrtm": (("schur",), lambda L, a: L.sqrtm(a), (spd,)),
        "rsf2csf": (("schur", "eig"), lambda L, a: L.rsf2csf(*L.schur(a)), (a,)),
        "funm": (("schur", "eig"), lambda L, a: L.funm(a, _SIN[L]), (a,)),
        "solve_sylvester": (
            ("schur", "eig"),
            lambda L, a, b, c: L.solve_sylvester(a, b, c),
            (m3, m2, c32),
        ),
        "solve_sylvester_eigen": (
            ("eig",),
            lambda L, a, b, c: L.solve_sylvester(a, b, c, method="eigen"),
            (m3, m2, c32),
        ),
        "eigh_tridiagonal_vectors": (
            _PERTURBED,
            lambda L, d, e: _eigenpairs_up_to_phase(L, *L.eigh_tridiagonal(d, e)),
            (d, off),
        ),
        # A repeated eigenvalue: its eigenvectors are re-orthogonalized as a cluster.
        "eigh_tridiagonal_cluster": (
            _PERTURBED,
            lambda L, d, e: L.eigh_tridiagonal(d, e),
            (np.ones(4, dtype), np.zeros(3, dtype)),
        ),
    }


# Every case runs in float32; in float64 and complex64 the larger tables run the cases whose
# paths depend on the dtype (promotion, conjugations, the tolerances of the iterations), not
# every variant again: each case costs compile time in both libraries.
_SUBSETS = {
    ("solvers", np.dtype(F64)): [
        "cholesky",
        "cho_solve",
        "solve_triangular_T",
        "lu_factor",
        "lu_solve_T",
        "lu",
        "solve",
        "solve_pos_batch",
        "det",
        "inv",
    ],
    ("solvers", np.dtype(C64)): [
        "cholesky",
        "cholesky_lower_batch",
        "cho_solve",
        "cho_solve_lower_vector",
        "solve_triangular_C",
        "solve_triangular_T",
        "lu_solve_T",
        "lu_solve_H",
        "lu",
        "solve",
        "solve_pos",
        "det",
        "inv",
    ],
    ("matrix_functions", np.dtype(F64)): ["expm_batch", "expm_frechet", "eigh_tridiagonal_values"],
    ("matrix_functions", np.dtype(C64)): ["expm_batch", "eigh_tridiagonal_values"],
    ("decompositions", np.dtype(F64)): [
        "schur_complex",
        "polar_batch",
        "sqrtm",
        "eigh_tridiagonal_vectors",
    ],
    ("decompositions", np.dtype(C64)): [
        "qr_multiply_vector",
        "polar_left",
        "sqrtm",
        "rsf2csf",
        "funm",
        "solve_sylvester",
        "solve_sylvester_eigen",
        "eigh_tridiagonal_vectors",
    ],
}

TABLES = {
    "constructions": _constructions,
    "constructions_x64": _constructions_x64,
    "solvers": _solvers,
    "matrix_functions": _matrix_functions,
    "decompositions": _decompositions,
}


@pytest.mark.parametrize("name, dtype, with_jit", _params("constructions", [F32]))
def test_constructions(name, dtype, with_jit):
    _check_case("constructions", name, dtype, with_jit=with_jit, scale=0.1)


@pytest.mark.parametrize("name, dtype, with_jit", _params("constructions_x64", [F64], ()))
def test_constructions_x64(name, dtype, with_jit):
    scale = 1e5 if name == "pascal" else 1  # float32 whatever the mode
    _check_case("constructions_x64", name, dtype, with_jit=with_jit, scale=scale)


@pytest.mark.parametrize("name, dtype, with_jit", _params("solvers", [F32, F64, C64]))
def test_solvers(name, dtype, with_jit):
    _check_case("solvers", name, dtype, with_jit=with_jit)


@pytest.mark.parametrize("name, dtype, with_jit", _params("matrix_functions", [F32, F64, C64]))
def test_matrix_functions(name, dtype, with_jit):
    _check_case("matrix_functions", name, dtype, with_jit=with_jit, scale=10)


@pytest.mark.parametrize("name, dtype, with_jit", _params("decompositions", [F32, F64, C64]))
def test_decompositions(name, dtype, with_jit):
    _check_case("decompositions", name, dtype, with_jit=with_jit, scale=10)


def test_integer_inputs_promote():
    ints = np.array([[4, 1, 0], [1, 5, 2], [0, 2, 6]])
    rhs = np.arange(3)
    cases = {
        "solve": lambda L: L.solve(ints, rhs),
        "det": lambda L: L.det(ints),
        "cholesky": lambda L: L.cholesky(ints),
        "lu_factor": lambda L: L.lu_factor(ints),
        "solve_triangular": lambda L: L.solve_triangular(np.triu(ints), rhs),
        "expm": lambda L: L.expm(ints),
    }
    expected = jax.jit(lambda: {k: fn(jsl) for k, fn in cases.items()})()
    for k, fn in cases.items():
        assert_same(fn(xsl), expected[k], 2e-4, 2e-4, what=k)


def test_expm_of_zeros_is_the_identity():
    assert_same(xsl.expm(xnp.zeros((3, 3))), np.eye(3, dtype=F32), 0, 0)


@pytest.mark.parametrize("name", ["solve_triangular", "cho_solve", "lu_solve"])
def test_batched_1d_rhs_is_deprecated(name):
    rng = np.random.default_rng(1)
    a, b = _triangular(rng, 3, F32, False, (2,)), _normal(rng, (2, 3), F32)
    fns = {
        "solve_triangular": lambda L: L.solve_triangular(a, b),
        "cho_solve": lambda L: L.cho_solve((a, False), b),
        "lu_solve": lambda L: L.lu_solve(L.lu_factor(a), b),
    }
    with pytest.warns(FutureWarning, match=f"xform.scipy.linalg.{name}: batched 1D solves"):
        got = fns[name](xsl)
    expected = np.linalg.solve(
        np.triu(a) if name != "cho_solve" else np.swapaxes(np.triu(a), -1, -2) @ np.triu(a),
        b[..., None],
    )
    np.testing.assert_allclose(np.asarray(got), expected[..., 0], rtol=2e-4, atol=2e-4)


# --------------------------------------------------------------------------- gradients


def _gradients(rng, dtype):
    a, spd = _general(rng, 4, dtype), _spd(rng, 4, dtype)
    b, w = _normal(rng, (4, 2), dtype), _normal(rng, (4, 4), dtype)
    upper = _triangular(rng, 4, dtype, False)
    chol = np.linalg.cholesky(spd).astype(dtype)

    def sq(L, x):
        return _SUM[L](x * x)

    return {
        # A norm that needs squarings: the scan of conds is differentiated too.
        "expm": ((), lambda L, a: _SUM[L](L.expm(a) * w), (2 * a,)),
        "solve_triangular": ((), lambda L, a, b: sq(L, L.solve_triangular(a, b)), (upper, b)),
        "solve_triangular_T": (
            (),
            lambda L, a, b: sq(
                L, L.solve_triangular(a.T, b, trans="T", lower=True, unit_diagonal=True)
            ),
            (upper, b),
        ),
        "cho_solve": ((), lambda L, c, b: sq(L, L.cho_solve((c, True), b)), (chol, b)),
        "lu_solve": ((), lambda L, a, b: sq(L, L.lu_solve(L.lu_factor(a), b)), (a, b)),
        "lu_solve_T": ((), lambda L, a, b: sq(L, L.lu_solve(L.lu_factor(a), b, trans=1)), (a, b)),
        "solve": ((), lambda L, a, b: sq(L, L.solve(a, b)), (a, b)),
        "solve_pos": ((), lambda L, a, b: sq(L, L.solve(a, b, assume_a="pos")), (spd, b)),
        "solve_pos_vector": (
            (),
            lambda L, a, b: sq(L, L.solve(a, b[:, 0], assume_a="pos", lower=True)),
            (spd, b),
        ),
        "det": ((), lambda L, a: L.det(a), (a,)),
        "inv": ((), lambda L, a: sq(L, L.inv(a)), (a,)),
        "cholesky": ((), lambda L, a: sq(L, L.cholesky(a)), (spd,)),
    }


_SUM = {jsl: jnp.sum, xsl: xnp.sum}
_GRAD = {jsl: jax.grad, xsl: xform.grad}


def _as_gradient(case):
    needs, fn, args = case
    argnums = tuple(range(len(args)))
    return needs, lambda L, *a: _GRAD[L](lambda *x: fn(L, *x), argnums)(*a), args


TABLES["gradients"] = lambda rng, dtype: {
    name: _as_gradient(case) for name, case in _gradients(rng, dtype).items()
}


@pytest.mark.parametrize("name, dtype, with_jit", _params("gradients", [F32], ()))
def test_gradients_match_jax(name, dtype, with_jit):
    _check_case("gradients", name, dtype, with_jit=with_jit, scale=3)


def test_jit_of_grad():
    cases, expected, _ = _table_results("gradients", F32, False)
    names = ["expm", "solve", "lu_solve", "solve_pos"]
    got = xform.jit(lambda args: {n: cases[n][1](xsl, *args[n]) for n in names})(
        {n: cases[n][2] for n in names}
    )
    for name in names:
        assert_same(got[name], expected[name], 6e-4, 6e-4, what=name)


def test_vmap_of_solvers():
    rng = np.random.default_rng(3)
    a, b = _general(rng, 3, F32, (2,)), _normal(rng, (2, 3, 2), F32)
    cases = {
        "solve": lambda L, a, b: L.solve(a, b),
        "lu_solve": lambda L, a, b: L.lu_solve(L.lu_factor(a), b),
        "solve_triangular": lambda L, a, b: L.solve_triangular(a, b, lower=True),
        "expm": lambda L, a, b: L.expm(a) @ b,
    }
    for name, fn in cases.items():
        got = xform.vmap(lambda x, y: fn(xsl, x, y))(a, b)  # noqa: B023  (used at once)
        stacked = np.stack([np.asarray(fn(xsl, a[i], b[i])) for i in range(2)])
        assert_same(got, stacked, 1e-5, 1e-5, what=name)


def test_eigh_tridiagonal_sizes_0_and_1():
    for n in (0, 1):
        d, e = np.ones(n, F32), np.ones(0, F32)
        assert_same(xsl.eigh_tridiagonal(d, e, eigvals_only=True), d)
        if n and _available(_PERTURBED):
            assert_same(xsl.eigh_tridiagonal(d, e), (d, np.eye(n, dtype=F32)))


# --------------------------------------------------------------------------- errors

_sq = np.eye(3, dtype=F32)

ERRORS = [
    (lambda L: L.block_diag(np.ones((1, 1, 1))), ValueError, "at most 2 dimensions"),
    (lambda L: L.block_diag([1.0, 2.0]), TypeError, "block_diag"),
    (lambda L: L.solve(_sq, np.ones(4)), ValueError, "shapes"),
    (lambda L: L.solve(_sq, np.ones(4), assume_a="pos"), ValueError, "shapes"),
    (lambda L: L.solve_triangular(_sq, np.ones(4)), ValueError, "inconsistent sizes"),
    (lambda L: L.solve_triangular(np.ones((2, 3)), np.ones(2)), ValueError, "square"),
    (lambda L: L.solve_triangular(_sq, 1.0), ValueError, "1-dimensional"),
    (lambda L: L.cho_solve((_sq, False), np.ones((4, 2))), ValueError, "inconsistent sizes"),
    (lambda L: L.lu_solve(L.lu_factor(_sq), np.ones(4)), ValueError, "inconsistent sizes"),
    (lambda L: L.det(np.ones((2, 3))), ValueError, "shape"),
    (lambda L: L.inv(np.ones((2, 3))), ValueError, "shape"),
    (lambda L: L.cholesky(np.ones((2, 3))), ValueError, "square"),
    (lambda L: L.qr(np.ones(3)), TypeError, "at least 2 dimensions"),
    (lambda L: L.svd(np.ones(3)), TypeError, "at least 2 dimensions"),
    (
        lambda L: L.solve_sylvester(np.ones((2, 3, 3)), np.ones((3, 2, 2)), np.ones((3, 2))),
        ValueError,
        "broadcast",
    ),
    (lambda L: L.hankel(1.0), ValueError, "at least 1-dimensional"),
    (lambda L: L.hankel([1.0, 2.0]), TypeError, "hankel"),
    (lambda L: L.toeplitz([1.0, 2.0]), TypeError, "toeplitz"),
    (lambda L: L.leslie(np.ones(1), np.ones(0)), ValueError, "at least 2"),
    (lambda L: L.leslie(np.ones(3), np.ones(3)), ValueError, "one entry fewer than f"),
    (lambda L: L.companion(np.ones(1)), ValueError, "at least 2"),
    (lambda L: L.fiedler_companion(np.ones(0)), ValueError, "at least 1 coefficient"),
    (lambda L: L.convolution_matrix(np.ones(3), 0), ValueError, "positive integer"),
    (lambda L: L.convolution_matrix(np.ones(3), 2, "nope"), ValueError, "mode must be"),
    (lambda L: L.convolution_matrix(1.0, 2), ValueError, "at least 1-dimensional"),
    (lambda L: L.hadamard(3), ValueError, "power of 2"),
    (lambda L: L.helmert(0), ValueError, "positive integer"),
    (lambda L: L.pascal(3, "diagonal"), ValueError, "kind"),
    (lambda L: L.invpascal(3, "diagonal"), ValueError, "kind"),
    (lambda L: L.dft(3, "half"), ValueError, "scale must be"),
    (lambda L: L.dft(3, dtype=np.float32), ValueError, "complex"),
    (lambda L: L.solve_triangular(_sq, np.ones(3), trans=3), ValueError, "trans"),
    (lambda L: L.lu_solve(L.lu_factor(_sq), np.ones(3), trans=3), ValueError, "trans"),
    (lambda L: L.solve(_sq, np.ones(3), assume_a="banded"), ValueError, "assume_a"),
    (lambda L: L.expm(np.ones((2, 3))), ValueError, "square"),
    (lambda L: L.expm(np.eye(2, dtype=np.float16)), TypeError, "float16 is not supported"),
    (lambda L: L.expm_frechet(_sq, np.ones((2, 2))), ValueError, "same shape"),
    (lambda L: L.expm_frechet(np.ones((2, 3)), np.ones((2, 3))), ValueError, "square"),
    (lambda L: L.eigh(_sq, _sq), NotImplementedError, "generalized problem"),
    (lambda L: L.eigh(_sq, type=2), NotImplementedError, "type=1"),
    (lambda L: L.eigh(_sq, eigvals=(0, 1)), NotImplementedError, "eigvals"),
    (lambda L: L.schur(_sq, output="imaginary"), ValueError, "'real' or 'complex'"),
    (lambda L: L.qr(_sq, mode="raw"), ValueError, "qr: mode must be"),
    (lambda L: L.qr_multiply(_sq, _sq, mode="up"), ValueError, "mode must be"),
    (lambda L: L.qr_multiply(_sq, np.ones((2, 2))), ValueError, "needs c with 3 columns"),
    (lambda L: L.qr_multiply(_sq, np.ones((2, 2)), mode="left"), ValueError, "needs c with 3 rows"),
    (lambda L: L.polar(np.ones(3)), ValueError, "at least 2 dimensions"),
    (lambda L: L.polar(_sq, side="top"), ValueError, "'right' or 'left'"),
    (lambda L: L.polar(np.ones((2, 3), F32)), NotImplementedError, "use method='svd'"),
    (lambda L: L.polar(_sq, method="newton"), ValueError, "polar: method must be"),
    (lambda L: L.sqrtm(_sq, blocksize=2), NotImplementedError, "blocked algorithm"),
    (lambda L: L.sqrtm(np.ones((2, 3, 3), F32)), ValueError, "batch"),
    (lambda L: L.sqrtm(np.ones((2, 3), F32)), ValueError, "square"),
    (lambda L: L.lu(np.ones((2, 3, 3), F32)), ValueError, "batch"),
    (lambda L: L.rsf2csf(np.ones((2, 3)), _sq), ValueError, "T must be a"),
    (lambda L: L.rsf2csf(_sq, np.ones((2, 3))), ValueError, "Z must be a"),
    (lambda L: L.rsf2csf(_sq, np.eye(2)), ValueError, "matrices of one size"),
    (lambda L: L.funm(np.ones((2, 3)), np.sin), ValueError, "square"),
    (lambda L: L.solve_sylvester(_sq, _sq, np.ones((3, 2))), ValueError, "the shapes must be"),
    (lambda L: L.solve_sylvester(_sq, _sq, _sq, method="qz"), ValueError, "method must be"),
    (lambda L: L.eigh_tridiagonal(np.ones(3, F32), np.ones(2, C64)), TypeError, "one dtype"),
    (
        lambda L: L.eigh_tridiagonal(np.ones(3, np.int32), np.ones(2, np.int32)),
        TypeError,
        "float32, float64",
    ),
    (
        lambda L: L.eigh_tridiagonal(np.ones(3, F32), np.ones(2, F32), select="i"),
        ValueError,
        "select_range",
    ),
    (
        lambda L: L.eigh_tridiagonal(
            np.ones(3, F32), np.ones(2, F32), select="i", select_range=(2, 1)
        ),
        ValueError,
        "empty range",
    ),
    (
        lambda L: L.eigh_tridiagonal(
            np.ones(3, F32), np.ones(2, F32), select="v", select_range=(0.0, 1.0)
        ),
        NotImplementedError,
        "'v'",
    ),
    (
        lambda L: L.eigh_tridiagonal(np.ones(3, F32), np.ones(2, F32), select="x"),
        ValueError,
        "select",
    ),
]


@pytest.mark.parametrize("fn, error, match", ERRORS, ids=[str(i) for i in range(len(ERRORS))])
def test_errors_as_jax(fn, error, match):
    with pytest.raises(error):
        fn(jsl)
    with pytest.raises(error, match=match):
        fn(xsl)
