"""xform.experimental.sparse against jax.experimental.sparse: values, dtypes, shapes, ``nse``,
gradients, ``vmap`` and ``jit`` on small random sparse arrays."""

import jax
import jax.experimental.sparse as jsparse
import jax.numpy as jjnp
import numpy as np
import pytest

import xform
import xform.numpy as xjnp
from xform.errors import ConcretizationTypeError
from xform.experimental import sparse as xsparse

RNG = np.random.default_rng(0)


def _sparse_dense(shape, density=0.5):
    x = RNG.standard_normal(shape).astype(np.float32)
    return np.where(RNG.random(shape) < density, x, 0).astype(np.float32)


A = _sparse_dense((3, 4))  # a matrix
AB = _sparse_dense((2, 3, 4))  # a stack of matrices
V4 = RNG.standard_normal(4).astype(np.float32)
V3 = RNG.standard_normal(3).astype(np.float32)
B42 = RNG.standard_normal((4, 2)).astype(np.float32)
B23 = RNG.standard_normal((2, 3)).astype(np.float32)
BB = RNG.standard_normal((2, 4, 5)).astype(np.float32)

LAYOUTS = [
    dict(n_batch=0, n_dense=0),
    dict(n_batch=1, n_dense=0),
    dict(n_batch=0, n_dense=1),
    dict(n_batch=1, n_dense=1),
]


def close(x, y, rtol=1e-5, atol=1e-5):
    x, y = np.asarray(x), np.asarray(y)
    assert x.shape == y.shape, (x.shape, y.shape)
    assert x.dtype == y.dtype, (x.dtype, y.dtype)
    np.testing.assert_allclose(x, y, rtol=rtol, atol=atol)


def densify(m):
    """The dense value of a BCOO array's buffers, in NumPy (JAX's own ``todense`` would
    compile a program per shape, which is most of this file's time)."""
    data, indices = np.asarray(m.data), np.asarray(m.indices)
    nb = m.n_batch
    batch = m.shape[:nb]
    data = np.broadcast_to(data, (*batch, *data.shape[nb:]))
    indices = np.broadcast_to(indices, (*batch, *indices.shape[nb:]))
    out = np.zeros(m.shape, data.dtype)
    sparse_shape = np.array(m.shape[nb : nb + m.n_sparse])
    for b in np.ndindex(*batch):
        for k in range(m.nse):
            idx = indices[b][k]
            if (idx < sparse_shape).all():  # padding is out of bounds
                out[(*b, *idx)] += data[b][k]
    return out


def same_sparse(x, j, exact=False):
    """Same type name, shape, nse, layout and dense value; with ``exact`` the same buffers."""
    assert type(x).__name__ == type(j).__name__
    assert (x.shape, x.nse, x.n_batch, x.n_dense) == (j.shape, j.nse, j.n_batch, j.n_dense)
    close(x.todense(), densify(j))
    if exact:
        close(x.data, j.data)
        close(x.indices, j.indices)


def both(mat, **kw):
    return xsparse.BCOO.fromdense(mat, **kw), jsparse.BCOO.fromdense(mat, **kw)


# ----------------------------------------------------------------------------- layout


@pytest.mark.parametrize("layout", LAYOUTS)
def test_fromdense_todense(layout):
    mat = AB if layout["n_batch"] else A
    for nse in (None, 7):
        x, j = both(mat, nse=nse, **layout)
        same_sparse(x, j, exact=True)
        assert (x.dtype, x.ndim, x.n_sparse) == (j.dtype, j.ndim, j.n_sparse)
        assert x.indices.dtype == j.indices.dtype
        assert repr(x) == repr(j)
        close(xsparse.bcoo_todense(x), densify(j))
        close(xsparse.todense(x), densify(j))
    close(jsparse.bcoo_todense(j), densify(j))  # the oracle's own todense, once
    close(xsparse.BCOO.fromdense(mat, **layout).todense(), mat)


def test_pytree():
    x, j = both(A)
    xl, xt = x.tree_flatten()
    jl, jt = j.tree_flatten()
    assert xt == jt
    for a, b in zip(xl, jl, strict=True):
        close(a, b)
    leaves, tree = xform.tree_util.tree_flatten(x)
    assert len(leaves) == 2
    same_sparse(xform.tree_util.tree_unflatten(tree, leaves), j)
    assert xform.tree_util.tree_map(lambda a: a * 2, x).todense()[0, 0] == 2 * x.todense()[0, 0]


