"""The transformations' API behaves as JAX 0.10.2's where a program can tell: jit's cache
belongs to the function, custom-derivative functions run only where JAX runs them, vjp's
pullback is a pytree, enable_x64 is per thread, and cached calls do not grow memory."""

import gc
import threading
import tracemalloc
import warnings
import weakref

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import xform
import xform.numpy as xnp
from xform.errors import UnexpectedTracerError

X3 = np.arange(3, dtype=np.float32)


def close(a, b):
    for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b), strict=True):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-6)


# --------------------------------------------------------------------------- jit's cache


def _counted(lib):
    traces = []

    def f(x, k=2):
        traces.append(1)
        return lib.sin(x) * k

    return f, traces


def test_fresh_jit_wrappers_share_the_function_cache_as_in_jax():
    for lib, jit in ((xnp, xform.jit), (jnp, jax.jit)):
        f, traces = _counted(lib)
        for _ in range(4):
            jit(f)(X3)  # a new wrapper each call, as in `jit(f)(x)` written inline
        assert len(traces) == 1, jit
        jit(f)(np.ones(4, np.float32))  # a new signature still traces
        assert len(traces) == 2, jit


SCALE = 2.0


def _uses_global(lib):
    def f(x):
        return lib.sin(x) * SCALE

    return f


def test_a_changed_global_is_not_observed_by_a_fresh_wrapper_as_in_jax():
    global SCALE
    results = {}
    for name, lib, jit in (("xform", xnp, xform.jit), ("jax", jnp, jax.jit)):
        f = _uses_global(lib)
        SCALE = 2.0
        first = np.asarray(jit(f)(X3))
        SCALE = 3.0
        results[name] = (first, np.asarray(jit(f)(X3)))  # the cached trace: still * 2
        SCALE = 2.0
    np.testing.assert_allclose(results["xform"][1], results["xform"][0])
    close(results["xform"], results["jax"])


def _options():
    return [
        {},
        {"static_argnums": 1},
        {"static_argnums": (1,)},
        {"static_argnames": "k"},
        {"donate_argnums": 0},
        {"device": None},
        {"inline": True},
        {"keep_unused": True},
    ]


def test_options_share_traces_exactly_where_jax_does():
    # Static arguments change what is traced; donation, device and the like change only the
    # program, so JAX traces once for them all.
    counts = {}
    for name, lib, jit in (("xform", xnp, xform.jit), ("jax", jnp, jax.jit)):
        f, traces = _counted(lib)
        seen = []
        for options in _options():
            static = "static_argnums" in options or "static_argnames" in options
            x = lib.asarray(X3)  # fresh: one of the options donates it
            jit(f, **options)(x, 2) if static else jit(f, **options)(x)
            seen.append(len(traces))
        counts[name] = seen
    assert counts["xform"] == counts["jax"] == [1, 2, 2, 2, 2, 2, 2, 2]


def test_options_do_not_share_programs():
    f = lambda x: x * 2.0  # noqa: E731
    donating = xform.jit(f, donate_argnums=0)
    x = xform.device_put(X3)
    donating(x)
    assert x.is_deleted()
    y = xform.device_put(X3)
    np.testing.assert_allclose(xform.jit(f)(y), X3 * 2)  # the plain program donates nothing
    assert not y.is_deleted()
    z = xform.device_put(X3)
    xform.jit(f, donate_argnums=0)(z)  # and a fresh donating wrapper still donates
    assert z.is_deleted()


def test_the_cache_does_not_keep_the_function_alive():
    def f(x):
        return x + 1.0

    xform.jit(f)(X3)
    ref = weakref.ref(f)
    del f
    gc.collect()
    assert ref() is None


def test_the_wrapper_looks_like_the_function_as_jax_s_does():
    def f(x):
        """Doc of f."""
        return x

    f.extra = 3
    for jit in (xform.jit, jax.jit):
        g = jit(f)
        assert (g.__name__, g.__qualname__, g.__doc__, g.__module__, g.extra) == (
            f.__name__,
            f.__qualname__,
            f.__doc__,
            f.__module__,
            3,
        )
        assert g.__wrapped__ is f


def test_unhashable_functions_still_jit():
    class Unhashable:
        __hash__ = None

        def __call__(self, x):
            return x * 3.0

    np.testing.assert_allclose(xform.jit(Unhashable())(X3), X3 * 3)


