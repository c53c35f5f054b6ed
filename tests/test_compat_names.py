# ruff: noqa: PLC0415, PLR0402  (each program imports jax when it runs: real JAX, then xform)
"""The semi-internal JAX names libraries reach for, mapped to xform's own objects (issue 34).

Each case runs the same library-style code on real JAX (the oracle) and under compat mode on
xform, and compares what it returns: ``jax.config``'s types, ``jax.extend.linear_util``'s
wrapped functions and transformations, ``jax.api_util``'s helpers, the call primitives, and
the ``jax._src`` names in the table of ``xform/compat/_jax_src.py``.
"""

import importlib

import jax
import numpy as np
import pytest

import xform
from xform import compat


def _on_both(program):
    """``program(jax_module)`` run on real JAX, then under compat mode: both results."""
    want = program(jax)
    compat.install()
    try:
        got = program(importlib.import_module("jax"))
    finally:
        compat.uninstall()
    return got, want


def test_config_attributes_have_jax_types():
    def program(jax):
        c = jax.config
        return (
            type(c.x64_enabled),
            c.x64_enabled,
            type(c.jax_enable_x64),
            type(c.values),
            c.read("jax_enable_x64"),
            hasattr(c, "parse_flags_with_absl"),
        )

    got, want = _on_both(program)
    assert got == want
    with xform.enable_x64():  # the property reads the flag now, not a function's truth
        compat.install()
        try:
            assert importlib.import_module("jax").config.x64_enabled is True
            with pytest.raises(ModuleNotFoundError):  # JAX's config is no module either
                importlib.import_module("jax.config")
        finally:
            compat.uninstall()


def _linear_util_program(jax):
    """haiku's, numpyro's and flax's use of jax.extend.linear_util and jax.api_util."""
    import jax.api_util as api_util
    import jax.extend.linear_util as lu

    @lu.transformation
    def scale_inputs(factor, *args):  # haiku's style: a generator with static arguments
        outs = yield [a * factor for a in args], {}
        yield [o + 1.0 for o in outs]

    @lu.transformation_with_aux
    def count_outputs(*args):
        outs = yield args, {}
        yield outs, len(outs)

    def f(x, y=2.0):
        return {"a": x * y, "b": (x - y,)}

    args = (np.float32(3.0),)
    kwargs = {"y": np.float32(0.5)}
    leaves, in_tree = jax.tree_util.tree_flatten((args, kwargs))
    info = api_util.debug_info("test", f, args, kwargs)

    def wrapped():
        flat, out_tree = api_util.flatten_fun(lu.wrap_init(f, debug_info=info), in_tree)
        return (*count_outputs(scale_inputs(flat, 2.0)), out_tree)

    counted, count, out_tree = wrapped()
    outs = counted.call_wrapped(*leaves)
    try:  # a store is written once: a second call is an error, in JAX too
        counted.call_wrapped(*leaves)
        twice = "ran"
    except lu.StoreException as e:
        twice = str(e).splitlines()[0]
    jaxpr = jax.make_jaxpr(wrapped()[0].call_wrapped)(*leaves)
    nokw, nokw_tree = api_util.flatten_fun_nokwargs(
        lu.wrap_init(lambda a, b: a - b, debug_info=api_util.debug_info("t", f, (1, 2), {})),
        jax.tree_util.tree_structure((1, 2)),
    )
    return (
        [float(o) for o in outs],
        str(out_tree()),
        count(),
        twice,
        [v.aval.shape for v in jaxpr.jaxpr.invars],
        len(jaxpr.jaxpr.outvars),
        float(nokw.call_wrapped(np.float32(5.0), np.float32(3.0))[0]),
        str(nokw_tree()),
        info.arg_names,
    )


def test_linear_util_wrapped_functions_as_jax():
    got, want = _on_both(_linear_util_program)
    assert got == want


def test_linear_util_cache_as_jax():
    def program(jax):
        import jax.api_util as api_util
        import jax.extend.linear_util as lu

        calls = []

        @lu.cache
        def run(fun, n):
            calls.append(n)
            return fun.call_wrapped(n)

        def f(x):
            return x + 1

        info = api_util.debug_info("t", f, (1,), {})
        outs = [run(lu.wrap_init(f, debug_info=info), n) for n in (1, 1, 2)]
        return outs, calls  # a fresh wrapper of the same function hits the memo

    got, want = _on_both(program)
    assert got == want == ([2, 2, 3], [1, 2])


