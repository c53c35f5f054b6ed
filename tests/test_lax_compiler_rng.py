"""The rng, compiler, approx_top_k and collective additions to xform.lax, against JAX.

rng_bit_generator's bits for each algorithm, rng_uniform's types and range, approx_max_k /
approx_min_k (values, indices, grads, vmap, the non-aggregated output size), the compiler
directions (optimization_barrier under jit/grad/vmap, composite's module text,
platform_dependent, tokens, dce_sink), and axis_size, pswapaxes, pbroadcast, pcast under
pmap and vmap; a bad input per function.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from harness import assert_same
from jax._src.lib import _jax as jax_lib

import xform
import xform.lax as xl
import xform.numpy as xnp
from xform.primitives.sorting import approx_top_k_output_size

KEY = np.array([1, 2, 3, 4], np.uint32)


# --------------------------------------------------------------------------- rng


def test_rng_bit_generator_bits_equal_jax():
    # Every algorithm in one program; u8 bits are drawn as u32 and converted.
    cases = [
        (xl.RandomAlgorithm.RNG_DEFAULT, (3, 5), np.uint8),
        (xl.RandomAlgorithm.RNG_THREE_FRY, (7,), np.uint16),
        (xl.RandomAlgorithm.RNG_PHILOX, (2, 3), np.uint32),
    ]

    def draw(lib):
        return lambda k: [
            lib.rng_bit_generator(k, shape, dtype, algorithm) for algorithm, shape, dtype in cases
        ]

    assert_same(xform.jit(draw(xl))(KEY), jax.jit(draw(jax.lax))(KEY))


def test_rng_bit_generator_uint64_and_vmap():
    with xform.enable_x64(), jax.enable_x64(True):
        key = np.array([5, 6], np.uint64)
        assert_same(
            xl.rng_bit_generator(key, (4,), np.uint64),
            jax.lax.rng_bit_generator(key, (4,), np.uint64),
        )
    keys = np.arange(8, dtype=np.uint32).reshape(2, 4)
    assert_same(
        xform.vmap(lambda k: xl.rng_bit_generator(k, (3,)))(keys),
        jax.vmap(lambda k: jax.lax.rng_bit_generator(k, (3,)))(keys),
    )


def test_rng_bit_generator_bad_input():
    with pytest.raises(TypeError, match="rng_bit_generator: unsupported dtype"):
        xl.rng_bit_generator(KEY, (3,), np.int32)
    with pytest.raises(TypeError, match=r"key must be uint32\[4\] or uint64\[2\], got u32\[3\]"):
        xl.rng_bit_generator(KEY[:3], (3,))


def test_rng_uniform_shape_dtype_range():
    out = xl.rng_uniform(np.float32(2), np.float32(3), (4, 5))
    ref = jax.lax.rng_uniform(np.float32(2), np.float32(3), (4, 5))
    assert out.shape == ref.shape and out.dtype == ref.dtype
    assert np.all((np.asarray(out) >= 2) & (np.asarray(out) < 3))
    jitted = xform.jit(lambda a: xl.rng_uniform(a, 10, (6,)))(0)
    assert jitted.dtype == np.int32 and jitted.weak_type
    assert np.all((np.asarray(jitted) >= 0) & (np.asarray(jitted) < 10))
    with pytest.raises(ValueError, match="rng_uniform must have identical dtypes"):
        xl.rng_uniform(np.float32(0), np.int32(1), (2,))
    with pytest.raises(ValueError, match=r"rng_uniform must be scalars; got shapes \(2,\)"):
        xl.rng_uniform(np.zeros(2, np.float32), np.float32(1), (2,))


# --------------------------------------------------------------------------- approx_top_k

X = np.random.default_rng(0).normal(size=(3, 300)).astype(np.float32)


@pytest.mark.parametrize("name", ["approx_max_k", "approx_min_k"])
def test_approx_top_k_equals_jax(name):
    xf, jx = getattr(xl, name), getattr(jax.lax, name)
    is_max = name == "approx_max_k"
    # The non-aggregated result: XLA's candidate count (256 of 300 here), sorted.
    assert_same(xf(X, 5, aggregate_to_topk=not is_max), jx(X, 5, aggregate_to_topk=not is_max))
    assert_same(
        xform.jit(lambda x: xf(x, 2, reduction_dimension=0))(X[:, :10]),
        jx(X[:, :10], 2, reduction_dimension=0),
    )
    if is_max:
        g = xform.grad(lambda x: (xf(x, 3)[0] ** 2).sum())(X)
        assert_same(g, jax.jit(jax.grad(lambda x: (jx(x, 3)[0] ** 2).sum()))(X))
    else:
        x3 = X.reshape(3, 20, 15)
        assert_same(
            xform.vmap(lambda x: xf(x, 3, reduction_dimension=0), in_axes=1)(x3),
            jax.jit(jax.vmap(lambda x: jx(x, 3, reduction_dimension=0), in_axes=1))(x3),
        )


def test_approx_top_k_output_size_is_xlas():
    for n, rank, k, recall, override in [
        (5000, 2, 100, 0.99, 200000),
        (5000, 1, 10, 0.9, -1),
        (70000, 2, 2, 0.95, -1),
        (300, 2, 5, 0.95, -1),
        (70000, 1, 1, 0.5, 10**7),
        (5000, 2, 7, 1.0, -1),
    ]:
        expected = jax_lib.approx_top_k_reduction_output_size(n, rank, k, recall, False, override)
        assert approx_top_k_output_size(n, rank, k, recall, False, override) == expected[0]


def test_approx_top_k_bad_input():
    with pytest.raises(ValueError, match="k must be positive, got 0"):
        xl.approx_max_k(X, 0)
    with pytest.raises(ValueError, match="k must be smaller than the size of reduction_dim 300"):
        xl.approx_min_k(X, 301)
    with pytest.raises(ValueError, match="operand must be a floating type, got int32"):
        xl.approx_max_k(np.arange(4, dtype=np.int32), 2)
    with pytest.raises(TypeError, match=r"must have >= 1 dimension, got \(\)"):
        xl.approx_max_k(np.float32(1), 1)


# --------------------------------------------------------------------------- compiler


def test_optimization_barrier():
    def f(x):
        a, b = xl.optimization_barrier((x, xnp.sin(x)))
        return a * b

    def g(x):
        a, b = jax.lax.optimization_barrier((x, jnp.sin(x)))
        return a * b

    x = np.linspace(0, 1, 4, dtype=np.float32)
    assert "stablehlo.optimization_barrier" in xform.jit(f).lower(x).as_text()
    assert_same(xform.jit(f)(x), jax.jit(g)(x))
    expected_grad = jax.jit(jax.grad(lambda x: g(x).sum()))(x)
    assert_same(xform.grad(lambda x: f(x).sum())(x), expected_grad)
    assert_same(xform.jit(xform.grad(lambda x: f(x).sum()))(x), expected_grad)
    assert_same(xform.vmap(f)(x.reshape(2, 2)), jax.jit(jax.vmap(g))(x.reshape(2, 2)))
    assert_same(xl.optimization_barrier({"a": 1.0}), jax.lax.optimization_barrier({"a": 1.0}))
    # an integer operand: its float0 tangent and cotangent stay symbolic zeros
    with pytest.raises(TypeError, match="argument to optimization_barrier as an array: leaf 1"):
        xl.optimization_barrier((1.0, "a"))
    with_int = xform.grad(lambda x: xl.optimization_barrier((x, np.int32(3)))[0] * 2)
    assert_same(with_int(np.float32(1)), np.float32(2))


@functools.partial(xl.composite, name="my.scaled_sin")
def scaled_sin(x, *, scale=2.0, table=None):
    return xnp.sin(x) * scale


@functools.partial(jax.lax.composite, name="my.scaled_sin")
def jax_scaled_sin(x, *, scale=2.0, table=None):
    return jnp.sin(x) * scale


def test_composite():
    x = np.linspace(0, 1, 3, dtype=np.float32)
    f = xform.jit(lambda x: scaled_sin(x, scale=3.0, table=np.arange(2, dtype=np.int32)))
    text = f.lower(x).as_text()
    assert 'stablehlo.composite "my.scaled_sin"' in text
    assert "scale = 3.000000e+00 : f32" in text and "table = dense<[0, 1]>" in text
    assert "func.func private" in text
    assert_same(f(x), jax.jit(lambda x: jax_scaled_sin(x, scale=3.0))(x))
    assert_same(scaled_sin(x), jax_scaled_sin(x), rtol=1e-6)
    # As JAX: no JVP and no batching rule (use custom_jvp).
    with pytest.raises(ValueError, match="JVP rule for composite not implemented"):
        xform.grad(lambda x: scaled_sin(x).sum())(x)
    with pytest.raises(ValueError, match="JVP rule for composite not implemented"):
        jax.grad(lambda x: jax_scaled_sin(x).sum())(x)
    with pytest.raises(NotImplementedError, match="Batching rule for 'composite'"):
        xform.vmap(scaled_sin)(np.ones((2, 3), np.float32))
    with pytest.raises(TypeError, match="attribute 'scale' must be a bool, int, float"):
        scaled_sin(x, scale=[1.0])


def test_platform_dependent_picks_cpu():
    def f(x, lib):
        return lib.platform_dependent(
            x, cpu=lambda x: x + 1, tpu=lambda x: x * 10, default=lambda x: x - 1
        )

    x = np.float32(2)
    assert_same(f(x, xl), f(x, jax.lax))
    assert_same(xform.jit(lambda x: f(x, xl))(x), jax.jit(lambda x: f(x, jax.lax))(x))
    assert_same(xform.grad(lambda x: f(x, xl) ** 2)(x), jax.grad(lambda x: f(x, jax.lax) ** 2)(x))
    assert_same(
        xform.jit(lambda x: xl.platform_dependent(x, default=lambda x: x * 3))(x), np.float32(6)
    )
    with pytest.raises(ValueError, match="Use 'cuda' or 'rocm' for lax.platform_dependent"):
        xl.platform_dependent(x, gpu=lambda x: x)
    with pytest.raises(TypeError, match="the 'cpu' branch must be a callable"):
        xl.platform_dependent(x, cpu=1)
    with pytest.raises(NotImplementedError, match="no branch for platform 'cpu'"):
        xl.platform_dependent(x, tpu=lambda x: x)


def test_tokens_and_dce_sink():
    token = xl.after_all(xl.create_token(), xl.create_token())
    token, y = xform.jit(lambda x: (xl.after_all(xl.create_token()), x * 2))(np.float32(1))
    assert_same(y, np.float32(2))
    with pytest.raises(TypeError, match="Arguments to after_all must be tokens, got f32"):
        xl.after_all(np.float32(1))
    jaxpr = xform.make_jaxpr(lambda x: (xl.dce_sink(x * 2), x)[1])(np.float32(1))
    assert "dce_sink" in str(jaxpr) and "mul" in str(jaxpr)
    assert xform.jit(lambda x: (xl.dce_sink(x * 2), x + 1)[1])(np.float32(1)) == 2
    assert xl.dce_sink(np.ones(2)) is None
    with pytest.raises(TypeError, match="argument to dce_sink as an array: leaf 0 is 'a'"):
        xl.dce_sink("a")


# --------------------------------------------------------------------------- collectives

XS = np.arange(8, dtype=np.float32).reshape(4, 2)


def test_axis_size():
    def f(lib):
        return lambda x: x * lib.axis_size("i")

    assert_same(xform.vmap(f(xl), axis_name="i")(XS), jax.vmap(f(jax.lax), axis_name="i")(XS))
    assert_same(xform.pmap(f(xl), axis_name="i")(XS), jax.pmap(f(jax.lax), axis_name="i")(XS))
    nested = xform.vmap(
        xform.vmap(lambda x: x * xl.axis_size(("i", "j")), axis_name="j"), axis_name="i"
    )(XS)
    assert_same(nested, XS * 8)
    with pytest.raises(NameError, match="unbound axis name: 'i' in axis_size"):
        xl.axis_size("i")


def test_pswapaxes_and_pcast_vs_jax_pmap():
    y = np.arange(8, dtype=np.float32).reshape(2, 2, 2)
    expected = jax.pmap(lambda x: jax.lax.pswapaxes(x, "i", 0), axis_name="i")(y)
    assert_same(xform.pmap(lambda x: xl.pswapaxes(x, "i", 0), axis_name="i")(y), expected)
    assert_same(xform.vmap(lambda x: xl.pswapaxes(x, "i", 0), axis_name="i")(y), expected)
    assert_same(
        xform.pmap(lambda x: xl.pcast(x, "i", to="varying"), axis_name="i")(XS),
        jax.pmap(lambda x: jax.lax.pcast(x, "i", to="varying"), axis_name="i")(XS),
    )
    with pytest.raises(ValueError, match="all_to_all: the split axis 0 .* must equal the axis"):
        xform.pmap(lambda x: xl.pswapaxes(x, "i", 0), axis_name="i")(XS)
    with pytest.raises(ValueError, match="unexpected `to` value 'invariant'"):
        xform.pmap(lambda x: xl.pcast(x, "i", to="invariant"), axis_name="i")(XS)


def test_pbroadcast():
    # JAX has no CPU lowering of pbroadcast under pmap: its vmap and its definition are the
    # oracle (the masked psum).
    expected = jax.vmap(lambda x: jax.lax.pbroadcast(x, "i", 2), axis_name="i")(XS)
    assert_same(xform.pmap(lambda x: xl.pbroadcast(x, "i", 2), axis_name="i")(XS), expected)
    assert_same(xform.vmap(lambda x: xl.pbroadcast(x, "i", 2), axis_name="i")(XS), expected)

    def loss(x):
        return (xl.pbroadcast(x, "i", 2) ** 2).sum()

    grads = xform.pmap(xform.grad(loss), axis_name="i")(XS)
    expected_grads = np.zeros_like(XS)
    expected_grads[2] = 4 * 2 * XS[2]  # every device's loss reads the source's value
    assert_same(grads, expected_grads)
    assert_same(xform.vmap(xform.grad(loss), axis_name="i")(XS), expected_grads)
    with pytest.raises(ValueError, match="pbroadcast: source 4 is out of range for axis 'i'"):
        xform.pmap(lambda x: xl.pbroadcast(x, "i", 4), axis_name="i")(XS)


def _ragged_reference(operand, output, input_offsets, send_sizes, output_offsets):
    """JAX's documented semantics of ragged_all_to_all, on the stacked per-device values."""
    n, count = input_offsets.shape
    result = output.copy()
    for s in range(n):
        for i in range(count):
            d = i // (count // n)  # slice i of sender s goes to device d
            start, size, at = input_offsets[s, i], send_sizes[s, i], output_offsets[s, i]
            result[d, at : at + size] = operand[s, start : start + size]
    return result


