"""Remat by name and the autodiff extras, against JAX: checkpoint_name and the name-based
policies (what print_saved_residuals reports), checkpoint's static arguments, custom rules
with symbolic zeros and nondiff_argnames, custom_gradient, closure_convert, vmap's sum_match
and spmd_axis_name, lax.map's batch_size, and gradients of functions of complex inputs."""

import functools
import re

import jax
import jax.ad_checkpoint
import jax.custom_derivatives
import jax.numpy as jnp
import numpy as np
import pytest

import xform
import xform.ad_checkpoint
import xform.custom_derivatives
import xform.numpy as xnp
from tests.harness import assert_same

LIBS = {"xform": (xform, xnp), "jax": (jax, jnp)}
RNG = np.random.default_rng(0)
W1 = RNG.standard_normal((5, 4)).astype(np.float32)
W2 = RNG.standard_normal((6, 5)).astype(np.float32)
X = RNG.standard_normal(4).astype(np.float32)
X2 = RNG.standard_normal((4, 2)).astype(np.float32)  # matmuls as one dot_general in both
TOL = {"rtol": 2e-5, "atol": 2e-6}


def _f32(tree):
    """Leaves as float32 NumPy values: JAX returns some of them as Python floats."""
    return jax.tree.map(lambda v: np.asarray(v, np.float32), tree)


# --------------------------------------------------------------------------- names


def test_public_names_match_jax():
    for mod, ours in (
        (jax.ad_checkpoint, xform.ad_checkpoint),
        (jax.custom_derivatives, xform.custom_derivatives),
    ):
        public = {n for n in dir(mod) if not n.startswith("_")} - {
            "linear_call",
            "remat_opt_p",
        }  # not in xform (see the module docstrings)
        assert public <= set(dir(ours)), public - set(dir(ours))
    policies = {n for n in dir(jax.checkpoint_policies) if not n.startswith("_")}
    assert policies <= set(vars(xform.checkpoint_policies))
    assert xform.custom_gradient is xform.custom_derivatives.custom_gradient
    assert callable(xform.closure_convert)


def test_checkpoint_name_is_the_identity():
    name = xform.ad_checkpoint.checkpoint_name

    def f(x):
        return xnp.sum(name(xnp.sin(x), "s") * 2.0)

    x = np.arange(3.0, dtype=np.float32)
    assert_same(xform.grad(f)(x), (2 * np.cos(x)).astype(np.float32), **TOL)
    assert_same(xform.jit(f)(x), np.float32(np.sum(np.sin(x) * 2)), **TOL)
    assert_same(xform.vmap(lambda x: name(x * x, "sq"))(x), x * x)
    assert float(name({"a": 1.0}, "n")["a"]) == 1.0
    (eqn,) = xform.make_jaxpr(lambda x: name(x, "a"))(1.0).jaxpr.eqns
    assert eqn.primitive.name == "name" and eqn.params == {"name": "a"}
    assert "name[name=a]" in str(xform.make_jaxpr(lambda x: name(x, "a"))(1.0))


# --------------------------------------------------------------------------- saved residuals


def _layer(api, np_, w, x):
    name = api.ad_checkpoint.checkpoint_name
    y = name(w @ x, "dot")
    return np_.sin(y)


def _net(api, np_, w1, w2, x):
    x = _layer(api, np_, w1, x)
    x = api.ad_checkpoint.checkpoint_name(x, "a")
    x = _layer(api, np_, w2, x)
    return np_.sum(x)


def _residual_lines(capsys, lib, policy_of):
    api, np_ = LIBS[lib]
    policy = policy_of(api.checkpoint_policies)
    f = api.checkpoint(lambda w1, w2, x: _net(api, np_, w1, w2, x), policy=policy)
    api.ad_checkpoint.print_saved_residuals(f, W1, W2, X2)
    lines = capsys.readouterr().out.splitlines()
    return [_normalized(line) for line in lines]


def _normalized(line):
    """Both write ``file:line:column (name)``; JAX qualifies the name (``outer.<locals>.f``)."""
    return re.sub(r"\(([^()]*\.)?([^.()]+)\)$", r"(\2)", line)