def test_bcsr():
    for kw in (dict(), dict(nse=9)):
        x, j = xsparse.BCSR.fromdense(A, **kw), jsparse.BCSR.fromdense(A, **kw)
        for a, b in zip((x.data, x.indices, x.indptr), (j.data, j.indices, j.indptr), strict=True):
            close(a, b)
        assert repr(x) == repr(j)
        close(x.todense(), j.todense())
        close(xsparse.bcsr_todense(x), jsparse.bcsr_todense(j))
        close(x @ V4, j @ V4)
        same_sparse(x.to_bcoo(), j.to_bcoo())
        close(
            xsparse.bcsr_extract(j.indices, j.indptr, 2 * A),
            jsparse.bcsr_extract(j.indices, j.indptr, 2 * A),
        )
    xb, jb = (m.fromdense(AB, n_batch=1) for m in (xsparse.BCSR, jsparse.BCSR))
    close(xb.todense(), jb.todense())
    close(
        xsparse.bcsr_dot_general(xb, BB, dimension_numbers=(([2], [1]), ([0], [0]))),
        jsparse.bcsr_dot_general(jb, BB, dimension_numbers=(([2], [1]), ([0], [0]))),
    )
    assert xform.tree_util.tree_structure(xb) is not None
    close(xform.jit(lambda m: m.todense())(xb), jb.todense())
    for d in (0, 1, 2):
        close(
            xsparse.bcsr_concatenate([xb, xb], dimension=d).todense(), np.concatenate([AB, AB], d)
        )
    out = xsparse.bcsr_broadcast_in_dim(x, shape=(2, 3, 4), broadcast_dimensions=(1, 2))
    assert (out.shape, out.n_batch, out.nse) == ((2, 3, 4), 1, x.nse)
    close(out.todense(), np.broadcast_to(A, (2, 3, 4)))


def test_sum_duplicates():
    data = np.array([1.0, 2.0, 3.0, 4.0, 0.0], np.float32)
    indices = np.array([[0, 1], [2, 0], [0, 1], [1, 3], [3, 4]], np.int32)  # last: padding
    x = xsparse.BCOO((data, indices), shape=(3, 4))
    j = jsparse.BCOO((data, indices), shape=(3, 4))
    same_sparse(x.sum_duplicates(), j.sum_duplicates(), exact=True)
    fx = xform.jit(lambda m: xsparse.bcoo_sum_duplicates(m, nse=4))
    same_sparse(fx(x), xsparse.bcoo_sum_duplicates(x, nse=4), exact=True)
    two_eight = jax.jit(lambda m: (m.sum_duplicates(nse=2), m.sum_duplicates(nse=8)))(j)
    for nse, oj in zip((2, 8), two_eight, strict=True):
        same_sparse(x.sum_duplicates(nse=nse), oj, exact=True)
    xb = xsparse.BCOO(
        (np.stack([data, 2 * data]), np.stack([indices, indices[::-1]])), shape=(2, 3, 4)
    )
    jb = jsparse.BCOO(
        (np.stack([data, 2 * data]), np.stack([indices, indices[::-1]])), shape=(2, 3, 4)
    )
    same_sparse(xb.sum_duplicates(), jb.sum_duplicates(), exact=True)


def test_transpose_reshape_sum():
    x, j = both(A)
    same_sparse(x.T, j.T, exact=True)
    same_sparse(x.transpose((1, 0)), j.transpose((1, 0)), exact=True)
    same_sparse(x.reshape(2, 6), j.reshape(2, 6))
    same_sparse(x.reshape(12), j.reshape((12,)))
    same_sparse(
        xsparse.bcoo_reshape(x, new_sizes=(4, 3)), jsparse.bcoo_reshape(j, new_sizes=(4, 3))
    )
    close(x.sum(), j.sum())
    for axes in ((0,), (1,), (0, 1)):
        same_sparse(xsparse.bcoo_reduce_sum(x, axes=axes), jsparse.bcoo_reduce_sum(j, axes=axes))
    same_sparse(x.sum(1), j.sum(1))
    same_sparse(x.sum(0, keepdims=True), j.sum(0, keepdims=True))
    xb, jb = both(AB, n_batch=1)
    same_sparse(xb.transpose((0, 2, 1)), jb.transpose((0, 2, 1)))
    xb, jb = both(AB, n_batch=1, n_dense=1)
    for axes in ((0,), (1,), (2,), (0, 2)):
        same_sparse(xsparse.bcoo_reduce_sum(xb, axes=axes), jsparse.bcoo_reduce_sum(jb, axes=axes))
    with pytest.raises(ValueError, match="cannot mix sparse and dense"):
        xb.reshape(2, 12)
    xb, jb = both(AB, n_batch=1)
    same_sparse(xb.reshape(2, 12), jb.reshape(2, 12))
    with pytest.raises(ValueError, match="cannot mix batch and sparse"):
        xb.reshape(3, 8)
    with pytest.raises(NotImplementedError):
        xb.transpose((1, 0, 2))


