"""The later lax names against JAX: clz, mulhi, square, reciprocal, complex, reduce_precision,
the total-order comparisons, copy, stage, dtype, the accuracy= argument; tile, split, stack,
unstack and the shape helpers; scatter_sub, scatter_apply, index_take. Values, dtypes and weak
types eagerly and under jit, gradients against jax.grad, vmap against jax.vmap, jaxpr
primitive names, and bad inputs with JAX's exception types."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import xform
import xform.numpy as xnp
from tests.harness import assert_same, check_against_jax, check_vmap
from xform import lax
from xform.interpret import transpose

RNG = np.random.default_rng(0)
F32 = RNG.standard_normal((3, 4)).astype(np.float32)
G32 = RNG.standard_normal((3, 4)).astype(np.float32)
I32 = np.array([0, 1, -1, 7, 2**20, -(2**31), 2**31 - 1, 12345], np.int32)
J32 = np.array([5, -3, 2**16, -7, 2**20, -(2**31), 2**31 - 1, -1], np.int32)
SPECIAL = np.array([-0.0, 0.0, np.nan, -np.nan, np.inf, -np.inf, 1.0, -1.0], np.float32)
DN = lax.ScatterDimensionNumbers(
    update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,)
)
IDX = np.array([[2], [0], [2]], np.int32)
UPD = RNG.standard_normal((3, 4)).astype(np.float32)


def jaxpr_names(closed):
    return [e.primitive.name for e in closed.jaxpr.eqns]


# --------------------------------------------------------------------------- elementwise

ELEMENTWISE = [
    ("clz", lambda m: m.clz, (I32,)),
    ("clz_u8", lambda m: m.clz, (np.array([0, 1, 128, 255, 16], np.uint8),)),
    ("mulhi", lambda m: m.mulhi, (I32, J32)),
    ("mulhi_u32", lambda m: m.mulhi, (I32.view(np.uint32), J32.view(np.uint32))),
    ("mulhi_i8_scalar", lambda m: m.mulhi, (np.int8([-128, 127, 5, -3]), np.int8(-128))),
    ("square_f32", lambda m: m.square, (F32,)),
    ("square_i32", lambda m: m.square, (I32,)),
    ("square_c64", lambda m: m.square, (F32.astype(np.complex64) * (1 + 2j),)),
    ("square_weak", lambda m: m.square, (3.0,)),
    ("reciprocal", lambda m: m.reciprocal, (F32,)),
    ("reciprocal_weak", lambda m: m.reciprocal, (4.0,)),
    ("complex", lambda m: m.complex, (F32, G32)),
    ("complex_inf", lambda m: m.complex, (SPECIAL, SPECIAL[::-1].copy())),
    ("complex_scalar", lambda m: m.complex, (F32, np.float32(2))),
    ("complex_weak", lambda m: m.complex, (2.0, 1.0)),
    ("reduce_precision", lambda m: lambda x: m.reduce_precision(x, 5, 10), (F32 * 1e3,)),
    ("reduce_precision_bf16", lambda m: lambda x: m.reduce_precision(x, 8, 7), (F32,)),
    ("eq_to", lambda m: m.eq_to_p.bind, (SPECIAL, SPECIAL[::-1].copy())),
    ("le_to", lambda m: m.le_to_p.bind, (SPECIAL, SPECIAL[::-1].copy())),
    ("lt_to", lambda m: m.lt_to_p.bind, (SPECIAL, SPECIAL[::-1].copy())),
    ("lt_to_int", lambda m: m.lt_to_p.bind, (I32, J32)),
    ("copy", lambda m: m.copy_p.bind, (F32,)),
    ("stage", lambda m: m.stage, (F32,)),
    ("stage_weak", lambda m: m.stage, (2.0,)),
]


@pytest.mark.parametrize("name,op,args", ELEMENTWISE, ids=[c[0] for c in ELEMENTWISE])
def test_elementwise_against_jax(name, op, args):
    # JAX's side under jax.jit: its eager path would compile every case twice.
    expected = jax.jit(op(jax.lax))(*args)
    assert_same(op(lax)(*args), expected, what="eager")
    assert_same(xform.jit(op(lax))(*args), expected, what="jit")


@pytest.mark.parametrize("dtype", [np.float32, np.float16, jnp.bfloat16, np.float64])
def test_reduce_precision_bits(dtype):
    # The NumPy host impl against XLA bit for bit: random bit patterns (NaNs, infinities and
    # subnormals among them), rounding to each format, overflow and underflow.
    width = np.dtype(dtype).itemsize
    bits = RNG.integers(0, 2 ** (8 * width), 3000, dtype=np.uint64).astype(f"u{width}")
    x = bits.view(dtype)
    formats = ((8, 7), (5, 10), (4, 3), (2, 0))

    def jax_fn(x):
        return [jax.lax.reduce_precision(x, e, m) for e, m in formats]

    with xform.enable_x64(), jax.enable_x64(True):
        expected = jax.jit(jax_fn)(x)
        # An xform array: eager ops read NumPy operands' subnormals as zero (XLA's arithmetic
        # does), while reduce_precision, a bit operation in XLA, keeps them.
        xs = xform.device_put(x)
        for (e, m), ref in zip(formats, expected, strict=True):
            got = np.asarray(lax.reduce_precision(xs, e, m))
            np.testing.assert_array_equal(
                got.view(f"u{width}"),
                np.asarray(ref).view(f"u{width}"),
                err_msg=f"{np.dtype(dtype)} to ({e}, {m})",
            )


def test_64_bit_clz_and_mulhi():
    x = np.array([-(2**63), 2**63 - 1, -1, 3, 2**40], np.int64)
    y = np.array([-(2**63), 2**63 - 1, 7, -5, 2**40], np.int64)
    with xform.enable_x64(), jax.enable_x64(True):
        for xs in ((x, y), (x.view(np.uint64), y.view(np.uint64))):
            assert_same(lax.mulhi(*xs), jax.jit(jax.lax.mulhi)(*xs))
            assert_same(xform.jit(lax.mulhi)(*xs), jax.jit(jax.lax.mulhi)(*xs))
        assert_same(lax.clz(x), jax.jit(jax.lax.clz)(x))


def test_square_and_tile_and_split_jaxprs_match_jax():
    for xf, jf in (
        (lax.square, jax.lax.square),
        (lambda x: lax.tile(x, (2, 1)), lambda x: jax.lax.tile(x, (2, 1))),
        (lambda x: lax.split(x, (1, 3), 1), lambda x: jax.lax.split(x, (1, 3), 1)),
        (lambda x: lax.stack([x, x], 1), lambda x: jax.lax.stack([x, x], 1)),
        (lambda x: lax.unstack(x, 0), lambda x: jax.lax.unstack(x, 0)),
        (lax.reciprocal, jax.lax.reciprocal),
    ):
        assert jaxpr_names(xform.make_jaxpr(xf)(F32)) == jaxpr_names(jax.make_jaxpr(jf)(F32))
    # stage adds no equation, as in JAX
    assert jaxpr_names(
        xform.make_jaxpr(lambda x: lax.stage(x) + lax.stage(1.0))(F32)
    ) == jaxpr_names(jax.make_jaxpr(lambda x: jax.lax.stage(x) + jax.lax.stage(1.0))(F32))


def test_accuracy_argument():
    x = np.abs(F32) + 0.5
    names = (
        "exp",
        "exp2",
        "expm1",
        "log",
        "log1p",
        "tanh",
        "logistic",
        "sin",
        "cos",
        "sqrt",
        "rsqrt",
        "cbrt",
        "tan",
    )
    # One JAX program for all: JAX's eager path compiles each op on its own.
    expected = jax.jit(
        lambda x: [getattr(jax.lax, n)(x, accuracy=jax.lax.AccuracyMode.HIGHEST) for n in names]
    )(x)
    for name, e in zip(names, expected, strict=True):
        for acc in (lax.AccuracyMode.HIGHEST, lax.Tolerance(atol=1e-3, ulps=2)):
            assert_same(getattr(lax, name)(x, accuracy=acc), e)
    assert lax.AccuracyMode.DEFAULT.value == jax.lax.AccuracyMode.DEFAULT.value
    with pytest.raises(NotImplementedError, match="lax.exp: accuracy 'fast' not supported"):
        lax.exp(F32, accuracy="fast")
    with pytest.raises(ValueError, match="at least one of atol, rtol or ulps"):
        lax.Tolerance()
    with pytest.raises(ValueError, match="non-negative"):
        lax.Tolerance(atol=-1.0)


def test_elementwise_grads():
    cases = [
        (lambda m, n: lambda x, y: n.sum(m.square(x) * y), (F32, G32)),
        (
            lambda m, n: (
                lambda x, y: n.sum(
                    m.real(m.mul(m.complex(x, y), m.complex(y, x))) + m.imag(m.complex(x, y)) * 3.0
                )
            ),
            (F32, G32),
        ),
        (lambda m, n: lambda x, y: n.sum(m.reduce_precision(x, 8, 7) * y), (F32, G32)),
        (lambda m, n: lambda x, y: n.sum(m.copy_p.bind(x) * m.stage(y)), (F32, G32)),
        (lambda m, n: lambda x, y: n.sum(m.reciprocal(x) * y), (F32 + 3, G32)),
    ]
    expected = jax.jit(
        lambda: [jax.grad(make(jax.lax, jnp), argnums=(0, 1))(*args) for make, args in cases]
    )()
    got = [xform.grad(make(lax, xnp), argnums=(0, 1))(*args) for make, args in cases]
    assert_same(got, expected, rtol=1e-5, atol=1e-6)
    # forward mode on complex, whose tangent is complex
    t = (np.ones_like(F32), G32)
    assert_same(xform.jvp(lax.complex, (F32, G32), t), jax.jvp(jax.lax.complex, (F32, G32), t))


def test_elementwise_vmap():
    check_vmap(lax.square, jax.jit(jax.lax.square), (F32,), in_axes=1)
    check_vmap(lax.clz, jax.jit(jax.lax.clz), (I32.reshape(2, 4),), in_axes=1, jit=False)
    check_vmap(lax.mulhi, jax.jit(jax.lax.mulhi), (I32.reshape(2, 4), J32[:4]), in_axes=(0, None))
    check_vmap(lax.complex, jax.jit(jax.lax.complex), (F32, G32[:, 0]), in_axes=(1, None))
    check_vmap(
        lambda x: lax.reduce_precision(x, 5, 2),
        jax.jit(lambda x: jax.lax.reduce_precision(x, 5, 2)),
        (F32,),
        in_axes=1,
        jit=False,
    )
    check_vmap(
        lax.eq_to_p.bind,
        jax.jit(jax.lax.eq_to_p.bind),
        (SPECIAL.reshape(2, 4), SPECIAL[:4]),
        in_axes=(0, None),
        jit=False,
    )
    check_vmap(lax.copy_p.bind, jax.jit(jax.lax.copy_p.bind), (F32,), in_axes=1, jit=False)


def test_dtype():
    for v in (
        float,
        int,
        np.float32,
        np.ones(2),
        np.float64(1),
        1.0,
        True,
        1j,
        "int8",
        jnp.ones(2, jnp.bfloat16),
    ):
        assert lax.dtype(v) == jax.lax.dtype(v)
    with pytest.warns(UserWarning, match="requested in dtype is not available"):
        assert lax.dtype("float64") == np.float32
    with pytest.raises(TypeError, match="cannot determine the dtype"):
        lax.dtype(object())


def test_bad_elementwise_inputs():
    with pytest.raises(TypeError, match="clz does not accept dtype float32"):
        lax.clz(F32)
    with pytest.raises(TypeError, match="mulhi requires arguments to have the same dtypes"):
        lax.mulhi(I32, I32.astype(np.int16))
    with pytest.raises(TypeError, match="complex does not accept dtype int32"):
        lax.complex(I32, I32)
    with pytest.raises(TypeError, match="complex does not accept dtype float16"):
        lax.complex(F32.astype(np.float16), F32.astype(np.float16))
    with pytest.raises(TypeError, match="square does not accept dtype bool"):
        lax.square(np.array([True]))
    with pytest.raises(ValueError, match="exponent_bits must be positive; got 0"):
        lax.reduce_precision(F32, 0, 3)
    with pytest.raises(TypeError, match="reduce_precision does not accept dtype int32"):
        lax.reduce_precision(I32, 5, 3)
    with pytest.raises(jax.errors.ConcretizationTypeError, match="exponent_bits argument"):
        xform.jit(lambda x, e: lax.reduce_precision(x, e, 3))(F32, 5)
    with pytest.raises(TypeError, match="lt_to does not accept dtype complex64"):
        lax.lt_to_p.bind(np.complex64([1j]), np.complex64([1j]))


# --------------------------------------------------------------------------- structural

STRUCTURAL = [
    ("tile", lambda m: lambda x: m.tile(x, (2, 3)), (F32,)),
    ("tile_int", lambda m: lambda x: m.tile(x, (3,)), (I32,)),
    ("tile_zero", lambda m: lambda x: m.tile(x, (0, 1)), (F32,)),
    ("tile_weak", lambda m: lambda x: m.tile(x, ()), (2.0,)),
    ("split", lambda m: lambda x: m.split(x, (1, 0, 3), axis=-1), (F32,)),
    ("split_int", lambda m: lambda x: m.split(x, (2, 1)), (I32.reshape(2, 4).T.copy()[:3],)),
    ("stack", lambda m: lambda x, y: m.stack([x, y, x], axis=1), (F32, G32)),
    ("stack_last", lambda m: lambda x, y: m.stack([x, y], axis=-1), (F32, G32)),
    ("stack_weak", lambda m: lambda x, y: m.stack([x, y]), (1.0, 2.0)),
    ("unstack", lambda m: lambda x: m.unstack(x, axis=1), (F32,)),
    ("unstack_neg", lambda m: lambda x: m.unstack(x, axis=-2), (I32.reshape(2, 4),)),
    ("collapse", lambda m: lambda x: m.collapse(x, 0, 2), (F32.reshape(3, 2, 2),)),
    ("collapse_none", lambda m: lambda x: m.collapse(x, 1), (F32.reshape(3, 2, 2),)),
    ("broadcast_like", lambda m: m.broadcast_like, (G32[0], F32[None])),
    ("broadcast_like_same", lambda m: m.broadcast_like, (F32, G32)),
    ("broadcast_to_rank", lambda m: lambda x: m.broadcast_to_rank(x, 4), (F32,)),
    ("broadcast_to_rank_weak", lambda m: lambda x: m.broadcast_to_rank(x, 1), (2.0,)),
]


@pytest.mark.parametrize("name,op,args", STRUCTURAL, ids=[c[0] for c in STRUCTURAL])
def test_structural_against_jax(name, op, args):
    expected = jax.jit(op(jax.lax))(*args)
    assert_same(op(lax)(*args), expected, what="eager")
    assert_same(xform.jit(op(lax))(*args), expected, what="jit")


def test_shape_helpers():
    for shapes in [
        ((1,), (4,)),
        ((3, 1), (4,)),
        ((3, 1), (1, 4), (5, 1, 1)),
        ((),),
        ((0, 1), (3,)),
    ]:
        assert lax.broadcast_shapes(*shapes) == jax.lax.broadcast_shapes(*shapes)
    for shape in [(2, 3), (), (2**31,)]:
        got, expected = lax.shape_as_value(shape), jax.lax.shape_as_value(shape)
        assert_same(np.asarray(got), np.asarray(expected), check_weak_type=False)
    for dtype in (np.float32, np.int32, np.complex64, bool):
        got, expected = lax.empty((2, 3), dtype), jax.lax.empty((2, 3), dtype)
        assert got.shape == expected.shape and got.dtype == expected.dtype
        assert bool(got.weak_type) == bool(expected.weak_type)


def test_structural_grads():
    cases = [
        lambda m, n: lambda x: n.sum(m.tile(x, (2, 3)) ** 2 * m.tile(x, (2, 3))),
        lambda m, n: lambda x: n.sum(m.split(x, (1, 3), 1)[1] ** 3),
        lambda m, n: lambda x: n.sum(m.split(x, (2, 1), 0)[0] * m.split(x, (1, 2), 0)[1]),
        lambda m, n: lambda x: n.sum(m.stack([x, x * 2, n.sin(x)], 1) ** 2),
        lambda m, n: lambda x: n.sum(m.unstack(x, 1)[2] * m.unstack(x, 0)[1][:3]),
        lambda m, n: lambda x: n.sum(m.collapse(m.broadcast_to_rank(x, 3), 0, 2) ** 2),
    ]

    def total(m, n):  # one program for all the cases: one JAX compilation
        fs = [make(m, n) for make in cases]
        return lambda x: [f(x) for f in fs]

    expected = jax.jit(jax.jacrev(total(jax.lax, jnp)))(F32)
    got = [xform.grad(make(lax, xnp))(F32) for make in cases]
    assert_same(got, expected, rtol=1e-5, atol=1e-6)
    f = xform.jit(xform.grad(cases[3](lax, xnp)))
    assert_same(f(F32), expected[3], rtol=1e-5, atol=1e-6)


def test_structural_vmap():
    check_vmap(
        lambda x: lax.tile(x, (2,)), jax.jit(lambda x: jax.lax.tile(x, (2,))), (F32,), in_axes=1
    )
    check_vmap(
        lambda x: lax.split(x, (1, 3), 1),
        jax.jit(lambda x: jax.lax.split(x, (1, 3), 1)),
        (F32.reshape(3, 1, 4),),
        in_axes=1,
    )
    check_vmap(
        lambda x: lax.split(x, (2, 1)),
        jax.jit(lambda x: jax.lax.split(x, (2, 1))),
        (F32,),
        in_axes=1,
        jit=False,
    )
    for in_axes, axis, y in (
        ((1, 1), 0, G32),
        ((0, None), 1, G32[0]),
        ((None, 1), 0, G32),
        ((1, 0), 1, G32.T.copy()),
    ):
        x = F32[:, 0] if in_axes[0] is None else F32
        check_vmap(
            lambda x, y, a=axis: lax.stack([x, y], a),
            jax.jit(lambda x, y, a=axis: jax.lax.stack([x, y], a)),
            (x, y),
            in_axes=in_axes,
            jit=axis == 0 and in_axes == (1, 1),
        )
    for axis in (0, 1):
        check_vmap(
            lambda x, a=axis: lax.unstack(x, a),
            jax.jit(lambda x, a=axis: jax.lax.unstack(x, a)),
            (F32.reshape(3, 2, 2),),
            in_axes=1,
            jit=False,
        )


def test_bad_structural_inputs():
    with pytest.raises(TypeError, match="reps length must be equal to the ndim of x"):
        lax.tile(F32, (2,))
    with pytest.raises(ValueError, match="sum of sizes 2 must be equal to dimension 0"):
        lax.split(F32, (1, 1))
    with pytest.raises(ValueError, match="axis 3 is out of bounds"):
        lax.split(F32, (1, 1), 3)
    with pytest.raises(ValueError, match="all input arrays must have the same shape"):
        lax.stack([F32, G32[:2]])
    with pytest.raises(TypeError, match="stack requires arguments to have the same dtypes"):
        lax.stack([F32, F32.astype(np.int32)])
    with pytest.raises(ValueError, match="unstack requires arrays with rank > 0"):
        lax.unstack(np.float32(1))
    with pytest.raises(ValueError, match=r"invalid dimension range .*\(3, 4\)\[1:0\]"):
        lax.collapse(F32, 1, 0)
    with pytest.raises(ValueError, match="incompatible types for broadcasting"):
        lax.broadcast_like(F32, np.ones((2, 4)))
    with pytest.raises(ValueError, match=r"Incompatible shapes for broadcasting: shapes=\[\(3, 1"):
        lax.broadcast_shapes((3, 1), (4, 1))


# --------------------------------------------------------------------------- indexing


def test_scatter_sub():
    idx = np.array([[2], [0], [5]], np.int32)  # 5 is out of bounds: dropped or clipped
    for mode in (None, "clip"):

        def f(m, mode=mode):
            return lambda x, u: m.scatter_sub(x, idx, u, DN, mode=mode)

        expected = jax.jit(f(jax.lax))(F32, UPD)
        assert_same(f(lax)(F32, UPD), expected)
        assert_same(xform.jit(f(lax))(F32, UPD), expected)
    check_against_jax(
        lambda x, u: lax.scatter_sub(x, IDX, u, DN),
        lambda x, u: jax.lax.scatter_sub(x, IDX, u, DN),
        I32[:4].reshape(1, 4) * np.ones((3, 1), np.int32),
        UPD.astype(np.int32),
    )

    def loss(m, n):
        return lambda x, u: n.sum(m.scatter_sub(x, IDX, u, DN) ** 2)

    expected = jax.jit(jax.grad(loss(jax.lax, jnp), argnums=(0, 1)))(F32, UPD)
    assert_same(xform.grad(loss(lax, xnp), argnums=(0, 1))(F32, UPD), expected, rtol=1e-5)
    t = (G32, UPD * 2)

    def f(m):
        return lambda x, u: m.scatter_sub(x, IDX, u, DN)

    assert_same(xform.jvp(f(lax), (F32, UPD), t), jax.jvp(f(jax.lax), (F32, UPD), t))
    check_vmap(f(lax), jax.jit(f(jax.lax)), (np.stack([F32, G32]), UPD), in_axes=(0, None))
    idxs = np.array([[[1], [0], [2]], [[0], [0], [1]]], np.int32)
    check_vmap(
        lambda x, i, u: lax.scatter_sub(x, i, u, DN),
        jax.jit(lambda x, i, u: jax.lax.scatter_sub(x, i, u, DN)),
        (F32, idxs, np.stack([UPD, UPD * 3])),
        in_axes=(None, 0, 0),
    )
    with pytest.raises(TypeError, match="scatter_sub requires arguments to have the same dtypes"):
        lax.scatter_sub(F32, IDX, UPD.astype(np.int32), DN)


def test_scatter_apply():
    idx = np.array([[2], [0]], np.int32)
    for func in (lambda v: v * 10, jnp.sin):
        xfunc = func if func is not jnp.sin else xnp.sin
        expected = jax.lax.scatter_apply(F32, idx, func, DN, update_shape=(2, 4))
        assert_same(lax.scatter_apply(F32, idx, xfunc, DN, update_shape=(2, 4)), expected)
        assert_same(
            xform.jit(lambda x, f=xfunc: lax.scatter_apply(x, idx, f, DN, update_shape=(2, 4)))(
                F32
            ),
            expected,
        )
    out = lax.scatter_apply(
        I32,
        np.array([[1], [9]]),
        lambda v: v + 1,
        lax.ScatterDimensionNumbers((), (0,), (0,)),
        update_shape=(2,),
        mode="drop",
    )
    assert_same(
        out,
        jax.lax.scatter_apply(
            I32,
            np.array([[1], [9]]),
            lambda v: v + 1,
            jax.lax.ScatterDimensionNumbers((), (0,), (0,)),
            update_shape=(2,),
            mode="drop",
        ),
    )
    with pytest.raises(TypeError, match="func must be callable"):
        lax.scatter_apply(F32, idx, 3, DN, update_shape=(2, 4))


def test_index_take():
    src = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    cases = [
        ((np.array([0, -1, 5]), np.array([1, 2, 3])), (1, 2)),
        ((np.array([1, 0]),), (0,)),
        ((np.array([3, -4, 2]),), (2,)),
    ]
    for raw, axes in cases:
        idxs = tuple(i.astype(np.int32) for i in raw)
        expected = jax.jit(jax.lax.index_take, static_argnums=2)(src, idxs, axes)
        assert_same(lax.index_take(src, idxs, axes), expected)
    assert_same(xform.jit(lambda s, i: lax.index_take(s, i, (2,)))(src, idxs), expected)
    expected = jax.jit(jax.grad(lambda s: jnp.sum(jax.lax.index_take(s, idxs, (2,)) ** 2)))(src)
    assert_same(xform.grad(lambda s: xnp.sum(lax.index_take(s, idxs, (2,)) ** 2))(src), expected)
    with pytest.raises(IndexError, match="lax.index_take: axis 5 is out of bounds"):
        lax.index_take(src, (np.array([0]),), (5,))


def test_no_warnings_from_structural_helpers():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lax.empty(3, np.float32)
        lax.broadcast_to_rank(np.float32(1), 2)


# --------------------------------------------------------------------------- rules and lowering


def test_linear_primitives_have_transpose_rules():
    linear = [
        lax.complex_p,
        lax.reduce_precision_p,
        lax.copy_p,
        lax.stage_p,
        lax.tile_p,
        lax.split_p,
        lax.stack_p,
        lax.unstack_p,
        lax.scatter_sub_p,
    ]
    assert [p.name for p in linear if p not in transpose.transpose_rules] == []


def test_stablehlo_ops():
    def text(f, *args):
        return xform.jit(f).lower(*args).as_text()

    assert "stablehlo.count_leading_zeros" in text(lax.clz, I32)
    assert "chlo.mulhi" in text(lax.mulhi, I32, J32)
    assert "stablehlo.reduce_precision" in text(lambda x: lax.reduce_precision(x, 5, 10), F32)
    assert "TOTALORDER" in text(lax.lt_to_p.bind, F32, G32)
    assert "stablehlo.complex" in text(lax.complex, F32, G32)
    assert "chlo.square" in text(lax.square, F32)
    assert "stablehlo.multiply" in text(lax.square, I32)
    assert "stablehlo.subtract" in text(lambda x, u: lax.scatter_sub(x, IDX, u, DN), F32, UPD)