# --------------------------------------------------------------------------- custom rules

TRANSFORMS = {
    "eager": lambda api, f, x, xs: f(x),
    "jit": lambda api, f, x, xs: api.jit(f)(x),
    "make_jaxpr": lambda api, f, x, xs: api.make_jaxpr(f)(x),
    "jvp": lambda api, f, x, xs: api.jvp(f, (x,), (x,)),
    "grad": lambda api, f, x, xs: api.grad(f)(x),
    "vjp": lambda api, f, x, xs: api.vjp(f, x),
    "linearize": lambda api, f, x, xs: api.linearize(f, x),
    "vmap": lambda api, f, x, xs: api.vmap(f)(xs),
    "jit(grad)": lambda api, f, x, xs: api.jit(api.grad(f))(x),
    "grad(jit)": lambda api, f, x, xs: api.grad(api.jit(f))(x),
    "vmap(grad)": lambda api, f, x, xs: api.vmap(api.grad(f))(xs),
    "grad(vmap)": lambda api, f, x, xs: api.grad(lambda x: api.vmap(f)(x).sum())(xs),
    "grad(grad)": lambda api, f, x, xs: api.grad(api.grad(f))(x),
    "make_jaxpr(grad)": lambda api, f, x, xs: api.make_jaxpr(api.grad(f))(x),
}


