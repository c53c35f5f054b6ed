"""checkpoint / remat: values and derivatives against jax.checkpoint (eager, under jit, nested,
vmapped, in a scan body), what each policy saves and recomputes, static arguments, and the
optimization barrier in the lowered program."""

import functools
import re

import jax
import jax.ad_checkpoint
import jax.extend
import jax.numpy as jnp
import numpy as np
import pytest

import xform
import xform.ad_checkpoint
import xform.numpy as xnp
from tests.harness import assert_same, check_against_jax
from xform import core
from xform.primitives.remat import remat_p
from xform.test_util import check_grads

LIBS = {"xform": (xform, xnp), "jax": (jax, jnp)}
RNG = np.random.default_rng(0)
W = RNG.standard_normal((4, 3)).astype(np.float32)
X = RNG.standard_normal(3).astype(np.float32)
XS = RNG.standard_normal((5, 3)).astype(np.float32)
M = RNG.standard_normal((4, 4)).astype(np.float32) / 2
TOL = {"rtol": 2e-5, "atol": 2e-6}


def both(make):
    """``make(api, np_lib)`` built for xform and for JAX."""
    return make(*LIBS["xform"]), make(*LIBS["jax"])


def make_mlp(api, np_, **kw):
    @functools.partial(api.checkpoint, **kw)
    def layer(w, x):
        return np_.sin(np_.tanh(w @ x) * 2.0)

    def f(w, x):
        return np_.sum(layer(w, x) ** 2)

    return f


def make_tree(api, np_):
    @api.checkpoint
    def g(params, x, *, scale):
        h = np_.sin(params["w"] @ x) + params["b"]
        return {"h": h * scale, "pair": (np_.cos(h).sum(), x)}

    def f(params, x):
        out = g(params, x, scale=3.0)
        return out["h"].sum() + out["pair"][0] * out["pair"][1].sum()

    return f


MLP, MLP_JAX = both(make_mlp)
TREE, TREE_JAX = both(make_tree)
PARAMS = {"w": W, "b": np.float32(0.5)}


# --------------------------------------------------------------------------- values


def test_values_eager_and_jit():
    check_against_jax(MLP, MLP_JAX, W, X, **TOL)
    check_against_jax(TREE, TREE_JAX, PARAMS, X, **TOL)
    sin2 = both(lambda api, np_: api.remat(lambda x: np_.sin(np_.sin(x))))
    check_against_jax(*sin2, np.float32(0.7), **TOL)


def test_pytrees_in_and_out():
    def make(api, np_):
        return api.checkpoint(lambda d, x: {"a": (d["u"] * x, np_.cos(x)), "b": d["v"]})

    f, f_jax = both(make)
    d = {"u": X, "v": np.int32(3)}
    assert_same(f(d, X), f_jax(d, X), **TOL)


def test_jvp():
    t = np.ones_like(X)
    got = xform.jvp(functools.partial(MLP, W), (X,), (t,))
    want = jax.jvp(functools.partial(MLP_JAX, W), (X,), (t,))
    assert_same(got, want, **TOL)


# --------------------------------------------------------------------------- reverse mode


GRAD = xform.grad(MLP, argnums=(0, 1))
GRAD_JAX = jax.grad(MLP_JAX, argnums=(0, 1))
JIT_GRAD = xform.jit(GRAD)


def test_grad_eager_jit_grad_and_grad_jit():
    want = GRAD_JAX(W, X)
    assert_same(GRAD(W, X), want, **TOL)
    assert_same(JIT_GRAD(W, X), want, **TOL)
    assert_same(xform.grad(xform.jit(MLP), argnums=(0, 1))(W, X), want, **TOL)
    assert_same(xform.grad(TREE)(PARAMS, X), jax.grad(TREE_JAX)(PARAMS, X), **TOL)


def test_grad_of_sin_sin_recomputes_sin_in_the_backward_pass():
    f = xform.checkpoint(lambda x: xnp.sin(xnp.sin(x)))
    x = np.float32(0.3)
    assert_same(xform.grad(f)(x), jax.grad(jax.checkpoint(lambda x: jnp.sin(jnp.sin(x))))(x), **TOL)
    jaxpr = xform.make_jaxpr(xform.grad(f))(x).jaxpr
    (eqn,) = [e for e in jaxpr.eqns if e.primitive is remat_p]
    assert eqn.params["differentiated"]
    assert "sin" in _prim_names(eqn.params["jaxpr"].jaxpr)


