"""Smaller differences from JAX 0.10.2 that JAX's own tests found, each pinned against JAX as
the oracle: gradients through a batched ``cond``, loop carries vmap leaves unbatched, typed
key arrays and the other PRNG implementations, and a handful of library edge cases."""

import copy

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import xform
import xform.numpy as xnp
from xform import lax

# --------------------------------------------------------------------------- batched cond


def _sum_of_batched_cond(vmap, cond, np_):
    """sum(vmap(cond(x > 0, sqrt, identity))): every branch runs on the whole batch."""

    def f(x):
        return np_.sum(vmap(lambda x: cond(x > 0, np_.sqrt, lambda x: x, x))(x))

    return f


def test_grad_of_batched_cond_sends_no_nan_from_the_branch_not_taken():
    x = np.array([0.0, 1.0, 4.0, -2.0], np.float32)
    want = jax.grad(_sum_of_batched_cond(jax.vmap, jax.lax.cond, jnp))(x)
    got = xform.grad(_sum_of_batched_cond(xform.vmap, lax.cond, xnp))(x)
    assert not np.isnan(np.asarray(want)).any()
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)


def test_grad_of_batched_switch_through_a_closed_over_value():
    def f(vmap, switch, np_, c, idx):
        branches = [lambda x: np_.sqrt(c) * x, lambda x: np_.log(c) + x, lambda x: x * x]
        return np_.sum(vmap(lambda i, x: switch(i, branches, x))(idx, np_.ones(3)))

    idx = np.array([2, 2, 1], np.int32)
    c = np.float32(0.0)  # sqrt's and log's derivatives are infinite here
    want = jax.grad(lambda c: f(jax.vmap, jax.lax.switch, jnp, c, idx))(c)
    got = xform.grad(lambda c: f(xform.vmap, lax.switch, xnp, c, idx))(c)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


# --------------------------------------------------------------------------- forwarding


def _loops(lax_, np_):
    """Loops whose second carry the body only reads (and the predicate never does)."""

    def cond_(x, y):
        return lax_.cond(x < 3, lambda x, y: (x * 2, y), lambda x, y: (x * 3, y), x, y)

    def while_(x, y):
        body = lambda c: (c[0] * 2 + c[1], c[1])  # noqa: E731
        return lax_.while_loop(lambda c: c[0] < 20, body, (x, y))

    def fori_(x, y):
        return lax_.fori_loop(0, x.astype(np_.int32), lambda i, c: (c[0] * 2, c[1]), (x, y))

    def scan_in_cond(x, y):
        def scan(x, y):
            return lax_.scan(lambda c, _: ((c[0] * 2, c[1]), None), (x, y), None, length=2)[0]

        return lax_.cond(x > 1, scan, lambda x, y: (x, y), x, y)

    return [cond_, while_, fori_, scan_in_cond]


def test_vmap_leaves_carries_the_loop_only_reads_unbatched():
    x, y = np.arange(1.0, 4.0, dtype=np.float32), np.float32(3.0)
    for want_f, got_f in zip(_loops(jax.lax, jnp), _loops(lax, xnp), strict=True):
        want = jax.vmap(want_f, in_axes=(0, None), out_axes=(0, None))(x, y)
        got = xform.vmap(got_f, in_axes=(0, None), out_axes=(0, None))(x, y)
        for w, g in zip(want, got, strict=True):
            np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


