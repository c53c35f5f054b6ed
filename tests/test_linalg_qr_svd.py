"""The QR and SVD families (geqrf, geqp3, householder_product, ormqr, qr, svd,
symmetric_product, cholesky_update, qdwh) against jax.lax.linalg: values eagerly and under
jit (float32, float64, complex64; tall, wide, square, batched), reconstructions, vmap over a
non-leading axis, jvp and grad, derivatives JAX lacks (against finite differences), the
lowered kernel calls, failures and bad input.

JAX's oracles run under ``jax.jit``: its eager linear algebra compiles every operation."""

import functools
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax._src.lax import linalg as jax_internal
from jax.lax import linalg as jla

import xform
import xform.numpy as xnp
from tests.harness import assert_same, check_vmap, x64_for
from xform.lax import linalg as la
from xform.primitives import qr as qr_family
from xform.test_util import check_grads

RNG = np.random.default_rng(0)
DTYPES = [np.float32, np.float64, np.complex64]
TOL = {np.float32: 2e-5, np.float64: 1e-12, np.complex64: 2e-5, np.complex128: 1e-12}
SHAPES = [(4, 3), (3, 5), (2, 3, 3)]  # tall, wide, batched square


def _rand(shape, dtype):
    x = RNG.standard_normal(shape)
    if np.issubdtype(dtype, np.complexfloating):
        x = x + 1j * RNG.standard_normal(shape)
    return x.astype(dtype)


def _h(x):
    return np.conj(np.swapaxes(np.asarray(x), -1, -2))


def _close(got, expected, dtype, what="", scale=1):
    tol = TOL[np.dtype(dtype).type] * scale
    assert_same(got, expected, rtol=tol, atol=tol, check_weak_type=False, what=what)


def _eager_and_jit(fn, *args):
    """``fn(*args)`` eagerly and under ``xform.jit``, checked equal; the eager result."""
    eager = fn(*args)
    assert_same(
        xform.jit(fn)(*args), eager, rtol=0, atol=0, check_weak_type=False, what="jit against eager"
    )
    return eager


# --------------------------------------------------------------------------- values


QR_OPTIONS = [dict(full_matrices=f, pivoting=p) for f in (True, False) for p in (False, True)]
SVD_OPTIONS = [
    dict(full_matrices=f, compute_uv=uv, algorithm=a)
    for f, uv, a in [
        (True, True, None),
        (False, True, None),
        (False, True, "QR"),
        (True, False, None),
        (False, False, "QR"),
    ]
]


def _all_qr(lib, x):
    return [lib.qr(x, **opts) for opts in QR_OPTIONS]


def _all_svd(lib, x):
    return [
        lib.svd(
            x,
            full_matrices=o["full_matrices"],
            compute_uv=o["compute_uv"],
            algorithm=o["algorithm"] and lib.SvdAlgorithm.QR,
        )
        for o in SVD_OPTIONS
    ]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_qr_matches_jax_and_reconstructs(dtype):
    # Every option in one compiled program per shape (a compilation costs more than a run);
    # eagerly, the default options.
    with x64_for(dtype):
        for shape in SHAPES:
            x = _rand(shape, dtype)
            got = xform.jit(functools.partial(_all_qr, la))(x)
            _close(got, jax.jit(functools.partial(_all_qr, jla))(x), dtype, f"qr {shape}")
            assert_same(la.qr(x), got[0], rtol=0, atol=0, what="eager against jit")
            for opts, out in zip(QR_OPTIONS, got, strict=True):
                what = f"qr {shape} {opts}"
                q, r = np.asarray(out[0]), np.asarray(out[1])
                cols = (
                    np.take_along_axis(x, np.asarray(out[2])[..., None, :], -1)
                    if opts["pivoting"]
                    else x
                )
                k = min(shape[-2:])
                _close(q[..., :, :k] @ r[..., :k, :], cols, dtype, what, scale=10)
                np.testing.assert_array_equal(np.tril(r, -1), 0)
                eye = np.broadcast_to(
                    np.eye(q.shape[-1], dtype=dtype), q.shape[:-2] + (q.shape[-1],) * 2
                )
                _close(_h(q) @ q, eye, dtype, what, scale=10)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_svd_matches_jax_and_reconstructs(dtype):
    with x64_for(dtype):
        for shape in SHAPES:
            x = _rand(shape, dtype)
            got = xform.jit(functools.partial(_all_svd, la))(x)
            _close(got, jax.jit(functools.partial(_all_svd, jla))(x), dtype, f"svd {shape}")
            assert_same(la.svd(x), got[0], rtol=0, atol=0, what="eager against jit")
            for opts, out in zip(SVD_OPTIONS, got, strict=True):
                if not opts["compute_uv"]:
                    continue
                u, s, vh = (np.asarray(a) for a in out)
                k = s.shape[-1]
                rebuilt = (u[..., :, :k] * s[..., None, :]) @ vh[..., :k, :]
                _close(rebuilt, x, dtype, f"svd {shape} {opts}", scale=10)
                assert np.all(np.diff(s, axis=-1) <= 0) and np.all(s >= 0)