def test_second_order_and_check_grads(x64):
    def g(x, y):
        return xnp.sin(x * y) * xnp.exp(xnp.cos(x))

    f = xform.checkpoint(g)
    x, y = 0.4, 1.3
    hess = xform.hessian(f, argnums=(0, 1))
    assert_same(hess(x, y), xform.hessian(g, argnums=(0, 1))(x, y), rtol=1e-14)
    assert_same(xform.jit(hess)(x, y), xform.hessian(g, argnums=(0, 1))(x, y), rtol=1e-14)
    check_grads(f, (x, y), order=2)


def test_closure_over_an_outer_grad_variable():
    def make(api, np_):
        def outer(y):
            return api.checkpoint(lambda x: np_.sum(np_.sin(x * y)))(X)

        return api.grad(outer)

    f, f_jax = both(make)
    assert_same(f(np.float32(1.5)), f_jax(np.float32(1.5)), **TOL)


def test_integer_operands_and_outputs():
    def make(api, np_):
        g = api.checkpoint(lambda x, n: (np_.sin(x) * n, n + 1))

        def f(x, n):
            y, m = g(x, n)
            return np_.sum(y) * m

        return api.grad(f)

    f, f_jax = both(make)
    assert_same(f(X, np.int32(3)), f_jax(X, np.int32(3)), **TOL)


# --------------------------------------------------------------------------- policies


def _prim_names(jaxpr):
    """The primitive names of ``jaxpr``'s equations, sub-jaxprs included."""
    names = []
    for eqn in jaxpr.eqns:
        names.append(eqn.primitive.name)
        for sub in core.subjaxprs(eqn.params):
            names.extend(_prim_names(sub))
    return names


def _jax_prim_names(jaxpr):
    names = []
    for eqn in jaxpr.eqns:
        names.append(eqn.primitive.name)
        for sub in jax.extend.core.jaxprs_in_params(eqn.params):
            names.extend(_jax_prim_names(sub))
    return names


def _recomputed(names_of, jaxpr, remat_name):
    """Primitive names inside the backward pass's checkpoint bodies."""
    names = []
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == remat_name:
            names.extend(names_of(eqn.params["jaxpr"]))
    return names


POLICY_NAMES = [
    "nothing_saveable",
    "everything_saveable",
    "dots_saveable",
    "checkpoint_dots",
    "dots_with_no_batch_dims_saveable",
    None,
]


def _policy_fn(w, x, api, np_, policy):
    pol = None if policy is None else getattr(api.checkpoint_policies, policy)

    @functools.partial(api.checkpoint, policy=pol)
    def f(w, x):
        h = np_.sin(w @ x)
        return np_.sum(np_.sin(w.T @ h))

    return f(w, x)


@pytest.mark.parametrize("policy", POLICY_NAMES)
def test_policy_recomputes_what_jax_recomputes(policy):
    f = xform.grad(functools.partial(_policy_fn, api=xform, np_=xnp, policy=policy))
    f_jax = jax.grad(functools.partial(_policy_fn, api=jax, np_=jnp, policy=policy))
    assert_same(f(W, X), f_jax(W, X), **TOL)
    got = _recomputed(lambda j: _prim_names(j.jaxpr), xform.make_jaxpr(f)(W, X).jaxpr, "remat2")
    want = _recomputed(_jax_prim_names, jax.make_jaxpr(f_jax)(W, X).jaxpr, "remat2")
    for prim in ("sin", "cos", "dot_general"):
        assert got.count(prim) == want.count(prim), (prim, got, want)
    counts = {p: got.count(p) for p in ("sin", "dot_general")}
    if policy in ("nothing_saveable", None):
        # both forward dots and the inner sin again, besides the three backward dots
        assert counts == {"sin": 1, "dot_general": 5}
    elif policy == "everything_saveable":
        assert counts == {"sin": 0, "dot_general": 3}
    else:  # dots saved: only the elementwise values are recomputed
        assert counts == {"sin": 1, "dot_general": 3}


