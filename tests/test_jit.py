"""jit: caching, static arguments, pytrees, nesting, lowering, devices, and bad input."""

import collections
import concurrent.futures
import gc

import jax
import numpy as np
import pytest

import xform
from xform import core, lax
from xform.runtime import dispatch
from xform.runtime.array import from_host

F32_3 = np.arange(3, dtype=np.float32)


def test_jit_matches_eager_and_jax():
    f = xform.jit(lambda x, y: lax.add(lax.mul(lax.sin(x), y), 1.0))
    got = f(F32_3, F32_3)
    expected = jax.jit(lambda x, y: jax.numpy.sin(x) * y + 1.0)(F32_3, F32_3)
    np.testing.assert_allclose(np.asarray(got), np.asarray(expected), rtol=1e-6)
    assert got.dtype == np.float32 and got.shape == (3,) and not got.weak_type


def test_python_side_effects_run_once_per_signature():
    traces = []

    @xform.jit
    def f(x):
        traces.append(1)
        return lax.sin(x)

    x = from_host(F32_3)
    for _ in range(3):
        f(x)
    f(F32_3)  # same abstract signature from a NumPy array
    assert len(traces) == 1
    f(np.ones(4, np.float32))  # new shape
    f(np.ones(3, np.int32).astype(np.float16))  # new dtype
    f(1.0)  # weakly typed scalar
    f(np.float32(1.0))  # strongly typed scalar: a different signature
    assert len(traces) == 5
    assert f._cache_size() == 5


def test_static_arguments_are_part_of_the_cache_key():
    traces = []

    def f(x, n, *, scale):
        traces.append((n, scale))
        for _ in range(n):
            x = lax.mul(x, scale)
        return x

    g = xform.jit(f, static_argnums=1, static_argnames="scale")
    np.testing.assert_allclose(g(F32_3, 2, scale=3.0), F32_3 * 9)
    np.testing.assert_allclose(g(F32_3, 2, scale=3.0), F32_3 * 9)
    np.testing.assert_allclose(g(F32_3, 3, scale=3.0), F32_3 * 27)
    assert traces == [(2, 3.0), (3, 3.0)]
    # Both lists given: each is taken as it is (JAX's rule), so `n` given by name is traced.
    for lib in (xform, jax):
        with pytest.raises(lib.errors.TracerIntegerConversionError):
            lib.jit(f, static_argnums=1, static_argnames="scale")(F32_3, n=1, scale=2.0)
    h = xform.jit(f, static_argnames=("n", "scale"))  # a positional arg made static by name
    np.testing.assert_allclose(h(F32_3, 2, scale=3.0), F32_3 * 9)
    k = xform.jit(f, static_argnums=1)  # and the name of a static position inferred
    np.testing.assert_allclose(k(F32_3, n=1, scale=np.float32(2.0)), F32_3 * 2)


def test_decorator_forms():
    @xform.jit(static_argnums=(1,))
    def f(x, n):
        return lax.mul(x, float(n))

    np.testing.assert_allclose(f(F32_3, 4), F32_3 * 4)


Point = collections.namedtuple("Point", "x y")


@jax.tree_util.register_pytree_node_class
class Box:
    def __init__(self, value):
        self.value = value

    def tree_flatten(self):
        return (self.value,), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)


def test_pytrees_in_and_out():
    @xform.jit
    def f(tree):
        p, box, d, nothing, lst = tree
        assert nothing is None
        return {
            "sum": lax.add(p.x, p.y),
            "box": Box(lax.neg(box.value)),
            "list": [lax.mul(d["a"], lst[0])],
            "none": None,
        }

    out = f((Point(F32_3, F32_3), Box(F32_3), {"a": F32_3}, None, [2.0]))
    assert set(out) == {"sum", "box", "list", "none"} and out["none"] is None
    np.testing.assert_allclose(out["sum"], 2 * F32_3)
    assert isinstance(out["box"], Box)
    np.testing.assert_allclose(out["box"].value, -F32_3)
    np.testing.assert_allclose(out["list"][0], 2 * F32_3)


