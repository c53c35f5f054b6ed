"""xform.export against jax.export: the exported attributes and module, calling (eagerly,
under jit, grad and vmap), serialization both ways between xform and JAX, symbolic shapes
and multi-platform modules, and the errors for bad input."""

import collections
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import xform
import xform.numpy as xnp
from tests.harness import assert_same
from xform import export as xe

# Public names of jax.export that xform.export does not have, and why.
NOT_PROVIDED = {}

X = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
Y = np.linspace(0.5, 2, 3, dtype=np.float32)


def _f_xform(x, y, unused):
    return xnp.sin(x) * y, {"s": (x * y).sum()}


def _f_jax(x, y, unused):
    return jnp.sin(x) * y, {"s": (x * y).sum()}


def _loss_xform(e):
    return lambda x, y: e.call(x, y, 0)[1]["s"] + e.call(x, y, 0)[0].sum()


def _loss_jax(f):
    return lambda x, y: f(x, y, 0)[1]["s"] + f(x, y, 0)[0].sum()


@pytest.fixture(scope="module")
def exported():
    """The same function exported by xform and by JAX, for (array, ShapeDtypeStruct, int)."""
    args_x = (X, xform.ShapeDtypeStruct((3,), np.float32), np.int32(0))
    args_j = (X, jax.ShapeDtypeStruct((3,), np.float32), np.int32(0))
    return (xe.export(xform.jit(_f_xform))(*args_x), jax.export.export(jax.jit(_f_jax))(*args_j))


def test_every_public_name_of_jax_export():
    names = {n for n in dir(jax.export) if not n.startswith("_")}
    missing = {n for n in names if not hasattr(xe, n)} - set(NOT_PROVIDED)
    assert not missing, f"xform.export lacks {sorted(missing)}"
    assert xe.default_export_platform() == jax.export.default_export_platform()
    assert (
        xe.minimum_supported_calling_convention_version,
        xe.maximum_supported_calling_convention_version,
    ) == (
        jax.export.minimum_supported_calling_convention_version,
        jax.export.maximum_supported_calling_convention_version,
    )


def test_attributes_and_module_follow_jax(exported):
    ex, ej = exported
    assert (ex.fun_name, ej.fun_name) == ("_f_xform", "_f_jax")
    assert ex.in_tree == ej.in_tree and ex.out_tree == ej.out_tree
    for got, want in zip(ex.in_avals + ex.out_avals, ej.in_avals + ej.out_avals, strict=True):
        assert (got.shape, got.dtype) == (want.shape, want.dtype)
    for name in (
        "nr_devices",
        "platforms",
        "calling_convention_version",
        "module_kept_var_idx",
        "uses_global_constants",
        "in_shardings_hlo",
        "out_shardings_hlo",
        "ordered_effects",
        "unordered_effects",
        "disabled_safety_checks",
    ):
        assert getattr(ex, name) == getattr(ej, name), name
    assert ex.module_kept_var_idx == (0, 1)  # the unused argument is dropped, as in JAX
    assert ex.in_shardings_jax(None) == (None, None, None)
    text_x, text_j = ex.mlir_module(), ej.mlir_module()
    info = re.compile(r'jax\.result_info = "[^"]*"')
    assert (
        info.findall(text_x)
        == info.findall(text_j)
        == ['jax.result_info = "result[0]"', "jax.result_info = \"result[1]['s']\""]
    )
    assert "jax.uses_shape_polymorphism = false" in text_x
    assert re.search(
        r"func\.func public @main\(%arg0: tensor<2x3xf32>, %arg1: tensor<3xf32>\)", text_x
    )


