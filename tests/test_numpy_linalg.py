"""xform.numpy.linalg against jax.numpy.linalg: every public name, values, shapes, dtypes and
weak types eagerly and under jit, float32/float64/complex64, leading batch dimensions, vmap
over a non-leading axis, gradients (against jax.grad) and the errors for bad input.

Functions whose decomposition (``xform.lax.linalg.svd``, ``qr``, ``eigh``, ...) is not there
yet are skipped, naming the missing primitive.
"""

import inspect

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax._src.numpy import linalg as jax_src_linalg  # the result types are not public

import xform
import xform.numpy as xnp
from tests.harness import assert_same
from xform.lax import linalg as lax_linalg

XL, JL = xnp.linalg, jnp.linalg
RNG = np.random.default_rng(0)

# Decompositions run different code paths on different builds of the same LAPACK call, and
# determinants and inverses amplify rounding by the condition number (kept small here).
_TOL = {
    np.float32: (2e-4, 2e-5),
    np.complex64: (2e-4, 2e-5),
    np.float64: (1e-9, 1e-11),
    np.complex128: (1e-9, 1e-11),
}


def _tol(dtype):
    return _TOL[np.dtype(dtype).type]


def _needs(*prims):
    missing = [p for p in prims if not hasattr(lax_linalg, f"{p}_p")]
    if missing:
        pytest.skip(f"xform.lax.linalg has no {', '.join(missing)} yet")


# --------------------------------------------------------------------------- inputs


def _rand(shape, dtype):
    x = RNG.standard_normal(shape)
    if np.issubdtype(dtype, np.complexfloating):
        x = x + 1j * RNG.standard_normal(shape)
    return x.astype(dtype)


def _general(shape, dtype):
    """Random matrices shifted by ``n * I``: well conditioned."""
    n = shape[-1]
    return (_rand(shape, dtype) + n * np.eye(n, dtype=dtype)).astype(dtype)


def _spd(shape, dtype):
    """Hermitian positive definite: ``M M^H + n I``."""
    m = _rand(shape, dtype)
    n = shape[-1]
    return (m @ np.conj(np.swapaxes(m, -1, -2)) + n * np.eye(n)).astype(dtype)


def _distinct_spectrum(shape, dtype):
    """Hermitian with well-separated eigenvalues (so eigenvectors are well defined)."""
    n = shape[-1]
    q, _ = np.linalg.qr(_rand(shape, dtype))
    w = np.arange(1, n + 1, dtype=np.float64) * 1.5 - 3.2
    return (q * w[..., None, :] @ np.conj(np.swapaxes(q, -1, -2))).astype(dtype)


_MAKERS = {"gen": _general, "spd": _spd, "herm": _distinct_spectrum, "any": _rand}


def _make(spec, dtype):
    kind, shape = spec
    return _MAKERS[kind](shape, dtype)


def _plain(tree):
    """Named tuples as tuples: the two libraries' result types are different classes."""
    if isinstance(tree, tuple):
        return tuple(_plain(t) for t in tree)
    if isinstance(tree, list):
        return [_plain(t) for t in tree]
    return tree


def _compare(call, args, dtype, *, jit=True, what=""):
    rtol, atol = _tol(dtype)
    # JAX under one jit: its eager path compiles operation by operation, which is slower.
    expected = _plain(jax.jit(lambda *a: call(JL, *a))(*args))
    got = _plain(call(XL, *args))
    assert_same(got, expected, rtol, atol, what=f"{what} eager")
    if jit:
        got_jit = _plain(xform.jit(lambda *a: call(XL, *a))(*args))
        assert_same(got_jit, expected, rtol, atol, what=f"{what} jit")


# --------------------------------------------------------------------------- completeness

# Names of jax.numpy.linalg that xform.numpy.linalg leaves out, with the reason.
_EXEMPT = {}


def test_every_public_name_exists():
    public = {n for n in dir(JL) if not n.startswith("_")}
    missing = sorted(n for n in public - set(_EXEMPT) if not hasattr(XL, n))
    assert not missing, f"xform.numpy.linalg lacks {missing}"
    assert set(XL.__all__) >= public - set(_EXEMPT)


