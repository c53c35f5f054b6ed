# ruff: noqa: PLC0415  (the equinox program imports jax when it runs: real JAX in this process,
# xform in the compat subprocess)
"""Issue 20's gaps, each against real JAX: dtype names as scalar types (``jax.dtypes.bfloat16(1)``),
jvp/vjp/linearize/jacobians of functions whose outputs are not tracers, donation of several
arguments, and equinox's ``filter_custom_jvp`` run unmodified under ``xform.compat``."""

import importlib.util
import json
import os
import subprocess
import sys
import warnings

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import xform
import xform.numpy as xnp
from xform import compat

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIBS = {"jax": (jax, jnp), "xform": (xform, xnp)}


def _desc(x):
    """What a result is, as a comparable tree: the kind of leaf (a JAX/xform array, a NumPy
    value, a Python scalar), its dtype, weak type and values."""
    if isinstance(x, (tuple, list)):
        return [type(x).__name__, [_desc(a) for a in x]]
    if isinstance(x, dict):
        return {k: _desc(v) for k, v in x.items()}
    if x is None:
        return None
    if type(x).__name__ in ("TypedFloat", "TypedInt", "TypedComplex"):
        # JAX's typed Python scalars (jax._src.literals: a float with a strong dtype); xform
        # has none and returns a strongly typed array of that dtype and value instead.
        return ["array", str(x.dtype), False, x]
    if isinstance(x, (jax.Array, xform.Array)):
        return ["array", str(x.dtype), bool(x.weak_type), np.asarray(x).tolist()]
    if isinstance(x, (np.ndarray, np.generic)):
        if x.dtype == jax.dtypes.float0:
            return ["numpy", "float0", list(x.shape)]
        return ["numpy", str(x.dtype), x.tolist()]
    return [type(x).__name__, x]


# --------------------------------------------------------------------------- dtype names


def test_dtypes_bfloat16_is_the_scalar_type_as_jax():
    assert xform.dtypes.bfloat16 is jax.dtypes.bfloat16 is ml_dtypes.bfloat16
    one = xform.dtypes.bfloat16(1)
    assert type(one) is type(jax.dtypes.bfloat16(1)) and one == jax.dtypes.bfloat16(1)
    assert np.dtype(xform.dtypes.bfloat16) == np.dtype(jax.dtypes.bfloat16)
    assert xnp.ones(2, xform.dtypes.bfloat16).dtype == xform.dtypes.bfloat16
    assert (
        xnp.ones(2).astype(xform.dtypes.bfloat16).dtype
        == jnp.ones(2).astype(jax.dtypes.bfloat16).dtype
    )
    assert xnp.issubdtype(xform.dtypes.bfloat16, xnp.floating) == jnp.issubdtype(
        jax.dtypes.bfloat16, jnp.floating
    )
    assert xnp.finfo(xform.dtypes.bfloat16).bits == jnp.finfo(jax.dtypes.bfloat16).bits
    for lib in (xform, jax):  # both libraries' promotion and canonicalization take it
        assert lib.dtypes.result_type(lib.dtypes.bfloat16, 1.0) == np.dtype("bfloat16")
        assert lib.dtypes.canonicalize_dtype(lib.dtypes.bfloat16) == np.dtype("bfloat16")
    # jax.dtypes.float0 stays a dtype instance in both
    assert type(xform.dtypes.float0) is type(jax.dtypes.float0)


@pytest.mark.parametrize(
    "make",
    [
        lambda m: lambda x: x * 2 + 1,
        lambda m: lambda x: m.sum(m.exp(x)),
        lambda m: lambda x: m.dot(x, x),
    ],
)
def test_bfloat16_arrays_still_compute_and_compile(make):
    # xform's tables are keyed by the bfloat16 dtype instance: eager and jit paths still work
    x = np.linspace(-2, 2, 5).astype(ml_dtypes.bfloat16)
    want = jax.jit(make(jnp))(x)
    for got in (make(xnp)(x), xform.jit(make(xnp))(x)):
        assert got.dtype == want.dtype
        np.testing.assert_allclose(
            np.asarray(got, np.float32), np.asarray(want, np.float32), rtol=1e-2
        )


NARROW = [
    "bfloat16",
    "float8_e4m3fn",
    "float8_e5m2",
    "float8_e4m3b11fnuz",
    "float4_e2m1fn",
    "int4",
    "uint4",
    "int2",
]