def test_call_eagerly_under_jit_and_grad(exported):
    ex, ej = exported
    want = jax.jit(_f_jax)(X, Y, 0)
    assert_same(ex.call(X, Y, 0), want, check_weak_type=False)
    assert_same(xform.jit(ex.call)(X, Y, 0), want, check_weak_type=False)
    grad_want = jax.grad(_loss_jax(_f_jax), argnums=(0, 1))(X, Y)
    assert_same(xform.grad(_loss_xform(ex), argnums=(0, 1))(X, Y), grad_want)
    # The exported VJP: flat primals then output cotangents in, input cotangents out.
    vx, vj = ex.vjp(), ej.vjp()
    assert [(a.shape, a.dtype) for a in vx.in_avals] == [(a.shape, a.dtype) for a in vj.in_avals]
    assert [a.shape for a in vx.out_avals] == [a.shape for a in vj.out_avals]


def test_xform_bytes_run_in_jax(exported):
    ex, _ = exported
    blob = ex.serialize(vjp_order=1)
    ej = jax.export.deserialize(bytearray(blob))
    assert ej.platforms == ex.platforms and ej.in_tree == ex.in_tree
    assert_same(ej.call(X, Y, 0), jax.jit(_f_jax)(X, Y, 0))
    assert_same(
        jax.grad(_loss_jax(ej.call), argnums=(0, 1))(X, Y),
        jax.grad(_loss_jax(_f_jax), argnums=(0, 1))(X, Y),
    )
    # ... and in xform again, with the same fields.
    back = xe.deserialize(blob)
    assert back.in_avals == ex.in_avals and back.out_tree == ex.out_tree and back.has_vjp()
    assert_same(back.call(X, Y, 0), jax.jit(_f_jax)(X, Y, 0), check_weak_type=False)


def test_jax_bytes_run_in_xform(exported):
    _, ej = exported
    ex = xe.deserialize(ej.serialize(vjp_order=1))
    want = jax.jit(_f_jax)(X, Y, 0)
    assert_same(ex.call(X, Y, 0), want, check_weak_type=False)
    assert_same(xform.jit(ex.call)(X, Y, 0), want, check_weak_type=False)
    assert_same(
        xform.grad(_loss_xform(ex), argnums=(0, 1))(X, Y),
        jax.grad(_loss_jax(_f_jax), argnums=(0, 1))(X, Y),
    )
    assert_same(xform.jit(xform.grad(_loss_xform(ex)))(X, Y), jax.grad(_loss_jax(_f_jax))(X, Y))
    no_vjp = xe.deserialize(ej.serialize())
    with pytest.raises(ValueError, match="No VJP is available"):
        xform.grad(_loss_xform(no_vjp))(X, Y)


def test_second_order_with_integer_inputs_and_outputs():
    def fx(x, n):
        return x * xnp.sin(x), xnp.argmax(x), n

    def fj(x, n):
        return x * jnp.sin(x), jnp.argmax(x), n

    def hess_diag(grad, call):
        return grad(lambda x: grad(lambda x: call(x, 1)[0].sum())(x).sum())(Y)

    want = hess_diag(jax.grad, fj)
    ex = xe.export(xform.jit(fx))(Y, np.int32(1))
    vjp = ex.vjp()  # an integer's cotangent is float0, as in JAX
    assert [a.dtype for a in vjp.in_avals][3:] == [jax.dtypes.float0] * 2
    assert vjp.out_avals[1].dtype == jax.dtypes.float0
    ej = jax.export.deserialize(bytearray(ex.serialize(vjp_order=2)))
    assert_same(hess_diag(jax.grad, ej.call), want)
    back = xe.deserialize(jax.export.export(jax.jit(fj))(Y, np.int32(1)).serialize(vjp_order=2))
    assert_same(hess_diag(xform.grad, back.call), want)


