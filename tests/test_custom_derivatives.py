"""custom_jvp and custom_vjp: JAX's semantics under grad, jvp, jit and nesting."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import xform
import xform.numpy as xnp

X = np.float32(0.5)


def make_custom_jvp(lib, custom_jvp):
    @custom_jvp
    def f(x):
        return lib.sin(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return f(x), 2.0 * lib.cos(x) * t  # deliberately not sin's derivative

    return f


F, F_JAX = make_custom_jvp(xnp, xform.custom_jvp), make_custom_jvp(jnp, jax.custom_jvp)


def make_custom_vjp(lib, custom_vjp):
    @custom_vjp
    def g(x, y):
        return lib.sin(x) * y

    def fwd(x, y):
        return g(x, y), (lib.cos(x), lib.sin(x), y)

    def bwd(res, ct):
        cos_x, sin_x, y = res
        return (10.0 * cos_x * ct * y, sin_x * ct)

    g.defvjp(fwd, bwd)
    return g


G, G_JAX = make_custom_vjp(xnp, xform.custom_vjp), make_custom_vjp(jnp, jax.custom_vjp)


def close(a, b):
    for g, e in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b), strict=True):
        np.testing.assert_allclose(np.asarray(g), np.asarray(e), rtol=1e-6)


@pytest.mark.parametrize("transform", ["plain", "jit_outside", "jit_inside"])
def test_custom_jvp_rule_is_used(transform):
    wrap = {"plain": lambda h: h, "jit_outside": xform.jit, "jit_inside": lambda h: h}[transform]
    f = xform.jit(F) if transform == "jit_inside" else F
    close(F(X), F_JAX(X))
    close(wrap(xform.grad(f))(X), jax.grad(F_JAX)(X))
    close(xform.jvp(f, (X,), (np.float32(1.0),)), jax.jvp(F_JAX, (X,), (np.float32(1.0),)))


def test_custom_jvp_is_differentiable_to_higher_order_through_its_rule():
    close(xform.grad(xform.grad(F))(X), jax.grad(jax.grad(F_JAX))(X))
    close(xform.grad(xform.grad(xform.grad(F)))(X), jax.grad(jax.grad(jax.grad(F_JAX)))(X))


def test_custom_jvp_defjvps_and_nondiff_argnums():
    @functools.partial(xform.custom_jvp, nondiff_argnums=(0,))
    def scale(k, x):
        return x * k

    @scale.defjvp
    def scale_jvp(k, primals, tangents):
        return scale(k, primals[0]), tangents[0] * (k + 1.0)

    assert float(xform.grad(lambda x: scale(3.0, x))(X)) == 4.0

    @xform.custom_jvp
    def h(x, y):
        return x * y

    h.defjvps(lambda t, out, x, y: t * 100.0, lambda t, out, x, y: t * y)
    assert float(xform.grad(h)(X, np.float32(2.0))) == 100.0
    assert float(xform.grad(h, argnums=1)(X, np.float32(2.0))) == 2.0


def test_custom_vjp_rule_is_used_in_reverse_mode():
    y = np.float32(2.0)
    close(G(X, y), G_JAX(X, y))
    expected = jax.grad(G_JAX, argnums=(0, 1))(X, y)
    close(xform.grad(G, argnums=(0, 1))(X, y), expected)
    close(xform.jit(xform.grad(G, argnums=(0, 1)))(X, y), expected)
    close(xform.grad(xform.jit(G), argnums=(0, 1))(X, y), expected)
    out, pullback = xform.vjp(G, X, y)
    close(pullback(np.float32(1.0)), jax.vjp(G_JAX, X, y)[1](np.float32(1.0)))


def test_custom_vjp_under_forward_mode_is_an_error_as_in_jax():
    with pytest.raises(TypeError, match="can't apply forward-mode autodiff"):
        xform.jvp(lambda x: G(x, np.float32(2.0)), (X,), (np.float32(1.0),))


def test_custom_vjp_with_pytrees_and_a_stable_rule():
    # A log-sum-exp whose gradient is the softmax, the classic reason for custom_vjp.
    @xform.custom_vjp
    def logsumexp(params):
        x = params["x"]
        m = xnp.max(x)
        return m + xnp.log(xnp.sum(xnp.exp(x - m)))

    def fwd(params):
        out = logsumexp(params)
        return out, (params["x"], out)

    def bwd(res, ct):
        x, out = res
        return ({"x": ct * xnp.exp(x - out)},)

    logsumexp.defvjp(fwd, bwd)
    x = np.array([1.0, 1000.0, -3.0], np.float32)
    g = xform.grad(logsumexp)({"x": x})
    expected = jax.grad(lambda p: jax.scipy.special.logsumexp(p["x"]))({"x": x})
    close(g, expected)
    assert np.isfinite(np.asarray(g["x"])).all()


def test_bad_rules():
    @xform.custom_jvp
    def no_rule(x):
        return x

    with pytest.raises(AttributeError, match="No JVP defined for custom_jvp function no_rule"):
        xform.grad(no_rule)(X)

    @xform.custom_vjp
    def bad(x, y):
        return x * y

    bad.defvjp(lambda x, y: (x * y, (x, y)), lambda res, ct: (ct,))
    with pytest.raises(TypeError, match="must produce a tuple of length equal to the number"):
        xform.grad(bad)(X, X)

    bad.defvjp(lambda x, y: (x * y, (x, y)), lambda res, ct: (ct, xnp.ones(3)))
    with pytest.raises(ValueError, match=r"at output\[1\] the bwd rule produced an output"):
        xform.grad(bad)(X, X)

    @xform.custom_jvp
    def wrong_tangent(x):
        return x

    wrong_tangent.defjvp(lambda p, t: (p[0], (t[0], t[0])))
    with pytest.raises(TypeError, match=r"equal container \(pytree\) structures"):
        xform.grad(wrong_tangent)(X)


def make_none_cotangents(lib, custom_vjp):
    """A bwd rule returning None for a whole argument and for a leaf inside another."""

    @custom_vjp
    def f(x, params):
        return lib.sin(x) * params["w"] + params["b"]

    def fwd(x, params):
        return f(x, params), (lib.cos(x), params["w"])

    def bwd(res, ct):
        cos_x, w = res
        return None, {"w": None, "b": ct * 3.0}

    f.defvjp(fwd, bwd)
    return f


def test_custom_vjp_bwd_may_return_none_for_zero_cotangents():
    x, params = np.float32(0.3), {"w": np.float32(2.0), "b": np.float32(1.0)}
    f, f_jax = (
        make_none_cotangents(xnp, xform.custom_vjp),
        make_none_cotangents(jnp, jax.custom_vjp),
    )
    expected = jax.grad(f_jax, argnums=(0, 1))(x, params)
    got = xform.grad(f, argnums=(0, 1))(x, params)
    close(got, expected)
    assert float(got[0]) == 0.0 and float(got[1]["w"]) == 0.0 and float(got[1]["b"]) == 3.0
    close(xform.jit(xform.grad(f, argnums=(0, 1)))(x, params), expected)
    close(xform.grad(xform.jit(f), argnums=(0, 1))(x, params), expected)
    # None for the whole pytree argument, and a list instead of a tuple, as JAX allows.
    g, g_jax = xform.custom_vjp(lambda x, p: x * p["w"]), jax.custom_vjp(lambda x, p: x * p["w"])
    g.defvjp(lambda x, p: (x * p["w"], p["w"]), lambda w, ct: [ct * w, None])
    g_jax.defvjp(lambda x, p: (x * p["w"], p["w"]), lambda w, ct: [ct * w, None])
    close(xform.grad(g, argnums=(0, 1))(x, params), jax.grad(g_jax, argnums=(0, 1))(x, params))


def raises_as_jax(run, *cases):
    """``run(lib, *case)`` raises, for xform and for JAX, the same exception type with the
    same message, for each case."""
    for case in cases:
        errors = []
        for lib in (xform, jax):
            with pytest.raises(Exception) as info:
                run(lib, *case)
            errors.append(info.value)
        got, want = errors
        assert type(got).__name__ == type(want).__name__, (case, got, want)
        # (JAX's error classes append a link to their documentation page.)
        assert str(got) == str(want).split("\nSee https://docs.jax.dev")[0], case


def test_custom_vjp_bwd_with_wrong_structure_or_types_errors_as_jax():
    def run(lib, bwd, args=(X, X)):
        def f(x, y):
            return x * y if not isinstance(y, dict) else x * y["w"]

        f = lib.custom_vjp(f)
        f.defvjp(lambda x, y: (f(x, y), None), lambda res, ct: bwd(lib.numpy, ct))
        lib.grad(f)(*args)

    raises_as_jax(
        run,
        (lambda np_, ct: ({"a": ct}, ct),),  # the wrong structure
        (lambda np_, ct: ct,),  # not a tuple
        (lambda np_, ct: (ct, ct, ct),),  # too long
        (lambda np_, ct: [ct],),  # a list of the wrong length
        (lambda np_, ct: (ct, np_.ones(2)),),  # the wrong shape
        (lambda np_, ct: (ct, np_.ones(3)), (np.ones(3, np.float32), np.ones(4, np.float32))),
        (lambda np_, ct: (ct, {"w": np_.ones(2)}), (np.float32(1), {"w": np.float32(2)})),
    )
    # An inexact argument's cotangent may have another dtype, as in JAX.
    f = xform.custom_vjp(lambda x, y: x * y)
    f.defvjp(lambda x, y: (x * y, None), lambda res, ct: (ct, xnp.astype(ct, np.float16)))
    assert xform.grad(f, argnums=1)(X, X).dtype == np.float16


def test_custom_rules_whose_primal_output_differs_from_the_function_error_as_jax():
    def scan_apply(lib, f, x):  # traces f first: its output is known when the rule runs
        return lib.lax.scan(lambda c, _: (f(c), None), x, None, length=1)[0]

    def run_jvp(lib, out):
        f = lib.custom_jvp(lambda x: x)
        f.defjvp(lambda p, t: (out(lib.numpy, p[0]), out(lib.numpy, t[0])))
        lib.jvp(lambda x: scan_apply(lib, f, x), (X,), (X,))

    def run_vjp(lib, out):
        f = lib.custom_vjp(lambda x: x)
        f.defvjp(lambda x: (out(lib.numpy, x), None), lambda res, ct: (ct,))
        lib.grad(lambda x: scan_apply(lib, f, x))(X)

    pair = (lambda np_, x: (x, x),)
    wider = (lambda np_, x: np_.zeros((3,), x.dtype),)
    raises_as_jax(run_jvp, pair, wider)
    raises_as_jax(run_vjp, pair, wider)

    def fwd_not_a_pair(lib):
        f = lib.custom_vjp(lambda x: x)
        f.defvjp(lambda x: x, lambda res, ct: (ct,))
        lib.grad(f)(X)

    raises_as_jax(fwd_not_a_pair, ())


def test_arguments_that_do_not_bind_error_as_jax():
    def run(lib, kind, args, kwargs):
        def f(x, y, *, z=None):
            return x * y

        if kind == "custom_jvp":
            f = lib.custom_jvp(f)
            f.defjvp(lambda p, t: pytest.fail("the rule ran"))
        elif kind == "custom_vjp":
            f = lib.custom_vjp(f)
            f.defvjp(lambda *a: pytest.fail("fwd ran"), lambda *a: pytest.fail("bwd ran"))
        else:
            f = lib.custom_batching.custom_vmap(f)
            f.def_vmap(lambda *a: pytest.fail("the rule ran"))
        f(*args, **kwargs)

    for kind in ("custom_jvp", "custom_vjp", "custom_vmap"):
        raises_as_jax(
            run,
            (kind, (X,), {}),
            (kind, (X, X), {"z": 1.0}),
            (kind, (X, X, X), {}),
            (kind, (X,), {"w": 1.0}),
        )


def test_closure_convert_called_with_other_structure_errors_as_jax():
    def run(lib):
        _, pullback = lib.vjp(lambda x, z: x * z, 2.0, 3.0)
        pure, consts = lib.closure_convert(pullback, 2.0)
        np.testing.assert_allclose(pure(2.0, *consts), pullback(2.0))
        pure(2.0, consts)

    raises_as_jax(run, ())


def test_jaxpr_pretty_print_is_its_text_as_jax():
    def make(lib):
        def plus_one(x):
            return x + 1

        def plus_one_fwd(x):
            return plus_one(x), None

        f = lib.custom_vjp(plus_one)
        f.defvjp(plus_one_fwd, lambda res, ct: (ct,))
        return f

    f, x = make(xform), np.ones(2, np.float32)
    got = xform.make_jaxpr(f)(x).pretty_print(use_color=False)
    want = jax.make_jaxpr(make(jax))(x).pretty_print(use_color=False)
    assert got == str(xform.make_jaxpr(f)(x)) == want
    with pytest.raises(NotImplementedError, match="source_info"):
        xform.make_jaxpr(f)(x).pretty_print(source_info=True)


def test_nested_custom_jvp_calls_under_jit():
    # The outer call's body emits a function for the inner call: distinct symbols.
    def make(lib, custom_jvp):
        inner = custom_jvp(lib.sin)
        inner.defjvps(lambda g, ans, x: g * lib.cos(x))
        outer = custom_jvp(lambda x: inner(x) * 2.0)
        outer.defjvps(lambda g, ans, x: g * 2.0 * lib.cos(x))
        return lambda x: outer(x) + outer(x + 1.0)

    got = xform.jit(make(xnp, xform.custom_jvp))(np.float32(1.0))
    expected = jax.jit(make(jnp, jax.custom_jvp))(np.float32(1.0))
    np.testing.assert_allclose(np.asarray(got), np.asarray(expected), rtol=1e-6)
    got = xform.jit(xform.grad(make(xnp, xform.custom_jvp)))(np.float32(1.0))
    expected = jax.grad(make(jnp, jax.custom_jvp))(np.float32(1.0))
    np.testing.assert_allclose(np.asarray(got), np.asarray(expected), rtol=1e-6)


def test_custom_vjp_with_an_integer_argument_as_jax():
    """An integer argument has a float0 tangent: under grad, vmap(grad) and jit(grad) the rule
    runs and its cotangent for the integer is dropped, as JAX does."""

    def make(lib):
        @lib.custom_vjp
        def scaled(x, n):
            return x * n

        scaled.defvjp(lambda x, n: (x * n, n), lambda n, g: (g * n, None))
        return {
            "grad": lambda: lib.grad(lambda x: scaled(x, 3))(2.0),
            "both": lambda: lib.grad(scaled)(2.0, 3),
            "vmap": lambda: lib.vmap(lib.grad(scaled), (0, None))(np.ones(2), 3),
            "jit": lambda: lib.jit(lib.grad(lambda x: scaled(x, 3)))(2.0),
        }

    got, want = make(xform), make(jax)
    for k in want:
        np.testing.assert_allclose(got[k](), want[k](), err_msg=k)


def test_vjp_pullback_takes_float0_cotangents_as_jax():
    _, pullback = xform.vjp(lambda x, n: (x * n, n), 2.0, 3)
    ct_x, ct_n = pullback((1.0, np.zeros((), jax.dtypes.float0)))
    assert float(ct_x) == 3.0 and ct_n.dtype == jax.dtypes.float0
    with pytest.raises(ValueError, match="cotangent 1 has shape"):
        pullback((1.0, np.zeros((2,), jax.dtypes.float0)))


def test_symbolic_zeros_under_vmap_as_jax():
    """Under vmap the rules still get (and may return) symbolic zeros, as in JAX: what each
    rule saw and the results are the same as JAX's."""

    def run(lib):
        seen = []
        f = lib.custom_jvp(lambda x, y: x * y)

        @functools.partial(f.defjvp, symbolic_zeros=True)
        def f_jvp(primals, tangents):
            seen.append([type(t).__name__ == "SymbolicZero" for t in tangents])
            out = f(*primals)
            if type(tangents[0]).__name__ == "SymbolicZero":  # (a rule for x's tangent only)
                return out, lib.custom_derivatives.zero_from_primal(out, symbolic_zeros=True)
            return out, tangents[0] * primals[1]

        g = lib.custom_vjp(lambda x, y: (x * y, y))

        def g_fwd(x, y):
            seen.append(("fwd", x.perturbed, y.perturbed))
            return g(x.value, y.value), x.value

        def g_bwd(x, cts):
            seen.append(("bwd", *[type(ct).__name__ == "SymbolicZero" for ct in cts]))
            return None, cts[0] * x  # None: a zero cotangent for x

        g.defvjp(g_fwd, g_bwd, symbolic_zeros=True)
        x, ones = lib.numpy.arange(3.0), lib.numpy.ones(3)
        results = [
            lib.jvp(lib.vmap(lambda y: f(x, y)), (x,), (ones,)),
            lib.jvp(lib.vmap(lib.jit(lambda y: f(x, y))), (x,), (ones,)),
            lib.grad(lambda y: lib.vmap(f)(x, y).sum())(ones),
            lib.grad(lambda x: lib.vmap(f)(x, ones).sum())(x),
            lib.grad(lambda y: lib.vmap(g)(x, y)[0].sum())(ones),
            lib.jit(lib.grad(lambda y: lib.vmap(g)(x, y)[0].sum()))(ones),
        ]
        return seen, results

    (seen, got), (seen_jax, want) = run(xform), run(jax)
    assert seen == seen_jax
    close(got, want)


