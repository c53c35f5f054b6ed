"""xform.extend, the public extension API (jax.extend's counterpart).

The two JAX tutorials it exists for, with their imports replaced by xform.extend's names:
"How JAX primitives work" (a multiply-add primitive with every rule, used under jit, grad,
vmap and their compositions) and "Writing custom interpreters in JAX" (an inverse-function
interpreter over make_jaxpr output). JAX is the oracle for values and derivatives.
"""

import importlib
import pathlib
import re

import jax
import jax.numpy as jnp_
import numpy as np
import pytest

import xform
import xform.numpy as jnp
from lowering import mlir as lowering_mlir
from tests.harness import assert_same
from xform import lax
from xform.extend import ad, batching, core, mlir
from xform.extend.mlir.dialects import stablehlo as hlo
from xform.interpret import ad as ad_
from xform.interpret import batching as batching_
from xform.interpret import transpose as transpose_

# --------------------------------------------------------------------------- names

# jax.extend's public names that xform.extend does not give, and why. A whole module is
# exempt under its name alone.
EXEMPT = {
    "sharding": "xform has no GSPMD shardings or HLO sharding protos",
    "ifrt_programs": "xform compiles StableHLO modules directly, not IFRT programs",
    "pallas": "xform has no Pallas kernels",
    "xla": "xform has no HLO-module transformation pipeline",
    "core.AbstractToken": "xform has no tokens: there are no effects to order",
    "core.Token": "xform has no tokens: there are no effects to order",
    "core.Effect": "xform has no effect system (see core.no_effects)",
    "core.Effects": "xform has no effect system (see core.no_effects)",
    "core.InconclusiveDimensionOperation": "xform has no symbolic (polymorphic) shapes",
    "core.get_opaque_trace_state": "xform's trace state is core.current_trace() itself",
    "core.primitives.empty2_p": "xform has no uninitialized-buffer primitive",
    "core.primitives.get_p": "xform has no mutable refs (state primitives)",
    "core.primitives.swap_p": "xform has no mutable refs (state primitives)",
    "core.primitives.sharding_constraint_p": "xform has no GSPMD shardings",
    **{
        f"core.primitives.random_{n}_p": "xform's keys are raw uint32 arrays: no key-typed "
        "primitives"
        for n in ("bits", "fold_in", "gamma", "seed", "split")
    },
    "mlir.lower_with_sharding_in_types": "xform's jit writes the sdy annotations of typed "
    "shardings itself (lowering/sharding.py): there "
    "is no per-rule hook to expose",
    **{
        f"random.{n}": "xform's PRNG implementations are chosen by name, not defined by users"
        for n in (
            "define_prng_impl",
            "random_seed",
            "seed_with_impl",
            "rbg_prng_impl",
            "unsafe_rbg_prng_impl",
            "threefry_prng_impl",
        )
    },
    "backend.backend_xla_version": "not built: xform pins jaxlib 0.10.2",
    "backend.clear_backends": "xform's PJRT client lives as long as the process",
    "backend.get_compile_options": "xform builds its compile options inside lowering/runtime",
    "backend.ifrt_proxy": "xform has no IFRT proxy backend",
    "backend.register_backend_cache": "xform's caches are cleared by clear_in_memory_..._cache",
    "backend.register_backend_factory": "xform runs on the backends jaxlib finds",
    "lowering.JaxIrContext": "mlir.make_ir_context() makes xform's MLIR context",
    "lowering.upstream_dialects": "xform's context registers its dialects itself",
    **{
        f"source_info_util.{n}": "xform's source info is a (file, line, function) tuple, "
        "without name stacks"
        for n in (
            "NameStack",
            "SourceInfo",
            "current_name_stack",
            "extend_name_stack",
            "new_name_stack",
            "new_source_info",
            "register_exclusion",
            "reset_name_stack",
            "set_name_stack",
            "transform_name_stack",
            "user_context",
        )
    },
}

