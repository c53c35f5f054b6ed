"""Pytrees (``xform.tree``, ``tree_util``, ``flatten_util``), ``typing``, ``dtypes``, ``errors``
and the everyday top-level names, each against JAX 0.10.2."""

import collections
import dataclasses
import re
import types

import jax
import jax.api_util
import jax.dtypes
import jax.errors
import jax.experimental
import jax.experimental.checkify
import jax.experimental.jet
import jax.experimental.ode
import jax.flatten_util
import jax.numpy as jnp
import jax.tree
import jax.tree_util
import jax.typing
import numpy as np
import pytest

import xform
import xform.numpy as xnp
from tests.harness import assert_same
from xform import api_util, experimental, flatten_util, tree, tree_util
from xform import dtypes as xdtypes
from xform import errors as xerrors
from xform import typing as xtyping

# --------------------------------------------------------------------------- names

# (JAX module, xform module, names xform does not have and why)
_MODULES = [
    (jax.tree, tree, {}),
    (jax.tree_util, tree_util, {}),
    (jax.typing, xtyping, {}),
    (jax.dtypes, xdtypes, {}),
    (jax.errors, xerrors, {}),
    (jax.flatten_util, flatten_util, {}),
    (jax.api_util, api_util, {}),
    (jax.experimental.checkify, experimental.checkify, {}),
    (
        jax.experimental,
        experimental,
        {
            "EArray": "extended-dtype arrays: xform has no extended dtypes beyond typed keys",
            "cur_qdd": "hijax's quasi-dynamic data: xform has no hijax types",
            "primal_tangent_dtype": "user-defined tangent dtypes: xform has no extended dtypes",
        },
    ),
]

# jax.experimental.jet and .ode import many helpers into their namespace: the names they
# define themselves are their public ones. Those xform does not have, and why.
_DEFINED = [
    (
        jax.experimental.jet,
        experimental.jet,
        {
            **dict.fromkeys(
                ("ZeroSeries", "ZeroTerm", "zero_series", "zero_term"),
                "JAX's symbolic zero series; xform's jet rules take plain zeros",
            ),
            **dict.fromkeys(
                ("deriv_prop", "linear_prop", "zero_prop", "fact"),
                "JAX's rule-building helpers; xform's registrars are def_deriv, "
                "deflinear, defzero and def_comp",
            ),
        },
    ),
    (
        jax.experimental.ode,
        experimental.ode,
        dict.fromkeys(
            (
                "abs2",
                "fit_4th_order_polynomial",
                "initial_step_size",
                "interp_fit_dopri",
                "mean_error_ratio",
                "optimal_step_size",
                "ravel_first_arg",
                "runge_kutta_step",
            ),
            "a step of JAX's Dormand-Prince solver, not API: xform's solver is its own",
        ),
    ),
]

_TOP_LEVEL = [
    "device_get",
    "block_until_ready",
    "typeof",
    "ShapeDtypeStruct",
    "named_scope",
    "named_call",
    "clear_caches",
    "live_arrays",
    "print_environment_info",
    "float0",
    "make_jaxpr",
    "host_count",
    "host_id",
    "host_ids",
    "process_indices",
    "version",
    "Device",
    "tree",
    "tree_util",
    "typing",
    "flatten_util",
    "dtypes",
    "errors",
]


@pytest.mark.parametrize("jax_mod, xf_mod, exempt", _MODULES, ids=[m[0].__name__ for m in _MODULES])
def test_module_has_every_jax_name(jax_mod, xf_mod, exempt):
    # (submodules are left out: they join dir() only once something imports them)
    names = {
        n
        for n in dir(jax_mod)
        if not n.startswith("_") and not isinstance(getattr(jax_mod, n), types.ModuleType)
    }
    missing = sorted(n for n in names - set(dir(xf_mod)) if n not in exempt)
    assert not missing, f"{xf_mod.__name__} lacks {missing}"


