"""Loops (while_loop, fori_loop, scan, map) against jax.lax: values eagerly and under jit,
the lowered ``stablehlo.while``, jvp, grad, check_grads, vmap, nesting and bad input.

Each case is written once against a (lax, numpy) pair, so the same code runs on xform and on
JAX, the oracle.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import xform
import xform.numpy as xnp
from tests.harness import assert_same, check_vmap
from xform import lax
from xform.errors import ConcretizationTypeError
from xform.test_util import check_grads

XF = (lax, xnp)
JX = (jax.lax, jnp)
RNG = np.random.default_rng(0)
XS = RNG.standard_normal((5, 3)).astype(np.float32)
V3 = np.array([0.3, -0.7, 1.1], np.float32)


def both(case, *args):
    """``case`` built on xform, eagerly and under jit, against ``case`` built on JAX (jitted:
    an eager JAX loop compiles each of its primitives, which is slow)."""
    expected = jax.jit(case(*JX))(*args)
    f = case(*XF)
    assert_same(f(*args), expected, what="eager")
    assert_same(xform.jit(f)(*args), expected, what="jit")


# --------------------------------------------------------------------------- cases


def while_pytree(lx, np_):
    def f(x):
        def cond(c):
            return c["n"] < 6

        def body(c):
            return {"n": c["n"] + 1, "v": (np_.sin(c["v"][0]) + c["v"][1], c["v"][1] * 1.5)}

        return lx.while_loop(cond, body, {"n": 0, "v": (x, x * 0.5)})

    return f


def fori_static(lx, np_):
    return lambda x: lx.fori_loop(1, 6, lambda i, c: np_.cos(c) * i + c, x)


def fori_pytree(lx, np_):
    return lambda x: lx.fori_loop(0, 4, lambda i, c: (c[0] * 1.1, c[1] + c[0].sum()), (x, 0.0))


def scan_pytree(lx, np_, reverse=False, unroll=1):
    def body(carry, x):
        h, n = carry
        h = np_.tanh(h * x["a"] + x["b"][0])
        return (h, n + 1), {"h": h, "s": (h.sum(), x["b"][1])}

    def f(xs):
        return lx.scan(
            body,
            (np_.ones_like(xs[0]), 0),
            {"a": xs, "b": (xs[:, 0], xs * 2)},
            reverse=reverse,
            unroll=unroll,
        )

    return f


def scan_no_xs(lx, np_):
    return lambda x: lx.scan(lambda c, _: (c * 0.9 + 1.0, c), x, None, length=4)


def scan_consts(lx, np_):
    w = np.linspace(-1, 1, 9, dtype=np.float32).reshape(3, 3)

    def f(x, xs):
        return lx.scan(lambda c, xi: (np_.tanh(w @ c + x * xi), c.sum()), x, xs)

    return f


def tanh_rnn(lx, np_):
    def f(params, xs):
        wh, wx, b = params

        def step(h, x):
            h = np_.tanh(h @ wh + x @ wx + b)
            return h, h

        h, hs = lx.scan(step, np_.zeros(16, np_.float32), xs)
        return np_.sum(h**2) + np_.mean(hs)

    return f


RNN_PARAMS = (
    RNG.standard_normal((16, 16)).astype(np.float32) * 0.3,
    RNG.standard_normal((4, 16)).astype(np.float32) * 0.3,
    RNG.standard_normal(16).astype(np.float32) * 0.1,
)
RNN_XS = RNG.standard_normal((20, 4)).astype(np.float32)


# --------------------------------------------------------------------------- values


def test_while_loop_values():
    both(while_pytree, V3)
    both(lambda lx, np_: lambda x: lx.while_loop(lambda x: x < 10, lambda x: x * 2, x), 1)
    both(lambda lx, np_: lambda x: lx.while_loop(lambda x: x < 10, lambda x: x * 2, x), 11)


def test_fori_loop_values():
    both(fori_static, V3)
    both(fori_pytree, V3)
    both(lambda lx, np_: lambda x: lx.fori_loop(3, 1, lambda i, c: c + i, x), V3)  # no trips
    # Traced bounds: a while loop.
    f = lambda lx, np_: lambda n, x: lx.fori_loop(0, n, lambda i, c: c * 2.0 + i, x)  # noqa: E731
    both(f, 5, V3)


def test_fori_loop_weak_carry_is_promoted():
    both(lambda lx, np_: lambda: lx.fori_loop(0, 3, lambda i, c: c + 0.5, 0))
    both(lambda lx, np_: lambda x: lx.fori_loop(0, 3, lambda i, c: c + x[0], 0.0), V3)


@pytest.mark.parametrize(
    "reverse,unroll", [(False, 1), (True, 1), (False, 2), (True, 3), (False, True)]
)
def test_scan_values(reverse, unroll):
    both(lambda lx, np_: scan_pytree(lx, np_, reverse, unroll), XS)


def test_scan_without_xs_consts_and_map():
    both(scan_no_xs, V3)
    both(scan_consts, V3, XS)
    both(lambda lx, np_: lambda xs: lx.map(lambda r: (np_.sin(r), r.sum()), xs), XS)
    both(lambda lx, np_: lambda x: lx.scan(lambda c, _: (c, ()), x, None, length=0), V3)


def test_lowered_text_is_a_stablehlo_while():
    for fn, args in [
        (scan_pytree(*XF), (XS,)),
        (while_pytree(*XF), (V3,)),
        (fori_static(*XF), (V3,)),
    ]:
        text = xform.jit(fn).lower(*args).as_text()
        assert "stablehlo.while" in text
    text = xform.jit(scan_pytree(*XF, unroll=2)).lower(XS).as_text()
    assert text.count("stablehlo.while") == 2  # two trips of two copies, then one of one
    text = xform.jit(fori_static(*XF)).lower(V3).as_text()
    assert text.count("stablehlo.cosine") == 1  # the body once, not unrolled


def test_staged_program_holds_one_primitive():
    text = str(xform.make_jaxpr(scan_consts(*XF))(V3, XS))
    assert text.count("scan[") == 1 and "num_consts=2" in text  # w, and x closed over
    text = str(xform.make_jaxpr(fori_static(*XF))(V3))
    assert "scan[" in text
    text = str(xform.make_jaxpr(lambda n, x: lax.fori_loop(0, n, lambda i, c: c + 1.0, x))(3, V3))
    assert "while[" in text


# --------------------------------------------------------------------------- differentiation


def jvp_both(case, primals, tangents, tol=2e-5):
    got = xform.jvp(case(*XF), primals, tangents)
    expected = jax.jit(lambda p, t: jax.jvp(case(*JX), p, t))(primals, tangents)
    assert_same(got, expected, tol, tol, check_weak_type=False, what="jvp")


def grad_both(case, *args, argnums=0, tol=2e-5):
    expected = jax.jit(jax.grad(case(*JX), argnums))(*args)
    got = xform.grad(case(*XF), argnums)(*args)
    assert_same(got, expected, tol, tol, what="grad")
    return got


def test_jvp():
    jvp_both(while_pytree, (V3,), (np.ones(3, np.float32),))
    jvp_both(fori_static, (V3,), (V3,))
    jvp_both(scan_consts, (V3, XS), (V3, XS))
    jvp_both(
        lambda lx, np_: lambda n, x: lx.fori_loop(0, n, lambda i, c: np_.sin(c) + i, x),
        (4, V3),
        (np.zeros((), jax.dtypes.float0), V3),
    )
    jvp_both(lambda lx, np_: scan_pytree(lx, np_, reverse=True), (XS,), (XS,))


def summed(case):
    """``case``'s outputs summed into one scalar."""

    def wrap(lx, np_):
        f = case(lx, np_)

        def g(*args):
            leaves = jax.tree_util.tree_leaves(f(*args))
            return sum(
                np_.sum(
                    np_.sin(x if np_.issubdtype(x.dtype, np_.inexact) else x.astype(np_.float32))
                )
                for x in leaves
            )

        return g

    return wrap


