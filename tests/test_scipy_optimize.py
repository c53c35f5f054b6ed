"""jax.scipy's optimize, cluster.vq, spatial.transform and sparse.linalg in xform, against
JAX (values, dtypes, weak types, counts), under jit and vmap, gradients through the Krylov
solvers, and JAX's exception types for bad input."""

import jax
import jax.numpy as jnp
import jax.scipy.cluster.vq as jvq
import jax.scipy.optimize as jopt
import jax.scipy.sparse.linalg as jsl
import jax.scipy.spatial.transform as jtr
import numpy as np
import pytest

import xform
import xform.numpy as xnp
import xform.scipy.cluster.vq as xvq
import xform.scipy.optimize as xopt
import xform.scipy.sparse.linalg as xsl
import xform.scipy.spatial.transform as xtr
from tests.harness import assert_same, x64_for

RNG = np.random.default_rng(0)


@pytest.mark.parametrize(
    "jax_mod, xf_mod",
    [(jopt, xopt), (jvq, xvq), (jtr, xtr), (jsl, xsl)],
    ids=["optimize", "cluster.vq", "spatial.transform", "sparse.linalg"],
)
def test_every_public_name(jax_mod, xf_mod):
    missing = [n for n in dir(jax_mod) if not n.startswith("_") and not hasattr(xf_mod, n)]
    assert not missing


# ----------------------------------------------------------------------------- optimize


def _rosenbrock(np_):
    return lambda x: np_.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


_QA = np.array([[3.0, 1.0, 0.0], [1.0, 2.0, 0.5], [0.0, 0.5, 1.0]])


def _quadratic(np_):
    return lambda x, c: 0.5 * x @ (_QA @ x) - c @ x


def _assert_results(got, expected, tol, weak=True, hess_tol=None):
    assert type(got).__name__ == "OptimizeResults"
    assert got._fields == expected._fields
    for name in ("x", "fun", "jac", "hess_inv"):
        t = hess_tol if name == "hess_inv" and hess_tol else tol
        assert_same(
            getattr(got, name),
            getattr(expected, name),
            rtol=t,
            atol=t,
            what=name,
            check_weak_type=weak,
        )
    for name in ("success", "status", "nfev", "njev", "nit"):
        assert_same(getattr(got, name), getattr(expected, name), what=name, check_weak_type=weak)


_PROBLEMS = {
    "rosenbrock": (_rosenbrock, np.array([-1.2, 1.0, 0.5, 0.3]), ()),
    "quadratic": (_quadratic, np.zeros(3), (np.array([1.0, 2.0, 3.0]),)),
}


def test_minimize_bfgs_float64_matches_jax():
    with x64_for(np.float64):
        # One compiled oracle for both problems (JAX's eager minimize is slow).
        expected = jax.jit(
            lambda: {
                k: jopt.minimize(f(jnp), x0, args, method="BFGS")
                for k, (f, x0, args) in _PROBLEMS.items()
            }
        )()
        for name, (f, x0, args) in _PROBLEMS.items():
            got = xopt.minimize(f(xnp), x0, args, method="BFGS")
            _assert_results(got, expected[name], 1e-7)
            assert bool(got.success), name


def test_minimize_float32_options_under_jit_of_vmap():
    f = _quadratic
    c = np.array([1.0, 2.0, 3.0], np.float32)
    x0s = np.array([[0.5, -1.0, 2.0], [3.0, 0.0, -2.0], [-1.0, -1.0, -1.0]], np.float32)
    # gtol well above float32 noise: near the noise floor, the Wolfe tests (and so the
    # counts) flip with the rounding of a batched versus an unbatched dot.
    opts = {"gtol": 1e-3, "maxiter": 50}

    def solve(x0):
        return xopt.minimize(f(xnp), x0, (c,), method="BFGS", options=opts)

    for got in (xform.vmap(solve)(x0s), xform.jit(xform.vmap(solve))(x0s)):
        assert got.x.dtype == np.float32
        for i, x0 in enumerate(x0s):  # the batch runs each search to its own end
            one = solve(x0)
            lane = jax.tree_util.tree_map(lambda v, i=i: v[i], got)
            # The last inverse-Hessian update divides by a tiny step: float32 noise shows.
            _assert_results(lane, one, 5e-5, weak=False, hess_tol=1e-2)
            assert np.linalg.norm(np.asarray(one.jac), np.inf) < 1e-3


def test_minimize_bad_input():
    with pytest.raises(TypeError, match="args argument to .*minimize must be a tuple"):
        xopt.minimize(lambda x: x.sum(), np.ones(2), args=1, method="BFGS")
    with pytest.raises(ValueError, match="Method CG not recognized"):
        xopt.minimize(lambda x: x.sum(), np.ones(2), method="CG")