def _structural_ops(sp, m, shuffled):
    """The structural functions of module ``sp`` on ``m``; with ``exact``, whether the buffers
    must agree too."""
    return (
        (True, sp.bcoo_sort_indices(type(m)(shuffled, shape=m.shape))),
        (True, sp.bcoo_rev(m, (0, 1))),
        (True, sp.bcoo_slice(m, start_indices=(0, 1), limit_indices=(3, 4), strides=(2, 1))),
        (True, sp.bcoo_slice(m, start_indices=(0, 0), limit_indices=(1, 2))),  # compacted
        (False, sp.bcoo_concatenate([m, m], dimension=0)),
        (False, sp.bcoo_concatenate([m, m], dimension=1)),
        (False, sp.bcoo_broadcast_in_dim(m, shape=(2, 3, 4), broadcast_dimensions=(1, 2))),
        (False, m[1]),
        (False, m[:, -1]),
        (False, m[None, 1:3]),
        (False, m[..., ::2]),
        (True, sp.bcoo_dynamic_slice(m, (2, 1), (2, 2))),  # start clamped to (1, 1)
    )


def test_structural():
    x, j = both(A, nse=7)
    shuffled = (np.asarray(x.data)[::-1], np.asarray(x.indices)[::-1])
    # JAX's side under one jit: one compilation instead of one per operation
    outs_j = jax.jit(lambda m, s: _structural_ops(jsparse, m, s))(j, shuffled)
    for (exact, ox), (_, oj) in zip(_structural_ops(xsparse, x, shuffled), outs_j, strict=True):
        same_sparse(ox, oj, exact=exact)
    with pytest.raises(IndexError, match="out of bounds"):
        x[3]
    with pytest.raises(NotImplementedError, match="Concatenation along dense dimensions"):
        xd = xsparse.BCOO.fromdense(A, n_dense=1)
        xsparse.bcoo_concatenate([xd, xd], dimension=1)
    with pytest.raises(NotImplementedError, match="lengths != 1"):
        xsparse.bcoo_broadcast_in_dim(x, shape=(3, 2, 4), broadcast_dimensions=(0, 2))


def _loops(lax, jnp):
    def f(m, v):
        a = lax.fori_loop(0, 3, lambda i, v: m @ v / 10, v)
        b = lax.while_loop(lambda v: v.sum() < 100, lambda v: m @ v + 1, v)
        c = lax.cond(v[0] > 0, lambda v: m @ v, lambda v: v, v)
        d, _ = lax.scan(lambda c, _: (m @ c, None), v, None, length=2)  # JAX's: no ys
        return a, b, c, d

    return f


def test_sparsify_control_flow():
    """A sparse matrix closed over by loops and branches stays sparse inside them."""
    x, j = both(A[:, :3])
    v = V3
    fx = xform.jit(xsparse.sparsify(_loops(xform.lax, xjnp)))
    fj = jax.jit(jsparse.sparsify(_loops(jax.lax, jjnp)))
    for ox, oj in zip(fx(x, v), fj(j, v), strict=True):
        close(ox, oj)
    # gradients through the fori_loop and cond, not under jit: xform's grad of a jit holding a
    # while_loop fails even when the loop's output is unused (an engine bug, not sparse's)
    gx = xform.grad(
        lambda v: sum(o.sum() for o in xsparse.sparsify(_loops(xform.lax, xjnp))(x, v)[::2])
    )(v)
    gj = jax.grad(
        lambda v: sum(o.sum() for o in jsparse.sparsify(_loops(jax.lax, jjnp))(j, v)[::2])
    )(v)
    close(gx, gj)
    with pytest.raises(NotImplementedError, match="loop-invariant"):
        xsparse.sparsify(lambda m: xform.lax.fori_loop(0, 2, lambda i, a: a * 2.0, m))(x)


