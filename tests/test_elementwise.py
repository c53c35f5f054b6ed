"""Every elementwise primitive against jax.lax, eagerly (NumPy host impls) and under jit.

One table row per op: its arity, the dtypes it accepts and the domain its values are drawn
from. Hypothesis draws a dtype, a shape (0-d operands broadcast against arrays, Python scalars
give weak types) and values (with inf/nan/extremes mixed in); the result must equal
``jax.jit`` of the same ``lax`` call in value, dtype and weak type.
"""

import re
from typing import NamedTuple

import hypothesis.strategies as st
import jax
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given

import xform
from tests.harness import assert_same, check_against_jax, tolerance
from xform import lax

jlax = jax.lax

BOOL = [np.dtype(np.bool_)]
SINT = [np.dtype(t) for t in (np.int8, np.int16, np.int32)]
UINT = [np.dtype(t) for t in (np.uint8, np.uint16, np.uint32)]
INT = SINT + UINT
FLOAT = [np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16), np.dtype(np.float32)]
COMPLEX = [np.dtype(np.complex64)]
INEXACT = FLOAT + COMPLEX
NUMBER = INT + INEXACT
ANY = BOOL + NUMBER
ALL_DTYPES = ANY


class Op(NamedTuple):
    name: str
    nargs: int
    dtypes: list
    domain: tuple = (-4.0, 4.0)  # real values (and imaginary parts) drawn from here
    specials: bool = True  # mix in 0, -0, inf, nan, extremes
    rtol: float | None = None  # per-op tolerance, each with a comment saying why
    int_domain: tuple | None = None  # integer operands from here instead of the full range
    jax_name: str | None = None


OPS = [
    Op("neg", 1, NUMBER),
    Op("sign", 1, NUMBER),
    Op("floor", 1, FLOAT),
    Op("ceil", 1, FLOAT),
    Op("round", 1, FLOAT),
    Op("is_finite", 1, FLOAT),
    Op("abs", 1, SINT + INEXACT),
    Op("exp", 1, INEXACT),
    Op("exp2", 1, INEXACT),
    Op("log", 1, INEXACT, (0.01, 10.0)),
    Op("log1p", 1, INEXACT, (-0.9, 10.0)),
    Op("expm1", 1, INEXACT),
    Op("sqrt", 1, INEXACT, (0.0, 10.0)),
    Op("rsqrt", 1, INEXACT, (0.01, 10.0)),
    Op("cbrt", 1, FLOAT),
    Op("sin", 1, INEXACT),
    Op("cos", 1, INEXACT),
    Op("tan", 1, INEXACT, (-1.4, 1.4)),
    Op("asin", 1, INEXACT, (-1.0, 1.0)),
    Op("acos", 1, INEXACT, (-1.0, 1.0)),
    Op("atan", 1, INEXACT),
    Op("sinh", 1, INEXACT),
    Op("cosh", 1, INEXACT),
    Op("tanh", 1, INEXACT),
    Op("asinh", 1, INEXACT),
    Op("acosh", 1, INEXACT, (1.0, 10.0)),
    Op("atanh", 1, INEXACT, (-0.99, 0.99)),
    Op("logistic", 1, INEXACT),
    Op("erf", 1, FLOAT),
    Op("erfc", 1, FLOAT),
    Op("erf_inv", 1, FLOAT, (-0.99, 0.99)),
    Op("lgamma", 1, FLOAT, (0.1, 10.0)),
    Op("digamma", 1, FLOAT, (0.1, 10.0)),
    Op("bitwise_not", 1, INT + BOOL),
    Op("population_count", 1, INT),
    Op("real", 1, COMPLEX),
    Op("imag", 1, COMPLEX),
    Op("conj", 1, [np.dtype(np.float32)] + COMPLEX),
    Op("add", 2, NUMBER),
    Op("sub", 2, NUMBER),
    Op("mul", 2, NUMBER),
    Op("div", 2, NUMBER),
    Op("rem", 2, FLOAT + INT),
    Op("pow", 2, INEXACT, (0.1, 3.0)),
    Op("max", 2, ANY),
    Op("min", 2, ANY),
    Op("atan2", 2, FLOAT),
    Op("nextafter", 2, FLOAT),
    Op("bitwise_and", 2, INT + BOOL),
    Op("bitwise_or", 2, INT + BOOL),
    Op("bitwise_xor", 2, INT + BOOL),
    Op("shift_left", 2, INT, int_domain=(-2, 35)),
    Op("shift_right_logical", 2, INT, int_domain=(-2, 35)),
    Op("shift_right_arithmetic", 2, INT, int_domain=(-2, 35)),
    Op("eq", 2, ANY),
    Op("ne", 2, ANY),
    Op("lt", 2, FLOAT + INT + BOOL),
    Op("le", 2, FLOAT + INT + BOOL),
    Op("gt", 2, FLOAT + INT + BOOL),
    Op("ge", 2, FLOAT + INT + BOOL),
]
OPS_BY_NAME = {op.name: op for op in OPS}

