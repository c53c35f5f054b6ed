"""``lax``'s compositions of gather and scatter: ``scatter_apply`` and ``index_take``.

Each is a composition of the primitives of xform/primitives/gather_scatter.py, so its
derivatives and batching come from theirs.
"""

import numpy as np

from xform import dtypes
from xform.core import get_aval, is_concrete_array
from xform.primitives.base import canonicalize_axis
from xform.primitives.comparisons import lt, select
from xform.primitives.elementwise import add, rem
from xform.primitives.gather_scatter import (
    GatherDimensionNumbers,
    GatherScatterMode,
    ScatterDimensionNumbers,
    _as_dnums,
    gather,
    scatter_add_p,
)
from xform.primitives.reductions import reduce_max
from xform.primitives.structural import (
    broadcast_in_dim,
    concatenate,
    full,
    reshape,
)
from xform.primitives.while_loop import while_loop

__all__ = ["scatter_apply", "index_take"]


def scatter_apply(
    operand,
    scatter_indices,
    func,
    dimension_numbers,
    *,
    update_shape=(),
    indices_are_sorted=False,
    unique_indices=False,
    mode=None,
):
    """``operand`` with the unary elementwise ``func`` applied at the windows that
    ``scatter_indices`` and ``dimension_numbers`` select (``x.at[idx].apply(func)``);
    ``update_shape`` is the shape the updates of such a scatter would have.

    As in JAX, an element that several windows select gets ``func`` applied once per
    window.
    """
    dn = _as_dnums(ScatterDimensionNumbers, dimension_numbers, "lax.scatter_apply")
    if not callable(func):
        raise TypeError(f"lax.scatter_apply: func must be callable, got {func!r}")
    dtype = get_aval(operand).dtype
    # Where some window lands, by a scatter of ones with the same windows and mode.
    hits = scatter_add_p.bind(
        full(get_aval(operand).shape, 0, dtypes.int32),
        scatter_indices,
        full(update_shape, 1, dtypes.int32),
        dimension_numbers=dn,
        indices_are_sorted=bool(indices_are_sorted),
        unique_indices=bool(unique_indices),
        mode=GatherScatterMode.from_any(mode),
    )
    applied = func(operand)
    if get_aval(applied).dtype != dtype:
        raise TypeError(
            f"lax.scatter_apply: func must keep the operand's dtype {dtype}, got "
            f"{get_aval(applied).dtype}"
        )
    out = select(lt(np.int32(0), hits), applied, operand)
    most = reduce_max(hits, tuple(range(len(get_aval(hits).shape))))
    if is_concrete_array(most):  # known now: apply it again where windows repeat
        for i in range(1, int(most)):
            out = select(lt(np.int32(i), hits), func(out), out)
        return out

    def again(carry):
        i, y = carry
        return i + 1, select(lt(i, hits), func(y), y)

    return while_loop(lambda c: lt(c[0], most), again, (np.int32(1), out))[1]


def index_take(src, idxs, axes):
    """``src`` indexed along ``axes`` by the integer arrays ``idxs`` (one per axis, of one
    shape; negative or large indices wrap around): JAX's ``lax.index_take``."""
    src_shape = get_aval(src).shape
    for a in axes:  # IndexError, as JAX's (which indexes src.shape with the axis)
        if not -len(src_shape) <= a < len(src_shape):
            raise IndexError(
                f"lax.index_take: axis {a} is out of bounds for src of shape {src_shape}"
            )
    axes = tuple(canonicalize_axis(a, len(src_shape), "lax.index_take") for a in axes)
    idxs = tuple(idxs)
    if len(idxs) != len(axes):
        raise TypeError(
            f"lax.index_take: one index array per axis, got {len(idxs)} index "
            f"arrays for axes {axes}"
        )
    indices = concatenate(
        [reshape(i, get_aval(i).shape[:1] + (1,) + get_aval(i).shape[1:]) for i in idxs], 1
    )
    i_aval = get_aval(indices)
    sizes = broadcast_in_dim(
        np.array([src_shape[a] for a in axes], i_aval.dtype), i_aval.shape, (i_aval.ndim - 1,)
    )
    r = rem(indices, sizes)  # a floor modulo: a negative index counts from the end
    indices = select(lt(r, np.zeros((), i_aval.dtype)), add(r, sizes), r)
    slice_sizes = tuple(1 if d in axes else n for d, n in enumerate(src_shape))
    dn = GatherDimensionNumbers(
        offset_dims=tuple(range(1, len(src_shape) - len(axes) + 1)),
        collapsed_slice_dims=axes,
        start_index_map=axes,
    )
    return gather(src, indices, dn, slice_sizes)