# ----------------------------------------------------------------------------- sparse.linalg

_N = 5
_G = RNG.standard_normal((_N, _N)).astype(np.float32)
_SPD = (_G @ _G.T + _N * np.eye(_N)).astype(np.float32)
_GEN = (_G + 4 * np.eye(_N)).astype(np.float32)
_B = RNG.standard_normal(_N).astype(np.float32)
_SOLVERS = {
    "cg": (xsl.cg, jsl.cg, _SPD, {}),
    "bicgstab": (xsl.bicgstab, jsl.bicgstab, _GEN, {}),
    "gmres": (xsl.gmres, jsl.gmres, _GEN, {}),
    "gmres-incremental": (
        xsl.gmres,
        jsl.gmres,
        _GEN,
        {"solve_method": "incremental", "restart": 3},
    ),
}


_W = np.arange(1.0, _N + 1, dtype=np.float32)


def _krylov_program(solvers, np_, grad):
    """Every solver's ``x`` for a matrix ``A``, and the gradients of ``w . x`` in ``A`` and
    ``b`` (with ``A`` given as a function) for all but the incremental GMRES."""

    def program(spd, gen, b):
        out = {}
        for name, (solve, which, kw) in solvers.items():
            a = spd if which is _SPD else gen
            x = solve(a, b, **kw)[0]

            def loss(a, b, solve=solve, kw=kw):
                return np_.dot(_W, solve(lambda v: a @ v, b, **kw)[0])

            out[name] = (x, None if "incremental" in name else grad(loss, argnums=(0, 1))(a, b))
        return out

    return program


def test_krylov_values_jit_and_grads():
    # One compiled program per library: JAX's eager while loops compile op by op.
    expected = jax.jit(
        _krylov_program({k: (v[1], v[2], v[3]) for k, v in _SOLVERS.items()}, jnp, jax.grad)
    )(_SPD, _GEN, _B)
    xf_solvers = {k: (v[0], v[2], v[3]) for k, v in _SOLVERS.items()}
    got = xform.jit(_krylov_program(xf_solvers, xnp, xform.grad))(_SPD, _GEN, _B)
    assert_same(got, expected, rtol=1e-4, atol=1e-4, what="jit")
    for name, (xf, _, a, kw) in _SOLVERS.items():  # eagerly: values, info, residuals
        x, info = xf(a, _B, **kw)
        assert_same(x, expected[name][0], rtol=1e-5, atol=1e-5, what=name)
        np.testing.assert_allclose(a @ np.asarray(x), _B, atol=1e-4)
        assert (info is None) == (name in ("cg", "bicgstab"))
        if info is not None:
            assert int(info) == 0 and info.dtype == np.int32


def test_krylov_pytrees_x0_and_preconditioner():
    a = _GEN
    d = np.diag(a)

    def op(t):
        return {
            "u": a[:2, :2] @ t["u"] + a[:2, 2:] @ t["v"],
            "v": a[2:, :2] @ t["u"] + a[2:, 2:] @ t["v"],
        }

    def precond(t):
        return {"u": t["u"] / d[:2], "v": t["v"] / d[2:]}

    b = {"u": _B[:2], "v": _B[2:]}
    x0 = {"u": np.ones(2, np.float32), "v": np.zeros(3, np.float32)}
    kw = {"x0": x0, "M": precond, "tol": 1e-6, "maxiter": 40}
    dense = np.linalg.solve(a.astype(np.float64), _B.astype(np.float64))
    for solve in (xsl.bicgstab, xsl.gmres):  # matched to JAX above; here, the pytree path
        got = solve(op, b, **kw)[0]
        assert got["u"].dtype == np.float32
        np.testing.assert_allclose(np.concatenate([got["u"], got["v"]]), dense, atol=1e-5)
    spd = {"u": np.diag(_SPD)[:2], "v": np.diag(_SPD)[2:]}
    got = xsl.cg(lambda t: {k: spd[k] * t[k] for k in t}, b)[0]
    assert_same(got, {k: b[k] / spd[k] for k in b}, rtol=1e-5, atol=1e-5, what="cg")
    # A Python scalar b is placed on the device first: a strongly typed float32 result.
    assert_same(xsl.cg(lambda v: 2.0 * v, 3.0)[0], np.float32(1.5), what="scalar")
    assert not xsl.cg(lambda v: 2.0 * v, 3.0)[0].weak_type