def _custom_jvp_counted(api, lib):
    calls = {"f": 0, "rule": 0}

    @api.custom_jvp
    def f(x):
        calls["f"] += 1
        return lib.sin(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        calls["rule"] += 1
        (x,), (t,) = primals, tangents
        return lib.sin(x), lib.cos(x) * t

    return f, calls


def _custom_vjp_counted(api, lib):
    calls = {"f": 0, "rule": 0}

    @api.custom_vjp
    def f(x):
        calls["f"] += 1
        return lib.sin(x)

    def fwd(x):
        calls["rule"] += 1
        return lib.sin(x), x

    f.defvjp(fwd, lambda x, ct: (lib.cos(x) * ct,))
    return f, calls


def _counts(make, transform):
    counts = []
    for api, lib in ((xform, xnp), (jax, jnp)):
        f, calls = make(api, lib)
        TRANSFORMS[transform](api, f, np.float32(0.5), X3)
        counts.append(dict(calls))
    return counts


@pytest.mark.parametrize("transform", TRANSFORMS)
def test_custom_jvp_runs_the_function_and_the_rule_where_jax_does(transform):
    got, expected = _counts(_custom_jvp_counted, transform)
    assert got == expected


@pytest.mark.parametrize("transform", [t for t in TRANSFORMS if t not in ("jvp", "linearize")])
def test_custom_vjp_runs_the_function_and_fwd_where_jax_does(transform):
    got, expected = _counts(_custom_vjp_counted, transform)
    assert got == expected


def _python_control_flow(api, lib):
    @api.custom_jvp
    def f(x):
        if x > 0:  # needs a concrete x: fine wherever only the rule is traced
            return x * 2.0
        return -x

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return f(x), lib.sign(x) * 2.0 * t

    return f


def test_custom_jvp_body_with_python_control_flow_differentiates_as_in_jax():
    f, f_jax = _python_control_flow(xform, xnp), _python_control_flow(jax, jnp)
    close(xform.grad(f)(2.0), jax.grad(f_jax)(2.0))
    close(xform.jvp(f, (2.0,), (1.0,)), jax.jvp(f_jax, (2.0,), (1.0,)))
    close(xform.grad(xform.grad(f))(2.0), jax.grad(jax.grad(f_jax))(2.0))


def _closing_over(api, lib, y):
    @api.custom_jvp
    def f(x):
        return x * y

    @f.defjvp
    def f_jvp(primals, tangents):
        return f(primals[0]), tangents[0] * 2.0

    return f


def test_custom_jvp_closing_over_mapped_values_works_under_vmap_as_in_jax():
    for api, lib in ((xform, xnp), (jax, jnp)):
        close(api.vmap(lambda y, api=api, lib=lib: _closing_over(api, lib, y)(2.0))(X3), X3 * 2)
        close(api.vmap(lambda y, api=api, lib=lib: _closing_over(api, lib, y)(y))(X3), X3 * X3)
        close(api.jit(lambda y, api=api, lib=lib: _closing_over(api, lib, y)(2.0))(3.0), 6.0)


def test_custom_jvp_closing_over_a_differentiated_value_is_an_error_as_in_jax():
    for api, lib, error in (
        (xform, xnp, UnexpectedTracerError),
        (jax, jnp, jax.errors.UnexpectedTracerError),
    ):
        with pytest.raises(error):
            api.grad(lambda y, api=api, lib=lib: _closing_over(api, lib, y)(2.0))(3.0)


def test_custom_jvp_under_vmap_of_unmapped_operands_stays_unmapped():
    f, _ = _custom_jvp_counted(xform, xnp)
    jaxpr = xform.make_jaxpr(xform.vmap(lambda x: f(np.float32(0.5)) * x))(X3)
    assert "broadcast_in_dim" not in str(jaxpr)
    close(xform.vmap(lambda x: f(np.float32(0.5)) * x)(X3), np.sin(np.float32(0.5)) * X3)


# --------------------------------------------------------------------------- vjp's pullback


def _f(lib):
    return lambda x, y: lib.sin(x) * y


def test_vjp_pullback_is_a_pytree_of_residuals_under_make_jaxpr_as_in_jax():
    x, y = np.float32(0.5), X3
    got = xform.make_jaxpr(lambda *a: xform.vjp(_f(xnp), *a))(x, y)
    expected = jax.make_jaxpr(lambda *a: jax.vjp(_f(jnp), *a))(x, y)
    assert len(got.jaxpr.outvars) == len(expected.jaxpr.outvars) == 4  # output + 3 residuals
    assert sorted((v.aval.shape, v.aval.dtype) for v in got.jaxpr.outvars) == sorted(
        (v.aval.shape, v.aval.dtype) for v in expected.jaxpr.outvars
    )


def test_vjp_pullback_passes_through_jit_as_in_jax():
    x, y, ct = np.float32(0.5), X3, np.ones(3, np.float32)
    for api, lib in ((xform, xnp), (jax, jnp)):
        out, pullback = api.jit(lambda x, y, api=api, lib=lib: api.vjp(_f(lib), x, y))(x, y)
        expected = jax.vjp(_f(jnp), x, y)[1](ct)
        close(pullback(ct), expected)  # returned from jit
        close(api.jit(lambda pb, ct: pb(ct))(pullback, ct), expected)  # passed into jit
        _, eager_pullback = api.vjp(_f(lib), x, y)
        close(api.jit(lambda pb, ct: pb(ct))(eager_pullback, ct), expected)
        zeroed = jax.tree_util.tree_map(lambda r: r * 0, pullback)
        close(zeroed(ct), [np.float32(0), np.zeros(3, np.float32)])


@pytest.mark.parametrize(
    "args",
    [(1.0,), (np.float32(1.0),), (X3,), (1.0, 2.0), (np.float32(0.5), X3)],
    ids=["python-scalar", "rank-0", "rank-1", "two-scalars", "scalar-and-vector"],
)
def test_eager_vjp_pullback_leaves_are_the_residuals_in_jax_order(args):
    """An eager pullback's leaves are its residuals, 0-d ones too (not inlined), the primal
    inputs it keeps first, as JAX's VJP."""

    def f(lib):
        return lambda *a: lib.sin(a[0]) * a[-1] + lib.exp(a[-1])

    def put(lib):  # arrays made by each library (the residuals then include them)
        return [lib.asarray(a) if isinstance(a, np.ndarray) else a for a in args]

    got = jax.tree_util.tree_leaves(xform.vjp(f(xnp), *put(xnp))[1])
    expected = jax.tree_util.tree_leaves(jax.vjp(f(jnp), *put(jnp))[1])
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        assert g.shape == e.shape and g.dtype == e.dtype
        close(g, e)


def test_vjp_pullback_called_with_several_arguments_errors_as_in_jax():
    for api in (xform, jax):
        _, pullback = api.vjp(lambda x, y: (x, y), 1.0, 2.0)
        with pytest.raises(TypeError, match="was called with 2 arguments"):
            pullback(1.0, 2.0)


# --------------------------------------------------------------------------- enable_x64


def _x64_threads(lib, scope, n_threads=8, iterations=200):
    """Threads entering and leaving an x64 scope in lockstep, half of them on, half off;
    each checks the dtype it gets inside its scope. Returns the mismatches seen."""
    barrier = threading.Barrier(n_threads)
    errors = []

    def worker(i):
        on = i % 2 == 0
        want = np.float64 if on else np.float32
        for _ in range(iterations):
            barrier.wait()
            with scope(on):
                barrier.wait()  # every thread is inside its scope now
                got = lib.asarray(1.0).dtype
                barrier.wait()
            if got != want:
                errors.append((i, got))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


def test_enable_x64_is_thread_local_as_in_jax():
    assert _x64_threads(jnp, jax.enable_x64) == []
    assert _x64_threads(xnp, xform.enable_x64) == []


def test_enable_x64_scope_falls_back_to_the_global_flag():
    seen = []
    try:
        with xform.enable_x64(False):
            xform.config.update("enable_x64", True)  # global: other threads see it
            thread = threading.Thread(target=lambda: seen.append(xnp.asarray(1.0).dtype))
            thread.start()
            thread.join()
            seen.append(xnp.asarray(1.0).dtype)  # this thread's scope still says off
        seen.append(xnp.asarray(1.0).dtype)  # out of the scope: the global flag
    finally:
        xform.config.update("enable_x64", False)
    assert seen == [np.float64, np.float32, np.float64]
    assert xnp.asarray(1.0).dtype == np.float32


# --------------------------------------------------------------------------- memory per call


def test_cached_jit_calls_do_not_grow_python_memory():
    # jaxlib leaves ~70 bytes per execution (on arguments that outlive it) for its garbage
    # hook; with the collector off nothing else would run that hook.
    f = xform.jit(lambda x, y: x * y + 1)
    a, b = xform.device_put(X3), xform.device_put(X3)
    for _ in range(100):
        f(a, b)
    gc.disable()
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        for _ in range(20_000):
            f(a, b)
        grown = tracemalloc.get_traced_memory()[0] - start
    finally:
        tracemalloc.stop()
        gc.enable()
    assert grown < 200_000, f"{grown} bytes over 20k calls"  # was ~1.4 MB (72 B per call)


def _takes(x, y=1, *, k=2):
    return x


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(static_argnames=("zz",)),
        dict(static_argnames=("k", "zz")),
        dict(donate_argnames=("q",)),
    ],
    ids=str,
)
def test_jit_rejects_argnames_the_function_does_not_take_as_jax(kwargs):
    with pytest.raises(ValueError) as expected:
        jax.jit(_takes, **kwargs)
    with pytest.raises(ValueError, match="invalid argnames .* Function does not take"):
        xform.jit(_takes, **kwargs)
    assert type(expected.value) is ValueError