MODULES = [
    "core",
    "core.primitives",
    "mlir",
    "random",
    "backend",
    "lowering",
    "source_info_util",
    "linear_util",
    "sharding",
    "ifrt_programs",
    "pallas",
    "xla",
]


@pytest.mark.parametrize("module", MODULES)
def test_jax_extend_names_exist_or_are_exempt(module):
    names = [
        n
        for n in dir(importlib.import_module(f"jax.extend.{module}"))
        if not n.startswith("_") and n not in ("Callable", "xla_client")
    ]
    if module in EXEMPT:
        return
    ours = importlib.import_module(f"xform.extend.{module}")
    missing = [n for n in names if not hasattr(ours, n) and f"{module}.{n}" not in EXEMPT]
    assert not missing, f"xform.extend.{module} lacks {missing} (add them, or exempt them)"
    stale = [
        k
        for k in EXEMPT
        if k.startswith(f"{module}.")
        and "." not in k[len(module) + 1 :]
        and hasattr(ours, k[len(module) + 1 :])
    ]
    assert not stale, f"exempt but present: {stale}"


def test_threefry_2x32_gives_jaxs_bits():
    key = (np.uint32(7), np.uint32(42))
    count = np.arange(15, dtype=np.uint32).reshape(3, 5)  # an odd count is padded
    expected = jax.jit(jax.extend.random.threefry_2x32)(key, count)
    assert_same(xform.jit(xform.extend.random.threefry_2x32)(key, count), expected)
    with pytest.raises(TypeError, match="threefry_2x32 requires uint32 arguments"):
        xform.extend.random.threefry_2x32(key, np.arange(4))


def test_primitives_are_xforms_own():
    primitives = xform.extend.core.primitives
    assert primitives.sin_p is lax.sin_p and primitives.jit_p.name == "jit"
    assert xform.extend.random.threefry2x32_p.name == "threefry2x32"


# --------------------------------------------------------------------------- a new primitive

multiply_add_p = core.Primitive("multiply_add")
impl_calls = []


def multiply_add(x, y, z):
    """x * y + z, as one primitive."""
    return multiply_add_p.bind(x, y, z)


@multiply_add_p.def_impl
def _multiply_add_impl(x, y, z):
    impl_calls.append(1)
    return np.add(np.multiply(x, y), z)


@multiply_add_p.def_abstract_eval
def _multiply_add_abstract_eval(x, y, z):
    if not x.shape == y.shape == z.shape:
        raise TypeError(f"multiply_add: operands of shapes {x.shape}, {y.shape}, {z.shape}")
    return core.ShapedArray(x.shape, x.dtype)


def _multiply_add_lower(ctx, x, y, z):
    return [hlo.AddOp(hlo.MulOp(x, y), z).result]


mlir.register_lowering(multiply_add_p, _multiply_add_lower, platform="cpu")
mlir.register_lowering(multiply_add_p, _multiply_add_lower, platform="gpu")


def _multiply_add_jvp(primals, tangents):
    x, y, z = primals
    xt, yt, zt = (jnp.zeros_like(x) if type(t) is ad.Zero else t for t in tangents)
    return multiply_add(x, y, z), multiply_add(xt, y, multiply_add(x, yt, zt))


ad.primitive_jvps[multiply_add_p] = _multiply_add_jvp


def _multiply_add_transpose(ct, x, y, z):
    # Linear in z, and in whichever of x, y is undefined (the tangent rule's use).
    if ad.is_undefined_primal(x):
        assert not ad.is_undefined_primal(y)
        return multiply_add(ct, y, jnp.zeros_like(y)), None, ct
    return None, multiply_add(x, ct, jnp.zeros_like(x)), ct


ad.primitive_transposes[multiply_add_p] = _multiply_add_transpose