def test_custom_vjp_bwd_pytree_whose_unflatten_refuses_none():
    """A bwd rule's cotangent pytree is never rebuilt with None leaves (as in JAX)."""

    def run(lib):
        class Pair(list):
            pass

        def unflatten(_, children):
            assert children[0] is not None
            return Pair(children)

        lib.tree_util.register_pytree_node(Pair, lambda p: (list(p), None), unflatten)
        f = lib.custom_vjp(lambda p: p[0] * p[1])
        f.defvjp(lambda p: (f(p), p), lambda p, ct: (Pair([ct * p[1], ct * p[0]]),))
        return lib.grad(f)(Pair([np.float32(2), np.float32(3)]))

    close(run(xform), run(jax))


def test_float0_tangents_of_integer_outputs_as_jax():
    """Integer outputs of custom functions have float0 tangents (zeros from the rules), in a
    loop body too; ``zeros(..., float0)`` is a host value, as JAX's."""
    assert type(xnp.zeros((2,), jax.dtypes.float0)) is np.ndarray
    assert xnp.zeros((2,), jax.dtypes.float0).dtype == jnp.zeros((), jax.dtypes.float0).dtype

    def run(lib):
        f = lib.custom_jvp(lambda x, n: (x * n, n))
        f.defjvp(lambda p, t: (f(*p), (t[0] * p[1], lib.custom_derivatives.zero_from_primal(p[1]))))
        g = lib.custom_vjp(lambda c: (c[0] * 2.0, c[1]))
        g.defvjp(
            lambda c: (g(c), None), lambda _, ct: ((ct[0] * 2.0, lib.numpy.zeros((), float0)),)
        )

        def in_scan(h, x, n):
            return lib.lax.scan(lambda c, _: (h(c), None), (x, n), None, length=2)[0]

        float0 = jax.dtypes.float0
        t = (np.float32(1.0), np.zeros((), float0))
        return [
            lib.jvp(f, (2.0, 3), t),
            lib.jvp(lambda x, n: in_scan(lambda c: f(*c), x, n), (2.0, 3), t),
            lib.grad(lambda x, n: in_scan(g, x, n)[0], (0, 1), allow_int=True)(2.0, 3),
            lib.jit(lib.grad(lambda x, n: in_scan(g, x, n)[0], (0, 1), allow_int=True))(2.0, 3),
        ]

    got, want = run(xform), run(jax)
    assert jax.tree.structure(got) == jax.tree.structure(want)
    for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
        is_float0 = np.asarray(w).dtype == jax.dtypes.float0
        assert (np.asarray(g).dtype == jax.dtypes.float0) == is_float0
        assert np.shape(g) == np.shape(w)
        if not is_float0:
            np.testing.assert_allclose(g, w)