@pytest.mark.parametrize("name", NARROW)
def test_numpy_narrow_names_are_scalar_types_as_jax(name):
    x_t, j_t = getattr(xnp, name), getattr(jnp, name)
    assert isinstance(x_t, type) and isinstance(j_t, type)
    assert np.dtype(x_t) == np.dtype(j_t) == x_t.dtype == j_t.dtype
    assert x_t(3).dtype == j_t(3).dtype
    assert (x_t == getattr(ml_dtypes, name)) == (j_t == getattr(ml_dtypes, name))
    assert xnp.zeros(2, x_t).dtype == x_t


def test_private_dtypes_module_names_scalar_types_under_compat():
    import jax._src.dtypes as jax_src_dtypes

    want = {n: getattr(jax_src_dtypes, n) for n in NARROW}
    compat.install()
    try:
        mod = importlib.import_module("jax._src.dtypes")
        assert {n: getattr(mod, n) for n in NARROW} == want
        assert importlib.import_module("jax.dtypes").bfloat16(2) == ml_dtypes.bfloat16(2)
    finally:
        compat.uninstall()


# --------------------------------------------------------------------------- autodiff


def _pullback(f, *args, ct=None):
    def run(lib, _):
        out, fb = lib.vjp(f(lib), *args)
        return out, fb(out if ct is None else ct)

    return run


def _lin(f, x, t):
    def run(lib, _):
        out, f_jvp = lib.linearize(f(lib), x)
        return out, f_jvp(t)

    return run


F0 = np.zeros((), jax.dtypes.float0)
# Each case: lib, np-module -> result. ``f(lib)`` makes the function with that library's jnp.
CONSTANT_OUTPUT_CASES = {
    "jvp_const_float": lambda lib, m: lib.jvp(lambda x: 1.0, (2.0,), (1.0,)),
    "jvp_const_int": lambda lib, m: lib.jvp(lambda x: 3, (2.0,), (1.0,)),
    "jvp_pass_tuple": lambda lib, m: lib.jvp(lambda x: (x, 3), (2.0,), (1.0,)),
    "jvp_array_in": lambda lib, m: lib.jvp(lambda x: (x, 1.0), (m.float32(2),), (m.float32(1),)),
    "jvp_numpy_const": lambda lib, m: lib.jvp(lambda x: np.float32(2), (2.0,), (1.0,)),
    "jvp_mix": lambda lib, m: lib.jvp(lambda x: (x * 2, 1.0, m.int32(4), True), (2.0,), (1.0,)),
    "jvp_int_input": lambda lib, m: lib.jvp(lambda x: (x, 1.0), (m.int32(3),), (F0,)),
    "jvp_numpy_input": lambda lib, m: lib.jvp(
        lambda x: x, (np.ones(2, np.float32),), (np.ones(2, np.float32),)
    ),
    "jvp_none": lambda lib, m: lib.jvp(lambda x: (x, None), (2.0,), (1.0,)),
    "linearize_const": _lin(lambda lib: lambda x: 1.0, 2.0, 1.0),
    "linearize_mix": _lin(lambda lib: lambda x: (x * 2, x, 1.0, 3), 2.0, 1.0),
    "vjp_const": _pullback(lambda lib: lambda x: 1.0, 2.0),
    "vjp_pass_tuple": _pullback(lambda lib: lambda x: (x, 3), 2.0),
    "vjp_two_inputs": _pullback(lambda lib: lambda x, y: (x, y), 2.0, 3, ct=(2.0, F0)),
    "vjp_dict": _pullback(lambda lib: lambda x: {"a": x, "b": 5.0, "c": None}, 2.0),
    "vjp_ct_passes_through": _pullback(lambda lib: lambda x: x, 2.0, ct=1.0),
    "grad_const": lambda lib, m: lib.grad(lambda x: 1.0)(2.0),
    "grad_const_array_in": lambda lib, m: lib.grad(lambda x: 1.0)(m.float32(2)),
    "value_and_grad_const": lambda lib, m: lib.value_and_grad(lambda x: 1.0)(2.0),
    "value_and_grad_numpy": lambda lib, m: lib.value_and_grad(lambda x: np.float32(1))(2.0),
    "jacfwd_const_int": lambda lib, m: lib.jacfwd(lambda x: 3)(2.0),
    "jacfwd_pass_tuple": lambda lib, m: lib.jacfwd(lambda x: (x, 3))(2.0),
    "jacfwd_mix": lambda lib, m: lib.jacfwd(lambda x: (x * 2, 1.0, m.int32(4)))(2.0),
    "jacfwd_int_array": lambda lib, m: lib.jacfwd(lambda x: m.arange(2))(m.ones(3)),
    "jacfwd_const_array_in": lambda lib, m: lib.jacfwd(lambda x: 1.0)(m.ones(2)),
    "jacrev_pass": lambda lib, m: lib.jacrev(lambda x: x)(2.0),
    "jacrev_const_array_in": lambda lib, m: lib.jacrev(lambda x: 1.0)(m.ones(2)),
    "hessian_const": lambda lib, m: lib.hessian(lambda x: 1.0)(2.0),
    "jit_of_jvp": lambda lib, m: lib.jit(lambda x: lib.jvp(lambda y: (1.0, 3, y), (x,), (1.0,)))(
        2.0
    ),
}