def test_krylov_bad_input():
    with pytest.raises(
        ValueError,
        match="cg: linear operator A must be a square matrix.*"
        r"\(2, 3\)",
    ):
        xsl.cg(np.ones((2, 3), np.float32), np.ones(2, np.float32))
    with pytest.raises(TypeError, match="gmres: linear operator A must be either a function"):
        xsl.gmres("a", np.ones(2, np.float32))
    with pytest.raises(ValueError, match="gmres: invalid solve_method 'x'"):
        xsl.gmres(np.eye(2, dtype=np.float32), np.ones(2, np.float32), solve_method="x")
    with pytest.raises(
        ValueError,
        match=r"bicgstab: arrays in x0 and b must have matching "
        r"shapes: \[\(3,\)\] vs \[\(2,\)\]",
    ):
        xsl.bicgstab(np.eye(2, dtype=np.float32), np.ones(2, np.float32), x0=np.ones(3))
    with pytest.raises(ValueError, match="cg: x0 and b must have matching tree structure"):
        xsl.cg(np.eye(2, dtype=np.float32), np.ones(2, np.float32), x0=(np.ones(2),))


# ----------------------------------------------------------------------------- cluster.vq


def test_vq():
    obs = RNG.standard_normal((6, 3)).astype(np.float32)
    book = RNG.standard_normal((4, 3)).astype(np.float32)
    ints = np.array([[1, 2], [7, 9]], np.int32)
    cases = [(obs, book), (obs[:, 0], book[:, 0]), (ints, ints[::-1])]
    expected = jax.jit(lambda cases: [jvq.vq(*c) for c in cases])(cases)
    assert_same([xvq.vq(*c) for c in cases], expected)
    assert_same(xform.jit(xvq.vq)(obs, book), expected[0], what="jit")
    with pytest.raises(ValueError, match="should have the same rank"):
        xvq.vq(np.ones((2, 3)), np.ones(3))
    with pytest.raises(ValueError, match="ndim different than 1 or 2"):
        xvq.vq(np.ones((2, 3, 1)), np.ones((2, 3, 1)))
    with pytest.raises(TypeError, match=r"vq requires ndarray or scalar arguments"):
        xvq.vq([1.0], [2.0])


# ----------------------------------------------------------------------------- spatial.transform

_Q = RNG.standard_normal((5, 4)).astype(np.float32)
_V = RNG.standard_normal((5, 3)).astype(np.float32)


_METHODS = {
    "quat": lambda r, m: r.quat,
    "as_quat_canonical_scalar_first": lambda r, m: r.as_quat(canonical=True, scalar_first=True),
    "as_matrix": lambda r, m: r.as_matrix(),
    "as_rotvec": lambda r, m: r.as_rotvec(),
    "as_rotvec_degrees": lambda r, m: r.as_rotvec(degrees=True),
    "as_mrp": lambda r, m: r.as_mrp(),
    "as_euler": lambda r, m: [r.as_euler(s) for s in ("xyz", "ZXZ", "yzy")],
    "as_euler_degrees": lambda r, m: r.as_euler("YXZ", degrees=True),
    "apply": lambda r, m: [
        r.apply(_V),
        r.apply(_V, inverse=True),
        r.apply(_V[0]),
        r[0].apply(_V),
        r[1].apply(_V[2], inverse=True),
    ],
    "inv": lambda r, m: r.inv().quat,
    "magnitude": lambda r, m: r.magnitude(),
    "mul": lambda r, m: [(r * r[::-1]).quat, (r[0] * r).quat],
    "getitem": lambda r, m: [r[1:3].quat, r[2].quat, r[np.array([4, 0])].quat],
    "mean": lambda r, m: [r.mean().as_matrix(), r.mean(np.arange(5.0)).as_matrix()],
    "concatenate": lambda r, m: m.Rotation.concatenate([r, r[:2]]).quat,
    "identity": lambda r, m: m.Rotation.identity().quat,
    "from_matrix": lambda r, m: m.Rotation.from_matrix(r.as_matrix()).as_quat(canonical=True),
    "from_rotvec": lambda r, m: m.Rotation.from_rotvec(r.as_rotvec()).as_quat(canonical=True),
    "from_rotvec_degrees": lambda r, m: m.Rotation.from_rotvec(
        r.as_rotvec(degrees=True), degrees=True
    ).as_quat(canonical=True),
    "from_mrp": lambda r, m: m.Rotation.from_mrp(r.as_mrp()).as_quat(canonical=True),
    "from_euler": lambda r, m: [m.Rotation.from_euler(s, 2 * _V).quat for s in ("xyz", "ZYZ")],
    "from_euler_short": lambda r, m: [
        m.Rotation.from_euler("z", 90, degrees=True).quat,
        m.Rotation.from_euler("XY", _V[:, :2]).quat,
    ],
    "from_small_rotvec": lambda r, m: m.Rotation.from_rotvec(_V * 1e-4).as_rotvec(),
    "slerp": lambda r, m: (
        [
            s(np.array([0.0, 0.5, 1.2, 3.9], np.float32)).quat
            for s in [m.Slerp.init(np.array([0.0, 1.0, 3.0, 4.0], np.float32), r[:4])]
        ]
        + [m.Slerp.init([0.0, 2.0], r[1:3])(1.0).quat]
    ),
}