def test_grad_of_scan_and_fori_loop():
    grad_both(summed(scan_pytree), XS)
    grad_both(summed(lambda lx, np_: scan_pytree(lx, np_, reverse=True, unroll=2)), XS)
    grad_both(summed(scan_consts), V3, XS, argnums=(0, 1))
    grad_both(summed(fori_static), V3)
    grad_both(summed(fori_pytree), V3)
    grad_both(summed(scan_no_xs), V3)


def test_grad_composes_with_jit():
    f_x, f_j = summed(scan_consts)(*XF), summed(scan_consts)(*JX)
    expected = jax.jit(jax.grad(f_j))(V3, XS)
    assert_same(xform.grad(xform.jit(f_x))(V3, XS), expected, 2e-5, 2e-5)
    assert_same(xform.jit(xform.grad(f_x))(V3, XS), expected, 2e-5, 2e-5)
    g_x, g_j = summed(fori_static)(*XF), summed(fori_static)(*JX)
    assert_same(xform.jit(xform.grad(g_x))(V3), jax.jit(jax.grad(g_j))(V3), 2e-5, 2e-5)
    text = xform.jit(xform.grad(f_x)).lower(V3, XS).as_text()
    assert text.count("stablehlo.while") == 2  # the forward scan and its transpose


def test_tanh_rnn_forward_and_grad_under_jit():
    f_x, f_j = tanh_rnn(*XF), tanh_rnn(*JX)
    vg_x = xform.jit(xform.value_and_grad(f_x))
    vg_j = jax.jit(jax.value_and_grad(f_j))
    assert_same(vg_x(RNN_PARAMS, RNN_XS), vg_j(RNN_PARAMS, RNN_XS), 2e-5, 2e-5)
    assert_same(xform.grad(f_x)(RNN_PARAMS, RNN_XS), vg_j(RNN_PARAMS, RNN_XS)[1], 2e-5, 2e-5)


