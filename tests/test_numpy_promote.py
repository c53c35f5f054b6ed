"""xform.numpy's conversion and dtype promotion against jax.numpy: asarray/array, the full
binary promotion table (every pair of dtypes, weak arrays and Python scalars, x64 off and
on), result_type, promote_types, and broadcasting errors."""

import contextlib
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import xform
import xform.numpy as xnp
from tests.harness import assert_same

BF16 = np.dtype(jnp.bfloat16)
DTYPES = [
    np.dtype(d)
    for d in (
        np.bool_,
        np.int8,
        np.int16,
        np.int32,
        np.int64,
        np.uint8,
        np.uint16,
        np.uint32,
        np.uint64,
        np.float16,
        np.float32,
        np.float64,
        np.complex64,
        np.complex128,
    )
] + [BF16]


@contextlib.contextmanager
def x64_both(on=True):
    """64-bit mode in xform and in JAX (the oracle) together."""
    with xform.enable_x64(on), jax.enable_x64(on):
        yield


# Operand kinds: strongly typed arrays of every dtype, weakly typed rank-0 arrays, and Python
# scalars. Each kind is a function of the library (xform.numpy or jax.numpy).
def _array_kind(dtype):
    return lambda lib: np.zeros((2,), dtype)


KINDS = {str(d): _array_kind(d) for d in DTYPES}
KINDS.update(
    {
        "py_bool": lambda lib: True,
        "py_int": lambda lib: 3,
        "py_float": lambda lib: 2.5,
        "py_complex": lambda lib: 1 + 2j,
        "weak_f32": lambda lib: lib.asarray(1.5),
        "weak_i32": lambda lib: lib.asarray(2),
    }
)


def _type_of(out):
    return np.dtype(out.dtype), bool(out.weak_type)


@pytest.mark.parametrize("x64", [False, True], ids=["x32", "x64"])
def test_binary_promotion_table_matches_jax(x64):
    mismatches = []
    with x64_both(x64):
        for ka, fa in KINDS.items():
            for kb, fb in KINDS.items():
                a_x, b_x = fa(xnp), fb(xnp)
                a_j, b_j = fa(jnp), fb(jnp)
                expected = jax.eval_shape(lambda a=a_j, b=b_j: jnp.add(a, b))
                got = xform.eval_shape(lambda a=a_x, b=b_x: xnp.add(a, b))
                if _type_of(got) != _type_of(expected):
                    mismatches.append((ka, kb, _type_of(got), _type_of(expected)))
                rt = xnp.result_type(a_x, b_x)
                rt_j = jnp.result_type(a_j, b_j)
                if rt != rt_j:
                    mismatches.append(("result_type", ka, kb, rt, rt_j))
    assert not mismatches, mismatches[:10]


@pytest.mark.parametrize("x64", [False, True], ids=["x32", "x64"])
def test_eager_binary_ops_give_jax_dtypes(x64):
    # A real (not abstract) evaluation for a spread of pairs, values included.
    # JAX's eager mode compiles each dtype pair: keep the set small.
    kinds = (
        ["int64", "float64", "py_int", "weak_f32"]
        if x64
        else ["int8", "uint8", "bfloat16", "float16", "py_float", "weak_f32"]
    )
    with x64_both(x64):
        for ka in kinds:
            for kb in kinds:
                a = KINDS[ka](xnp) if ka.startswith(("py", "weak")) else np.ones(2, ka)
                b = KINDS[kb](xnp) if kb.startswith(("py", "weak")) else np.full(2, 2, kb)
                aj = KINDS[ka](jnp) if ka.startswith(("py", "weak")) else a
                bj = KINDS[kb](jnp) if kb.startswith(("py", "weak")) else b
                assert_same(xnp.multiply(a, b), jnp.multiply(aj, bj), what=f"{ka}*{kb}")


@pytest.mark.parametrize("x64", [False, True], ids=["x32", "x64"])
def test_promote_types_and_result_type_of_dtypes(x64):
    specs = DTYPES + [int, float, complex]
    with x64_both(x64), warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # JAX warns on 64-bit specs in x32
        for a in specs:
            for b in specs:
                assert xnp.promote_types(a, b) == jnp.promote_types(a, b), (a, b)
                if a in (int, float, complex) and b in (int, float, complex):
                    continue
                assert xnp.result_type(a, b) == jnp.result_type(a, b), (a, b)
        for a in specs + [2, 2.0, True, 1j]:
            assert xnp.result_type(a) == jnp.result_type(a), a


def test_lattice_is_the_one_in_xform_dtypes():
    # xnp.result_type is xform.dtypes.promote plus JAX's special cases for weak operands.
    assert xform.dtypes.promote((np.dtype(np.int8), False), (np.dtype(np.uint8), False)) == (
        np.dtype(np.int16),
        False,
    )
    assert xnp.result_type(np.int8, np.uint8) == np.int16
    assert xnp.result_type(np.float16, 2.0) == np.float16


