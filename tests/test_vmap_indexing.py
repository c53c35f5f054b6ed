"""vmap of the indexing family (slice, dynamic_slice, dynamic_update_slice, gather and the
scatters) against jax.vmap and a Python loop over the mapped axis (``harness.check_vmap``):
mapped operands, indices and updates in every combination, in_axes and out_axes anywhere,
eager and under jit, nested, under grad; xform.numpy indexing with mapped indices; the batched
jaxprs; errors.

The JAX oracle is jitted (jax.vmap of a jit compiles one batched program, not an executable per
op); the values are integers (or integer-valued floats) so that every result is exact."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.lax import GatherDimensionNumbers as GDN
from jax.lax import ScatterDimensionNumbers as SDN

import xform
import xform.numpy as xnp
from tests.harness import assert_same, check_vmap
from xform import lax

B = 3  # the mapped axis' size
RNG = np.random.default_rng(0)
N = None


def mapped(make, axis):
    """``make()`` (one entry), or ``B`` entries of it stacked along ``axis``."""
    if axis is None:
        return make()
    return np.stack([make() for _ in range(B)], axis=axis)


def floats(*shape):
    return lambda: RNG.integers(-4, 5, shape).astype(np.float32)


def ints(lo, hi, *shape):
    return lambda: np.asarray(RNG.integers(lo, hi, shape), np.int32)


def perm(n, *shape):
    """Unique indices (a permutation prefix), with a trailing index-vector dim of size 1."""
    return lambda: RNG.permutation(n)[: int(np.prod(shape))].reshape(shape + (1,)).astype(np.int32)


def both(make):
    """``make(lax)`` for xform's lax and JAX's: the (xform fn, jitted jax fn) pair."""
    return make(lax), jax.jit(make(jax.lax))


def _axes(in_axes):
    return in_axes if isinstance(in_axes, tuple) else (in_axes,)


# --------------------------------------------------------------------------- slices


@pytest.mark.parametrize("in_axes,out_axes", [(0, 0), (1, 2), (-1, -1)])
def test_slice(in_axes, out_axes):
    x = mapped(floats(5, 6), in_axes)
    check_vmap(
        *both(lambda L: lambda x: L.slice(x, (1, 0), (4, 6), (2, 3))), [x], in_axes, out_axes
    )
    check_vmap(
        *both(lambda L: lambda x: L.index_in_dim(x, -1, 1, False)),
        [x],
        in_axes,
        min(out_axes, 1),
        jit=False,
    )


@pytest.mark.parametrize(
    "in_axes", [(0, N, N), (1, N, N), (N, 0, N), (N, 0, 0), (0, 0, N), (1, N, 0), (-1, 0, 0)]
)
def test_dynamic_slice(in_axes):
    # Starts out of range (clamped) and negative (counted from the end) included.
    x_ax, i_ax, j_ax = in_axes
    args = [mapped(floats(5, 6), x_ax), mapped(ints(-7, 8), i_ax), mapped(ints(-7, 8), j_ax)]
    check_vmap(
        *both(lambda L: lambda x, i, j: L.dynamic_slice(x, (i, j), (2, 3))),
        args,
        in_axes,
        1 if x_ax == 1 else 0,
    )


def test_dynamic_slice_of_a_scalar_and_in_dim():
    check_vmap(*both(lambda L: lambda x: L.dynamic_slice(x, (), ())), [mapped(floats(), 0)])
    args = [mapped(floats(4, 5), None), mapped(ints(-5, 5), 0)]
    check_vmap(
        *both(lambda L: lambda x, i: L.dynamic_index_in_dim(x, i, 1, False)), args, (None, 0), 1
    )


@pytest.mark.parametrize(
    "in_axes",
    [
        (0, N, N, N),
        (N, 0, N, N),
        (1, 0, N, N),
        (N, N, 0, N),
        (0, 0, 0, 0),
        (N, 1, N, 0),
        (-1, N, 0, 0),
    ],
)
def test_dynamic_update_slice(in_axes):
    x_ax, u_ax, i_ax, j_ax = in_axes
    args = [
        mapped(floats(5, 6), x_ax),
        mapped(floats(2, 3), u_ax),
        mapped(ints(-7, 8), i_ax),
        mapped(ints(-7, 8), j_ax),
    ]
    check_vmap(
        *both(lambda L: lambda x, u, i, j: L.dynamic_update_slice(x, u, (i, j))),
        args,
        in_axes,
        0 if x_ax != 1 else 1,
    )


def test_dynamic_slices_stay_dynamic_slices_with_unmapped_starts():
    # Only mapped starts turn into a gather or scatter.
    x, u = mapped(floats(5, 6), 1), mapped(floats(2, 3), 0)
    i, k = np.int32(1), mapped(ints(0, 4), 0)
    slice_ = xform.make_jaxpr(xform.vmap(lambda x: lax.dynamic_slice(x, (i, i), (2, 3)), 1, 1))(x)
    assert [e.primitive.name for e in slice_.jaxpr.eqns] == ["dynamic_slice"]
    update = xform.make_jaxpr(
        xform.vmap(lambda x, u: lax.dynamic_update_slice(x, u, (i, i)), (1, 0), 1)
    )(x, u)
    # The update is moved to the operand's batch dim; the result stays there.
    assert [e.primitive.name for e in update.jaxpr.eqns] == ["transpose", "dynamic_update_slice"]
    gather = xform.make_jaxpr(
        xform.vmap(lambda x, k: lax.dynamic_slice(x, (k, i), (2, 3)), (1, 0))
    )(x, k)
    assert [e.primitive.name for e in gather.jaxpr.eqns][-1] == "gather"


# --------------------------------------------------------------------------- gather

# (id, operand shape, index maker, dimension numbers, slice sizes)
GATHERS = {
    "rows": (
        (5, 4, 3),
        lambda: np.stack([ints(-1, 7, 6)(), ints(-1, 4, 6)()], -1),
        GDN(offset_dims=(1,), collapsed_slice_dims=(0, 2), start_index_map=(0, 2)),
        (1, 4, 1),
    ),
    "windows": (
        (4, 5, 6),
        ints(0, 4, 2, 3, 1),
        GDN(offset_dims=(0, 3), collapsed_slice_dims=(1,), start_index_map=(1,)),
        (2, 1, 3),
    ),
    "batched": (
        (4, 5),
        ints(0, 5, 4, 1),
        GDN(
            offset_dims=(),
            collapsed_slice_dims=(1,),
            start_index_map=(1,),
            operand_batching_dims=(0,),
            start_indices_batching_dims=(0,),
        ),
        (1, 1),
    ),
}


@pytest.mark.parametrize(
    "case,mode,in_axes,out_axes",
    [
        ("rows", "clip", (0, N), 0),
        ("rows", "fill", (N, 0), 1),
        ("rows", "clip", (0, 0), 0),
        ("rows", "fill", (1, -1), -1),
        ("rows", "fill", (-1, 1), 0),
        ("windows", "promise_in_bounds", (0, N), 0),
        ("windows", "clip", (N, -1), 2),
        ("windows", "promise_in_bounds", (2, 1), 0),
        ("windows", "fill", (-1, 0), 4),
        ("batched", "clip", (1, N), 0),
        ("batched", "fill", (N, 1), 1),
        ("batched", "clip", (0, 2), 0),
    ],
)
def test_gather(case, mode, in_axes, out_axes):
    shape, make_indices, dn, slice_sizes = GATHERS[case]
    args = [mapped(floats(*shape), in_axes[0]), mapped(make_indices, in_axes[1])]
    check_vmap(
        *both(lambda L: lambda x, idx: L.gather(x, idx, dn, slice_sizes, mode=mode)),
        args,
        in_axes,
        out_axes,
    )


# --------------------------------------------------------------------------- scatters

# (id, operand shape, index maker (unique indices for `scatter`), updates shape, dn)
SCATTERS = {
    "rows": (
        (5, 3),
        lambda: np.concatenate([perm(5, 3)(), [[7]]]).astype(np.int32),
        (4, 3),
        SDN(update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,)),
    ),
    "windows": (
        (4, 5, 6),
        lambda: np.stack([RNG.permutation(4)[:2], ints(0, 6, 2)()], -1).astype(np.int32),
        (2, 5),
        SDN(
            update_window_dims=(1,),
            inserted_window_dims=(0, 2),
            scatter_dims_to_operand_dims=(0, 2),
        ),
    ),
    "batched": (
        (3, 5),
        lambda: np.stack([perm(5, 2)() for _ in range(3)]),
        (3, 2),
        SDN(
            update_window_dims=(),
            inserted_window_dims=(1,),
            scatter_dims_to_operand_dims=(1,),
            operand_batching_dims=(0,),
            scatter_indices_batching_dims=(0,),
        ),
    ),
}
ALL = [(0, N, N), (N, 0, N), (N, N, 0), (0, 0, N), (0, N, 0), (N, 0, 0), (0, 0, 0)]


@pytest.mark.parametrize(
    "op,case,mode,in_axes",
    [
        *[("scatter_add", "rows", None, a) for a in ALL],
        *[("scatter", "rows", None, a) for a in ALL],
        ("scatter_mul", "rows", None, (1, N, 0)),
        ("scatter_mul", "rows", "clip", (N, 1, -1)),
        ("scatter_min", "rows", "clip", (-1, 0, 1)),
        ("scatter_min", "rows", None, (N, 0, 0)),
        ("scatter_max", "rows", None, (0, 1, N)),
        ("scatter_max", "rows", "clip", (N, N, 1)),
        ("scatter_add", "windows", "clip", (2, N, N)),
        ("scatter", "windows", None, (N, -1, 0)),
        ("scatter_max", "windows", None, (1, 0, 2)),
        ("scatter_add", "batched", None, (1, N, N)),
        ("scatter", "batched", "clip", (N, 0, 1)),
        ("scatter_min", "batched", None, (0, 2, 0)),
    ],
)
def test_scatter(op, case, mode, in_axes):
    shape, make_indices, u_shape, dn = SCATTERS[case]
    args = [
        mapped(floats(*shape), in_axes[0]),
        mapped(make_indices, in_axes[1]),
        mapped(floats(*u_shape), in_axes[2]),
    ]
    unique = op == "scatter"  # the winner of a repeated index is unspecified for `scatter`
    check_vmap(
        *both(
            lambda L: (
                lambda x, idx, u: getattr(L, op)(x, idx, u, dn, unique_indices=unique, mode=mode)
            )
        ),
        args,
        in_axes,
        1,
    )


# --------------------------------------------------------------------------- xform.numpy


@pytest.mark.parametrize(
    "name,fn,makes,in_axes",
    [
        ("x[i]", lambda x, i: x[i], [floats(5, 4), ints(-5, 5)], (N, 0)),
        ("x[i]-both", lambda x, i: x[i], [floats(5, 4), ints(-5, 5)], (1, 0)),
        ("x[:, i]", lambda x, i: x[:, i], [floats(5, 4), ints(-4, 4)], (N, 0)),
        ("x[i, 1:3]", lambda x, i: x[i, 1:3], [floats(5, 4), ints(0, 5)], (0, 0)),
        ("x[idx]", lambda x, idx: x[idx], [floats(5, 4), ints(-5, 5, 6)], (N, 0)),
        ("x[idx]-both", lambda x, idx: x[idx], [floats(5, 4), ints(-5, 5, 6)], (-1, 1)),
        (
            "x[idx, i]",
            lambda x, idx, i: x[idx, i],
            [floats(5, 4), ints(0, 5, 2, 3), ints(0, 4)],
            (N, 0, 0),
        ),
        ("x[1:, idx]", lambda x, idx: x[1:, idx], [floats(5, 4), ints(0, 4, 3)], (0, N)),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_numpy_getitem(name, fn, makes, in_axes):
    args = [mapped(m, a) for m, a in zip(makes, in_axes, strict=True)]
    check_vmap(
        lambda x, *i: fn(xnp.asarray(x), *i),
        jax.jit(lambda x, *i: fn(jnp.asarray(x), *i)),
        args,
        in_axes,
    )


@pytest.mark.parametrize(
    "method,index,in_axes",
    [
        ("set", ints(-5, 5), (N, 0, N)),
        ("set", ints(-5, 5), (N, N, 0)),
        ("set", ints(-5, 5), (N, 0, 0)),
        ("set", ints(0, 5), (1, 0, 1)),
        ("add", ints(0, 5, 6), (N, 0, N)),
        ("add", ints(0, 5, 6), (0, 0, 0)),
        ("multiply", ints(0, 5, 6), (N, 0, -1)),
        ("min", ints(-5, 5, 6), (0, N, 0)),
        ("max", ints(0, 5, 6), (N, 1, N)),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_numpy_at(method, index, in_axes):
    values = floats(4) if index().ndim == 0 else floats(index().shape[0], 4)
    args = [mapped(floats(5, 4), in_axes[0]), mapped(index, in_axes[1]), mapped(values, in_axes[2])]

    def fn(np_):
        return lambda x, i, v: getattr(np_.asarray(x).at[i], method)(v)

    check_vmap(fn(xnp), jax.jit(fn(jnp)), args, in_axes)


# --------------------------------------------------------------------------- nested, grad


def test_nested():
    # vmap of vmap with different in_axes: mapped operand, indices and updates at each level.
    # Inner vmap (size 4): rows of x, idx along its last dim, u shared; outer (size B): idx and
    # u mapped, x shared.
    x, idx, u = floats(B + 1, 5, 4)(), ints(-5, 5, B, 2, B + 1)(), floats(B, 2, 4)()

    def f(x, idx, u):
        return x.at[idx].add(u)[idx] * 2.0

    inner = (0, 1, None)
    check_vmap(
        xform.vmap(f, inner), jax.jit(jax.vmap(f, inner)), [x, idx, u], (None, 0, 0), loop=False
    )
    x, i = floats(B, 5, 4)(), ints(-5, 5, B + 1, B)()
    check_vmap(
        xform.vmap(lambda x, i: lax.dynamic_slice(x, (i, 0), (2, 4)), (None, 0)),
        jax.jit(jax.vmap(lambda x, i: jax.lax.dynamic_slice(x, (i, 0), (2, 4)), (None, 0))),
        [x, i],
        (0, 1),
        2,
        loop=False,
    )


def _loss(np_, L):
    def loss(x, i, idx, u):
        y = L.dynamic_slice(x, (i, 0), (2, 4))
        z = x.at[idx].add(u)
        w = L.dynamic_update_slice(x, y * 2.0, (1 - i, 1))
        v = x.at[i].set(u[0] * 3.0)  # one index: no tie for the gradient to break
        return np_.sum(np_.sin(y)) + np_.sum(z[idx] ** 2) + np_.sum(np_.cos(w) * x) + np_.sum(v * v)

    return loss


@pytest.mark.parametrize("in_axes", [(0, 0, 0, 0), (N, 0, 0, N), (0, N, N, 0)])
def test_vmap_of_grad(in_axes):
    # Per-example gradients through dynamic_slice, gather, scatter_add, dynamic_update_slice,
    # scatter.
    args = [
        mapped(floats(5, 4), in_axes[0]),
        mapped(ints(-5, 5), in_axes[1]),
        mapped(ints(-5, 5, 3), in_axes[2]),
        mapped(floats(3, 4), in_axes[3]),
    ]
    xf = xform.grad(_loss(xnp, lax), argnums=(0, 3))
    jf = jax.jit(jax.grad(_loss(jnp, jax.lax), argnums=(0, 3)))
    check_vmap(xf, jf, args, in_axes, rtol=1e-5, atol=1e-5)


def test_grad_of_vmap():
    # The transposes of the batched ops: scatters and gathers with batching dims.
    x, i, idx, u = floats(B, 5, 4)(), ints(-5, 5, B)(), ints(-5, 5, B, 3)(), floats(3, 4)()

    def total(np_, L, vmap, grad):
        def f(x, u):
            per_example = vmap(_loss(np_, L), (0, 0, 0, None))(x, i, idx, u)
            shared = vmap(lambda i: L.dynamic_update_slice(x[0], u[:1], (i, 0)))(i)
            return np_.sum(per_example) + np_.sum(np_.sin(shared))

        return grad(f, argnums=(0, 1))

    expected = jax.jit(total(jnp, jax.lax, jax.vmap, jax.grad))(x, u)
    assert_same(total(xnp, lax, xform.vmap, xform.grad)(x, u), expected, rtol=1e-5, atol=1e-5)
    assert_same(
        xform.jit(total(xnp, lax, xform.vmap, xform.grad))(x, u), expected, rtol=1e-5, atol=1e-5
    )


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "fn,in_axes,error,match",
    [
        (
            lambda x, i: lax.dynamic_slice(x, (i, np.int16(0)), (2, 3)),
            (None, 0),
            TypeError,
            "start indices must be integers of one dtype",
        ),
        (
            lambda x, i: lax.dynamic_slice(x, (i, i), (6, 3)),
            (0, 0),
            TypeError,
            "slice_sizes \\(6, 3\\) must be in",
        ),
        (
            lambda x, i: lax.dynamic_update_slice(x, x[:2].astype(np.int32), (i, i)),
            (None, 0),
            TypeError,
            "requires arguments to have the same dtypes",
        ),
        (
            lambda x, i: lax.gather(x, i[None, None], GDN((1,), (0,), (0,)), (1, 7)),
            (None, 0),
            TypeError,
            "slice_sizes \\(1, 7\\) must be in",
        ),
        (
            lambda x, i: lax.scatter_add(x, i[None, None], x, SDN((1,), (0,), (0,))),
            (0, 0),
            TypeError,
            "must match the batch dims of indices",
        ),
    ],
    ids=[
        "dynamic_slice-dtypes",
        "dynamic_slice-sizes",
        "dynamic_update_slice",
        "gather",
        "scatter",
    ],
)
def test_errors_as_without_vmap(fn, in_axes, error, match):
    x, i = floats(5, 6)(), np.int32(1)
    with pytest.raises(error, match=match):
        fn(x, i)
    args = [mapped(lambda: x, in_axes[0]), mapped(lambda: i, in_axes[1])]
    with pytest.raises(error, match=match):
        xform.vmap(fn, in_axes)(*args)