def test_signatures_are_jax_signatures():
    for name in sorted(n for n in dir(JL) if not n.startswith("_")):
        expected = inspect.signature(getattr(JL, name)).parameters
        got = inspect.signature(getattr(XL, name)).parameters
        assert [(p.name, p.kind, p.default) for p in got.values()] == [
            (p.name, p.kind, p.default) for p in expected.values()
        ], name


@pytest.mark.parametrize(
    "name", ["EighResult", "EigResult", "QRResult", "SlogdetResult", "SVDResult"]
)
def test_result_types_have_jax_fields(name):
    assert getattr(XL, name)._fields == getattr(jax_src_linalg, name)._fields


# --------------------------------------------------------------------------- values

F32, F64, C64 = np.float32, np.float64, np.complex64
# Shape-only functions run on float32; those that conjugate or take magnitudes on complex64
# too; the decompositions and solves on all three.
ONE, CPLX, ALL = (F32,), (F32, C64), (F32, F64, C64)
SQ, BATCH = ("gen", (4, 4)), ("gen", (2, 5, 5))

# (id, call(lib, *args), argument specs, dtypes, primitives needed)
_CASES = [
    # No decomposition.
    ("matmul", lambda L, a, b: L.matmul(a, b), [("any", (2, 3, 4)), ("any", (4, 2))], ONE, ()),
    (
        "transpose_diagonal_trace",
        lambda L, a: (L.matrix_transpose(a), L.diagonal(a, offset=1), L.trace(a, offset=-1)),
        [("any", (2, 3, 4))],
        ONE,
        (),
    ),
    ("outer", lambda L, a, b: L.outer(a, b), [("any", (3,)), ("any", (4,))], ONE, ()),
    (
        "cross",
        lambda L, a, b, c: (L.cross(a, b), L.cross(c, c[::-1], axis=0)),
        [("any", (2, 3)), ("any", (3,)), ("any", (3, 2))],
        ONE,
        (),
    ),
    (
        "tensordot",
        lambda L, a, b: L.tensordot(a, b, axes=([1, 2], [0, 1])),
        [("any", (2, 3, 4)), ("any", (3, 4, 2))],
        ONE,
        (),
    ),
    (
        "vecdot",
        lambda L, a, b: L.vecdot(a, b, axis=0),
        [("any", (3, 2)), ("any", (3, 1))],
        CPLX,
        (),
    ),
    (
        "multi_dot",
        lambda L, a, b, c, d: L.multi_dot([a, b, c, d]),
        [("any", (4,)), ("any", (4, 2)), ("any", (2, 5)), ("any", (5,))],
        CPLX,
        (),
    ),
    (
        "multi_dot_matrices",
        lambda L, a, b, c: L.multi_dot([a, b, c]),
        [("any", (5, 2)), ("any", (2, 6)), ("any", (6, 3))],
        ONE,
        (),
    ),
    (
        "matrix_power",
        lambda L, a: (L.matrix_power(a, 5), L.matrix_power(a, 0)),
        [("any", (2, 3, 3))],
        ONE,
        (),
    ),
    ("matrix_power_-2", lambda L, a: L.matrix_power(a, -2), [SQ], CPLX, ()),
    (
        "vector_norm",
        lambda L, a: (L.vector_norm(a), L.vector_norm(a, axis=(0, 2), keepdims=True, ord=1)),
        [("any", (2, 3, 4))],
        CPLX,
        (),
    ),
    (
        "vector_norm_ords",
        lambda L, a: [L.vector_norm(a, axis=-1, ord=o) for o in (np.inf, -np.inf, 0, 3, -1.5)],
        [("any", (3, 5))],
        CPLX,
        (),
    ),
    (
        "norm_vector",
        lambda L, a, b: (L.norm(a), L.norm(a, ord=3, axis=1), L.norm(b), L.norm(b, keepdims=True)),
        [("any", (2, 3)), ("any", (2, 3, 2))],
        CPLX,
        (),
    ),
    (
        "norm_matrix_ords",
        lambda L, a: [
            L.norm(a, ord=o, axis=(2, 0), keepdims=k)
            for o in ("fro", 1, -1, np.inf, -np.inf)
            for k in (False, True)
        ],
        [("any", (3, 2, 4))],
        CPLX,
        (),
    ),
    ("matrix_norm", lambda L, a: L.matrix_norm(a, ord=1), [("any", (2, 3, 4))], ONE, ()),
    # LU.
    ("solve_vector", lambda L, a, b: L.solve(a, b), [BATCH, ("any", (5,))], ALL, ()),
    (
        "solve_matrix",
        lambda L, a, b: L.solve(a, b),
        [("gen", (2, 1, 4, 4)), ("any", (3, 4, 2))],
        ALL,
        (),
    ),
    ("inv", lambda L, a: L.inv(a), [BATCH], ALL, ()),
    (
        "det_small",
        lambda L, a, b, c: (L.det(a), L.det(b), L.det(c)),
        [("gen", (2, 1, 1)), ("gen", (2, 2, 2)), ("gen", (3, 3))],
        CPLX,
        (),
    ),
    ("det", lambda L, a: L.det(a), [BATCH], ALL, ()),
    (
        "slogdet_small",
        lambda L, a, b: (L.slogdet(a), L.slogdet(b)),
        [("any", (2, 1, 1)), ("any", (3, 2, 2))],
        CPLX,
        (),
    ),
    ("slogdet", lambda L, a: L.slogdet(a), [("any", (2, 5, 5))], ALL, ()),
    ("tensorinv", lambda L, a: L.tensorinv(a.reshape(2, 3, 6), ind=2), [("gen", (6, 6))], ONE, ()),
    (
        "tensorsolve",
        lambda L, a, b: L.tensorsolve(a.reshape(2, 3, 2, 3), b.reshape(2, 3)),
        [("gen", (6, 6)), ("any", (6,))],
        ONE,
        (),
    ),
    ("cond_1", lambda L, a: L.cond(a, p=1), [BATCH], CPLX, ()),
    (
        "cholesky",
        lambda L, a: (L.cholesky(a), L.cholesky(a, upper=True)),
        [("spd", (2, 4, 4))],
        ALL,
        ("cholesky",),
    ),
    # QR.
    (
        "qr",
        lambda L, a: [L.qr(a), L.qr(a, mode="complete"), L.qr(a, mode="r")],
        [("any", (2, 5, 3))],
        ALL,
        ("qr",),
    ),
    ("qr_wide", lambda L, a: [L.qr(a), L.qr(a, mode="complete")], [("any", (3, 5))], CPLX, ("qr",)),
    ("qr_raw", lambda L, a: L.qr(a, mode="raw"), [("any", (5, 3))], ALL, ("geqrf",)),
    ("slogdet_qr", lambda L, a: L.slogdet(a, method="qr"), [BATCH], (F32, F64), ("geqrf",)),
    # eigh.
    (
        "eigh",
        lambda L, a: (L.eigh(a), L.eigh(a, UPLO="U", symmetrize_input=False), L.eigvalsh(a)),
        [("herm", (2, 4, 4))],
        ALL,
        ("eigh",),
    ),
    (
        "svd_hermitian",
        lambda L, a: (L.svd(a, hermitian=True), L.svd(a, hermitian=True, compute_uv=False)),
        [("herm", (2, 4, 4))],
        CPLX,
        ("eigh",),
    ),
    # SVD.
    (
        "svd",
        lambda L, a: [L.svd(a), L.svd(a, full_matrices=False), L.svdvals(a)],
        [("any", (2, 5, 3))],
        ALL,
        ("svd",),
    ),
    (
        "norm_svd_ords",
        lambda L, a: [
            L.norm(a, ord=o, axis=(0, 1), keepdims=k) for o in ("nuc", 2, -2) for k in (False, True)
        ],
        [("any", (4, 3))],
        CPLX,
        ("svd",),
    ),
    ("cond", lambda L, a: (L.cond(a), L.cond(a, p=-2)), [("any", (2, 3, 5))], CPLX, ("svd",)),
    (
        "matrix_rank",
        lambda L, a, b: (
            L.matrix_rank(a),
            L.matrix_rank(b, hermitian=True),
            L.matrix_rank(a, rtol=0.5),
        ),
        [("any", (2, 4, 3)), ("herm", (4, 4))],
        CPLX,
        ("svd", "eigh"),
    ),
    ("pinv", lambda L, a: (L.pinv(a), L.pinv(a, rtol=0.3)), [("any", (2, 5, 3))], ALL, ("svd",)),
    ("pinv_hermitian", lambda L, a: L.pinv(a, hermitian=True), [("herm", (4, 4))], CPLX, ("eigh",)),
    ("lstsq", lambda L, a, b: L.lstsq(a, b), [("any", (5, 3)), ("any", (5, 2))], ALL, ("svd",)),
    (
        "lstsq_vector",
        lambda L, a, b: L.lstsq(a, b, rcond=0.1),
        [("any", (3, 5)), ("any", (3,))],
        ONE,
        ("svd",),
    ),
    # eig.
    ("eig", lambda L, a: (L.eigvals(a), L.eig(a)), [("any", (2, 4, 4))], CPLX, ("eig",)),
]