@pytest.mark.parametrize("jax_mod, xf_mod, exempt", _DEFINED, ids=[m[0].__name__ for m in _DEFINED])
def test_module_has_every_name_jax_defines_there(jax_mod, xf_mod, exempt):
    names = {
        n
        for n in dir(jax_mod)
        if not n.startswith("_")
        and getattr(getattr(jax_mod, n), "__module__", "").endswith(
            jax_mod.__name__.rsplit(".", 1)[1]
        )
    }
    assert "jet" in names or "odeint" in names  # (the filter keeps the module's own names)
    missing = sorted(n for n in names - set(dir(xf_mod)) if n not in exempt)
    assert not missing, f"{xf_mod.__name__} lacks {missing}"
    stale = sorted(n for n in exempt if hasattr(xf_mod, n))
    assert not stale, f"exempt but present: {stale}"


def test_top_level_names():
    missing = [n for n in _TOP_LEVEL if not hasattr(xform, n)]
    assert not missing
    assert hasattr(jax, "tree") and all(hasattr(jax, n) for n in _TOP_LEVEL)
    assert xform.float0 == jax.float0
    assert xform.version.__version__ == xform.__version__
    assert isinstance(xform.devices()[0], xform.Device)


# --------------------------------------------------------------------------- pytrees

Point = collections.namedtuple("Point", ["x", "y"])


@dataclasses.dataclass
class Op:
    a: object
    b: object
    kind: str = jax.tree.static(default="add")


jax.tree_util.register_dataclass(Op)


def _sample(m):
    return {
        "p": Point(1.0, m.ones(2)),
        "n": None,
        "l": [2, (3.0, {"z": m.arange(3)})],
        "op": Op(m.zeros(1), 4),
    }


def test_tree_map_and_friends_against_jax():
    xt, jt = _sample(xnp), _sample(jnp)
    got = tree.map(lambda v: v * 2, xt)
    want = jax.tree.map(lambda v: v * 2, jt)
    assert_same(got, want)
    assert got["op"].kind == "add" and isinstance(got["p"], Point) and got["n"] is None
    assert tree.structure(xt) == jax.tree.structure(jt)
    assert len(tree.leaves(xt)) == len(jax.tree.leaves(jt)) == 7
    leaves, treedef = tree.flatten(xt)
    assert_same(tree.unflatten(treedef, leaves), xt)
    assert tree.reduce(lambda a, b: a + b, [1, (2, 3)], 10) == 16
    assert tree.reduce_associative(lambda a, b: a + b, [1, (2, 3)]) == 6
    assert tree.all([True, {"a": 1}]) and not tree.all([True, 0])
    assert tree.broadcast((1, 2), (0, {"a": 0, "b": 0})) == (1, {"a": 2, "b": 2})
    outer, inner = tree.structure([0, 0]), tree.structure((0, 0))
    assert (
        tree.transpose(outer, inner, [(1, 2), (3, 4)])
        == jax.tree.transpose(outer, inner, [(1, 2), (3, 4)])
        == ([1, 3], [2, 4])
    )
    paths = [tree_util.keystr(p) for p, _ in tree.leaves_with_path(xt)]
    assert paths == [jax.tree_util.keystr(p) for p, _ in jax.tree.leaves_with_path(jt)]
    assert tree.map_with_path(lambda p, v: len(p), {"a": [1, 2]}) == {"a": [2, 2]}
    assert tree.flatten_with_path({"a": 1})[0][0][0] == (tree_util.DictKey("a"),)


def test_one_registry_serves_both():
    class Box:
        def __init__(self, v):
            self.v = v

    jax.tree_util.register_pytree_node(Box, lambda b: ((b.v,), None), lambda _, c: Box(*c))
    out = xform.jit(lambda b: tree.map(lambda v: v + 1, b))(Box(xnp.ones(2)))
    assert isinstance(out, Box)
    assert_same(out.v, jnp.ones(2) + 1)
    assert tree_util.treedef_is_leaf(tree.structure(1))
    part = tree_util.Partial(lambda a, b: a * b, xnp.ones(2))
    assert_same(xform.jit(lambda p, y: p(y))(part, 3.0), jnp.ones(2) * 3.0)


# --------------------------------------------------------------------------- ravel_pytree


def _mixed(m):
    return {"a": 1.0, "b": (2, m.ones(2, m.float16)), "c": m.arange(4.0).reshape(2, 2)}


