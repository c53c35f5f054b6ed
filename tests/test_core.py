"""The IR, the printer, the typechecker, tracing errors, and the layering of the core."""

import ast
import pathlib

import numpy as np
import pytest

import xform
from xform import core, lax
from xform.core import ClosedJaxpr, Jaxpr, JaxprEqn, ShapedArray, Var
from xform.errors import (
    ConcretizationTypeError,
    JaxprTypeError,
    MissingRuleError,
    TracerArrayConversionError,
    TracerBoolConversionError,
    TracerIntegerConversionError,
    UnexpectedTracerError,
)

F32_3 = np.ones(3, np.float32)


def test_make_jaxpr_text():
    jaxpr = xform.make_jaxpr(lambda x: lax.mul(lax.sin(x), 2.0))(F32_3)
    # as JAX prints it: on one line when it fits in 80 columns
    assert str(jaxpr) == (
        "{ lambda ; a:f32[3]. let b:f32[3] = sin a; c:f32[3] = mul b 2.0:f32[] in (c,) }"
    )
    jaxpr = xform.make_jaxpr(lambda x: lax.add(lax.mul(lax.sin(x), 2.0), 1.0))(F32_3)
    assert str(jaxpr) == (
        "{ lambda ; a:f32[3]. let\n"
        "    b:f32[3] = sin a\n"
        "    c:f32[3] = mul b 2.0:f32[]\n"
        "    d:f32[3] = add c 1.0:f32[]\n"
        "  in (d,) }"
    )


def test_make_jaxpr_shows_params_consts_and_multiple_outputs():
    big = np.arange(4.0, dtype=np.float32)

    def f(x, y):
        return lax.convert_element_type(x, np.int32), lax.add(y, big)

    text = str(xform.make_jaxpr(f)(F32_3, big))
    assert text.startswith("{ lambda a:f32[4]; b:f32[3] c:f32[4]. let")
    assert "convert_element_type[new_dtype=int32 weak_type=False] b" in text
    assert "in (d, e) }" in text


def test_nested_jit_is_an_equation_with_an_indented_sub_jaxpr():
    inner = xform.jit(lax.sin)
    text = str(xform.make_jaxpr(lambda x: lax.cos(inner(x)))(F32_3))
    # name first; the body's binders named after the equation's atoms, as JAX prints them
    assert (
        "b:f32[3] = jit[\n      name=sin\n"
        "      jaxpr={ lambda ; a:f32[3]. let b:f32[3] = sin a in (b,) }\n    ] a\n"
    ) in text
    assert text.rstrip().endswith("in (c,) }")


def test_make_jaxpr_static_argnums_and_pytrees():
    def f(x, n, d):
        for _ in range(n):
            x = lax.sin(x)
        return {"out": lax.add(x, d["b"])}

    jaxpr = xform.make_jaxpr(f, static_argnums=(1,))(F32_3, 3, {"b": F32_3})
    assert [e.primitive.name for e in jaxpr.eqns] == ["sin", "sin", "sin", "add"]
    assert len(jaxpr.jaxpr.invars) == 2


def test_make_jaxpr_accepts_shape_dtype_structs():
    spec = xform.ShapeDtypeStruct((2, 5), np.float32)
    jaxpr = xform.make_jaxpr(lax.exp)(spec)
    assert jaxpr.in_avals == [ShapedArray((2, 5), np.dtype(np.float32))]


def test_typechecker_accepts_traced_jaxprs_and_quotes_bad_equations():
    closed = xform.make_jaxpr(lambda x: lax.mul(lax.sin(x), x))(F32_3)
    core.check_jaxpr(closed)
    a = Var(ShapedArray((3,), np.dtype(np.float32)))
    b = Var(ShapedArray((4,), np.dtype(np.float32)))
    bad = Jaxpr([], [a], [b], [JaxprEqn(lax.sin_p, [a], [b], {})])
    with pytest.raises(JaxprTypeError, match=r"b:f32\[4\] = sin a"):
        core.check_jaxpr(bad)
    undefined = Jaxpr([], [], [b], [JaxprEqn(lax.sin_p, [a], [b], {})])
    with pytest.raises(JaxprTypeError, match="used before it is defined"):
        core.check_jaxpr(ClosedJaxpr(undefined, []))


@pytest.mark.parametrize(
    "use, error",
    [
        (lambda x: 1.0 if lax.gt(x, 0.0) else 2.0, TracerBoolConversionError),
        (int, ConcretizationTypeError),
        (float, ConcretizationTypeError),
        (lambda x: x.item(), ConcretizationTypeError),
        (np.asarray, TracerArrayConversionError),
        (
            lambda x: lax.broadcast_in_dim(1.0, (lax.convert_element_type(x, np.int32),), ()),
            TracerIntegerConversionError,
        ),
    ],
)
def test_python_control_flow_on_traced_values_raises_concretization_errors(use, error):
    with pytest.raises(error, match="depends on the value of the argument") as info:
        xform.jit(use)(np.float32(1.0))
    assert "traced array with shape" in str(info.value) and "for jit" in str(info.value)
    assert f"See https://docs.jax.dev/en/latest/errors.html#jax.errors.{error.__name__}" in str(
        info.value
    )
    assert core.current_trace() is core.eval_trace  # the process stays usable


def test_leaked_tracer_is_reported_where_it_was_created():
    leaked = []

    @xform.jit
    def f(x):
        y = lax.sin(x)
        leaked.append(y)
        return y

    f(F32_3)
    with pytest.raises(UnexpectedTracerError, match=r"test_core.py:\d+ \(f\).*escaped"):
        lax.cos(leaked[0])
    with pytest.raises(UnexpectedTracerError, match="has already finished"):
        xform.jit(lambda x: lax.add(x, leaked[0]))(F32_3)


def test_missing_rules_name_the_primitive_and_the_transformation():
    orphan_p = core.Primitive("orphan")
    with pytest.raises(MissingRuleError, match="'orphan' has no abstract evaluation rule"):
        xform.make_jaxpr(orphan_p.bind)(F32_3)
    core.abstract_eval_rules[orphan_p] = lambda x: [x]
    try:
        with pytest.raises(MissingRuleError, match="'orphan' has no lowering rule"):
            xform.jit(orphan_p.bind)(F32_3)
    finally:
        del core.abstract_eval_rules[orphan_p]


def test_tracers_are_unhashable_and_sized():
    def f(x):
        with pytest.raises(TypeError, match="unhashable"):
            hash(x)
        assert len(x) == 3 and x.shape == (3,) and x.ndim == 1 and x.size == 3
        return x

    xform.make_jaxpr(f)(F32_3)


_CORE_FILES = [
    "xform/core.py",
    "xform/dtypes.py",
    "xform/config.py",
    "xform/errors.py",
    "xform/interpret",
    "xform/primitives",
]


def test_core_and_interpreters_do_not_import_the_backend():
    root = pathlib.Path(__file__).resolve().parent.parent
    files = []
    for name in _CORE_FILES:
        path = root / name
        files += sorted(path.glob("*.py")) if path.is_dir() else [path]
    assert len(files) > 8
    for path in files:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                modules = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                modules = [node.module or ""]
            else:
                continue
            for m in modules:
                top = m.split(".")[0]
                assert top not in ("lowering", "jaxlib", "jax"), f"{path.name} imports {m}"