def test_traced_slices_and_sampled_products():
    x, j = both(A, nse=7)
    fx = xform.jit(xsparse.sparsify(lambda m, i: m[i] + 0 * m[i]))
    fj = jax.jit(jsparse.sparsify(lambda m, i: m[i] + 0 * m[i]))
    for i in (0, 2):
        same_sparse(fx(x, i), fj(j, i))
    dn = (([1], [0]), ([], []))  # (3, 2) @ (2, 4): the product has the sparse shape
    close(
        xsparse.bcoo_dot_general_sampled(B23.T, B42.T, x.indices, dimension_numbers=dn),
        jsparse.bcoo_dot_general_sampled(B23.T, B42.T, j.indices, dimension_numbers=dn),
    )


def test_update_layout():
    xb, jb = both(AB, n_batch=1, n_dense=1)
    for n_batch, n_dense in ((0, 0), (0, 1), (2, 0), (1, 0)):
        out = xsparse.bcoo_update_layout(xb, n_batch=n_batch, n_dense=n_dense, on_inefficient=None)
        assert (out.n_batch, out.n_dense) == (n_batch, n_dense)
        close(out.todense(), AB)
        if (n_batch, n_dense) in ((0, 0), (2, 0)):
            same_sparse(
                out,
                jsparse.bcoo_update_layout(
                    jb, n_batch=n_batch, n_dense=n_dense, on_inefficient=None
                ),
            )
    x = xsparse.BCOO.fromdense(A)
    with pytest.raises(xsparse.SparseEfficiencyError, match="increasing n_batch from 0 to 1"):
        x.update_layout(n_batch=1)
    with pytest.warns(xsparse.SparseEfficiencyWarning, match="increasing n_dense from 0 to 1"):
        x.update_layout(n_dense=1, on_inefficient="warn")


# ----------------------------------------------------------------------------- products


@pytest.mark.parametrize("layout", LAYOUTS)
def test_matmul(layout):
    """Against JAX's dense products of the dense matrix (JAX's sparse ones do not contract
    dense dimensions), and against JAX's sparse products where it has them."""
    mat = AB if layout["n_batch"] else A
    x, j = both(mat, **layout)
    dense = jjnp.asarray(mat)

    def dot(lhs, rhs, dn):
        return jax.lax.dot_general(lhs, rhs, dn)

    if layout["n_batch"]:
        rhs = np.swapaxes(BB, 1, 2)[:, :, :3]
        cases = [
            (BB, (([2], [1]), ([0], [0]))),
            (V4, (([2], [0]), ([], []))),
            (rhs, (([1], [2]), ([0], [0]))),  # a sparse dim with the rhs's last
            (BB[:, :, 0], (([0, 2], [0, 1]), ([], []))),
        ]  # the batch dim contracted
    else:
        cases = [
            (V4, (([1], [0]), ([], []))),
            (B42, (([1], [0]), ([], []))),
            (B23, (([0], [1]), ([], []))),
        ]
    for rhs, dn in cases:
        out = xsparse.bcoo_dot_general(x, rhs, dimension_numbers=dn)
        close(out, dot(dense, rhs, dn))
        if not layout["n_dense"]:
            close(out, jsparse.bcoo_dot_general(j, rhs, dimension_numbers=dn))
    rhs, dn = cases[0]  # gradients for data and the dense operand, JAX's through todense

    def loss_x(d, r):
        m = xsparse.BCOO((d, x.indices), shape=x.shape)
        return xjnp.sum(xjnp.sin(xsparse.bcoo_dot_general(m, r, dimension_numbers=dn)))

    def loss_j(d, r):
        m = jsparse.BCOO((d, j.indices), shape=j.shape).todense()
        return jjnp.sum(jjnp.sin(jax.lax.dot_general(m, r, dn)))

    for gx, gj in zip(
        xform.grad(loss_x, (0, 1))(x.data, rhs), jax.grad(loss_j, (0, 1))(j.data, rhs), strict=True
    ):
        close(gx, gj)
    close(x @ V4, dense @ V4)
    if not layout["n_batch"]:
        close(x @ B42, dense @ B42)
        close(xjnp.asarray(V3) @ x, jjnp.asarray(V3) @ dense)
        close(xjnp.asarray(B23) @ x, jjnp.asarray(B23) @ dense)
        dn = (([1], [0]), ([], []))
        out = xsparse.bcoo_dot_general(
            x, B42.astype(np.float16), dimension_numbers=dn, preferred_element_type=np.float32
        )
        close(
            out,
            jax.lax.dot_general(
                dense, B42.astype(np.float16), dn, preferred_element_type=np.float32
            ),
        )


