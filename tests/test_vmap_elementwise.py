"""vmap of every elementwise primitive against jax.vmap and a Python loop: mapped and unmapped
operands at every axis, rank-0 operands, out_axes, nested vmaps, and per-example gradients.

Each op is checked under jit once (one in_axes configuration per op, rotating through the
table) and eagerly under every configuration: the rules do not depend on the dtype or on jit,
so the compiled checks are kept few.
"""

import hypothesis.strategies as st
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given

import xform
import xform.numpy as xnp
from tests.harness import assert_same, check_vmap
from tests.test_elementwise import OPS, draw_values
from xform import lax

jlax = jax.lax
RNG = np.random.default_rng(0)
B = 3  # the size of the mapped axis
UNARY = [op for op in OPS if op.nargs == 1]
BINARY = [op for op in OPS if op.nargs == 2]


def _dtype(op):
    f32 = np.dtype(np.float32)
    return f32 if f32 in op.dtypes else op.dtypes[0]


def _values(op, shape, seed=0):
    return draw_values(np.random.default_rng(seed), shape, _dtype(op), op, specials=False)


def _with_axis(shape, axis):
    """``shape`` with the mapped axis (size B) inserted at ``axis`` (None: not mapped)."""
    if axis is None:
        return shape
    shape = list(shape)
    shape.insert(axis % (len(shape) + 1), B)
    return tuple(shape)


def _fns(name):
    return getattr(lax, name), getattr(jlax, name)


# --------------------------------------------------------------------------- unary

_UNARY_AXES = [(0, 0), (1, 1), (-1, 0), (2, -1)]


@pytest.mark.parametrize("op", UNARY, ids=lambda op: op.name)
def test_unary(op):
    i = UNARY.index(op)
    in_axis, out_axis = _UNARY_AXES[i % len(_UNARY_AXES)]
    x = _values(op, _with_axis((2, 4), in_axis))
    xf, jf = _fns(op.name)
    check_vmap(xf, jf, (x,), in_axis, out_axis)


def test_unary_with_params():
    # Each param value at a mapped axis of its own (the rules pass params through).
    fns = [(lambda a, m=m: lax.round(a, m), lambda a, m=m: jlax.round(a, m)) for m in (0, 1)]
    fns += [
        (lambda a, y=y: lax.integer_pow(a, y), lambda a, y=y: jlax.integer_pow(a, y))
        for y in (0, 3, -2)
    ]
    fns += [
        (
            lambda a, d=d: lax.convert_element_type(a, d),
            lambda a, d=d: jlax.convert_element_type(a, d),
        )
        for d in (np.int32, np.bool_, np.float16, np.complex64)
    ]
    for k, (xf, jf) in enumerate(fns):
        in_axis = k % 3 - 1
        x = RNG.uniform(-3, 3, _with_axis((4, 2), in_axis)).astype(np.float32)
        check_vmap(xf, jf, (x,), in_axis, out_axes=k % 2, jit=False)


def test_unary_params_under_jit():
    x = RNG.uniform(-3, 3, (4, B)).astype(np.float32)
    check_vmap(
        lambda a: lax.convert_element_type(lax.integer_pow(lax.round(a, 1), 3), np.int32),
        lambda a: jlax.convert_element_type(jlax.integer_pow(jlax.round(a, 1), 3), np.int32),
        (x,),
        1,
        1,
    )


# --------------------------------------------------------------------------- binary

# (in_axes, unbatched x shape, unbatched y shape): mapped and unmapped operands, rank-0
# operands broadcasting against arrays, and lax's same-rank size-1 broadcasting.
_BINARY_CASES = [
    ((0, 0), (2, 4), (2, 4)),
    ((1, -1), (2, 4), (2, 4)),
    ((0, None), (2, 4), (2, 4)),
    ((None, 2), (2, 4), (2, 4)),
    ((0, None), (), (2, 4)),  # a mapped scalar against an unmapped array
    ((None, 1), (), (2, 4)),  # an unmapped scalar against a mapped array
    ((0, 1), (), (2, 4)),
    ((-1, 0), (2, 1), (1, 4)),
    ((None, 0), (2, 4), (1, 4)),
    ((1, None), (2, 1), (2, 4)),
]