def _x64(dtype):
    on = np.dtype(dtype) in (np.float64, np.complex128)
    return xform.enable_x64(on), jax.enable_x64(on)


@pytest.mark.parametrize(
    "case", [pytest.param((c, d), id=f"{c[0]}-{np.dtype(d).name}") for c in _CASES for d in c[3]]
)
def test_values(case):
    (name, call, specs, _, needs), dtype = case
    _needs(*needs)
    args = [_make(s, dtype) for s in specs]
    x64, jx64 = _x64(dtype)
    with x64, jx64:  # jit is checked on float32 only: compiling is most of the time here
        _compare(call, args, dtype, jit=dtype == F32, what=name)


# Integers and bools are promoted to floats where jax.numpy promotes them.
_INT_CASES = [
    ("solve", lambda L, a, b: L.solve(a, b)),
    ("inv", lambda L, a, b: L.inv(a)),
    ("det", lambda L, a, b: (L.det(a), L.det(a[:2, :2]), L.det(a[:3, :3]))),
    ("slogdet", lambda L, a, b: L.slogdet(a)),
    (
        "norm",
        lambda L, a, b: (
            L.norm(a),
            L.norm(b),
            L.norm(a, ord=1),
            L.vector_norm(b, ord=1),
            L.vector_norm(b),
        ),
    ),
    ("matrix_power", lambda L, a, b: L.matrix_power(a, 3)),
    (
        "products",
        lambda L, a, b: (
            L.matmul(a, b),
            L.outer(b, b),
            L.trace(a),
            L.cross(b[:3], b[1:]),
            L.vecdot(b, b),
        ),
    ),
]


