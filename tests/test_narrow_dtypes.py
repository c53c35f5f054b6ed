"""The narrow ml_dtypes types of jax.numpy (float8_*, float4/float6, int1/int2/int4 and the
unsigned ones) against JAX: scalar types, creation, promotion, conversion bit for bit,
arithmetic eagerly and under jit, printing, finfo/iinfo, and the errors JAX raises."""

import ast
import functools

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import xform
import xform.numpy as xnp

FLOAT8 = [
    "float8_e3m4",
    "float8_e4m3",
    "float8_e4m3b11fnuz",
    "float8_e4m3fn",
    "float8_e4m3fnuz",
    "float8_e5m2",
    "float8_e5m2fnuz",
    "float8_e8m0fnu",
]
# XLA on CPU computes with these (through float32) ...
FLOATS = FLOAT8 + ["float4_e2m1fn"]
INTS = ["int2", "int4", "uint2", "uint4"]
# ... but has no float6 support (JAX fails to even create one), and JAX's int1/uint1 arrays
# fail in the runtime: for these only the dtype machinery is compared.
FLOAT6 = ["float6_e2m3fn", "float6_e3m2fn"]
ONE_BIT = ["int1", "uint1"]
ALL = FLOATS + FLOAT6 + INTS + ONE_BIT
COMPUTABLE = FLOATS + INTS

# Telling float32 values: ties, values between representables, the ranges' edges,
# subnormals, overflow, infinities, NaN and signed zeros.
_F32 = np.array(
    [
        0.0,
        -0.0,
        1.0,
        -1.5,
        0.3,
        2.75,
        3.1,
        -7.9,
        9.0,
        17.0,
        240.0,
        250.0,
        448.0,
        460.0,
        1e4,
        57344.0,
        61440.0,
        1e6,
        3e-3,
        1e-6,
        2.0**-9,
        -(2.0**-17),
        np.inf,
        -np.inf,
        np.nan,
    ],
    np.float32,
)
_INT_VALUES = [0, 1, -1, 2, 3, -2, 7, -8, 15]


def _bits(x):
    x = np.asarray(x)
    return x.view(np.uint8) if x.dtype.itemsize == 1 else x.view(f"u{x.dtype.itemsize}")


def _same_bits(got, expected, what=""):
    """Same dtype, weak type and bit patterns (NaNs included) as JAX's result."""
    g, e = np.asarray(got), np.asarray(expected)
    assert g.dtype == e.dtype, f"{what}: dtype {g.dtype} != {e.dtype}"
    assert g.shape == e.shape, f"{what}: shape {g.shape} != {e.shape}"
    assert bool(got.weak_type) == bool(expected.weak_type), f"{what}: weak_type"
    np.testing.assert_array_equal(_bits(g), _bits(e), err_msg=what)


def _int_values(name):
    info = ml_dtypes.iinfo(getattr(ml_dtypes, name))
    return [v for v in _INT_VALUES if info.min <= v <= info.max]


# --------------------------------------------------------------------------- scalar types


@pytest.mark.parametrize("name", ALL)
def test_scalar_type_is_a_dtype_and_a_subdtype(name):
    t, jt = getattr(xnp, name), getattr(jnp, name)
    assert t.dtype == jt.dtype == np.dtype(getattr(ml_dtypes, name))
    assert np.dtype(t) == jt.dtype and t == jt.dtype.type and t.__name__ == name
    kinds = [
        jnp.generic,
        jnp.number,
        jnp.inexact,
        jnp.floating,
        jnp.integer,
        jnp.signedinteger,
        jnp.unsignedinteger,
        jnp.bool_,
        jnp.float32,
        jnp.int8,
        jnp.bfloat16,
        jnp.int4,
        jnp.float8_e4m3fn,
        jt,
    ]
    assert [xnp.issubdtype(t, k) for k in kinds] == [jnp.issubdtype(jt, k) for k in kinds]
    assert [xnp.issubdtype(k, t) for k in kinds] == [jnp.issubdtype(k, jt) for k in kinds]
    kind_names = [
        "bool",
        "signed integer",
        "unsigned integer",
        "integral",
        "real floating",
        "complex floating",
        "numeric",
    ]
    assert [xnp.isdtype(t, k) for k in kind_names] == [jnp.isdtype(jt, k) for k in kind_names]