def _multiply_add_batch(args, dims):
    size = next(x.shape[d] for x, d in zip(args, dims, strict=True) if d is not batching.not_mapped)
    moved = [
        jnp.broadcast_to(x, (size, *jnp.shape(x)))
        if d is batching.not_mapped
        else jnp.moveaxis(x, d, 0)
        for x, d in zip(args, dims, strict=True)
    ]
    return multiply_add(*moved), 0


batching.primitive_batchers[multiply_add_p] = _multiply_add_batch


def square_add(a, b):
    return multiply_add(a, a, b)


def square_add_jax(a, b):
    return a * a + b


A = np.linspace(-1.0, 2.0, 4, dtype=np.float32)
B = np.arange(4, dtype=np.float32)


def test_new_primitive_eager_runs_its_impl():
    impl_calls.clear()
    assert float(square_add(2.0, 10.0)) == 14.0
    assert impl_calls == [1]


def test_new_primitive_traces_to_one_equation():
    closed = xform.make_jaxpr(square_add)(2.0, 10.0)
    assert str(closed) == "{ lambda ; a:f32[] b:f32[]. let c:f32[] = multiply_add a a b in (c,) }"


def test_new_primitive_under_jit_is_lowered_not_run():
    impl_calls.clear()
    f = xform.jit(square_add)
    assert_same(f(A, B), jax.jit(square_add_jax)(A, B))
    assert not impl_calls
    text = f.lower(A, B).as_text()
    assert "stablehlo.multiply" in text and "stablehlo.add" in text


def test_new_primitive_grad_jvp_vmap_and_compositions():
    for argnums in (0, 1):
        assert_same(
            xform.grad(square_add, argnums)(2.0, 10.0), jax.grad(square_add_jax, argnums)(2.0, 10.0)
        )
    assert_same(
        xform.jvp(square_add, (A, B), (B, A))[1], jax.jvp(square_add_jax, (A, B), (B, A))[1]
    )
    assert_same(
        xform.vmap(square_add, (0, None))(A, B[0]), jax.vmap(square_add_jax, (0, None))(A, B[0])
    )
    assert_same(
        xform.jit(xform.vmap(xform.grad(square_add)))(A, B),
        jax.jit(jax.vmap(jax.grad(square_add_jax)))(A, B),
    )
    assert_same(
        xform.grad(xform.grad(square_add))(1.5, 1.0), jax.grad(jax.grad(square_add_jax))(1.5, 1.0)
    )


def test_reverse_mode_uses_the_transpose_rule():
    # vjp of a linear use: z -> multiply_add(c, c, z) with cotangent ct gives ct.
    _, pullback = xform.vjp(lambda x: multiply_add(x, B, A), A)
    assert_same(pullback(np.ones(4, np.float32))[0], B)


def test_rule_tables_speak_jaxs_convention_for_builtins():
    out, t = ad.primitive_jvps[lax.sin_p]((np.float32(0.5),), (np.float32(2.0),))
    np.testing.assert_allclose([out, t], [np.sin(0.5), 2 * np.cos(0.5)], rtol=1e-6)
    out, dim = batching.primitive_batchers[lax.neg_p]((A[:, None],), (0,))
    assert dim == 0 and out.shape == (4, 1)
    out, dim = batching.fancy_primitive_batchers[lax.neg_p](batching.AxisData("i", 4), (A,), (0,))
    assert dim == 0 and out.shape == (4,)
    assert ad.primitive_jvps[multiply_add_p] is _multiply_add_jvp
    assert multiply_add_p in ad.primitive_jvps and lax.sin_p in batching.primitive_batchers


# A primitive with multiple results, its lowering written with lower_fun, and one-line
# registrars for the JVP-free and linear cases.
sincos_p = core.Primitive("sincos")
sincos_p.multiple_results = True
sincos_p.def_impl(lambda x: (np.sin(x), np.cos(x)))
sincos_p.def_abstract_eval(lambda x: (x, x))
mlir.register_lowering(sincos_p, mlir.lower_fun(lambda x: (jnp.sin(x), jnp.cos(x))))
batching.defvectorized(sincos_p)