def test_nested_jit_and_closure_over_outer_tracers():
    @xform.jit
    def outer(x):
        y = lax.sin(x)
        inner = xform.jit(lambda z: lax.mul(z, y))  # closes over an outer tracer
        return inner(x)

    np.testing.assert_allclose(outer(F32_3), F32_3 * np.sin(F32_3), rtol=1e-6)
    jaxpr = xform.make_jaxpr(outer)(F32_3)
    inner_eqn = jaxpr.eqns[0].params["jaxpr"].eqns[1]
    assert inner_eqn.primitive.name == "jit" and len(inner_eqn.invars) == 2


def test_constants_are_inlined_as_jax():
    # A trace's constants (a closed-over table, a device array) are literals of the module,
    # as in JAX; calls drop them (the keyed path included).
    table = np.arange(1000, dtype=np.float32)
    f = xform.jit(lambda x: lax.add(x, table))
    text = f.lower(np.ones(1000, np.float32)).as_text()
    assert (
        text == jax.jit(lambda x: jax.lax.add(x, table)).lower(np.ones(1000, np.float32)).as_text()
    )
    assert "%arg1" not in text
    on_device = xform.device_put(table)
    g = xform.jit(lambda d: {"y": d["x"] * on_device})
    x = xform.device_put(np.ones(1000, np.float32))
    for _ in range(3):
        np.testing.assert_allclose(f(np.ones(1000, np.float32)), table + 1)
        np.testing.assert_allclose(g({"x": x})["y"], table)


def test_lower_as_text_and_compile():
    f = xform.jit(lambda x: lax.exp(lax.sin(x)))
    lowered = f.lower(F32_3)
    text = lowered.as_text()
    assert "stablehlo.sine" in text and "stablehlo.exponential" in text
    assert text == jax.jit(lambda x: jax.lax.exp(jax.lax.sin(x))).lower(F32_3).as_text()
    for out in (
        lambda x: {"b": x, "a": [x, (x,)]},
        lambda x: (x, 2.0),  # results' names
        lambda x: None,
        lambda x: 2.0,
    ):  # the argument unread: not taken (JAX's)
        assert xform.jit(out).lower(F32_3).as_text() == jax.jit(out).lower(F32_3).as_text()
    unread = xform.jit(lambda x, y, z: x * z)  # y is not an argument of the program
    assert (
        unread.lower(F32_3, 1.0, 2.0).as_text()
        == jax.jit(lambda x, y, z: x * z).lower(F32_3, 1.0, 2.0).as_text()
    )
    on_device = [xform.device_put(v) for v in (F32_3, np.ones(5, np.float32))]
    for _ in range(3):  # the general path, then the keyed one
        np.testing.assert_array_equal(unread(F32_3, np.ones(5), 2.0), F32_3 * 2)
        np.testing.assert_array_equal(unread(*on_device, 2.0), F32_3 * 2)
    assert unread._state.direct_calls
    kept = xform.jit(lambda x, y, z: x * z, keep_unused=True)  # y taken, as JAX's
    assert (
        kept.lower(F32_3, 1.0, 2.0).as_text()
        == jax.jit(lambda x, y, z: x * z, keep_unused=True).lower(F32_3, 1.0, 2.0).as_text()
    )
    for _ in range(3):
        np.testing.assert_array_equal(kept(*on_device, 2.0), F32_3 * 2)
    compiled = lowered.compile()
    np.testing.assert_allclose(compiled(F32_3), np.exp(np.sin(F32_3)), rtol=1e-6)
    with pytest.raises(TypeError, match="Argument types differ from the types for which"):
        compiled(np.ones(4, np.float32))
    shapes = f.eval_shape(xform.ShapeDtypeStruct((7,), np.float32))
    assert shapes.shape == (7,) and shapes.dtype == np.float32


def _nested_calls(jit):
    """A function of two nested jits of lambdas (same name, so one is renamed), one
    called twice, under ``jit`` (xform's or JAX's)."""
    double, inc = jit(lambda x: x * 2), jit(lambda x: x + 1)
    return jit(lambda x: double(x) + inc(x) + double(x + 1.0))