def test_svd_default_and_divide_and_conquer_agree_and_subset_by_index():
    x = _rand((3, 4), np.float32)
    u, s, vh = la.svd(x, full_matrices=False, algorithm=la.SvdAlgorithm.DIVIDE_AND_CONQUER)
    assert_same((u, s, vh), la.svd(x, full_matrices=False), rtol=0, atol=0)
    # As JAX on CPU: the whole range is allowed, a part of it is not.
    assert_same(
        la.svd(x, compute_uv=False, subset_by_index=(0, 3)),
        la.svd(x, compute_uv=False),
        rtol=0,
        atol=0,
    )
    with pytest.raises(NotImplementedError, match="subset_by_index not implemented"):
        la.svd(x, full_matrices=False, subset_by_index=(0, 2))
    with pytest.raises(NotImplementedError, match="subset_by_index not implemented"):
        jla.svd(x, full_matrices=False, subset_by_index=(0, 2))
    # Its shape rule still sees the subset (as JAX's: abstract evaluation does not lower).
    shapes = xform.eval_shape(lambda x: la.svd(x, full_matrices=False, subset_by_index=(1, 3)), x)
    assert [a.shape for a in shapes] == [(3, 2), (2,), (2, 4)]


ORMQR_OPTIONS = [(True, False), (True, True), (False, False), (False, True)]


def _packed_ops(geqrf, geqp3, lib, x, c_left, c_right):
    """geqrf, geqp3, householder_product and every ormqr variant, in one program."""
    packed, taus = geqrf(x)
    outs = [
        packed,
        taus,
        geqp3(x, np.zeros(x.shape[:-2] + x.shape[-1:], np.int32)),
        lib.householder_product(packed, taus),
    ]
    for left, transpose in ORMQR_OPTIONS:
        outs.append(
            lib.ormqr(packed, taus, c_left if left else c_right, left=left, transpose=transpose)
        )
    return outs


@pytest.mark.parametrize("dtype", [np.float32, np.complex64], ids=lambda d: np.dtype(d).name)
def test_geqrf_householder_product_ormqr_match_jax(dtype):
    x, c_left, c_right = _rand((2, 4, 3), dtype), _rand((2, 4, 2), dtype), _rand((2, 2, 4), dtype)
    args = (x, c_left, c_right)
    got = xform.jit(functools.partial(_packed_ops, qr_family.geqrf, qr_family.geqp3, la))(*args)
    expected = jax.jit(functools.partial(_packed_ops, jax_internal.geqrf, jax_internal.geqp3, jla))(
        *args
    )
    _close(got, expected, dtype, "geqrf, geqp3, householder_product, ormqr")
    packed, taus, q = got[0], got[1], np.asarray(got[3])
    _close(q, la.qr(x, full_matrices=False)[0], dtype, "householder_product is qr's q")
    full_q = np.asarray(la.qr(x)[0])
    for (left, transpose), out in zip(ORMQR_OPTIONS, got[4:], strict=True):
        op = _h(full_q) if transpose else full_q
        _close(out, op @ c_left if left else c_right @ op, dtype, "ormqr against q", scale=10)
    if dtype == np.float32:  # eagerly: each op compiled on its own
        assert_same(list(qr_family.geqrf(x)), got[:2], rtol=0, atol=0, what="eager geqrf")
        assert_same(la.householder_product(packed, taus), q, rtol=0, atol=0)
        assert_same(la.ormqr(packed, taus, c_right, left=False), got[6], rtol=0, atol=0)