def _ragged_case():
    """Two devices, two slices per device pair, packed on each receiver in sender order."""
    operand = np.arange(24, dtype=np.float32).reshape(2, 6, 2)
    output = -np.ones((2, 7, 2), np.float32)
    input_offsets = np.array([[0, 1, 3, 4], [0, 2, 3, 5]], np.int32)
    send_sizes = np.array([[1, 2, 1, 1], [2, 1, 2, 1]], np.int32)
    recv_sizes = send_sizes.reshape(2, 2, 2).transpose(1, 0, 2).reshape(2, 4)
    output_offsets = np.zeros_like(send_sizes)
    filled = [0, 0]
    for s in range(2):
        for i in range(4):
            output_offsets[s, i] = filled[i // 2]
            filled[i // 2] += send_sizes[s, i]
    return operand, output, input_offsets, send_sizes, output_offsets, recv_sizes


def test_ragged_all_to_all():
    # XLA:CPU has no ragged-all-to-all (JAX fails there) and JAX has no vmap rule: JAX's
    # documented semantics, in NumPy, is the oracle.
    args = _ragged_case()
    expected = _ragged_reference(*args[:5])

    def f(*a):
        return xl.ragged_all_to_all(*a, axis_name="i")

    assert_same(xform.pmap(f, axis_name="i")(*args), expected)
    assert_same(xform.vmap(f, axis_name="i")(*args), expected)
    # vmapped over another axis inside the pmap: each lane exchanges on its own
    lanes = np.stack([args[0], args[0] + 100], 1), np.stack([args[1], args[1] * 2], 1)
    in_axes = (0, 0, None, None, None, None)
    assert_same(
        xform.pmap(xform.vmap(f, in_axes=in_axes), axis_name="i")(*lanes, *args[2:]),
        np.stack(
            [_ragged_reference(lanes[0][:, b], lanes[1][:, b], *args[2:5]) for b in range(2)], 1
        ),
    )
    weights = np.linspace(-1, 1, expected.size, dtype=np.float32).reshape(expected.shape)
    grads = xform.pmap(
        xform.grad(lambda *a: (f(*a[:6]) * a[6]).sum(), argnums=(0, 1)), axis_name="i"
    )(*args, weights)
    # The map is linear: the gradient of <f(x), w> at a basis vector is one entry.
    operand_grad = np.zeros_like(args[0])
    for index in np.ndindex(args[0].shape):
        basis = np.zeros_like(args[0])
        basis[index] = 1
        operand_grad[index] = (_ragged_reference(basis, 0 * args[1], *args[2:5]) * weights).sum()
    output_grad = np.where(
        _ragged_reference(0 * args[0], 0 * args[1] + 1, *args[2:5]) == 1, weights, 0
    )
    assert_same(grads, (operand_grad, output_grad))


def test_unsupported_collectives_say_so():
    with pytest.raises(NotImplementedError, match="psend: XLA Send/Recv"):
        xform.pmap(lambda x: xl.psend(x, "i", [(0, 1)]), axis_name="i")(XS)
    with pytest.raises(NotImplementedError, match="precv: XLA Send/Recv"):
        xl.precv(xl.create_token(), jax.ShapeDtypeStruct((2,), np.float32), "i", [(0, 1)])
    sizes = np.full((4, 4), 0, np.int32)
    with pytest.raises(ValueError, match="ragged_all_to_all send_sizes must be integer type"):
        xform.vmap(
            lambda a, b, c: xl.ragged_all_to_all(a, b, c, c + 0.5, c, c, axis_name="i"),
            axis_name="i",
        )(XS, XS, sizes)
    with pytest.raises(NameError, match="unbound axis name: 'i' in ragged_all_to_all"):
        xl.ragged_all_to_all(XS, XS, sizes[0], sizes[0], sizes[0], sizes[0], axis_name="i")