@pytest.mark.parametrize("x64", [False, True], ids=["x32", "x64"])
def test_asarray_matches_jax(x64):
    values = [
        2,
        2.0,
        True,
        1 + 1j,
        [1, 2.0],
        [[1, 2], [3, 4]],
        [True, False],
        [],
        np.arange(3),
        np.arange(3.0),
        np.float16(3),
        np.array(2, np.uint8),
        [np.float16(1), 2.0],
        (1, 2),
        [[np.int8(1)], [3]],
        np.zeros((2, 0)),
    ]
    with x64_both(x64):
        for v in values:
            assert_same(xnp.asarray(v), jnp.asarray(v), what=repr(v))
            assert_same(xnp.array(v), jnp.array(v), what=repr(v))
        for v, dt in [
            (2, np.float16),
            (2.5, np.int32),
            ([1, 2], BF16),
            (np.arange(3), float),
            (3, int),
            (1.5, "float32"),
            ([1, 0], bool),
        ]:
            assert_same(xnp.asarray(v, dtype=dt), jnp.asarray(v, dtype=dt), what=repr(v))
        assert_same(xnp.array(5, ndmin=2), jnp.array(5, ndmin=2))


def test_asarray_copies_user_numpy_data():
    a = np.arange(3.0, dtype=np.float32)
    x = xnp.asarray(a)
    a[0] = 100.0
    assert float(x[0]) == 0.0
    assert xnp.asarray(x) is x


def test_asarray_of_tracers_and_nested_tracers():
    def f(x):
        return xnp.asarray([x, 2 * x, 3.0]), xnp.array([[x], [x]], dtype=np.int32)

    def g(x):
        return jnp.asarray([x, 2 * x, 3.0]), jnp.array([[x], [x]], dtype=np.int32)

    x = np.float32(1.5)
    assert_same(xform.jit(f)(x), jax.jit(g)(x))
    assert_same(f(xnp.asarray(x)), g(jnp.asarray(x)))


def test_asarray_errors():
    with pytest.raises(TypeError, match="string"):
        xnp.asarray("abc")
    with pytest.raises(TypeError, match="string"):
        xnp.asarray(["a", "b"])
    with pytest.raises(ValueError, match="ragged"):
        xnp.asarray([[1, 2], [3]])
    with pytest.raises(OverflowError, match="too large"):
        xnp.asarray(2**40)
    with pytest.raises(TypeError, match="not a valid dtype"):
        xnp.asarray(1, dtype="not-a-dtype")
    with pytest.raises(TypeError, match="requires ndarray or scalar arguments"):
        xnp.add([1, 2], 3)
    with pytest.raises(TypeError, match="strings are not supported"):
        xnp.add("a", 3)


def test_incompatible_broadcast_is_a_value_error_like_jax():
    # Operands of one rank meet in the lax primitive, whose TypeError is JAX's; operands of
    # different ranks fail the rank promotion (ValueError, as in JAX; xform's error is both).
    for fn, args in [
        (jnp.add, (np.ones(3), np.ones(4))),
        (jnp.multiply, (np.ones((2, 3)), np.ones((4, 3)))),
    ]:
        with pytest.raises(TypeError) as want:
            fn(*args)
        with pytest.raises(TypeError) as got:
            getattr(xnp, fn.__name__)(*args)
        assert str(got.value) == str(want.value)
    with pytest.raises(
        ValueError,
        match=r"add: Incompatible shapes for broadcasting: "
        r"shapes=\[\(2, 3\), \(4,\)\]",
    ):
        xnp.add(np.ones((2, 3)), np.ones(4))
    with pytest.raises(ValueError, match=r"where: Incompatible shapes for broadcasting"):
        xnp.where(True, np.ones(3), np.ones(4))
    with pytest.raises(ValueError, match="Incompatible shapes for broadcasting"):
        xnp.broadcast_to(np.ones(3), (4,))
    assert xnp.broadcast_shapes((2, 1), (3,)) == (2, 3)


def test_rank0_operands_stay_unbroadcast_in_the_jaxpr():
    text = str(xform.make_jaxpr(lambda x: x * 2.0)(np.ones(3, np.float32)))
    assert "mul a 2.0:f32[]" in text
    assert "broadcast_in_dim" not in text
    text16 = str(xform.make_jaxpr(lambda x: x * 2)(np.ones(3, np.float16)))
    assert "mul a 2.0:f16[]" in text16
    text_int = str(xform.make_jaxpr(lambda x: x * 2.0)(np.ones(3, np.int32)))
    assert "convert_element_type[new_dtype=float32 weak_type=True]" in text_int
    text_b = str(
        xform.make_jaxpr(lambda x, y: x + y)(np.ones(3, np.float32), np.ones((2, 3), np.float32))
    )
    assert "broadcast_in_dim" in text_b