def _sincos_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    s, c = sincos_p.bind(x)
    return (s, c), (c * t, -s * t)


ad.primitive_jvps[sincos_p] = _sincos_jvp

double_p = core.Primitive("double")
double_p.def_abstract_eval(lambda x: x)
mlir.register_lowering(double_p, mlir.lower_fun(lambda x: x + x, multiple_results=False))
ad.deflinear(double_p, lambda ct: [double_p.bind(ct)])
batching.defvectorized(double_p)


def test_multiple_results_and_lower_fun():
    def f(x):
        s, c = sincos_p.bind(x)
        return (s * c).sum()

    def f_jax(x):
        return (jnp_.sin(x) * jnp_.cos(x)).sum()

    assert_same(xform.jit(f)(A), jax.jit(f_jax)(A))
    # d/dx sin(x) cos(x) = cos(2x)
    assert_same(xform.jit(xform.grad(f))(A), np.cos(2 * A), rtol=1e-6, atol=1e-7)
    assert_same(xform.vmap(xform.grad(f))(A[:, None]), np.cos(2 * A[:, None]), rtol=1e-6, atol=1e-7)
    assert len(sincos_p.bind(A)) == 2  # eagerly, through def_impl


def test_deflinear_gives_jvp_and_transpose():
    # No def_impl: eager evaluation compiles the equation with its lowering.
    assert_same(double_p.bind(A), 2 * A)
    assert_same(xform.grad(lambda x: double_p.bind(x).sum())(A), np.full(4, 2, np.float32))
    assert_same(
        xform.vmap(xform.grad(lambda x: (double_p.bind(x) ** 2).sum()))(A[:, None]), 8 * A[:, None]
    )


def test_lower_fun_inlines_xform_ops():
    text = xform.jit(double_p.bind).lower(A).as_text()
    assert "stablehlo.add %arg0, %arg0" in text


cube_p = core.Primitive("cube")
cube_p.def_impl(lambda x: np.power(x, 3))
cube_p.def_abstract_eval(lambda x: x)
mlir.register_lowering(cube_p, mlir.lower_fun(lambda x: x * x * x, multiple_results=False))
ad.defjvp(cube_p, lambda t, x: 3.0 * x * x * t)
batching.defvectorized(cube_p)


def test_one_line_registrars():
    def f(x):
        return cube_p.bind(x).sum()

    assert_same(xform.jit(xform.vmap(xform.grad(f)))(A[:, None]), 3 * A[:, None] ** 2, rtol=1e-6)
    assert_same(xform.jacfwd(xform.grad(f))(A[:2]), np.diag(6 * A[:2]), rtol=1e-6)
    zero = ad.Zero(core.ShapedArray((2,), np.dtype("float32")))
    assert_same(ad.instantiate_zeros(zero), np.zeros(2, np.float32))
    assert_same(ad.zeros_like_aval(zero.aval), np.zeros(2, np.float32))


# --------------------------------------------------------------------------- jaxprs


def test_jaxpr_objects_have_jaxs_attributes():
    c = np.arange(3, dtype=np.float32)
    closed = xform.make_jaxpr(lambda x: jnp.sin(x) * 2.0 + c)(np.ones(3, np.float32))
    assert isinstance(closed, core.ClosedJaxpr) and isinstance(closed.jaxpr, core.Jaxpr)
    assert closed.literals is closed.consts and len(closed.consts) == 1
    assert closed.in_avals == [core.ShapedArray((3,), np.dtype("float32"))]
    assert [e.primitive for e in closed.eqns] == [lax.sin_p, lax.mul_p, lax.add_p]
    mul = closed.eqns[1]
    assert isinstance(mul, core.JaxprEqn) and type(mul.invars[1]) is core.Literal
    assert mul.invars[1].val == 2.0 and mul.invars[1].aval.weak_type
    assert isinstance(mul.outvars[0], core.Var) and mul.outvars[0].aval.shape == (3,)
    assert isinstance(mul.params, dict) and mul.effects == core.no_effects
    assert closed.jaxpr.effects == core.no_effects
    x = np.ones(3, np.float32)
    expected = jax.jit(lambda x: jnp_.sin(x) * 2.0 + c)(x)
    assert_same(core.eval_jaxpr(closed.jaxpr, closed.literals, x)[0], expected)
    assert_same(core.jaxpr_as_fun(closed)(x)[0], expected)