@pytest.mark.parametrize("case", sorted(CONSTANT_OUTPUT_CASES))
def test_autodiff_of_outputs_that_are_not_tracers_as_jax(case):
    fn = CONSTANT_OUTPUT_CASES[case]
    assert _desc(fn(xform, xnp)) == _desc(fn(jax, jnp))


@pytest.mark.parametrize("out", [3, True])
def test_grad_of_integer_output_raises_as_jax(out):
    with pytest.raises(TypeError) as want:
        jax.grad(lambda x: out)(2.0)
    expected = str(want.value).split(". ")[0]  # "grad requires ... but got int32"
    with pytest.raises(TypeError, match=expected.replace("(", r"\(").replace(")", r"\)")):
        xform.grad(lambda x: out)(2.0)


# --------------------------------------------------------------------------- donation

A, B = np.ones(3, np.float32), np.full(3, 2, np.float32)
DONATION_CASES = {
    "two_args_two_outputs": (
        lambda m: lambda x, y: (x + y, x - y),
        [A, B],
        {"donate_argnums": (0, 1)},
    ),
    "two_args_swapped": (lambda m: lambda x, y: (y * 1, x * 1), [A, B], {"donate_argnums": (0, 1)}),
    "one_output": (lambda m: lambda x, y: x + y, [A, B], {"donate_argnums": (0, 1)}),
    "three_args": (
        lambda m: lambda x, y, z: (x + y + z, x * y, z * 2),
        [A, B, A],
        {"donate_argnums": (0, 1, 2)},
    ),
    "other_dtype_same_size": (
        lambda m: lambda x, y: (x.astype(m.int32), y * 2),
        [A, B],
        {"donate_argnums": (0, 1)},
    ),
    "other_shape_same_size": (lambda m: lambda x: x.reshape(3, 1) * 2, [A], {"donate_argnums": 0}),
    "larger_output": (lambda m: lambda x: m.concatenate([x, x]), [A], {"donate_argnums": 0}),
    "narrower_output": (lambda m: lambda x: x.astype(m.float16), [A], {"donate_argnums": 0}),
    "argnames": (lambda m: lambda x, y: (x + y, x - y), [A, B], {"donate_argnames": ("x", "y")}),
    "scalar_first": (
        lambda m: lambda x, y: (x.sum(), x + y, y * 3),
        [A, B],
        {"donate_argnums": (0, 1)},
    ),
}


def _donate(lib, m, case):
    make, args, kwargs = DONATION_CASES[case]
    arrays = [m.array(a) for a in args]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = lib.jit(make(m), **kwargs)(*arrays)
    messages = [str(w.message).split("\n")[0] for w in caught if "donated" in str(w.message)]
    shapes = [(o.shape, str(o.dtype)) for o in lib.tree_util.tree_leaves(out)]
    return [a.is_deleted() for a in arrays], messages, shapes


@pytest.mark.parametrize("case", sorted(DONATION_CASES))
def test_donated_arguments_are_consumed_as_jax(case):
    assert _donate(xform, xnp, case) == _donate(jax, jnp, case)


def test_donated_buffers_hold_the_outputs():
    x, y = xnp.array(A), xnp.array(B)
    pointers = {x.unsafe_buffer_pointer(), y.unsafe_buffer_pointer()}
    s, d = xform.jit(lambda x, y: (x + y, x - y), donate_argnums=(0, 1))(x, y)
    assert x.is_deleted() and y.is_deleted()
    assert {s.unsafe_buffer_pointer(), d.unsafe_buffer_pointer()} == pointers
    np.testing.assert_array_equal(s, A + B)
    np.testing.assert_array_equal(d, A - B)