def test_empty_matrices():
    for shape in [(0, 3), (3, 0), (2, 0, 0)]:
        x = np.zeros(shape, np.float32)
        for full in (True, False):
            assert_same(
                la.qr(x, full_matrices=full),
                jax.jit(functools.partial(jla.qr, full_matrices=full))(x),
                what=f"qr {shape}",
            )
            assert_same(
                la.svd(x, full_matrices=full),
                jax.jit(functools.partial(jla.svd, full_matrices=full))(x),
                what=f"svd {shape}",
            )


def test_svd_nan_where_lapack_fails():
    x = np.array([[1.0, np.inf], [2.0, 3.0]], np.float32)
    u, s, vh = xform.jit(la.svd)(x)
    assert np.isnan(np.asarray(s)).all() and np.isnan(np.asarray(u)).all()
    assert_same((u, s, vh), jax.jit(jla.svd)(x))


def test_symmetric_product_matches_jax():
    a, c = _rand((2, 3, 4), np.float32), _rand((2, 3, 3), np.float32)
    for sym in (False, True):
        fn = functools.partial(la.symmetric_product, alpha=2.0, beta=0.5, symmetrize_output=sym)
        jfn = functools.partial(jla.symmetric_product, alpha=2.0, beta=0.5, symmetrize_output=sym)
        expected = jax.jit(jfn)(a, c)
        # Eagerly a NumPy kernel, under jit XLA's dot: equal up to rounding.
        _close(fn(a, c), expected, np.float32, "eager")
        _close(xform.jit(fn)(a, c), expected, np.float32, "jit")


def test_cholesky_update_matches_jax():
    r = np.triu(_rand((4, 4), np.float32)) + 4 * np.eye(4, dtype=np.float32)
    w = _rand((4,), np.float32)
    w_zero = w.copy()
    w_zero[1] = 0  # a rotation that is the identity
    for v in (w, w_zero):
        expected = jax.jit(jla.cholesky_update)(r, v)
        _close(la.cholesky_update(r, v), expected, np.float32, "eager")
        _close(xform.jit(la.cholesky_update)(r, v), expected, np.float32, "jit")
        updated = np.asarray(expected)
        _close(updated.T @ updated, r.T @ r + np.outer(v, v), np.float32, scale=20)


def test_qdwh_matches_jax():
    x = _rand((5, 3), np.float32)
    got = xform.jit(la.qdwh)(x)
    expected = jla.qdwh(x)
    assert_same(got, expected, rtol=1e-5, atol=1e-5, check_weak_type=False)
    u, h, _, converged = got
    assert bool(converged)
    _close(np.asarray(u) @ np.asarray(h), x, np.float32, scale=10)
    # Padded from a 4 x 2 matrix.
    padded = np.pad(x[:4, :2], ((0, 1), (0, 1)))
    got = la.qdwh(padded, dynamic_shape=(4, 2))
    assert_same(
        got, jla.qdwh(padded, dynamic_shape=(4, 2)), rtol=1e-5, atol=1e-5, check_weak_type=False
    )


# --------------------------------------------------------------------------- vmap


def test_vmap_over_a_non_leading_axis():
    # The oracles are jax.vmap of jax.jit; the Python loop of xform calls runs for two.
    x = _rand((4, 2, 3), np.float32)  # two 4 x 3 matrices, mapped along axis 1
    tol = dict(rtol=1e-5, atol=1e-5, jit=False)
    check_vmap(la.qr, jax.jit(jla.qr), (x,), in_axes=1, **tol)
    pivoted = functools.partial(la.qr, full_matrices=False, pivoting=True)
    check_vmap(
        pivoted,
        jax.jit(functools.partial(jla.qr, full_matrices=False, pivoting=True)),
        (x,),
        in_axes=1,
        out_axes=(0, 2, 0),
        loop=False,
        **tol,
    )
    check_vmap(la.svd, jax.jit(jla.svd), (x,), in_axes=1, out_axes=(1, 0, 0), loop=False, **tol)
    packed, taus = (np.asarray(a) for a in qr_family.geqrf(np.moveaxis(x, 1, 0)))
    check_vmap(
        la.ormqr,
        jax.jit(jla.ormqr),
        (packed, taus, _rand((4, 2), np.float32)),
        in_axes=(0, 0, None),
        loop=False,
        **tol,
    )
    check_vmap(
        la.householder_product,
        jax.jit(jla.householder_product),
        (np.moveaxis(packed, 0, 2), taus),
        in_axes=(2, 0),
        loop=False,
        **tol,
    )
    a, cs = _rand((3, 2, 2), np.float32), _rand((2, 2, 3), np.float32)
    check_vmap(
        la.symmetric_product,
        jax.jit(jla.symmetric_product),
        (a, cs),
        in_axes=(0, 2),
        rtol=1e-5,
        atol=1e-5,
    )
    rs = np.triu(_rand((2, 3, 3), np.float32)) + 3 * np.eye(3, dtype=np.float32)
    check_vmap(
        la.cholesky_update,
        jax.jit(jax_internal._cholesky_update_jax_fn),
        (rs, _rand((3, 2), np.float32)),
        in_axes=(0, 1),
        loop=False,
        **tol,
    )