def test_dots_with_batch_dims_are_recomputed():
    a = RNG.standard_normal((2, 3, 4)).astype(np.float32)

    def make(api, np_, policy):
        pol = getattr(api.checkpoint_policies, policy)
        return api.grad(
            api.checkpoint(
                lambda a: np_.sum(np_.sin(np_.einsum("bij,bjk->bik", a, a.transpose(0, 2, 1)))),
                policy=pol,
            )
        )

    for policy, recomputed_dots in [("dots_saveable", 0), ("dots_with_no_batch_dims_saveable", 1)]:
        f = make(xform, xnp, policy)
        assert_same(f(a), make(jax, jnp, policy)(a), **TOL)
        jaxpr = xform.make_jaxpr(f)(a).jaxpr
        body_dots = _recomputed(lambda j: _prim_names(j.jaxpr), jaxpr, "remat2")
        assert body_dots.count("dot_general") == 2 + recomputed_dots, policy


def test_custom_policy_sees_primitive_and_avals():
    seen = []

    def policy(prim, *avals, **params):
        seen.append((prim.name, tuple(a.shape for a in avals)))
        return prim.name == "tanh"

    f = xform.grad(xform.checkpoint(lambda x: xnp.sum(xnp.sin(xnp.tanh(x))), policy=policy))
    assert_same(f(X), jax.grad(lambda x: jnp.sum(jnp.sin(jnp.tanh(x))))(X), **TOL)
    assert ("tanh", ((3,),)) in seen
    body = _recomputed(lambda j: _prim_names(j.jaxpr), xform.make_jaxpr(f)(X).jaxpr, "remat2")
    assert "tanh" not in body


# --------------------------------------------------------------------------- static_argnums


def test_static_argnums():
    def make(api, np_):
        def g(x, n, scale):
            for _ in range(n):  # Python control flow on a static argument
                x = np_.sin(x) * scale
            return x

        return api.checkpoint(g, static_argnums=(1,)), api.checkpoint(g, static_argnums=-2)

    (f, f_neg), (f_jax, _) = both(make)
    assert_same(f(X, 3, 2.0), f_jax(X, 3, 2.0), **TOL)
    assert_same(f_neg(X, 3, 2.0), f_jax(X, 3, 2.0), **TOL)
    grad = xform.grad(lambda x, s: xnp.sum(f(x, 3, s)), argnums=(0, 1))
    grad_jax = jax.grad(lambda x, s: jnp.sum(f_jax(x, 3, s)), argnums=(0, 1))
    # (xform's grad of a Python-float argument is not weakly typed, with or without
    # checkpoint; JAX's is.)
    assert_same(grad(X, 2.0), grad_jax(X, 2.0), **TOL, check_weak_type=False)
    assert_same(xform.jit(grad)(X, 2.0), grad_jax(X, 2.0), **TOL, check_weak_type=False)
    unhashable = xform.checkpoint(lambda x, ns: x * len(ns), static_argnums=1)
    assert_same(unhashable(X, [1, 2]), X * 2)


def test_bad_static_argnums():
    with pytest.raises(TypeError, match="static_argnums.*int or a tuple of ints.*'1'"):
        xform.checkpoint(xnp.sin, static_argnums="1")
    with pytest.raises(ValueError, match="static_argnums.*got \\(2,\\).*`len\\(args\\)` = 1"):
        xform.checkpoint(xnp.sin, static_argnums=2)(X)


def test_traced_python_control_flow_is_a_concretization_error():
    f = xform.checkpoint(lambda x: x if x > 0 else -x)
    with pytest.raises(xform.errors.ConcretizationTypeError, match="checkpoint"):
        f(np.float32(1.0))


# --------------------------------------------------------------------------- nesting