def test_building_a_jaxpr_by_hand():
    f32 = core.ShapedArray((2,), np.dtype("float32"))
    a, b, out = core.Var(f32), core.Var(f32), core.Var(f32)
    eqn = core.new_jaxpr_eqn([a, b], [out], lax.mul_p, {}, core.no_effects)
    jaxpr = core.Jaxpr([], [a, b], [out], [eqn])
    core.check_jaxpr(jaxpr)
    assert_same(
        core.eval_jaxpr(jaxpr, [], np.float32([2, 3]), np.float32([4, 5]))[0], np.float32([8, 15])
    )
    bad = core.Jaxpr([], [a], [out], [eqn])  # b is read before it is defined
    with pytest.raises(core.JaxprTypeError, match="used before it is defined"):
        core.check_jaxpr(bad)


def test_aval_helpers_match_jax():
    aval = core.ShapedArray((2, 5, 3), np.dtype("float32"))
    assert core.mapped_aval(5, 1, aval).shape == (2, 3)
    assert core.unmapped_aval(7, 0, aval).shape == (7, 2, 5, 3)
    for dt in ("float32", "int32", "bool"):
        assert core.primal_dtype_to_tangent_dtype(
            dt
        ) == jax.extend.core.primal_dtype_to_tangent_dtype(np.dtype(dt))
    assert core.valid_jaxtype(np.ones(2)) and not core.valid_jaxtype("a string")
    with pytest.raises(ValueError, match=r"mapped_aval: axis 1 of f32\[2,5,3\] has size 5"):
        core.mapped_aval(4, 1, aval)


def test_concrete_or_error():
    assert core.concrete_or_error(int, np.int32(3)) == 3
    with pytest.raises(jax.errors.ConcretizationTypeError, match="the loop bound"):
        xform.jit(lambda n: core.concrete_or_error(int, n, "the loop bound"))(3)


def test_trace_and_runtime_helpers():
    seen = []

    def f(x):
        seen.append(
            (core.unsafe_am_i_under_a_jit_DO_NOT_USE(), core.unsafe_am_i_under_a_vmap_DO_NOT_USE())
        )
        top = core.find_top_trace([x])
        with core.take_current_trace() as trace:
            assert trace is top
            (out,) = trace.process_primitive(lax.neg_p, [x], {})
        return out

    assert_same(xform.jit(xform.vmap(f))(A), -A)
    assert seen == [(True, True)]
    assert not core.unsafe_am_i_under_a_jit_DO_NOT_USE()
    names = []
    xform.vmap(lambda x: names.append(core.unsafe_get_axis_names_DO_NOT_USE()) or x, axis_name="i")(
        A
    )
    assert names == [["i"]] and not core.nonempty_axis_env_DO_NOT_USE()
    backend = xform.extend.backend
    assert backend.get_default_device() == xform.devices()[0]
    assert backend.get_backend() is xform.devices()[0].client
    assert list(backend.backends()) == [xform.devices()[0].platform]
    backend.clear_in_memory_compilation_cache()
    here = xform.extend.source_info_util.current()
    assert "test_extend.py" in xform.extend.source_info_util.summarize(here)


# The custom-interpreters tutorial: invert a function by walking its jaxpr backwards.