_SPECIAL_FLOATS = [
    0.0,
    -0.0,
    np.inf,
    -np.inf,
    np.nan,
    1.0,
    -1.0,
    0.5,
    -0.5,
    2.5,
    -2.5,
    1e-30,
    3e38,
    -3e38,
]


def draw_values(rng, shape, dtype, op, specials):
    """Values of ``dtype`` in ``op``'s domain; with ``specials``, extremes mixed in."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        lo, hi = op.int_domain or (info.min, info.max)
        lo, hi = max(lo, info.min), min(hi, info.max)
        x = rng.integers(lo, hi, size=shape, endpoint=True).astype(dtype)
        if specials and x.size and op.int_domain is None:
            picks = np.array([0, 1, info.min, info.max, -1 if info.min else 2], np.int64)
            mask = rng.random(shape) < 0.3
            x = np.where(mask, rng.choice(picks, size=shape).astype(dtype), x)
        return x
    lo, hi = op.domain
    x = rng.uniform(lo, hi, size=shape)
    # Complex operands get no special values: NumPy's complex kernels and XLA's disagree on
    # infinities and on the sign of branch cuts (logistic(-inf+3.7j): nan against -0).
    if specials and op.specials and x.size and dtype.kind != "c":
        mask = rng.random(shape) < 0.3
        x = np.where(mask, rng.choice(_SPECIAL_FLOATS, size=shape), x)
    if dtype.kind == "c":
        x = x + 1j * rng.uniform(lo, hi, size=shape)
    with np.errstate(over="ignore"):
        return x.astype(dtype)


# Compiled functions are shared between examples: the jit caches key on the avals, so a
# signature seen before costs no compile.
_JITS = {}


def _jitted(key, xf_fn, jax_fn):
    if key not in _JITS:
        _JITS[key] = (xform.jit(xf_fn), jax.jit(jax_fn))
    return _JITS[key]


BF16 = np.dtype(ml_dtypes.bfloat16)


def assert_close(got, expected, rtol, what):
    """``harness.assert_same``, except that bfloat16 (NumPy kind 'V', which assert_same
    compares bit for bit and without NaN equality) is compared as float32 within bfloat16's
    tolerance."""
    if isinstance(expected, (list, tuple)):
        assert len(got) == len(expected), what
        for i, (g, e) in enumerate(zip(got, expected, strict=True)):
            assert_close(g, e, rtol, f"{what}[{i}]")
        return
    if np.asarray(expected).dtype != BF16:
        assert_same(got, expected, rtol, rtol, what=what)
        return
    assert np.asarray(got).dtype == BF16, f"{what}: dtype {np.asarray(got).dtype} != bfloat16"
    if hasattr(expected, "weak_type"):
        assert bool(got.weak_type) == bool(expected.weak_type), f"{what}: weak_type differs"
    tol = tolerance(BF16) if rtol is None else rtol
    assert_same(
        np.asarray(got).astype(np.float32),
        np.asarray(expected).astype(np.float32),
        tol,
        tol,
        what=what,
    )


def check(key, xf_fn, jax_fn, args, rtol=None):
    """``xf_fn(*args)`` eagerly and under ``xform.jit`` equals ``jax.jit(jax_fn)(*args)``."""
    xf_jit, jax_jit = _jitted(key, xf_fn, jax_fn)
    expected = jax_jit(*args)
    assert_close(xf_fn(*args), expected, rtol, f"{key} eager")
    assert_close(xf_jit(*args), expected, rtol, f"{key} jit")


_WEAK_DTYPES = (np.int32, np.float32, np.complex64)  # the dtypes of Python scalars
_N = 24  # the length of the flat arrays the compiled checks run on


def op_cases(op, rng, specials):
    """Operand tuples for every dtype ``op`` accepts: flat arrays of length ``_N`` and, in
    turn from one dtype to the next, 0-d arrays and Python scalars (weakly typed) against
    them. The signature depends only on ``op``, so each op compiles once."""
    cases = []
    for i, dtype in enumerate(op.dtypes):

        def arr(dtype=dtype):
            return draw_values(rng, (_N,), dtype, op, specials)

        def zero_d(dtype=dtype):
            return draw_values(rng, (), dtype, op, specials)

        if op.nargs == 1:
            cases += [(arr(),), (zero_d(),)]
        else:
            other = [(arr(), zero_d()), (zero_d(), arr()), (zero_d(), zero_d())][i % 3]
            cases += [(arr(), arr()), other]
        if dtype in _WEAK_DTYPES:
            py = zero_d().item()
            if op.nargs == 1:
                cases.append((py,))
            else:
                cases += [[(arr(), py), (py, zero_d()), (py, py)][i % 3]]
    return cases


def _fns(op):
    return getattr(lax, op.name), getattr(jlax, op.jax_name or op.name)


def _shaped(x, shape):
    """The first ``prod(shape)`` elements of a flat array, in ``shape``; 0-d values as is."""
    if np.ndim(x) == 0:
        return x
    return x[: int(np.prod(shape, dtype=np.int64))].reshape(shape)


def check_cases(key, xf_op, jax_op, cases, shape, rtol=None):
    """All cases in one ``xform.jit`` call against one ``jax.jit`` call (one compile each per
    op), then each case eagerly with its arrays cut to ``shape``: elementwise results do not
    depend on the layout, so the compiled oracle's results, cut alike, are the truth.
    ``xf_op``/``jax_op``: one function, or a list with one per case."""
    sizes = [len(c) for c in cases]

    def split(flat):
        out, i = [], 0
        for n in sizes:
            out.append(flat[i : i + n])
            i += n
        return out

    def run_all(ops):
        return lambda *flat: [op(*args) for op, args in zip(ops, split(flat), strict=True)]

    xf_ops = xf_op if isinstance(xf_op, list) else [xf_op] * len(cases)
    jax_ops = jax_op if isinstance(jax_op, list) else [jax_op] * len(cases)
    xf_jit, jax_jit = _jitted((key, tuple(sizes)), run_all(xf_ops), run_all(jax_ops))
    flat = [x for c in cases for x in c]
    expected = jax_jit(*flat)
    got_jit = xf_jit(*flat)
    for i, (args, e) in enumerate(zip(cases, expected, strict=True)):
        what = f"{key} case {i} {[getattr(a, 'dtype', type(a).__name__) for a in args]}"
        assert_close(got_jit[i], e, rtol, f"{what} jit")
        got = xf_ops[i](*[_shaped(a, shape) for a in args])
        # Cut on the host: JAX would compile a slice and a reshape per shape.
        e_cut = _shaped(np.asarray(e), shape) if np.ndim(e) else np.asarray(e)
        assert_close(got, e_cut, rtol, f"{what} eager, shape {shape}")
        assert got.weak_type == e.weak_type, f"{what} eager: weak_type {got.weak_type}"


# Shapes of the operands of the eager checks (any rank, empty ones included).
_SHAPE = (
    st.lists(st.integers(0, 3), max_size=3)
    .map(tuple)
    .filter(lambda s: np.prod(s, dtype=np.int64) <= _N)
)


@pytest.mark.parametrize("op", OPS, ids=lambda op: op.name)
@given(seed=st.integers(0, 2**32 - 1), shape=_SHAPE, specials=st.booleans())
def test_elementwise_op(op, seed, shape, specials):
    cases = op_cases(op, np.random.default_rng(seed), specials)
    check_cases(op.name, *_fns(op), cases, shape, op.rtol)


@given(seed=st.integers(0, 2**32 - 1), shape=_SHAPE)
def test_round_methods(seed, shape):
    rng = np.random.default_rng(seed)
    # Halves are where the two methods differ.
    cases = [((rng.integers(-8, 8, size=(_N,)) / 2).astype(d),) for d in FLOAT for _ in (0, 1)]
    methods = [m for _ in FLOAT for m in (0, 1)]
    check_cases(
        "round_methods",
        [lambda a, m=m: lax.round(a, m) for m in methods],
        [lambda a, m=m: jlax.round(a, m) for m in methods],
        cases,
        shape,
    )


_POWERS = [0, 1, 2, 3, 5, -1, -3]


@given(seed=st.integers(0, 2**32 - 1), shape=_SHAPE, specials=st.booleans())
def test_integer_pow(seed, shape, specials):
    rng = np.random.default_rng(seed)
    op = Op("integer_pow", 1, NUMBER, (-3.0, 3.0))
    cases, ys = [], []
    for i, dtype in enumerate(NUMBER):
        for j in range(3):  # three exponents per dtype, in turn; integers take no negative ones
            y = _POWERS[(3 * i + j) % (len(_POWERS) if dtype.kind in "fcV" else 5)]
            shape_i = () if j == 2 else (_N,)
            cases.append((draw_values(rng, shape_i, dtype, op, specials),))
            ys.append(y)
    check_cases(
        "integer_pow",
        [lambda a, y=y: lax.integer_pow(a, y) for y in ys],
        [lambda a, y=y: jlax.integer_pow(a, y) for y in ys],
        cases,
        shape,
    )


_WHICH_DTYPES = [np.dtype(d) for d in (np.bool_, np.int32, np.uint8, np.int8)]


@given(seed=st.integers(0, 2**32 - 1), shape=_SHAPE)
def test_select_n(seed, shape):
    rng = np.random.default_rng(seed)
    op = OPS_BY_NAME["add"]
    cases = []
    for i, dtype in enumerate(ANY):  # which's dtype, the number of cases, and 0-d in turn
        which_dtype = _WHICH_DTYPES[i % len(_WHICH_DTYPES)]
        n = 1 + i % (2 if which_dtype == np.bool_ else 4)
        which = rng.integers(0, n, size=() if i % 3 == 2 else (_N,)).astype(which_dtype)
        cases.append((which, *(draw_values(rng, (_N,), dtype, op, True) for _ in range(n))))
    check_cases("select_n", lax.select_n, jlax.select_n, cases, shape)


def test_select_weak_type():
    check(("select_n", "weak"), lax.select_n, jlax.select_n, [True, 1.0, 2.0])
    check(
        ("select_n", "mixed"),
        lax.select_n,
        jlax.select_n,
        [np.array([True, False]), np.ones(2, np.float32), np.zeros(2, np.float32)],
    )
    assert_same(
        lax.select(np.array([True, False]), np.ones(2), np.zeros(2)),
        jlax.select(np.array([True, False]), np.ones(2), np.zeros(2)),
    )


@given(seed=st.integers(0, 2**32 - 1), shape=_SHAPE)
def test_clamp(seed, shape):
    rng = np.random.default_rng(seed)
    op = OPS_BY_NAME["add"]
    cases = []
    for i, dtype in enumerate(FLOAT + INT + BOOL):  # 0-d bounds in turn
        lo = draw_values(rng, () if i % 2 else (_N,), dtype, op, False)
        hi = draw_values(rng, () if i % 3 else (_N,), dtype, op, False)
        cases.append((lo, draw_values(rng, (_N,), dtype, op, True), hi))
    check_cases("clamp", lax.clamp, jlax.clamp, cases, shape)


def test_clamp_weak_type():
    x = np.arange(4, dtype=np.float32)
    check(("clamp", "weak"), lax.clamp, jlax.clamp, [0.5, x, 2.5])
    check(("clamp", "weak"), lax.clamp, jlax.clamp, [np.float32(0.5), 1.5, 2.5])
    check(("clamp", "weak"), lax.clamp, jlax.clamp, [0.5, 1.5, 2.5])


# --------------------------------------------------------------------------- conversions

_CONVERT_VALUES = {
    "b": [True, False],
    "i": [0, 1, -1, 7, -128, 127, 255, 256, -32768, 65535, 2**31 - 1, -(2**31)],
    "u": [0, 1, 7, 127, 128, 255, 256, 65535, 65536, 2**32 - 1, 2**24 + 1],
    "f": [
        0.0,
        -0.0,
        0.4,
        0.5,
        1.5,
        -1.5,
        -0.7,
        2.5,
        255.9,
        -129.0,
        300.0,
        65504.0,
        70000.0,
        2.0**31,
        -(2.0**31),
        4.3e9,
        1e-8,
        3e38,
        -3e38,
        np.inf,
        -np.inf,
        np.nan,
    ],
}


def _convert_source(dtype):
    kind = _kind(dtype)
    if kind == "c":
        f = _CONVERT_VALUES["f"]
        vals = [complex(a, b) for a, b in zip(f, f[::-1], strict=True)]
    else:
        vals = _CONVERT_VALUES[kind]
    if kind in "iu":
        info = np.iinfo(dtype)
        vals = [v for v in vals if info.min <= v <= info.max]
    with np.errstate(over="ignore"):
        return np.array(vals).astype(dtype)


def _kind(d):
    return "f" if d == ml_dtypes.bfloat16 else np.dtype(d).kind


# JAX warns when it drops imaginary parts; xform, like lax's primitive, just does it.
@pytest.mark.filterwarnings("ignore:Casting complex values to real")
@pytest.mark.parametrize("src", ALL_DTYPES, ids=lambda d: d.name)
def test_convert_element_type_all_pairs(src):
    x = _convert_source(src)

    def convert_all(convert):
        return lambda a: [convert(a, dst) for dst in ALL_DTYPES]

    check(
        ("convert", src.name),
        convert_all(lax.convert_element_type),
        convert_all(jlax.convert_element_type),
        [x],
    )


@pytest.mark.parametrize(
    "value", [2, 2.5, True, np.float32(2.5), np.int8(-3), np.ones(2, np.float32)], ids=repr
)
def test_convert_element_type_scalars_and_weak_types(value):
    for dst in (np.float32, np.int32, np.bool_, np.float16, np.complex64):
        check(
            ("convert_scalar", np.dtype(dst).name),
            lambda a, d=dst: lax.convert_element_type(a, d),
            lambda a, d=dst: jlax.convert_element_type(a, d),
            [value],
        )


_BITCAST_SOURCES = [
    np.float32,
    np.int32,
    np.uint32,
    np.float16,
    ml_dtypes.bfloat16,
    np.int16,
    np.uint8,
    np.int8,
]


@pytest.mark.parametrize("src", [np.dtype(d) for d in _BITCAST_SOURCES], ids=lambda d: d.name)
def test_bitcast_convert_type(src):
    rng = np.random.default_rng(7)
    for dst in [np.dtype(d) for d in _BITCAST_SOURCES]:
        shape = (3, 2) if src.itemsize >= dst.itemsize else (3, dst.itemsize // src.itemsize)
        bits = rng.integers(0, 256, size=int(np.prod(shape)) * src.itemsize, dtype=np.uint8)
        x = bits.view(src).reshape(shape)
        if src.kind == "f" or src == ml_dtypes.bfloat16:
            x = np.where(np.isnan(x.astype(np.float32)), 0, x).astype(src)  # NaN bits differ
        check(
            ("bitcast", src.name, dst.name),
            lambda a, d=dst: lax.bitcast_convert_type(a, d),
            lambda a, d=dst: jlax.bitcast_convert_type(a, d),
            [x],
        )


# --------------------------------------------------------------------------- text


def test_make_jaxpr_and_lowering_text():
    x = np.ones((3,), np.float32)
    text = str(xform.make_jaxpr(lambda a: lax.add(lax.sin(a), 2.0))(x))
    assert re.search(r"b:f32\[3\] = sin a;\s+c:f32\[3\] = add b 2\.0:f32\[\]", text), text
    lowered = (
        xform.jit(lambda a, b: lax.select_n(lax.lt(a, b), a, lax.integer_pow(b, 3)))
        .lower(x, x)
        .as_text()
    )
    assert re.search(r"stablehlo.compare\s+LT", lowered), lowered
    for op in ("stablehlo.select", "stablehlo.multiply"):
        assert op in lowered, lowered
    lowered = xform.jit(lambda a: lax.convert_element_type(a, np.int8)).lower(x).as_text()
    assert "stablehlo.convert" in lowered


# --------------------------------------------------------------------------- errors


def test_dtype_errors():
    f32, i32 = np.ones(3, np.float32), np.ones(3, np.int32)
    with pytest.raises(
        TypeError,
        match=r"lax.add requires arguments to have the same dtypes, "
        r"got float32, int32",
    ):
        lax.add(f32, i32)
    with pytest.raises(TypeError, match="lax.eq requires arguments to have the same dtypes"):
        xform.jit(lax.eq)(f32, i32)
    with pytest.raises(
        TypeError,
        match="sin does not accept dtype int32. Accepted dtypes are "
        "subtypes of floating, complexfloating",
    ):
        lax.sin(i32)
    with pytest.raises(TypeError, match="and does not accept dtype float32"):
        lax.bitwise_and(f32, f32)
    with pytest.raises(TypeError, match="shift_left does not accept dtype bool"):
        lax.shift_left(np.ones(3, bool), np.ones(3, bool))
    with pytest.raises(TypeError, match="lt does not accept dtype complex64"):
        lax.lt(np.ones(3, np.complex64), np.ones(3, np.complex64))
    with pytest.raises(TypeError, match="floor does not accept dtype int32"):
        lax.floor(i32)
    with pytest.raises(TypeError, match="neg does not accept dtype bool"):
        lax.neg(np.ones(3, bool))
    with pytest.raises(TypeError, match="real does not accept dtype float32"):
        lax.real(f32)
    with pytest.raises(
        TypeError,
        match=r"add got incompatible shapes for broadcasting: "
        r"\(3,\), \(4,\)",
    ):
        lax.add(f32, np.ones(4, np.float32))
    with pytest.raises(TypeError, match="pow does not accept dtype int32"):
        lax.pow(i32, i32)
    with pytest.raises(TypeError, match="pow: the exponent must have the base's dtype"):
        lax.pow(f32, np.ones(3, np.float16))


def test_special_op_errors():
    f32 = np.ones(3, np.float32)
    with pytest.raises(
        TypeError, match="integer_pow: integers cannot be raised to the negative power -2"
    ):
        lax.integer_pow(np.ones(3, np.int32), -2)
    with pytest.raises(TypeError, match="integer_pow does not accept dtype bool"):
        lax.integer_pow(np.ones(3, bool), 2)
    with pytest.raises(TypeError, match="select_n: `which` must be boolean or integer"):
        lax.select_n(f32, f32, f32)
    with pytest.raises(
        TypeError, match="select_n: a boolean `which` selects between at most 2 cases, got 3"
    ):
        lax.select_n(True, f32, f32, f32)
    with pytest.raises(TypeError, match="select_n: cases must have the same shape and dtype"):
        lax.select_n(True, f32, np.ones(3, np.int32))
    with pytest.raises(
        TypeError,
        match=r"select_n: `which` must be scalar or have the cases' "
        r"shape \(3,\), got \(2,\)",
    ):
        lax.select_n(np.ones(2, bool), f32, f32)
    with pytest.raises(ValueError, match="select_n needs at least one case"):
        lax.select_n(True)
    with pytest.raises(
        TypeError, match="clamp: min must have the operand's dtype float32, got int32"
    ):
        lax.clamp(np.int32(0), f32, np.float32(1))
    with pytest.raises(
        TypeError,
        match=r"clamp: max must be scalar or have the operand's "
        r"shape \(3,\)",
    ):
        lax.clamp(np.float32(0), f32, np.ones(2, np.float32))
    with pytest.raises(TypeError, match="bitcast_convert_type does not accept bool"):
        lax.bitcast_convert_type(f32, np.bool_)
    with pytest.raises(
        ValueError,
        match=r"bitcast_convert_type from int8 to int32: the last "
        r"dimension must be 4, got shape \(3,\)",
    ):
        lax.bitcast_convert_type(np.ones(3, np.int8), np.int32)
    with pytest.raises(TypeError, match="xform does not support the dtype"):
        lax.convert_element_type(f32, np.dtype("U3"))


def test_same_rank_size_one_dimensions_broadcast_as_in_lax():
    a = np.arange(3, dtype=np.float32).reshape(3, 1)
    b = np.arange(4, dtype=np.float32).reshape(1, 4)
    check_against_jax(lax.add, jax.lax.add, a, b)
    check_against_jax(lax.lt, jax.lax.lt, a, b)
    assert (
        "stablehlo.broadcast_in_dim %arg0, dims = [0, 1]"
        in xform.jit(lax.mul).lower(a, b).as_text()
    )
    with pytest.raises(
        TypeError,
        match=r"add got incompatible shapes for broadcasting: "
        r"\(3, 1\), \(2, 4\)",
    ):
        lax.add(a, np.ones((2, 4), np.float32))
    with pytest.raises(TypeError, match="incompatible shapes"):
        lax.add(a, np.ones(4, np.float32))  # ranks differ: only rank-0 operands broadcast