@pytest.mark.parametrize("name", FLOATS + FLOAT6)
def test_finfo(name):
    got, expected = xnp.finfo(getattr(xnp, name)), jnp.finfo(getattr(jnp, name))
    for field in (
        "bits",
        "eps",
        "epsneg",
        "max",
        "min",
        "tiny",
        "smallest_normal",
        "smallest_subnormal",
        "resolution",
        "nmant",
        "nexp",
        "maxexp",
        "minexp",
    ):
        assert _bits(getattr(got, field)).tolist() == _bits(getattr(expected, field)).tolist()
    assert got.dtype == expected.dtype


@pytest.mark.parametrize("name", INTS + ONE_BIT)
def test_iinfo(name):
    got, expected = xnp.iinfo(getattr(xnp, name)), jnp.iinfo(getattr(jnp, name))
    assert (got.min, got.max, got.bits, got.dtype) == (
        expected.min,
        expected.max,
        expected.bits,
        expected.dtype,
    )


def test_finfo_iinfo_reject_the_other_kind_as_jax():
    with pytest.raises(ValueError, match="not inexact"):
        jnp.finfo(jnp.int4)
    with pytest.raises(ValueError, match="not inexact"):
        xnp.finfo(xnp.int4)
    with pytest.raises(ValueError, match="Invalid integer data type"):
        jnp.iinfo(jnp.float8_e5m2)
    with pytest.raises(ValueError, match="Invalid integer data type"):
        xnp.iinfo(xnp.float8_e5m2)


# --------------------------------------------------------------------------- creation


def _creations(m):
    return {
        name: (
            m.zeros((2, 1), getattr(m, name)),
            m.ones(3, getattr(m, name)),
            m.full(2, 5, getattr(m, name)),
            m.arange(3, dtype=getattr(m, name)),
        )
        for name in COMPUTABLE
    }


def test_creation_functions_eagerly_and_as_jit_constants():
    expected = jax.jit(lambda: _creations(jnp))()
    for got, how in [(_creations(xnp), "eager"), (xform.jit(lambda: _creations(xnp))(), "jit")]:
        for name in COMPUTABLE:
            for g, e in zip(got[name], expected[name], strict=True):
                _same_bits(g, e, what=f"{how} {name}")


@pytest.mark.parametrize("name", COMPUTABLE)
def test_array_and_scalar_call(name):
    t, jt = getattr(xnp, name), getattr(jnp, name)
    vals = [1.5, -2.25, 3.0] if name in FLOATS else [1, 2, 3, 30]  # ints wrap, as in JAX
    for x, e in [
        (t(3), jt(3)),
        (t(vals[1]), jt(vals[1])),
        (xnp.array(vals, dtype=t), jnp.array(vals, dtype=jt)),
        (xnp.asarray(np.array(vals, t.dtype)), jnp.asarray(np.array(vals, jt.dtype))),
    ]:
        _same_bits(x, e, what=name)
    assert str(xnp.array(vals, dtype=t)) == str(jnp.array(vals, dtype=jt))
    assert repr(t(vals[1])) == repr(jt(vals[1]))


@pytest.mark.parametrize("name", FLOAT6 + ONE_BIT)
def test_creation_of_types_xla_cpu_cannot_hold(name):
    # JAX fails in its runtime here; xform's arrays live on the host until used, so they are
    # made (with ml_dtypes' values) and print.
    t = getattr(xnp, name)
    x = xnp.array([1, 0, 1], dtype=t)
    assert x.dtype == t.dtype and not x.weak_type
    np.testing.assert_array_equal(_bits(x), _bits(np.array([1, 0, 1], t.dtype)))
    assert name in repr(x) and str(xnp.zeros(2, t))


# --------------------------------------------------------------------------- promotion

_OTHERS = [
    jnp.bool_,
    jnp.int8,
    jnp.uint8,
    jnp.int32,
    jnp.uint32,
    jnp.int64,
    jnp.float16,
    jnp.bfloat16,
    jnp.float32,
    jnp.complex64,
    int,
    float,
    complex,
    bool,
    jnp.float8_e5m2,
    jnp.float4_e2m1fn,
    jnp.float6_e2m3fn,
    jnp.int4,
    jnp.uint2,
    jnp.int1,
]


def _xform_type(t):
    if t in (int, float, complex, bool):
        return t
    return xnp.bool_ if t is jnp.bool_ else getattr(xnp, t.dtype.name)


