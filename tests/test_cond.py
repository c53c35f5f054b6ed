"""lax.cond and lax.switch: values, pytrees, closures, jvp/grad, vmap and errors, against JAX."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import xform
import xform.numpy as xnp
from tests.harness import assert_same, check_against_jax, check_vmap
from xform import core, lax
from xform.errors import ConcretizationTypeError
from xform.interpret import dce, partial_eval
from xform.test_util import check_grads

X = np.float32(0.7)
V = np.linspace(-1.0, 1.5, 3, dtype=np.float32)
LIBS = {"xform": (xnp, lax), "jax": (jnp, jax.lax)}


def both(make):
    """``make(np_lib, lax_lib)`` built for xform and for JAX."""
    return make(*LIBS["xform"]), make(*LIBS["jax"])


def make_cond(np_, lax_):
    def f(p, x):
        return lax_.cond(p, lambda x: np_.sin(x) * 2.0, lambda x: np_.cos(x) - x, x)

    return f


def make_switch(np_, lax_):
    branches = [lambda x: x * 3.0, lambda x: x**2, np_.sin, lambda x: np_.exp(x) * x]

    def f(i, x):
        return lax_.switch(i, branches, x)

    return f


def make_pytree_cond(np_, lax_):
    def true_fun(d, y):
        return {"s": np_.sin(d["a"]) * y, "t": (d["b"] * 2.0, d["a"] + y)}

    def false_fun(d, y):
        return {"s": d["a"] * y, "t": (np_.cos(d["b"]), y * 1.0 + 0.0 * d["a"])}

    def f(p, a, b, y):
        return lax_.cond(p, true_fun, false_fun, {"a": a, "b": b}, y)

    return f


COND, COND_JAX = both(make_cond)
SWITCH, SWITCH_JAX = both(make_switch)
TREE, TREE_JAX = both(make_pytree_cond)
COND_JIT = xform.jit(COND)
SWITCH_JIT = xform.jit(SWITCH)


# --------------------------------------------------------------------------- values


@pytest.mark.parametrize("pred", [True, False])
def test_cond_values(pred):
    check_against_jax(COND, COND_JAX, pred, X)
    check_against_jax(COND, COND_JAX, pred, V)
    assert_same(COND_JIT(pred, V), COND_JAX(pred, V))


@pytest.mark.parametrize("pred", [0, 3, -1.5, 0.0, np.float32(0.25), np.int8(0)])
def test_numeric_predicates_mean_nonzero(pred):
    check_against_jax(COND, COND_JAX, pred, X, jit=False)
    assert_same(COND_JIT(pred, X), COND_JAX(pred, X))


@pytest.mark.parametrize("index", [-3, 0, 1, 2, 3, 7])
def test_switch_values_with_clamped_index(index):
    check_against_jax(SWITCH, SWITCH_JAX, index, V, jit=False)
    assert_same(SWITCH_JIT(index, V), SWITCH_JAX(index, V))
    assert_same(SWITCH_JIT(np.int8(index), X), SWITCH_JAX(np.int8(index), X))


def test_switch_with_one_branch_calls_it():
    assert_same(lax.switch(5, [lambda x: x * 2.0], X), jax.lax.switch(5, [lambda x: x * 2.0], X))


def test_lowered_to_one_case_with_a_region_per_branch():
    text = COND_JIT.lower(True, V).as_text()
    assert "stablehlo.case" in text or "stablehlo.if" in text
    assert text.count("stablehlo.return") == 2
    assert "stablehlo.sine" in text and "stablehlo.cosine" in text  # both branches, not one
    text = SWITCH_JIT.lower(1, V).as_text()
    assert "stablehlo.case" in text and text.count("stablehlo.return") == 4


def test_staged_as_one_equation_with_both_branches():
    closed = xform.make_jaxpr(COND)(True, X)
    (eqn,) = [e for e in closed.eqns if e.primitive is lax.cond_p]
    assert len(eqn.params["branches"]) == 2
    assert all(b.consts == [] for b in eqn.params["branches"])
    assert "cond[" in str(closed) and "sin" in str(closed) and "cos" in str(closed)


def test_pytrees_of_operands_and_outputs():
    a, b, y = V, V[::-1] * 2.0, np.float32(1.5)
    for pred in (True, False):
        check_against_jax(TREE, TREE_JAX, pred, a, b, y)


def test_operand_keyword_and_no_operands():
    def f(lax_):
        return lambda p, x: (
            lax_.cond(p, lambda v: v + 1.0, lambda v: v - 1.0, operand=x),
            lax_.cond(p, lambda: 1.0, lambda: 2.0),
        )

    check_against_jax(f(lax), f(jax.lax), True, X)
    check_against_jax(f(lax), f(jax.lax), False, X)


def test_legacy_five_argument_form():
    def f(np_, lax_):
        return lambda p, x, y: lax_.cond(p, x, np_.sin, y, lambda v: v * 3.0)

    for pred in (True, False):
        check_against_jax(f(xnp, lax), f(jnp, jax.lax), pred, X, np.float32(2.0))


def test_passthrough_outputs_keep_their_types():
    def f(lax_):
        return lambda p, x, n: lax_.cond(
            p, lambda x, n: (x, n, 1.0), lambda x, n: (x * 2.0, n + 1, 2.0), x, n
        )

    for pred in (True, False):
        check_against_jax(f(lax), f(jax.lax), pred, X, np.int32(4))
        check_against_jax(f(lax), f(jax.lax), pred, 1.0, 3)


def test_consts_and_closures_inside_branches():
    table = np.arange(3, dtype=np.float32)

    def f(np_, lax_):
        def g(p, x, y):
            return lax_.cond(p, lambda v: v * table + y, lambda v: np_.sum(table) - v * y, x)

        return g

    for pred in (True, False):
        check_against_jax(f(xnp, lax), f(jnp, jax.lax), pred, V, np.float32(0.5))


def test_nested_conds_and_switch_inside_jit():
    def f(np_, lax_):
        def g(p, i, x):
            inner = lambda v: lax_.switch(i, [np_.sin, np_.cos, lambda w: w * w], v)  # noqa: E731
            return lax_.cond(p, inner, lambda v: lax_.cond(v.sum() > 0, np_.exp, np_.tanh, v), x)

        return g

    for p in (True, False):
        for i in (0, 2):
            check_against_jax(f(xnp, lax), f(jnp, jax.lax), p, i, V)


# --------------------------------------------------------------------------- differentiation


@pytest.mark.parametrize("pred", [True, False])
def test_grad_and_jvp_against_jax(pred):
    expected = jax.grad(COND_JAX, 1)(pred, X)
    assert_same(xform.grad(COND, 1)(pred, X), expected)
    assert_same(xform.grad(COND_JIT, 1)(pred, X), expected)
    assert_same(xform.jit(xform.grad(COND, 1))(pred, X), expected)
    t = np.ones_like(V)
    got = xform.jvp(lambda x: COND(pred, x), (V,), (t,))
    assert_same(got, jax.jvp(lambda x: COND_JAX(pred, x), (V,), (t,)))


@pytest.mark.parametrize("index", [0, 1, 2, 3])
def test_grad_of_switch_with_different_residuals_per_branch(index):
    def loss(f):
        return lambda i, x: f(i, x).sum()

    expected = jax.grad(loss(SWITCH_JAX), 1)(index, V)
    assert_same(xform.grad(loss(SWITCH), 1)(index, V), expected, rtol=1e-6)
    assert_same(xform.jit(xform.grad(loss(SWITCH), 1))(index, V), expected, rtol=1e-6)
    assert_same(xform.grad(loss(SWITCH_JIT), 1)(index, V), expected, rtol=1e-6)


def test_grad_recomputes_nothing_and_uses_no_primal_operands():
    """The linear program reads residuals from the forward cond, not the primal input."""
    closed = xform.make_jaxpr(xform.grad(COND, 1))(True, X)
    conds = [e for e in closed.eqns if e.primitive is lax.cond_p]
    assert len(conds) == 2  # the forward (known) cond and the transposed (linear) one
    forward, backward = conds
    assert not any(
        e.primitive.name in ("sin", "cos") for b in backward.params["branches"] for e in b.eqns
    )
    assert closed.jaxpr.invars[1] not in backward.invars


def test_grad_with_pytrees_ints_and_branches_ignoring_operands():
    def loss(f):
        def g(p, a, b, y):
            out = f(p, a, b, y)
            return out["s"].sum() + out["t"][0].sum() * 3.0 + out["t"][1].sum()

        return g

    a, b, y = V, V[::-1] * 2.0, np.float32(1.5)
    for pred in (True, False):
        expected = jax.grad(loss(TREE_JAX), (1, 2, 3))(pred, a, b, y)
        assert_same(xform.grad(loss(TREE), (1, 2, 3))(pred, a, b, y), expected, rtol=1e-6)

    def h(lax_):  # an integer operand, and a branch whose output ignores the float one
        def g(p, x, n):
            out, m = lax_.cond(
                p,
                lambda x, n: (x * n.astype(np.float32), n),
                lambda x, n: (n.astype(np.float32) + 1.0, n + 1),
                x,
                n,
            )
            return out + m.astype(np.float32)

        return g

    for pred in (True, False):
        expected = jax.grad(h(jax.lax), 1)(pred, X, np.int32(3))
        assert_same(xform.grad(h(lax), 1)(pred, X, np.int32(3)), expected)
        assert_same(xform.jit(xform.grad(h(lax), 1))(pred, X, np.int32(3)), expected)


def test_closure_over_an_outer_grad_tracer():
    def f(np_, lax_):
        def g(y):
            def inner(x):
                return lax_.cond(x.sum() > 0, lambda v: np_.sin(v * y), lambda v: v + y * y, x)

            return inner(V).sum() + inner(-V * 4.0).sum()

        return g

    xf, jf = f(xnp, lax), f(jnp, jax.lax)
    assert_same(xform.grad(xf)(X), jax.grad(jf)(X), rtol=1e-6)
    assert_same(xform.grad(xform.jit(xf))(X), jax.grad(jf)(X), rtol=1e-6)

    def both_args(np_, lax_):  # differentiate the closed-over value and the operand at once
        def g(y, x):
            return lax_.cond(y > 0.5, lambda v: np_.sin(v) * y, lambda v: v * v, x).sum()

        return g

    xf, jf = both(both_args)
    for y in (np.float32(0.7), np.float32(0.2)):
        assert_same(xform.grad(xf, (0, 1))(y, V), jax.grad(jf, (0, 1))(y, V), rtol=1e-6)


def test_second_derivatives_against_jax():
    for pred in (True, False):
        expected = jax.grad(jax.grad(COND_JAX, 1), 1)(pred, X)
        assert_same(xform.grad(xform.grad(COND, 1), 1)(pred, X), expected, rtol=1e-6)
        assert_same(xform.jit(xform.grad(xform.grad(COND, 1), 1))(pred, X), expected, rtol=1e-6)


@pytest.mark.parametrize("index", [1, 3])
def test_hessians_against_jax(index):
    expected = jax.hessian(lambda x: SWITCH_JAX(index, x).sum())(V)
    assert_same(xform.hessian(lambda x: SWITCH(index, x).sum())(V), expected, rtol=1e-5)
    assert_same(
        xform.jacrev(lambda x: SWITCH(index, x))(V),
        jax.jacrev(lambda x: SWITCH_JAX(index, x))(V),
        rtol=1e-6,
    )


@pytest.mark.parametrize("pred", [True, False])
def test_check_grads_cond_order_2(x64, pred):
    x = np.linspace(-1.0, 1.0, 3)
    check_grads(lambda x: COND(pred, x), (x,), order=2, modes=("fwd", "rev"))
    check_grads(lambda x: TREE(pred, x, x * 2.0, x[0]), (x,), order=2, modes=("fwd", "rev"))


@pytest.mark.parametrize("index", [0, 1, 3])
def test_check_grads_switch_order_2(x64, index):
    check_grads(
        lambda x: SWITCH(index, x), (np.linspace(-1.0, 1.0, 3),), order=2, modes=("fwd", "rev")
    )


def test_partial_eval_with_an_unknown_index_stages_the_whole_cond():
    closed = xform.make_jaxpr(COND)(True, X)
    known, _, unknown, out_unknowns, num_res = partial_eval.partial_eval_jaxpr(
        closed, (True, False), "test"
    )
    assert out_unknowns == [True]
    assert any(e.primitive is lax.cond_p for e in unknown.eqns)
    assert not any(e.primitive is lax.cond_p for e in known.eqns)
    residuals = core.eval_jaxpr(known.jaxpr, [], X)[-num_res:] if num_res else []
    for pred in (True, False):
        (out,) = core.eval_jaxpr(unknown.jaxpr, [], *residuals, np.bool_(pred))
        assert_same(out, COND_JAX(pred, X))


# --------------------------------------------------------------------------- vmap


def test_vmap_with_mapped_predicate_is_a_select():
    preds = np.array([True, False, True])
    check_vmap(COND, COND_JAX, (preds, V))
    check_vmap(COND, COND_JAX, (preds, X), in_axes=(0, None))
    closed = xform.make_jaxpr(xform.vmap(COND))(preds, V)
    assert "select_n" in str(closed)


def test_vmap_with_unmapped_predicate_keeps_the_cond():
    check_vmap(COND, COND_JAX, (True, V), in_axes=(None, 0))
    check_vmap(COND, COND_JAX, (False, V), in_axes=(None, 0))
    closed = xform.make_jaxpr(xform.vmap(COND, (None, 0)))(True, V)
    assert any(e.primitive is lax.cond_p for e in closed.eqns)

    def f(lax_):  # one branch maps its output, the other returns a constant
        return lambda p, x: lax_.cond(p, lambda v: (v * 2.0, 1.0), lambda v: (3.0, v), x)

    for pred in (True, False):
        check_vmap(f(lax), f(jax.lax), (pred, V), in_axes=(None, 0), loop=False)


def test_vmap_of_switch_and_pytrees():
    indices = np.array([3, 0, 2], np.int32)
    check_vmap(SWITCH, SWITCH_JAX, (indices, V))
    check_vmap(SWITCH, SWITCH_JAX, (np.int32(2), V), in_axes=(None, 0))
    preds = np.array([True, False, True])
    m = np.stack([V, V * 2.0, V + 1.0])
    check_vmap(TREE, TREE_JAX, (preds, m, m * 0.5, V), loop=False)
    check_vmap(
        TREE, TREE_JAX, (True, m, V, np.float32(2.0)), in_axes=(None, 0, None, None), loop=False
    )


def test_vmap_of_grad_and_grad_of_vmap():
    preds = np.array([True, False, True])
    expected = jax.vmap(jax.grad(COND_JAX, 1))(preds, V)
    assert_same(xform.vmap(xform.grad(COND, 1))(preds, V), expected)
    assert_same(xform.jit(xform.vmap(xform.grad(COND, 1)))(preds, V), expected)
    expected = jax.vmap(jax.grad(COND_JAX, 1), (None, 0))(True, V)
    assert_same(xform.vmap(xform.grad(COND, 1), (None, 0))(True, V), expected)

    def summed(f, vmap):
        return lambda x: vmap(f)(preds, x).sum()

    assert_same(xform.grad(summed(COND, xform.vmap))(V), jax.grad(summed(COND_JAX, jax.vmap))(V))


def test_closure_over_an_outer_vmap_tracer():
    def f(np_, lax_):
        return lambda y: lax_.cond(True, lambda v: v * y, lambda v: v - y, X) + np_.sin(y)

    xf, jf = both(f)
    check_vmap(xf, jf, (V,))


# --------------------------------------------------------------------------- dead code


def test_unused_outputs_and_operands_leave_every_branch():
    def f(p, x, y):
        out = lax.cond(
            p, lambda a, b: (xnp.sin(a), xnp.exp(b)), lambda a, b: (a * 2.0, xnp.cos(b)), x, y
        )
        return out[0]

    closed = xform.make_jaxpr(f)(True, X, X)
    jaxpr, used = dce.dce_jaxpr(closed.jaxpr, [True])
    (eqn,) = [e for e in jaxpr.eqns if e.primitive is lax.cond_p]
    assert len(eqn.outvars) == 1 and used == [True, True, False]
    names = {e.primitive.name for b in eqn.params["branches"] for e in b.eqns}
    assert "exp" not in names and "cos" not in names
    core.check_jaxpr(jaxpr)
    assert "stablehlo.exponential" not in xform.jit(f).lower(True, X, X).as_text()


# --------------------------------------------------------------------------- errors


def test_branch_output_types_must_agree():
    # (tests/test_fidelity_errors.py checks the whole messages against JAX's)
    with pytest.raises(
        TypeError,
        match=r"(?s)cond branches must have equal output types but they differ.*"
        r"The output of true_fun has type float32\[3\] but the corresponding output of "
        r"false_fun has type int32\[3\], so the dtypes do not match",
    ):
        lax.cond(True, lambda x: x, lambda x: x.astype(np.int32), V)
    with pytest.raises(TypeError, match=r"float32\[3\] .* float32\[\], so the shapes do not"):
        xform.jit(lambda p, x: lax.cond(p, lambda v: v, lambda v: v.sum(), x))(True, V)
    with pytest.raises(TypeError, match="cond branch outputs must have the same pytree structure"):
        lax.cond(True, lambda x: (x, x), lambda x: x, V)
    with pytest.raises(
        TypeError,
        match=r"(?s)switch branches must have equal output types.*"
        r"The output of branch 0 has type float32\[3\] but the corresponding output of "
        r"branch2 has type int32\[3\]",
    ):
        lax.switch(1, [lambda x: x, lambda x: x, lambda x: x.astype(np.int32)], V)


def test_switch_index_must_be_a_scalar_integer():
    with pytest.raises(
        TypeError,
        match=r"switch index must be a scalar integer, such as "
        r"i32\[\], got f32\[\]",
    ):
        lax.switch(np.float32(1.0), [lambda x: x, lambda x: x], X)
    with pytest.raises(TypeError, match=r"switch index must be a scalar integer.*got bool\[\]"):
        lax.switch(True, [lambda x: x, lambda x: x], X)
    with pytest.raises(TypeError, match="Branch index must be scalar"):
        lax.switch(np.array([0, 1]), [lambda x: x, lambda x: x], X)
    with pytest.raises(ValueError, match="Empty branch sequence"):
        lax.switch(0, [], X)


def test_bad_predicates():
    with pytest.raises(TypeError, match="Pred must be a scalar"):
        lax.cond(np.array([True, False]), lambda x: x, lambda x: x, X)
    with pytest.raises(TypeError, match="Pred type must be either boolean or number"):
        lax.cond(np.complex64(1.0), lambda x: x, lambda x: x, X)
    with pytest.raises(TypeError, match="true_fun and false_fun arguments should be callable"):
        lax.cond(True, 1.0, 2.0)


def test_python_if_on_a_traced_value_inside_a_branch():
    def bad(x):
        if x > 0:
            return x
        return -x

    with pytest.raises(ConcretizationTypeError, match=r"tracing `true_fun` of cond"):
        lax.cond(True, bad, lambda x: x, X)
    with pytest.raises(ConcretizationTypeError, match=r"tracing `branches\[1\]` of switch"):
        lax.switch(0, [lambda x: x, bad], X)


def test_abstract_eval_checks_hand_built_equations():
    closed = xform.make_jaxpr(COND)(True, X)
    (eqn,) = [e for e in closed.eqns if e.primitive is lax.cond_p]
    b0, b1 = eqn.params["branches"]
    avals = [x.aval for x in eqn.invars]
    other = xform.make_jaxpr(lambda x: x.astype(np.int32))(X)
    with pytest.raises(
        TypeError,
        match=r"true_fun output \(i32\[\]\) and false_fun output "
        r"\(f32\[\]\)",
    ):
        core.abstract_eval(lax.cond_p, *avals, branches=(b0, other))
    with pytest.raises(TypeError, match=r"branch index must be a scalar int32"):
        core.abstract_eval(
            lax.cond_p, core.ShapedArray((), np.dtype(np.float32)), *avals[1:], branches=(b0, b1)
        )