def test_matmul_broadcasting_and_scipy():
    scipy_sparse = pytest.importorskip("scipy.sparse")
    mat = scipy_sparse.random(4, 4, density=0.4, format="csr", random_state=0, dtype=np.float32)
    x, j = xsparse.BCOO.from_scipy_sparse(mat), jsparse.BCOO.from_scipy_sparse(mat)
    same_sparse(x, j, exact=True)
    close(x @ BB[:, :, :1], j @ BB[:, :, :1])  # 2-D sparse against a stack: broadcast
    close(xjnp.asarray(np.swapaxes(BB, 1, 2)) @ x, jjnp.asarray(np.swapaxes(BB, 1, 2)) @ j)
    xb, jb = both(AB, n_batch=1)
    close(xb @ B42, jb @ B42)
    close(xjnp.asarray(B23) @ xb, jjnp.asarray(B23) @ jb)
    xc = xsparse.BCSR.from_scipy_sparse(mat)
    jc = jsparse.BCSR.from_scipy_sparse(mat)
    for a, b in zip(xc.tree_flatten()[0], jc.tree_flatten()[0], strict=True):
        close(a, b)


def test_spdot_and_multiply_sparse():
    x, j = both(A)
    y, k = both(_sparse_dense((3, 4)), nse=5)

    def products(sp, a, b):
        return a @ b.T, sp.bcoo_multiply_sparse(a, b), a * b, a * a

    for ox, oj in zip(
        products(xsparse, x, y), jax.jit(lambda a, b: products(jsparse, a, b))(j, k), strict=True
    ):
        same_sparse(ox, oj)
    # the same under jit and grad, xform against itself (JAX's side is compiled above)
    spdot = xform.jit(lambda a, b: (a @ b.T, a * b))
    for eager, jitted in zip((x @ y.T, x * y), spdot(x, y), strict=True):
        same_sparse(jitted, eager, exact=True)

    def loss(d):
        a = xsparse.BCOO((d, x.indices), shape=x.shape)
        return (a @ y.T).todense().sum() + (a * y).data.sum()

    g = xform.grad(loss)(x.data)
    dense = xjnp.asarray(densify(y))
    want = xsparse.bcoo_extract(x, xjnp.sum(dense, 0)[None, :] + dense).data
    close(g, want)


def test_elementwise():
    x, j = both(A)
    y, k = both(A, nse=8)
    same_sparse(-x, -j, exact=True)
    same_sparse(x * 2.0, j * 2.0, exact=True)
    same_sparse(3 * x, 3 * j, exact=True)
    same_sparse(x * V4, j * V4, exact=True)
    same_sparse(x * A, j * A, exact=True)
    same_sparse(x / 2.0, j / 2.0)
    close(xsparse.bcoo_multiply_dense(x, V4), jsparse.bcoo_multiply_dense(j, V4))
    same_sparse(x + x, j + j)
    same_sparse(x + y, j + k)
    same_sparse(x - y, j - k)
    close(x + A, j + A)
    same_sparse(x.astype(np.int32), j.astype(np.int32))
    with pytest.raises(NotImplementedError, match="Subtraction between sparse and dense"):
        x - A
    with pytest.raises(NotImplementedError, match="output shape is larger"):
        x + 1.0
    with pytest.raises(NotImplementedError):
        x * np.ones((2, 3, 4))


def test_operators_that_stay_sparse_or_refuse():
    x, j = both(A, nse=8)
    same_sparse(abs(x), abs(j), exact=True)
    same_sparse(x**3, j**3, exact=True)
    for xr, jr in zip(x, j, strict=True):  # iteration over the leading dimension
        same_sparse(xr, jr)
    for op in (
        lambda m: m > 0,
        lambda m: m == 1.0,
        lambda m: 1.0 / m,
        lambda m: m**0,
        lambda m: 2.0**m,
        lambda m: m**0.5,
    ):
        with pytest.raises(NotImplementedError):
            op(j)
        with pytest.raises(NotImplementedError):
            op(x)


def test_random_bcoo():
    for kw in (
        dict(n_batch=1, nse=3, dtype=np.float32),  # JAX's default float64 warns
        dict(n_dense=1, unique_indices=False, sorted_indices=True, dtype=np.float16),
    ):
        x = xsparse.random_bcoo(xform.random.key(3), (2, 3, 4), **kw)
        j = jax.jit(lambda k, kw=kw: jsparse.random_bcoo(k, (2, 3, 4), **kw))(jax.random.key(3))
        same_sparse(x, j, exact=True)
        assert x.data.dtype == j.data.dtype and x.indices.dtype == j.indices.dtype
    with pytest.raises(ValueError, match="between 0 and 12"):
        xsparse.random_bcoo(xform.random.key(0), (3, 4), nse=13)