@pytest.mark.parametrize("name,call", _INT_CASES, ids=[c[0] for c in _INT_CASES])
def test_integer_inputs(name, call):
    a = np.array([[4, 1, 0, 2], [1, 5, 1, 0], [0, 2, 6, 1], [1, 0, 1, 3]], np.int32)
    b = np.array([1, -2, 3, 1], np.int32)
    _compare(call, [a, b], np.float32, what=name)


# --------------------------------------------------------------------------- vmap

# (id, call, in_axes, per-example argument specs, primitives needed); 3 examples.
_VMAP_CASES = [
    ("solve", lambda L, a, b: L.solve(a, b), (1, None), [("gen", (4, 4)), ("any", (4,))], ()),
    ("solve_both", lambda L, a, b: L.solve(a, b), (2, 1), [("gen", (4, 4)), ("any", (4, 2))], ()),
    ("inv", lambda L, a: L.inv(a), (2,), [("gen", (4, 4))], ()),
    ("det", lambda L, a: L.det(a), (1,), [("gen", (5, 5))], ()),
    ("slogdet", lambda L, a: L.slogdet(a), (2,), [("gen", (5, 5))], ()),
    ("norm", lambda L, a: L.norm(a, ord=np.inf), (1,), [("any", (4, 5))], ()),
    ("cholesky", lambda L, a: L.cholesky(a), (1,), [("spd", (4, 4))], ("cholesky",)),
    ("eigh", lambda L, a: L.eigh(a), (1,), [("herm", (4, 4))], ("eigh",)),
    ("svd", lambda L, a: L.svd(a, full_matrices=False), (1,), [("any", (5, 4))], ("svd",)),
]


