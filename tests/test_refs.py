"""Mutable array references (``xform.new_ref`` and ``xform.ref``) against JAX 0.10.2:
eagerly, under jit (mutation seen by the caller), grad, vmap, printed jaxprs and errors."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import xform
import xform.numpy as xnp


def _refs(init):
    return xform.new_ref(xnp.asarray(init)), jax.new_ref(jnp.asarray(init))


def _same(a, b):
    np.testing.assert_allclose(np.asarray(a[...]), np.asarray(b[...]), rtol=1e-6)
    assert a[...].dtype == b[...].dtype


def test_names_and_types():
    for name in ("Ref", "new_ref", "empty_ref", "free_ref", "freeze", "ref"):
        assert hasattr(xform, name)
    assert set(jax.ref.__all__) <= set(dir(xform.ref))
    r, jr = _refs(np.zeros(3, np.float32))
    assert isinstance(r, xform.Ref) and not isinstance(r, xform.Array)
    assert not isinstance(xnp.ones(3), xform.Ref)
    assert (r.shape, r.dtype, r.ndim, len(r)) == (jr.shape, jr.dtype, jr.ndim, len(jr))
    assert str(xform.typeof(r)) == str(jax.typeof(jr))
    assert repr(r) == repr(jr)
    assert repr(xform.new_ref(0.0)) == repr(jax.new_ref(0.0))


def test_eager_reads_and_writes():
    init = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    r, jr = _refs(init)
    for ref, np_ in ((r, xnp), (jr, jnp)):
        row = ref[0]
        ref[1] = row
        ref[2, 3] = ref[1, 2]
        ref[0, :3] = ref[:, 1]
        ref[np_.array([1, 2, 1]), np_.array([0, 0, 1])] = ref[
            np_.array([0, 0, 1]), np_.array([1, 2, 3])
        ]
        ref[...] += 1.0
        ref[..., 0] = np_.zeros(3)
    _same(r, jr)
    for idx in (np.index_exp[1], np.index_exp[1:4], np.index_exp[:, 1], np.index_exp[::2]):
        np.testing.assert_array_equal(np.asarray(r[idx]), np.asarray(jr[idx]))
    assert isinstance(r[...], xform.Array)


def test_swap_addupdate_freeze():
    r, jr = _refs(np.ones(3, np.float32))
    old = xform.ref.swap(r, 1, 5.0)
    jold = jax.ref.swap(jr, 1, 5.0)
    assert float(old) == float(jold)
    xform.ref.addupdate(r, ..., xnp.ones(3))
    jax.ref.addupdate(jr, ..., jnp.ones(3))
    xform.ref.set(r, 0, 7.0)
    jax.ref.set(jr, 0, 7.0)
    _same(r, jr)
    np.testing.assert_array_equal(xform.freeze(r), jax.freeze(jr))


def test_bad_writes_raise_as_jax():
    r, jr = _refs(np.zeros(3, np.int32))
    for ref in (r, jr):
        with pytest.raises(ValueError, match=r"Invalid shape for `swap`. Ref shape: \(3,\)"):
            ref[...] = np.ones(2, np.int32)
        with pytest.raises(ValueError, match="Invalid dtype for `swap`. Ref dtype: int32"):
            ref[...] = np.ones(3, np.float32)
        with pytest.raises(ValueError):
            ref[...] += 1.0  # an int reference takes no floats (JAX's regression test)
    b, jb = _refs(np.zeros((), jnp.bfloat16))
    b[...] += 1.0
    jb[...] += 1.0
    _same(b, jb)
    with pytest.raises(TypeError):
        r + 1  # no arithmetic on references: read them first


def _printed(fun, *args):
    return str(xform.make_jaxpr(fun)(*args[0])), str(jax.make_jaxpr(fun)(*args[1]))


def test_printed_jaxprs():
    r, jr = _refs(np.zeros(3, np.float32))

    def f(ref, y):
        ref[...] += y
        ref[1] = 2.0
        a = ref[0]
        return a + ref[:2].sum()

    ours, theirs = _printed(f, (r, 1.0), (jr, 1.0))
    assert ours == theirs

    def g(x, np_, new_ref, freeze):
        ref = new_ref(x)
        ref[...] = ref[...] * 2
        return freeze(ref)

    ours = str(xform.make_jaxpr(lambda x: g(x, xnp, xform.new_ref, xform.freeze))(1.0))
    theirs = str(jax.make_jaxpr(lambda x: g(x, jnp, jax.new_ref, jax.freeze))(1.0))
    assert ours == theirs

    m, jm = _refs(np.arange(12.0, dtype=np.float32).reshape(3, 4))
    ours = str(xform.make_jaxpr(lambda: (m[:, 1], m[1, 2], m[0, :3], m[1:], m[..., 0]))())
    theirs = str(jax.make_jaxpr(lambda: (jm[:, 1], jm[1, 2], jm[0, :3], jm[1:], jm[..., 0]))())
    assert ours == theirs


def test_jit_mutates_arguments_and_closures():
    r, jr = _refs(np.zeros(3, np.float32))

    def bump(ref):
        ref[...] += 1.0
        ref[0] += 1
        ref[1] += 5

    xf, jf = xform.jit(bump), jax.jit(bump)
    for _ in range(2):
        xf(r)
        jf(jr)
    _same(r, jr)

    c, jc = _refs(np.zeros(3, np.float32))
    xg = xform.jit(lambda y: c.__setitem__(1, c[1] + y))
    jg = jax.jit(lambda y: jc.__setitem__(1, jc[1] + y))
    for y in (1.0, 2.0):
        xg(y)
        jg(y)
    _same(c, jc)

    def several(x_ref, y, z_ref):
        x_ref[...] += 1
        z_ref[...] += 1
        return x_ref[...] + y + z_ref[...], y

    a, ja = _refs(np.zeros((1, 3), np.float32))
    b, jb = _refs(np.zeros((2, 3), np.float32))
    out = xform.jit(several)(a, xnp.ones((2, 3)), b)
    jout = jax.jit(several)(ja, jnp.ones((2, 3)), jb)
    np.testing.assert_allclose(out[0], jout[0])
    _same(a, ja)
    _same(b, jb)


def test_jit_internal_refs_and_nesting():
    def pure(x, new_ref):
        ref = new_ref(x)
        ref[...] = ref[...] + ref[...]
        return ref[...]

    assert float(xform.jit(lambda x: pure(x, xform.new_ref))(3.0)) == 6.0
    y = xform.jit(xform.jit(lambda: xform.new_ref(xnp.zeros(8))[...]))()
    np.testing.assert_array_equal(y, np.zeros(8))

    c = xform.new_ref(xnp.zeros(3))

    @xform.jit
    def outer(y_ref, z):
        c[...] += 1.0
        y_ref[2] += 7
        return z + 9

    y_ref = xform.new_ref(np.zeros(3, np.float32))
    assert float(xform.jit(outer)(y_ref, 1)) == 10
    np.testing.assert_array_equal(c[...], [1.0, 1.0, 1.0])
    np.testing.assert_array_equal(y_ref[...], [0.0, 0.0, 7.0])


def test_grad_of_functions_using_refs():
    def f(x, new_ref, freeze, sin, jit):
        ref = new_ref(x)

        @jit
        def g():
            ref[...] = sin(ref[...]) + sin(ref[...])

        g()
        return freeze(ref)

    ours = xform.grad(lambda x: f(x, xform.new_ref, xform.freeze, xnp.sin, xform.jit))(2.0)
    theirs = jax.grad(lambda x: f(x, jax.new_ref, jax.freeze, jnp.sin, jax.jit))(2.0)
    np.testing.assert_allclose(ours, theirs, rtol=1e-6)
    ours = xform.jit(xform.grad(lambda x: f(x, xform.new_ref, xform.freeze, xnp.sin, xform.jit)))
    np.testing.assert_allclose(ours(2.0), theirs, rtol=1e-6)

    def h(x):
        ref = xform.new_ref(x)
        ref[0] = ref[0] * ref[1]
        return ref[...].sum()

    def jh(x):
        ref = jax.new_ref(x)
        ref[0] = ref[0] * ref[1]
        return ref[...].sum()

    x = np.array([2.0, 3.0, 4.0], np.float32)
    np.testing.assert_allclose(xform.grad(h)(x), jax.grad(jh)(x))
    np.testing.assert_allclose(xform.jit(xform.grad(xform.jit(h)))(x), jax.grad(jh)(x))
    primal, tangent = xform.jvp(h, (x,), (np.ones(3, np.float32),))
    jprimal, jtangent = jax.jvp(jh, (x,), (np.ones(3, np.float32),))
    np.testing.assert_allclose([primal, tangent], [jprimal, jtangent])


def test_differentiated_write_to_outer_ref_raises():
    for new_ref, grad, jvp in (
        (xform.new_ref, xform.grad, xform.jvp),
        (jax.new_ref, jax.grad, jax.jvp),
    ):
        ref = new_ref(0.0)

        def f(x, ref=ref):
            ref[...] = x
            return x * 2

        with pytest.raises(Exception, match="Move the array reference to be an argument"):
            grad(f)(1.0)
        with pytest.raises(Exception, match="Move the array reference to be an argument"):
            jvp(f, (1.0,), (1.0,))


def test_vmap():
    def square(x, new_ref):
        ref = new_ref(x)
        ref[...] = ref[...] * ref[...]
        return ref[...]

    xs = np.arange(4.0, dtype=np.float32)
    np.testing.assert_allclose(xform.vmap(lambda x: square(x, xform.new_ref))(xs), xs**2)

    def plus(x, new_ref):
        ref = new_ref(1.0)
        ref[...] += x
        return ref[...]

    ours = xform.vmap(xform.jit(lambda x: plus(x, xform.new_ref)))(xs)
    np.testing.assert_allclose(ours, jax.vmap(jax.jit(lambda x: plus(x, jax.new_ref)))(xs))

    for new_ref, vmap in ((xform.new_ref, xform.vmap), (jax.new_ref, jax.vmap)):
        ref = new_ref(0.0)

        def err(x, ref=ref):
            ref[...] = x

        with pytest.raises(Exception, match="vmapped value on an unbatched array reference"):
            vmap(err)(np.arange(3.0, dtype=np.float32))


@pytest.mark.parametrize("lib", ["xform", "jax"])
def test_jit_errors_as_jax(lib):
    new_ref, jit = (xform.new_ref, xform.jit) if lib == "xform" else (jax.new_ref, jax.jit)
    x_ref = new_ref(0.0)
    with pytest.raises(
        ValueError,
        match=r"traced for jit returned a mutable array reference of type Ref\{float32\[\]\}"
        r".*\n\n.*was passed in as the argument x_ref",
    ):
        jit(lambda x_ref: x_ref)(x_ref)
    with pytest.raises(ValueError, match="appeared at both x_ref and y_ref"):
        jit(lambda x_ref, y_ref: x_ref[...] + y_ref[...])(x_ref, x_ref)
    with pytest.raises(ValueError, match="closed over and passed as the argument y_ref"):
        jit(lambda y_ref: x_ref[...] + y_ref[...])(x_ref)
    with pytest.raises(ValueError, match="traced for jit returned a mutable array reference"):
        jit(lambda: new_ref(1.0))()


def test_empty_and_free_ref():
    for empty_ref, free_ref, sds, jit in (
        (xform.empty_ref, xform.free_ref, xform.ShapeDtypeStruct, xform.jit),
        (jax.empty_ref, jax.free_ref, jax.ShapeDtypeStruct, jax.jit),
    ):

        @jit
        def f(x, empty_ref=empty_ref, free_ref=free_ref, sds=sds):
            ref = empty_ref(sds((), "float32"))
            ref[...] = 2.0 * x
            result = ref[...]
            free_ref(ref)
            return result

        assert float(f(3.0)) == 6.0


def test_array_refs_doc_cells():
    """Cells of JAX's docs/array_refs.md, run with xform as jax: the printed values agree."""
    x_ref = xform.new_ref(xnp.zeros(3))

    @xform.jit
    def f():
        x_ref[1] += 1.0

    assert repr(x_ref) == "Ref([0., 0., 0.], dtype=float32)"
    f()
    f()
    assert repr(x_ref) == "Ref([0., 2., 0.], dtype=float32)"

    def g(x):
        ref = xform.new_ref(0.0)
        ref[...] = xnp.sin(x)
        return ref[...]

    np.testing.assert_allclose(xform.grad(g)(1.0), np.cos(1.0), rtol=1e-6)

    @xform.jit
    def sin_inplace(x_ref):
        x_ref[...] = xnp.sin(x_ref[...])

    r = xform.new_ref(xnp.arange(3.0))
    sin_inplace(r)
    assert repr(r) == repr(jax.new_ref(jnp.sin(jnp.arange(3.0))))