def test_check_grads_order_2(x64):
    xs = RNG.standard_normal((4, 3))
    x = np.array([0.4, -0.2, 0.9])
    check_grads(summed(scan_consts)(*XF), (x, xs), order=2)
    check_grads(
        summed(lambda lx, np_: scan_pytree(lx, np_, reverse=True, unroll=3))(*XF), (xs,), order=2
    )
    check_grads(summed(fori_static)(*XF), (x,), order=2)


def test_closures_over_outer_tracers():
    # An outer grad (jvp) variable used inside a scan (while) body.
    def f(lx, np_):
        def g(w):
            c, ys = lx.scan(lambda c, x: (c * w + x, np_.sin(c * w)), 0.0, XS[:, 0])
            return c + ys.sum()

        return g

    w = np.float32(0.7)
    assert_same(xform.grad(f(*XF))(w), jax.jit(jax.grad(f(*JX)))(w), 2e-5, 2e-5)
    w_loop = lambda lx, np_: (  # noqa: E731
        lambda w: lx.while_loop(lambda d: d[0] < 3, lambda d: (d[0] + 1, d[1] * w), (0, 1.0))[1]
    )
    jvp_both(w_loop, (w,), (w,))
    # Nested: grad of a function whose scan body closes over the outer grad's variable.
    h = lambda lx, np_: (  # noqa: E731
        lambda w: jax.tree_util.tree_leaves(
            lx.scan(lambda c, x: (c * np_.cos(w * x), None), 1.0, XS[:, 1])
        )[0]
    )
    w = np.float32(0.3)
    assert_same(
        xform.grad(xform.grad(h(*XF)))(w), jax.jit(jax.grad(jax.grad(h(*JX))))(w), 1e-4, 1e-4
    )


