"""Structural operations of the BCOO layout on bare buffers: sort, reverse, slice,
concatenate, broadcast (see ``_core.py`` for the layout).

Each moves entries or rewrites their coordinates; an entry that leaves the array (sliced
away) becomes padding, with zero data and the out-of-bounds coordinate ``sparse_shape``.
"""

import math
import operator

import numpy as np

from xform import lax
from xform import numpy as jnp
from xform.experimental.sparse import _core


def sort_indices(data, indices, shape):
    """``(data, indices)`` with the entries in row-major order of their indices (padding
    last, since its coordinates are the largest)."""
    p = _core.props(data, indices, shape)
    data, indices = _core.full_batch(data, indices, p.n_batch)
    if p.n_sparse == 0:
        return data, indices

    def unbatched(d, i):
        # lexsort's last key is the primary one
        order = jnp.lexsort(tuple(i[:, k] for k in reversed(range(p.n_sparse))))
        return d[order], i[order]

    return _core.nfold_vmap(unbatched, p.n_batch)(data, indices)


def rev(data, indices, shape, dimensions):
    """``(data, indices)`` of the array reversed along ``dimensions``."""
    p = _core.props(data, indices, shape)
    nb, ns = p.n_batch, p.n_sparse
    dims = sorted({operator.index(d) % len(shape) for d in dimensions})
    data, indices = _core.full_batch(data, indices, nb)
    batch_dims = [d for d in dims if d < nb]
    if batch_dims:
        data, indices = jnp.flip(data, batch_dims), jnp.flip(indices, batch_dims)
    dense_dims = [d - ns + 1 for d in dims if d >= nb + ns]
    if dense_dims:
        data = jnp.flip(data, dense_dims)
    sparse_dims = [d - nb for d in dims if nb <= d < nb + ns]
    if sparse_dims:
        sparse_shape = tuple(shape[nb : nb + ns])
        valid = _core.in_bounds(indices, sparse_shape)[..., None]
        flip = np.zeros(ns, bool)
        flip[sparse_dims] = True
        flipped = jnp.array(sparse_shape, indices.dtype) - 1 - indices
        indices = jnp.where(valid & flip, flipped, indices)  # padding stays padding
    return data, indices


def _drop_invalid(data, indices, keep, new_sparse):
    """Entries where ``keep`` is False become padding: coordinate ``new_sparse``, zero data."""
    indices = jnp.where(keep[..., None], indices, _core.fill_value(new_sparse, indices.dtype))
    extra = (1,) * (data.ndim - keep.ndim)
    return jnp.where(keep.reshape(*keep.shape, *extra), data, 0), indices