def test_jit_accepts_argnames_a_function_takes_or_may_take():
    assert xform.jit(_takes, static_argnames=("k",))(1.0, k=3) == 1.0
    assert xform.jit(lambda x, **kw: x, static_argnames="anything")(1.0) == 1.0


@pytest.mark.parametrize("device", ["cpu", 3])
def test_device_put_rejects_what_is_not_a_device_or_sharding_as_jax(device):
    with pytest.raises(ValueError):
        jax.device_put(X3, device)
    with pytest.raises(ValueError, match="device_put.*received invalid value"):
        xform.device_put(X3, device)


def test_device_put_to_a_device():
    target = xform.devices()[-1]
    assert xform.device_put(X3, target).devices() == {target}


_CONVERSIONS = {
    "float": lambda x: float(x) * x,
    "complex": lambda x: complex(x).real * x,
    "asarray": lambda x: np.asarray(x).sum() * x,
    "tolist": lambda x: x.tolist() * x,
    "int": lambda x: int(x) * x,
    "bool": lambda x: x if x > 0 else -x,
    "item": lambda x: x.item() * x,
}


@pytest.mark.parametrize("how", sorted(_CONVERSIONS))
def test_python_conversions_of_a_jvp_tracer_as_jax(how):
    # JAX lets int/bool/item see a JVP tracer's value but refuses float/complex/tolist/asarray.
    f = _CONVERSIONS[how]
    try:
        expected = jax.grad(f)(2.0)
    except Exception as e:  # noqa: BLE001  (the oracle decides which error, if any)
        with pytest.raises(type(e)):
            xform.grad(f)(2.0)
        with pytest.raises(type(e)):
            xform.jvp(f, (2.0,), (1.0,))
    else:
        assert float(xform.grad(f)(2.0)) == float(expected)