# --------------------------------------------------------------------------- derivatives


def _jvp(lib_jvp, fn, x, t):
    return lib_jvp(fn, (x,), (t,))


# (shape, full_matrices, pivoting): tall with a full q (the extra columns' rule), wide,
# batched square, tall pivoted.
QR_JVP_CASES = {
    np.float64: [
        ((4, 3), True, False),
        ((3, 5), True, False),
        ((2, 3, 3), False, False),
        ((5, 3), True, True),
    ],
    np.complex128: [((4, 3), False, False), ((3, 5), True, False), ((3, 3), True, True)],
}


def _qr_jvps(cases, jvp, lib, xs, ts):
    """The jvp of (q, r) for every case, in one program (the pivots' tangents are float0)."""
    return [
        jvp(
            lambda x, full=full, piv=piv: lib.qr(x, full_matrices=full, pivoting=piv)[:2],
            (x,),
            (t,),
        )
        for (_, full, piv), x, t in zip(cases, xs, ts, strict=True)
    ]


@pytest.mark.parametrize("dtype", [np.float64, np.complex128], ids=lambda d: np.dtype(d).name)
def test_qr_jvp_matches_jax(dtype):
    with x64_for(dtype):
        cases = QR_JVP_CASES[dtype]
        xs = [_rand(shape, dtype) for shape, _, _ in cases]
        ts = [_rand(shape, dtype) for shape, _, _ in cases]
        got = xform.jit(functools.partial(_qr_jvps, cases, xform.jvp, la))(xs, ts)
        expected = jax.jit(functools.partial(_qr_jvps, cases, jax.jvp, jla))(xs, ts)
        for case, g, e in zip(cases, got, expected, strict=True):
            _close(g, e, dtype, f"qr jvp {case}", scale=100)


def test_qr_jvp_with_pivoting_wide_and_batched_against_finite_differences():
    # JAX 0.10.2's rule fails on batched pivoted input and, for wide ones, takes R's extra
    # columns from the unpermuted matrix; this one permutes (and checks out numerically).
    with xform.enable_x64():
        for shape in [(3, 5), (2, 4, 3)]:
            x = _rand(shape, np.float64)
            check_grads(
                lambda x: la.qr(x, pivoting=True, full_matrices=False)[:2],
                (x,),
                order=1,
                modes=("fwd",),
            )


# (shape, full_matrices, compute_uv)
SVD_JVP_CASES = [
    ((4, 3), False, True),
    ((2, 3, 5), False, True),
    ((3, 3), True, True),
    ((3, 5), True, False),
]


def _svd_jvps(jvp, lib, xs, ts):
    return [
        jvp(lambda x, full=full, uv=uv: lib.svd(x, full_matrices=full, compute_uv=uv), (x,), (t,))
        for (_, full, uv), x, t in zip(SVD_JVP_CASES, xs, ts, strict=True)
    ]


@pytest.mark.parametrize("dtype", [np.float64, np.complex128], ids=lambda d: np.dtype(d).name)
def test_svd_jvp_matches_jax(dtype):
    with x64_for(dtype):
        xs = [_rand(shape, dtype) for shape, _, _ in SVD_JVP_CASES]
        ts = [_rand(shape, dtype) for shape, _, _ in SVD_JVP_CASES]
        got = xform.jit(functools.partial(_svd_jvps, xform.jvp, la))(xs, ts)
        expected = jax.jit(functools.partial(_svd_jvps, jax.jvp, jla))(xs, ts)
        for case, g, e in zip(SVD_JVP_CASES, got, expected, strict=True):
            _close(g, e, dtype, f"svd jvp {case}", scale=100)
        # Eagerly, the singular values' tangents (a short program).
        _close(
            xform.jvp(functools.partial(la.svd, compute_uv=False), (xs[0],), (ts[0],)),
            (expected[0][0][1], expected[0][1][1]),
            dtype,
            "eager",
            scale=100,
        )
    x = _rand((3, 4), np.float32)
    with pytest.raises(NotImplementedError, match="not implemented for full matrices"):
        xform.jvp(la.svd, (x,), (x,))