inverse_registry = {lax.exp_p: jnp.log, lax.log_p: jnp.exp, lax.tanh_p: jnp.arctanh}


def inverse_jaxpr(jaxpr, consts, *args):
    env = {}

    def read(v):
        return v.val if type(v) is core.Literal else env[v]

    env.update(zip(jaxpr.outvars, args, strict=True))
    env.update(zip(jaxpr.constvars, consts, strict=True))
    for eqn in reversed(jaxpr.eqns):
        if eqn.primitive not in inverse_registry:
            raise NotImplementedError(f"{eqn.primitive} does not have a registered inverse.")
        env[eqn.invars[0]] = inverse_registry[eqn.primitive](*[read(v) for v in eqn.outvars])
    return [read(v) for v in jaxpr.invars]


def inverse(fun):
    def wrapped(*args):
        closed = xform.make_jaxpr(fun)(*args)
        return inverse_jaxpr(closed.jaxpr, closed.literals, *args)[0]

    return wrapped


def test_inverse_interpreter():
    def f(x):
        return jnp.exp(jnp.tanh(x))

    x = np.float32([0.1, 0.5, -0.3])
    assert_same(inverse(f)(f(x)), x, rtol=1e-5, atol=1e-6)
    assert [e.primitive for e in xform.make_jaxpr(inverse(f))(x).eqns] == [lax.log_p, lax.atanh_p]
    # The inverse is itself an ordinary function: jit, vmap and grad apply to it.
    y = np.asarray(f(x))
    assert_same(
        xform.jit(xform.vmap(xform.grad(inverse(f))))(y),
        jax.jit(jax.vmap(jax.grad(lambda y: jnp_.arctanh(jnp_.log(y)))))(y),
    )
    with pytest.raises(NotImplementedError, match="sin does not have a registered inverse"):
        inverse(jnp.sin)(0.5)


# --------------------------------------------------------------------------- bad input


def test_missing_rules_name_the_primitive_and_the_transformation():
    bare_p = core.Primitive("bare")
    with pytest.raises(NotImplementedError, match="'bare' has no abstract evaluation rule"):
        xform.jit(bare_p.bind)(1.0)
    bare_p.def_abstract_eval(lambda x: x)
    with pytest.raises(NotImplementedError, match="'bare' has no JVP rule"):
        xform.grad(bare_p.bind)(1.0)
    with pytest.raises(NotImplementedError, match="'bare' has no batching rule"):
        xform.vmap(bare_p.bind)(A)
    with pytest.raises(NotImplementedError, match="'bare' has no lowering rule"):
        xform.jit(bare_p.bind)(1.0)


def test_register_lowering_rejects_an_unknown_platform():
    with pytest.raises(ValueError, match="unknown platform 'metal' for primitive 'double'"):
        mlir.register_lowering(double_p, mlir.lower_fun(lambda x: x), platform="metal")


def test_abstract_eval_errors_reach_the_user():
    with pytest.raises(TypeError, match=r"multiply_add: operands of shapes \(4,\), \(\), \(\)"):
        xform.jit(multiply_add)(A, 1.0, 2.0)


# --------------------------------------------------------------------------- xform's convention

# Primitives registered exactly as the built-ins register theirs: xform's rule tables (rules
# return lists) and registrars, and the lowering helpers of the built-in elementwise family.

scale_p = core.Primitive("scale")  # x * y, y rank 0 or of x's shape: lax's broadcasting
scale_p.def_impl(np.multiply)
scale_p.def_abstract_eval(lambda x, y: x if x.shape else y)
mlir.register_lowering(scale_p, mlir.elementwise_rule(hlo.multiply))
ad.defjvp(scale_p, lambda t, x, y: scale_p.bind(t, y), lambda t, x, y: scale_p.bind(x, t))
ad.deftranspose(
    scale_p,
    lambda ct, x, y: ad.unbroadcast(x.aval, scale_p.bind(ct, y)),
    lambda ct, x, y: ad.unbroadcast(y.aval, scale_p.bind(x, ct)),
)
batching.defbroadcasting(scale_p)

