"""Errors and accepted inputs as JAX 0.10.2's: each case runs the same code on xform and on
JAX. A user mistake raises what JAX raises (so ``except TypeError`` written for JAX catches
xform's), with xform's own message; an input JAX accepts gives JAX's value; the tracer errors
are JAX's classes; a 64-bit dtype request without x64 warns as JAX warns."""

import os
import pickle
import subprocess
import sys
import types
import warnings

import jax
import jax.errors
import jax.extend.core
import jax.numpy as jnp
import numpy as np
import pytest

import xform
import xform.extend.core
import xform.numpy as xnp
from tests.harness import assert_same
from xform import errors

XF = types.SimpleNamespace(
    np=xnp,
    lax=xform.lax,
    jit=xform.jit,
    vmap=xform.vmap,
    grad=xform.grad,
    value_and_grad=xform.value_and_grad,
    pmap=xform.pmap,
    nn=xform.nn,
    name="xform",
)
JX = types.SimpleNamespace(
    np=jnp,
    lax=jax.lax,
    jit=jax.jit,
    vmap=jax.vmap,
    grad=jax.grad,
    value_and_grad=jax.value_and_grad,
    pmap=jax.pmap,
    nn=jax.nn,
    name="jax",
)

_BUILTIN = (
    OverflowError,
    ZeroDivisionError,
    IndexError,
    KeyError,
    NotImplementedError,
    RuntimeError,
    TypeError,
    ValueError,
)


def _raised(fn, lib):
    try:
        fn(lib)
    except Exception as e:  # noqa: BLE001  (which exception is the point)
        return e
    raise AssertionError(f"{lib.name} raised nothing")


def _jax_kind(e):
    """The class a JAX user catches: JAX's own error class, else the builtin one."""
    if type(e).__module__ == "jax.errors":
        return type(e)
    return next(c for c in type(e).__mro__ if c in _BUILTIN)


def _ones(lib, shape, dtype=None):
    return lib.np.ones(shape, dtype or np.float32)