def test_cond_and_scan_hand_on_what_they_do_not_change():
    y = jnp.array(3.0)

    def f(lax_, x, y):
        return lax_.cond(x < 3, lambda x, y: (x * 2, y), lambda x, y: (x * 3, y), x, y)

    assert jax.vmap(lambda x: f(jax.lax, x, y), out_axes=(0, None))(jnp.arange(3))[1] is y
    y = xnp.array(3.0)
    assert xform.vmap(lambda x: f(lax, x, y), out_axes=(0, None))(xnp.arange(3))[1] is y
    # Python and NumPy operands handed on become arrays, their weak types kept
    branch = lambda x, y: (x, y)  # noqa: E731
    want = jax.lax.cond(True, branch, branch, 1.0, np.float32(2))
    got = lax.cond(True, branch, branch, 1.0, np.float32(2))
    assert [(type(g), g.dtype, g.weak_type) for g in got] == [
        (xform.Array, w.dtype, w.weak_type) for w in want
    ]
    # a y that is an x is the xs themselves: the body returns one output, as JAX's
    for make_jaxpr, lax_ in ((jax.make_jaxpr, jax.lax), (xform.make_jaxpr, lax)):
        jaxpr = make_jaxpr(lambda xs, lax_=lax_: lax_.scan(lambda c, x: (c + 1, x), 0, xs))(
            np.ones(3)
        )
        assert len(jaxpr.eqns[0].params["jaxpr"].jaxpr.outvars) == 1
        assert jaxpr.jaxpr.outvars[1] is jaxpr.jaxpr.invars[0]


# --------------------------------------------------------------------------- scan's unroll


def test_scan_unroll_zero_and_true_run_the_whole_loop_as_jax():
    def run(lax_, unroll, jit):
        f = lambda xs: lax_.scan(lambda c, x: (c + x, c * 2), 0.0, xs, unroll=unroll)  # noqa: E731
        return jit(f)(np.arange(5.0, dtype=np.float32))

    for unroll in (0, True, False, 2, 7, np.int32(3)):
        want = run(jax.lax, unroll, jax.jit)
        got = run(lax, unroll, xform.jit)
        for w, g in zip(want, got, strict=True):
            np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
    for lax_ in (jax.lax, lax):
        jaxpr = jax.make_jaxpr if lax_ is jax.lax else xform.make_jaxpr
        eqn = jaxpr(lambda xs, lax_=lax_: lax_.scan(lambda c, x: (c + x, c), 0.0, xs, unroll=0))(
            np.ones(4)
        )
        assert eqn.eqns[0].params["unroll"] == 0
    texts = [
        xform.jit(lambda xs, u=u: lax.scan(lambda c, x: (c + x, c), 0.0, xs, unroll=u))
        .lower(np.ones(4, np.float32))
        .as_text()
        for u in (0, True, 1)
    ]
    assert texts[0] == texts[1] != texts[2]  # 0 unrolls the whole loop, as True does


def test_scan_unroll_errors_as_jax():
    f = lambda c, x: (c, x)  # noqa: E731
    for lax_ in (jax.lax, lax):
        with pytest.raises(ValueError, match="`unroll` must be a `bool` or a non-negative `int`"):
            lax_.scan(f, 0.0, np.ones(3), unroll=-1)
    for jit, lax_, errors in ((jax.jit, jax.lax, jax.errors), (xform.jit, lax, xform.errors)):
        with pytest.raises(
            errors.ConcretizationTypeError,
            match="The `unroll` argument to `scan` expects a concrete `int` or `bool` value",
        ):
            jit(lambda n, x, lax_=lax_: lax_.scan(f, x, (), 10, unroll=n))(3, 1.0)
        with pytest.raises(
            errors.ConcretizationTypeError,
            match="The `length` argument to `scan` expects a concrete `int` value",
        ):
            jit(lambda n, x, lax_=lax_: lax_.scan(f, x, (), n))(3, 1.0)


# --------------------------------------------------------------------------- small library gaps