def _outcome(fn, *args):
    try:
        return np.dtype(fn(*args))
    except ValueError as e:
        # JAX lists the input dtypes in set order: compare them as a set.
        head, _, rest = str(e).partition(" have no available")
        return sorted(ast.literal_eval(head.removeprefix("Input dtypes "))), rest


@pytest.mark.parametrize("name", ALL)
def test_promote_types_and_result_type(name):
    t, jt = getattr(xnp, name), getattr(jnp, name)
    for other in _OTHERS:
        xo = _xform_type(other)
        for fn, jfn in [(xnp.promote_types, jnp.promote_types), (xnp.result_type, jnp.result_type)]:
            for args, jargs in [((t, xo), (jt, other)), ((xo, t), (other, jt))]:
                assert _outcome(fn, *args) == _outcome(jfn, *jargs), f"{jfn.__name__}{jargs}"


@pytest.mark.parametrize("name", COMPUTABLE)
def test_binary_op_dtypes_with_scalars_and_arrays(name):
    t, jt = getattr(xnp, name), getattr(jnp, name)
    x, jx = xnp.ones(2, t), jnp.ones(2, jt)
    for other, jother in [
        (1, 1),
        (2.0, 2.0),
        (True, True),
        (xnp.int32(2), jnp.int32(2)),
        (xnp.ones(2, t), jnp.ones(2, jt)),
    ]:
        try:
            expected = jax.eval_shape(lambda a, b: a * b, jx, jother)
        except ValueError:
            with pytest.raises(ValueError, match=r"no available implicit dtype promotion path"):
                x * other
            continue
        got = x * other
        assert (got.dtype, got.weak_type) == (expected.dtype, expected.weak_type), jother


def test_promotion_errors_match_jax():
    cases = [
        ("float8_e4m3fn", "float32"),
        ("float8_e4m3fn", "float8_e5m2"),
        ("float4_e2m1fn", "bfloat16"),
        ("float6_e3m2fn", "float16"),
        ("int4", "int8"),
        ("int4", "uint4"),
        ("uint2", "float8_e4m3fn"),
    ]
    for a, b in cases:
        with pytest.raises(jax.dtypes.TypePromotionError) as expected:
            jnp.promote_types(getattr(jnp, a), getattr(jnp, b))
        with pytest.raises(ValueError) as got:
            xnp.promote_types(getattr(xnp, a), getattr(xnp, b))
        assert str(got.value) == str(expected.value)
    with pytest.raises(
        ValueError,
        match=r"\('int4', \"<class 'float'>\"\) have no available "
        r"implicit dtype promotion path.*4-bit integers",
    ):
        xnp.int4(1) + 1.5
    with pytest.raises(ValueError, match="8-bit floats do not support implicit promotion"):
        xform.jit(lambda a, b: a + b)(xnp.float8_e5m2(1), xnp.float32(1))


# --------------------------------------------------------------------------- conversion


_WIDE_INTS = np.array([0, 1, -1, 5, -9, 30, 200], np.int32)
_I4 = np.array([0, 1, -3, 7, -8], ml_dtypes.int4)


def _conversions(m, x32, w32, i4, narrow, eager=False):
    """Every conversion under test, keyed by (dtype name, what), in namespace ``m``: to and
    from float32 for every type, a few more for some."""
    out = {}
    for name in FLOATS:
        n = out[name, "from f32"] = x32.astype(getattr(m, name))
        out[name, "to f32"] = n.astype(m.float32)
    for name in INTS:
        out[name, "from i32"] = w32.astype(getattr(m, name))
        out[name, "to f32"] = narrow[name].astype(m.float32)
        out[name, "from f32"] = x32.astype(getattr(m, name))
    for name in ("float8_e4m3fn", "float8_e5m2"):
        out[name, "from int4"] = i4.astype(getattr(m, name))
        out[name, "to bf16"] = out[name, "from f32"].astype(m.bfloat16)
        out[name, "to i32"] = out[name, "from f32"].astype(m.int32)
    out["int4", "to uint8"] = narrow["int4"].astype(m.uint8)
    out["uint2", "to bool"] = narrow["uint2"].astype(m.bool_)
    out["uint4", "to int32"] = narrow["uint4"].astype(m.int32)
    return out