# (id, fn(lib), a regex xform's message matches)
ERRORS = [
    # shapes of contractions and joins: TypeError, as JAX's dot_general and concatenate
    (
        "matmul",
        lambda L: L.np.matmul(_ones(L, (2, 3)), _ones(L, (2, 3))),
        r"matmul: contracting dimensions differ.*\(2, 3\)",
    ),
    ("matmul_op", lambda L: _ones(L, (2, 3)) @ _ones(L, (2, 3)), "contracting"),
    ("dot", lambda L: L.np.dot(_ones(L, (2, 3)), _ones(L, (2, 3))), "contracting"),
    ("tensordot_n", lambda L: L.np.tensordot(_ones(L, 3), _ones(L, 2), 3), "tensordot"),
    (
        "tensordot_pairs",
        lambda L: L.np.tensordot(_ones(L, 3), _ones(L, 3), ((0,), (0, 1))),
        "equal length",
    ),
    (
        "concatenate_shapes",
        lambda L: L.np.concatenate([_ones(L, (2, 3)), _ones(L, (2, 4))]),
        r"except axis 0 must match exactly, got shapes \(2, 3\), \(2, 4\)",
    ),
    (
        "concatenate_ranks",
        lambda L: L.np.concatenate([_ones(L, (2, 3)), _ones(L, 2)]),
        "different numbers of dimensions",
    ),
    ("hstack", lambda L: L.np.hstack([_ones(L, (2, 3)), _ones(L, (3, 3))]), "must match"),
    # shapes: TypeError, as JAX's shape checks
    ("reshape_two_unknown", lambda L: _ones(L, 6).reshape(-1, -1), "one unknown axis size"),
    ("reshape_negative", lambda L: L.np.reshape(_ones(L, 6), (2, -3)), r"\(2, -3\)"),
    ("transpose", lambda L: L.np.transpose(_ones(L, (2, 3)), (0, 0)), "not a permutation"),
    ("transpose_method", lambda L: _ones(L, (2, 3)).transpose(1, 1), "not a permutation"),
    ("moveaxis", lambda L: L.np.moveaxis(_ones(L, (2, 3)), (0, 0), (0, 1)), "repeated axis"),
    ("diagonal_axes", lambda L: L.np.diagonal(_ones(L, (3, 3)), 0, 0, 0), "different"),
    ("zeros", lambda L: L.np.zeros((-1,)), "negative dimensions"),
    ("zeros_int", lambda L: L.np.zeros(-1), "negative dimensions"),
    ("full", lambda L: L.np.full((2, -1), 1.0), "negative dimensions"),
    ("broadcast_to", lambda L: L.np.broadcast_to(_ones(L, 3), (-1, 3)), "negative"),
    (
        "lax_broadcast_in_dim",
        lambda L: L.lax.broadcast_in_dim(_ones(L, 3), (-1, 3), (1,)),
        "negative dimension",
    ),
    ("lax_reshape", lambda L: L.lax.reshape(_ones(L, 6), (-1, 6)), "negative dimension"),
    ("lax_iota", lambda L: L.lax.iota(np.int32, -1), "negative dimension"),
    ("one_hot", lambda L: L.nn.one_hot(L.np.arange(3), -1), "non-negative"),
    ("repeat_negative", lambda L: L.np.repeat(_ones(L, 3), -1), "negative dimension"),
    ("tile_float", lambda L: L.np.tile(_ones(L, 3), (2.0,)), ""),
    # values JAX refuses with ValueError
    ("array_none", lambda L: L.np.array([1, None]), "None is not a valid value"),
    ("asarray_none", lambda L: L.np.asarray(None), "None is not a valid value"),
    ("split_empty", lambda L: L.np.split(_ones(L, 0), [1]), r"sizes \[1, -1\]"),
    ("array_split_empty", lambda L: L.np.array_split(_ones(L, 0), [1]), "nonnegative"),
    ("split_decreasing", lambda L: L.np.split(_ones(L, 3), [2, 1]), "increasing"),
    ("split_negative", lambda L: L.np.split(_ones(L, 3), [-1]), "nonnegative"),
    ("pmap_size_0", lambda L: L.pmap(lambda x: x)(_ones(L, (0, 3))), "size 0"),
    (
        "dynamic_slice_count",
        lambda L: L.lax.dynamic_slice(_ones(L, 5), (0, 0), (1,)),
        "got 2 start indices",
    ),
    (
        "dynamic_slice_rank",
        lambda L: L.lax.dynamic_slice(_ones(L, 5), np.zeros((1, 1), np.int32), (1,)),
        r"1-D array.*\(1, 1\)",
    ),
    (
        "index_arrays",
        lambda L: _ones(L, (2, 3))[np.array([0, 1]), np.array([0, 1, 2])],
        r"Incompatible shapes for broadcasting.*\(2,\) \(3,\)",
    ),
    ("clip_no_input", lambda L: L.np.clip(), "No input"),
    ("clip_complex", lambda L: L.np.clip(_ones(L, 3, np.complex64), 0, 1), "complex"),
    ("eye_negative", lambda L: L.np.eye(2, -1), "negative dimensions"),
    ("eye_float_k", lambda L: L.np.eye(3, k=1.5), "k must be a scalar integer"),
    ("trace_axes", lambda L: L.np.trace(_ones(L, (2, 3)), axis1=0, axis2=0), "same"),
    (
        "sum_where_float",
        lambda L: L.np.sum(_ones(L, 3), where=_ones(L, 3)),
        "where must be None or a boolean array",
    ),
    (
        "mean_where_int",
        lambda L: L.np.mean(_ones(L, 3), where=L.np.ones(3, np.int32)),
        "boolean array",
    ),
    ("reshape_order", lambda L: _ones(L, 3).reshape(3, order="X"), "order"),
    ("nonzero_0d", lambda L: L.np.nonzero(L.np.array(1)), "0d arrays"),
    ("contains_2d", lambda L: 3.0 in _ones(L, (2, 3)), "one-dimensional"),
    ("contains_vector", lambda L: _ones(L, 2) in _ones(L, 3), "scalar"),
    ("bool_empty", lambda L: bool(_ones(L, 0)), "empty array"),
    (
        "all_to_all_vmap",
        lambda L: L.vmap(lambda x: L.lax.all_to_all(x, "i", 0, 0), axis_name="i")(_ones(L, (2, 3))),
        "axis size 2",
    ),
    # other TypeErrors (and JAX's RuntimeError for a padding name)
    (
        "tridiagonal_shapes",
        lambda L: L.lax.linalg.tridiagonal_solve(
            _ones(L, 3), _ones(L, 3), _ones(L, 2), _ones(L, (3, 1))
        ),
        "equal shapes",
    ),
    (
        "tridiagonal_rows",
        lambda L: L.lax.linalg.tridiagonal_solve(
            _ones(L, 3), _ones(L, 3), _ones(L, 3), _ones(L, (4, 1))
        ),
        "b's rows",
    ),
    (
        "conv_padding",
        lambda L: L.lax.conv(_ones(L, (1, 1, 3)), _ones(L, (1, 1, 2)), (1,), "FOO"),
        "Unrecognized padding type",
    ),
    ("int_power_negative", lambda L: L.np.power(L.np.arange(5), -1), "negative power"),
    ("where_x_only", lambda L: L.np.where(L.np.array([True]), 1.0), "pass both x and y"),
    ("clip_a_min", lambda L: L.np.clip(_ones(L, 3), a_min=0), "a_min"),
    ("round_float_decimals", lambda L: L.np.round(_ones(L, 3), 1.5), ""),
    ("linspace_float_num", lambda L: L.np.linspace(0, 1, 2.5), ""),
    ("diagonal_float_offset", lambda L: L.np.diagonal(_ones(L, (2, 3)), 1.5), ""),
    (
        "dot_narrow_preferred",
        lambda L: L.np.dot(
            L.np.ones(3, np.int32), L.np.ones(3, np.int32), preferred_element_type=np.int8
        ),
        "narrower",
    ),
    ("repeat_list", lambda L: L.np.repeat(_ones(L, 3), [1, 2, 3]), "repeat requires"),
    ("setitem", lambda L: _ones(L, 3).__setitem__(0, 1.0), r"immutable.*\.at\[idx\]\.set"),
    ("int_of_1d", lambda L: int(_ones(L, 1)), "scalar arrays"),
    ("float_of_1d", lambda L: float(_ones(L, (1, 1))), "scalar arrays"),
    ("index_of_1d", lambda L: [0, 1][L.np.ones(1, np.int32)], "integer scalar arrays"),
    ("index_of_bool", lambda L: [0, 1][L.np.array(True)], "integer scalar arrays"),
    ("fori_loop_mixed", lambda L: L.lax.fori_loop(0, 3.0, lambda i, c: c, 0.0), "equal types"),
    ("top_k_float", lambda L: L.lax.top_k(_ones(L, 3), 1.5), "top_k"),
    (
        "scan_not_pair",
        lambda L: L.lax.scan(lambda c, x: c, 0.0, _ones(L, 3)),
        r"must be a pair \(carry, y\), got f32\[\]",
    ),
    # tracer errors: JAX's classes
    ("jit_bool", lambda L: L.jit(lambda x: 1 if x > 0 else 0)(1.0), "bool"),
    ("jit_int", lambda L: L.jit(int)(1.0), "The problem arose with the `int` function"),
    ("jit_float", lambda L: L.jit(float)(1.0), "The problem arose with the `float` function"),
    ("jit_item", lambda L: L.jit(lambda x: x.item())(1.0), "item"),
    ("jit_index", lambda L: L.jit(lambda i: [1, 2][i])(1), "__index__"),
    ("jit_range", lambda L: L.jit(range)(2), "__index__"),
    ("jit_asarray", lambda L: L.jit(np.asarray)(1.0), r"numpy.ndarray conversion method __array__"),
    ("jit_numpy_function", lambda L: L.jit(np.sin)(1.0), r"__array__\(\) was called"),
    ("jit_bool_mask", lambda L: L.jit(lambda x: x[x > 0])(_ones(L, 3)), "concrete"),
    ("jit_nonzero", lambda L: L.jit(L.np.nonzero)(_ones(L, 3)), "size"),
    (
        "jit_repeat",
        lambda L: L.jit(lambda r: L.np.repeat(_ones(L, 3), r))(L.np.arange(3)),
        "total_repeat_length",
    ),
    ("jit_arange", lambda L: L.jit(L.np.arange)(3), "arange"),
]