@pytest.mark.parametrize(
    "name,call,in_axes,specs,needs", _VMAP_CASES, ids=[c[0] for c in _VMAP_CASES]
)
def test_vmap(name, call, in_axes, specs, needs):
    _needs(*needs)
    args = [_make((kind, (3, *shape)), np.float32) for kind, shape in specs]
    args = [
        a[0] if ax is None else np.moveaxis(a, 0, ax) for a, ax in zip(args, in_axes, strict=True)
    ]
    expected = _plain(jax.jit(jax.vmap(lambda *a: call(JL, *a), in_axes))(*args))
    got = _plain(xform.vmap(lambda *a: call(XL, *a), in_axes)(*args))
    assert_same(got, expected, *_tol(np.float32), what=f"{name} vmap")


# --------------------------------------------------------------------------- gradients


def _scalar(call):
    """A real scalar loss from ``call``'s outputs (a weighted sum, so every entry counts)."""

    def loss(L, lib_np, *args):
        leaves = jax.tree.leaves(call(L, *args))
        total = 0.0
        for i, leaf in enumerate(leaves):
            if np.dtype(leaf.dtype).kind in "fc":
                w = np.cos(np.arange(leaf.size) + i)  # the same weights for both libraries
                total = total + lib_np.sum(lib_np.real(leaf).ravel() * w)
        return total

    return loss


_GRAD_CASES = [
    ("solve", lambda L, a, b: L.solve(a, b), [("gen", (2, 4, 4)), ("any", (2, 4, 3))], ()),
    ("solve_vector", lambda L, a, b: L.solve(a, b), [SQ, ("any", (4,))], ()),
    ("inv", lambda L, a: L.inv(a), [SQ], ()),
    ("det_n", lambda L, a: L.det(a), [BATCH], ()),
    ("det_2_3", lambda L, a, b: (L.det(a), L.det(b)), [("gen", (2, 2)), ("gen", (3, 3))], ()),
    ("slogdet", lambda L, a: L.slogdet(a)[1], [BATCH], ()),
    (
        "slogdet_small",
        lambda L, a, b: (L.slogdet(a)[1], L.slogdet(b)[1]),
        [("gen", (2, 2)), ("gen", (1, 1))],
        (),
    ),
    (
        "norm",
        lambda L, a: (L.norm(a), L.norm(a, ord=1), L.norm(a[0], ord=3)),
        [("any", (3, 4))],
        (),
    ),
    ("matrix_power", lambda L, a: L.matrix_power(a, -3), [SQ], ()),
    ("cholesky", lambda L, a: L.cholesky(a), [("spd", (4, 4))], ("cholesky",)),
    ("eigh", lambda L, a: (L.eigvalsh(a), L.eigh(a)[0]), [("herm", (4, 4))], ("eigh",)),
    ("norm_2", lambda L, a: L.norm(a, ord=2), [("any", (3, 4))], ("svd",)),
    ("pinv", lambda L, a: L.pinv(a), [("any", (5, 3))], ("svd",)),
    ("pinv_wide", lambda L, a: L.pinv(a), [("any", (3, 5))], ("svd",)),
]


@pytest.mark.parametrize("name,call,specs,needs", _GRAD_CASES, ids=[c[0] for c in _GRAD_CASES])
def test_grad(name, call, specs, needs):
    _needs(*needs)
    args = [_make(s, np.float64) for s in specs]
    loss = _scalar(call)
    argnums = tuple(range(len(args)))
    with xform.enable_x64(), jax.enable_x64(True):
        expected = jax.jit(jax.grad(lambda *a: loss(JL, jnp, *a), argnums))(*args)
        got = xform.grad(lambda *a: loss(XL, xnp, *a), argnums)(*args)
        assert_same(got, expected, 1e-8, 1e-10, what=f"grad {name}")


def _complex_losses(L, lib, b):
    def loss(re, im):
        m = re + 1j * im
        sign, logabsdet = L.slogdet(m)
        return (
            logabsdet
            + lib.imag(sign)
            + lib.real(L.det(m))
            + lib.sum(lib.imag(L.solve(m, b)))
            + lib.sum(lib.real(L.inv(m)))
        )

    return loss