def test_ravel_pytree_against_jax():
    for make in (
        _mixed,
        lambda m: [1.0, 2.0],
        lambda m: [],
        lambda m: (m.ones(2, m.complex64), m.ones(1)),
    ):
        flat, unravel = flatten_util.ravel_pytree(make(xnp))
        jflat, junravel = jax.flatten_util.ravel_pytree(make(jnp))
        assert_same(flat, jflat)
        assert_same(unravel(flat), junravel(jflat))
    _, again = flatten_util.ravel_pytree(_mixed(xnp))
    assert hash(again) == hash(unravel := flatten_util.ravel_pytree(_mixed(xnp))[1])
    assert again == unravel


def test_ravel_pytree_under_transformations():
    params = {"w": xnp.arange(6.0).reshape(2, 3), "b": xnp.ones(3)}
    flat, unravel = flatten_util.ravel_pytree(params)
    jflat, junravel = jax.flatten_util.ravel_pytree(
        {"w": jnp.arange(6.0).reshape(2, 3), "b": jnp.ones(3)}
    )

    def loss(unr, m):
        return lambda v: m.sum(m.sin(unr(v)["w"]) * unr(v)["b"])

    assert_same(xform.jit(unravel)(flat), junravel(jflat))
    assert_same(xform.grad(loss(unravel, xnp))(flat), jax.grad(loss(junravel, jnp))(jflat))
    batch = xnp.stack([flat, flat * 2])
    assert_same(xform.vmap(unravel)(batch), jax.vmap(junravel)(jnp.stack([jflat, jflat * 2])))
    # unravel as a static argument: hashable, equal for equal trees
    f = xform.jit(lambda unr, v: unr(v)["b"], static_argnums=0)
    assert_same(f(unravel, flat), jnp.ones(3))


def test_ravel_pytree_bad_input():
    _, unravel = flatten_util.ravel_pytree([xnp.ones(2), 1])
    with pytest.raises(
        TypeError, match="unravel function given array of dtype int32, but expected dtype float32"
    ):
        unravel(xnp.ones(3, xnp.int32))
    _, unravel = flatten_util.ravel_pytree([xnp.ones(2)])
    with pytest.raises(ValueError, match=r"shape \(3,\), but expected shape \(2,\)"):
        unravel(xnp.ones(3))


# --------------------------------------------------------------------------- typing


def test_typing_annotations():
    for v in (np.float32(1), np.ones(2), xnp.ones(2), 1, 2.0, True, 1j):
        assert isinstance(v, xtyping.ArrayLike) == isinstance(
            jnp.asarray(v) if isinstance(v, xform.Array) else v, jax.typing.ArrayLike
        )
    assert not isinstance([1.0], xtyping.ArrayLike) and not isinstance("a", xtyping.ArrayLike)
    assert xform.jit(lambda x: isinstance(x, xtyping.ArrayLike))(1.0)
    assert isinstance(xnp.float32, xtyping.SupportsDType) or isinstance("f4", str)


# --------------------------------------------------------------------------- dtypes

_RESULT_TYPE_CASES = [
    (1.0,),
    (1,),
    (True,),
    (np.int8(1), 2),
    ("float16", None),
    (np.int32, np.uint32),
    ("bfloat16", 1.0),
    (np.float16, int),
    (np.uint8, np.int8),
    (complex, np.float32),
]