POLICIES = {
    "nothing": lambda p: None,
    "dots": lambda p: p.dots_saveable,
    "only_a": lambda p: p.save_only_these_names("a"),
    "only_dot": lambda p: p.save_only_these_names("dot", "unused"),
    "any_but_a": lambda p: p.save_any_names_but_these("a"),
    "both": lambda p: p.save_from_both_policies(
        p.save_only_these_names("a"), p.dots_with_no_batch_dims_saveable
    ),
}


@pytest.mark.parametrize("policy", POLICIES)
def test_saved_residuals_by_policy_match_jax(capsys, policy):
    got = _residual_lines(capsys, "xform", POLICIES[policy])
    expected = _residual_lines(capsys, "jax", POLICIES[policy])
    assert got == expected
    assert got[0] == "f32[5,4] from the argument w1"


def test_saved_residuals_without_checkpoint_and_jit_name(capsys):
    def f(api, np_):
        return lambda x: np_.sum(api.jit(np_.sin)(x) * x)

    for lib in ("xform", "jax"):
        api, np_ = LIBS[lib]
        api.ad_checkpoint.print_saved_residuals(f(api, np_), X)
    xf, jx = np.split(np.array(capsys.readouterr().out.splitlines()), 2)
    assert list(xf[:1]) == list(jx[:1]) == ["f32[4] from the argument x"]
    assert any("output of jitted function 'sin'" in line for line in xf)


def _with_varargs(np_):
    def f(p, *args, scale=1.0, **kw):
        return np_.sum(np_.sin(p["w"] * args[0]) * scale * kw["z"])

    return f