exp_once_p = core.Primitive("exp_once")
exp_once_p.def_impl(np.exp)
exp_once_p.def_abstract_eval(lambda x: x)
mlir.register_lowering(exp_once_p, mlir.elementwise_rule(hlo.exponential))
ad.defjvp_with_ans(exp_once_p, lambda t, ans, x: scale_p.bind(t, ans))
batching.defvectorized(exp_once_p)


def _sum_of_scaled_exp(x, y):
    return scale_p.bind(exp_once_p.bind(x), y).sum()


def test_xform_convention_registrars_and_lowering_helpers():
    y = np.float32(1.5)
    assert_same(xform.jit(_sum_of_scaled_exp)(A, y), 1.5 * np.exp(A).sum(), rtol=1e-6)
    gx, gy = xform.jit(xform.grad(_sum_of_scaled_exp, argnums=(0, 1)))(A, y)
    assert_same(gx, 1.5 * np.exp(A), rtol=1e-6)
    assert_same(gy, np.exp(A).sum(), rtol=1e-6)
    # vmap over x with y unmapped, and over both (defbroadcasting mixes them)
    per_row = xform.vmap(xform.grad(_sum_of_scaled_exp), in_axes=(0, None))(A[:, None], y)
    assert_same(per_row, 1.5 * np.exp(A[:, None]), rtol=1e-6)
    ys = np.float32([1.0, 2.0, 3.0, 4.0])
    assert_same(xform.vmap(_sum_of_scaled_exp)(A[:, None], ys), ys * np.exp(A), rtol=1e-6)
    assert_same(
        xform.jacfwd(xform.grad(_sum_of_scaled_exp))(A, y), np.diag(1.5 * np.exp(A)), rtol=1e-6
    )
    # The rank-0 operand is broadcast by the public helper, as the built-ins' are.
    text = xform.jit(scale_p.bind).lower(A, y).as_text()
    assert "stablehlo.broadcast_in_dim" in text and "stablehlo.multiply" in text


class CountingTracer(core.Tracer):
    __slots__ = ("val",)

    def __init__(self, trace, val):
        self._trace, self.val = trace, val

    @property
    def aval(self):
        return core.get_aval(self.val)


class CountingTrace(core.Trace):
    __slots__ = ("parent", "count", "alive")

    def __init__(self, parent):
        self.parent, self.count, self.alive = parent, 0, True

    def process_primitive(self, prim, args, params):
        self.count += 1
        vals = [x.val if isinstance(x, CountingTracer) and x._trace is self else x for x in args]
        with core.set_current_trace(self.parent):
            outs = prim.bind(*vals, **params)
        return [CountingTracer(self, o) for o in (outs if prim.multiple_results else [outs])]


def count_primitives(f, x):
    trace = CountingTrace(core.current_trace())
    try:
        with core.set_current_trace(trace):
            out = f(CountingTracer(trace, x))
    finally:
        trace.alive = False
    return (out.val if isinstance(out, CountingTracer) else out), trace.count


def test_an_interpreter_written_with_the_public_classes():
    def f(x):
        return jnp.sin(x) * 2.0 + x

    out, count = count_primitives(f, A)
    assert_same(out, np.sin(A) * 2 + A, rtol=1e-6)
    assert count == len(xform.make_jaxpr(f)(A).eqns)
    # It nests with xform's own interpreters, above and below them.
    assert_same(
        xform.grad(lambda x: count_primitives(lambda t: jnp.sin(t).sum(), x)[0])(A), np.cos(A)
    )
    assert_same(xform.jit(lambda x: count_primitives(f, x)[0])(A), np.sin(A) * 2 + A, rtol=1e-6)
    g, n = count_primitives(xform.grad(lambda x: jnp.sin(x).sum()), A)
    assert_same(g, np.cos(A), rtol=1e-6) and n > 0