def test_dtypes_against_jax():
    for args in _RESULT_TYPE_CASES:
        assert xdtypes.result_type(*args, return_weak_type_flag=True) == jax.dtypes.result_type(
            *args, return_weak_type_flag=True
        ), args
    assert xdtypes.result_type(xnp.int8(1), 2.0) == jax.dtypes.result_type(jnp.int8(1), 2.0)
    for dt in (np.float64, float, "int64", "bfloat16", np.uint16, complex):
        assert xdtypes.canonicalize_dtype(dt) == jax.dtypes.canonicalize_dtype(dt)
    for a, b in [
        ("bfloat16", np.floating),
        ("int4", np.signedinteger),
        ("uint2", np.integer),
        (np.float32, xdtypes.extended),
        ("int4", np.floating),
        (np.int8, np.number),
        ("float8_e4m3fn", np.inexact),
    ]:
        assert xdtypes.issubdtype(a, b) == jax.dtypes.issubdtype(a, b), (a, b)
    key = xform.random.key(0)
    assert xdtypes.issubdtype(key.dtype, xdtypes.prng_key)
    assert xdtypes.issubdtype(key.dtype, jax.dtypes.extended)
    assert xdtypes.issubdtype(key.dtype, jax.dtypes.prng_key)
    assert xdtypes.issubdtype(xdtypes.prng_key, xdtypes.extended)
    assert xnp.issubdtype(key.dtype, xdtypes.prng_key)  # the classes are JAX's
    assert xdtypes.issubdtype(key.dtype, key.dtype) and not xdtypes.issubdtype(np.uint32, key.dtype)
    assert not xdtypes.issubdtype(key.dtype, np.integer)
    assert xdtypes.canonicalize_dtype(key.dtype, allow_extended_dtype=True) == key.dtype
    for dt in ("int4", np.complex64, bool, "float8_e4m3fn", "bfloat16", np.int64):
        assert xdtypes.itemsize_bits(dt) == jax.dtypes.itemsize_bits(dt), dt
    for v in (1, 2.0, True, 1j, np.ones(2, np.int8), xnp.ones(2, xnp.bfloat16)):
        assert xdtypes.scalar_type_of(v) is jax.dtypes.scalar_type_of(
            jnp.asarray(v) if isinstance(v, xform.Array) else v
        )
    assert xdtypes.finfo(xdtypes.bfloat16).eps == jax.dtypes.finfo(jnp.bfloat16).eps
    assert xdtypes.iinfo("int4").max == jax.dtypes.iinfo("int4").max == 7
    assert xdtypes.float0 == jax.dtypes.float0
    assert np.dtype(xdtypes.bfloat16) == np.dtype(jax.dtypes.bfloat16)


def test_dtypes_x64():
    with xform.enable_x64(), jax.enable_x64(True):
        _check_x64()


def _check_x64():
    for args in [(1.0,), (np.int32, np.uint32), (np.float64,), (1, np.uint8)]:
        assert xdtypes.result_type(*args, return_weak_type_flag=True) == jax.dtypes.result_type(
            *args, return_weak_type_flag=True
        ), args
    assert xdtypes.canonicalize_dtype(np.float64) == np.float64


def test_dtypes_bad_input():
    with pytest.raises(ValueError, match="at least one array or dtype is required"):
        xdtypes.result_type()
    with pytest.raises(xdtypes.TypePromotionError, match=r"float8_e4m3fn.*float32"):
        xdtypes.result_type(xdtypes.float8_e4m3fn, np.float32)
    with pytest.raises(TypeError, match="not understood"):
        xdtypes.canonicalize_dtype("notadtype")
    with pytest.raises(ValueError, match="extended dtype key<fry>"):
        xdtypes.canonicalize_dtype(xform.random.key(0).dtype)
    with pytest.raises(ValueError, match="dtype cannot be None"):
        xdtypes.itemsize_bits(None)
    with pytest.raises(TypeError, match="scalar_type_of: invalid scalar value"):
        xdtypes.scalar_type_of("a")


# --------------------------------------------------------------------------- errors


def test_errors_are_jax_errors():
    for name in (n for n in dir(jax.errors) if not n.startswith("_")):
        assert issubclass(getattr(xerrors, name), getattr(jax.errors, name)), name
    with pytest.raises(jax.errors.KeyReuseError, match="key reused"):
        raise xerrors.KeyReuseError("key reused")
    assert issubclass(xerrors.JAXIndexError, IndexError)
    with pytest.raises(jax.errors.TracerBoolConversionError):
        xform.jit(lambda x: 1 if x > 0 else 0)(1.0)


# --------------------------------------------------------------------------- top level


def test_typeof():
    for x, jx in [
        (1.0, 1.0),
        (3, 3),
        (True, True),
        (xnp.ones((2, 3)), jnp.ones((2, 3))),
        (np.int64(3), np.int64(3)),
        (xnp.asarray(1.0), jnp.asarray(1.0)),
    ]:
        got, want = xform.typeof(x), jax.typeof(jx)
        assert (got.shape, got.dtype, got.weak_type) == (want.shape, want.dtype, want.weak_type)
    assert repr(xform.typeof(xform.random.key(0))) == repr(jax.typeof(jax.random.key(0)))
    seen = []
    xform.jit(lambda x: seen.append(xform.typeof(x)) or x)(2.0)
    assert (seen[0].shape, seen[0].dtype, seen[0].weak_type) == ((), np.float32, True)
    with pytest.raises(TypeError, match="typeof: argument 'a' of type <class 'str'>"):
        xform.typeof("a")