def slice_(data, indices, shape, start_indices, limit_indices, strides=None):
    """``(data, indices, shape)`` of ``lax.slice`` of the array; entries outside the slice
    become padding, and ``nse`` shrinks to the slice's sparse size if that is smaller."""
    p = _core.props(data, indices, shape)
    nb, ns = p.n_batch, p.n_sparse
    ndim = len(shape)
    start = tuple(operator.index(i) for i in start_indices)
    limit = tuple(operator.index(i) for i in limit_indices)
    strides = (1,) * ndim if strides is None else tuple(operator.index(s) for s in strides)
    if not len(start) == len(limit) == len(strides) == ndim:
        raise ValueError(
            f"bcoo_slice: start_indices, limit_indices and strides must have "
            f"length {ndim} (the array's rank); got {start}, {limit}, {strides}"
        )
    for d in range(ndim):
        if not 0 <= start[d] <= limit[d] <= shape[d] or strides[d] < 1:
            raise ValueError(
                f"bcoo_slice: invalid slice {start[d]}:{limit[d]}:{strides[d]} "
                f"of dimension {d} of size {shape[d]}"
            )
    new_shape = tuple(-(-(hi - lo) // s) for lo, hi, s in zip(start, limit, strides, strict=True))
    data, indices = _core.full_batch(data, indices, nb)
    batch = tuple(
        slice(lo, hi, s) for lo, hi, s in zip(start[:nb], limit[:nb], strides[:nb], strict=True)
    )
    data = data[
        (
            *batch,
            slice(None),
            *(
                slice(lo, hi, s)
                for lo, hi, s in zip(
                    start[nb + ns :], limit[nb + ns :], strides[nb + ns :], strict=True
                )
            ),
        )
    ]
    indices = indices[batch]
    if ns:
        lo = jnp.array(start[nb : nb + ns], indices.dtype)
        hi = jnp.array(limit[nb : nb + ns], indices.dtype)
        step = jnp.array(strides[nb : nb + ns], indices.dtype)
        keep = jnp.all((indices >= lo) & (indices < hi) & ((indices - lo) % step == 0), -1)
        new_sparse = new_shape[nb : nb + ns]
        data, indices = _drop_invalid(data, (indices - lo) // step, keep, new_sparse)
        size = math.prod(new_sparse)
        if size < p.nse:
            data, indices = _core.sum_duplicates(data, indices, new_shape, nse=size)
    return data, indices, new_shape


def concatenate(operands, dimension):
    """``(data, indices, shape)`` of operands ``(data, indices, shape)`` of one layout joined
    along ``dimension``: along a sparse dimension the entries of all are kept (their
    coordinates offset), along a batch dimension the batches are stacked (``nse`` padded to
    the largest)."""
    if not operands:
        raise ValueError("bcoo_concatenate: need at least one array to concatenate.")
    shapes = [tuple(s) for _, _, s in operands]
    ndim = len(shapes[0])
    dimension = operator.index(dimension)
    if not 0 <= dimension < ndim:
        raise ValueError(
            f"bcoo_concatenate: dimension {dimension} is out of bounds for arrays of rank {ndim}"
        )
    if any(
        len(s) != ndim
        or s[:dimension] + s[dimension + 1 :] != shapes[0][:dimension] + shapes[0][dimension + 1 :]
        for s in shapes
    ):
        raise ValueError(
            f"bcoo_concatenate: all operands must have the same shape except in "
            f"dimension {dimension}; got shapes {shapes}"
        )
    props = [_core.props(*op) for op in operands]
    nb, ns = props[0].n_batch, props[0].n_sparse
    if any((q.n_batch, q.n_sparse) != (nb, ns) for q in props):
        raise ValueError("bcoo_concatenate: operands must have the same n_batch and n_sparse")
    if dimension >= nb + ns:
        raise NotImplementedError("Concatenation along dense dimensions.")
    out_shape = (
        *shapes[0][:dimension],
        sum(s[dimension] for s in shapes),
        *shapes[0][dimension + 1 :],
    )
    dtype = jnp.result_type(*(d for d, _, _ in operands))
    bufs = [_core.full_batch(d.astype(dtype), i, nb) for d, i, _ in operands]
    if dimension < nb:
        nse = max(q.nse for q in props)
        sparse_shape = tuple(out_shape[nb : nb + ns])
        padded = [_pad_nse(d, i, nse, nb, sparse_shape) for d, i in bufs]
        data = jnp.concatenate([d for d, _ in padded], axis=dimension)
        indices = jnp.concatenate([i for _, i in padded], axis=dimension)
        return data, indices, out_shape
    col = dimension - nb
    offsets = np.cumsum([0, *(s[dimension] for s in shapes[:-1])])
    sparse_shape = tuple(out_shape[nb : nb + ns])
    moved = []
    for (d, i), s, off in zip(bufs, shapes, offsets, strict=True):
        valid = _core.in_bounds(i, tuple(s[nb : nb + ns]))
        shifted = i.at[..., col].add(int(off))
        moved.append(_drop_invalid(d, shifted, valid, sparse_shape))  # padding stays padding
    data = jnp.concatenate([d for d, _ in moved], axis=nb)
    indices = jnp.concatenate([i for _, i in moved], axis=nb)
    return data, indices, out_shape


def _pad_nse(data, indices, nse, n_batch, sparse_shape):
    """``data`` and ``indices`` padded with padding entries to ``nse`` entries per batch."""
    extra = nse - indices.shape[-2]
    if not extra:
        return data, indices
    pad = [(0, 0)] * data.ndim
    pad[n_batch] = (0, extra)
    fill = _core.fill_value(sparse_shape, indices.dtype, (*indices.shape[:-2], extra))
    return jnp.pad(data, pad), jnp.concatenate([indices, fill], axis=n_batch)


def broadcast_in_dim(data, indices, shape, out_shape, broadcast_dimensions):
    """``(data, indices, n_batch)`` of ``lax.broadcast_in_dim`` of the array. New dimensions
    ahead of the sparse ones become batch dimensions, new ones after them dense dimensions
    (if the array has dense ones), and new ones among them size-1 sparse dimensions."""
    p = _core.props(data, indices, shape)
    nb, ns = p.n_batch, p.n_sparse
    out_shape = tuple(operator.index(d) for d in out_shape)
    bdims = tuple(operator.index(d) for d in broadcast_dimensions)
    if len(bdims) != len(shape) or any(
        shape[i] not in (1, out_shape[d]) for i, d in enumerate(bdims)
    ):
        raise TypeError(
            f"broadcast_in_dim: operand of shape {tuple(shape)} cannot be "
            f"broadcast to {out_shape} with broadcast_dimensions={bdims}"
        )
    if ns:
        first_sparse, last_sparse = bdims[nb], bdims[nb + ns - 1]
    else:
        first_sparse = bdims[nb] if nb < len(bdims) else len(out_shape)
        last_sparse = first_sparse - 1
    kind = {}
    for i, d in enumerate(bdims):
        kind[d] = "batch" if i < nb else "sparse" if i < nb + ns else "dense"
    for d in range(len(out_shape)):
        if d not in kind:
            kind[d] = (
                "batch"
                if d < first_sparse
                else "dense"
                if p.n_dense and d > last_sparse
                else "sparse"
            )
    for d, i in zip(bdims[nb : nb + ns], range(nb, nb + ns), strict=True):
        if shape[i] != out_shape[d]:
            raise NotImplementedError("Adding sparse dimensions with lengths != 1")
    new_sparse = [d for d in range(len(out_shape)) if kind[d] == "sparse" and d not in bdims]
    if any(out_shape[d] != 1 for d in new_sparse):
        raise NotImplementedError("Adding sparse dimensions with lengths != 1")
    out_batch = [d for d in range(len(out_shape)) if kind[d] == "batch"]
    out_sparse = [d for d in range(len(out_shape)) if kind[d] == "sparse"]
    out_dense = [d for d in range(len(out_shape)) if kind[d] == "dense"]
    if out_batch + out_sparse + out_dense != list(range(len(out_shape))):
        raise NotImplementedError(
            f"bcoo_broadcast_in_dim: dimensions {bdims} would mix "
            "batch, sparse and dense dimensions"
        )
    data, indices = _core.full_batch(data, indices, nb)
    # batch and dense dims: broadcast the buffers, the entry axis kept in place
    batch_shape = tuple(out_shape[d] for d in out_batch)
    dense_shape = tuple(out_shape[d] for d in out_dense)
    in_batch = [out_batch.index(d) for d in bdims[:nb]]
    in_dense = [len(batch_shape) + 1 + out_dense.index(d) for d in bdims[nb + ns :]]
    nbo = len(batch_shape)
    data = jnp.broadcast_to(
        data.reshape(_placed(data.shape, [*in_batch, nbo, *in_dense], nbo + 1 + len(dense_shape))),
        (*batch_shape, p.nse, *dense_shape),
    )
    indices = jnp.broadcast_to(
        indices.reshape(_placed(indices.shape, [*in_batch, nbo, nbo + 1], nbo + 2)),
        (*batch_shape, p.nse, ns),
    )
    # sparse dims: a zero column for each new size-1 sparse dimension
    cols = []
    for d in out_sparse:
        if d in bdims:
            cols.append(indices[..., bdims[nb : nb + ns].index(d)])
        else:
            cols.append(jnp.zeros(indices.shape[:-1], indices.dtype))
    indices = jnp.stack(cols, axis=-1) if cols else indices[..., :0]
    # a padding entry must stay out of bounds in its new columns too
    valid = _core.in_bounds(indices, tuple(out_shape[d] for d in out_sparse)) if ns else None
    if valid is not None:
        indices = jnp.where(
            valid[..., None],
            indices,
            _core.fill_value(tuple(out_shape[d] for d in out_sparse), indices.dtype),
        )
    return data, indices, out_shape


def _placed(in_shape, positions, ndim):
    """The shape of rank ``ndim`` holding ``in_shape``'s dims at ``positions``, 1 elsewhere."""
    out = [1] * ndim
    for size, pos in zip(in_shape, positions, strict=True):
        out[pos] = size
    return tuple(out)


def update_layout(data, indices, shape, n_batch, n_dense):
    """``(data, indices)`` of the same array with ``n_batch`` batch and ``n_dense`` dense
    dimensions. Dense or batch dimensions turned sparse multiply the entries; sparse ones
    turned dense or batch spread each entry over a block (the inefficient directions, which
    the caller checks)."""
    p = _core.props(data, indices, shape)
    data, indices = _core.full_batch(data, indices, p.n_batch)
    nb, nd = p.n_batch, p.n_dense
    if n_dense < nd:  # leading dense dims -> trailing sparse dims, one entry per position
        k = nd - n_dense
        block = data.shape[nb + 1 : nb + 1 + k]

        def to_sparse(d, i):
            grid = np.indices(block).reshape(k, -1).T.astype(i.dtype)  # every position
            count = grid.shape[0]
            new_i = jnp.concatenate(
                [jnp.repeat(i, count, axis=0), jnp.tile(jnp.asarray(grid), (i.shape[0], 1))], axis=1
            )
            return d.reshape(math.prod(d.shape[: 1 + k]), *d.shape[1 + k :]), new_i

        data, indices = _core.nfold_vmap(to_sparse, nb)(data, indices)
        nd = n_dense
    if n_batch < nb:  # trailing batch dims -> leading sparse dims, entries merged
        k = nb - n_batch

        def merge(d, i):
            outer = i.shape[:k]
            grid = np.indices((*outer, i.shape[k])).reshape(k + 1, -1)[:k].T
            new_i = jnp.concatenate(
                [jnp.asarray(grid.astype(i.dtype)), i.reshape(grid.shape[0], i.shape[-1])], axis=1
            )
            return d.reshape(grid.shape[0], *d.shape[k + 1 :]), new_i

        data, indices = _core.nfold_vmap(merge, n_batch)(data, indices)
        nb = n_batch
    ns = len(shape) - nb - nd
    if n_dense > nd:  # trailing sparse dims -> leading dense dims of each entry's block
        k = n_dense - nd
        block = tuple(shape[nb + ns - k : nb + ns])

        def to_dense(d, i):
            out = jnp.zeros((i.shape[0], *block, *d.shape[1:]), d.dtype)
            at = (jnp.arange(i.shape[0]), *(i[:, c] for c in range(ns - k, ns)))
            return out.at[at].set(d, mode="drop"), i[:, : ns - k]

        data, indices = _core.nfold_vmap(to_dense, nb)(data, indices)
        # a padding entry must stay padding in the columns it keeps
        ns -= k
        nd = n_dense
    if n_batch > nb:  # leading sparse dims -> trailing batch dims, entry slots kept
        k = n_batch - nb
        batch = tuple(shape[nb : nb + k])

        def to_batch(d, i):
            nse = i.shape[0]
            out = jnp.zeros((*batch, *d.shape), d.dtype)
            at = (*(i[:, c] for c in range(k)), jnp.arange(nse))
            return (
                out.at[at].set(d, mode="drop"),
                jnp.broadcast_to(i[:, k:], (*batch, nse, i.shape[1] - k)),
            )

        data, indices = _core.nfold_vmap(to_batch, nb)(data, indices)
    return data, indices


def dynamic_slice(data, indices, shape, start_indices, slice_sizes):
    """``(data, indices, shape)`` of ``lax.dynamic_slice`` of the array: ``start_indices`` may
    be traced (clamped so the slice fits, as ``lax.dynamic_slice``), ``slice_sizes`` static."""
    p = _core.props(data, indices, shape)
    nb, ns = p.n_batch, p.n_sparse
    sizes = tuple(operator.index(s) for s in slice_sizes)
    if len(start_indices) != len(shape) or len(sizes) != len(shape):
        raise ValueError(
            f"bcoo_dynamic_slice: start_indices and slice_sizes must have length "
            f"{len(shape)} (the array's rank); got {len(start_indices)} and "
            f"{len(sizes)}"
        )
    if any(not 0 <= s <= d for s, d in zip(sizes, shape, strict=True)):
        raise TypeError(
            f"slice slice_sizes must be less than or equal to operand shape, got "
            f"slice_sizes {sizes} for operand shape {tuple(shape)}"
        )
    starts = [
        jnp.clip(jnp.asarray(s), 0, d - z)
        for s, d, z in zip(start_indices, shape, sizes, strict=True)
    ]
    data, indices = _core.full_batch(data, indices, nb)
    zero = jnp.zeros((), starts[0].dtype) if starts else 0
    data = lax.dynamic_slice(
        data, [*starts[:nb], zero, *starts[nb + ns :]], [*sizes[:nb], p.nse, *sizes[nb + ns :]]
    )
    indices = lax.dynamic_slice(indices, [*starts[:nb], zero, zero], [*sizes[:nb], p.nse, ns])
    if ns:
        lo = jnp.stack([s.astype(indices.dtype) for s in starts[nb : nb + ns]])
        new_sparse = sizes[nb : nb + ns]
        keep = jnp.all((indices >= lo) & (indices < lo + jnp.array(new_sparse, indices.dtype)), -1)
        data, indices = _drop_invalid(data, indices - lo, keep, new_sparse)
        if math.prod(new_sparse) < p.nse:
            data, indices = _core.sum_duplicates(data, indices, sizes, nse=math.prod(new_sparse))
    return data, indices, sizes