def test_api_util_helpers_as_jax():
    def program(jax):
        import jax.api_util as api_util
        import jax.extend.linear_util as lu

        tree = jax.tree_util.tree_structure((({"a": 1, "b": 2}, 3), {"k": 4}))

        def f(a, b, c):
            return a * b + c

        args = (np.float32(2.0), 3.0, np.float32(1.0))
        wrapped = lu.wrap_init(f, debug_info=api_util.debug_info("t", f, args, {}))
        fixed, dyn = api_util.argnums_partial(wrapped, (0, 2), args)
        return (
            api_util.flatten_axes("in_axes", tree, (0, None), kws=True),
            api_util.donation_vector((1,), ("k",), tree),
            api_util.rebase_donate_argnums((0, 2, 3), (1,)),
            [float(x) for x in dyn],
            float(fixed.call_wrapped(*dyn)),
            str(api_util.shaped_abstractify(np.ones((2, 3), np.float32))),
            api_util.safe_map(lambda a, b: a + b, [1, 2], [3, 4]),
        )

    got, want = _on_both(program)
    assert got == want
    with pytest.raises(ValueError):
        xform.api_util.safe_map(lambda a, b: a, [1], [1, 2])


def test_call_primitives_as_jax():
    def program(jax):
        from jax.extend.core.primitives import call_p, closed_call_p

        track = {call_p: "call", closed_call_p: "closed_call"}  # numpyro keys rules by them
        return [(str(p), p.multiple_results, track[p]) for p in (call_p, closed_call_p)]

    got, want = _on_both(program)
    assert got == want
    # JAX binds them only inside its own tracing machinery; xform runs them as a jit call
    # (closed_call) or by calling the WrappedFun (call), under every transformation.
    prims = xform.extend.core.primitives
    closed = xform.make_jaxpr(lambda x: xform.numpy.sin(x) * 2.0)(1.0)
    value = prims.closed_call_p.bind(np.float32(0.5), call_jaxpr=closed)[0]
    grad = xform.grad(lambda x: prims.closed_call_p.bind(x, call_jaxpr=closed)[0])(0.5)
    np.testing.assert_allclose([value, grad], [np.sin(0.5) * 2, np.cos(0.5) * 2], rtol=1e-6)
    called = prims.call_p.bind(xform.extend.linear_util.wrap_init(lambda y: [y * 3.0]), 2.0)
    assert float(called[0]) == 6.0


def test_internal_names_map_to_xform_objects(installed):
    from jax._src import ad_util, core, dispatch, flatten_util, traceback_util, tree_util
    from jax.core import DropVar, valid_jaxtype
    from jax.extend.core import TraceTag
    from jax.interpreters import ad

    assert ad_util.stop_gradient_p is xform.primitives.autodiff.stop_gradient_p
    assert ad.add_jaxvals_p is ad_util.add_jaxvals_p is xform.primitives.elementwise.add_any_p
    assert flatten_util.ravel_pytree is xform.flatten_util.ravel_pytree
    assert list(tree_util.flatten_one_level({"a": 1})[0]) == [1]
    assert core.trace_state_clean()
    seen = []
    xform.jit(lambda x: seen.append(core.trace_state_clean()) or x)(1.0)
    assert seen == [False]
    assert dispatch.wait_for_tokens() is None
    assert traceback_util._exclude_paths is not None
    assert not isinstance(xform.core.Var(xform.core.ShapedArray((), np.float32)), DropVar)
    assert valid_jaxtype(np.ones(2)) and not valid_jaxtype("a string")
    assert TraceTag() is not TraceTag()
    out = xform.grad(lambda x: ad_util.stop_gradient_p.bind(x) * x)(3.0)
    assert float(out) == 3.0
    with pytest.raises(NotImplementedError, match="Transpose rule .* 'sin' not implemented"):
        ad.get_primitive_transpose(xform.lax.sin_p)


def test_the_runtime_keeps_real_jax_under_compat(installed):
    # jaxlib's C++ and real JAX's functions import JAX's internals lazily while xform runs a
    # program (reading a jit's boolean result back to the host looks up
    # jax._src.sharding_impls): they get real JAX's modules, never a stand-in.
    out = xform.jit(lambda x: x > 0)(xform.numpy.ones(3))
    np.testing.assert_array_equal(installed.device_get(out), [True, True, True])
    # ... while a library's import of the same internal module is answered by compat mode.
    pe = importlib.import_module("jax.interpreters.partial_eval")
    assert repr(pe.trace_to_jaxpr_nounits).startswith("<xform stand-in")


def test_absl_flags_and_conv_out_sharding_as_jax(installed):
    # flax's absltest suites read --test_tmpdir after jax.config.parse_flags_with_absl();
    # flax.nnx passes out_sharding=None to lax.conv_general_dilated.
    absl_flags = pytest.importorskip("absl.flags")
    installed.config.parse_flags_with_absl()
    assert absl_flags.FLAGS.is_parsed()
    x, w = np.ones((1, 1, 4, 4), np.float32), np.ones((1, 1, 3, 3), np.float32)
    got = installed.lax.conv_general_dilated(x, w, (1, 1), "VALID", out_sharding=None)
    np.testing.assert_array_equal(got, np.full((1, 1, 2, 2), 9.0))  # (JAX's, outside compat)