def test_shape_dtype_struct():
    for kw in ({}, {"weak_type": True}):
        s = xform.ShapeDtypeStruct((2, 3), np.float32, **kw)
        j = jax.ShapeDtypeStruct((2, 3), jnp.float32, **kw)
        assert repr(s) == repr(j) and str(s) == str(j)
        assert (s.ndim, s.size, len(s), s.weak_type) == (j.ndim, j.size, len(j), j.weak_type)
    assert xform.ShapeDtypeStruct([2], "int64").dtype == jax.ShapeDtypeStruct([2], "int64").dtype
    a, b = xform.ShapeDtypeStruct((2,), "float32"), xform.ShapeDtypeStruct((2,), np.float32)
    assert (
        a == b
        and hash(a) == hash(b)
        and a != xform.ShapeDtypeStruct((2,), "float32", weak_type=True)
    )
    sharding = jax.sharding.SingleDeviceSharding(xform.devices()[0])
    s = xform.ShapeDtypeStruct((2,), np.float32, sharding=sharding)
    assert s.sharding is sharding and s != a
    assert repr(s) == repr(jax.ShapeDtypeStruct((2,), jnp.float32, sharding=sharding))
    assert s.update(shape=(3,)).shape == (3,) and s.update(shape=(3,)).sharding is sharding
    assert xform.ShapeDtypeStruct.like(xnp.ones((1, 2))) == xform.ShapeDtypeStruct(
        (1, 2), np.float32
    )
    assert xform.eval_shape(lambda x: x * 2, s).shape == (2,)
    with pytest.raises(RuntimeError, match="Cannot reassign attributes"):
        a.shape = (3,)
    with pytest.raises(ValueError, match="dtype must be specified"):
        xform.ShapeDtypeStruct((2,), None)
    with pytest.raises(ValueError, match="sharding should be an instance"):
        xform.ShapeDtypeStruct((2,), np.float32, sharding=3)


def test_device_get():
    tree_in = {"a": xnp.ones(2), "b": 3, "c": np.ones(1), "d": "s"}
    got = xform.device_get(tree_in)
    want = jax.device_get({"a": jnp.ones(2), "b": 3, "c": np.ones(1), "d": "s"})
    assert type(got["a"]) is np.ndarray and got["b"] == 3 and got["d"] == "s"
    assert_same(got, want)
    # tracers pass through, as in JAX
    assert_same(xform.jit(lambda x: xform.device_get(x) + 1)(1.0), jnp.asarray(2.0))
    assert xform.block_until_ready(tree_in) is tree_in


def test_named_scope_and_call():
    def f(x):
        with xform.named_scope("inner"):
            return xnp.sin(x) * 2

    g = xform.named_call(f, name="outer")
    assert g.__name__ == "f"
    want = jax.grad(lambda x: jnp.sin(x) * 2)(0.5)
    assert_same(xform.jit(xform.grad(g))(0.5), want)
    assert_same(xform.vmap(g)(xnp.ones(3)), jnp.sin(jnp.ones(3)) * 2)
    decorated = xform.named_scope("layer")(lambda x: x + 1)
    assert_same(xform.jit(decorated)(1.0), jax.jit(jax.named_scope("layer")(lambda x: x + 1))(1.0))
    with pytest.raises(TypeError, match="named_scope name argument must be a string"):
        xform.named_scope(3)
    with pytest.raises(TypeError, match="named_scope name argument must be a string"):
        xform.named_call(f, name=3)


def test_clear_caches():
    f = xform.jit(lambda x: x + 1)
    f(1.0)
    assert f._cache_size() == 1
    xform.clear_caches()
    assert f._cache_size() == 0
    assert_same(f(1.0), jnp.asarray(2.0))


def test_live_arrays_and_environment(capsys):
    a = xform.jit(lambda x: x * 2)(xnp.ones(3))
    live = xform.live_arrays()
    assert any(x is a for x in live) and all(isinstance(x, xform.Array) for x in live)
    a.delete()
    assert not any(x is a for x in xform.live_arrays())
    text = xform.print_environment_info(return_string=True)
    assert re.search(r"^xform: .*\njax: +0\.10\.2", text, re.M)
    xform.print_environment_info()
    assert "process_count: 1" in capsys.readouterr().out


