"""Eager reverse mode on tapes against the staged path.

With no enclosing trace, ``grad``/``value_and_grad`` record the function on the VJP tape
(xform/interpret/vjp_tape.py: each operation and its values, pulled back by its JVP rule
linearized once per signature and transposed),
and ``vjp`` keeps the linear program on a tape (xform/interpret/tape.py) rather than
staging and transposing a jaxpr. Their cotangents must be bit-equal to one another and to
the staged path's (``enabled = False`` in each module forces the next path) and close to
``jax.grad``; a primitive a tape does not record (jit, control flow) is linearized or staged
where it stands, without running the function twice.
"""

import hypothesis.strategies as st
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from jax import tree_util

import xform
import xform.numpy as xnp
from tests.harness import assert_same
from xform.interpret import tape, vjp_tape


def _bits(tree):
    """Each leaf's dtype, shape, weak type and bytes: equal trees are bit-equal."""
    return [
        (
            np.asarray(x).dtype,
            np.shape(x),
            bool(getattr(x, "weak_type", False)),
            np.asarray(x).tobytes(),
        )
        for x in tree_util.tree_leaves(tree)
    ]


@pytest.fixture
def taped(monkeypatch):
    """Counts the backward passes that walk a tape (not a staged jaxpr)."""
    calls = []
    walk = tape._backward_tape

    def counting(trace, cts):
        calls.append(trace)
        return walk(trace, cts)

    monkeypatch.setattr(tape, "_backward_tape", counting)
    return calls


@pytest.fixture
def recorded(monkeypatch):
    """Counts the backward passes of the VJP tape."""
    calls = []
    backward = vjp_tape.VJPTrace.backward

    def counting(trace, *args):
        calls.append(trace)
        return backward(trace, *args)

    monkeypatch.setattr(vjp_tape.VJPTrace, "backward", counting)
    return calls


def _linear_taped(fn, *args):
    """``fn(*args)`` with reverse mode on the linear tape (the VJP tape off)."""
    vjp_tape.enabled = False
    try:
        return fn(*args)
    finally:
        vjp_tape.enabled = True


def _staged(fn, *args):
    """``fn(*args)`` with reverse mode forced onto the staged path (both tapes off)."""
    tape.enabled = False
    try:
        return _linear_taped(fn, *args)
    finally:
        tape.enabled = True


def _check_bit_equal(fn, *args):
    got = fn(*args)
    assert _bits(got) == _bits(_linear_taped(fn, *args))
    assert _bits(got) == _bits(_staged(fn, *args))
    return got


# --------------------------------------------------------------------------- random programs


def _lax(L):
    return xform.lax if L is xnp else jax.lax


# Steps of a drawn program, each ``(name, arity, fn(lib, *operands))``: elementwise ops with
# broadcasting, reductions, dot, reshape, broadcast and indexing. Values stay bounded. Among
# them every primitive eager grad once had a hand-written VJP for: sin, cos, exp, log, sqrt,
# logistic, square, tanh, integer_pow, neg, add, sub, div, mul, convert_element_type.
_UNARY = [
    ("sin", lambda L, a: L.sin(a)),
    ("cos", lambda L, a: L.cos(a)),
    ("tanh", lambda L, a: L.tanh(a)),
    ("gauss", lambda L, a: L.exp(-a * a)),
    ("softplus", lambda L, a: L.log1p(L.exp(L.tanh(a)))),
    ("sqrt", lambda L, a: L.sqrt(a * a + 1.0)),
    ("square", lambda L, a: L.square(a) * 0.5),
    ("scale", lambda L, a: 2.0 * a - 0.5),
    ("sum_keep", lambda L, a: L.sum(a, axis=1, keepdims=True)),
    ("mean0", lambda L, a: L.mean(a, axis=0) + a),
    ("max_keep", lambda L, a: L.max(a, axis=0, keepdims=True) * a),
    ("dot", lambda L, a: L.tanh(a @ a.T) * 0.5),
    ("dot_t", lambda L, a: L.dot(a.T, a) * 0.25),
    ("reshape", lambda L, a: L.reshape(a, (a.shape[1], a.shape[0]))),
    ("transpose", lambda L, a: a.T),
    ("broadcast", lambda L, a: L.broadcast_to(a[:, :1], a.shape) * a),
    ("reverse", lambda L, a: a[::-1]),
    ("take", lambda L, a: a[L.array([0, 0, a.shape[0] - 1])]),
    ("slice", lambda L, a: a[:, 1:] if a.shape[1] > 1 else a),
    ("where", lambda L, a: L.where(a > 0, a, 0.1 * a)),
    ("log", lambda L, a: L.log(a * a + 1.0)),
    ("cube", lambda L, a: a**3 - a**1),
    ("neg_exp", lambda L, a: -L.exp(L.cos(a))),
    ("sigmoid", lambda L, a: 1.0 / (1.0 + L.exp(-a))),
    ("float64_round_trip", lambda L, a: L.float32(L.tanh(a).astype(L.float16)) * a),
    ("logistic", lambda L, a: _lax(L).logistic(a)),
    ("lax_square", lambda L, a: _lax(L).square(a) * 0.5),
    ("halve_pow", lambda L, a: a / 2.0 + a**2 / 3.0),
]
_BINARY = [
    ("add", lambda L, a, b: a + b),
    ("sub", lambda L, a, b: a - b),
    ("mul", lambda L, a, b: a * b),
    ("div", lambda L, a, b: a / (b * b + 1.0)),
    ("maximum", lambda L, a, b: L.maximum(a, b)),
]


