"""vmap of the structural family (broadcast_in_dim, reshape, squeeze, transpose, rev, pad,
concatenate, iota) against jax.vmap and a Python loop over the mapped axis
(``harness.check_vmap``): in_axes and out_axes anywhere, mapped and unmapped operands mixed,
eager and under jit, nested, under grad; the batched jaxprs; errors.

The jitted checks use a fixed table (few compiles); hypothesis draws shapes, permutations and
axes for eager checks only (NumPy host impls: cheap)."""

import hypothesis
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import strategies as st

import xform
import xform.numpy as xnp
from tests.harness import assert_same, check_vmap
from xform import lax

B = 3  # the mapped axis' size
RNG = np.random.default_rng(0)


def with_axis(shape, axis, size=B):
    """``shape`` with a dimension of ``size`` inserted at ``axis`` (None: unchanged)."""
    if axis is None:
        return tuple(shape)
    shape = list(shape)
    shape.insert(axis if axis >= 0 else len(shape) + axis + 1, size)
    return tuple(shape)


def mapped(shape, axis, dtype=np.float32):
    """Test values of the per-entry ``shape``, with ``B`` entries stacked along ``axis``."""
    return RNG.standard_normal(with_axis(shape, axis)).astype(dtype)


def both(make):
    """``make(lax)`` for xform's lax and JAX's: the (xform fn, jax fn) pair. The JAX one is
    jitted: jax.vmap of it compiles one batched program instead of an executable per op."""
    return make(lax), jax.jit(make(jax.lax))


# (id, make(lax) -> fn, per-entry shapes, in_axes, out_axes)
CASES = [
    ("broadcast_in_dim", lambda L: lambda x: L.broadcast_in_dim(x, (2, 3, 4), (1,)), [(3,)], 0, 0),
    (
        "broadcast_in_dim-last",
        lambda L: lambda x: L.broadcast_in_dim(x, (2, 3, 4), (1,)),
        [(3,)],
        -1,
        1,
    ),
    (
        "broadcast_in_dim-expand",
        lambda L: lambda x: L.broadcast_in_dim(x, (3, 2, 4), (1, 2)),
        [(1, 4)],
        1,
        2,
    ),
    (
        "broadcast_in_dim-mid",
        lambda L: lambda x: L.broadcast_in_dim(x, (2, 5, 3), (0, 2)),
        [(2, 3)],
        1,
        -1,
    ),
    ("broadcast_in_dim-scalar", lambda L: lambda x: L.broadcast_in_dim(x, (2, 3), ()), [()], 0, 1),
    ("broadcast", lambda L: lambda x: L.broadcast(x, (2,)), [(3, 4)], 2, 0),
    ("reshape", lambda L: lambda x: L.reshape(x, (3, 2)), [(2, 3)], 0, 0),
    ("reshape-axis1", lambda L: lambda x: L.reshape(x, (6,)), [(2, 3)], 1, 1),
    ("reshape-last", lambda L: lambda x: L.reshape(x, (2, 1, 3)), [(6,)], -1, 0),
    ("reshape-dimensions", lambda L: lambda x: L.reshape(x, (6,), (1, 0)), [(2, 3)], 1, 0),
    ("reshape-to-scalar", lambda L: lambda x: L.reshape(x, ()), [(1, 1)], 2, 0),
    ("squeeze", lambda L: lambda x: L.squeeze(x, (0, 2)), [(1, 3, 1)], 0, 0),
    ("squeeze-mid", lambda L: lambda x: L.squeeze(x, (0, 2)), [(1, 3, 1)], 2, 1),
    ("squeeze-last", lambda L: lambda x: L.squeeze(x, (-1,)), [(1, 3, 1)], -1, 0),
    ("expand_dims", lambda L: lambda x: L.expand_dims(x, (0, -1)), [(2, 3)], 1, 0),
    ("transpose", lambda L: lambda x: L.transpose(x, (2, 0, 1)), [(2, 3, 4)], 0, 0),
    ("transpose-mid", lambda L: lambda x: L.transpose(x, (2, 0, 1)), [(2, 3, 4)], 1, 2),
    ("transpose-last", lambda L: lambda x: L.transpose(x, (1, 0)), [(2, 3)], -1, -1),
    ("rev", lambda L: lambda x: L.rev(x, (0, 1)), [(2, 3)], 0, 0),
    ("rev-mid", lambda L: lambda x: L.rev(x, (1,)), [(2, 3)], 1, 1),
    (
        "pad",
        lambda L: lambda x, v: L.pad(x, v, [(1, 2, 1), (0, -1, 0)]),
        [(3, 4), ()],
        (0, None),
        0,
    ),
    (
        "pad-mid",
        lambda L: lambda x, v: L.pad(x, v, [(-1, 2, 0), (2, 0, 2)]),
        [(3, 4), ()],
        (1, None),
        2,
    ),
    (
        "pad-last",
        lambda L: lambda x, v: L.pad(x, v, [(0, 0, 1), (1, 1, 0)]),
        [(3, 4), ()],
        (-1, None),
        0,
    ),
    (
        "pad-value",
        lambda L: lambda x, v: L.pad(x, v, [(1, 2, 1), (0, -1, 0)]),
        [(3, 4), ()],
        (0, 0),
        0,
    ),
    (
        "pad-value-mid",
        lambda L: lambda x, v: L.pad(x, v, [(-1, 2, 0), (2, 0, 2)]),
        [(3, 4), ()],
        (1, 0),
        1,
    ),
    (
        "pad-value-only",
        lambda L: lambda x, v: L.pad(x, v, [(1, 0, 1), (0, 2, 0)]),
        [(3, 4), ()],
        (None, 0),
        2,
    ),
    (
        "concatenate",
        lambda L: lambda a, b, c: L.concatenate([a, b, c], 0),
        [(2, 3), (1, 3), (4, 3)],
        (0, None, 1),
        0,
    ),
    (
        "concatenate-unmapped-first",
        lambda L: lambda a, b, c: L.concatenate([a, b, c], 1),
        [(2, 3), (2, 1), (2, 2)],
        (None, None, 0),
        1,
    ),
    (
        "concatenate-mid",
        lambda L: lambda a, b, c: L.concatenate([a, b, c], 1),
        [(2, 3), (2, 1), (2, 2)],
        (1, 1, -1),
        0,
    ),
    (
        "concatenate-last",
        lambda L: lambda a, b: L.concatenate([a, b], 0),
        [(2,), (3,)],
        (-1, None),
        -1,
    ),
]