@pytest.mark.parametrize("fn,match", [c[1:] for c in ERRORS], ids=[c[0] for c in ERRORS])
def test_errors_have_jax_types(fn, match):
    expected = _raised(fn, JX)
    got = _raised(fn, XF)
    kind = _jax_kind(expected)
    assert isinstance(got, kind), f"xform raised {type(got).__name__}: {got}; JAX {kind}"
    assert type(got).__module__ != "jax.errors", "xform's own message, not JAX's class"
    if match:
        with pytest.raises(type(got), match=match):
            raise got


@pytest.mark.parametrize("method", ["item", "tolist", "int", "bool", "index"])
def test_tracer_conversion_messages_are_jax_word_for_word(method):
    """The message names the method, the traced function at its file:line and the argument
    the value depends on, as JAX's (the same function object traced by both)."""
    fn = {
        "item": lambda n: n.item(),
        "tolist": lambda n: n.tolist(),
        "int": lambda n: int(n),  # noqa: PLW0108 (a traced function with a file:line)
        "bool": lambda n: bool(n),  # noqa: PLW0108
        "index": lambda n: [1, 2, 3][n],
    }[method]
    expected, got = _raised(lambda L: L.jit(fn)(1), JX), _raised(lambda L: L.jit(fn)(1), XF)
    assert str(got) == str(expected)