def test_one_hot_of_a_python_list():
    for dtype in (None, np.int32):
        want = jax.nn.one_hot([0, 2, 1, 5], 3, dtype=dtype)
        got = xform.nn.one_hot([0, 2, 1, 5], 3, dtype=dtype)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_lax_mul_out_dtype():
    cases = [
        (np.int8(100), np.int8(3), np.int32),  # would wrap in int8
        (jnp.bfloat16(1.5), np.float32(3), np.float32),  # mixed dtypes are allowed
        (2, 3.0, np.float32),  # weak operands stay weak
        (np.float32(1.0), np.float16(2.0), "float16"),
        (np.arange(3, dtype=np.int16), np.int16(7), np.float32),
    ]
    for x, y, out_dtype in cases:
        want = jax.lax.mul(x, y, out_dtype=out_dtype)
        got = lax.mul(x, y, out_dtype=out_dtype)
        assert (got.dtype, got.weak_type) == (want.dtype, want.weak_type)
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    with pytest.raises(TypeError, match="lax.mul requires arguments to have the same dtypes"):
        lax.mul(np.float32(1), np.float16(2))
    args = (jnp.bfloat16(2), jnp.bfloat16(3))
    want = jax.grad(lambda x, y: jax.lax.mul(x, y, out_dtype=jnp.float32))(*args)
    got = xform.grad(lambda x, y: lax.mul(x, y, out_dtype=xnp.float32))(*args)
    assert got.dtype == want.dtype and float(got) == float(want)


def test_copy_and_deepcopy_of_a_tracer_are_copies_in_its_trace():
    seen = []

    def f(x):
        y, z = copy.deepcopy(x), copy.copy(x)
        seen.append((y is x, z is x))
        return y * z

    for lib in (jax, xform):
        assert float(lib.jit(f)(3.0)) == 9.0
        assert float(lib.grad(f)(3.0)) == 6.0
        np.testing.assert_array_equal(np.asarray(lib.vmap(f)(np.arange(3.0))), [0, 1, 4])
    assert set(seen) == {(False, False)}


def test_at_apply_as_jax():
    x = np.arange(10.0, dtype=np.float32).reshape(2, 5)
    cases = [
        ((1, np.array([0, 2, 2, 4])), {}),  # a repeated index: applied twice
        ((slice(None), 1), {}),
        ((0, 7), {"mode": "clip"}),
        ((0, 7), {}),  # out of bounds: dropped
        ((1, slice(1, 3)), {"indices_are_sorted": True, "unique_indices": True}),
    ]
    for idx, kw in cases:
        want = jnp.asarray(x).at[idx].apply(lambda v: v * 2 + 1, **kw)
        got = xnp.asarray(x).at[idx].apply(lambda v: v * 2 + 1, **kw)
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
        jitted = xform.jit(lambda x, kw=kw, i=idx: x.at[i].apply(xnp.sin, **kw))(x)
        want = jax.jit(lambda x, kw=kw, i=idx: x.at[i].apply(jnp.sin, **kw))(x)
        np.testing.assert_allclose(np.asarray(jitted), np.asarray(want), rtol=1e-6)


@pytest.mark.filterwarnings("ignore:Some donated buffers were not usable")
def test_stages_donate_argnums_are_flat_leaf_indices():
    def cases(lib):
        f = lib.jit(lambda x, y, z: x + y, donate_argnames=("z",), static_argnums=(1,))
        lowered = f.lower(1.0, 2.0, 3.0)
        g = lib.jit(lambda x, y, z=1.0: x, donate_argnums=(2,), static_argnums=(1,))
        h = lib.jit(lambda x, y: x, donate_argnums=(1,))
        return [
            lowered.donate_argnums,
            lowered.compile().donate_argnums,
            f.trace(1.0, 2.0, 3.0).donate_argnums,
            g.lower(1.0, 2.0).donate_argnums,
            g.lower(1.0, 2.0, z=3.0).donate_argnums,
            h.lower((1.0, 2.0), {"a": 1.0, "b": (2.0, 3.0)}).donate_argnums,
            lib.jit(lambda x: x).lower(1.0).donate_argnums,
        ]

    assert cases(xform) == cases(jax)