@pytest.mark.parametrize(
    "make,shapes,in_axes,out_axes", [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_structural(make, shapes, in_axes, out_axes):
    axes = in_axes if isinstance(in_axes, tuple) else (in_axes,)
    args = [mapped(s, a) for s, a in zip(shapes, axes, strict=True)]
    check_vmap(*both(make), args, in_axes, out_axes)


def test_iota_stays_unbatched():
    # iota has no operands: vmap hands it to the enclosing trace, once, at its own shape.
    def make(L):
        return lambda x: (
            x + L.broadcasted_iota(np.float32, (2, 4), 1),
            L.iota(np.int32, 4) * L.convert_element_type(x[0, 0], np.int32),
        )

    x = mapped((2, 4), 1) * 4
    check_vmap(*both(make), [x], 1, (0, 1))
    jaxpr = xform.make_jaxpr(xform.vmap(make(lax), 1))(x)
    iotas = [e for e in jaxpr.jaxpr.eqns if e.primitive.name == "iota"]
    assert [e.outvars[0].aval.shape for e in iotas] == [(2, 4), (4,)]


def test_full_of_a_mapped_scalar():
    check_vmap(
        lambda v: xnp.full((2, 3), v), jax.jit(lambda v: jnp.full((2, 3), v)), [mapped((), 0)], 0, 1
    )


# --------------------------------------------------------------------------- the programs


def _eqns(f, *args):
    return [e.primitive.name for e in xform.make_jaxpr(f)(*args).jaxpr.eqns]


def test_batch_dim_stays_where_it_is():
    # No moveaxis before or after ops that leave the batch dim alone: one op each.
    x = mapped((2, 3, 4), 1)
    assert _eqns(xform.vmap(lambda a: lax.transpose(a, (2, 0, 1)), 1, 1), x) == ["transpose"]
    assert _eqns(xform.vmap(lambda a: lax.rev(a, (0, 2)), 1, 1), x) == ["rev"]
    assert _eqns(xform.vmap(lambda a: lax.pad(a, 0.0, [(1, 1, 0)] * 3), 1, 1), x) == ["pad"]
    assert _eqns(
        xform.vmap(lambda a: lax.broadcast_in_dim(a, (5, 2, 3, 4), (1, 2, 3)), 1, 0), x
    ) == ["broadcast_in_dim"]
    assert _eqns(xform.vmap(lambda a, b: lax.concatenate([a, b], 2), (1, 1), 1), x, x) == [
        "concatenate"
    ]


def test_unmapped_operands_stay_unmapped():
    # An op on unmapped values only is computed once, at its own shape.
    x, c = mapped((2, 3), 0), mapped((3, 2), None)
    jaxpr = xform.make_jaxpr(xform.vmap(lambda a, b: a + lax.transpose(b, (1, 0)), (0, None)))(x, c)
    (t,) = [e for e in jaxpr.jaxpr.eqns if e.primitive.name == "transpose"]
    assert t.outvars[0].aval.shape == (2, 3)


# --------------------------------------------------------------------------- nested, grad


@pytest.mark.parametrize(
    "make,shapes,inner,outer",
    [
        (lambda L: lambda x: L.transpose(x, (1, 2, 0)), [(2, 3, 4)], 1, 0),
        (
            lambda L: lambda x, v: L.pad(x, v, [(1, 0, 1), (0, 2, 0)]),
            [(3, 4), ()],
            (0, 0),
            (2, None),
        ),
        (lambda L: lambda a, b: L.concatenate([a, b], 0), [(2, 3), (1, 3)], (1, None), (None, 0)),
        (lambda L: lambda x: L.reshape(L.squeeze(x, (0,)), (4, 2)), [(1, 2, 4)], -1, 1),
    ],
    ids=["transpose", "pad-value", "concatenate", "reshape-squeeze"],
)
def test_nested(make, shapes, inner, outer):
    # vmap of vmap with different in_axes: the inner batch dims sit around the outer ones.
    inner_t = inner if isinstance(inner, tuple) else (inner,)
    outer_t = outer if isinstance(outer, tuple) else (outer,)
    args = [
        mapped(with_axis(shape, i, B + 1), o)  # the inner axis has size B + 1
        for shape, i, o in zip(shapes, inner_t, outer_t, strict=True)
    ]
    xf, jf = both(make)
    check_vmap(
        xform.vmap(xf, inner, 1), jax.jit(jax.vmap(jf, inner, 1)), args, outer, 0, loop=False
    )


def _per_example_loss(L, np_):
    def loss(x, v, w):
        y = L.pad(x, v, [(1, 1, 1), (0, -1, 0)])
        y = L.transpose(L.concatenate([y, L.broadcast_in_dim(w, (1, 3), (1,))], 0), (1, 0))
        y = L.squeeze(L.expand_dims(L.rev(L.reshape(y, (6, 4)), (1,)), (0,)), (0,))
        return np_.sum(np_.sin(y) * y)

    return loss


def test_vmap_of_grad():
    # Per-example gradients of a loss built from every structural op, in x and the pad value.
    x, v, w = mapped((3, 4), 0), mapped((), 0), mapped((3,), None)
    xf = xform.grad(_per_example_loss(lax, xnp), argnums=(0, 1))
    jf = jax.jit(jax.grad(_per_example_loss(jax.lax, jnp), argnums=(0, 1)))
    check_vmap(xf, jf, [x, v, w], (0, 0, None), 0, rtol=1e-5, atol=1e-5)
    check_vmap(
        xf,
        jf,
        [np.moveaxis(x, 0, 1), v[0], w],
        (1, None, None),
        -1,
        rtol=1e-5,
        atol=1e-5,
        loop=False,
    )


def test_grad_of_vmap():
    x, v, w = mapped((3, 4), 1), mapped((), 0), mapped((3,), None)

    def total(L, np_, vmap, grad):
        return grad(
            lambda x, v: np_.sum(vmap(_per_example_loss(L, np_), (1, 0, None))(x, v, w)),
            argnums=(0, 1),
        )

    got = total(lax, xnp, xform.vmap, xform.grad)(x, v)
    expected = jax.jit(total(jax.lax, jnp, jax.vmap, jax.grad))(x, v)
    assert_same(got, expected, rtol=1e-5, atol=1e-5)
    assert_same(
        xform.jit(total(lax, xnp, xform.vmap, xform.grad))(x, v), expected, rtol=1e-5, atol=1e-5
    )


# --------------------------------------------------------------------------- hypothesis


@st.composite
def _shape_and_axis(draw, min_rank=0, max_rank=3):
    shape = tuple(draw(st.lists(st.integers(1, 3), min_size=min_rank, max_size=max_rank)))
    return shape, draw(st.integers(-len(shape) - 1, len(shape)))


@hypothesis.given(_shape_and_axis(min_rank=1), st.data())
def test_transpose_rev_any_axes(shape_axis, data):
    shape, axis = shape_axis
    perm = tuple(data.draw(st.permutations(range(len(shape)))))
    dims = tuple(sorted(data.draw(st.sets(st.integers(0, len(shape) - 1)))))
    out_axis = data.draw(st.integers(-len(shape) - 1, len(shape)))
    check_vmap(
        *both(lambda L: lambda x: L.rev(L.transpose(x, perm), dims)),
        [mapped(shape, axis)],
        axis,
        out_axis,
        jit=False,
    )


@hypothesis.given(_shape_and_axis(), st.data())
def test_reshape_broadcast_any_axes(shape_axis, data):
    shape, axis = shape_axis
    size = int(np.prod(shape))
    new = data.draw(st.sampled_from([(size,), (1, size), (size, 1)]))
    out_axis = data.draw(st.integers(-len(new) - 2, len(new) + 1))

    def make(L):
        # broadcast_in_dim to (2, *new): new leading dim, the reshaped dims after it.
        return lambda x: L.broadcast_in_dim(
            L.reshape(x, new), (2,) + new, tuple(range(1, len(new) + 1))
        )

    check_vmap(*both(make), [mapped(shape, axis)], axis, out_axis, jit=False)


@hypothesis.given(
    st.lists(st.one_of(st.none(), st.integers(-3, 2)), min_size=1, max_size=3).filter(
        lambda axes: any(a is not None for a in axes)
    ),
    st.integers(0, 1),
    st.booleans(),
)
def test_concatenate_and_pad_any_axes(axes, dimension, value_mapped):
    sizes = [1, 3, 2][: len(axes)]
    shapes = [(s, 2) if dimension == 0 else (2, s) for s in sizes]
    args = [mapped(s, a) for s, a in zip(shapes, axes, strict=True)]
    args.append(mapped((), 0 if value_mapped else None))
    in_axes = tuple(axes) + (0 if value_mapped else None,)

    def make(L):
        return lambda *xs: L.pad(L.concatenate(xs[:-1], dimension), xs[-1], [(1, -1, 1), (0, 1, 0)])

    check_vmap(*both(make), args, in_axes, 1, jit=False)


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "make,shape,error,match",
    [
        (lambda x: lax.reshape(x, (7,)), (2, 3), TypeError, "total size must be unchanged"),
        (lambda x: lax.squeeze(x, (1,)), (2, 3), ValueError, "cannot squeeze dimension"),
        (lambda x: lax.transpose(x, (0, 0)), (2, 3), TypeError, "is not a permutation"),
        (
            lambda x: lax.broadcast_in_dim(x, (2, 4), (0, 1)),
            (2, 3),
            TypeError,
            "must be 1 or equal",
        ),
        (
            lambda x: lax.pad(x, np.float32(0), [(1, 1, 0)]),
            (2, 3),
            ValueError,
            "one \\(low, high, interior\\) triple per axis",
        ),
        (lambda x: lax.concatenate([x, x.astype(np.int32)], 0), (2, 3), TypeError, "same dtypes"),
        (lambda x: lax.concatenate([x, x[0]], 0), (2, 3), TypeError, "different numbers"),
    ],
    ids=[
        "reshape",
        "squeeze",
        "transpose",
        "broadcast_in_dim",
        "pad",
        "concatenate-dtype",
        "concatenate-rank",
    ],
)
def test_errors_as_without_vmap(make, shape, error, match):
    x = mapped(shape, None)
    with pytest.raises(error, match=match):
        make(x)
    with pytest.raises(error, match=match):
        xform.vmap(make, 1)(mapped(shape, 1))