def test_extract_squeeze_eye_empty():
    x, j = both(A)
    other = B23.T @ B42.T
    same_sparse(xsparse.bcoo_extract(x, other), jsparse.bcoo_extract(j, other))
    x1, j1 = both(A[:1])
    same_sparse(
        xsparse.bcoo_squeeze(x1, dimensions=(0,)), jsparse.bcoo_squeeze(j1, dimensions=(0,))
    )
    for args in ((3,), (3, 4, 1), (4, 3, -2)):
        same_sparse(xsparse.eye(*args), jsparse.eye(*args), exact=True)
    same_sparse(xsparse.empty((2, 3)), jsparse.empty((2, 3)))
    close(xsparse.eye(3, sparse_format="bcsr").todense(), jsparse.eye(3).todense())


# ----------------------------------------------------------------------------- sparsify


def _prog_x(m, v, w):
    return (
        (m @ v).sum()
        + xjnp.sum(m * 2.0 - m, axis=1) @ w[:3]
        + (m.T @ w[:3]).sum()
        + xjnp.sum(xjnp.sin(m * m))
        + xform.jit(lambda a: (-a).T @ w[:3])(m).sum()
    )


def _prog_j(m, v, w):
    return (
        (m @ v).sum()
        + jjnp.sum(m * 2.0 - m, axis=1) @ w[:3]
        + (m.T @ w[:3]).sum()
        + jjnp.sum(jjnp.sin(m * m))
        + jax.jit(lambda a: (-a).T @ w[:3])(m).sum()
    )


SP_X = xform.jit(xsparse.sparsify(_prog_x))
SP_J = jax.jit(jsparse.sparsify(_prog_j))
W = RNG.standard_normal(4).astype(np.float32)


def test_sparsify_values_jit_grad():
    x, j = both(A)
    close(SP_X(x, V4, W), SP_J(j, V4, W))
    close(xsparse.sparsify(_prog_x)(x, V4, W), SP_X(x, V4, W))  # eager against jit
    vx, (gx, gv, gw) = xsparse.value_and_grad(SP_X, argnums=(0, 1, 2))(x, V4, W)
    vj, (gj, hv, hw) = jsparse.value_and_grad(SP_J, argnums=(0, 1, 2))(j, V4, W)
    close(vx, vj)
    same_sparse(gx, gj, exact=True)
    close(gv, hv)
    close(gw, hw)
    same_sparse(xsparse.grad(SP_X)(x, V4, W), gj, exact=True)
    close(xform.grad(SP_X, argnums=2)(x, V4, W), hw)


def test_sparsify_outputs():
    def f(a, b):
        return (
            a + a,
            a * a,
            a - b,
            a * b,
            -a,
            a.T,
            a * 2.0,
            a.sum(0),
            a.reshape(12),
            a[None],
            a[1:3],
            a[0],
            a[::-1],
        )

    x, j = both(A)
    fx = xsparse.sparsify(lambda a, b: (*f(a, b), xjnp.concatenate([a, b], 1)))
    fj = jax.jit(jsparse.sparsify(lambda a, b: (*f(a, b), jjnp.concatenate([a, b], 1))))
    for ox, oj in zip(fx(x, x), fj(j, j), strict=True):
        same_sparse(ox, oj)
    close(
        xsparse.sparsify(lambda a: xsparse.todense(a.T) + 1.0)(x),
        jsparse.sparsify(lambda a: jsparse.todense(a.T) + 1.0)(j),
    )

    def square_of_t(a):  # one sparse value used twice: the data multiply, nse unchanged
        t = a.T
        return t * t

    same_sparse(xsparse.sparsify(square_of_t)(x), jsparse.sparsify(square_of_t)(j))

    def h(d):  # sparsify under grad, the BCOO built from traced data
        m = xsparse.BCOO((d, x.indices), shape=x.shape)
        return xsparse.sparsify(lambda a: xjnp.sum(xjnp.sin(a) @ V4))(m)

    def hj(d):
        m = jsparse.BCOO((d, j.indices), shape=j.shape)
        return jsparse.sparsify(lambda a: jjnp.sum(jjnp.sin(a) @ V4))(m)

    close(xform.grad(h)(x.data), jax.grad(hj)(j.data))
    with pytest.raises(NotImplementedError, match="sparse rule for exp"):
        xsparse.sparsify(xjnp.exp)(x)
    with pytest.raises(NotImplementedError, match="sparse rule for cumsum"):
        xsparse.sparsify(xjnp.cumsum)(x)