def test_custom_functions_forward_the_wrapped_function_attributes_as_jax():
    def run(lib):
        @lib.custom_vjp
        @lib.custom_batching.custom_vmap
        def f(x, y):
            return lib.numpy.sin(x) * y

        f.def_vmap(lambda size, batched, xs, ys: (lib.numpy.cos(xs) * ys, True))
        f.defvjp(lambda x, y: (f(x, y), (x, y)), lambda r, g: (g * r[1], g * r[0]))
        g = lib.custom_jvp(lib.custom_batching.custom_vmap(lambda x: x + 1.0))
        assert callable(g.def_vmap) and callable(g.defjvp)
        xs = np.linspace(0, 1, 4, dtype=np.float32)
        return lib.vmap(f)(xs, xs), lib.grad(f)(xs[1], xs[2])

    close(run(xform), run(jax))
    with pytest.raises(AttributeError):
        xform.custom_jvp(lambda x: x).def_vmap  # noqa: B018  (a plain function has none)


def test_tracer_as_a_nondiff_custom_vjp_argument_errors_as_jax():
    def run(lib):
        @functools.partial(lib.custom_vjp, nondiff_argnums=(0,))
        def f(k, y):
            return k * y

        f.defvjp(lambda k, y: (f(k, y), None), lambda k, res, g: (g * k,))
        lib.jit(f)(2.0, 3.0)

    raises_as_jax(run, ())
    assert issubclass(xform.errors.UnexpectedTracerError, jax.errors.UnexpectedTracerError)