# --------------------------------------------------------------------------- custom_vjp


def _residual_kinds(lib, wrap):
    """The types bwd sees for residuals that fwd made Python scalars (equinox passes its
    ``perturbed`` flags so), and the gradient, under ``wrap`` (identity, jit)."""
    seen = []

    @lib.custom_vjp
    def f(x):
        return x * 2

    def fwd(x):
        return x * 2, (x, False, 3, 0.5)

    def bwd(res, ct):
        # JAX's int and float residuals are its typed subclasses of them (jax._src.literals,
        # which xform lacks): compared by the Python type they subclass.
        seen.append(
            [next(t for t in (bool, int, float) if isinstance(r, t)).__name__ for r in res[1:]]
        )
        return (ct * res[2] * res[3] if res[1] is False else ct,)

    f.defvjp(fwd, bwd)
    g = wrap(lib)(lib.grad(f))(1.5)
    return seen, float(g)


@pytest.mark.parametrize(
    "wrap", [lambda lib: lambda f: f, lambda lib: lib.jit], ids=["eager", "jit"]
)
def test_python_scalar_residuals_reach_bwd_as_they_are(wrap):
    assert _residual_kinds(xform, wrap) == _residual_kinds(jax, wrap)


# --------------------------------------------------------------------------- equinox


def _program_filter_custom_jvp():
    """equinox's filter_custom_jvp as its docs use it: keyword and non-array (function)
    arguments, a jvp rule that is not the true derivative (so the rule must be what runs),
    under filter_jit, filter_grad, filter_jvp, vmap and hessian."""
    import equinox as eqx
    import jax
    import jax.numpy as jnp

    @eqx.filter_custom_jvp
    def scaled_square(x, scale, *, name):
        del name
        return scale * x**2

    @scaled_square.def_jvp
    def _(primals, tangents, *, name):
        x, scale = primals
        tx, tscale = tangents
        t = scale * x * tx  # half the true derivative
        if tscale is not None:
            t = t + x**2 * tscale
        return scaled_square(x, scale, name=name), t

    @eqx.filter_custom_jvp
    def apply(fn, x):
        return fn(x)

    @apply.def_jvp
    def _(primals, tangents):
        fn, x = primals
        tfn, tx = tangents
        assert tfn is None  # a function has no tangent
        return apply(fn, x), 10.0 * tx

    x = jnp.array([1.0, 2.0, 3.0])

    def f(x, s):
        return jnp.sum(scaled_square(x, s, name="a"))

    p, t = eqx.filter_jvp(lambda x: scaled_square(x, 3.0, name="b"), (x,), (jnp.ones(3),))
    out = {
        "value": scaled_square(x, 2.0, name="a"),
        "filter_grad": eqx.filter_grad(f)(x, 2.0),
        "filter_jit_grad": eqx.filter_jit(eqx.filter_grad(f))(x, 2.0),
        "grad_both": jax.grad(f, argnums=(0, 1))(x, jnp.array(2.0)),
        "filter_jvp": (p, t),
        "vmap": jax.vmap(eqx.filter_grad(lambda x: scaled_square(x, 2.0, name="c")))(x),
        "function_arg": eqx.filter_jit(jax.grad(lambda x: apply(jnp.sin, x)))(1.5),
        "hessian": jax.hessian(lambda x: jnp.sum(scaled_square(x, 2.0, name="d")))(x),
    }
    return jax.tree_util.tree_map(lambda a: np.asarray(a).tolist(), out)