# --------------------------------------------------------------------------- one way to register

# A private registrar: ``_def<rule shape>`` (``_default_...`` helpers are no registrars).
_PRIVATE_REGISTRAR = re.compile(r"^\s*def _def(?!ault)\w*\(", re.M)


def test_builtins_register_through_the_public_registrars():
    # The public tables are the interpreters' own ones, and the registrars the same functions.
    assert ad.jvp_rules is ad_.jvp_rules
    assert ad.primitive_transposes is ad.transpose_rules is transpose_.transpose_rules
    assert batching.batch_rules is batching_.batch_rules
    assert mlir.lowering_rules is lowering_mlir.lowering_rules
    for name in ("defjvp", "defjvp_with_ans", "defjvp_zero", "defjvp_linear", "unbroadcast"):
        assert getattr(ad, name) is getattr(ad_, name), name
    for name in ("deftranspose", "deflinear"):
        assert getattr(ad, name) is getattr(transpose_, name), name
    for name in ("defvectorized", "defbroadcasting", "defaxes"):
        assert getattr(batching, name) is getattr(batching_, name), name
    for name in ("broadcast_to", "full_like_aval", "elementwise_rule"):
        assert getattr(mlir, name) is getattr(lowering_mlir, name), name
    assert mlir.ir_constant is lowering_mlir.constant
    # Every rule of every built-in primitive sits in those tables, and none was made by a
    # private registrar (a closure inside a ``_def...`` function).
    tables = [ad.jvp_rules, ad.transpose_rules, batching.batch_rules, mlir.lowering_rules]
    builtins = [getattr(core.primitives, n) for n in dir(core.primitives) if n.endswith("_p")]
    assert len(builtins) > 100
    for prim in builtins:
        for table in tables:
            rule = table.get(prim)
            maker = getattr(rule, "__qualname__", "").partition(".<locals>")[0]
            assert not maker.split(".")[-1].startswith("_def"), (prim, maker)
    # And no private registrar is defined where the built-ins' rules are.
    root = pathlib.Path(xform.__file__).parent
    for folder in ("interpret", "primitives"):
        for path in sorted((root / folder).rglob("*.py")):
            found = _PRIVATE_REGISTRAR.findall(path.read_text())
            assert not found, f"{path.relative_to(root)} defines a private registrar: {found}"


# A primitive made as the built-ins make theirs: standard_primitive with a NumPy host impl.
_host_calls = []


def _cube_host(x):
    _host_calls.append(x.shape)
    return [x * x * x]


host_cube_p = core.standard_primitive("host_cube_ext", lambda x: [x], _cube_host)
mlir.register_lowering(host_cube_p, lambda ctx, x: [hlo.multiply(hlo.multiply(x, x), x)])
ad.defjvp_with_ans(host_cube_p, lambda t, ans, x: scale_p.bind(t, scale_p.bind(x, x) * 3.0))


def test_a_primitive_made_as_the_builtins_make_theirs():
    assert core.host_impls[host_cube_p] is _cube_host
    assert core.abstract_eval_rules[host_cube_p](core.ShapedArray((4,), np.float32)) == [
        core.ShapedArray((4,), np.float32)
    ]
    _host_calls.clear()
    x = np.float32([1.0, 2.0, -1.5, 0.5])
    assert_same(host_cube_p.bind(jnp.asarray(x)), x**3, rtol=1e-6)  # eager: the host impl ran
    assert _host_calls == [(4,)]
    assert_same(xform.jit(host_cube_p.bind)(x), x**3, rtol=1e-6)  # compiled: its lowering
    assert _host_calls == [(4,)]
    assert_same(xform.grad(lambda v: host_cube_p.bind(v).sum())(x), 3 * x**2, rtol=1e-6)