def test_nested_jits_are_private_functions_named_as_jax():
    # JAX keeps a nested function's own name as its symbol (MLIR quotes "<lambda>") and
    # renames a clash name_0, ...; a function called twice is emitted once.
    text = _nested_calls(xform.jit).lower(F32_3).as_text()
    assert text == _nested_calls(jax.jit).lower(F32_3).as_text()
    assert 'func.func private @"<lambda>_0"' in text
    np.testing.assert_allclose(_nested_calls(xform.jit)(F32_3), 5 * F32_3 + 3)


def test_compiled_module_header_as_jax():
    # XLA's sharding-propagation flags are set as JAX sets them for arguments and results
    # given no sharding: the compiled module's first line is JAX's.
    def header(jit, f, *args):
        return jit(f).lower(*args).compile().as_text().splitlines()[0]

    for f, args in ((lambda x, y: (x * 2, y, x + y), (F32_3, 2.0)), (lambda: 1.0, ())):
        assert header(xform.jit, f, *args) == header(jax.jit, f, *args)


def test_x64_mode_keeps_64_bit_types_only_when_enabled(x64):
    f = xform.jit(lambda x: lax.mul(x, 2.0))
    out = f(np.arange(3.0))
    assert out.dtype == np.float64
    np.testing.assert_array_equal(out, np.arange(3.0) * 2)


def test_without_x64_64_bit_inputs_narrow():
    out = xform.jit(lambda x: lax.mul(x, 2.0))(np.arange(3.0))
    assert out.dtype == np.float32
    assert not jax.config.jax_enable_x64  # JAX's own flag is never flipped


def test_eval_shape_and_devices():
    out = xform.eval_shape(
        lambda x: {"y": lax.convert_element_type(x, np.int32)},
        xform.ShapeDtypeStruct((2, 3), np.float32),
    )
    assert out["y"] == xform.ShapeDtypeStruct((2, 3), np.int32)
    devs = xform.devices()
    assert devs and devs[0].platform == xform.default_backend()
    y = xform.device_put(F32_3, devs[0])
    assert isinstance(y, xform.Array) and y.devices() == {devs[0]}
    np.testing.assert_array_equal(y, F32_3)
    f = xform.jit(lax.neg, device=devs[0])
    np.testing.assert_array_equal(f(y), -F32_3)


# --------------------------------------------------------------------------- bad input


def test_non_array_arguments_name_the_path():
    f = xform.jit(lambda d: d["a"])
    with pytest.raises(TypeError, match=r"args\[0\]\['a'\] is of type str.*static_argnums"):
        f({"a": "hello"})
    with pytest.raises(TypeError, match="object"):
        f({"a": object()})
    assert core.current_trace() is core.eval_trace


def test_non_array_outputs_are_type_errors():
    with pytest.raises(TypeError, match=r"returned a value of type str at output path \[1\]"):
        xform.jit(lambda x: (x, "no"))(F32_3)


def test_unhashable_static_arguments():
    f = xform.jit(lambda x, n: x, static_argnums=1)
    with pytest.raises(ValueError, match="Non-hashable static arguments.*list"):
        f(F32_3, [1, 2])
    with pytest.raises(ValueError, match="Non-hashable static arguments.*Array"):
        f(F32_3, from_host(F32_3))


def test_static_argnums_out_of_range():
    with pytest.raises(ValueError, match="static_argnums=.*only accepts 1 positional"):
        xform.jit(lambda x: x, static_argnums=3)


def test_wrong_shapes_inside_jit_raise_typeerror_naming_the_op():
    with pytest.raises(
        TypeError,
        match=r"add got incompatible shapes for broadcasting: "
        r"\(3,\), \(4,\)",
    ):
        xform.jit(lax.add)(F32_3, np.ones(4, np.float32))
    with pytest.raises(
        TypeError, match="lax.add requires arguments to have the same dtypes, got float32, int32"
    ):
        xform.jit(lax.add)(F32_3, np.ones(3, np.int32))
    np.testing.assert_array_equal(xform.jit(lax.add)(F32_3, F32_3), 2 * F32_3)


def test_python_int_overflow():
    with pytest.raises(OverflowError, match="too large"):
        xform.jit(lambda x: x)(2**40)


