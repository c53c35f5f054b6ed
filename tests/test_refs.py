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


# --------------------------------------------------------------------------- control flow

LIBS = {"xform": (xform, xnp), "jax": (jax, jnp)}


def _agree(make, *jits):
    """``make(lib, np_, jit)`` run on xform and on JAX (eagerly and under jit): the same
    values, the references' final values included."""
    for jit in jits or (False, True):
        results = [make(lib, np_, jit) for lib, np_ in LIBS.values()]
        ours, theirs = (jax.tree_util.tree_map(np.asarray, r) for r in results)
        assert jax.tree_util.tree_structure(ours) == jax.tree_util.tree_structure(theirs)
        for a, b in zip(*map(jax.tree_util.tree_leaves, (ours, theirs)), strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-6)
            assert a.dtype == b.dtype


def _maybe_jit(lib, jit, f):
    return lib.jit(f) if jit else f


def test_scan_closed_over_internal_and_scanned_refs():
    def closed(lib, np_, jit):
        acc = lib.new_ref(0)

        def body(c, x):
            acc[...] += x
            return c + acc[...], acc[...] * 2

        out = _maybe_jit(lib, jit, lambda xs: lib.lax.scan(body, 0, xs))(np_.arange(5))
        return out, acc[...]

    def internal(lib, np_, jit):
        def body(c, x):
            r = lib.new_ref(x)
            r[...] += c
            return c + 1.0, lib.freeze(r)

        return _maybe_jit(lib, jit, lambda: lib.lax.scan(body, 0.5, np_.arange(4.0)))()

    def scanned(lib, np_, jit):
        rows = lib.new_ref(np_.arange(6.0).reshape(3, 2))
        total = lib.new_ref(0.0)

        def body(c, xs):
            i, row = xs
            total[...] += row[0]
            row[1] = total[...] + i
            return c, row[...]

        def run(rev):
            xs = (np_.arange(3.0), rows)
            return _maybe_jit(lib, jit, lambda: lib.lax.scan(body, 0, xs, reverse=rev))()

        return run(False), run(True), rows[...], total[...]

    for make in (closed, internal, scanned):
        _agree(make)


def test_cond_switch_and_while_with_refs():
    def cond_closed(lib, np_, jit):
        r = lib.new_ref(0.0)

        def f(p):
            def t():
                r[()] = 1.0

            def e():
                r[()] = 2.0  # both branches write one reference: one extra result

            lib.lax.cond(p, t, e)
            return r[...]

        f = _maybe_jit(lib, jit, f)
        return f(True), f(False)

    def cond_operand(lib, np_, jit):
        r = lib.new_ref(np_.arange(3.0))

        def f(p, r):
            return lib.lax.cond(p, lambda r: r.__setitem__(0, 5.0) or r[1], lambda r: r[2], r)

        f = _maybe_jit(lib, jit, f)
        return f(True, r), f(False, r), r[...]

    def switch(lib, np_, jit):
        r = lib.new_ref(np_.zeros(3))

        def branch(k):
            def g(x):
                r[k] = x * k
                return x + k

            return g

        f = _maybe_jit(
            lib, jit, lambda i: lib.lax.switch(i, [branch(0), branch(1), branch(2)], 3.0)
        )
        return f(1), f(7), r[...]

    def while_traced(lib, np_, jit):
        r = lib.new_ref(np_.zeros(3))
        seen = lib.new_ref(0)

        def f(n):
            def body(i):
                r[i % 3] += 1.0
                return i + 1

            def fori_body(i, c):
                seen[...] += i
                return c + r[i % 3]

            i = lib.lax.while_loop(lambda i: i < n, body, 0)
            return i, lib.lax.fori_loop(0, n, fori_body, 0.0)

        return _maybe_jit(lib, jit, f)(np_.int32(5)), r[...], seen[...]

    def nested(lib, np_, jit):
        r = lib.new_ref(np_.zeros(2))

        def outer(c, xs):
            def inner(c2, y):
                r[...] += y
                return lib.lax.cond(c2 > 2, lambda: c2 - 1, lambda: c2 + 2), r[0]

            return lib.lax.scan(inner, c, xs)

        return _maybe_jit(lib, jit, lambda xs: lib.lax.scan(outer, 0, xs))(np_.ones((2, 3))), r[...]

    for make in (cond_closed, cond_operand, switch, while_traced, nested):
        _agree(make)