def test_reverse_mode_of_while_loop_is_an_error():
    f = lambda x: lax.while_loop(  # noqa: E731
        lambda c: c[0] < 3,
        lambda c: (c[0] + 1, c[1] * 2.0),
        (0, x),
    )[1]
    with pytest.raises(
        ValueError,
        match="Reverse-mode differentiation does not work for "
        "lax.while_loop or lax.fori_loop with dynamic start/stop",
    ):
        xform.grad(f)(1.0)
    with pytest.raises(ValueError, match="Reverse-mode differentiation does not work"):
        xform.jit(xform.grad(lambda n, x: lax.fori_loop(0, n, lambda i, c: c * x, x), argnums=1))(
            3, 1.0
        )
    # Forward mode and linearize still work, as in JAX.
    y, f_jvp = xform.linearize(f, 1.0)
    assert_same(f_jvp(1.0), np.float32(8.0), what="linearize")


# --------------------------------------------------------------------------- vmap


def test_vmap_scan():
    f = scan_consts
    check_vmap(f(*XF), jax.jit(f(*JX)), (np.stack([V3, V3 * 2]), XS), in_axes=(0, None))  # carry
    check_vmap(f(*XF), jax.jit(f(*JX)), (V3, np.stack([XS, XS[::-1]], 2)), in_axes=(None, 2))  # xs
    g = lambda lx, np_: (  # noqa: E731
        lambda w, xs: lx.scan(lambda c, x: (c + w * x, c * w), np_.zeros(3, np_.float32), xs)
    )
    check_vmap(g(*XF), jax.jit(g(*JX)), (np.stack([V3, -V3]), XS), in_axes=(0, None))  # consts
    check_vmap(
        summed(scan_pytree)(*XF),
        jax.jit(summed(scan_pytree)(*JX)),
        (np.stack([XS, -XS]),),
        rtol=1e-5,
        atol=1e-5,
    )


def test_vmap_while_loop():
    # Weak types are not compared: core.eval_jaxpr reads a weak literal back as a strong
    # NumPy scalar, so a re-evaluated body's `n + 1` is strong (a core issue, not the loop's).
    f = while_pytree
    check_vmap(
        f(*XF),
        jax.jit(f(*JX)),
        (np.stack([V3, -V3]),),  # predicate unbatched
        check_weak_type=False,
    )
    g = lambda lx, np_: (  # noqa: E731
        lambda x: lx.while_loop(lambda c: c[0] < 10, lambda c: (c[0] * 2, c[1] + 1.0), (x, 0.0))
    )
    check_vmap(g(*XF), jax.jit(g(*JX)), (np.array([1, 3, 11, 5], np.int32),), check_weak_type=False)
    h = lambda lx, np_: lambda n, x: lx.fori_loop(0, n, lambda i, c: c * 1.5 + i, x)  # noqa
    check_vmap(h(*XF), jax.jit(h(*JX)), (np.array([0, 2, 5], np.int32), V3), in_axes=(0, 0))
    check_vmap(h(*XF), jax.jit(h(*JX)), (np.array([0, 2, 5], np.int32), V3[0]), in_axes=(0, None))


def test_vmap_composes_with_grad():
    f = summed(scan_consts)
    got = xform.vmap(xform.grad(f(*XF)), (0, None))(np.stack([V3, V3 * 0.5]), XS)
    expected = jax.jit(jax.vmap(jax.grad(f(*JX)), (0, None)))(np.stack([V3, V3 * 0.5]), XS)
    assert_same(got, expected, 2e-5, 2e-5)
    got = xform.grad(lambda x: xform.vmap(f(*XF), (0, None))(x, XS).sum())(np.stack([V3, -V3]))
    expected = jax.jit(jax.grad(lambda x: jax.vmap(f(*JX), (0, None))(x, XS).sum()))(
        np.stack([V3, -V3])
    )
    assert_same(got, expected, 2e-5, 2e-5)