def test_escaped_tracer_is_jax_unexpected_tracer_error():
    for lib in (XF, JX):
        leaked = []
        lib.jit(lambda x, leaked=leaked: leaked.append(x) or x)(1.0)
        with pytest.raises(jax.errors.UnexpectedTracerError):
            lib.jit(lambda y, leaked=leaked: y + leaked[0])(1.0)


@pytest.mark.parametrize(
    "name",
    [
        "ConcretizationTypeError",
        "TracerBoolConversionError",
        "TracerIntegerConversionError",
        "TracerArrayConversionError",
        "NonConcreteBooleanIndexError",
        "UnexpectedTracerError",
        "JaxprTypeError",
    ],
)
def test_error_classes_subclass_jax_errors_and_take_a_message(name):
    cls = getattr(errors, name)
    assert issubclass(cls, getattr(jax.errors, name)) and issubclass(cls, errors.XformError)
    e = pickle.loads(pickle.dumps(cls("what went wrong, and the fix")))
    assert type(e) is cls and str(e) == "what went wrong, and the fix"  # no JAX doc link


def test_integer_conversion_error_is_also_a_concretization_error():
    # Not so in JAX; xform's own code catches the two as one, and JAX users lose nothing.
    with pytest.raises(jax.errors.ConcretizationTypeError):
        xform.jit(xnp.zeros)(3)


# --------------------------------------------------------------------------- accepted inputs

C = np.array([1 + 2j, 2 + 0j, 3 - 1j], np.complex64)
M = np.array([[1, 0, 3], [0, 0, 2]], np.int32)

