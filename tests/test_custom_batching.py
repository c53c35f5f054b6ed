"""xform.custom_batching (custom_vmap, sequential_vmap) against jax.custom_batching."""

import re

import jax
import jax.custom_batching
import jax.numpy as jnp
import numpy as np
import pytest

import xform
import xform.custom_batching
import xform.numpy as xnp

XS = np.arange(3, dtype=np.float32)
YS = np.linspace(1.0, 2.0, 3, dtype=np.float32)
LIBS = {"xform": (xform, xnp, xform.custom_batching), "jax": (jax, jnp, jax.custom_batching)}


def make_f(name, log=None):
    """sin(x) * y, whose vmap rule computes cos(xs) * ys instead (so the rule is seen)."""
    _, lib, cb = LIBS[name]

    @cb.custom_vmap
    def f(x, y):
        return lib.sin(x) * y

    @f.def_vmap
    def rule(axis_size, in_batched, xs, ys):
        if log is not None:
            log.append((axis_size, in_batched))
        return lib.cos(xs) * ys, any(in_batched)

    return f


def both(run):
    """``run(api, f)`` for xform and for JAX."""
    return [run(LIBS[name][0], make_f(name)) for name in ("xform", "jax")]


def check(run, tol=1e-6):
    ours, theirs = both(run)
    ours_leaves, theirs_leaves = jax.tree.leaves(ours), jax.tree.leaves(theirs)
    assert jax.tree.structure(ours) == jax.tree.structure(theirs)
    for a, b in zip(ours_leaves, theirs_leaves, strict=True):
        assert np.asarray(a).dtype == np.asarray(b).dtype
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


def test_public_names_match_jax():
    exempt = {}  # name -> why xform cannot have it
    public = [n for n in dir(jax.custom_batching) if not n.startswith("_")]
    assert sorted(n for n in public if not hasattr(xform.custom_batching, n)) == sorted(exempt)
    assert "custom_batching" in dir(xform)


def test_call_outside_vmap_runs_the_function():
    log = []
    f = make_f("xform", log)
    check(lambda api, f: f(XS[1], YS[1]))
    check(lambda api, f: api.jit(f)(XS[1], YS[1]))
    np.testing.assert_allclose(f(XS, YS), np.sin(XS) * YS, rtol=1e-6)
    assert log == []


def test_vmap_runs_the_rule():
    log = []
    f = make_f("xform", log)
    out = xform.vmap(f)(XS, YS)
    np.testing.assert_allclose(out, np.cos(XS) * YS, rtol=1e-6)
    assert log == [(3, [True, True])]
    check(lambda api, f: api.vmap(f)(XS, YS))


def test_vmap_in_axes_none_and_other_axes():
    log = []
    xform.vmap(make_f("xform", log), in_axes=(0, None))(XS, YS[0])
    assert log == [(3, [True, False])]
    check(lambda api, f: api.vmap(f, in_axes=(0, None))(XS, YS[0]))
    check(lambda api, f: api.vmap(f, in_axes=(None, 0))(XS[1], YS))
    xs2 = np.arange(6, dtype=np.float32).reshape(2, 3)
    check(lambda api, f: api.vmap(f, in_axes=1, out_axes=1)(xs2, xs2 + 1))


def test_unbatched_output_and_pytrees():
    def make(name):
        _, lib, cb = LIBS[name]

        @cb.custom_vmap
        def g(x, pair):
            return {"a": x * pair[0], "b": pair[1]}

        @g.def_vmap
        def rule(axis_size, in_batched, xs, pair):
            assert isinstance(in_batched, list) and in_batched[1] == (True, False)
            return {"a": xs * pair[0] + 1, "b": pair[1]}, {"a": True, "b": False}

        return g

    def run(name):
        api = LIBS[name][0]
        return api.vmap(make(name), in_axes=(0, (0, None)))(XS, (YS, np.float32(4.0)))

    ours, theirs = run("xform"), run("jax")
    for k in ("a", "b"):
        assert np.asarray(ours[k]).shape == np.asarray(theirs[k]).shape
        np.testing.assert_allclose(ours[k], theirs[k], rtol=1e-6)


def test_nested_vmap_and_jit():
    m = np.arange(6, dtype=np.float32).reshape(2, 3)
    check(lambda api, f: api.vmap(api.vmap(f))(m, m + 1))
    check(lambda api, f: api.jit(api.vmap(f))(XS, YS))
    check(lambda api, f: api.vmap(api.jit(f))(XS, YS))
    check(lambda api, f: api.vmap(api.vmap(f), in_axes=(0, None))(m, YS))