def test_rules_closing_over_values_mapped_by_vmap_as_jax():
    """A custom function called inside vmap with no mapped operand, whose rules close over a
    value that vmap maps: the rules run in that vmap, as JAX's."""

    def run(lib):
        def h(z, kind):
            def per_example(x):
                if kind == "jvp":
                    f = lib.custom_jvp(lambda y: x * y)
                    f.defjvp(lambda p, t: (x * p[0], x * t[0] * 10.0))
                else:
                    f = lib.custom_vjp(lambda y: x * y)
                    f.defvjp(lambda y: (x * y, (x, y)), lambda res, ct: (res[0] * ct * 10.0,))
                return f(z)

            return lib.vmap(per_example)(lib.numpy.arange(3.0)).sum()

        return [
            lib.jvp(lambda z: h(z, "jvp"), (1.0,), (2.0,)),
            lib.grad(h)(1.0, "jvp"),
            lib.grad(h)(1.0, "vjp"),
            lib.jit(lib.grad(h), static_argnums=1)(1.0, "vjp"),
        ]

    close(run(xform), run(jax))


def test_check_grads_in_reverse_mode_of_a_custom_vjp_function():
    """Reverse mode is checked against finite differences, as JAX's check_grads: a
    custom_vjp function (no forward mode) can be checked, and a wrong bwd rule is caught."""

    def make(scale):
        f = xform.custom_vjp(lambda x, c: x * c)
        f.defvjp(lambda x, c: (f(x, c), (x, c)), lambda r, g: (g * r[1] * scale, (g * r[0]).sum()))
        return lambda x, c: xform.lax.scan(lambda y, _: (f(y, c), None), x, None, length=3)[0]

    args = (np.ones((2,), np.float32), np.float32(1.5))
    xform.test_util.check_grads(
        xform.vmap(make(1.0), (0, None)),
        (np.ones((3, 2), np.float32), args[1]),
        order=2,
        modes=["rev"],
    )
    with pytest.raises(AssertionError, match="rev"):
        xform.test_util.check_grads(make(2.0), args, order=1, modes=["rev"])