def test_compositions():
    def s2(lx, np_):
        return lambda x: lx.scan(lambda c, xi: (np_.sin(c * xi) + c, (c * xi).sum()), x, XS)[
            1
        ].sum()

    assert_same(xform.hessian(s2(*XF))(V3), jax.jit(jax.hessian(s2(*JX)))(V3), 1e-4, 1e-4)
    _, lin = xform.linearize(s2(*XF), V3)
    assert_same(lin(V3), jax.jit(lambda t: jax.jvp(s2(*JX), (V3,), (t,))[1])(V3), 2e-5, 2e-5)

    def w(lx, np_):  # a while loop with a batched predicate inside a scan
        def f(n, x):
            def body(c, _):
                d = lx.while_loop(lambda d: d[0] < n, lambda d: (d[0] + 1, d[1] * 1.1), (0, c))
                return d[1], c.sum()

            return lx.scan(body, x, None, length=3)

        return f

    ns = np.array([1, 2, 4], np.int32)
    check_vmap(w(*XF), jax.jit(w(*JX)), (ns, V3), in_axes=(0, None), check_weak_type=False)

    def js(lx, np_, jit):  # a jit call and an integer carry inside a scan body
        inner = jit(lambda c, x: np_.sin(c) * x)
        return lambda x: lx.scan(
            lambda c, xi: ((c[0] + 1, inner(c[1], xi) + c[0]), c[0] * 2), (0, x), XS
        )[0][1].sum()

    grad_both(lambda lx, np_: js(lx, np_, xform.jit if lx is lax else jax.jit), V3)


def test_nested_loops():
    def f(lx, np_):
        def inner(c, x):
            return lx.fori_loop(0, 3, lambda i, d: d * 0.5 + x, c), c

        return lambda xs: lx.scan(inner, np_.zeros(3, np_.float32), xs)

    both(f, XS)
    grad_both(summed(f), XS)


# --------------------------------------------------------------------------- bad input


def test_carry_type_errors():
    with pytest.raises(
        TypeError,
        match=r"scan body function carry input and carry output "
        r"must have equal types.*f32\[3\].*f32\[2\]",
    ):
        lax.scan(lambda c, x: (c[:2], x), V3, XS)
    with pytest.raises(
        TypeError,
        match=r"scan body function carry input and carry output "
        r"must have equal types.*i32\[\].*f32\[\]",
    ):
        lax.scan(lambda c, x: (c + 0.5 * x.sum().astype(np.float32), x), np.int32(0), XS)
    with pytest.raises(TypeError, match="must have the same pytree structure"):
        lax.scan(lambda c, x: ((c, c), x), V3, XS)
    with pytest.raises(
        TypeError,
        match=r"while_loop body_fun must have the same output type "
        r"as its input.*f32\[3\].*f32\[1\]",
    ):
        lax.while_loop(lambda c: True, lambda c: c[:1], V3)
    with pytest.raises(TypeError, match=r"cond_fun must return a boolean scalar.*f32\[\]"):
        lax.while_loop(lambda c: c.sum(), lambda c: c, V3)
    with pytest.raises(TypeError, match=r"fori_loop.*f32\[\].*i32\[\]"):
        lax.fori_loop(0.0, 3, lambda i, c: c, V3)
    with pytest.raises(TypeError, match=r"scan body output must be a pair"):
        lax.scan(lambda c, x: c, V3, XS)
    with pytest.raises(ValueError, match="different leading axis sizes"):
        lax.scan(lambda c, x: (c, x), V3, (XS, XS[:2]))
    with pytest.raises(ValueError, match="`length` argument of 3 which disagrees"):
        lax.scan(lambda c, x: (c, x), V3, XS, length=3)
    with pytest.raises(ValueError, match="`unroll` must be a `bool` or a non-negative `int`"):
        lax.scan(lambda c, x: (c, x), V3, XS, unroll=-1)  # 0 unrolls it all, as in JAX
    with pytest.raises(
        TypeError,
        match="while_loop body_fun carry input and carry output must "
        "have the same pytree structure",
    ):
        lax.while_loop(lambda c: True, lambda c: [c], V3)