def test_equinox_filter_custom_jvp_matches_jax():
    if importlib.util.find_spec("equinox") is None:
        pytest.skip("equinox is not installed: pip install -e '.[compat]'")
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    proc = subprocess.run(
        [sys.executable, "-m", "xform.run", os.path.abspath(__file__), "--programs"],
        cwd=_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    want = json.loads(json.dumps(_program_filter_custom_jvp()))  # tuples as lists, as got's
    assert got == want


def _custom_vjp_scaling(lib, record):
    """``x * n`` with a custom VJP whose rules record what kind of value ``n`` is."""

    @lib.custom_vjp
    def f(x, n):
        return x * n

    def fwd(x, n):
        record.append(("fwd", hasattr(n, "shape")))
        return x * n, (n,)

    def bwd(res, g):
        return g * res[0], None

    f.defvjp(fwd, bwd)
    return f


@pytest.mark.parametrize("how", ["jit_grad", "grad_jit", "vjp_jit"])
def test_custom_vjp_fwd_sees_arrays_for_staged_python_scalars(how):
    # A Python scalar argument becomes a literal of the staged call; differentiating the
    # call later must hand fwd an array (equinox's checkpointed loops read its .shape).
    results = {}
    for name, lib in (("xform", xform), ("jax", jax)):
        record = []
        f = _custom_vjp_scaling(lib, record)
        g = lambda x, f=f: f(x, 3)  # noqa: E731
        if how == "jit_grad":
            out = lib.jit(lib.grad(g))(1.5)
        elif how == "grad_jit":
            out = lib.grad(lib.jit(g))(1.5)
        else:
            out = lib.vjp(lib.jit(g), 1.5)[1](1.0)[0]
        results[name] = (float(out), record)
    assert results["xform"] == results["jax"]


def test_donation_by_number_and_name_together_as_jax():
    # Given both donate_argnums and donate_argnames, JAX takes each as it is: numbers pick
    # positional arguments, names keyword ones; given one, the other follows the signature.
    def f(x, y):
        return x + 1, y + 1

    cases = [
        ({"donate_argnames": "y"}, False),
        ({"donate_argnames": "y"}, True),
        ({"donate_argnums": 0, "donate_argnames": "y"}, False),
        ({"donate_argnums": 0, "donate_argnames": "y"}, True),
        ({"donate_argnums": (), "donate_argnames": "y"}, False),
        ({"donate_argnums": (), "donate_argnames": "y"}, True),
        ({"donate_argnums": 1}, True),
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for options, by_keyword in cases:
            deleted = []
            for lib, put in ((xform, xform.device_put), (jax, jax.device_put)):
                x, y = put(np.ones(3, np.float32)), put(np.ones(3, np.float32))
                g = lib.jit(f, **options)
                g(x, y=y) if by_keyword else g(x, y)
                deleted.append((x.is_deleted(), y.is_deleted()))
            assert deleted[0] == deleted[1], (options, by_keyword)


if __name__ == "__main__" and sys.argv[1:] == ["--programs"]:  # the compat subprocess
    print(json.dumps(_program_filter_custom_jvp()))


def test_what_flax_nnx_reaches_for_as_jax():
    """Eager with_sharding_constraint to a sharding over the abstract mesh (flax's partitioned
    params) lays out over the set_mesh mesh, or the array's own; without either it is JAX's
    ValueError. lax.scan takes JAX's private _split_transpose. A key array whose data a
    library swapped for a ShapeDtypeStruct still has a shape and a type."""
    from jax.sharding import AxisType, NamedSharding
    from jax.sharding import PartitionSpec as P

    mesh = jax.make_mesh((2, 2), ("in", "out"), axis_types=(AxisType.Auto,) * 2)
    x = np.arange(12, dtype=np.float32).reshape(2, 6)
    outs = {}
    for mod in (xform, jax):
        with mod.set_mesh(mesh):
            s = NamedSharding(mod.sharding.get_abstract_mesh(), P("in", "out"))
            y = mod.lax.with_sharding_constraint(x, s)
        z = mod.lax.with_sharding_constraint(y, s)  # no context mesh: y's
        with pytest.raises(
            ValueError,
            match="Target sharding contains a `jax.sharding."
            "AbstractMesh` which requires the input passed should be a "
            r"`jax.Array`. Got .* with shape float32\[2,6\]",
        ):
            mod.lax.with_sharding_constraint(x, s)
        outs[mod] = (y, z)
    for got, want in zip(outs[xform], outs[jax], strict=True):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
        assert got.sharding == want.sharding
    step = lambda c, a: (c + a, c * a)  # noqa: E731
    for got, want in zip(
        xform.lax.scan(step, 0.0, x[0], _split_transpose=True),
        jax.lax.scan(step, 0.0, x[0], _split_transpose=True),
        strict=True,
    ):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    keys = xform.random.split(xform.random.key(0), 3)
    abstract = jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype), keys)
    assert abstract.shape == (3,) and xform.typeof(abstract) == xform.typeof(keys)