def test_call_a_shape_polymorphic_jax_module():
    def f(x, y):
        return jnp.tanh(x) * y + x.shape[0], jnp.concatenate([x, x]).sum(axis=1)

    specs = jax.export.symbolic_args_specs((X, Y), ("b, 3", "3"))
    ej = jax.export.export(jax.jit(f))(*specs)
    ex = xe.deserialize(ej.serialize(vjp_order=1))
    assert [str(a.shape) for a in ex.in_avals] == ["(b, 3)", "(3,)"]
    assert str(ex.out_avals[1].shape) == "(2*b,)" and ex.uses_global_constants
    for x in (X, np.ones((5, 3), np.float32)):
        assert_same(ex.call(x, Y), jax.jit(f)(x, Y), check_weak_type=False)
        assert_same(xform.jit(ex.call)(x, Y), jax.jit(f)(x, Y), check_weak_type=False)
    assert_same(
        xform.grad(lambda x: ex.call(x, Y)[0].sum())(X), jax.grad(lambda x: f(x, Y)[0].sum())(X)
    )
    with pytest.raises(ValueError, match=r"Shape mismatch for args\[1\]\.shape\[0\]"):
        ex.call(X, np.ones(4, np.float32))

    same_b = jax.export.export(jax.jit(lambda a, b: a + b))(
        *jax.export.symbolic_args_specs((Y, Y), "b")
    )
    with pytest.raises(ValueError, match="inconsistency"):
        xe.deserialize(same_b.serialize()).call(Y, np.ones(4, np.float32))


def test_multi_platform_both_ways():
    def f(x):
        return xnp.cos(x) * 2

    ex = xe.export(xform.jit(f), platforms=("cpu", "cuda"))(X)
    assert ex.platforms == ("cpu", "cuda") and ex.uses_global_constants
    text = ex.mlir_module()
    assert 'jax.global_constant = "_platform_index"' in text
    assert "jax.uses_shape_polymorphism = true" in text
    want = np.cos(X) * 2
    np.testing.assert_allclose(jax.export.deserialize(ex.serialize()).call(X), want, rtol=1e-6)
    np.testing.assert_allclose(ex.call(X), want, rtol=1e-6)

    def g(x):  # a LAPACK kernel on CPU, cuSOLVER on GPU: one case branch per platform
        return jnp.linalg.cholesky(x @ x.T + 3 * jnp.eye(2))

    ej = jax.export.export(jax.jit(g), platforms=("cuda", "cpu"))(X)
    got = xform.jit(xe.deserialize(ej.serialize()).call)(X)
    assert_same(got, jax.jit(g)(X), check_weak_type=False)
    # xform lowers for the platform it runs on: a kernel call cannot serve another one.
    with pytest.raises(NotImplementedError, match="calls kernels of"):
        xe.export(xform.jit(lambda x: xnp.linalg.cholesky(x @ x.T)), platforms=("cpu", "cuda"))(X)


def test_static_arguments_and_keywords():
    def f(x, n, *, k, y):
        return x * n + k * y

    ex = xe.export(xform.jit(f, static_argnums=1, static_argnames="k"))(Y, 3, k=2.0, y=Y)
    ej = jax.export.export(jax.jit(f, static_argnums=1, static_argnames="k"))(Y, 3, k=2.0, y=Y)
    assert ex.in_tree == ej.in_tree  # the static arguments are baked in
    assert_same(ex.call(Y, y=Y + 1), ej.call(Y, y=Y + 1), check_weak_type=False)
    assert_same(xform.grad(lambda y: ex.call(Y, y=y).sum())(Y), 2 * np.ones(3, np.float32))
    with pytest.raises(
        ValueError,
        match="args is a tuple of length 2 in the invocation and a "
        "tuple of length 1 when exported, so the lengths do "
        "not match",
    ):
        ex.call(Y, 3, y=Y)


Pair = collections.namedtuple("Pair", ["a", "b"])
xe.register_namedtuple_serialization(Pair, serialized_name="test_export.Pair")
jax.export.register_namedtuple_serialization(Pair, serialized_name="test_export.Pair")