# (id, fn(lib)): the value must equal JAX's
VALUES = [
    ("fori_float_bounds", lambda L: L.lax.fori_loop(0.0, 3.0, lambda i, c: c + i, 0.0)),
    ("fori_float_fraction", lambda L: L.lax.fori_loop(0.5, 3.7, lambda i, c: c + i, 0.0)),
    (
        "fori_float32_bounds",
        lambda L: L.lax.fori_loop(np.float32(0), np.float32(3), lambda i, c: c + i, 0.0),
    ),
    (
        "fori_traced_float",
        lambda L: L.jit(lambda a, b: L.lax.fori_loop(a, b, lambda i, c: c + i, 0.0))(0.5, 3.0),
    ),
    (
        "fori_traced_int16",
        lambda L: L.jit(lambda n: L.lax.fori_loop(np.int16(0), n, lambda i, c: c + 1, 0))(3),
    ),
    ("grad_real_part", lambda L: L.grad(lambda z: z.real)(np.complex64(1 + 1j))),
    ("grad_abs", lambda L: L.grad(L.np.abs)(np.complex64(1 + 1j))),
    ("grad_abs2", lambda L: L.grad(lambda z: L.np.sum(L.np.abs(z) ** 2))(C)),
    (
        "value_and_grad_complex",
        lambda L: L.value_and_grad(lambda z: (L.np.sin(z) * z).real)(np.complex64(0.5 + 2j)),
    ),
    (
        "grad_mixed_args",
        lambda L: L.grad(lambda z, x: (z * x).real, argnums=(0, 1))(
            np.complex64(1 + 2j), np.float32(3)
        ),
    ),
    ("jit_grad_abs", lambda L: L.jit(L.grad(L.np.abs))(np.complex64(1 + 1j))),
    (
        "complex_compare",
        lambda L: [
            f(C, np.complex64(2 + 1j))
            for f in (L.np.greater, L.np.greater_equal, L.np.less, L.np.less_equal)
        ],
    ),
    ("complex_operators", lambda L: (L.np.asarray(C) > 2, L.np.asarray(C) <= C[::-1])),
    (
        "complex_nan_compare",
        lambda L: L.np.less_equal(
            np.array([1 + 2j, np.nan + 1j], np.complex64), np.array([1 + 2j, 0], np.complex64)
        ),
    ),
    ("log2_complex", lambda L: L.np.log2(C)),
    ("log10_complex", lambda L: L.np.log10(C)),
    ("where_one_arg", lambda L: L.np.where(M)),
    ("nonzero", lambda L: L.np.nonzero(M)),
    ("nonzero_size", lambda L: L.np.nonzero(M, size=4, fill_value=-1)),
    ("nonzero_size_fills", lambda L: L.np.nonzero(M, size=4, fill_value=(-1, -2))),
    ("nonzero_size_cut", lambda L: L.np.where(M, size=1)),
    ("nonzero_jit", lambda L: L.jit(lambda m: L.np.nonzero(m, size=2))(M)),
    ("nonzero_vmap", lambda L: L.vmap(lambda m: L.np.nonzero(m, size=2)[0])(M)),
    ("nonzero_empty", lambda L: L.np.nonzero(L.np.zeros((2, 0)), size=2)),
    ("nonzero_method", lambda L: L.np.asarray(M).nonzero()),
    ("flatnonzero", lambda L: L.np.flatnonzero(M)),
    ("argwhere", lambda L: L.np.argwhere(M)),
    ("argwhere_0d", lambda L: L.np.argwhere(L.np.array(1))),
    ("repeat_array", lambda L: L.np.repeat(L.np.arange(3), L.np.array([1, 2, 3]))),
    ("repeat_axis", lambda L: L.np.repeat(M, L.np.array([2, 0, 1]), axis=1)),
    (
        "repeat_total",
        lambda L: L.np.repeat(L.np.arange(3), L.np.array([1, 2, 3]), total_repeat_length=4),
    ),
    (
        "repeat_total_pad",
        lambda L: L.np.repeat(L.np.arange(3), L.np.array([1, 2, 3]), total_repeat_length=8),
    ),
    (
        "repeat_total_0",
        lambda L: L.np.repeat(L.np.arange(3), L.np.array([1, 2, 3]), total_repeat_length=0),
    ),
    ("repeat_scalar_total", lambda L: L.np.repeat(L.np.arange(3), 2, total_repeat_length=4)),
    ("repeat_zero_counts", lambda L: L.np.repeat(L.np.arange(3), L.np.array([0, 0, 0]))),
    ("repeat_negative_counts", lambda L: L.np.repeat(L.np.arange(3), L.np.array([1, -2, 3]))),
    (
        "repeat_jit",
        lambda L: L.jit(lambda r: L.np.repeat(L.np.arange(3), r, total_repeat_length=6))(
            np.array([1, 2, 3], np.int32)
        ),
    ),
    (
        "repeat_grad",
        lambda L: L.grad(lambda x: L.np.repeat(x, L.np.array([1, 2, 3])).sum())(
            np.ones(3, np.float32)
        ),
    ),
    ("split_empty_at_0", lambda L: L.np.split(L.np.ones(0), [0])),
    ("split_at_end", lambda L: L.np.split(L.np.ones(3), [3])),
    ("at_power_int", lambda L: L.np.arange(4).at[1:].power(L.np.array([2, -1, 0]))),
    ("bitcast_0d", lambda L: L.lax.bitcast_convert_type(np.float32(1.0), np.int32)),
    (
        "stack_signbit_0d",
        lambda L: L.np.stack([L.np.signbit(np.float32(-1.0)), L.np.signbit(np.float32(1.0))]),
    ),
    (
        "stack_copysign_0d",
        lambda L: L.np.stack([L.np.copysign(np.float32(1.0), -1.0), np.float32(2.0)]),
    ),
    ("contains", lambda L: (3.0 in L.np.ones(3), 1.0 in L.np.ones(3))),
    ("int8_plus_300", lambda L: L.np.ones(3, np.int8) + 300),
    ("uint8_minus_1", lambda L: L.np.ones(3, np.uint8) + (-1)),
    ("int8_compare_1000", lambda L: L.np.ones(3, np.int8) == 1000),
    ("int8_where_128", lambda L: L.np.where(L.np.ones(3) > 0, L.np.ones(3, np.int8), 2**7)),
    ("int8_clip", lambda L: L.np.clip(L.np.ones(3, np.int8), 0, 1000)),
    ("full_wraps", lambda L: L.np.full(3, 2**40, np.int32)),
    ("full_like_wraps", lambda L: L.np.full_like(L.np.ones(3, np.int8), 300)),
    ("lax_full_wraps", lambda L: L.lax.full((3,), 2**40, np.int8)),
    ("lax_convert_wraps", lambda L: L.lax.convert_element_type(300, np.int8)),
    ("top_k_array_k", lambda L: L.lax.top_k(L.np.arange(4.0), L.np.int32(2))),
    ("lax_convert_big", lambda L: L.lax.convert_element_type(2**100, np.float32)),
    ("at_add_wraps", lambda L: L.np.zeros(3, np.int8).at[0].add(300)),
]


