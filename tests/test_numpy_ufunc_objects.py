"""ufunc objects and their methods, frompyfunc, vectorize, isinstance for tracers, and the
jnp fixes (fmax/fmin broadcasting, var/std mean=, dsplit, packbits/unpackbits, scalar types),
against jax.numpy."""

import operator

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import xform
import xform.numpy as xnp
from tests.harness import assert_same

X = np.arange(1, 13, dtype=np.float32).reshape(3, 4) / 4
XI = np.arange(1, 13, dtype=np.int32).reshape(3, 4)
IDX = np.array([0, 2, 0])
_add = operator.add

# --------------------------------------------------------------------------- ufunc objects


def test_ufunc_names_and_attributes_match_jax():
    names = [n for n in dir(jnp) if isinstance(getattr(jnp, n), jnp.ufunc)]
    for name in names:
        x, j = getattr(xnp, name), getattr(jnp, name)
        assert isinstance(x, xnp.ufunc), name
        got = (x.__name__, x.nin, x.nout, x.nargs, x.identity)
        assert got == (j.__name__, j.nin, j.nout, j.nargs, j.identity), name
    assert not isinstance(xnp.sin, xnp.ufunc)


def test_plain_call_jaxpr_unchanged():
    jaxpr = str(xform.make_jaxpr(xnp.add)(X, X))
    assert jaxpr.count("add") == 1 and "pjit" not in jaxpr and "jit" not in jaxpr
    assert_same(xnp.add(1.0, 2), jnp.add(1.0, 2))


@pytest.mark.parametrize("name, a", [("add", X), ("maximum", X), ("logical_and", XI % 3 > 0)])
def test_methods_match_jax(name, a):
    x, j = getattr(xnp, name), getattr(jnp, name)
    cases = [
        ("reduce", (a,), {"axis": None, "keepdims": True}),
        ("accumulate", (a,), {"axis": 1}),
        ("outer", (a[0], a[1]), {}),
        ("reduceat", (a, np.array([0, 2])), {"axis": 1}),
        ("at", (a, IDX, a[0, :1]), {"inplace": False}),
    ]
    if x.identity is not None:
        cases.append(("reduce", (a,), {"axis": 1, "where": XI % 2 == 0}))
    for method, args, kwargs in cases:
        assert_same(
            getattr(x, method)(*args, **kwargs),
            getattr(j, method)(*args, **kwargs),
            what=f"{name}.{method}{kwargs}",
        )


def test_methods_under_jit_and_grad():
    def f(m, a):
        return (
            m.multiply.reduce(a, axis=1).sum()
            + m.maximum.accumulate(a).sum()
            + m.add.at(a, IDX, 2 * a[0], inplace=False).sum()
            + m.add.outer(a, a).sum()
            + m.logaddexp.reduce(a, axis=1, where=a > 1, initial=0.5).sum()
        )

    assert_same(
        xform.jit(xform.value_and_grad(lambda a: f(xnp, a)))(X),
        jax.jit(jax.value_and_grad(lambda a: f(jnp, a)))(X),
    )


def test_frompyfunc():
    x, j = (m.frompyfunc(_add, 2, 1, identity=0) for m in (xnp, jnp))
    assert isinstance(x, xnp.ufunc) and (x.nin, x.nout, x.identity) == (2, 1, 0)
    assert_same(x(X, 1.0), j(X, 1.0))
    for method, args in [("reduce", (X,)), ("reduceat", (XI[0], np.array([0, 3])))]:
        assert_same(getattr(x, method)(*args), getattr(j, method)(*args), what=method)
    assert_same(x.at(XI, (1, 2), 5, inplace=False), j.at(XI, (1, 2), 5, inplace=False))
    assert_same(xform.vmap(x.accumulate)(X), jax.vmap(j.accumulate)(X))
    assert_same(
        xform.grad(lambda a: x.reduce(a * a, axis=None))(X),
        jax.grad(lambda a: j.reduce(a * a, axis=None))(X),
    )


def test_ufunc_bad_inputs():
    with pytest.raises(NotImplementedError, match="inplace"):
        xnp.add.at(X, 0, 1.0)
    with pytest.raises(NotImplementedError, match="out"):
        xnp.add(X, X, out=X)
    with pytest.raises(TypeError, match="add requires ndarray or scalar arguments"):
        xnp.frompyfunc(_add, 2, 1)([1, 2], 3)
    with pytest.raises(ValueError, match="negative.reduce.*binary"):
        xnp.negative.reduce(X)
    with pytest.raises(ValueError, match="does not have an identity"):
        xnp.maximum.reduce(X, where=X > 1)
    with pytest.raises(ValueError, match="where argument must have dtype=bool"):
        xnp.add.reduce(X, where=XI)
    with pytest.raises(ValueError, match="integer argument required"):
        xnp.bitwise_and.reduce(X)
    with pytest.raises(ValueError, match="zero-size array to reduction operation"):
        xnp.frompyfunc(_add, 2, 1).reduce(np.zeros((0, 2)))


# --------------------------------------------------------------------------- vectorize


def _xj(fn):
    return fn(xnp), fn(jnp)