def test_custom_pytrees_and_safety_checks():
    ex = xe.export(xform.jit(lambda p: Pair(p.b, p.a * 2)))(Pair(Y, Y))
    blob = ex.serialize()
    for e in (xe.deserialize(blob), jax.export.deserialize(bytearray(blob))):
        out = e.call(Pair(Y, Y + 1))
        assert type(out) is Pair
        np.testing.assert_allclose(out.a, Y + 1)
    with pytest.raises(ValueError, match="Duplicate serialization registration"):
        xe.register_namedtuple_serialization(Pair, serialized_name="other")

    # A custom call without compatibility guarantees needs an explicit DisabledSafetyCheck.
    def cb(x):
        return xform.pure_callback(np.sin, xform.ShapeDtypeStruct((3,), np.float32), x)

    with pytest.raises(ValueError, match="custom calls whose targets have no compatibility"):
        xe.export(xform.jit(cb))(Y)
    allow = xe.DisabledSafetyCheck.custom_call("ALL")
    assert xe.export(xform.jit(cb), disabled_checks=[allow])(Y).disabled_safety_checks == (allow,)
    # DisabledSafetyCheck.platform() lets a module exported for another platform run.
    other = xe.export(
        xform.jit(lambda x: x + 1),
        platforms=("tpu",),
        disabled_checks=[xe.DisabledSafetyCheck.platform()],
    )(Y)
    np.testing.assert_allclose(xe.deserialize(other.serialize()).call(Y), Y + 1)