def test_donated_arguments_are_consumed_and_aliased():
    f = xform.jit(lambda x, y: lax.add(lax.mul(x, 2.0), y), donate_argnums=0)
    text = f.lower(F32_3, F32_3).as_text()
    assert "%arg0: tensor<3xf32> {tf.aliasing_output = 0 : i32}" in text
    x = xform.device_put(F32_3)
    y = from_host(F32_3)
    out = f(x, y)
    np.testing.assert_array_equal(out, 3 * F32_3)
    assert x.is_deleted() and not y.is_deleted()
    with pytest.raises(RuntimeError, match="deleted"):
        np.asarray(x)
    z = from_host(F32_3)  # a host array: its device copy is donated, the array is consumed
    f(z, y)
    assert z.is_deleted()
    expected = jax.jit(lambda x, y: x * 2.0 + y, donate_argnums=0)(jnp_copy(F32_3), F32_3)
    np.testing.assert_array_equal(f(F32_3, y), expected)


def jnp_copy(x):
    return jax.numpy.array(x)


def test_donation_by_name_and_in_pytrees():
    f = xform.jit(
        lambda params, x: {k: lax.sub(v, x) for k, v in params.items()}, donate_argnames="params"
    )
    params = {"w": xform.device_put(F32_3), "b": xform.device_put(F32_3)}
    out = f(params, F32_3)
    np.testing.assert_array_equal(out["w"], np.zeros(3))
    assert params["w"].is_deleted() and params["b"].is_deleted()


def test_static_and_donated_together_is_an_error():
    with pytest.raises(ValueError, match="both static and donated"):
        xform.jit(lambda x, n: x, static_argnums=1, donate_argnums=1)
    with pytest.raises(ValueError, match="donate_argnums=.*only accepts 1 positional"):
        xform.jit(lambda x: x, donate_argnums=2)


def test_jit_from_many_threads():
    def work(i):
        f = xform.jit(lambda x: lax.add(lax.mul(x, float(i)), lax.sin(x)))
        return np.asarray(f(F32_3))

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        results = list(pool.map(work, range(8)))
    for i, r in enumerate(results):
        np.testing.assert_allclose(r, F32_3 * i + np.sin(F32_3), rtol=1e-6)


def test_compiled_programs_are_freed_with_their_function():
    f = xform.jit(lambda x: lax.cos(lax.sin(x)))
    f(F32_3)
    gc.collect()  # earlier tests' garbage goes first, so only f's program can go below
    before = len(dispatch._compiled)
    del f
    gc.collect()
    assert len(dispatch._compiled) == before - 1


def test_cache_follows_the_x64_flag():
    f = xform.jit(lambda x: (x, xform.numpy.arange(3)))
    x = np.float32(1.0)
    assert f(x)[1].dtype == np.int32
    with xform.enable_x64():
        assert f(x)[1].dtype == np.int64
        assert f(xform.device_put(x))[1].dtype == np.int64
    assert f(xform.device_put(x))[1].dtype == np.int32


def test_fastest_call_path_follows_flags_and_stays_bounded():
    # The third call of a signature of device Arrays takes jit's fastest path (keyed by the
    # avals' identity); it must still see the x64 flag, fresh aval objects equal to known
    # ones, and keep a bounded table.
    f = xform.jit(lambda x, y: (x * y + 1, xform.numpy.arange(2)))
    x = xform.device_put(np.arange(3, dtype=np.float32))
    for _ in range(3):
        out, ints = f(x, x)
        np.testing.assert_array_equal(out, np.arange(3) ** 2 + 1)
        assert ints.dtype == np.int32
    with xform.enable_x64():
        for _ in range(3):
            assert f(x, x)[1].dtype == np.int64
    for i in range(100):  # avals that are new objects on each call
        y = xform.Array(core.ShapedArray((3,), np.dtype(np.float32)), np.full(3, i, np.float32))
        y = xform.device_put(y)
        np.testing.assert_array_equal(f(y, x)[0], np.arange(3) * i + 1)
    assert len(f._state.direct_calls) <= 33
    f.clear_cache()
    assert not f._state.direct_calls
    np.testing.assert_array_equal(f(x, x)[0], np.arange(3) ** 2 + 1)