def _program(steps):
    """The function of ``(x, y)`` (f32[3, 4] and f32[4]) that ``steps`` describe, for a
    library ``L``: each step reads earlier (2-D) values, binary ones where shapes broadcast."""

    def build(L):
        def f(x, y):
            pool = [x, y * x, L.sin(y) + x]  # every value 2-D
            for kind, index, which, other in steps:
                a = pool[index % len(pool)]
                if kind == "unary":
                    pool.append(_UNARY[which % len(_UNARY)][1](L, a))
                    continue
                b = pool[other % len(pool)]
                try:
                    np.broadcast_shapes(a.shape, b.shape)
                except ValueError:
                    b = 0.75  # a weakly typed scalar operand instead
                pool.append(_BINARY[which % len(_BINARY)][1](L, a, b))
            return L.sum(pool[-1]) + 0.5 * L.sum(L.tanh(pool[-2]))

        return f

    return build


_step = st.tuples(
    st.sampled_from(["unary", "unary", "binary"]),
    st.integers(0, 40),
    st.integers(0, 40),
    st.integers(0, 40),
)


# ``taped`` is cleared per example: the fixture is shared by the examples of one run.
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.lists(_step, min_size=1, max_size=8), st.integers(0, 2**16))
def test_random_programs_bit_equal_to_staged_path(recorded, steps, seed):
    recorded.clear()
    build = _program(steps)
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, (3, 4)).astype(np.float32)
    y = rng.uniform(-1, 1, (4,)).astype(np.float32)
    grad = xform.value_and_grad(build(xnp), argnums=(0, 1))
    got = _check_bit_equal(grad, x, y)
    assert recorded, "the VJP tape was not used"
    # JAX under jit: its eager mode compiles op by op, slower for a fresh program.
    expected = jax.jit(jax.value_and_grad(build(jnp), argnums=(0, 1)))(x, y)
    assert_same(got, expected, rtol=2e-5, atol=2e-5)


# --------------------------------------------------------------------------- fixed functions


def _ten_ops(L):
    def f(x):
        y = L.sin(x) * 2.0 + L.cos(x)
        y = L.tanh(y) * x - L.exp(-x * x)
        return L.sum(y * y)

    return f


def _mlp_loss(L):
    def loss(params, x, target):
        h = x
        for w, b in params[:-1]:
            h = L.tanh(h @ w + b)
        w, b = params[-1]
        return L.mean((h @ w + b - target) ** 2)

    return loss


def _mlp_data(sizes=(16, 32, 32, 1), batch=8):
    rng = np.random.default_rng(0)
    params = [
        (
            rng.normal(0, m**-0.5, (m, n)).astype(np.float32),
            rng.normal(0, 0.1, (n,)).astype(np.float32),
        )
        for m, n in zip(sizes[:-1], sizes[1:], strict=True)
    ]
    x = rng.normal(size=(batch, sizes[0])).astype(np.float32)
    target = rng.normal(size=(batch, sizes[-1])).astype(np.float32)
    return params, x, target


def test_ten_op_function(recorded, taped):
    x = np.linspace(-1, 1, 16, dtype=np.float32)
    got = _check_bit_equal(xform.grad(_ten_ops(xnp)), x)
    assert len(recorded) == 1 and len(taped) == 1  # the VJP tape, then the linear one
    assert_same(got, jax.grad(_ten_ops(jnp))(x), rtol=1e-5, atol=1e-6)


def test_mlp_loss(recorded, taped):
    params, x, target = _mlp_data()
    got = _check_bit_equal(xform.value_and_grad(_mlp_loss(xnp)), params, x, target)
    assert len(recorded) == 1 and len(taped) == 1
    assert_same(
        got, jax.jit(jax.value_and_grad(_mlp_loss(jnp)))(params, x, target), rtol=1e-5, atol=1e-6
    )


