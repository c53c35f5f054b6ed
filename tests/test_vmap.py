"""xform.vmap: in_axes/out_axes semantics, errors, and composition with jit, autodiff and
custom derivatives, against jax.vmap and Python loops."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import xform
import xform.numpy as xnp
from tests.harness import assert_same, check_vmap
from xform.errors import ConcretizationTypeError, UnexpectedTracerError
from xform.interpret import batching

RNG = np.random.default_rng(0)


def r(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


# --------------------------------------------------------------------------- in_axes / out_axes


@pytest.mark.parametrize("in_axes", [0, 1, -1, (0, None), (1, None), (None, 0), [0, 1]])
def test_in_axes(in_axes):
    x, y = r(3, 3), r(3, 3)
    if in_axes in ((0, None), (1, None)):
        y = r(3)
    if in_axes == (None, 0):
        x = r(3)
    check_vmap(
        lambda a, b: xnp.sin(a) * b + 1.0,
        lambda a, b: jnp.sin(a) * b + 1.0,
        (x, y),
        in_axes=tuple(in_axes) if isinstance(in_axes, list) else in_axes,
    )


@pytest.mark.parametrize("out_axes", [0, 1, -1, 2])
def test_out_axes(out_axes):
    x = r(4, 2, 3)
    check_vmap(lambda a: a * 2.0, lambda a: a * 2.0, (x,), in_axes=0, out_axes=out_axes)


def test_pytree_in_axes_prefix_and_kwargs():
    params = {"w": r(3), "b": r(5)}
    xs = r(5, 3)

    def f(lib):
        return lambda p, x, scale=1.0: (lib.sin(p["w"] * x) * scale, p["b"] * 2.0)

    in_axes = ({"w": None, "b": 0}, 0)
    got = xform.vmap(f(xnp), in_axes=in_axes)(params, xs, scale=np.ones(5, np.float32) * 3)
    expected = jax.vmap(f(jnp), in_axes=in_axes)(params, xs, scale=np.ones(5, np.float32) * 3)
    assert_same(got, expected)


def test_out_axes_pytree_and_none():
    x, c = r(4, 3), r(3)
    fx = lambda a, b: {"y": xnp.cos(a), "c": b * 2.0}  # noqa: E731
    fj = lambda a, b: {"y": jnp.cos(a), "c": b * 2.0}  # noqa: E731
    out_axes = {"y": 1, "c": None}
    got = xform.vmap(fx, in_axes=(0, None), out_axes=out_axes)(x, c)
    expected = jax.vmap(fj, in_axes=(0, None), out_axes=out_axes)(x, c)
    assert_same(got, expected)


def test_axis_size_without_mapped_inputs():
    got = xform.vmap(lambda a: a + 1.0, in_axes=None, axis_size=4)(r(3))
    assert got.shape == (4, 3)
    got = xform.vmap(lambda: xnp.ones(2), in_axes=(), axis_size=3)()
    assert_same(got, jnp.ones((3, 2)))


def test_unmapped_output_is_broadcast():
    x, c = r(5, 3), r(3)
    check_vmap(
        lambda a, b: (a * 2.0, b + 1.0),
        lambda a, b: (a * 2.0, b + 1.0),
        (x, c),
        in_axes=(0, None),
        out_axes=(0, 1),
    )


def test_unbatched_values_stay_unbatched_in_the_program():
    # b + 1.0 does not depend on the mapped argument: it is computed once, at its own shape.
    jaxpr = xform.make_jaxpr(
        xform.vmap(lambda a, b: (a * 2.0, xnp.sin(b)), in_axes=(0, None), out_axes=(0, None))
    )(r(5, 3), r(3))
    text = str(jaxpr)
    assert "sin b:f32[3]" in text.replace("\n", " ") or "f32[3] = sin" in text
    assert "broadcast_in_dim" not in text


def test_nested_vmap_with_different_axes():
    x, y = r(3, 4, 2), r(2, 4)
    fx = xform.vmap(xform.vmap(lambda a, b: a * b, in_axes=(0, None)), in_axes=(2, 0))
    fj = jax.vmap(jax.vmap(lambda a, b: a * b, in_axes=(0, None)), in_axes=(2, 0))
    assert_same(fx(x, y), fj(x, y))


def test_inner_vmap_closes_over_outer_batched_value():
    xs, ys = r(3), r(4)
    got = xform.vmap(lambda x: xform.vmap(lambda y: xnp.sin(x) * y)(ys))(xs)
    expected = jax.vmap(lambda x: jax.vmap(lambda y: jnp.sin(x) * y)(ys))(xs)
    assert_same(got, expected)


# --------------------------------------------------------------------------- composition


def test_vmap_of_jit_is_cached_and_staged_as_one_call():
    f = xform.jit(lambda a, b: xnp.exp(a) * b)
    x, y = r(6, 3), r(3)
    check_vmap(f, lambda a, b: jnp.exp(a) * b, (x, y), in_axes=(0, None), loop=False)
    n_cached = len(batching._batched_jaxprs)
    xform.vmap(f, in_axes=(0, None))(x, y)
    assert len(batching._batched_jaxprs) == n_cached
    jaxpr = xform.make_jaxpr(xform.vmap(f, in_axes=(0, None)))(x, y)
    assert [e.primitive.name for e in jaxpr.eqns] == ["jit"]
    assert jaxpr.eqns[0].params["name"] == "<lambda>"  # the batched body keeps it, as JAX's


def test_jit_of_vmap():
    x = r(5, 3)
    got = xform.jit(xform.vmap(lambda a: xnp.tanh(a) * a))(x)
    assert_same(got, jax.vmap(lambda a: jnp.tanh(a) * a)(x))


def _loss(lib):
    def loss(w, x, y):
        pred = lib.tanh(lib.dot(x, w))
        return lib.sum((pred - y) ** 2)

    return loss


def test_per_example_gradients():
    w, xs, ys = r(3), r(8, 3), r(8)
    got = xform.vmap(xform.grad(_loss(xnp)), in_axes=(None, 0, 0))(w, xs, ys)
    expected = jax.vmap(jax.grad(_loss(jnp)), in_axes=(None, 0, 0))(w, xs, ys)
    # float32 tanh and its derivative may differ by tens of ulps from JAX's where the
    # gradient nearly cancels (the data depends on which tests ran first): an absolute 1e-5
    assert_same(got, expected, rtol=1e-5, atol=1e-5)
    got = xform.jit(xform.vmap(xform.grad(_loss(xnp)), in_axes=(None, 0, 0)))(w, xs, ys)
    assert_same(got, expected, rtol=1e-5, atol=1e-6)


def test_grad_of_vmap():
    w, xs, ys = r(3), r(8, 3), r(8)

    def total(lib, vmap, w):
        return lib.sum(vmap(_loss(lib), in_axes=(None, 0, 0))(w, xs, ys))

    got = xform.grad(lambda w: total(xnp, xform.vmap, w))(w)
    expected = jax.grad(lambda w: total(jnp, jax.vmap, w))(w)
    assert_same(got, expected, rtol=1e-5, atol=1e-6)


def test_jvp_and_vjp_of_vmap_and_vmap_of_jvp():
    x, t = r(4, 3), r(4, 3)
    got = xform.jvp(xform.vmap(xnp.sin), (x,), (t,))
    expected = jax.jvp(jax.vmap(jnp.sin), (x,), (t,))
    assert_same(got, expected)
    got = xform.vmap(lambda a, b: xform.jvp(xnp.sin, (a,), (b,)))(x, t)
    assert_same(got, expected)
    out, pullback = xform.vjp(xform.vmap(lambda a: xnp.sin(a) * 2.0), x)
    assert_same(pullback(t), jax.vjp(jax.vmap(lambda a: jnp.sin(a) * 2.0), x)[1](t))


def test_vmap_of_second_derivative():
    x = r(4)
    got = xform.vmap(xform.grad(xform.grad(lambda a: xnp.sin(a) * a)))(x)
    expected = jax.vmap(jax.grad(jax.grad(lambda a: jnp.sin(a) * a)))(x)
    assert_same(got, expected, rtol=1e-5, atol=1e-6)


def _custom_sin(lib, custom_jvp):
    @custom_jvp
    def f(x):
        return lib.sin(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return f(x), 2.0 * lib.cos(x) * t

    return f


def _custom_vjp_sin(lib, custom_vjp):
    @custom_vjp
    def f(x, y):
        return lib.sin(x) * y

    def fwd(x, y):
        return f(x, y), (x, y)

    def bwd(res, ct):
        x, y = res
        return 3.0 * lib.cos(x) * y * ct, lib.sin(x) * ct

    f.defvjp(fwd, bwd)
    return f


def test_vmap_of_custom_jvp():
    x = r(5)
    fx, fj = _custom_sin(xnp, xform.custom_jvp), _custom_sin(jnp, jax.custom_jvp)
    assert_same(xform.vmap(fx)(x), jax.vmap(fj)(x))
    assert_same(xform.vmap(xform.grad(fx))(x), jax.vmap(jax.grad(fj))(x))
    assert_same(
        xform.grad(lambda a: xnp.sum(xform.vmap(fx)(a)))(x),
        jax.grad(lambda a: jnp.sum(jax.vmap(fj)(a)))(x),
    )
    assert_same(xform.jit(xform.vmap(xform.grad(fx)))(x), jax.vmap(jax.grad(fj))(x))


@pytest.mark.parametrize("in_axes", [(0, 0), (0, None), (None, 0)])
def test_vmap_of_custom_vjp(in_axes):
    x, y = r(5), r(5)
    if in_axes[0] is None:
        x = np.float32(0.7)
    if in_axes[1] is None:
        y = np.float32(1.5)
    fx, fj = _custom_vjp_sin(xnp, xform.custom_vjp), _custom_vjp_sin(jnp, jax.custom_vjp)
    assert_same(xform.vmap(fx, in_axes)(x, y), jax.vmap(fj, in_axes)(x, y))
    gx = xform.vmap(xform.grad(fx, argnums=(0, 1)), in_axes)(x, y)
    gj = jax.vmap(jax.grad(fj, argnums=(0, 1)), in_axes)(x, y)
    assert_same(gx, gj, rtol=1e-6, atol=1e-6)
    tx = xform.grad(lambda a, b: xnp.sum(xform.vmap(fx, in_axes)(a, b)), argnums=(0, 1))(x, y)
    tj = jax.grad(lambda a, b: jnp.sum(jax.vmap(fj, in_axes)(a, b)), argnums=(0, 1))(x, y)
    assert_same(tx, tj, rtol=1e-6, atol=1e-6)


def test_stop_gradient_under_vmap():
    x = r(4)
    f = lambda lib, sg: lambda a: lib.sin(a) * sg(a)  # noqa: E731
    assert_same(
        xform.vmap(xform.grad(f(xnp, xform.lax.stop_gradient)))(x),
        jax.vmap(jax.grad(f(jnp, jax.lax.stop_gradient)))(x),
    )


# --------------------------------------------------------------------------- errors


def test_inconsistent_sizes_name_each_argument():
    with pytest.raises(
        ValueError,
        match=r"inconsistent sizes(.|\n)*argument a of type "
        r"f32\[3\] has size 3(.|\n)*argument b of type "
        r"f32\[4\] has size 4",
    ):
        xform.vmap(lambda a, b: a + b)(r(3), r(4))


def test_in_axes_errors():
    with pytest.raises(ValueError, match=r"len\(in_axes\)=1, len\(args\)=2"):
        xform.vmap(lambda a, b: a, in_axes=(0,))(r(3), r(3))
    with pytest.raises(ValueError, match="at least 3, but is only 1"):
        xform.vmap(lambda a: a, in_axes=2)(r(3))
    with pytest.raises(ValueError, match="at least one non-None value in in_axes"):
        xform.vmap(lambda a: a, in_axes=None)(r(3))
    with pytest.raises(TypeError, match="in_axes must be an int, None, or a tuple"):
        xform.vmap(lambda a: a, in_axes={"a": 0})(r(3))
    with pytest.raises(TypeError, match="in_axes must be an int, None, or a tuple"):
        xform.vmap(lambda a: a, in_axes=0.5)(r(3))
    with pytest.raises(ValueError, match="in_axes specification must be a tree prefix"):
        xform.vmap(lambda p: p["w"], in_axes=({"v": 0},))({"w": r(3)})
    with pytest.raises(TypeError, match="in_axes must be an int, None"):
        xform.vmap(lambda p: p["w"], in_axes=({"w": "zero"},))({"w": r(3)})


def test_out_axes_errors():
    # A mapped output whose out axis is None: JAX's words, with its place in out_axes.
    for fun, out_axes in [(lambda a: a, None), (lambda a: (a, {"k": a}), (0, {"k": None}))]:
        with pytest.raises(ValueError) as want:
            jax.vmap(fun, out_axes=out_axes)(np.ones(3, np.float32))
        with pytest.raises(ValueError, match="at vmap out_axes") as got:
            xform.vmap(fun, out_axes=out_axes)(r(3))
        assert str(got.value) == str(want.value)
    with pytest.raises(ValueError, match="out_axes specification must be a tree prefix"):
        xform.vmap(lambda a: (a, a), out_axes=(0, 1, 2))(r(3))
    with pytest.raises(ValueError, match="out of bounds for output 0"):
        xform.vmap(lambda a: a, out_axes=3)(r(3, 2))


def test_python_control_flow_on_mapped_value_is_a_concretization_error():
    def f(a):
        return a if a > 0 else -a

    with pytest.raises(ConcretizationTypeError, match="while vectorizing with vmap"):
        xform.vmap(f)(r(3))


def test_leaked_batch_tracer():
    leaked = []

    def f(a):
        leaked.append(a)
        return a * 2.0

    xform.vmap(f)(r(3))
    with pytest.raises(UnexpectedTracerError):
        xform.jit(lambda b: b + leaked[0])(np.float32(1))