def test_grad_complex():
    # xform.grad takes real inputs only: a complex matrix enters as its real and imaginary
    # parts.
    re, im, b = _general((4, 4), F64), _rand((4, 4), F64), _rand((4,), F64)
    with xform.enable_x64(), jax.enable_x64(True):
        expected = jax.jit(jax.grad(_complex_losses(JL, jnp, b), (0, 1)))(re, im)
        got = xform.grad(_complex_losses(XL, xnp, b), (0, 1))(re, im)
        assert_same(got, expected, 1e-8, 1e-10)


def test_hessian():
    # Second order: the custom rules' own derivatives (through lu's JVP).
    a, b = _general((4, 4), F64), _rand((4,), F64)

    def f(L, lib):
        return lambda m: L.slogdet(m)[1] + L.det(m) + lib.sum(L.solve(m, b))

    with xform.enable_x64(), jax.enable_x64(True):
        expected = jax.jit(jax.hessian(f(JL, jnp)))(a)
        got = xform.hessian(f(XL, xnp))(a)
        assert_same(got, expected, 1e-7, 1e-9)


def test_grad_under_jit_and_vmap():
    a = _general((3, 4, 4), np.float32)

    def f(L, lib):
        return lambda m: lib.sum(L.inv(m)) + L.slogdet(m)[1] + L.det(m)

    expected = jax.jit(jax.vmap(jax.grad(f(JL, jnp))))(a)
    got = xform.jit(xform.vmap(xform.grad(f(XL, xnp))))(a)
    assert_same(got, expected, 1e-3, 1e-4)


def test_det_grad_of_singular_matrix_is_the_adjugate():
    # Rank n-1: the gradient of det is the (rank-one) adjugate transposed, not NaN.
    a = np.array(
        [[1.0, 2.0, 3.0, 4.0], [2.0, 4.0, 6.0, 8.0], [0.0, 1.0, 0.0, 1.0], [1.0, 0.0, 2.0, 5.0]],
        np.float32,
    )
    expected = jax.jit(jax.grad(JL.det))(a)
    got = xform.grad(XL.det)(a)
    assert np.all(np.isfinite(np.asarray(got)))
    assert_same(got, expected, 1e-4, 1e-4)


def test_singular_slogdet_and_cond():
    a = np.array(
        [[1.0, 2.0, 3.0, 0.0], [2.0, 4.0, 6.0, 0.0], [0.0, 1.0, 0.0, 1.0], [1.0, 0.0, 2.0, 5.0]],
        np.float32,
    )
    _compare(
        lambda L, m: (L.slogdet(m), L.det(m), L.cond(m, p=1), L.cond(m, p="fro")), [a], np.float32
    )


# --------------------------------------------------------------------------- errors