def test_saved_residuals_name_arguments_as_jax(capsys):
    for _, np_ in (LIBS["xform"], LIBS["jax"]):
        api = xform if np_ is xnp else jax
        api.ad_checkpoint.print_saved_residuals(
            _with_varargs(np_), {"w": X}, X, scale=np.float32(2), z=X
        )
    lines = [_normalized(line) for line in capsys.readouterr().out.splitlines()]
    assert lines[: len(lines) // 2] == lines[len(lines) // 2 :]
    assert lines[:4] == [
        "f32[4] from the argument p['w']",
        "f32[4] from the argument args[0]",
        "f32[] from the argument scale",
        "f32[4] from the argument kw['z']",
    ]


def test_offload_policies_save_as_on_device():
    """xform has no memory kinds: offloaded values are saved on the device (JAX on CPU moves
    them to pinned host memory); the values saved and the gradients are the same."""
    p = xform.checkpoint_policies
    offload = p.save_and_offload_only_these_names(
        names_which_can_be_saved=["a"],
        names_which_can_be_offloaded=["dot"],
        offload_src="device",
        offload_dst="pinned_host",
    )
    saved = xform.ad_checkpoint.saved_residuals(
        xform.checkpoint(lambda w1, w2, x: _net(xform, xnp, w1, w2, x), policy=offload), W1, W2, X2
    )
    assert [s.split(" from")[0] for _, s in saved[3:]] == [
        "named 'dot'",
        "named 'a'",
        "named 'dot'",
    ]
    grads = []
    for api, np_ in (LIBS["xform"], LIBS["jax"]):
        f = api.checkpoint(
            lambda w1, w2, x, api=api, np_=np_: _net(api, np_, w1, w2, x),
            policy=api.checkpoint_policies.offload_dot_with_no_batch_dims("device", "pinned_host"),
        )
        grads.append(api.jit(api.grad(f, argnums=(0, 1)))(W1, W2, X2))
    assert_same(*grads, **TOL)


def _scan_net(api, np_, policy, reverse=False):
    name = api.ad_checkpoint.checkpoint_name

    def body(c, w):
        h = name(np_.dot(w, c), "h")
        return name(np_.sin(h), "c"), np_.sum(np_.cos(h))

    def loss(ws, x):
        c, ys = api.lax.scan(body, x, ws, reverse=reverse)
        return np_.sum(api.jit(lambda c: name(np_.tanh(c) * 2, "t"))(c)) + np_.sum(ys)

    return api.checkpoint(loss, policy=policy(api.checkpoint_policies))


SCAN_POLICIES = [
    lambda p: None,
    lambda p: p.save_only_these_names("h"),
    lambda p: p.save_any_names_but_these("h"),
    lambda p: p.dots_saveable,
]
WS = RNG.standard_normal((3, 4, 4)).astype(np.float32) / 2


@pytest.mark.parametrize("policy", range(len(SCAN_POLICIES)))
def test_policies_inside_scan_and_jit(capsys, policy):
    """A policy picks what is saved inside the checkpoint's loops and calls too; the
    derivatives are unchanged, and the scanned-over arguments are saved as themselves."""
    reverse = policy == 1
    grads = [
        api.jit(api.grad(_scan_net(api, np_, SCAN_POLICIES[policy], reverse), argnums=(0, 1)))(
            WS, X
        )
        for api, np_ in (LIBS["xform"], LIBS["jax"])
    ]
    assert_same(*grads, rtol=1e-5, atol=1e-5)
    xform.ad_checkpoint.print_saved_residuals(_scan_net(xform, xnp, SCAN_POLICIES[policy]), WS, X)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "f32[3,4,4] from the argument ws"
    if policy:  # the named or dot values of each iteration, stacked
        assert any(line.startswith("f32[3,4] output of scan from") for line in lines)


def _layers_net(api, np_):
    @functools.partial(
        api.checkpoint, policy=api.checkpoint_policies.dots_with_no_batch_dims_saveable
    )
    def layer(x, w_b):
        w, b = w_b
        return np_.maximum(np_.dot(x, w) + b, 0.0), None

    def net(ws, bs, x):
        return np_.sum(api.lax.scan(layer, x, (ws, bs))[0])

    return net


def test_scan_over_layers_saves_as_jax(capsys):
    """The remat tutorial's scan over layers with a checkpointed body: same residuals."""
    for api, np_ in (LIBS["xform"], LIBS["jax"]):
        api.ad_checkpoint.print_saved_residuals(
            _layers_net(api, np_), WS[:2, :2, :2], WS[:2, 0, :2], X[:2]
        )
    lines = [
        _normalized(line).replace("closed_call", "scan")
        for line in capsys.readouterr().out.splitlines()
    ]
    assert lines[: len(lines) // 2] == lines[len(lines) // 2 :]
    assert lines[0] == "f32[2,2,2] from the argument ws"


def test_policy_errors():
    p = xform.checkpoint_policies
    with pytest.raises(ValueError, match="should not intersect"):
        p.save_and_offload_only_these_names(
            names_which_can_be_saved=["a"],
            names_which_can_be_offloaded=["a"],
            offload_src="device",
            offload_dst="pinned_host",
        )
    both = p.save_from_both_policies(
        p.dots_saveable, p.offload_dot_with_no_batch_dims("device", "pinned_host")
    )
    f = xform.checkpoint(lambda w, x: xnp.sum(xnp.sin(w @ x)), policy=both)
    with pytest.raises(ValueError, match="should be a boolean"):
        xform.grad(f)(W1, X)
    bad = xform.checkpoint(lambda x: xnp.sin(xnp.sin(x)), policy=lambda *_, **__: "yes")
    with pytest.raises(TypeError, match="checkpoint policy .* returned 'yes' for the primitive"):
        xform.grad(bad)(1.0)


# --------------------------------------------------------------------------- checkpoint args


def _static_args_run(api, np_):
    def g(x, n, *, scale):
        for _ in range(n):  # Python control flow on the static values
            x = np_.sin(x) * scale
        return x

    f = api.checkpoint(
        g, static_argnums=(1,), static_argnames=("scale",), prevent_cse=(True, False)
    )
    return (
        f(0.5, 3, scale=2.0),
        api.grad(f)(0.5, 3, scale=2.0),
        api.jit(api.grad(f), static_argnums=1, static_argnames="scale")(0.5, 2, scale=3.0),
    )


def test_checkpoint_static_argnums_and_argnames():
    assert_same(_static_args_run(xform, xnp), _static_args_run(jax, jnp), **TOL)
    with pytest.raises(TypeError, match="prevent_cse must be a bool or tuple of bools"):
        xform.checkpoint(lambda x: x, prevent_cse=1)


# --------------------------------------------------------------------------- custom rules


def _symbolic_jvp_run(api, np_, mod):
    seen = []

    @api.custom_jvp
    def f(x, y):
        return x * y

    def f_jvp(primals, tangents):
        seen.append(tuple(type(t) is mod.SymbolicZero for t in tangents))
        x, y = primals
        tx, ty = tangents
        out = np_.zeros_like(x) if type(tx) is mod.SymbolicZero else tx * y
        if type(ty) is not mod.SymbolicZero:
            out = out + x * ty
        return f(x, y), out

    f.defjvp(f_jvp, symbolic_zeros=True)
    values = (
        api.grad(f)(2.0, 3.0),
        api.grad(f, argnums=1)(2.0, 3.0),
        api.jit(api.grad(f))(2.0, 3.0),
        api.jvp(lambda x: f(x, 3.0), (2.0,), (1.0,))[1],
    )
    return _f32(values), seen


def test_custom_jvp_symbolic_zeros():
    got, got_seen = _symbolic_jvp_run(xform, xnp, xform.custom_derivatives)
    expected, expected_seen = _symbolic_jvp_run(jax, jnp, jax.custom_derivatives)
    assert_same(got, expected, check_weak_type=False)
    assert got_seen == expected_seen == [(False, True), (True, False), (False, True), (False, True)]


def _symbolic_vjp_run(api, mod):
    seen = []

    @api.custom_vjp
    def f(x, y):
        return x * y, x + y

    def fwd(x, y):
        seen.append(("fwd", type(x).__name__, x.perturbed, y.perturbed))
        x, y = mod.custom_vjp_primal_tree_values((x, y))
        return f(x, y), (x, y)

    def bwd(res, cts):
        seen.append(("bwd",) + tuple(type(c) is mod.SymbolicZero for c in cts))
        x, y = res
        ct_prod, _ = cts
        return (
            ct_prod * y if type(ct_prod) is not mod.SymbolicZero else None,
            mod.zero_from_primal(y, symbolic_zeros=True),
        )

    f.defvjp(fwd, bwd, symbolic_zeros=True)
    grads = (
        api.grad(lambda x: f(x, 3.0)[0])(2.0),
        api.grad(lambda x, y: f(x, y)[1], argnums=(0, 1))(2.0, 3.0),
    )
    return grads, seen


def test_custom_vjp_symbolic_zeros():
    got, got_seen = _symbolic_vjp_run(xform, xform.custom_derivatives)
    expected, expected_seen = _symbolic_vjp_run(jax, jax.custom_derivatives)
    assert_same(got, expected, check_weak_type=False)
    assert got_seen == expected_seen
    assert got_seen[:2] == [("fwd", "CustomVJPPrimal", True, False), ("bwd", False, True)]


def _nondiff_run(api):
    k = api.custom_jvp(lambda x, n: x * n, nondiff_argnames=("n",))
    k.defjvp(lambda n, primals, tangents: (k(primals[0], n), tangents[0] * n * 10))
    v = api.custom_vjp(lambda x, n: x * n, nondiff_argnames=("n",))
    v.defvjp(lambda x, n: (x * n, None), lambda n, _, ct: (ct * n * 100,))
    assert k.nondiff_argnums == v.nondiff_argnums == (1,)
    return (
        api.grad(k)(2.0, 3.0),
        api.grad(lambda x: k(x, n=3.0))(2.0),
        api.grad(v)(2.0, 3.0),
        api.grad(lambda x: v(x, n=3.0))(2.0),
    )


def test_nondiff_argnames():
    assert_same(_nondiff_run(xform), _nondiff_run(jax), check_weak_type=False)


def _custom_gradient_run(api, np_):
    @api.custom_gradient
    def f(x):
        return x**2, lambda g: (g * x,)

    @api.custom_gradient
    def g(x, y):
        return x * y, lambda ct: (ct * 10.0, ct * np_.sin(y))

    def outer(y):
        converted, consts = api.closure_convert(lambda x: np_.sin(x) * y, 1.0)
        return converted(2.0, *consts), len(consts)

    return (
        api.grad(f)(3.0),
        api.jit(api.grad(f))(3.0),
        api.grad(api.grad(f))(3.0),
        api.vmap(api.grad(f))(X),
        api.grad(g, argnums=(0, 1))(2.0, 3.0),
        outer(3.0),
        api.grad(lambda y: outer(y)[0])(3.0),
        api.value_and_grad(lambda y: outer(y)[1] * 1.0)(3.0),
    )


def test_custom_gradient_and_closure_convert():
    results = [_custom_gradient_run(xform, xnp), _custom_gradient_run(jax, jnp)]
    assert results[0][5][1] == 0  # a concrete closed-over value is not hoisted
    assert_same(*_f32(results), **TOL)
    converted, consts = xform.closure_convert(lambda x: x, 1.0)
    with pytest.raises(TypeError, match="The inputs to the closure produced by closure_convert"):
        converted((1.0, 2.0))


# --------------------------------------------------------------------------- vmap and map


def _vmap_run(api, np_):
    f = api.vmap(
        lambda x, y: (x * y, np_.sin(x), y * 2.0),
        in_axes=(0, None),
        out_axes=(None, 0, None),
        sum_match=True,
    )
    g = api.vmap(lambda x: x * 2, spmd_axis_name="data")
    return f(X, np.float32(2.0)), g(X)


def test_vmap_sum_match_and_spmd_axis_name():
    assert_same(_vmap_run(xform, xnp), _vmap_run(jax, jnp), check_weak_type=False, **TOL)
    with pytest.raises(ValueError, match="out_axes"):
        xform.vmap(lambda x: x, out_axes=None)(X)


@pytest.mark.parametrize("batch_size", [None, 2, 5, 7, 0])
def test_lax_map_batch_size(batch_size):
    xs = {"a": np.arange(5.0, dtype=np.float32), "b": np.ones((5, 2), np.float32)}
    results = []
    for api, np_ in (LIBS["xform"], LIBS["jax"]):

        def f(x, np_=np_):
            return np_.sin(x["a"]) * 2, np_.sum(x["b"] * x["a"])

        results.append(api.lax.map(f, xs, batch_size=batch_size))
    assert_same(*results, **TOL)
    if batch_size == 2:

        def loss(api, np_):
            return lambda x: np_.sum(api.lax.map(np_.sin, x, batch_size=2) ** 2)

        assert_same(
            xform.jit(xform.grad(loss(xform, xnp)))(xs["a"]), np.sin(2 * xs["a"]), **TOL
        )  # d/dx sin(x)^2


def test_lax_map_bad_batch_size():
    with pytest.raises(TypeError, match="lax.map: batch_size must be a non-negative int"):
        xform.lax.map(xnp.sin, X, batch_size=1.5)


# --------------------------------------------------------------------------- complex inputs
# The key cells of JAX's "Complex numbers and differentiation" (autodiff cookbook).

A = np.array([[5.0, 2.0 + 3j, 5j], [2.0 - 3j, 7.0, 1.0 + 7j], [-5j, 1.0 - 7j, 12.0]], np.complex64)
Z = np.array([1 + 2j, 3j], np.complex64)


def _complex_cells(api, np_):
    def f(z):
        x, y = np_.real(z), np_.imag(z)
        return x**2 + y**2

    def chol(a):
        lower = np_.linalg.cholesky(a)
        return np_.sum((lower - np_.sin(lower)) ** 2)

    z = 3.0 + 4j
    return [
        api.grad(f)(z),
        api.grad(lambda z: np_.abs(z) ** 2)(z),
        api.grad(np_.abs)(z),
        api.grad(np_.sin, holomorphic=True)(z),
        api.grad(lambda z: np_.conjugate(z) * z, holomorphic=True)(z),
        api.grad(chol, holomorphic=True)(A),
        api.jacfwd(np_.sin, holomorphic=True)(Z),
        api.jacrev(np_.sin, holomorphic=True)(Z),
        api.jacrev(lambda z: np_.abs(z) ** 2)(Z),
        api.grad(lambda z: np_.sum(np_.abs(z) ** 2))(Z),
        api.grad(lambda z: np_.real(z * np_.conj(z) + np_.sin(z)))(z),
        api.grad(np_.angle)(z),
        api.grad(lambda x: np_.abs(x + 2j * x))(1.0),
        api.vjp(np_.sin, z)[1](1.0 + 0j),
    ]


def test_complex_differentiation_matches_jax():
    got = _complex_cells(xform, xnp)
    expected = jax.jit(lambda: _complex_cells(jax, jnp))()  # one compile: JAX is the oracle
    for i, (g, e) in enumerate(zip(got, expected, strict=True)):
        assert_same(g, e, rtol=2e-6, atol=2e-6, what=f"cell {i}")


def test_complex_output_needs_holomorphic():
    with pytest.raises(TypeError, match="holomorphic=True"):
        xform.grad(xnp.sin)(1.0 + 1j)
    with pytest.raises(TypeError, match="holomorphic=True requires complex inputs"):
        xform.grad(xnp.sin, holomorphic=True)(1.0)