def test_sparse_jacobians():
    x, j = both(A)

    def fx(m, v):
        return xjnp.sin(m @ v)

    def fj(m, v):
        return jjnp.sin(m @ v)

    for name in ("jacfwd", "jacrev"):
        (mx, vx), aux_x = getattr(xsparse, name)(
            lambda m, v: (fx(m, v), 1.0), argnums=(0, 1), has_aux=True
        )(x, V4)
        (mj, vj), aux_j = getattr(jsparse, name)(
            lambda m, v: (fj(m, v), 1.0), argnums=(0, 1), has_aux=True
        )(j, V4)
        same_sparse(mx, mj, exact=True)
        close(vx, vj)
        assert aux_x == aux_j
    assert xsparse.jacobian is xsparse.jacrev


def test_grad_through_data_and_dense():
    x, j = both(A, nse=7)

    def fx(data, v):
        m = xsparse.BCOO((data, x.indices), shape=x.shape)
        return xjnp.sum(xjnp.tanh(m @ v)) + (v @ m.T).sum() + m.todense()[1].sum()

    def fj(data, v):
        m = jsparse.BCOO((data, j.indices), shape=j.shape)
        return jjnp.sum(jjnp.tanh(m @ v)) + (v @ m.T).sum() + m.todense()[1].sum()

    gx = xform.jit(xform.grad(fx, argnums=(0, 1)))(x.data, V4)
    gj = jax.jit(jax.grad(fj, argnums=(0, 1)))(j.data, V4)
    for a, b in zip(gx, gj, strict=True):
        close(a, b)
    # second order, and grad of a jitted grad
    close(xform.hessian(fx)(x.data, V4), jax.jit(jax.hessian(fj))(j.data, V4))
    close(
        xform.grad(lambda d, v: xform.jit(xform.grad(fx, 1))(d, v).sum())(x.data, V4),
        jax.grad(lambda d, v: jax.jit(jax.grad(fj, 1))(d, v).sum())(j.data, V4),
    )
    close(
        xform.grad(
            lambda m: (
                xsparse.BCOO.fromdense(m, nse=7).data.sum()
                + (xsparse.BCOO.fromdense(m, nse=7) @ V4).sum()
            )
        )(A),
        jax.grad(
            lambda m: (
                jsparse.BCOO.fromdense(m, nse=7).data.sum()
                + (jsparse.BCOO.fromdense(m, nse=7) @ V4).sum()
            )
        )(A),
    )


def test_vmap():
    x, j = both(AB, n_batch=1)
    close(xform.vmap(lambda m: m.todense())(x), jax.vmap(lambda m: m.todense())(j))
    close(xform.vmap(lambda m, b: m @ b)(x, BB), jax.vmap(lambda m, b: m @ b)(j, BB))
    same_sparse(xform.vmap(lambda m: -m)(x), jax.vmap(lambda m: -m)(j))
    y, k = both(A)
    close(xform.vmap(lambda v: y @ v)(B42.T), jax.vmap(lambda v: k @ v)(B42.T))
    close(
        xform.vmap(lambda d: xsparse.BCOO((d, y.indices), shape=y.shape) @ V4)(
            np.stack([y.data, 2 * y.data])
        ),
        jax.vmap(lambda d: jsparse.BCOO((d, k.indices), shape=k.shape) @ V4)(
            np.stack([k.data, 2 * k.data])
        ),
    )
    with pytest.raises(ValueError, match="n_batch=0"):
        xform.vmap(lambda m: m.todense())(y)
    mats = xform.vmap(lambda m: xsparse.BCOO.fromdense(m, nse=6))(AB)
    jmats = jax.vmap(lambda m: jsparse.BCOO.fromdense(m, nse=6))(AB)
    same_sparse(mats, jmats, exact=True)


# ----------------------------------------------------------------------------- errors