def test_jvp_goes_through_function_and_rule():
    check(lambda api, f: api.jvp(f, (XS[1], YS[1]), (np.float32(1.0), np.float32(0.5))))
    check(lambda api, f: api.jvp(api.vmap(f), (XS, YS), (YS, XS)))
    check(lambda api, f: api.vmap(lambda a, b: api.jvp(f, (a, b), (b, b)))(XS, YS))
    check(lambda api, f: api.vmap(lambda a: api.jvp(f, (a, YS[0]), (YS[1], a)))(XS))
    check(lambda api, f: api.jit(api.vmap(lambda a, b: api.jvp(f, (a, b), (b, a))))(XS, YS))
    # grad outside the vmap differentiates the rule's computation
    check(lambda api, f: api.grad(lambda x: api.vmap(f)(x, YS).sum())(XS))


@pytest.mark.parametrize(
    "how", ["grad", "jit_grad", "vjp", "vmap_grad"], ids=lambda s: s.replace("_", "-")
)
def test_reverse_mode_raises_as_jax(how):
    def run(api, f):
        if how == "grad":
            return api.grad(f)(XS[1], YS[1])
        if how == "jit_grad":
            return api.jit(api.grad(f))(XS[1], YS[1])
        if how == "vjp":
            return api.vjp(f, XS[1], YS[1])
        return api.vmap(api.grad(f))(XS, YS)

    for name in ("jax", "xform"):
        with pytest.raises(ValueError, match="Linearization failed"):
            run(LIBS[name][0], make_f(name))


def test_custom_vjp_outside_gives_reverse_mode():
    def make(name):
        api, lib, cb = LIBS[name]

        @api.custom_vjp
        @cb.custom_vmap
        def f(x, y):
            return lib.sin(x) * y

        f.__wrapped__.def_vmap(lambda n, b, xs, ys: (lib.cos(xs) * ys, True))
        f.defvjp(lambda x, y: (f(x, y), (x, y)), lambda r, g: (lib.cos(r[0]) * r[1] * g, g))
        return f

    for run in (
        lambda api, f: api.vmap(f)(XS, YS),
        lambda api, f: api.grad(f)(XS[1], YS[1]),
        lambda api, f: api.vmap(api.grad(f))(XS, YS),
    ):
        ours, theirs = run(xform, make("xform")), run(jax, make("jax"))
        np.testing.assert_allclose(ours, theirs, rtol=1e-6)


def test_keyword_arguments_and_errors():
    check(lambda api, f: api.vmap(lambda x, y: f(x, y=y))(XS, YS))
    check(lambda api, f: f(y=YS[0], x=XS[1]))
    for name in ("jax", "xform"):
        f = make_f(name)
        with pytest.raises(TypeError, match="could not be resolved to positional-only"):
            f(XS[1])
        g = LIBS[name][2].custom_vmap(lambda x: x)
        with pytest.raises(AttributeError, match="No batching rule defined"):
            g(XS[1])


@pytest.mark.parametrize("which", ["spec", "value"])
def test_rule_output_structure_mismatch_raises_value_error(which):
    def make(name):
        _, lib, cb = LIBS[name]

        @cb.custom_vmap
        def h(x):
            return x, x

        @h.def_vmap
        def rule(axis_size, in_batched, xs):
            if which == "spec":
                return (xs, xs), [True, True]  # a list spec for a tuple output
            return [xs, xs], [True, True]  # a list output for the function's tuple

        return h

    match = "do not match" if which == "spec" else "does not match that of original"
    for name in ("jax", "xform"):
        with pytest.raises(ValueError, match=match):
            LIBS[name][0].vmap(make(name))(XS)


def test_sequential_vmap_loops_over_the_batch():
    calls = {"xform": 0, "jax": 0}

    def make(name):
        _, lib, cb = LIBS[name]

        @cb.sequential_vmap
        def s(x, y):
            calls[name] += 1
            return {"sum": x + y, "prod": x * y}

        return s

    for in_axes in [0, (0, None)]:
        ys = YS if in_axes == 0 else YS[0]
        ours = xform.vmap(make("xform"), in_axes=in_axes)(XS, ys)
        theirs = jax.vmap(make("jax"), in_axes=in_axes)(XS, ys)
        for k in ("sum", "prod"):
            np.testing.assert_allclose(ours[k], theirs[k], rtol=1e-6)
    assert calls["xform"] == calls["jax"]  # traced: once per call, once in the loop body
    text = str(xform.make_jaxpr(xform.vmap(make("xform"), in_axes=(0, None)))(XS, YS[0]))
    assert "scan[" in text and "custom_vmap_call[" in text
    # outside vmap it is the function
    np.testing.assert_allclose(make("xform")(XS, YS)["sum"], XS + YS)