def test_has_aux_argnums_and_python_scalars(recorded):
    def f(a, b, c):
        return xnp.sum(xnp.sin(a) * b) + c * c, {"aux": a * 2}

    x = np.arange(3, dtype=np.float32)
    grad = xform.grad(f, argnums=(0, 2), has_aux=True)
    got = _check_bit_equal(grad, x, 1.5, 0.5)  # a weak c: its gradient is weak too
    assert len(recorded) == 1
    expected = jax.grad(
        lambda a, b, c: (jnp.sum(jnp.sin(a) * b) + c * c, {"aux": a * 2}),
        argnums=(0, 2),
        has_aux=True,
    )(x, 1.5, 0.5)
    assert_same(got, expected, rtol=1e-6)


def test_vjp_pullback_called_twice_and_jitted(taped):
    def f(x):
        return xnp.tanh(x) * x[::-1], xnp.sum(x)

    x = np.linspace(-1, 1, 5, dtype=np.float32)
    out, pullback = xform.vjp(f, x)
    cts = (np.ones(5, np.float32), np.float32(2.0))
    first, second = pullback(cts), pullback(cts)
    assert len(taped) == 2
    assert _bits(first) == _bits(second) == _bits(_staged(lambda: xform.vjp(f, x)[1](cts)))
    # As a pytree (into jit), the pullback is the staged jaxpr over its residuals.
    assert _bits(xform.jit(lambda pb, c: pb(c))(pullback, cts)) == _bits(first)
    assert_same(first, jax.vjp(lambda x: (jnp.tanh(x) * x[::-1], jnp.sum(x)), x)[1](cts), rtol=1e-6)


def test_falls_back_mid_function_without_rerunning(recorded, taped):
    # jit and a loop inside the differentiated function: each is linearized where it stands
    # (on the linear tape it becomes the staged jaxpr from there on), and the Python function
    # still runs once per path.
    runs = []
    inner = xform.jit(lambda v: xnp.sin(v) * v)

    def f(x):
        runs.append(1)
        y = xnp.cos(x) * 3.0  # on the tape
        y = inner(y)  # jit: staged from here on
        y = xform.lax.fori_loop(0, 3, lambda i, c: c * xnp.tanh(c), y)
        return xnp.sum(y * x)

    x = np.linspace(-1, 1, 4, dtype=np.float32)
    got = _check_bit_equal(xform.grad(f), x)
    assert len(runs) == 3 and len(recorded) == 1 and not taped  # the linear tape staged

    def f_jax(x):
        y = jax.jit(lambda v: jnp.sin(v) * v)(jnp.cos(x) * 3.0)
        return jnp.sum(jax.lax.fori_loop(0, 3, lambda i, c: c * jnp.tanh(c), y) * x)

    assert_same(got, jax.grad(f_jax)(x), rtol=1e-5, atol=1e-6)


def test_not_taped_under_a_trace_or_for_other_dtypes(recorded, taped):
    f = _ten_ops(xnp)
    x = np.linspace(-1, 1, 4, dtype=np.float32)
    assert _bits(xform.jit(xform.grad(f))(x)) == _bits(xform.jit(xform.grad(f))(x))
    np.testing.assert_allclose(
        xform.vmap(xform.grad(f))(x[:, None]),
        jax.vmap(jax.grad(_ten_ops(jnp)))(x[:, None]),
        rtol=1e-5,
    )
    hess = xform.grad(xform.grad(lambda v: xnp.sin(v) * v))(0.5)  # the inner grad: staged
    assert_same(hess, jax.grad(jax.grad(lambda v: jnp.sin(v) * v))(0.5), rtol=1e-6)
    z = np.array([0.5 + 1j, -1.0 + 0.25j], np.complex64)
    got = xform.grad(lambda z: xnp.sum(xnp.abs(xnp.sin(z)) ** 2))(z)
    assert_same(got, jax.grad(lambda z: jnp.sum(jnp.abs(jnp.sin(z)) ** 2))(z), rtol=1e-5)
    # only the outer grad of the second-order derivative (complex inputs: the linear tape)
    assert len(recorded) == 1 and len(taped) == 0


# --------------------------------------------------------------------------- linearized signatures