def test_vectorize_elementwise_and_excluded():
    xf, jf = _xj(lambda m: m.vectorize(lambda a, b: m.where(a > b, a - b, b * 2)))
    a, b = X[:, None, :1], X[0]
    assert_same(xf(a, b), jf(a, b))
    xg, jg = _xj(lambda m: m.vectorize(lambda a, n, *, scale: a * n + scale, excluded={1, "scale"}))
    assert_same(xg(X, 3, scale=2.0), jg(X, 3, scale=2.0))


def test_vectorize_signature_jit_and_grad():
    xf, jf = _xj(lambda m: m.vectorize(lambda a, b: (a * b).sum(), signature="(n),(n)->()"))
    assert_same(xf(X, X[0]), jf(X, X[0]))
    assert_same(xform.grad(lambda a: xf(a, X).sum())(X), jax.grad(lambda a: jf(a, X).sum())(X))
    xt, jt = _xj(lambda m: m.vectorize(lambda a: (a.sum(), a * 2), signature="(n)->(),(n)"))
    assert_same(xt(X), jt(X))


def test_vectorize_bad_inputs():
    f = xnp.vectorize(lambda a, b: a @ b, signature="(n),(n)->()")
    with pytest.raises(ValueError, match="inconsistent size for core dimension 'n'"):
        f(X, X[0, :3])
    with pytest.raises(ValueError, match="does not have enough dimensions"):
        f(X, 1.0)
    with pytest.raises(ValueError, match="not a valid gufunc signature"):
        xnp.vectorize(lambda a: a, signature="(n->()")(X)
    with pytest.raises(ValueError, match="output shape .* does not match core dimensions"):
        xnp.vectorize(lambda a: a, signature="(n)->()")(X)
    with pytest.raises(TypeError, match="can only exclude integer or string"):
        xnp.vectorize(lambda a: a, excluded={1.5})


# --------------------------------------------------------------------------- isinstance


def test_isinstance_tracers():
    seen = []

    def f(x):
        seen.append(isinstance(x, xnp.ndarray) and isinstance(x, xform.Array))
        return x * 2

    xform.jit(f)(1.0)
    xform.vmap(f)(xnp.ones(3))
    xform.grad(f)(1.0)
    xform.jvp(f, (1.0,), (1.0,))
    xform.lax.scan(lambda c, x: (f(c), f(x)), 1.0, xnp.ones(3))
    xform.pmap(f)(xnp.ones((1, 2)))
    assert len(seen) == 7 and all(seen)
    assert isinstance(xnp.ones(2), xform.Array)
    assert not isinstance(1.0, xform.Array) and not isinstance(np.ones(2), xnp.ndarray)
    assert not isinstance(xnp.ones(2), xform.ShardedArray)


# --------------------------------------------------------------------------- jnp fixes


def test_fmax_fmin_broadcast():
    b = np.array([1.0, np.nan, 3.0, 0.5], np.float32)
    for name in ("fmax", "fmin"):
        assert_same(getattr(xnp, name)(X, b), getattr(jnp, name)(X, b), what=name)
    with pytest.raises(ValueError, match="fmax: Incompatible shapes"):
        xnp.fmax(X, b[:3])


def test_var_std_mean_argument():
    m = X.mean(1, keepdims=True) + 0.5
    for name in ("var", "std"):
        assert_same(getattr(xnp, name)(X, 1, mean=m), getattr(jnp, name)(X, 1, mean=m))
        assert_same(
            getattr(xnp, name)(X, 1, ddof=1, keepdims=True, mean=m),
            getattr(jnp, name)(X, 1, ddof=1, keepdims=True, mean=m),
        )
    assert_same(
        xform.grad(lambda a: xnp.var(a, mean=2.0))(X), jax.grad(lambda a: jnp.var(a, mean=2.0))(X)
    )


def test_dsplit():
    a = np.arange(24).reshape(2, 3, 4)
    assert_same(xnp.dsplit(a, 2), jnp.dsplit(a, 2))
    assert_same(xnp.dsplit(a, [1, 3]), jnp.dsplit(a, [1, 3]))
    with pytest.raises(ValueError, match="equal division"):
        xnp.dsplit(a, 3)


def test_packbits_unpackbits():
    bits = np.arange(30).reshape(3, 10) % 3 == 0
    for kwargs, count in (({}, None), ({"axis": 1}, -2), ({"axis": 0, "bitorder": "little"}, 20)):
        packed = xnp.packbits(bits, **kwargs)
        assert_same(packed, jnp.packbits(bits, **kwargs))
        assert_same(
            xnp.unpackbits(packed, count=count, **kwargs),
            jnp.unpackbits(np.asarray(packed), count=count, **kwargs),
        )
    with pytest.raises(TypeError, match="packbits: expected an input array of integer"):
        xnp.packbits(X)
    with pytest.raises(TypeError, match="unpackbits: expected an input array of unsigned"):
        xnp.unpackbits(XI)
    with pytest.raises(ValueError, match="'order' must be either 'little' or 'big'"):
        xnp.packbits(XI, bitorder="middle")


def test_scalar_types_and_misc_names():
    assert xnp.bool is xnp.bool_ and xnp.bool(1).dtype == jnp.bool(1).dtype
    for name in ("object_", "character", "flexible", "ComplexWarning"):
        assert getattr(xnp, name) is getattr(jnp, name), name
    assert xnp.iterable([1]) and not xnp.iterable(1.0)