def _conversion_inputs(m):
    narrow = {name: np.array(_int_values(name), getattr(ml_dtypes, name)) for name in INTS}
    return (
        m.asarray(_F32),
        m.asarray(_WIDE_INTS),
        m.asarray(_I4),
        {k: m.asarray(v) for k, v in narrow.items()},
    )


def test_conversions_bit_for_bit_eagerly_and_under_jit():
    expected = jax.jit(functools.partial(_conversions, jnp))(*_conversion_inputs(jnp))
    got_jit = xform.jit(functools.partial(_conversions, xnp))(*_conversion_inputs(xnp))
    got_eager = _conversions(xnp, *_conversion_inputs(xnp), eager=True)
    assert got_jit.keys() == expected.keys()
    for key, e in expected.items():
        _same_bits(got_jit[key], e, what=f"jit {key}")
        if key in got_eager:
            _same_bits(got_eager[key], e, what=f"eager {key}")


def test_eager_float_to_narrow_int_saturates():
    expected = jnp.asarray(_F32).astype(jnp.int4)
    _same_bits(xnp.asarray(_F32).astype(xnp.int4), expected)


def test_eager_fnuz_nan_to_float32():
    x = np.array([np.nan, 1.0], ml_dtypes.float8_e4m3fnuz)
    _same_bits(xnp.asarray(x).astype(xnp.float32), jnp.asarray(x).astype(jnp.float32))


# --------------------------------------------------------------------------- arithmetic


def _operands(name):
    dtype = getattr(ml_dtypes, name)
    if name in FLOATS:
        a = np.array([0.5, -1.5, 3.0, 2.75, 448.0, -0.3, 6.0, 1.25], np.float32)
        b = np.array([1.0, 2.5, 3.0, -0.75, 2.0, 0.3, 6.0, 1.75], np.float32)
    else:
        vals = _int_values(name)  # products and sums wrap around
        a, b = np.array(vals, np.int32), np.array(vals[::-1], np.int32)
    return a.astype(dtype), b.astype(dtype)


def _arith(operands):
    return {name: (a + b, a * b) for name, (a, b) in operands.items()}


def test_add_mul_eagerly_and_under_jit_bit_for_bit():
    operands = {name: _operands(name) for name in COMPUTABLE}
    expected = jax.jit(_arith)(jax.tree.map(jnp.asarray, operands))
    xs = jax.tree.map(xnp.asarray, operands)
    for got, how in [(_arith(xs), "eager"), (xform.jit(_arith)(xs), "jit")]:
        for name in COMPUTABLE:
            for g, e, op in zip(got[name], expected[name], ["a+b", "a*b"], strict=True):
                _same_bits(g, e, what=f"{name} {how} {op}")


def test_vmap_grad_and_jaxpr_of_a_narrow_float():
    f8 = np.array([[0.5, 1.5], [3.0, -2.0]], ml_dtypes.float8_e4m3fn)
    _same_bits(
        xform.vmap(lambda r: r * r + 1)(xnp.asarray(f8)),
        jax.vmap(lambda r: r * r + 1)(jnp.asarray(f8)),
    )
    _same_bits(
        xform.grad(lambda s: s * s * 3)(xnp.float8_e4m3fn(1.5)),
        jax.grad(lambda s: s * s * 3)(jnp.float8_e4m3fn(1.5)),
    )
    for t in ("float8_e4m3fn", "int4", "uint2", "float4_e2m1fn"):
        x = np.ones(2, getattr(ml_dtypes, t))
        assert str(xform.make_jaxpr(lambda a: a + 1)(xnp.asarray(x))) == str(
            jax.make_jaxpr(lambda a: a + 1)(jnp.asarray(x))
        )


def test_float6_compiles_to_jaxs_runtime_error():
    x = xnp.ones(3, xnp.float6_e2m3fn)
    assert (x * 2).dtype == xnp.float6_e2m3fn  # on the host, through ml_dtypes
    with pytest.raises(jax.errors.JaxRuntimeError, match="INVALID_ARGUMENT.*float6_e2m3fn"):
        xform.jit(lambda a: a.astype(xnp.float6_e2m3fn) + 1)(xnp.ones(3))
    with pytest.raises(jax.errors.JaxRuntimeError, match="Invalid XLA PrimitiveType"):
        jnp.ones(3, jnp.float6_e2m3fn)