@pytest.mark.parametrize("fn", [c[1] for c in VALUES], ids=[c[0] for c in VALUES])
def test_inputs_jax_accepts(fn):
    assert_same(fn(XF), fn(JX), check_weak_type=False)


# Under x64 JAX wraps Python ints that fit int64 into narrower types; without it, those that
# do not fit int32 overflow, in both.
X64_VALUES = [
    ("int32_plus_2_40", lambda L: L.np.ones(3, np.int32) + 2**40),
    ("int32_scalar_plus_2_31", lambda L: L.np.int32(1) + 2**31),
    ("uint32_plus_big", lambda L: L.np.ones(3, np.uint32) + (2**32 - 1)),
    ("int8_where_2_40", lambda L: L.np.where(True, L.np.ones(2, np.int8), 2**40)),
    ("at_set_2_40", lambda L: L.np.ones(3, np.int32).at[0].set(2**40)),
    ("float16_plus_2_40", lambda L: L.np.ones(2, np.float16) + 2**40),
]


@pytest.mark.parametrize("fn", [c[1] for c in X64_VALUES], ids=[c[0] for c in X64_VALUES])
def test_python_ints_wrap_under_x64_and_overflow_without(fn, x64):
    with jax.enable_x64(True), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's float16 overflow, in JAX
        assert_same(fn(XF), fn(JX), check_weak_type=False)
    with xform.enable_x64(False):
        with pytest.raises(OverflowError):
            fn(JX)
        with pytest.raises(OverflowError, match="too large to convert to int32"):
            fn(XF)


def test_python_ints_too_large_for_int64_overflow_under_x64(x64):
    with jax.enable_x64(True):
        for lib in (XF, JX):
            with pytest.raises(OverflowError):
                lib.np.ones(3, np.uint64) + 2**63
            with pytest.raises(OverflowError):  # a requested dtype must hold the value
                lib.np.asarray(300, dtype=np.int8)


def test_scan_errors_do_not_name_internal_classes():
    with pytest.raises(TypeError) as info:
        xform.lax.scan(lambda c, x: (c, x, x), 0.0, np.ones(3, np.float32))
    assert "Tracer" not in str(info.value) and "length 3" in str(info.value)


def test_empty_array_repr_shows_its_shape():
    assert repr(xnp.ones(0)) == repr(jnp.ones(0)) == "Array([], shape=(0,), dtype=float32)"


# --------------------------------------------------------------------------- x64 requests

DTYPE_REQUESTS = [
    ("zeros", lambda L: L.np.zeros(3, np.float64)),
    ("zeros_str", lambda L: L.np.zeros(3, "float64")),
    ("ones_int64", lambda L: L.np.ones(3, np.int64)),
    ("array", lambda L: L.np.array(1.0, np.float64)),
    ("asarray", lambda L: L.np.asarray([1.0], dtype=np.float64)),
    ("astype", lambda L: L.np.ones(3).astype(np.float64)),
    ("convert_element_type", lambda L: L.lax.convert_element_type(L.np.ones(3), np.float64)),
    ("arange", lambda L: L.np.arange(3, dtype=np.float64)),
    ("full", lambda L: L.np.full(3, 1.0, np.complex128)),
    ("lax_full", lambda L: L.lax.full((3,), 1.0, np.float64)),
    ("iota", lambda L: L.lax.iota(np.int64, 3)),
    ("eye", lambda L: L.np.eye(2, dtype=np.float64)),
    ("linspace", lambda L: L.np.linspace(0, 1, 3, dtype=np.float64)),
    ("sum", lambda L: L.np.sum(L.np.ones(3), dtype=np.float64)),
    ("mean", lambda L: L.np.mean(L.np.ones(3), dtype=np.float64)),
    ("scalar_type", lambda L: L.np.float64(1.0)),
]