def _binary_args(op, case, seed=0):
    in_axes, xs, ys = case
    x = _values(op, _with_axis(xs, in_axes[0]), seed)
    y = _values(op, _with_axis(ys, in_axes[1]), seed + 1)
    if op.name == "pow":
        y = np.round(y).astype(y.dtype)
    return (x, y), in_axes


@pytest.mark.parametrize("op", BINARY, ids=lambda op: op.name)
def test_binary(op):
    xf, jf = _fns(op.name)
    # add goes through every case; each other op through a rotating few (one compiled).
    i = BINARY.index(op)
    n = len(_BINARY_CASES)
    cases = range(n) if op.name == "add" else [(i + k * 3) % n for k in range(4)]
    for j in cases:
        args, in_axes = _binary_args(op, _BINARY_CASES[j], seed=j)
        check_vmap(xf, jf, args, in_axes, out_axes=j % 3 - 1, jit=j == i % n)


def test_pow_integer_exponent_and_weak_scalars():
    x = RNG.uniform(0.5, 2, (B, 4)).astype(np.float32)
    n = RNG.integers(-3, 4, (4, B)).astype(np.int32)
    check_vmap(lax.pow, jlax.pow, (x, n), (0, 1))
    check_vmap(lambda a: lax.mul(a, 2.0), lambda a: jlax.mul(a, 2.0), (x,), 1)


_BCAST_SHAPE = st.lists(st.integers(1, 3), min_size=0, max_size=3).map(tuple)


@st.composite
def _broadcast_case(draw):
    """Two operands of one unbatched shape, each possibly rank 0 or with size-1 dims, each
    mapped at any axis or not (at least one mapped)."""
    shape = draw(_BCAST_SHAPE)
    operands, axes = [], []
    for _ in range(2):
        kind = draw(st.sampled_from(["full", "scalar", "ones"]))
        s = (
            ()
            if kind == "scalar"
            else tuple(1 if kind == "ones" and draw(st.booleans()) else d for d in shape)
        )
        axis = draw(st.none() | st.integers(-len(s) - 1, len(s)))
        operands.append(s)
        axes.append(axis)
    if axes == [None, None]:
        axes[0] = 0
    rank = max(len(s) for s in operands)
    out_axis = draw(st.integers(-rank - 1, rank))
    return operands, tuple(axes), out_axis


@given(_broadcast_case(), st.sampled_from(["add", "max", "lt", "atan2"]))
def test_broadcasting_hypothesis(case, name):
    (xs, ys), in_axes, out_axis = case
    x = RNG.standard_normal(_with_axis(xs, in_axes[0])).astype(np.float32)
    y = RNG.standard_normal(_with_axis(ys, in_axes[1])).astype(np.float32)
    xf, jf = _fns(name)
    check_vmap(xf, jf, (x, y), in_axes, out_axis, jit=False)


# --------------------------------------------------------------------------- select_n, clamp


def _rand(shape, dtype=np.float32):
    if dtype == np.bool_:
        return RNG.random(shape) < 0.5
    if np.issubdtype(dtype, np.integer):
        return RNG.integers(0, 3, shape).astype(dtype)
    return RNG.standard_normal(shape).astype(dtype)


_WHICH = [(np.bool_, 2), (np.int32, 3), (np.uint8, 1)]


@pytest.mark.parametrize("which_dtype,ncases", _WHICH)
@pytest.mark.parametrize("which_rank0", [False, True])
def test_select_n(which_dtype, ncases, which_rank0):
    # Every mix of mapped/unmapped `which` (rank 0 or full) and cases, at every axis.
    shape = (2, 4)
    configs = [
        (0,) + (0,) * ncases,
        (None,) + (1,) * ncases,
        (1,) + (None,) * ncases,
        (-1,) + (None,) + (2,) * (ncases - 1),
        (0,) + (-1,) * ncases,
    ]
    wshape = () if which_rank0 else shape
    if which_rank0:  # a mapped scalar has one axis, 0
        configs = [(None if c[0] is None else 0,) + c[1:] for c in configs]
    for k, in_axes in enumerate(configs):
        which = _rand(_with_axis(wshape, in_axes[0]), which_dtype)
        if which_dtype != np.bool_:
            which = which % ncases
        cases = [_rand(_with_axis(shape, a)) for a in in_axes[1:]]
        check_vmap(
            lax.select_n, jlax.select_n, (which, *cases), in_axes, out_axes=k % 3, jit=k == 0
        )