def test_make_user_context_keys_the_jit_cache():
    def count(lib):
        traces = []
        ctx = lib.make_user_context()
        f = lib.jit(lambda x: traces.append(1) or x)
        f(1.0)
        with ctx(2):
            f(1.0)
            f(1.0)
        with ctx(3):
            f(1.0)
            with ctx(4):
                f(1.0)
            f(1.0)
        f(1.0)
        ctx.set_global(5)
        try:
            assert (ctx.value, ctx.get_global()) == (5, 5)
            f(1.0)
        finally:
            ctx.set_global(None)
        return len(traces)

    assert count(xform) == count(jax) == 5


def test_average_with_weights_along_a_tuple_axis():
    a = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)
    w = np.arange(1.0, 13.0, dtype=np.float32).reshape(3, 4)
    cases = [
        dict(axis=(1, 2), weights=w),
        dict(axis=(1, 2), weights=w, returned=True),
        dict(axis=(-1, -2), weights=w.T),  # the weights' axes in the order axis names them
        dict(axis=(1, 2), weights=w, keepdims=True),
        dict(axis=(1,), weights=np.arange(3.0, dtype=np.float32)),
        dict(axis=(0, 2), weights=a + 1),
    ]
    for kw in cases:
        want, got = jnp.average(a, **kw), xnp.average(a, **kw)
        for w_, g in zip(jax.tree.leaves(want), jax.tree.leaves(got), strict=True):
            assert g.shape == w_.shape
            np.testing.assert_allclose(np.asarray(g), np.asarray(w_), rtol=1e-6)
    for np_ in (jnp, xnp):
        with pytest.raises(ValueError, match="Shape of weights must be consistent with shape"):
            np_.average(a, axis=(1, 2), weights=w.T)
        with pytest.raises(ValueError, match="Shape of weights must be consistent with shape"):
            np_.average(a, axis=1, weights=w)
        with pytest.raises(ValueError, match="Axis must be specified when shapes of a and"):
            np_.average(a, weights=w)


def test_top_k_refuses_an_axis_longer_than_int32_indices_reach():
    for size, raises in ((2**31 + 1, True), (2**31, False)):
        for lib in (jax, xform):
            x = jax.ShapeDtypeStruct((size,), jnp.bfloat16)
            f = lambda x, lib=lib: lib.lax.top_k(x, 2)  # noqa: E731
            if raises:
                with pytest.raises(ValueError, match="top_k returns int32 indices, which will"):
                    lib.eval_shape(f, x)
            else:
                assert lib.eval_shape(f, x)[1].shape == (2,)


def test_reshape_errors_as_jax():
    shapes = [(4,), (4, -1), (-1, -1), (2, -1, -1), 7, [4, -1]]
    for shape in shapes:
        for arg in (np.arange(6), jnp.arange(6)):  # NumPy data: NumPy's ValueError
            with pytest.raises(Exception) as want:
                jnp.reshape(arg, shape)
            with pytest.raises(type(want.value)) as got:
                xnp.reshape(arg if isinstance(arg, np.ndarray) else xnp.arange(6), shape)
            assert str(got.value).split("\n")[0] == str(want.value).split("\n")[0]
    with pytest.raises(TypeError, match="can only specify one unknown axis size"):
        xnp.arange(6).reshape(-1, -1)


# --------------------------------------------------------------------------- typed keys


def test_key_arrays_answer_array_questions_as_jax():
    for lib in (jax, xform):
        keys = {"one": lib.random.key(0), "three": lib.random.split(lib.random.key(0), 3)}
        keys["rbg"] = lib.random.split(lib.random.key(0, impl="rbg"), 2)
        answers = {
            n: (k.itemsize, k.nbytes, k.is_deleted(), len(k.devices()), k.block_until_ready() is k)
            for n, k in keys.items()
        }
        if lib is jax:
            want = answers
        else:
            assert answers == want
            assert keys["one"].device == keys["one"]._data.device