@pytest.mark.parametrize("fn", [c[1] for c in DTYPE_REQUESTS], ids=[c[0] for c in DTYPE_REQUESTS])
def test_a_64_bit_request_without_x64_warns_as_jax(fn):
    results = []
    for lib in (XF, JX):
        with pytest.warns(
            UserWarning,
            match=r"Explicitly requested dtype \w+ requested in "
            r"\w+ is not available, and will be truncated",
        ):
            results.append(fn(lib))
    assert_same(*results, check_weak_type=False)


def test_no_warning_for_python_types_numpy_data_or_under_x64(x64):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with xform.enable_x64(False):
            xnp.zeros(3, float), xnp.zeros(3, int), xnp.asarray(np.ones(3))
            xnp.result_type(np.float64), xnp.ones(3) + np.float64(1.0)
        xnp.zeros(3, np.float64), xform.lax.convert_element_type(xnp.ones(3), np.int64)


# --------------------------------------------------------------------------- process-wide


def _run_python(code, **env):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=root,
        env={**os.environ, **env},
        timeout=300,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.split()


def test_jax_enable_x64_in_the_environment_is_honoured_at_import():
    code = "import xform.numpy as xnp; print(xnp.ones(1).dtype, xnp.arange(2).dtype)"
    assert _run_python(code, JAX_ENABLE_X64="1") == ["float64", "int64"]
    assert _run_python(code, JAX_ENABLE_X64="false") == ["float32", "int32"]


def test_check_grads_works_without_hypothesis():
    code = """
import sys
class _NoHypothesis:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "hypothesis":
            raise ImportError("hypothesis is not installed")
sys.meta_path.insert(0, _NoHypothesis())
import xform.numpy as xnp
from xform.test_util import arrays, check_grads
check_grads(xnp.sin, (1.0,), order=2)
try:
    arrays()
except ImportError as e:
    print("strategies-need-hypothesis" if "hypothesis" in str(e) else e)
"""
    assert _run_python(code) == ["strategies-need-hypothesis"]


# --------------------------------------------------------------------------- recovery


def _raises_on_shard_2(x):
    if float(x) == 2.0:
        raise ValueError("callback failed on purpose")
    return x


_CALLBACKS = {
    "pure_callback": lambda x: xform.pure_callback(
        _raises_on_shard_2, xform.ShapeDtypeStruct((), np.float32), x
    ),
    "io_callback": lambda x: xform.experimental.io_callback(
        _raises_on_shard_2, xform.ShapeDtypeStruct((), np.float32), x
    ),
    "debug_callback": lambda x: (xform.debug.callback(_raises_on_shard_2, x), x + 1)[1],
}


@pytest.mark.parametrize("kind", list(_CALLBACKS))
def test_a_callback_raising_in_one_pmap_shard_leaves_later_pmaps_working(kind):
    # The failed program's results carry its error; a later replicated program waits on them
    # (one at a time on CPU) and must not take that error up as its own, as JAX does not.
    mapped = xform.pmap(_CALLBACKS[kind])
    with pytest.raises(Exception, match="callback failed on purpose"):
        np.asarray(mapped(np.arange(4.0, dtype=np.float32)))
    total = xform.pmap(lambda x: xform.lax.psum(x, "i"), axis_name="i")
    np.testing.assert_array_equal(np.asarray(total(np.arange(4.0, dtype=np.float32))), [6.0] * 4)
    again = np.asarray(mapped(np.zeros(4, np.float32)))
    np.testing.assert_array_equal(again, np.full(4, 1.0 if kind == "debug_callback" else 0.0))
    np.testing.assert_array_equal(np.asarray(total(np.ones(4, np.float32))), [4.0] * 4)