def test_select_n_rank0_everything():
    which, a, b = _rand((B,), np.bool_), _rand((B,)), _rand(())
    check_vmap(lax.select_n, jlax.select_n, (which, a, b), (0, 0, None))
    check_vmap(lax.select_n, jlax.select_n, (np.bool_(True), a, b), (None, 0, None), jit=False)


def test_select_n_keeps_an_unmapped_scalar_predicate_and_the_batch_dim():
    a, b = _rand((4, B)), _rand((4, B))
    jaxpr = xform.make_jaxpr(xform.vmap(lax.select_n, (None, 1, 1), 1))(np.bool_(True), a, b)
    text = str(jaxpr)
    assert "broadcast_in_dim" not in text and "transpose" not in text, text


@pytest.mark.parametrize(
    "in_axes",
    [(0, 0, 0), (None, 1, None), (0, None, None), (None, None, 1), (1, -1, None), (0, 0, None)],
)
@pytest.mark.parametrize("bound_rank0", [False, True])
def test_clamp(in_axes, bound_rank0):
    shape = (2, 4)
    bshape = () if bound_rank0 else shape
    lo = _rand(_with_axis(bshape, in_axes[0])) - 1
    x = _rand(_with_axis(shape, in_axes[1])) * 2
    hi = _rand(_with_axis(bshape, in_axes[2])) + 1
    if bound_rank0:  # a mapped scalar bound has one axis, 0
        in_axes = tuple(a if a is None or i == 1 else 0 for i, a in enumerate(in_axes))
    jit = in_axes == (0, 0, 0)
    check_vmap(lax.clamp, jlax.clamp, (lo, x, hi), in_axes, out_axes=-1, jit=jit)


# --------------------------------------------------------------------------- bitcast


@pytest.mark.parametrize(
    "src,dst,unbatched,in_axis",
    [
        (np.float32, np.int32, (2, 4), 1),  # same width
        (np.uint32, np.uint8, (2,), -1),  # narrower: a trailing dimension appears
        (np.float32, np.uint16, (), 0),
        (np.uint8, np.uint16, (3, 2), 0),  # wider: the last dimension is consumed
        (np.uint8, np.uint32, (3, 4), 1),
    ],
)
def test_bitcast_convert_type(src, dst, unbatched, in_axis):
    x = (
        RNG.integers(0, 200, _with_axis(unbatched, in_axis)).astype(np.uint8).view(src)
        if np.dtype(src).itemsize == 1
        else RNG.standard_normal(_with_axis(unbatched, in_axis)).astype(np.float32).view(src)
    )
    check_vmap(
        lambda a: lax.bitcast_convert_type(a, dst),
        lambda a: jlax.bitcast_convert_type(a, dst),
        (x,),
        in_axis,
        jit=in_axis == 0,
    )


def test_bitcast_to_wider_with_the_batch_dimension_last():
    # jax.vmap cannot do this one (its rule would consume the batch dimension): a loop can.
    x = RNG.integers(0, 200, (3, 2, B)).astype(np.uint8)
    check_vmap(
        lambda a: lax.bitcast_convert_type(a, np.uint16),
        lambda a: jlax.bitcast_convert_type(a, np.uint16),
        (np.moveaxis(x, 2, 0),),
        0,
    )
    got = xform.vmap(lambda a: lax.bitcast_convert_type(a, np.uint16), 2)(x)
    expected = np.stack(
        [np.asarray(lax.bitcast_convert_type(x[..., i], np.uint16)) for i in range(B)]
    )
    assert_same(got, expected)


# --------------------------------------------------------------------------- errors


def test_errors_match_the_unbatched_ones():
    x, i = _rand((B, 2)), _rand((B, 2), np.int32)
    with pytest.raises(TypeError, match="lax.add requires arguments to have the same dtypes"):
        xform.vmap(lax.add)(x, i)
    with pytest.raises(TypeError, match="select_n: cases must have the same shape"):
        xform.vmap(lax.select_n, (0, 0, None))(_rand((B,), np.bool_), x, _rand((3,)))
    with pytest.raises(TypeError, match="clamp: min must be scalar or have the operand's"):
        xform.vmap(lax.clamp, (0, 0, None))(_rand((B, 3)), x, np.float32(1))
    with pytest.raises(ValueError, match="the last dimension must be 2, got shape"):
        xform.vmap(lambda a: lax.bitcast_convert_type(a, np.uint16))(np.ones(2, np.uint8))