_ERRORS = [
    ("inv", lambda L: L.inv(np.ones((2, 3), np.float32)), ValueError, r"inv.*\(2, 3\)"),
    ("inv_1d", lambda L: L.inv(np.ones(3, np.float32)), ValueError, r"inv.*\(3,\)"),
    ("det", lambda L: L.det(np.ones((2, 3), np.float32)), ValueError, r"det.*\(2, 3\)"),
    ("slogdet", lambda L: L.slogdet(np.ones((4, 3), np.float32)), ValueError, r"slogdet.*\(4, 3\)"),
    (
        "slogdet_method",
        lambda L: L.slogdet(np.eye(3, dtype=np.float32), method="svd"),
        ValueError,
        "Unknown slogdet method",
    ),
    (
        "solve_1d",
        lambda L: L.solve(np.ones(3, np.float32), np.ones(3, np.float32)),
        ValueError,
        "at least two dimensional",
    ),
    (
        "solve_batched_vector",
        lambda L: L.solve(np.ones((2, 3, 3), np.float32), np.ones((2, 3), np.float32)),
        ValueError,
        "Invalid shapes for solve",
    ),
    (
        "solve_shapes",
        lambda L: L.solve(np.eye(3, dtype=np.float32), np.ones(4, np.float32)),
        ValueError,
        None,
    ),
    (
        "matrix_power_1d",
        lambda L: L.matrix_power(np.ones(3, np.float32), 2),
        TypeError,
        "two-dimensional",
    ),
    (
        "matrix_power_square",
        lambda L: L.matrix_power(np.ones((2, 3), np.float32), 2),
        TypeError,
        "square",
    ),
    (
        "matrix_power_exponent",
        lambda L: L.matrix_power(np.eye(2, dtype=np.float32), 1.5),
        TypeError,
        "exponent must be an integer",
    ),
    ("norm_ord", lambda L: L.norm(np.ones((2, 2), np.float32), ord=3), ValueError, "Invalid order"),
    (
        "vector_norm_ord",
        lambda L: L.vector_norm(np.ones(2, np.float32), ord="inf"),
        ValueError,
        "Invalid order 'inf' for vector norm",
    ),
    (
        "norm_axes",
        lambda L: L.norm(np.ones((2, 2, 2), np.float32), axis=(0, 1, 2)),
        ValueError,
        "Improper number of axes",
    ),
    (
        "qr_mode",
        lambda L: L.qr(np.ones((2, 2), np.float32), mode="bad"),
        ValueError,
        "Unsupported QR decomposition mode",
    ),
    (
        "eigh_uplo",
        lambda L: L.eigh(np.eye(2, dtype=np.float32), UPLO="X"),
        ValueError,
        "UPLO must be one of",
    ),
    ("outer", lambda L: L.outer(np.ones((2, 2)), np.ones(2)), ValueError, "one-dimensional"),
    ("cross", lambda L: L.cross(np.ones(2), np.ones(2)), ValueError, "3-dimensional"),
    (
        "multi_dot_rank",
        lambda L: L.multi_dot([np.ones(2), np.ones(2), np.ones(2)]),
        ValueError,
        "two-dimensional",
    ),
    (
        "multi_dot_shapes",
        lambda L: L.multi_dot([np.ones((2, 3)), np.ones((2, 3))]),
        ValueError,
        "must match",
    ),
    (
        "matrix_transpose",
        lambda L: L.matrix_transpose(np.ones(3)),
        ValueError,
        "at least 2 dimensions",
    ),
    (
        "tensorinv",
        lambda L: L.tensorinv(np.ones((2, 3, 4)), ind=1),
        ValueError,
        "tensorinv is only possible",
    ),
    (
        "tensorinv_ind",
        lambda L: L.tensorinv(np.ones((2, 2)), ind=0),
        ValueError,
        "ind must be a positive integer",
    ),
    (
        "tensorsolve",
        lambda L: L.tensorsolve(np.ones((2, 3, 6)), np.ones((3, 2))),
        ValueError,
        "leading shape of a must match",
    ),
    ("cond_1d", lambda L: L.cond(np.ones(3)), ValueError, "at least 2D"),
    ("cond_square", lambda L: L.cond(np.ones((2, 3)), p=1), ValueError, "must be square"),
    (
        "pinv_rcond",
        lambda L: L.pinv(np.eye(2), rtol=0.1, rcond=0.1),
        ValueError,
        "only one of rtol and rcond",
    ),
    (
        "matrix_rank_tol",
        lambda L: L.matrix_rank(np.eye(2), rtol=0.1, tol=0.1),
        ValueError,
        "only one of tol or rtol",
    ),
    (
        "lstsq_rows",
        lambda L: L.lstsq(np.ones((3, 2)), np.ones(2)),
        ValueError,
        "Leading dimensions",
    ),
    ("list_input", lambda L: L.det([[1.0, 2.0], [3.0, 4.0]]), TypeError, None),
]


@pytest.mark.parametrize("name,call,exc,match", _ERRORS, ids=[e[0] for e in _ERRORS])
def test_errors(name, call, exc, match):
    with pytest.raises(exc) as jax_info:
        call(JL)
    assert jax_info.type is exc  # the oracle raises this type too
    with pytest.raises(exc, match=match):
        call(XL)


def test_multi_dot_of_one_array_is_an_error():
    # JAX 0.10.2 unpacks a lone array into its rows here (and multiplies those); NumPy and
    # xform reject it.
    with pytest.raises(ValueError, match="at least two arrays"):
        XL.multi_dot([np.ones((2, 2))])