def test_linearized_jvp_is_a_pytree_that_passes_through_jit_as_jax():
    def f(x):
        return {"a": x * xnp.sin(x), "b": xnp.cos(x)}

    def jf(x):
        return {"a": x * jnp.sin(x), "b": jnp.cos(x)}

    x, t = X3 + 1, X3 - 1
    out, f_jvp = xform.linearize(f, x)
    j_out, j_jvp = jax.linearize(jf, x)
    leaves = xform.tree_util.tree_leaves(f_jvp)  # the residuals
    assert len(leaves) >= 2
    close(xform.jit(lambda g, t: g(t))(f_jvp, t), j_jvp(t))
    close(f_jvp(t), j_jvp(t))
    close(out, j_out)


def _int_grad(lib):
    return lib.grad(lambda x, i: x * i, argnums=(0, 1), allow_int=True)


def _same_float0(got, expected):
    assert isinstance(got, np.ndarray) and got.dtype == xform.dtypes.float0
    assert got.shape == np.shape(expected) and np.asarray(expected).dtype.itemsize == 0


def test_jit_returns_float0_gradients_of_integers_as_jax():
    f, jf = xform.jit(_int_grad(xform)), jax.jit(_int_grad(jax))
    for _ in range(2):  # the traced call and the cached one
        (gx, gi), (ex, ei) = f(2.0, 3), jf(2.0, 3)
        close(gx, ex)
        _same_float0(gi, ei)
    close(xform.grad(lambda x: f(x, 3)[0] * x)(2.0), jax.grad(lambda x: jf(x, 3)[0] * x)(2.0))


def test_vmap_maps_float0_gradients_as_jax():
    got = xform.vmap(xform.jit(_int_grad(xform)), (0, None))(X3, 3)
    expected = jax.vmap(jax.jit(_int_grad(jax)), (0, None))(X3, 3)
    close(got[0], expected[0])
    _same_float0(got[1], expected[1])
    got = xform.vmap(_int_grad(xform), (None, 0))(2.0, np.arange(3))
    expected = jax.vmap(_int_grad(jax), (None, 0))(2.0, np.arange(3))
    _same_float0(got[1], expected[1])


def test_device_put_of_a_traced_value_is_an_equation_as_in_jax():
    got = xform.make_jaxpr(lambda x: xform.device_put(x) * 2)(1.0)
    expected = jax.make_jaxpr(lambda x: jax.device_put(x) * 2)(1.0)
    assert str(got) == str(expected)
    close(xform.grad(lambda x: xform.device_put(x) * x)(3.0), 6.0)
    close(xform.vmap(lambda x: xform.device_put(x) * 2)(X3), X3 * 2)


def test_xform_numpy_computes_on_jax_arrays():
    """JAX's own arrays are array-likes to xform.numpy (as xform's are to jax.numpy), eagerly
    and mixed with xform arrays; dtypes and weak types follow from the array's type."""
    a = jnp.arange(3.0)
    cases = {
        "sin": lambda m, x: m.sin(x),
        "sum": lambda m, x: m.sum(x),
        "mixed": lambda m, x: m.add(x, m.ones(3, m.float32)),
        "concatenate": lambda m, x: m.concatenate([x, x]),
        "where": lambda m, x: m.where(x > 1, x, 0.0),
    }
    for name, fn in cases.items():
        got, want = fn(xnp, a), fn(jnp, a)
        assert isinstance(got, xform.Array), name
        assert got.dtype == want.dtype and got.weak_type == want.weak_type, name
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6, err_msg=name)


# --------------------------------------------------------------------------- issue 19's cases
# Each case the fidelity issue names, run by both libraries: the same exception class
# (TypeError / ValueError), or the same values, dtypes, weak types and warnings.


def _outcome(run):
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = run()
    except Exception as e:  # noqa: BLE001 (the class is what is compared)
        return "raises", isinstance(e, TypeError), isinstance(e, ValueError)
    leaves = [
        (np.asarray(x), getattr(x, "weak_type", None)) for x in jax.tree_util.tree_leaves(out)
    ]
    return "returns", leaves, sorted(type(w.message).__name__ for w in caught)


def _assert_same_outcome(mine, jaxs):
    assert mine[0] == jaxs[0], (mine, jaxs)
    if mine[0] == "raises":
        assert mine == jaxs
        return
    assert mine[2] == jaxs[2]  # warnings
    assert len(mine[1]) == len(jaxs[1])
    for (a, weak_a), (b, weak_b) in zip(mine[1], jaxs[1], strict=True):
        assert (a.shape, a.dtype, weak_a) == (b.shape, b.dtype, weak_b)
        np.testing.assert_allclose(a, b, rtol=1e-6)