def test_symbolic_shapes_match_jax():
    for spec in ("b, 784", "(b, 2*b + 1, floordiv(b, 2))", "b - 1, max(a, b)", "(3,)"):
        got, want = xe.symbolic_shape(spec), jax.export.symbolic_shape(spec)
        assert [str(d) for d in got] == [str(d) for d in want], spec
        assert [xe.is_symbolic_dim(d) for d in got] == [jax.export.is_symbolic_dim(d) for d in want]
    b = xe.symbolic_shape("b")[0]
    assert [str(e) for e in (2 * b, b + 1, b - 1, b // 2)] == [
        "2*b",
        "b + 1",
        "b - 1",
        "floordiv(b, 2)",
    ]
    with pytest.raises(ValueError, match="Invalid mixing of symbolic scopes"):
        b + xe.symbolic_shape("c")[0]
    assert xe.symbolic_shape("_, c", like=(3, None))[0] == 3
    specs = xe.symbolic_args_specs((X, {"y": Y}), ("b, _", {"y": None}))
    assert str(specs[0].shape) == "(b, 3)" and specs[1]["y"].shape == (3,)
    scope = xe.SymbolicScope(["b >= 2"])
    assert xe.symbolic_shape("b", scope=scope)[0] == xe.symbolic_shape("b", scope=scope)[0]
    with pytest.raises(ValueError, match="syntax error in symbolic shape"):
        xe.symbolic_shape("b +* 2")
    with pytest.raises(ValueError, match="Cannot specify both a `scope` and `constraints`"):
        xe.symbolic_shape("b", constraints=["b >= 2"], scope=scope)


def _mlp(nn, np_):
    def mlp(params, x):
        (w1, b1), (w2, b2) = params
        h = np_.tanh(x @ w1 + b1)
        logits = h @ w2 + b2
        return (
            np_.mean(nn.log_softmax(logits), axis=0),
            nn.logsumexp(logits, axis=1),
            np_.concatenate([h, np_.maximum(h, 0.0)], axis=1).T,
        )

    return mlp


@pytest.fixture(scope="module")
def mlp_exports():
    """An MLP exported by xform and by JAX for a symbolic batch size ``b``."""
    rng = np.random.default_rng(0)
    params = [
        (rng.normal(size=(4, 8)).astype(np.float32), np.zeros(8, np.float32)),
        (rng.normal(size=(8, 3)).astype(np.float32), np.ones(3, np.float32)),
    ]
    specs = dict(params=None, x="b, 4")
    ex = xe.export(xform.jit(_mlp(xform.nn, xnp)))(
        *xe.symbolic_args_specs((params, np.zeros((2, 4), np.float32)), tuple(specs.values()))
    )
    ej = jax.export.export(jax.jit(_mlp(jax.nn, jnp)))(
        *jax.export.symbolic_args_specs(
            (params, np.zeros((2, 4), np.float32)), tuple(specs.values())
        )
    )
    xs = [rng.normal(size=(n, 4)).astype(np.float32) for n in (2, 5)]
    return params, ex, ej, xs


def test_export_symbolic_batch_module_follows_jax(mlp_exports):
    _, ex, ej, _ = mlp_exports

    def shapes(avals):
        return [(str(a.shape), a.dtype) for a in avals]

    assert shapes(ex.in_avals) == shapes(ej.in_avals)
    assert shapes(ex.out_avals[:2]) == shapes(ej.out_avals[:2])
    assert ex.uses_global_constants == ej.uses_global_constants
    assert ex.calling_convention_version == ej.calling_convention_version
    text = ex.mlir_module()
    for piece in (
        "tensor<?x4xf32>",
        "stablehlo.get_dimension_size",
        "@shape_assertion",
        'jax.global_constant = "b"',
        "@_wrapped_jax_export_main",
        "stablehlo.dynamic_broadcast_in_dim",
    ):
        assert piece in text and piece in ej.mlir_module(), piece


def test_export_symbolic_batch_xform_to_jax_and_xform(mlp_exports):
    params, ex, ej, xs = mlp_exports
    blob = ex.serialize(vjp_order=1)
    in_jax, in_xform = jax.export.deserialize(blob), xe.deserialize(blob)
    assert repr(in_xform.in_avals[-1]) == "ShapedArray(float32[b,4])"

    def loss(call):
        return lambda p, x: call(p, x)[1].sum()

    for x in xs:  # two batch sizes, one program
        want = ej.call(params, x)
        assert_same(in_jax.call(params, x), want, rtol=1e-5, atol=1e-6)
        assert_same(in_xform.call(params, x), want, rtol=1e-5, atol=1e-6)
        assert_same(xform.jit(in_xform.call)(params, x), want, rtol=1e-5, atol=1e-6)
        want_grad = jax.grad(loss(ej.call))(params, x)
        assert_same(jax.grad(loss(in_jax.call))(params, x), want_grad, rtol=1e-5, atol=1e-6)
        assert_same(xform.grad(loss(in_xform.call))(params, x), want_grad, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match=r"Shape mismatch for args\[1\]\.shape\[1\]"):
        in_xform.call(params, np.ones((2, 5), np.float32))


def test_export_symbolic_unsupported_and_inconclusive():
    spec = xe.symbolic_args_specs((X,), "b, 3")
    with pytest.raises(
        NotImplementedError, match="'cumsum' is not supported with a symbolic dimension"
    ):
        xe.export(xform.jit(lambda x: xnp.cumsum(x, axis=0)))(*spec)
    with pytest.raises(NotImplementedError, match="may be empty; declare a bound"):
        xe.export(xform.jit(lambda x: x[2:]))(*spec)

    def f(np_):
        return lambda x: x[:2] if x.shape[0] >= 2 else x

    with pytest.raises(jax.errors.InconclusiveDimensionOperation):
        jax.export.export(jax.jit(f(jnp)))(*jax.export.symbolic_args_specs((X,), "b, 3"))
    with pytest.raises(jax.errors.InconclusiveDimensionOperation, match="'b' >= '2'"):
        xe.export(xform.jit(f(xnp)))(*spec)
    b = spec[0].shape[0]
    assert b >= 1 and b + 1 > b and not b < 1 and 2 * b >= b
    # A scope's constraint decides what the default bound (>= 1) leaves open, as in JAX.
    for module in (xe, jax.export):
        c = module.symbolic_shape("c", constraints=["c >= 2"])[0]
        assert c >= 2 and c > 1 and not c < 2


def test_vmap_of_call_loops_over_the_batch(exported):
    # JAX has no batching rule for an exported call; xform's maps the program over the
    # batch, under jit and grad too (JAX's own function, vmapped, is the oracle).
    ex, ej = exported
    ys = np.stack([Y, 2 * Y, -Y, Y + 1])
    for f in (
        xform.vmap(lambda y: ex.call(X, y, 0)),
        xform.jit(xform.vmap(lambda y: ex.call(X, y, 0))),
    ):
        assert_same(f(ys), jax.vmap(lambda y: _f_jax(X, y, 0))(ys), rtol=1e-6)
    xs = np.stack([X, X * 0.5])
    got = xform.vmap(ex.call, in_axes=(0, 1, None))(xs, ys[:2].T, 0)
    assert_same(got, jax.vmap(_f_jax, in_axes=(0, 1, None))(xs, ys[:2].T, 0), rtol=1e-6)
    grad = xform.grad(lambda y: xform.vmap(lambda x: _loss_xform(ex)(x, y))(xs).sum())(Y)
    want = jax.grad(lambda y: jax.vmap(lambda x: _loss_jax(_f_jax)(x, y))(xs).sum())(Y)
    assert_same(grad, want, rtol=1e-5)


def test_bad_calls_raise_jax_errors(exported):
    ex, ej = exported
    for e in (ex, xe.deserialize(ej.serialize())):
        with pytest.raises(
            ValueError,
            match=r"Shape mismatch for args\[0\]\.shape\[0\] "
            r"\(expected same constant\)",
        ):
            e.call(np.ones((4, 3), np.float32), Y, 0)
        with pytest.raises(
            ValueError,
            match=r"Dtype mismatch for args\[1\]: expected "
            "float32 and called with int32",
        ):
            e.call(X, Y.astype(np.int32), 0)
        with pytest.raises(ValueError, match=r"Rank mismatch for args\[1\]"):
            xform.jit(e.call)(X, X, 0)
        with pytest.raises(ValueError, match="must have the same pytree structure"):
            e.call(X, Y)
    with pytest.raises(TypeError, match="can't apply forward-mode autodiff"):
        xform.jvp(lambda x: ex.call(x, Y, 0)[0], (X,), (X,))
    tpu_only = xe.export(xform.jit(xnp.sin), platforms=("tpu",))(Y)
    with pytest.raises(
        ValueError,
        match=r"was exported for platforms '\('tpu',\)' but it "
        r"is used on '\('(cpu|cuda|rocm)',\)'",
    ):
        tpu_only.call(Y)
    with pytest.raises(ValueError, match="must be the result of `jit`"):
        xe.export(xnp.sin)(Y)


def test_deserialize_rejects_bad_bytes(exported, monkeypatch):
    for blob in (b"", b"garbage", bytes(64)):
        with pytest.raises(
            ValueError, match="not a serialized Exported: expected JAX's flatbuffer format"
        ):
            xe.deserialize(blob)
    ex, _ = exported
    with monkeypatch.context() as m:
        m.setattr(xe._serialization, "_WRITTEN_SERIALIZATION_VERSION", 99)
        newer = ex.serialize()
    with pytest.raises(
        ValueError, match="unsupported serialization version 99; xform reads versions 1 to 11"
    ):
        xe.deserialize(newer)
    future = xe.Exported(**{**_fields(ex), "calling_convention_version": 99})
    with pytest.raises(
        ValueError,
        match="unsupported calling convention version 99; xform supports versions 9 to 10",
    ):
        xe.deserialize(future.serialize())


def _fields(e):
    names = (
        "fun_name",
        "in_tree",
        "in_avals",
        "out_tree",
        "out_avals",
        "nr_devices",
        "platforms",
        "ordered_effects",
        "unordered_effects",
        "disabled_safety_checks",
        "mlir_module_serialized",
        "calling_convention_version",
        "module_kept_var_idx",
        "uses_global_constants",
    )
    return {n: getattr(e, n) for n in names}


def test_export_symbolic_sizes_as_values_reshape_and_iota():
    def f(np_):
        def fun(x, z):
            b = x.shape[0]
            return (
                x * np_.arange(b)[:, None] + b,
                np_.zeros((b, 2)),
                x[:, 0],
                z.reshape(2, -1).sum(axis=0),
                np_.mean(z),
            )

        return fun

    shapes = ("b, 3", "2*b")
    args = (np.zeros((2, 3), np.float32), np.zeros(4, np.float32))
    ex = xe.export(xform.jit(f(xnp)))(*xe.symbolic_args_specs(args, shapes))
    ej = jax.export.export(jax.jit(f(jnp)))(*jax.export.symbolic_args_specs(args, shapes))
    assert [str(a.shape) for a in ex.out_avals] == [str(a.shape) for a in ej.out_avals]
    in_jax = jax.export.deserialize(ex.serialize())
    for n in (1, 4):
        x = np.linspace(-1, 1, 3 * n, dtype=np.float32).reshape(n, 3)
        z = np.linspace(0, 1, 2 * n, dtype=np.float32)
        assert_same(in_jax.call(x, z), ej.call(x, z))
        assert_same(ex.call(x, z), ej.call(x, z))
    with pytest.raises(ValueError, match="inconsistency"):
        ex.call(x, np.ones(3, np.float32))


def test_export_symbolic_batch_cnn():
    # A small CNN for any batch size: convolution, max pooling, flattening per example,
    # argmax, sort and slices along the batch, exported by xform and run by JAX.
    rng = np.random.default_rng(1)
    kernel = rng.normal(size=(4, 3, 3, 3)).astype(np.float32)
    dense = rng.normal(size=(64, 5)).astype(np.float32)

    def f(lib, np_):
        def cnn(x):
            h = lib.nn.relu(lib.lax.conv(x, kernel, (1, 1), "SAME"))
            h = lib.lax.reduce_window(h, -np.inf, lib.lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")
            logits = h.reshape(h.shape[0], -1) @ dense
            return (np_.argmax(logits, axis=1), np_.sort(logits, axis=0), logits[1:] - logits[:-1])

        return cnn

    args = (np.zeros((2, 3, 8, 8), np.float32),)
    ex = xe.export(xform.jit(f(xform, xnp)))(*xe.symbolic_args_specs(args, "b, 3, 8, 8"))
    ej = jax.export.export(jax.jit(f(jax, jnp)))(
        *jax.export.symbolic_args_specs(args, "b, 3, 8, 8")
    )
    assert [str(a.shape) for a in ex.out_avals] == [str(a.shape) for a in ej.out_avals]
    in_jax = jax.export.deserialize(ex.serialize())
    for n in (2, 5):
        x = rng.normal(size=(n, 3, 8, 8)).astype(np.float32)
        want = jax.jit(f(jax, jnp))(x)
        assert_same(in_jax.call(x), want, rtol=1e-5, atol=1e-5)
        assert_same(ex.call(x), want, rtol=1e-5, atol=1e-5)


def test_export_symbolic_multi_platform():
    def f(np_):
        return lambda x: np_.cos(x).sum(axis=1) + x.shape[0]

    spec = xe.symbolic_args_specs((X,), "b, 3")
    ex = xe.export(xform.jit(f(xnp)), platforms=("cpu", "cuda"))(*spec)
    assert ex.platforms == ("cpu", "cuda") and ex.uses_global_constants
    in_jax = jax.export.deserialize(ex.serialize())
    for x in (X, np.ones((5, 3), np.float32)):
        assert_same(in_jax.call(x), jax.jit(f(jnp))(x))
        assert_same(ex.call(x), jax.jit(f(jnp))(x))