_ORACLE = {}


def _rotation_oracle():
    """JAX's results for every entry of ``_METHODS``, from one compiled program (JAX's
    eager Rotation dispatches, and compiles, op by op)."""
    if not _ORACLE:
        _ORACLE.update(
            jax.jit(
                lambda q: {k: fn(jtr.Rotation.from_quat(q), jtr) for k, fn in _METHODS.items()}
            )(_Q)
        )
    return _ORACLE


@pytest.mark.parametrize("method", list(_METHODS))
def test_rotation_methods(method):
    got = _METHODS[method](xtr.Rotation.from_quat(_Q), xtr)
    assert_same(got, _rotation_oracle()[method], rtol=2e-5, atol=2e-5)


def test_rotation_round_trips_jit_and_vmap():
    r = xtr.Rotation.from_quat(_Q)
    canonical = r.as_quat(canonical=True)
    for back in (
        xtr.Rotation.from_matrix(r.as_matrix()),
        xtr.Rotation.from_mrp(r.as_mrp()),
        xtr.Rotation.from_rotvec(r.as_rotvec()),
        xtr.Rotation.from_euler("zxz", r.as_euler("zxz")),
        r.inv().inv(),
    ):
        np.testing.assert_allclose(back.as_quat(canonical=True), canonical, atol=2e-6)
    np.testing.assert_allclose(
        (r * r.inv()).as_matrix(), np.broadcast_to(np.eye(3), (5, 3, 3)), atol=2e-6
    )
    assert (len(r), r.single, r[0].single, len(r[1:3])) == (5, False, True, 2)
    # A Rotation is a pytree: it crosses jit boundaries and vmaps (eager results are
    # matched to JAX's in test_rotation_methods).
    got = xform.jit(lambda r: (r * r).as_euler("xyz"))(r)
    assert_same(got, (r * r).as_euler("xyz"), rtol=2e-6, atol=2e-6, what="jit")
    got = xform.vmap(lambda q, v: xtr.Rotation.from_quat(q).apply(v))(_Q, _V)
    assert_same(got, r.apply(_V), rtol=2e-6, atol=2e-6, what="vmap")


def test_rotation_random_and_identity_num():
    r = xtr.Rotation.random(xform.random.key(0), 3)  # JAX raises NotImplementedError here
    assert r.quat.shape == (3, 4)
    np.testing.assert_allclose(np.linalg.norm(np.asarray(r.quat), axis=-1), 1, rtol=1e-6)
    assert xtr.Rotation.random(xform.random.key(0)).single
    assert xtr.Rotation.identity(2).quat.shape == (2, 4)


def test_rotation_bad_input():
    single = xtr.Rotation.from_quat(np.ones(4, np.float32))
    many = xtr.Rotation.from_quat(np.ones((3, 4), np.float32))
    with pytest.raises(TypeError, match="Single rotation is not subscriptable"):
        single[0]
    with pytest.raises(TypeError, match="Single rotation has no len"):
        len(single)
    with pytest.raises(ValueError, match="consecutive axes to be different, got 'xxy'"):
        xtr.Rotation.from_euler("xxy", np.ones(3))
    with pytest.raises(ValueError, match="up to 3 characters, got 'xyzx'"):
        xtr.Rotation.from_euler("xyzx", np.ones(4))
    with pytest.raises(ValueError, match=r"from_euler: expected axes .*got 'abc'"):
        xtr.Rotation.from_euler("abc", np.ones(3))
    with pytest.raises(ValueError, match="as_euler: expected 3 axes, got 'xy'"):
        many.as_euler("xy")
    with pytest.raises(ValueError, match="number of rotations, got 2 values and 3 rotations"):
        many.mean(np.ones(2))
    with pytest.raises(ValueError, match="at least 2 rotations"):
        xtr.Slerp.init([0.0, 1.0], single)
    with pytest.raises(TypeError, match="`rotations` must be a `Rotation` instance"):
        xtr.Slerp.init([0.0, 1.0], 1)