def test_grad_of_loops_with_refs():
    def undifferentiated_writes(lib, np_, jit):
        count = lib.new_ref(0)
        const = np_.arange(3)

        def f(x):
            def body(c, _):
                count[...] += const.sum()
                return c * 2.0, ()

            return lib.lax.scan(body, x, (), length=3)[0]

        return lib.grad(f)(1.0), count[...]

    def internal(lib, np_, jit):
        def f(x):
            def body(c, x):
                r = lib.new_ref(c)
                r[...] += x * c
                return r[...], r[...] ** 2

            c, ys = lib.lax.scan(body, x, np_.arange(3.0))
            return c + ys.sum()

        return _maybe_jit(lib, jit, lib.grad(f))(1.5)

    _agree(undifferentiated_writes, False)
    _agree(internal)
    for lib, _ in LIBS.values():
        r = lib.new_ref(0.0)

        def f(x, r=r, lib=lib):
            def body(c, _):
                r[...] += c
                return c, ()

            return lib.lax.scan(body, x, (), length=2)[0]

        with pytest.raises(Exception, match="differentiated value on a non-differentiated"):
            lib.grad(f)(1.0)


@pytest.mark.parametrize("lib", ["xform", "jax"])
def test_control_flow_ref_errors_as_jax(lib):
    mod, np_ = LIBS[lib]
    x_ref = mod.new_ref(0.0)
    scan, cond = mod.lax.scan, mod.lax.cond
    returned = "returned a mutable array reference of type"
    with pytest.raises(
        ValueError,
        match=rf"traced for scan {returned} Ref\{{int32\[\]\}} at "
        r"output tree path result\[0\].*\n\n.*created on line .*test_refs",
    ):
        scan(lambda c, x: (mod.new_ref(c), x), 0, np_.arange(3))
    with pytest.raises(ValueError, match=rf"for scan {returned}.* path result\[1\]"):
        scan(lambda c, x: (c, x_ref), 0.0, np_.arange(3))
    with pytest.raises(ValueError, match=r"appeared at both c\[0\] and c\[1\]"):
        scan(lambda c, _: (None, None), (x_ref, x_ref), None, length=1)
    with pytest.raises(ValueError, match=r"for scan, .* closed over and passed as the argument y"):
        scan(lambda y, _: (x_ref[...] + y[...], None), x_ref, None, length=1)
    with pytest.raises(ValueError, match=rf"traced for cond {returned} Ref\{{float32\[\]\}}"):
        cond(True, lambda: mod.new_ref(1.0), lambda: mod.new_ref(2.0))
    with pytest.raises(ValueError, match=r"for cond.*at both x1 and x2"):
        cond(True, lambda x1, x2: 0.0, lambda x1, x2: 1.0, x_ref, x_ref)
    with pytest.raises(ValueError, match="for cond, .* closed over and passed as the argument r"):
        cond(True, lambda r: x_ref[...] + r[...], lambda r: x_ref[...] + r[...], x_ref)
    with pytest.raises(ValueError, match=rf"traced for while_body {returned}.*\n\n.*argument c"):
        mod.lax.while_loop(lambda c: c[...] < 3, lambda c: c, x_ref)
    with pytest.raises(ValueError, match=r"appeared at both c\[0\] and c\[1\]"):
        mod.jit(lambda: scan(lambda c, _: (None, None), (x_ref, x_ref), None, length=1))()


def test_use_after_free_raises_under_jit():
    @xform.jit
    def double_free():
        ref = xform.empty_ref(xform.ShapeDtypeStruct((), "float32"))
        xform.free_ref(ref)
        xform.free_ref(ref)

    @xform.jit
    def read_after_free(x):
        ref = xform.new_ref(x)
        xform.free_ref(ref)
        return ref[...]

    with pytest.raises(ValueError, match="`free_ref` must be called on a live `Ref`"):
        double_free()
    with pytest.raises(ValueError, match="`get` must be called on a live `Ref`.*freed"):
        read_after_free(1.0)
    with pytest.raises(Exception):  # noqa: B017  (JAX raises too, a KeyError and a ValueError)
        jax.jit(lambda x: (r := jax.new_ref(x), jax.free_ref(r), r[...])[2])(1.0)


# --------------------------------------------------------------------------- vmap of ref arguments