def test_nested_checkpoints():
    def make(api, np_):
        inner = api.checkpoint(lambda x: np_.sin(np_.sin(x)))

        @functools.partial(api.checkpoint, policy=api.checkpoint_policies.dots_saveable)
        def outer(w, x):
            return np_.cos(inner(w @ x)) * inner(x).sum()

        return api.grad(lambda w, x: np_.sum(outer(w, x)), argnums=(0, 1))

    f, f_jax = both(make)
    want = f_jax(W, X)
    assert_same(f(W, X), want, **TOL)
    assert_same(xform.jit(f)(W, X), want, **TOL)


def test_checkpoint_of_jit_and_jit_of_checkpoint():
    def make(api, np_):
        def g(x):
            return np_.sin(np_.exp(x))

        g = api.jit(g)
        f = api.checkpoint(lambda x: np_.sum(g(x) * x))
        return api.grad(f), api.grad(api.jit(f))

    (f, fj), (f_jax, _) = both(make)
    assert_same(f(X), f_jax(X), **TOL)
    assert_same(fj(X), f_jax(X), **TOL)


def test_vmap_of_grad_and_grad_of_vmap():
    def make(api, np_):
        g = api.checkpoint(
            lambda w, x: np_.sum(np_.sin(w @ x) ** 2), policy=api.checkpoint_policies.dots_saveable
        )
        return (
            api.vmap(api.grad(g), in_axes=(None, 0)),
            api.grad(lambda w: api.vmap(g, in_axes=(None, 0))(w, XS).sum()),
        )

    (vg, gv), (vg_jax, gv_jax) = both(make)
    assert_same(vg(W, XS), vg_jax(W, XS), **TOL)
    assert_same(xform.jit(vg)(W, XS), vg_jax(W, XS), **TOL)
    assert_same(gv(W), gv_jax(W), **TOL)


def test_grad_of_scan_with_a_checkpointed_step():
    def make(api, np_):
        @api.checkpoint
        def step(h, x):
            h = np_.tanh(M @ np_.sin(h) + x)
            return h, np_.cos(h).sum()

        def f(h0, xs):
            h, ys = api.lax.scan(step, h0, xs)
            return np_.sum(h) + np_.sum(ys)

        return api.grad(f, argnums=(0, 1))

    f, f_jax = both(make)
    h0, xs = np.ones(4, np.float32), RNG.standard_normal((6, 4)).astype(np.float32)
    want = f_jax(h0, xs)
    assert_same(f(h0, xs), want, **TOL)
    assert_same(xform.jit(f)(h0, xs), want, **TOL)
    assert "remat2" in _prim_names(xform.make_jaxpr(f)(h0, xs).jaxpr)


# --------------------------------------------------------------------------- lowering


def test_lowered_backward_pass_has_an_optimization_barrier():
    x = np.float32(0.3)
    for prevent_cse in (True, False):
        f = xform.checkpoint(lambda x: xnp.sin(xnp.sin(x)), prevent_cse=prevent_cse)
        text = xform.jit(xform.grad(f)).lower(x).as_text()
        assert ("stablehlo.optimization_barrier" in text) == prevent_cse
        assert text.count("stablehlo.sine") == 1  # only the recomputation: the primal is dead
        assert_same(xform.jit(xform.grad(f))(x), jnp.cos(jnp.sin(x)) * jnp.cos(x), **TOL)
    # Not differentiated: nothing to recompute, so no barrier (as in JAX).
    text = xform.jit(xform.checkpoint(xnp.sin)).lower(x).as_text()
    assert "optimization_barrier" not in text and "stablehlo.sine" in text


def test_bad_operand_types_name_the_construct_and_both_types():
    jaxpr = xform.make_jaxpr(xform.checkpoint(xnp.sin))(X).jaxpr.eqns[0].params["jaxpr"]
    with pytest.raises(
        TypeError,
        match=r"checkpoint: called with arguments of types "
        r"\(i32\[3\]\) but its jaxpr takes \(f32\[3\]\)",
    ):
        xform.make_jaxpr(
            lambda a: remat_p.bind(
                a, jaxpr=jaxpr, prevent_cse=True, differentiated=False, policy=None
            )
        )(np.zeros(3, np.int32))