def test_key_and_wrap_key_data_take_a_key_dtype():
    for lib in (jax, xform):
        k = lib.random.key(7, dtype=lib.random.key_dtype("rbg"))
        assert lib.random.key_impl(k) == "rbg"
        assert lib.random.key_impl(lib.random.key(7, dtype="unsafe_rbg")) == "unsafe_rbg"
        data = lib.random.key_data(lib.random.key(3))
        again = lib.random.wrap_key_data(data, dtype=lib.random.key(3).dtype)
        assert bool(again == lib.random.key(3))
        with pytest.raises(ValueError, match="Cannot specify both `impl` and `dtype` arguments"):
            lib.random.key(0, impl="rbg", dtype="rbg")
        with pytest.raises(ValueError, match="Cannot specify both `impl` and `dtype` arguments"):
            lib.random.wrap_key_data(data, impl="threefry2x32", dtype="threefry2x32")


def _draws(lib, key):
    return [
        lib.random.key_data(key),
        lib.random.key_data(lib.random.split(key, 3)),
        lib.random.key_data(lib.random.fold_in(key, 5)),
        lib.random.uniform(key, (4,)),
        lib.random.normal(key, (2, 3)),
        lib.random.bits(key, (5,)),
        lib.random.bits(key, (3,), np.uint8),
    ]


OTHER_IMPLS = ["philox2x32", "philox4x32", "threefry4x32", "rbg", "unsafe_rbg"]


@pytest.mark.parametrize("impl", OTHER_IMPLS)
def test_other_prng_impls_give_jax_values(impl):
    jitted_draws = xform.jit(lambda k: _draws(xform, k))
    for seed in (42, -3):
        want = _draws(jax, jax.random.key(seed, impl=impl))
        got = _draws(xform, xform.random.key(seed, impl=impl))
        jitted = jitted_draws(xform.random.key(seed, impl=impl))  # one trace for both seeds
        for w, g, j in zip(want, got, jitted, strict=True):
            assert g.dtype == w.dtype
            np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
            np.testing.assert_array_equal(np.asarray(j), np.asarray(w))


def test_64_bit_random_bits_of_every_impl():
    for impl in ["threefry2x32", *OTHER_IMPLS]:
        with jax.enable_x64(True):
            want = jax.random.bits(jax.random.key(5, impl=impl), (3,), np.uint64)
        with xform.enable_x64(True):
            got = xform.random.bits(xform.random.key(5, impl=impl), (3,), np.uint64)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_default_prng_impl_flag_philox2x32():
    values = []
    for lib in (jax, xform):
        with lib.default_prng_impl("philox2x32"):
            values.append([np.asarray(x) for x in _draws(lib, lib.random.PRNGKey(11))])
    for w, g in zip(*values, strict=True):
        np.testing.assert_array_equal(g, w)


# --------------------------------------------------------------------------- remat


def test_remat_of_a_linear_custom_jvp_under_a_policy():
    def make(lib, np_):
        @lib.custom_jvp
        def total(x):
            return np_.sum(x, axis=0)

        @total.defjvp
        def total_jvp(primals, tangents):
            return total(primals[0]), total(tangents[0])  # linear: its own JVP

        policy = lib.checkpoint_policies.dots_with_no_batch_dims_saveable
        f = lib.checkpoint(lambda x: np_.sin(total(x * x)), policy=policy)
        return lambda xs: lib.lax.scan(lambda _, x: (None, f(x)), None, xs)[1]

    xs = np.linspace(0.1, 1.0, 6, dtype=np.float32).reshape(2, 3)
    g, jg = make(xform, xnp), make(jax, jnp)
    for want, got in (
        (jax.grad(lambda x: jg(x).sum())(xs), xform.grad(lambda x: g(x).sum())(xs)),
        (jax.hessian(lambda x: jg(x).sum())(xs), xform.hessian(lambda x: g(x).sum())(xs)),
        (jax.jacfwd(jg)(xs), xform.jacfwd(g)(xs)),
    ):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-6)
    xform.test_util.check_grads(g, (xs,), order=2, modes=["fwd", "rev"])