def test_vmap_ref_arguments():
    def extensive(lib, np_, jit):
        def f(x_ref, val):
            x_ref[...] += val
            x_ref[...] += val

        xs = lib.new_ref(np_.array([0, 0, 0]))
        lib.vmap(f)(xs, np_.arange(3))
        return xs[...]

    def closed_read_only(lib, np_, jit):
        y = lib.new_ref(1)

        def f(x_ref):
            x_ref[...] += y[...]
            return x_ref[...] * 2

        xs = lib.new_ref(np_.array([0, 5, 0]))
        return lib.vmap(f)(xs), xs[...]

    def other_axis(lib, np_, jit):
        m = lib.new_ref(np_.arange(6.0).reshape(2, 3))
        u = lib.new_ref(np_.float32(2.0))

        def f(r, v, u):
            r[0] = r[0] * v + u[...]
            return r[1] + v

        out = _maybe_jit(lib, jit, lambda v: lib.vmap(f, in_axes=(1, 0, None))(m, v, u))
        return out(np_.arange(3.0)), m[...]

    def through_jit_and_loops(lib, np_, jit):
        def f(x_ref, val):
            x_ref[...] += val
            lib.lax.fori_loop(0, 3, lambda i, c: (x_ref.__setitem__(..., x_ref[...] * 2), c)[1], 0)
            return x_ref[...] + 1

        a, b = lib.new_ref(np_.array([1.0, 2.0])), lib.new_ref(np_.array([1.0, 2.0]))
        return (
            lib.vmap(lib.jit(f))(a, np_.arange(2.0)),
            lib.jit(lib.vmap(f, (0, None)))(b, 1.0),
            a[...],
            b[...],
        )

    for make in (extensive, closed_read_only, through_jit_and_loops):
        _agree(make, False)
    _agree(other_axis)
    for lib, np_ in LIBS.values():
        x_ref = lib.new_ref(np_.zeros((3, 3)))
        with pytest.raises(ValueError, match="only one reference to a mutable array may be"):
            lib.vmap(lambda a, b: None)(x_ref, x_ref)
        u = lib.new_ref(np_.float32(0.0))
        with pytest.raises(Exception, match="vmapped value on an unbatched array reference"):
            lib.vmap(lambda r, x: r.__setitem__(..., x), in_axes=(None, 0))(u, np_.arange(3.0))


def test_jit_with_refs_traces_once_per_signature():
    traces = []
    r = xform.new_ref(xnp.zeros(3))

    @xform.jit
    def bump(ref, x):
        traces.append(1)
        ref[...] += x
        r[0] += 1.0
        return ref[1] * 2

    own = xform.new_ref(xnp.ones(3))
    for _ in range(3):
        bump(own, xnp.ones(3))
    assert len(traces) == 1
    np.testing.assert_array_equal(own[...], [4.0, 4.0, 4.0])
    np.testing.assert_array_equal(r[...], [3.0, 0.0, 0.0])
    bump(own, xnp.ones((), np.int32) * 2)  # another signature: traced again
    assert len(traces) == 2


def test_refs_made_inside_remat_and_custom_vjp():
    def make(lib, np_, jit):
        @lib.custom_vjp
        def f(x):
            x_ref = lib.new_ref(np_.zeros_like(x))
            x_ref[...] = x * 2
            return x_ref[...]

        f.defvjp(lambda x: (f(x), None), lambda _, g: (g * 3,))

        @lib.remat
        def g(y, x):
            x_ref = lib.new_ref(x)
            out = y * x_ref[...]
            x_ref[...] += 1
            return out * x_ref[...]

        f, g = _maybe_jit(lib, jit, f), _maybe_jit(lib, jit, g)
        return lib.jit(f)(3.0), lib.grad(f)(3.0), lib.grad(g, (0, 1))(2.0, 1.5)

    _agree(make)

    @xform.jit
    def unused(x, y):
        @xform.jit
        def g(y):
            y_ref = xform.new_ref(y)
            y_ref[...] += 1
            return xform.freeze(y_ref)

        g(y)
        return x

    assert "add" not in unused.lower(1, 2).as_text()  # as JAX's: the unused call is gone


def test_remat_closing_over_or_taking_refs():
    for jit in (False, True):
        results = []
        for lib, kind in ((xform, {}), (jax, {"kind": "no_grad_no_remat"})):
            x_ref = lib.new_ref(1.0, **kind)  # (xform's remat runs the body's writes once)

            def f(y, x_ref=x_ref):
                out = y * x_ref[...]
                x_ref[...] += 1
                return out

            def g(y, r):
                r[...] += 3.0
                return y * r[...]

            f, g = _maybe_jit(lib, jit, lib.remat(f)), _maybe_jit(lib, jit, lib.remat(g))
            r = lib.new_ref(1.0, **kind)
            results.append([lib.grad(f)(2.0), x_ref[...], lib.grad(g)(2.0, r), r[...]])
        np.testing.assert_allclose(*results)


def test_no_grad_no_remat_refs_take_differentiated_writes():
    results = []
    for lib in (xform, jax):
        r = lib.new_ref(1.0, kind="no_grad_no_remat")
        plain = lib.new_ref(0.0)

        def g(y, x_ref, plain=plain, lib=lib):
            x_ref[...] += y * y  # its tangent is dropped: the reference is not differentiated
            plain[...] = lib.lax.stop_gradient(y) * 3  # a constant: no error either
            return y * y

        grads = [lib.grad(g)(2.0, r), lib.grad(lib.jit(lib.remat(g)))(2.0, r)]
        results.append([*grads, r[...], plain[...]])
        with pytest.raises(Exception, match="differentiated value on a non-differentiated"):
            lib.grad(lambda y, g=g, plain=plain: g(y, plain))(2.0)
    np.testing.assert_allclose(*results)
