"""xform.pmap over 1 to 8 CPU devices, against jax.pmap (the oracle) and the same computation
on one device (xform.vmap with the same axis name, or NumPy): in_axes/out_axes, pytrees,
static and donated arguments, device lists, results as ShardedArrays that stay on their
devices, composition with jit, autodiff, vmap, scan and cond, jaxprs and lowering, errors."""

import functools
import os
import pathlib
import re
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import xform
import xform.numpy as xnp
from lowering import runtime
from tests.harness import assert_same
from xform import lax as xl
from xform.runtime.array import ShardedArray

SIZES = [1, 2, 4, 8]
RNG = np.random.default_rng(0)
F32_TOL = dict(rtol=1e-5, atol=1e-5)  # sums over devices may be added in another order


def rotated(cases):
    """``(case, n)`` pairs: each case at two of the sizes, every size used."""
    return [(c, SIZES[(i + k) % len(SIZES)]) for i, c in enumerate(cases) for k in (0, 2)]


def r(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def check_pmap(
    xf,
    jf,
    args,
    kwargs=None,
    *,
    in_axes=0,
    out_axes=0,
    axis_name="i",
    tol=F32_TOL,
    vmap=True,
    oracle_axes=None,
    **pmap_kwargs,
):
    """``xform.pmap(xf)`` equals ``jax.pmap(jf)`` and, if ``vmap``, ``xform.vmap(xf)`` on one
    device with the same axes and axis name. ``oracle_axes`` overrides in_axes/out_axes for
    jax.pmap only (it takes non-negative axes only). Returns xform's result."""
    kwargs = kwargs or {}
    axes = dict(in_axes=in_axes, out_axes=out_axes, axis_name=axis_name)
    got = xform.pmap(xf, **axes, **pmap_kwargs)(*args, **kwargs)
    expected = jax.pmap(jf, **{**axes, **(oracle_axes or {})}, **pmap_kwargs)(*args, **kwargs)
    assert_same(got, expected, **tol, what="pmap vs jax.pmap")
    if vmap:
        assert_same(
            got, xform.vmap(xf, **axes)(*args, **kwargs), **tol, what="pmap vs vmap on one device"
        )
    return got


def assert_sharded(y, n, axis=0, devices=None):
    """``y`` is a ShardedArray of ``n`` shards on distinct devices (``devices``, in order, if
    given), shard ``k`` being slice ``k`` along ``axis`` kept at size 1."""
    assert isinstance(y, ShardedArray), type(y)
    shards = sorted(y._buf.addressable_shards, key=lambda s: s.index[axis].start or 0)
    assert len(shards) == n
    assert len({s.device for s in shards}) == n
    if devices is not None:
        assert [s.device for s in shards] == list(devices)
    whole = np.asarray(y)
    for k, s in enumerate(shards):
        expected_shape = whole.shape[:axis] + (1,) + whole.shape[axis + 1 :]
        assert s.data.shape == expected_shape
        np.testing.assert_array_equal(np.asarray(s.data), np.take(whole, [k], axis=axis))


# --------------------------------------------------------------------------- shared functions
# Built once per module (xform.pmap caches one program per signature), so that tests that
# call the same mapped function share its compilation.


@functools.cache
def elementwise(lib_name):
    lib = xnp if lib_name == "xform" else jnp
    pmap = xform.pmap if lib_name == "xform" else jax.pmap
    return pmap(lambda a: lib.sin(a) * 2.0 + 1.0, axis_name="i")


@functools.cache
def normalise():
    return xform.pmap(lambda a: a / xl.psum(a * a, "i"), axis_name="i")


# --------------------------------------------------------------------------- basic mapping


@pytest.mark.parametrize("n", SIZES)
def test_elementwise(n):
    x = r(n, 3)
    got = elementwise("xform")(x)
    assert_same(got, elementwise("jax")(x), what="pmap vs jax.pmap")
    assert_same(
        got,
        np.sin(x) * np.float32(2.0) + np.float32(1.0),
        rtol=1e-6,
        atol=1e-6,
        check_weak_type=False,
        what="pmap vs numpy",
    )
    assert_sharded(got, n)


@pytest.mark.parametrize("n", SIZES)
def test_pytrees_in_and_out(n):
    def f(lib):
        def body(p, xs):
            return {"y": lib.sin(p["w"]) * xs[0], "z": [p["b"] + 1.0, xs[1] * 2]}

        return body

    p = {"w": r(n, 3), "b": r(n)}
    xs = (r(n, 3), RNG.integers(-9, 10, (n, 2, 2)).astype(np.int32))
    got = check_pmap(f(xnp), f(jnp), (p, xs))
    assert isinstance(got, dict) and isinstance(got["z"], list)
    for leaf in jax.tree_util.tree_leaves(got):
        assert_sharded(leaf, n)


# name: (in_axes, per-argument shapes for n devices, in_axes for jax.pmap, which takes
# non-negative axes only)
_IN_AXES = {
    "int": (0, lambda n: ((n, 3), (n, 3)), 0),
    "none": ((0, None), lambda n: ((n, 3), (3,)), (0, None)),
    "tuple_axis1": ((1, 0), lambda n: ((3, n), (n, 3)), (1, 0)),
    "negative": (-1, lambda n: ((2, 3, n), (3, n)), (2, 1)),
    "none_first": ((None, 0), lambda n: ((3,), (n, 3)), (None, 0)),
}


@pytest.mark.parametrize(("case", "n"), rotated(sorted(_IN_AXES)))
def test_in_axes(n, case):
    in_axes, shapes, oracle_in_axes = _IN_AXES[case]
    args = [r(*s) for s in shapes(n)]

    def f(lib):
        return lambda a, b: lib.sin(a) * b + a.sum()

    check_pmap(f(xnp), f(jnp), args, in_axes=in_axes, oracle_axes=dict(in_axes=oracle_in_axes))


@pytest.mark.parametrize("n", SIZES)
def test_in_axes_dict_prefix(n):
    def f(lib):
        return lambda p, x: lib.cos(p["w"] * x) + p["b"]

    p = {"w": r(3), "b": r(3, n)}
    x = r(3, n)
    in_axes = ({"w": None, "b": 1}, 1)
    check_pmap(f(xnp), f(jnp), (p, x), in_axes=in_axes)


@pytest.mark.parametrize(("out_axes", "n"), rotated([1, -1, (1, None), {"y": 2, "s": None}]))
def test_out_axes(out_axes, n):
    def f(lax):
        def body(a):
            y, s = a * 3.0, lax.psum(a, "i")
            return {"y": y, "s": s} if isinstance(out_axes, dict) else (y, s)

        return body

    x = r(n, 2, 3)
    if isinstance(out_axes, int):  # one array out: the first of the pair
        got = check_pmap(
            lambda a: f(xl)(a)[0],
            lambda a: f(jax.lax)(a)[0],
            (x,),
            out_axes=out_axes,
            oracle_axes=dict(out_axes=out_axes % 3),
        )
        assert_sharded(got, n, axis=out_axes % 3)
        return
    got = check_pmap(f(xl), f(jax.lax), (x,), out_axes=out_axes)
    unmapped = got[1] if isinstance(got, tuple) else got["s"]
    assert unmapped.shape == (2, 3)
    np.testing.assert_allclose(np.asarray(unmapped), x.sum(0), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("n", SIZES)
def test_kwargs_are_mapped(n):
    def f(lib):
        return lambda a, scale=1.0, shift=None: lib.tanh(a) * scale + shift

    x, scale, shift = r(n, 3), r(n, 3), r(n)
    check_pmap(f(xnp), f(jnp), (x,), dict(scale=scale, shift=shift[:, None]))


@pytest.mark.parametrize("n", [1, 4])
def test_static_broadcasted_argnums(n):
    def f(lib):
        def body(a, power, mode):
            y = a**power
            return lib.sin(y) if mode == "sin" else lib.cos(y)

        return body

    x = r(n, 3)
    fx = xform.pmap(f(xnp), static_broadcasted_argnums=(1, 2))
    fj = jax.pmap(f(jnp), static_broadcasted_argnums=(1, 2))
    for power, mode in [(2, "sin"), (3, "sin"), (2, "cos"), (2, "sin")]:
        assert_same(fx(x, power, mode), fj(x, power, mode), what=f"{power}, {mode}")
    assert_same(xform.pmap(f(xnp), static_broadcasted_argnums=[2, 1])(x, 2, "cos"), fj(x, 2, "cos"))


def _device_lists(n):
    devs = xform.devices()
    return {
        "reversed": devs[::-1][:n],
        "last": devs[8 - n :],
        "strided": devs[::-1][::2][:n] if n <= 4 else devs[::-1],
    }


@pytest.mark.parametrize(("which", "n"), rotated(["reversed", "last", "strided"]))
def test_devices(which, n):
    devices = _device_lists(n)[which]

    def f(lax):
        return lambda a: (a + lax.axis_index("i"), lax.psum(a, "i"))

    x = r(n, 3)
    got = check_pmap(f(xl), f(jax.lax), (x,), devices=devices)
    for y in got:
        assert_sharded(y, n, devices=devices)


def test_devices_of_odd_count():
    devs = xform.devices()
    devices = [devs[5], devs[2], devs[7]]
    got = xform.pmap(lambda a: a * xl.axis_index("i"), axis_name="i", devices=devices)(r(3, 2))
    assert_sharded(got, 3, devices=devices)
    assert_same(
        xform.pmap(lambda: xl.axis_index("i"), axis_name="i", axis_size=3, devices=devices)(),
        np.arange(3, dtype=np.int32),
    )


@pytest.mark.parametrize("n", SIZES)
def test_axis_size_without_mapped_inputs(n):
    # jax.pmap (0.10.2) requires a mapped argument; xform follows vmap: compare with it.
    c = r(3)
    body = lambda a: a * xl.axis_index("i") + xl.psum(a, "i")  # noqa: E731
    got = xform.pmap(body, in_axes=None, axis_size=n, axis_name="i")(c)
    assert_same(got, xform.vmap(body, in_axes=None, axis_size=n, axis_name="i")(c))
    expected = c * np.arange(n, dtype=np.float32)[:, None] + n * c
    np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-5, atol=1e-6)
    assert_sharded(got, n)
    got = xform.pmap(lambda: xl.axis_index("i"), axis_size=n, axis_name="i")()
    assert_same(got, np.arange(n, dtype=np.int32))


@pytest.mark.parametrize("n", SIZES)
def test_donated_pmap_result_is_deleted(n):
    # What jax.pmap does: an argument already split as the program wants it (the result of
    # a pmap over the same devices) is consumed; one that has to be copied to the devices
    # first is not (a host array; a one-device array, unless n == 1 for jax).
    x = r(n, 3)
    jz = jax.pmap(lambda a: a + 1.0)(x)
    jy = jax.pmap(lambda a: a * 2.0, donate_argnums=0)(jz)
    assert jz.is_deleted()
    z = xform.pmap(lambda a: a + 1.0)(x)
    y = xform.pmap(lambda a: a * 2.0, donate_argnums=0)(z)
    assert_same(y, jy)
    assert z.is_deleted()
    with pytest.raises(RuntimeError, match="deleted"):
        np.asarray(z)
    with pytest.raises(RuntimeError, match="deleted"):
        z + 1.0
    jw = jnp.asarray(x)
    jax.pmap(lambda a: a * 2.0, donate_argnums=0)(jw)
    w = xnp.asarray(x)
    assert_same(
        xform.pmap(lambda a: a * 2.0, donate_argnums=0)(w),
        x * np.float32(2.0),
        check_weak_type=False,
    )
    if n > 1:  # (a one-device jax array is already where a 1-device pmap wants it)
        assert not w.is_deleted() and not jw.is_deleted()
    assert_same(w, x, check_weak_type=False)


@pytest.mark.parametrize("n", [1, 8])
def test_closures_over_arrays(n):
    c_np, c_x = r(3), xnp.asarray(r(n, 3))
    c_j = jnp.asarray(c_x)

    def f(lib, c):
        return lambda a: lib.sin(a) * c_np + c.sum(0)

    check_pmap(f(xnp, c_x), f(jnp, c_j), (r(n, 3),))


@pytest.mark.parametrize("n", SIZES)
def test_integer_dtypes(n):
    def f(lax):
        return lambda a, b: (a * 3 + b // 2, lax.psum(a, "i"), lax.pmax(b, "i"), a > b)

    a = RNG.integers(-9, 10, (n, 4)).astype(np.int32)
    b = RNG.integers(1, 10, (n, 4)).astype(np.uint8)
    check_pmap(f(xl), f(jax.lax), (a, b))


@pytest.mark.parametrize("n", SIZES)
def test_float64(n, x64):
    def f(lib, lax):
        return lambda a, b: (lib.exp(a) * b, lax.psum(a, "i"), lax.pmean(b.astype(lib.int64), "i"))

    a, b = r(n, 3, dtype=np.float64), RNG.integers(0, 9, (n, 3)).astype(np.int64)
    with jax.enable_x64(True):
        got = check_pmap(f(xnp, xl), f(jnp, jax.lax), (a, b), tol=dict(rtol=1e-13, atol=1e-13))
    assert [y.dtype for y in got] == [np.float64, np.float64, np.float64]


@pytest.mark.parametrize("n", [2, 8])
def test_weak_types(n):
    weak = jax.lax.broadcast(2.0, (n,))  # a weakly typed float array
    assert weak.weak_type
    check_pmap(lambda a: a * 2, lambda a: a * 2, (weak,))
    # an unmapped Python scalar keeps its weak type through the map
    f = lambda a, s: s * 2.0 + 0 * a.astype(np.int32)  # noqa: E731
    got = check_pmap(f, f, (r(n), 3.0), in_axes=(0, None))
    assert got.weak_type
    got = check_pmap(lambda a: a + 1.0, lambda a: a + 1.0, (r(n),))
    assert not got.weak_type


# --------------------------------------------------------------------------- ShardedArray


def no_host_copies(*args, **kwargs):
    raise AssertionError("a ShardedArray went back through the host")


@pytest.mark.parametrize("n", SIZES)
def test_results_stay_on_their_devices(n, monkeypatch):
    x = r(n, 3)
    y = normalise()(x)
    assert_sharded(y, n)
    monkeypatch.setattr(runtime, "put_sharded", no_host_copies)
    z = normalise()(y)
    assert z._buf is not y._buf
    w = elementwise("xform")(z)  # another pmap over the same devices and axis name
    monkeypatch.undo()
    expected_y = x / (x * x).sum(0)
    expected_z = expected_y / (expected_y * expected_y).sum(0)
    np.testing.assert_allclose(np.asarray(y), expected_y, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(z), expected_z, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(w), np.sin(expected_z) * 2 + 1, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("n", [2, 8])
def test_results_stay_on_their_devices_whatever_the_axis_names(n, monkeypatch):
    # The shards of y are where any pmap over the same devices wants its argument split
    # along 0, whatever the pmaps' axis names ("A following pmap reads the slices where
    # they are", says ShardedArray).
    x = r(n, 3)
    y = xform.pmap(lambda a: a + 1.0, axis_name="batch")(x)
    monkeypatch.setattr(runtime, "put_sharded", no_host_copies)
    z = xform.pmap(lambda a: a * 2.0)(y)
    w = xform.pmap(lambda a: a - xl.psum(a, "other"), axis_name="other")(y)
    monkeypatch.undo()
    np.testing.assert_allclose(np.asarray(z), (x + 1) * 2, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(w), (x + 1) - (x + 1).sum(0), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("n", [2, 8])
def test_sharded_arrays_elsewhere(n):
    # Anything but a pmap on the same devices gathers the shards first.
    x = r(n, 3)
    y = normalise()(x)
    expected = x / (x * x).sum(0)
    tol = dict(rtol=1e-5, atol=1e-6, check_weak_type=False)
    assert_same(xnp.sin(y), np.sin(expected), **tol)
    assert_same(y + 1.0, expected + 1, **tol)
    assert_same(xform.jit(lambda a: a.sum(0))(y), expected.sum(0), **tol)
    assert_same(y[1], expected[1], **tol)
    moved = xform.pmap(lambda a: a * 1.0, devices=xform.devices()[::-1][:n])(y)
    assert_same(moved, expected, **tol)
    assert_sharded(moved, n, devices=xform.devices()[::-1][:n])
    assert_same(normalise()(np.asarray(y)), normalise()(y), **tol)
    unmapped = xform.pmap(lambda a, b: a * b.sum(), in_axes=(0, None))(x, y)
    assert_same(unmapped, x * expected.sum(), **tol)


@pytest.mark.parametrize("n", [2, 4])
def test_arrays_placed_for_pmap_are_read_in_place(n, monkeypatch):
    # device_put with a NamedSharding (JAX's idiom since device_put_sharded/replicated went),
    # and xform's device_put_sharded/device_put_replicated, lay arrays out as pmap reads them.
    devices = xform.devices()[:n]
    mesh = jax.sharding.Mesh(np.array(devices), ("d",))
    P = jax.sharding.PartitionSpec
    x, w = r(n, 3), r(3)
    xs = xform.device_put(x, jax.sharding.NamedSharding(mesh, P("d")))
    ws = xform.device_put(w, jax.sharding.NamedSharding(mesh, P()))
    stacked = xform.device_put_sharded([x[k] for k in range(n)], devices)
    replicated = xform.device_put_replicated({"w": w}, devices)
    assert_sharded(xs, n, devices=devices)
    assert_sharded(stacked, n, devices=devices)
    assert_sharded(replicated["w"], n, devices=devices)
    np.testing.assert_array_equal(np.asarray(ws), w)
    np.testing.assert_array_equal(np.asarray(replicated["w"]), np.broadcast_to(w, (n, 3)))
    monkeypatch.setattr(runtime, "put_sharded", no_host_copies)
    f = xform.pmap(lambda a, b: a * b, axis_name="i", in_axes=(0, None), devices=devices)
    g = xform.pmap(lambda a, p: a * p["w"], axis_name="i", devices=devices)
    got = [f(xs, ws), g(stacked, replicated)]
    monkeypatch.undo()
    for y in got:
        np.testing.assert_allclose(np.asarray(y), x * w, rtol=1e-6)
    with pytest.raises(ValueError, match="3 shards for 2 devices"):
        xform.device_put_sharded([x[0]] * 3, xform.devices()[:2])


# --------------------------------------------------------------------------- composition


@pytest.mark.parametrize("n", [1, 4])
def test_jit_inside_pmap(n):
    def f(lib, lax, jit):
        return lambda a: jit(lambda b: lib.sin(b) * lax.psum(b, "i"))(a) + 1.0

    check_pmap(f(xnp, xl, xform.jit), f(jnp, jax.lax, jax.jit), (r(n, 3),))


@pytest.mark.parametrize("n", SIZES)
def test_jit_of_pmap(n):
    def f(lib, lax, pmap):
        return pmap(
            lambda a, b: (lib.sin(a) * lax.psum(b, "i"), lax.all_gather(a, "i")),
            axis_name="i",
            in_axes=(0, None),
        )

    x, c = r(n, 3), r(3)
    got = xform.jit(f(xnp, xl, xform.pmap))(x, c)
    expected = jax.jit(f(jnp, jax.lax, jax.pmap))(x, c)
    assert_same(got, expected, **F32_TOL)
    assert_same(got, f(xnp, xl, xform.pmap)(x, c), **F32_TOL)


@pytest.mark.parametrize("n", [1, 4])
def test_grad_of_pmapped_loss(n):
    def loss(lib, lax, pmap):
        mapped = pmap(
            lambda w, a: lib.tanh(a * w) * lax.pmean(a, "i").sum(), axis_name="i", in_axes=(None, 0)
        )
        return lambda w, a: (mapped(w, a) ** 2).sum()

    w, x = r(3), r(n, 3)
    got = xform.grad(loss(xnp, xl, xform.pmap), argnums=(0, 1))(w, x)
    expected = jax.grad(loss(jnp, jax.lax, jax.pmap), argnums=(0, 1))(w, x)
    assert_same(got, expected, rtol=1e-5, atol=1e-5)
    on_one_device = xform.grad(loss(xnp, xl, xform.vmap), argnums=(0, 1))(w, x)
    assert_same(got, on_one_device, rtol=1e-5, atol=1e-5)
    got = xform.jit(xform.grad(loss(xnp, xl, xform.pmap)))(w, x)
    assert_same(got, expected[0], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(("reduce", "n"), rotated(["psum", "pmean"]))
def test_pmap_of_grad_with_collective(reduce, n):
    # The transpose of psum is psum, as in JAX: every device's cotangent of the psum is the
    # sum of all devices' (n ones), so device k gets n times the gradient of its own term;
    # with pmean (psum / n), exactly that gradient.
    def local_loss(lib):
        return lambda w, a: ((lib.tanh(a @ w) - 1.0) ** 2).sum()

    def step(lib, lax, grad):
        return grad(lambda w, a: getattr(lax, reduce)(local_loss(lib)(w, a), "i"))

    w, x = r(3, 2), r(n, 4, 3)
    got = check_pmap(
        step(xnp, xl, xform.grad), step(jnp, jax.lax, jax.grad), (w, x), in_axes=(None, 0)
    )
    scale = n if reduce == "psum" else 1
    for k in range(n):
        expected = xform.grad(local_loss(xnp))(w, x[k]) * np.float32(scale)
        assert_same(got[k], expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("n", SIZES)
def test_vmap_inside_pmap(n):
    def f(lib, lax, vmap):
        return vmap(lambda a, b: lib.sin(a) * lax.psum(b, "i"), in_axes=(0, None))

    x, y = r(n, 5, 3), r(n, 3)
    check_pmap(f(xnp, xl, xform.vmap), f(jnp, jax.lax, jax.vmap), (x, y))


@pytest.mark.parametrize("n", SIZES)
def test_vmap_of_pmap(n):
    def f(lib, lax, vmap, pmap):
        inner = pmap(
            lambda a, b: lib.sin(a) * lax.psum(a, "i") + b, axis_name="i", in_axes=(0, None)
        )
        return vmap(inner, in_axes=(1, 0), out_axes=1)

    x, y = r(n, 5, 3), r(5, 3)
    got = f(xnp, xl, xform.vmap, xform.pmap)(x, y)
    expected = f(jnp, jax.lax, jax.vmap, jax.pmap)(x, y)
    assert_same(got, expected, **F32_TOL)
    expected_np = np.sin(x) * x.sum(0) + y
    np.testing.assert_allclose(np.asarray(got), expected_np, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("n", [2, 8])
def test_pmap_of_scan(n):
    def f(lax):
        def body(carry, a):
            total = lax.psum(a, "i")
            return carry * 0.5 + total, carry + a

        return lambda xs: lax.scan(body, xs[0] * 0.0, xs)

    xs = r(n, 4, 3)
    check_pmap(f(xl), f(jax.lax), (xs,))


@pytest.mark.parametrize("n", [1, 8])
def test_pmap_of_cond(n):
    # A collective in a branch needs every device to take that branch: the predicate is
    # the same on all of them.
    def f(lib, lax):
        def body(a):
            pred = lax.psum(a.sum(), "i") > 0
            return lax.cond(
                pred,
                lambda b: lib.sin(b) + lax.psum(b, "i"),
                lambda b: lib.cos(b) * lax.pmax(b, "i"),
                a,
            )

        return body

    def g(lib, lax):  # predicates that differ from device to device
        def body(a):
            y = lax.cond(lax.axis_index("i") % 2 == 0, lib.sin, lib.cos, a)
            return lax.cond(a.sum() > 0, lambda b: b * 2.0, lib.exp, y)

        return body

    x = r(n, 3)
    check_pmap(f(xnp, xl), f(jnp, jax.lax), (x,))
    check_pmap(g(xnp, xl), g(jnp, jax.lax), (x,))


@pytest.mark.parametrize("n", SIZES)
def test_jacobians_through_pmap(n):
    def f(lib, lax, pmap):
        return pmap(lambda a: lib.sin(a) * lax.psum(a * a, "i"), axis_name="i")

    x = r(n, 2)
    got_fwd = xform.jacfwd(f(xnp, xl, xform.pmap))(x)
    got_rev = xform.jacrev(f(xnp, xl, xform.pmap))(x)
    on_one_device = xform.jacfwd(f(xnp, xl, xform.vmap))(x)
    assert_same(got_fwd, on_one_device, rtol=1e-5, atol=1e-5)
    assert_same(got_rev, on_one_device, rtol=1e-5, atol=1e-5)
    if n == 4:  # jax's jacobians of a pmap are slow to compile: one size
        assert_same(got_fwd, jax.jacfwd(f(jnp, jax.lax, jax.pmap))(x), rtol=1e-5, atol=1e-5)
        assert_same(got_rev, jax.jacrev(f(jnp, jax.lax, jax.pmap))(x), rtol=1e-5, atol=1e-5)


def test_second_order():
    def f(lib, lax, pmap):
        mapped = pmap(lambda a: lib.sin(a) * lax.psum(a, "i"), axis_name="i")
        return lambda a: mapped(a).sum()

    x = r(2, 2)
    assert_same(
        xform.hessian(f(xnp, xl, xform.pmap))(x),
        jax.hessian(f(jnp, jax.lax, jax.pmap))(x),
        rtol=1e-5,
        atol=1e-5,
    )


# --------------------------------------------------------------------------- jaxprs, lowering


def test_make_jaxpr_shows_one_pmap_with_the_per_device_body():
    f = xform.pmap(lambda a, b: xnp.sin(a) + xl.psum(a, "i") * b, axis_name="i", in_axes=(0, None))
    jaxpr = xform.make_jaxpr(f)(r(4, 3), r(3))
    (eqn,) = jaxpr.jaxpr.eqns
    assert eqn.primitive.name == "pmap"
    assert eqn.params["axis_name"] == "i" and eqn.params["axis_size"] == 4
    assert eqn.params["in_axes"] == (0, None) and eqn.params["out_axes"] == (0,)
    body = eqn.params["jaxpr"]
    assert [a.shape for a in body.in_avals] == [(3,), (3,)]
    assert [e.primitive.name for e in body.jaxpr.eqns] == ["sin", "psum", "mul", "add"]
    assert jaxpr.out_avals[0].shape == (4, 3)
    text = str(jaxpr)
    assert text.count("pmap[") == 1 and "psum[axes=('i',) axis_index_groups=None]" in text


def test_jit_of_pmap_lowers_to_replicated_collectives():
    f = xform.jit(xform.pmap(lambda a: xl.all_gather(a / xl.psum(a, "i"), "i"), axis_name="i"))
    text = f.lower(r(4, 3)).as_text()
    assert "mhlo.num_replicas = 4" in text
    assert "stablehlo.all_reduce" in text and "stablehlo.all_gather" in text
    assert "replica_groups = dense<[[0, 1, 2, 3]]>" in text


def test_lowered_pmap_is_the_per_device_program():
    # pmap(f).lower(x): the module every replica runs. Its main takes and returns one slice
    # (the mapped axis kept at size 1, as the shards are), and its ops are JAX's per-shard
    # ones: the body between a reshape in and a reshape out.
    f = xform.pmap(lambda a: xl.psum(a, "i") * 2.0, axis_name="i")
    text = f.lower(r(4, 3)).as_text()
    assert "mhlo.num_replicas = 4" in text and "mhlo.num_partitions = 1" in text
    assert "@main(%arg0: tensor<1x3xf32>) -> tensor<1x3xf32>" in text
    assert "replica_groups = dense<[[0, 1, 2, 3]]>" in text
    ops = re.findall(r"stablehlo\.(\w+)", text.split("@main")[1])
    assert ops == [
        "reshape",
        "all_reduce",
        "add",
        "return",
        "constant",
        "broadcast_in_dim",
        "multiply",
        "reshape",
    ], ops
    jax_text = (
        jax.pmap(lambda a: jax.lax.psum(a, "i") * 2.0, axis_name="i").lower(r(4, 3)).as_text()
    )
    jax_ops = re.findall(r"stablehlo\.(\w+)", jax_text.split("manual_computation")[1])
    jax_ops = [op for op in jax_ops if op != "channel_handle"]  # partitions need one
    assert sorted(set(ops) - {"return"}) == sorted(set(jax_ops) - {"return"}), jax_ops


_XLA_FLAGS_SCRIPT = """
import numpy as np
import xform
from xform import lax
n = xform.device_count()
x = np.arange(n * 3, dtype=np.float32).reshape(n, 3)
y = xform.pmap(lambda a: lax.psum(a, "i"), axis_name="i")(x)
np.testing.assert_allclose(np.asarray(y), np.broadcast_to(x.sum(0), x.shape))
try:
    xform.pmap(lambda a: a)(np.ones((n + 1, 3), np.float32))
except ValueError as e:
    print("error:", e)
print("devices:", n)
"""


def test_host_devices_from_xla_flags():
    # The other way to get host devices: XLA_FLAGS, read when the backend starts (here, in a
    # fresh interpreter with 4 of them: pmap over all, and one more is an error).
    env = dict(
        os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4", JAX_PLATFORMS="cpu"
    )
    proc = subprocess.run(
        [sys.executable, "-c", _XLA_FLAGS_SCRIPT],
        env=env,
        text=True,
        capture_output=True,
        timeout=120,
        check=False,
        cwd=pathlib.Path(__file__).resolve().parents[1],
    )
    assert proc.returncode == 0, proc.stderr
    assert "devices: 4" in proc.stdout
    assert "requires 5 logical devices" in proc.stdout and "only 4 XLA devices" in proc.stdout


# --------------------------------------------------------------------------- errors


def test_mapped_axis_larger_than_device_count():
    with pytest.raises(ValueError, match=r"requires 9 logical devices.*only 8 XLA devices"):
        xform.pmap(lambda a: a * 2.0)(r(9, 2))
    with pytest.raises(ValueError, match=r"requires 3 logical devices.*only 2 XLA devices"):
        xform.pmap(lambda a: a * 2.0, devices=xform.devices()[:2])(r(3, 2))


def test_mapped_axes_of_different_sizes():
    with pytest.raises(
        ValueError,
        match=r"inconsistent sizes(.|\n)*argument a .* has size 4"
        r"(.|\n)*argument b .* has size 3",
    ):
        xform.pmap(lambda a, b: a + b)(r(4, 2), r(3, 2))


def test_axes_out_of_range():
    with pytest.raises(ValueError, match=r"in_axes: axis 2 is out of bounds .* rank 2"):
        xform.pmap(lambda a: a, in_axes=2)(r(4, 3))
    with pytest.raises(ValueError, match=r"out_axes: axis 3 is out of bounds .* rank 1"):
        xform.pmap(lambda a: a, out_axes=3)(r(4, 3))
    with pytest.raises(ValueError, match=r"len\(in_axes\)=2, len\(args\)=1"):
        xform.pmap(lambda a: a, in_axes=(0, 0))(r(4, 3))


def test_nested_pmap_needing_more_devices():
    f = xform.pmap(xform.pmap(lambda a: a + 1.0, axis_name="j"), axis_name="i")
    with pytest.raises(
        ValueError,
        match=r"requires 16 logical devices \(4 along 'i' times 4 "
        r"for the pmaps inside it\).*only 8",
    ):
        f(r(4, 4, 2))


def test_static_and_donated_argument():
    with pytest.raises(ValueError, match=r"both static and donated"):
        xform.pmap(lambda a, k: a * k, static_broadcasted_argnums=1, donate_argnums=1)