def test_grad_matches_jax():
    x = _rand((4, 3), np.float32)

    def loss(np_, lib, x):
        q, r = lib.qr(x)
        u, s, vh = lib.svd(x, full_matrices=False)  # a loss invariant to the vectors' signs
        return (
            np_.sum(q * q * x[:, :1])
            + np_.sum(r**3)
            + np_.sum(s**3)
            + np_.sum((u * s[None, :]) @ vh * x)
        )

    expected = jax.jit(jax.grad(functools.partial(loss, jnp, jla)))(x)
    got = xform.jit(xform.grad(functools.partial(loss, xnp, la)))(x)
    _close(got, expected, np.float32, scale=10)
    complex_x = _rand((3, 3), np.complex64)

    def s_loss(np_, lib, x):
        return np_.sum(lib.svd(x, compute_uv=False) ** 2)

    # A real loss of a complex input: the pullback of 1, as JAX's grad (xform's grad asks for
    # holomorphic=True there).
    got = xform.jit(lambda x: xform.vjp(functools.partial(s_loss, xnp, la), x)[1](np.float32(1)))(
        complex_x
    )
    expected = jax.jit(jax.grad(functools.partial(s_loss, jnp, jla)))(complex_x)
    _close(got[0], expected, np.complex64, scale=10)


def _check_jvp_complex(f, args, eps=1e-6):
    """``jvp(f)`` against central differences along a random complex direction (check_grads
    takes real arguments)."""
    direction = tuple(_rand(np.shape(a), np.complex128) for a in args)
    _, tangent = xform.jvp(f, args, direction)
    plus = f(*[a + eps * d for a, d in zip(args, direction, strict=True)])
    minus = f(*[a - eps * d for a, d in zip(args, direction, strict=True)])
    fd = [(np.asarray(p) - np.asarray(m)) / (2 * eps) for p, m in zip(plus, minus, strict=True)]
    assert_same([np.asarray(t) for t in tangent], fd, rtol=1e-6, atol=1e-6)


def test_derivatives_jax_lacks_against_finite_differences():
    # JAX has no rules for geqrf, geqp3, householder_product, ormqr, symmetric_product or
    # cholesky_update; these are checked numerically, forward and reverse.
    with xform.enable_x64():
        x = _rand((4, 3), np.float64)
        check_grads(qr_family.geqrf, (x,), order=1)
        jpvt = np.zeros((3,), np.int32)
        check_grads(lambda x: qr_family.geqp3(x, jpvt)[::2], (x,), order=1, modes=("fwd",))
        packed, taus = (np.asarray(a) for a in qr_family.geqrf(x))
        check_grads(la.householder_product, (packed, taus), order=1)
        c = _rand((3, 4), np.float64)
        check_grads(
            functools.partial(la.ormqr, left=False, transpose=True), (packed, taus, c), order=1
        )
        z = _rand((2, 4, 3), np.complex128)
        _check_jvp_complex(qr_family.geqrf, (z,))
        _check_jvp_complex(la.householder_product, tuple(np.asarray(a) for a in qr_family.geqrf(z)))
        a, cs = _rand((3, 2), np.float64), _rand((3, 3), np.float64)
        check_grads(functools.partial(la.symmetric_product, alpha=2.0, beta=0.5), (a, cs), order=2)
        r = np.triu(_rand((3, 3), np.float64)) + 3 * np.eye(3)
        check_grads(la.cholesky_update, (r, _rand((3,), np.float64)), order=1)


def test_derivatives_of_the_packed_form_agree_with_jax_qr():
    # householder_product(geqrf(x)) is qr's economic q: its jvp must be JAX's qr's.
    with x64_for(np.float64):
        x, t = _rand((4, 3), np.float64), _rand((4, 3), np.float64)
        _, got = xform.jvp(lambda x: la.householder_product(*qr_family.geqrf(x)), (x,), (t,))
        _, (expected, _) = jax.jit(
            functools.partial(_jvp, jax.jvp, functools.partial(jla.qr, full_matrices=False))
        )(x, t)
        _close(got, expected, np.float64, scale=100)
        # ormqr is linear in c: its transpose against JAX's gradient of q^T c.
        c = _rand((4, 2), np.float64)
        packed, taus = qr_family.geqrf(x)
        got = xform.grad(lambda c: xnp.sum(la.ormqr(packed, taus, c, transpose=True) ** 3))(c)
        q = jla.qr(x)[0]
        expected = jax.grad(lambda c: jnp.sum((q.T @ c) ** 3))(c)
        _close(got, expected, np.float64, scale=100)