def test_saved_values_are_rounded_to_their_dtype_as_jax():
    """Residuals the forward pass also reads go through reduce_precision, as in JAX (XLA's
    excess precision must not make forward and backward disagree): the same count in the
    jaxpr and the same temporary memory in the compiled program."""

    def make(lib, np_):
        layer = lib.checkpoint(
            lambda w, h: np_.tanh(h @ w), policy=lib.checkpoint_policies.everything_saveable
        )
        return lib.grad(lambda w, x: np_.sum(layer(w, layer(w, x))))

    w = np.full((64, 64), 0.1, np.float32)
    x = np.ones((32, 64), np.float32)
    xg, jg = make(xform, xform.numpy), make(jax, jax.numpy)
    assert (
        str(xform.make_jaxpr(xg)(w, x)).count("reduce_precision")
        == str(jax.make_jaxpr(jg)(w, x)).count("reduce_precision")
        == 2
    )
    memory = [
        lib.jit(g).lower(w, x).compile().memory_analysis().temp_size_in_bytes
        for lib, g in ((xform, xg), (jax, jg))
    ]
    assert memory[0] == memory[1]
    np.testing.assert_allclose(xg(w, x), jg(w, x), rtol=1e-5, atol=1e-5)


# --------------------------------------------------------------------------- saved residuals


def _chain(api, np_):
    def f(x):
        y = np_.sin(x)
        z = np_.cos(y) * x
        return np_.sum(z**2)

    return f


def _ratio(api, np_):
    def f(x):
        return np_.sum(np_.log(np_.abs(x) + 1.0) / (x * x + 2.0))

    return f


def _named(api, np_):
    def f(x):
        h = api.ad_checkpoint.checkpoint_name(np_.tanh(x * 3.0), "h")
        return np_.sum(np_.exp(h) * x)

    return f


RESIDUAL_CASES = {
    "plain": (_chain, None),
    "plain_abs": (_ratio, None),
    "everything": (_ratio, lambda p: p.everything_saveable),
    "nothing": (_chain, lambda p: p.nothing_saveable),
    "default": (_chain, "default"),
    "names": (_named, lambda p: p.save_only_these_names("h")),
    "jit": (_chain, "jit"),  # the input residual handed on, as JAX's; the jit's own: no source
    "everything_named": (_named, lambda p: p.everything_saveable),
}


@pytest.mark.parametrize("case", sorted(RESIDUAL_CASES))
def test_print_saved_residuals_lines_equal_jax(capsys, case):
    """Residuals that derivative rules make inside a checkpoint are attributed to the user's
    line and column where the primal operation was called, as JAX prints them."""
    make, policy = RESIDUAL_CASES[case]
    lines = []
    for api, np_ in (LIBS["xform"], LIBS["jax"]):
        f = make(api, np_)
        if policy in ("default", "jit"):
            f = api.checkpoint(f) if policy == "default" else api.jit(f)
        elif policy is not None:
            f = api.checkpoint(f, policy=policy(api.checkpoint_policies))
        api.ad_checkpoint.print_saved_residuals(f, X)
        lines.append(capsys.readouterr().out.splitlines())
    assert lines[0] == lines[1]
    if policy != "jit" and len(lines[0]) > 1:
        assert re.search(r"test_remat\.py:\d+:\d+ \(_\w+\.<locals>\.f\)$", lines[0][-1])


@pytest.mark.parametrize(
    "policy",
    [None, "dots_saveable", "dots_with_no_batch_dims_saveable", ("save_only_these_names", "a")],
)
def test_checkpoint_prints_as_jax(policy):
    """remat2 equations with JAX's policy objects, under make_jaxpr and grad."""

    def make(api, np_):
        if policy is None:
            chosen = None
        elif isinstance(policy, tuple):
            chosen = getattr(api.checkpoint_policies, policy[0])(*policy[1:])
        else:
            chosen = getattr(api.checkpoint_policies, policy)
        return api.checkpoint(lambda x: np_.sin(np_.sin(x)), policy=chosen)

    for wrap in (lambda api, f: f, lambda api, f: api.grad(f)):
        got = xform.make_jaxpr(wrap(xform, make(xform, xnp)))(1.0)
        expected = jax.make_jaxpr(wrap(jax, make(jax, jnp)))(1.0)
        assert str(got) == str(expected)