_E = np.zeros((0,), np.int32)
ISSUE_19 = {
    "matmul_shapes": lambda L, N: N.matmul(N.ones((2, 3)), N.ones((2, 3))),
    "concatenate_shapes": lambda L, N: N.concatenate([N.ones((2, 3)), N.ones((2, 4))]),
    "concatenate_ranks": lambda L, N: N.concatenate([N.ones((2, 3)), N.ones((3,))]),
    "reshape_two_minus_ones": lambda L, N: N.reshape(N.ones(6), (-1, -1)),
    "reshape_negative": lambda L, N: N.reshape(N.ones(6), (-2, -3)),
    "transpose_bad_permutation": lambda L, N: N.transpose(N.ones((2, 3)), (0, 0)),
    "zeros_negative": lambda L, N: N.zeros((-1,)),
    "array_of_none": lambda L, N: N.array([1, None]),
    "sum_bad_axis": lambda L, N: N.sum(N.ones(3), axis=2),
    "fori_loop_float_bounds": lambda L, N: L.lax.fori_loop(0.0, 3.0, lambda i, c: c + 1.0, 0.0),
    "grad_of_complex_input": lambda L, N: L.grad(lambda z: N.real(z * N.conj(z)))(1.0 + 2.0j),
    "greater_equal_complex": lambda L, N: N.greater_equal(N.array([1 + 1j]), N.array([1 + 2j])),
    "where_one_argument": lambda L, N: N.where(N.array([0, 1, 2]) > 0),
    "repeat_array_repeats": lambda L, N: N.repeat(N.array([1, 2, 3]), N.array([1, 0, 2])),
    "repeat_total_zero": lambda L, N: N.repeat(
        N.array([1, 2]), N.array([0, 0]), total_repeat_length=0
    ),
    "split_empty": lambda L, N: N.split(N.zeros((0,)), 1),
    "array_split_empty": lambda L, N: N.array_split(N.zeros((0,)), [1]),
    "pmap_size_zero": lambda L, N: L.pmap(lambda x: x)(N.zeros((0, 3))),
    "scan_body_not_a_pair": lambda L, N: L.lax.scan(lambda c, x: c, 0.0, N.ones(3)),
    "sign_of_minus_zero": lambda L, N: N.sign(N.float32(-0.0)),
    "gather_grad_out_of_bounds": lambda L, N: L.grad(lambda a: N.sum(a[0, N.array([-2])]))(
        N.ones((1, 1))
    ),
    "bitcast_0d_stacked": lambda L, N: N.stack(
        [L.lax.bitcast_convert_type(N.float32(1.0), N.int32)] * 2
    ),
    "copysign_signbit_0d": lambda L, N: (
        N.copysign(N.float32(1.0), N.float32(-2.0)),
        N.signbit(N.float32(-1.0)),
    ),
    "in_2d": lambda L, N: 3.0 in N.arange(6.0).reshape(2, 3),
    "setitem": lambda L, N: N.ones(3).__setitem__(0, 1),
    "float64_request_warns": lambda L, N: N.zeros(3, dtype="float64"),
    "integer_floor_divide_by_zero": lambda L, N: L.jit(lambda x: x // 0)(N.int32(7)),
    "mean_of_empty_int": lambda L, N: L.jit(lambda x: N.sum(x) // x.size)(_E),
}


@pytest.mark.parametrize("case", sorted(ISSUE_19))
def test_issue_19_cases_behave_as_jax(case):
    make = ISSUE_19[case]
    _assert_same_outcome(_outcome(lambda: make(xform, xnp)), _outcome(lambda: make(jax, jnp)))


def test_issue_19_x64_cases_behave_as_jax():
    cases = [
        lambda N: N.square(N.array(True)),
        lambda N: N.power(N.array(True), 3),
        lambda N: N.int32(1) + 2**40,
        lambda N: N.where(N.array([True, False]), N.int8(1), 2**7),
    ]
    with jax.enable_x64(True), xform.enable_x64(True):
        for make in cases:
            _assert_same_outcome(_outcome(lambda: make(xnp)), _outcome(lambda: make(jnp)))  # noqa: B023