# --------------------------------------------------------------------------- lowering

_CALL = re.compile(
    r"stablehlo\.custom_call @(\w+)\(.*?mhlo\.backend_config = (\{[^}]*\})"
    r".*?operand_layouts = (\[[^\]]*\]).*?result_layouts = (\[[^\]]*\])"
)


def _kernel_calls(text):
    """(target, backend_config, operand layouts, result layouts) of each kernel call."""
    return _CALL.findall(text)


def test_lowered_kernel_calls_match_jax():
    f32, c64 = _rand((2, 4, 3), np.float32), _rand((3, 5), np.complex64)
    packed, taus = qr_family.geqrf(f32)
    c = _rand((2, 5, 4), np.float32)
    cases = [
        (lambda m: m.qr, f32),
        (lambda m: functools.partial(m.qr, full_matrices=False), f32),
        (lambda m: m.qr, c64),
        (lambda m: functools.partial(m.qr, pivoting=True), f32),
        (lambda m: m.svd, f32),
        (lambda m: functools.partial(m.svd, full_matrices=False, algorithm=m.SvdAlgorithm.QR), f32),
        (lambda m: functools.partial(m.svd, compute_uv=False), c64),
        (lambda m: m.householder_product, (packed, taus)),
        (lambda m: functools.partial(m.ormqr, left=False, transpose=True), (packed, taus, c)),
    ]
    for make, operands in cases:
        args = operands if isinstance(operands, tuple) else (operands,)
        mine = _kernel_calls(xform.jit(make(la)).lower(*args).as_text())
        # JAX takes xform's arrays as NumPy data (jit does not abstractify __jax_array__)
        theirs = _kernel_calls(jax.jit(make(jla)).lower(*map(np.asarray, args)).as_text())
        assert mine and mine == theirs


# --------------------------------------------------------------------------- errors


def test_bad_input_errors():
    x = np.ones((3, 4), np.float32)
    with pytest.raises(TypeError, match=r"lax.linalg.qr: .* at least 2 dimensions"):
        la.qr(np.ones(3, np.float32))
    with pytest.raises(TypeError, match="lax.linalg.svd does not accept dtype int32"):
        la.svd(np.ones((2, 2), np.int32))
    with pytest.raises(ValueError, match="full_matrices and subset_by_index cannot both"):
        la.svd(x, subset_by_index=(0, 2))
    with pytest.raises(NotImplementedError, match="Jacobi and Polar algorithms"):
        la.svd(x, algorithm=la.SvdAlgorithm.JACOBI)
    with pytest.raises(TypeError, match="algorithm must be None or an SvdAlgorithm"):
        la.svd(x, algorithm="QR")
    with pytest.raises(ValueError, match="householder_product: a must have at least as many"):
        la.householder_product(x, np.ones(3, np.float32))
    with pytest.raises(ValueError, match="householder_product: taus must not have more"):
        la.householder_product(x.T, np.ones(4, np.float32))
    with pytest.raises(TypeError, match="householder_product: a and taus must have the same"):
        la.householder_product(x.T, np.ones(3, np.complex64))
    with pytest.raises(ValueError, match=r"ormqr: with left=True, c must have as many rows"):
        la.ormqr(x.T, np.ones(3, np.float32), x)
    with pytest.raises(ValueError, match="symmetric_product: takes a rectangular"):
        la.symmetric_product(x, np.ones((4, 4), np.float32))
    with pytest.raises(TypeError, match="symmetric_product does not accept dtype complex64"):
        la.symmetric_product(x.astype(np.complex64), np.ones((3, 3), np.complex64))
    with pytest.raises(ValueError, match="cholesky_update: takes a square matrix and a vector"):
        la.cholesky_update(np.eye(3, dtype=np.float32), np.ones(2, np.float32))
    with pytest.raises(ValueError, match="qdwh: the input matrix of shape M x N must have"):
        la.qdwh(x)
    with pytest.raises(TypeError, match="geqp3: jpvt must be an int32 array"):
        qr_family.geqp3(x, np.zeros(4, np.float32))