def test_an_impl_less_primitive_called_eagerly_raises_jax_not_implemented_error():
    # A user's primitive with only an abstract eval: fine under make_jaxpr, refused when run.
    for lib, primitive in ((XF, xform.extend.core.Primitive), (JX, jax.extend.core.Primitive)):
        shape_only_p = primitive(f"shape_only_{lib.name}")
        shape_only_p.def_abstract_eval(lambda x: x)
        for arg in (1.0, lib.np.ones(3)):
            with pytest.raises(NotImplementedError) as info:
                shape_only_p.bind(arg)
            assert type(info.value) is NotImplementedError
            assert str(info.value) == f"Evaluation rule for 'shape_only_{lib.name}' not implemented"


# --------------------------------------------------------------------------- custom_jvp rules


def _bad_jvp_rule(kind, lib):
    """A custom_jvp function whose rule returns something wrong of the given kind."""

    def two(x):
        return x * 2, x

    def bad_rule(primals, tangents):
        (x,), (t,) = primals, tangents
        if kind == "shape":
            return x * 2, lib.np.ones(3, np.float32)
        if kind == "dtype":
            return x * 2, t.astype(np.float16)
        if kind == "two_outputs":
            return (x * 2, x), (t, lib.np.ones(2, np.float32))
        if kind == "structure":
            return x * 2, (t, t)
        return None  # kind == "not_a_pair"

    fun = lib.custom_jvp(two if kind == "two_outputs" else lambda x: x * 2)
    fun.defjvp(bad_rule)
    return fun


@pytest.mark.parametrize("kind", ["shape", "dtype", "two_outputs", "structure", "not_a_pair"])
@pytest.mark.parametrize("how", ["jvp", "grad"])
def test_a_custom_jvp_rule_returning_a_wrong_tangent_raises_jax_type_error(kind, how):
    x = np.float32(1.5)
    errors_seen = []
    for lib, transform in ((XF, xform), (JX, jax)):
        fun = _bad_jvp_rule(kind, types.SimpleNamespace(np=lib.np, custom_jvp=transform.custom_jvp))
        with pytest.raises(TypeError) as info:
            if how == "jvp":
                transform.jvp(fun, (x,), (np.float32(1.0),))
            else:
                first = transform.tree_util.tree_leaves
                transform.grad(lambda y, fun=fun, first=first: first(fun(y))[0])(x)
        errors_seen.append(str(info.value))
    assert errors_seen[0] == errors_seen[1]


# --------------------------------------------------------------------------- cond and switch


def _same(x):
    return x


def _as_int(x):
    return x.astype(np.int32)


def _stacked(x):
    return (x, x)


def _two_differences(x):
    return (x.astype(np.int32), x.reshape(1))


def _dict_ab(x):
    return {"a": x, "b": x}


def _dict_ac(x):
    return {"a": x, "c": x}


def _dict_a(x):
    return {"a": x}


BRANCH_MISMATCHES = [
    ("dtype", lambda L: L.lax.cond(True, _same, _as_int, np.float32(1))),
    ("dtype_under_jit", lambda L: L.jit(lambda p, x: L.lax.cond(p, _same, _as_int, x))(True, 1.0)),
    ("shape", lambda L: L.lax.cond(True, lambda x: x[None], _same, np.ones(2, np.float32))),
    ("two_outputs", lambda L: L.lax.cond(True, _stacked, _two_differences, np.float32(1))),
    ("leaf_vs_tuple", lambda L: L.lax.cond(True, _stacked, _same, np.float32(1))),
    ("list_lengths", lambda L: L.lax.cond(True, lambda x: [x, x], lambda x: [x], 1.0)),
    ("dict_keys", lambda L: L.lax.cond(True, _dict_ab, _dict_ac, 1.0)),
    ("dict_sizes", lambda L: L.lax.cond(True, _dict_ab, _dict_a, 1.0)),
    ("switch_dtype", lambda L: L.lax.switch(1, [_same, _same, _as_int], np.float32(1))),
    ("switch_two", lambda L: L.lax.switch(0, [_same, _stacked], np.float32(1))),
    ("switch_builtin", lambda L: L.lax.switch(0, [_same, L.np.sin, _as_int], np.float32(1))),
]


@pytest.mark.parametrize(
    "fn", [c[1] for c in BRANCH_MISMATCHES], ids=[c[0] for c in BRANCH_MISMATCHES]
)
def test_branches_that_disagree_raise_jax_type_error_naming_both(fn):
    expected, got = _raised(fn, JX), _raised(fn, XF)
    assert type(expected) is TypeError and type(got) is TypeError
    assert str(got) == str(expected)