def test_one_derivative_per_primitive(recorded):
    # No hand-written VJPs: each primitive's pullback is its JVP rule linearized once per
    # signature and transposed; the ones a gradient step uses most are all linearized so.
    assert not hasattr(vjp_tape, "vjp_rules")
    assert not hasattr(vjp_tape, "deflinear_vjp") and not hasattr(vjp_tape, "defbilinear_vjp")
    lax = xform.lax

    def f(x, y):
        z = xnp.sin(x) * xnp.cos(y) + xnp.exp(-x) - xnp.log(y * y + 1.0)
        z = xnp.sqrt(z * z + 1.0) / (1.0 + lax.logistic(x)) + lax.square(y) + x**3
        z = -xnp.tanh(z).astype(xnp.float16).astype(xnp.float32) + z / 2.0
        return xnp.sum(z)

    x = np.linspace(-1, 1, 6, dtype=np.float32)
    y = np.linspace(0.5, 2, 6, dtype=np.float32)
    _check_bit_equal(xform.grad(f, argnums=(0, 1)), x, y)
    assert recorded
    names = {key[0].name for key, lin in vjp_tape._signatures.items() if lin is not None}
    assert {
        "sin", "cos", "exp", "log", "sqrt", "logistic", "square", "tanh", "integer_pow",
        "neg", "add", "sub", "div", "mul", "convert_element_type",
    } <= names  # fmt: skip


def test_signatures_keyed_by_value():
    # The same primitive at other shapes, dtypes, weak types, params and differentiated
    # operands, one after another: each gets its own linearization, none another's.
    vjp_tape._signatures.clear()

    def f(x, y):
        return xnp.sum(xnp.sin(x) * y) + xnp.sum(xnp.sin(y) * 2.0) + xnp.sum(x * x)

    for shape in [(3,), (4, 2), (), (3,), (1, 5)]:
        for dtype in (np.float32, np.float16):
            x = np.linspace(-1, 1, int(np.prod(shape)), dtype=dtype).reshape(shape)
            y = np.full(shape, 0.5, dtype)
            for argnums in (0, 1, (0, 1)):
                got = _check_bit_equal(xform.grad(f, argnums=argnums), x, y)
                for g in tree_util.tree_leaves(got):
                    assert np.shape(g) == shape and np.asarray(g).dtype == dtype
            got = _check_bit_equal(xform.grad(f), x, 0.5)  # a Python scalar y
            assert np.shape(got) == shape


def test_rule_that_reads_values_is_linearized_where_it_stands(recorded):
    # A custom JVP with Python control flow on the values cannot be linearized on abstract
    # operands once for all: it runs, and is transposed, where it stands, every time.
    @xform.custom_jvp
    def clip_grad(x):
        return xnp.sin(x)

    @clip_grad.defjvp
    def _(primals, tangents):
        (x,), (t,) = primals, tangents
        scale = 2.0 if float(xnp.sum(x)) > 0 else 0.5
        return clip_grad(x), t * xnp.cos(x) * scale

    for sign in (1.0, -1.0):
        x = sign * np.linspace(0.1, 1, 4, dtype=np.float32)
        got = _check_bit_equal(xform.grad(lambda v: xnp.sum(clip_grad(v) * v)), x)
        scale = 2.0 if sign > 0 else 0.5
        np.testing.assert_allclose(got, np.cos(x) * scale * x + np.sin(x), rtol=1e-6)
    assert len(recorded) == 2


def test_several_results_and_passed_through_tangents(recorded):
    # sort of two operands (two results, one differentiated); x + 1.0 and x ** 1, whose JVPs
    # pass the operand's tangent through as the result's.
    def f(x, y):
        keys, vals = xform.lax.sort((xnp.sin(x), y * x), num_keys=1)
        z = (keys + 1.0) ** 1 - 0.5
        return xnp.sum(z * vals) + xnp.sum(keys)

    x = np.array([0.3, -0.2, 0.9, 0.1], np.float32)
    y = np.array([1.0, 2.0, -1.0, 0.5], np.float32)
    got = _check_bit_equal(xform.grad(f, argnums=(0, 1)), x, y)
    assert recorded

    def f_jax(x, y):
        keys, vals = jax.lax.sort((jnp.sin(x), y * x), num_keys=1)
        return jnp.sum(((keys + 1.0) ** 1 - 0.5) * vals) + jnp.sum(keys)

    assert_same(got, jax.grad(f_jax, argnums=(0, 1))(x, y), rtol=1e-6)


def test_large_constants_are_not_kept_in_the_cache(monkeypatch):
    # A signature whose JVP rule makes a constant above the limit (tanh's 1, here with a
    # zero limit) is linearized where it stands rather than cached with the constant.
    monkeypatch.setattr(vjp_tape, "_MAX_CONST_BYTES", 0)
    vjp_tape._signatures.clear()
    try:
        x = np.linspace(-1, 1, 5, dtype=np.float32)
        _check_bit_equal(xform.grad(lambda v: xnp.sum(xnp.tanh(v) * v)), x)
        by_name = {key[0].name: lin for key, lin in vjp_tape._signatures.items()}
        assert by_name["tanh"] is None and by_name["mul"] is not None
    finally:
        vjp_tape._signatures.clear()  # (the next tests cache tanh again)