def test_make_jaxpr_prints_like_jax():
    def texts(run):
        return [str(run(api, f)) for api, f in ((xform, make_f("xform")), (jax, make_f("jax")))]

    ours, theirs = texts(lambda api, f: api.make_jaxpr(f)(XS[1], YS[1]))
    for part in ("custom_vmap_call[", "call={ lambda ; ", "in_tree=PyTreeDef(([], (*, *)))"):
        assert part in ours and part in theirs
    assert "out_tree=PyTreeDef(*)" in ours and "out_tree=PyTreeDef(*)" in theirs
    assert "rule=rule" in ours
    # under vmap the rule's operations replace the call, in both
    ours, theirs = texts(lambda api, f: api.make_jaxpr(api.vmap(f))(XS, YS))
    assert ours == theirs
    # JAX prints the rule as a function's repr, xform by its name
    ours, theirs = texts(lambda api, f: api.make_jaxpr(api.jit(f))(XS[1], YS[1]))
    assert re.sub(r"rule=.*", "", ours) == re.sub(r"rule=.*", "", theirs)


def test_closed_over_values_are_operands():
    z = np.float32(3.0)

    def run(api, name):
        _, lib, cb = LIBS[name]

        def outer(c):
            @cb.custom_vmap
            def f(x):
                return x * c

            f.def_vmap(lambda n, b, xs: (xs * c + 1, True))
            return api.vmap(f)(XS) + f(XS[1])

        return api.jit(outer)(z)

    np.testing.assert_allclose(run(xform, "xform"), run(jax, "jax"), rtol=1e-6)


def test_jvp_with_integer_arguments_and_second_order():
    def make(name):
        _, lib, cb = LIBS[name]
        h = cb.custom_vmap(lambda x, n: (x * n, n + 1))
        h.def_vmap(lambda k, b, xs, ns: ((lib.sin(xs) * ns, ns + 1), (True, b[1])))
        return h

    def run(name, how):
        api, h = LIBS[name][0], make(name)
        one = lambda x: api.jvp(lambda x: h(x, 3)[0], (x,), (x,))  # noqa: E731
        if how == "jvp":
            return one(np.float32(1.0))
        if how == "vmap_jvp":
            return api.vmap(one)(XS)
        if how == "vmap_int":
            # n unbatched (batching it too gives the rule's outputs two batch dimensions in
            # JAX, an array of the wrong shape; xform raises a ValueError there)
            return api.vmap(
                lambda x, n: api.jvp(lambda x: h(x, n), (x,), (x,))[0], in_axes=(0, None)
            )(XS, np.int32(2))
        second = lambda x: api.jvp(one, (x,), (np.float32(1.0),))  # noqa: E731
        return api.vmap(second)(XS)

    for how in ("jvp", "vmap_jvp", "vmap_int", "second"):
        ours, theirs = run("xform", how), run("jax", how)
        for a, b in zip(jax.tree.leaves(ours), jax.tree.leaves(theirs), strict=True):
            assert np.asarray(a).dtype == np.asarray(b).dtype, how
            np.testing.assert_allclose(a, b, rtol=1e-6, err_msg=how)


def test_xform_only_errors():
    # A function closing over a value its enclosing vmap batches (JAX: an AssertionError).
    def outer(c):
        f = xform.custom_batching.custom_vmap(lambda x: x * c)
        f.def_vmap(lambda n, b, xs: (xs, True))
        return f(XS)

    with pytest.raises(ValueError, match="closes over values batched by an enclosing vmap"):
        xform.vmap(outer)(XS)
    # A rule whose output does not have the batched shape (JAX goes on with it).
    f = xform.custom_batching.custom_vmap(lambda x: x)
    f.def_vmap(lambda n, b, xs: (xs[0], True))
    with pytest.raises(ValueError, match=r"output 0 has shape \(\), expected \(3,\)"):
        xform.vmap(f)(XS)