# --------------------------------------------------------------------------- composition


def test_unbatched_operands_stay_unbatched():
    # exp of the unmapped operand runs once, at its own shape; only the add is batched.
    x, c = _rand((B, 4)), _rand((4,))
    jaxpr = xform.make_jaxpr(xform.vmap(lambda a, b: lax.add(a, lax.exp(b)), (0, None)))(x, c)
    assert "f32[4] = exp b" in str(jaxpr), jaxpr
    assert "broadcast_in_dim" not in str(jaxpr), jaxpr


def test_nested_vmap():
    x, y = _rand((2, 4, 3)), _rand((3, 4))
    inner_x = lambda a, b: lax.mul(lax.sin(a), b)  # noqa: E731
    inner_j = lambda a, b: jlax.mul(jlax.sin(a), b)  # noqa: E731
    got = xform.vmap(xform.vmap(inner_x, (0, None)), (2, 0), 1)(x, y)
    expected = jax.vmap(jax.vmap(inner_j, (0, None)), (2, 0), 1)(x, y)
    assert_same(got, expected)
    # The inner predicate is a scalar, selecting between a mapped and an unmapped case.
    args = (_rand((4, 2), np.bool_), _rand((4, 3)), _rand((3, 2)))
    nested = xform.vmap(xform.vmap(lax.select_n, (0, 0, None)), (1, None, 1))
    expected = jax.vmap(jax.vmap(jlax.select_n, (0, 0, None)), (1, None, 1))(*args)
    assert_same(nested(*args), expected)
    assert_same(xform.jit(nested)(*args), expected)
    lo, xs = _rand((3,)), _rand((4, 3, 2))
    got = xform.vmap(xform.vmap(lax.clamp, (None, 0, None)), (0, 1, None))(lo, xs, 1.5)
    expected = jax.vmap(jax.vmap(jlax.clamp, (None, 0, None)), (0, 1, None))(lo, xs, 1.5)
    assert_same(got, expected)


def _scalar_loss(lib, xl):
    # An elementwise scalar function of scalars: per-example gradients need no reductions.
    # Its derivative sums several f32 terms, so the tests compare at 1e-5: transcendental
    # kernels differ by an ulp between host and XLA, and inputs depend on test order.
    def loss(w, x):
        z = xl.mul(w, x)
        return xl.add(
            xl.mul(xl.tanh(z), xl.exp(xl.neg(w))),
            xl.select_n(xl.gt(z, 0.0), xl.integer_pow(z, 2), xl.clamp(-0.5, xl.sin(z), 0.5)),
        )

    return loss


def test_vmap_of_grad_per_example():
    w, x = _rand((5,)), _rand((5,))
    got = xform.vmap(xform.grad(_scalar_loss(xnp, lax)))(w, x)
    expected = jax.vmap(jax.grad(_scalar_loss(jnp, jlax)))(w, x)
    assert_same(got, expected, rtol=1e-5, atol=1e-5)
    got = xform.jit(xform.vmap(xform.grad(_scalar_loss(xnp, lax), argnums=1), (None, 0)))(w[0], x)
    expected = jax.vmap(jax.grad(_scalar_loss(jnp, jlax), argnums=1), (None, 0))(w[0], x)
    assert_same(got, expected, rtol=1e-5, atol=1e-5)


def test_grad_and_jvp_of_vmap():
    w, x = _rand((5,)), _rand((5,))
    vx = xform.vmap(_scalar_loss(xnp, lax))
    vj = jax.vmap(_scalar_loss(jnp, jlax))
    got = xform.jvp(vx, (w, x), (np.ones(5, np.float32), x))
    expected = jax.jvp(vj, (w, x), (np.ones(5, np.float32), x))
    assert_same(got, expected, rtol=1e-5, atol=1e-5)
    got = xform.vjp(vx, w, x)[1](x)
    expected = jax.vjp(vj, w, x)[1](x)
    assert_same(got, expected, rtol=1e-5, atol=1e-5)