def test_errors():
    x, j = both(A)
    with pytest.raises(TypeError, match="contracting dimensions to have the same shape"):
        x @ V3
    with pytest.raises(TypeError, match="contracting dimensions to have the same shape"):
        xjnp.asarray(V4) @ x
    with pytest.raises(ConcretizationTypeError, match="nse"):
        xform.jit(lambda m: xsparse.BCOO.fromdense(m).data)(A)
    with pytest.raises(ValueError):
        xsparse.BCOO((x.data[:2], x.indices), shape=x.shape)
    with pytest.raises(NotImplementedError, match="Division by a sparse array"):
        x / x
    # the errors JAX's functions give for the same mistakes (where JAX has a message)
    xt = xsparse.BCOO.fromdense(A.T)
    for op, name in (
        (lambda a, b: a + b, "add"),
        (lambda a, b: a * b, "mul"),
        (lambda a, b: a - b, "sub"),
    ):
        with pytest.raises(
            TypeError,
            match=rf"{name} got incompatible shapes for broadcasting: "
            r"\(3, 4\), \(4, 3\)",
        ):
            op(x, xt)
    with pytest.raises(TypeError, match=r"cannot reshape array of shape \(3, 4\) \(size 12\)"):
        x.reshape(5, 2)
    with pytest.raises(TypeError, match="isn't a permutation of operand dimensions"):
        xsparse.bcoo_transpose(x, permutation=(0, 0))
    with pytest.raises(ValueError, match=r"Incompatible shapes for broadcasting"):
        xsparse.bcoo_multiply_dense(x, V3)
    with pytest.raises(ValueError, match="axis 2 is out of bounds"):
        xsparse.bcoo_reduce_sum(x, axes=(2,))
    with pytest.raises(ValueError, match=r"shape mismatch: sparr.shape=\(3, 4\)"):
        xsparse.bcoo_extract(x, A.T)
    with pytest.raises(ValueError, match="cannot be larger than mat.ndim=2"):
        xsparse.bcoo_update_layout(x, n_batch=2, n_dense=1)
    with pytest.raises(ValueError, match="must have 2 sparse dimensions"):
        xsparse.BCSR.fromdense(AB)
    with pytest.raises(NotImplementedError, match="batch dimensions"):
        xsparse.bcoo_dot_general(x, A, dimension_numbers=(([1], [1]), ([0], [0])))


# ----------------------------------------------------------------------------- coverage

# JAX's public names that xform.experimental.sparse does not have, and why.
EXEMPT = {
    "COO": "legacy unbatched COO format; BCOO covers it",
    "CSC": "legacy CSC format; BCSR covers row-compressed arrays",
    "CSR": "legacy CSR format; BCSR covers it",
    "coo": "module of the legacy COO format",
    "csr": "module of the legacy CSR format",
    **{
        n: "legacy COO/CSR function"
        for n in (
            "coo_fromdense",
            "coo_matmat",
            "coo_matvec",
            "coo_todense",
            "csr_fromdense",
            "csr_matmat",
            "csr_matvec",
            "csr_todense",
        )
    },
    **{
        n: "the primitive objects: xform's sparse ops are compositions, not primitives"
        for n in (
            "bcoo_dot_general_p",
            "bcoo_dot_general_sampled_p",
            "bcoo_extract_p",
            "bcoo_fromdense_p",
            "bcoo_sort_indices_p",
            "bcoo_spdot_general_p",
            "bcoo_sum_duplicates_p",
            "bcoo_todense_p",
            "bcoo_transpose_p",
            "bcsr_dot_general_p",
            "bcsr_extract_p",
            "bcsr_fromdense_p",
            "bcsr_todense_p",
            "coo_fromdense_p",
            "coo_matmat_p",
            "coo_matvec_p",
            "coo_todense_p",
            "csr_fromdense_p",
            "csr_matmat_p",
            "csr_matvec_p",
            "csr_todense_p",
            "todense_p",
        )
    },
    "SparseTracer": "sparsify evaluates a jaxpr instead of a tracer (use_tracer is ignored)",
    "ad": "JAX's module of sparse autodiff: xform's grad and jacobians live in transform",
    "util": "module of JAX's internals",
    "linalg": "sparse solvers (spsolve, lobpcg) not implemented",
    "bcoo_conv_general_dilated": "not implemented",
    "bcoo_gather": "not implemented: basic indexing (ints, slices) is, array indices are not",
}


def test_public_names_covered():
    names = {n for n in dir(jsparse) if not n.startswith("_")}
    missing = sorted(n for n in names if not hasattr(xsparse, n) and n not in EXEMPT)
    assert not missing, f"jax.experimental.sparse names neither in xform nor exempt: {missing}"
    stale = sorted(n for n in EXEMPT if hasattr(xsparse, n) or n not in names)
    assert not stale, f"exemptions for names xform has or JAX lacks: {stale}"