def test_python_control_flow_on_a_traced_carry_raises():
    with pytest.raises(ConcretizationTypeError, match="while_loop"):
        lax.while_loop(lambda c: c < 3, lambda c: c + 1 if c > 0 else c, 0)
    with pytest.raises(ConcretizationTypeError, match="scan"):
        lax.scan(lambda c, x: (c if x.sum() > 0 else -c, x), V3, XS)


def test_vmapped_while_keeps_an_unmapped_weak_carry_weak_as_jax():
    def loop(lib):
        body = lambda c: (c[0] + 1, c[1] * 2.0)  # noqa: E731
        return lambda x: lib.lax.while_loop(lambda c: c[0] < 3, body, (0, x))

    x = np.ones(2, np.float32)
    got, expected = xform.vmap(loop(xform))(x), jax.vmap(loop(jax))(x)
    assert got[0].weak_type == expected[0].weak_type
    np.testing.assert_array_equal(got[0], expected[0])


def _while_lines(text):
    return [line.strip() for line in text.splitlines() if "stablehlo.while" in line]


def test_scan_carries_and_ys_nothing_reads_are_dropped_as_jax():
    # jit's dead-code pass slims a scan as JAX's: fori_loop's counter and the carries and ys
    # no result needs leave the loop (its while then carries what JAX's carries).
    a = np.arange(12, dtype=np.float32).reshape(4, 3)

    def fori(lib):
        return lambda a: lib.lax.fori_loop(0, 3, lambda k, c: c * 2.0, a)

    def partial(lib):
        def body(c, x):
            return (c[0] + x, c[1] * 2.0, c[2] + 1), (c[0] * x, x.sum())

        init = (np.zeros(3, np.float32), np.float32(1.0), np.int32(0))
        return lambda a: lib.lax.scan(body, init, a)[1][0]

    for make in (fori, partial):
        got, want = xform.jit(make(xform)), jax.jit(make(jax))
        assert _while_lines(got.lower(a).as_text()) == _while_lines(want.lower(a).as_text())
        np.testing.assert_array_equal(got(a), want(a))
        np.testing.assert_allclose(
            xform.grad(lambda a, f=got: f(a).sum())(a), jax.grad(lambda a, f=want: f(a).sum())(a)
        )


_WHILE_BODIES = {
    "jit": lambda lib: lib.jit(lambda x: x * x),
    "cond": lambda lib: lambda x: lib.lax.cond(x[0, 0] >= 0, lambda y: y * y, lambda y: y, x),
    "scan": lambda lib: lambda x: lib.lax.scan(lambda c, r: (c * r, c), x, x[None])[0] * x,
    "fori": lambda lib: lambda x: lib.lax.fori_loop(0, 2, lambda i, y: y * x, x),
}


@pytest.mark.parametrize("body", sorted(_WHILE_BODIES))
def test_linearize_of_while_whose_body_calls_a_program_as_jax(body):
    """A while body that calls jit, cond or scan: its primal carries stay known (the
    linearized primal output is a value, not a tracer left by the partial evaluator), and
    the tangents are JAX's."""

    def run(lib):
        loop = functools.partial(
            lib.lax.while_loop, lambda x: x[0, 2] <= 8, _WHILE_BODIES[body](lib)
        )
        x = np.arange(9.0, dtype=np.float32).reshape(3, 3) / 4 + 1  # (x[0, 2] grows)
        y, f_lin = lib.linearize(loop, x)
        return y, f_lin(x)

    (y, t), expected = run(xform), run(jax)
    assert type(y) is type(xform.numpy.zeros(1))
    np.testing.assert_allclose(y, expected[0], rtol=1e-5)
    np.testing.assert_allclose(t, expected[1], rtol=1e-5)