def test_weak_types_survive_operators():
    x16 = xnp.ones(3, xnp.float16)
    assert (x16 * 2).dtype == np.float16
    assert (2.5 * x16).dtype == np.float16
    assert (x16 + xnp.asarray(1.0)).dtype == np.float16
    xi8 = xnp.ones(3, xnp.int8)
    assert (xi8 + 1).dtype == np.int8
    assert (xi8 + 1.0).dtype == np.float32 and (xi8 + 1.0).weak_type
    assert xnp.asarray(2.0).weak_type and not xnp.asarray(np.float32(2)).weak_type


@pytest.mark.parametrize("x64", [False, True], ids=["x32", "x64"])
def test_integer_inputs_to_float_functions(x64):
    # jax.numpy's to_inexact: integers up to 32 bits and bool -> float32 even with x64.
    with x64_both(x64):
        for v in [
            np.ones(2, np.int8),
            np.ones(2, np.uint32),
            np.ones(2, np.int64),
            np.ones(2, bool),
            2,
            True,
        ]:
            for name in ["sin", "true_divide", "mean"]:
                fx, fj = getattr(xnp, name), getattr(jnp, name)
                args = (v, v) if name == "true_divide" else (v,)
                got = fx(*args)
                exp = jax.eval_shape(lambda: fj(*args))  # noqa: B023
                assert (got.dtype, got.weak_type) == (exp.dtype, exp.weak_type), (name, v)


# Binary ufuncs only promote ranks and leave size-1 dimensions to the lax primitive, as
# jax.numpy 0.10.2 does: `x * b` of f32[4,3] and f32[3] is `mul` of f32[4,3] and f32[1,3].
SIZE1_UFUNCS = [
    "add",
    "subtract",
    "multiply",
    "divide",
    "maximum",
    "minimum",
    "arctan2",
    "nextafter",
    "power",
    "float_power",
    "fmod",
    "floor_divide",
    "remainder",
    "divmod",
    "hypot",
    "copysign",
    "logaddexp",
    "logaddexp2",
    "heaviside",
    "equal",
    "less",
    "greater_equal",
    "logical_and",
    "logical_xor",
    "isclose",
]
# Those whose jax.numpy jaxpr is these lax primitives themselves (the rest are jit-wrapped
# or ordered otherwise in JAX, so only their values, gradients and batching are compared).
SAME_JAXPR = {
    "add",
    "subtract",
    "multiply",
    "divide",
    "maximum",
    "minimum",
    "arctan2",
    "nextafter",
    "power",
    "float_power",
    "equal",
    "less",
    "greater_equal",
    "logical_and",
    "logical_xor",
}
SIZE1_SHAPES = [((4, 3), (3,)), ((4, 3), (4, 1)), ((1, 3), (4, 1)), ((2, 1, 3), (4, 1))]


@pytest.mark.parametrize("name", SIZE1_UFUNCS)
def test_size1_broadcasting_left_to_the_primitive_as_jax(name):
    rng = np.random.default_rng(0)
    xf, jf = getattr(xnp, name), getattr(jnp, name)
    for s1, s2 in SIZE1_SHAPES:
        x = rng.uniform(0.5, 2.0, s1).astype(np.float32)
        y = rng.uniform(-2.0, 2.0, s2).astype(np.float32)
        for a, b in ((x, y), (y, x)):
            assert_same(xf(a, b), jf(a, b))
            assert_same(xform.jit(xf)(a, b), jax.jit(jf)(a, b))
            if name in SAME_JAXPR:
                assert str(xform.make_jaxpr(xf)(a, b)) == str(jax.make_jaxpr(jf)(a, b))
        if name in (
            "equal",
            "less",
            "greater_equal",
            "logical_and",
            "logical_xor",
            "isclose",
            "divmod",
            "floor_divide",
            "nextafter",
        ):
            continue  # no gradient to compare

        def loss(lib, f):
            return lambda u, v: lib.numpy.sum(lib.numpy.sin(f(u, v)))

        grads = xform.grad(loss(xform, xf), argnums=(0, 1))(x, y)
        want = jax.grad(loss(jax, jf), argnums=(0, 1))(x, y)
        assert_same(grads, want, rtol=1e-5, atol=1e-6)
    x = rng.uniform(0.5, 2.0, (5, 4, 3)).astype(np.float32)
    y = rng.uniform(-2.0, 2.0, (5, 4, 1)).astype(np.float32)
    for in_axes in (0, (0, None), (None, 0)):
        yy = y[0] if in_axes == (0, None) else y
        xx = x[0] if in_axes == (None, 0) else x
        got = xform.vmap(xf, in_axes)(xx, yy)
        assert_same(got, jax.vmap(jf, in_axes)(xx, yy))