def test_keyed_call_path_static_arguments_keywords_and_python_scalars():
    # Calls with static arguments, keywords or Python scalars take jit's keyed path once
    # seen: static values are keyed by value, scalars by type (their values change freely),
    # and each result equals JAX's, dtype and weak type included.
    def counted(traces):
        def fun(x, n, lr, *, mode="a", y=None):
            traces[(n, mode)] += 1
            out = x * lr + n
            return out if y is None else out * y

        return fun

    traces = collections.Counter()
    f = xform.jit(counted(traces), static_argnums=(1,), static_argnames=("mode",))
    g = jax.jit(counted(collections.Counter()), static_argnums=(1,), static_argnames=("mode",))
    x = xform.device_put(np.arange(3, dtype=np.float32))
    y = xform.device_put(np.full(3, 2.0, np.float32))
    cases = [
        (2, 0.5, {}),
        (2, 0.25, {}),
        (3, 0.25, {}),
        (2, -0.0, {}),
        (2, float("nan"), {}),
        (2, 3, {}),
        (2, True, {}),
        (2, 1.5, {"mode": "b"}),
        (2, 1.5, {"y": y}),
        (2, 1.5, {"y": y, "mode": "b"}),
        (2, 1.5, {"mode": "b", "y": y}),
    ]
    for _ in range(3):
        for n, lr, kw in cases:
            jkw = {k: np.asarray(v) if k == "y" else v for k, v in kw.items()}
            got, want = f(x, n, lr, **kw), g(np.asarray(x), n, lr, **jkw)
            np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
            np.testing.assert_array_equal(got, want)
            assert (got.dtype, got.weak_type) == (want.dtype, want.weak_type)
    assert traces == {(2, "a"): 4, (3, "a"): 1, (2, "b"): 2}  # one per signature
    assert f._state.direct_calls  # the keyed path was taken
    scalars = xform.jit(lambda a, b: a * b)
    for _ in range(2):
        got = scalars(2.0, 3)
        assert float(got) == 6.0 and got.dtype == np.float32 and got.weak_type
    big = np.arange(3000, dtype=np.float32)  # a constant the program takes as an argument
    consts = xform.jit(lambda a, lr, n: (a * lr + big[:3] * n, xform.grad(lambda v: v * n)(1.0)))
    for lr, n in [(0.5, 2), (0.25, 2), (0.25, 3)] * 2:
        got, dn = consts(x, lr, n)
        np.testing.assert_array_equal(got, np.arange(3, dtype=np.float32) * (lr + n))
        assert float(dn) == n
    assert consts._state.direct_calls
    tree_traces = []
    trees = xform.jit(lambda p, s: tree_traces.append(1) or xform.tree.map(lambda v: v * s, p))
    jtrees = jax.jit(lambda p, s: jax.tree.map(lambda v: v * s, p))
    for p in [
        {"a": x, "b": (y, 2.0), "c": None},
        {"a": x, "b": (x, 3.0), "c": None},
        {"a": x, "b": [y, 2.0], "c": None},
        {"a": y, "c": x},
    ] * 2:
        got, want = (
            trees(p, 0.5),
            jtrees(
                jax.tree.map(lambda v: np.asarray(v) if isinstance(v, xform.Array) else v, p), 0.5
            ),
        )
        assert jax.tree.structure(got) == jax.tree.structure(want)
        for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
            np.testing.assert_array_equal(g, w)
            assert (g.dtype, g.weak_type) == (w.dtype, w.weak_type)
    assert len(tree_traces) == 3 and trees._state.direct_calls
    with pytest.raises(ValueError, match="Non-hashable static arguments"):
        f(x, [2], 0.5)
    with pytest.raises(OverflowError):
        f(x, 2, 2**40)


@pytest.mark.parametrize("what", ["static", "donate"])
def test_argnums_out_of_range_as_jax(what):
    def error(mod):
        with pytest.raises(ValueError) as info:
            mod.jit(lambda a, b, c: a, **{f"{what}_argnums": (5,)})
        return str(info.value).split("\n")[0]

    assert (
        error(xform)
        == error(jax)
        == (f"Jitted function has {what}_argnums=(5,), but only accepts 3 positional arguments.")
    )