def test_processes():
    assert xform.process_indices() == jax.process_indices()
    with pytest.warns(UserWarning, match="host_count has been renamed to xform.process_count"):
        assert xform.host_count() == 1
    with pytest.warns(UserWarning, match="renamed"):
        assert xform.host_id() == 0
    with pytest.warns(UserWarning, match="renamed"):
        assert xform.host_ids() == [0]


def test_make_jaxpr_options():
    f = lambda x, n: x * n  # noqa: E731
    assert str(xform.make_jaxpr(f, static_argnums=1)(1.0, 3)) == str(
        jax.make_jaxpr(f, static_argnums=1)(1.0, 3)
    )
    _, shapes = xform.make_jaxpr(lambda x: (x, {"a": x * 2}), return_shape=True)(1.0)
    _, jshapes = jax.make_jaxpr(lambda x: (x, {"a": x * 2}), return_shape=True)(1.0)
    assert repr(shapes) == repr(jshapes)
    closed = xform.make_jaxpr(lambda x: xform.lax.psum(x, "i"), axis_env=[("i", 4)])(1.0)
    assert "psum" in str(closed)


# Top-level names of JAX 0.10.2 that xform does not have, with the reason.
_TOP_LEVEL_EXEMPT = {
    "ds": "Pallas's dynamic-slice helper (pl.ds): xform has no Pallas",
    "Shard": "sharded arrays: the sharding issue",
    "ad": "JAX's internal autodiff namespace; xform's public one is xform.extend.ad",
    "interpreters": "JAX's interpreter modules; xform's are xform.interpret (their public rule "
    "tables: xform.extend), and compat mode maps jax.interpreters.ad/batching/mlir to those",
    "lib": "jaxlib's bindings: xform reaches them through lowering/",
    "ffi": "foreign-function calls (jax.ffi.ffi_call) are not implemented yet",
    "memory": "memory kinds: xform arrays live in device memory only",
}


def test_every_top_level_name_of_jax_or_a_reason():
    public = {n for n in dir(jax) if not n.startswith("_")}
    missing = sorted(n for n in public if not hasattr(xform, n) and n not in _TOP_LEVEL_EXEMPT)
    assert not missing, f"xform lacks {missing}"
    stale = sorted(n for n in _TOP_LEVEL_EXEMPT if hasattr(xform, n))
    assert not stale, f"drop {stale} from the exemptions: xform has them now"


def test_fwd_and_bwd_as_jax():
    x = np.arange(16, dtype=np.float32).reshape(4, 4) / 10
    w = np.ones((4, 4), np.float32)
    for argnums, has_aux, jitted in (((0, 1), False, True), (1, True, False)):
        got, want = [], []
        for lib, out in ((xform, got), (jax, want)):
            fwd, bwd = lib.fwd_and_bwd(
                lambda x, w, aux=has_aux: (x @ w, 3) if aux else x @ w,
                argnums=argnums,
                has_aux=has_aux,
                jitted=jitted,
            )
            y, residuals, *aux = fwd(x, w)
            out.append((y, bwd(residuals, np.ones((4, 4), np.float32)), aux))
        np.testing.assert_allclose(got[0][0], want[0][0], rtol=1e-6)
        for g, w_ in zip(jax.tree.leaves(got[0][1]), jax.tree.leaves(want[0][1]), strict=True):
            np.testing.assert_allclose(g, w_, rtol=1e-6)
        assert got[0][2] == want[0][2]


def test_barrier_async_copy_dlpack_and_flag_scopes():
    x = xform.jit(lambda v: v * 2)(np.ones(3, np.float32))
    xform.effects_barrier()
    assert xform.copy_to_host_async({"x": x})["x"] is x
    np.testing.assert_array_equal(np.asarray(x), 2 * np.ones(3))
    for dtype in ("float32", "bfloat16", "int4", "complex64", "bool", "float8_e4m3fn"):
        assert xform.dlpack.is_supported_dtype(dtype) == jax.dlpack.is_supported_dtype(dtype)
    assert xform.distributed.is_initialized() == jax.distributed.is_initialized()
    with xform.no_tracing(True), xform.legacy_prng_key("warn"):
        assert xform.config.jax_no_tracing and xform.config.jax_legacy_prng_key == "warn"
    assert not xform.config.jax_no_tracing
    with pytest.raises(ValueError, match="jax_legacy_prng_key"):
        xform.legacy_prng_key("sometimes")
