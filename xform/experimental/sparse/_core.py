"""The BCOO layout's operations on bare buffers: ``(data, indices)`` and a static ``shape``.

A BCOO array of shape ``batch + sparse + dense`` stores ``data`` of shape
``batch + (nse,) + dense`` and ``indices`` of shape ``batch + (nse, n_sparse)``: entry ``k`` of
each batch holds the dense block ``data[..., k, :]`` at sparse coordinates
``indices[..., k, :]``. Unused entries ("padding") hold the coordinate ``sparse_shape``, out of
bounds, so scatters drop them and gathers read a zero there.

Everything here is a composition of xform's own primitives (gather, scatter-add,
dot_general, sort), so ``grad``, ``vmap`` and ``jit`` go through their rules. An operation is
written for one batch element ("unbatched") and mapped over the batch dimensions with
``xform.vmap``. The ``BCOO`` class (``bcoo.py``) wraps these functions; keeping them free of
the class lets the matmul module and the class module import this one without a cycle.
"""

import math
import operator
from typing import NamedTuple

import numpy as np

from xform import lax
from xform import numpy as jnp
from xform.api.batching import vmap
from xform.errors import ConcretizationTypeError


class Props(NamedTuple):
    """The layout read off the buffers' shapes."""

    n_batch: int
    n_sparse: int
    n_dense: int
    nse: int


def props(data, indices, shape):
    """The layout of ``(data, indices)`` as a BCOO array of ``shape``; a ValueError if the
    buffers disagree with the shape (as JAX's ``_validate_bcoo``)."""
    shape = tuple(shape)
    if indices.ndim < 2:
        raise ValueError(
            f"BCOO: indices must have at least 2 dimensions, got shape {indices.shape}"
        )
    n_batch, (nse, n_sparse) = indices.ndim - 2, indices.shape[-2:]
    n_dense = len(shape) - n_batch - n_sparse
    if n_dense < 0:
        raise ValueError(f"BCOO: indices of shape {indices.shape} do not fit shape {shape}")
    want = (*shape[:n_batch], nse, *shape[n_batch + n_sparse :])
    if data.ndim != len(want) or data.shape[n_batch:] != want[n_batch:]:
        raise ValueError(
            f"BCOO: data of shape {data.shape} does not fit indices of shape "
            f"{indices.shape} and shape {shape}; expected data shape {want}"
        )
    for d in range(n_batch):  # batch dims may be broadcast (size 1) in either buffer
        if {data.shape[d], indices.shape[d], shape[d]} - {1, shape[d]}:
            raise ValueError(
                f"BCOO: batch dimension {d} of data {data.shape} or indices "
                f"{indices.shape} does not match shape {shape}"
            )
    return Props(n_batch, n_sparse, n_dense, nse)


def unflattened_shape(shape, data, indices, index_rank):
    """The shape of a sparse array rebuilt from its leaves (``index_rank``: the rank of
    ``indices`` without batch dims, 2 for BCOO, 1 for BCSR).

    ``vmap`` rebuilds a sparse array from leaves that lost (inside) or gained (outside) a
    leading batch dimension while the static shape stayed as it was; the batch part of the
    shape is then read off the leaves, the sparse and dense part kept.
    """
    if not (hasattr(data, "ndim") and hasattr(indices, "ndim")):
        return shape  # tree utilities rebuild with placeholders as leaves
    n_batch = indices.ndim - index_rank
    if n_batch < 0:
        raise ValueError(
            f"Cannot map in_axis=0 for {'BCOO' if index_rank == 2 else 'BCSR'} "
            "array with n_batch=0. in_axes for batched BCOO operations must "
            "correspond to a batch dimension."
        )
    trailing = data.ndim - n_batch - 1 + (indices.shape[-1] if index_rank == 2 else 2)
    if len(shape) - trailing == n_batch:
        return tuple(shape)
    batch = np.broadcast_shapes(data.shape[:n_batch], indices.shape[:n_batch])
    return (*batch, *shape[len(shape) - trailing :])


def nfold_vmap(fun, n, in_axes=0, out_axes=0):
    """``fun`` mapped ``n`` times over its leading axes (the batch dimensions)."""
    for _ in range(n):
        fun = vmap(fun, in_axes=in_axes, out_axes=out_axes)
    return fun


def full_batch(data, indices, n_batch):
    """``data`` and ``indices`` with their batch dimensions broadcast to one common shape, so
    that a ``vmap`` maps both."""
    batch = np.broadcast_shapes(data.shape[:n_batch], indices.shape[:n_batch])
    data = jnp.broadcast_to(data, (*batch, *data.shape[n_batch:]))
    indices = jnp.broadcast_to(indices, (*batch, *indices.shape[n_batch:]))
    return data, indices


def concrete_int(x, what):
    """``x`` as a Python int; a ConcretizationTypeError naming ``what`` when it is traced."""
    try:
        return operator.index(x) if isinstance(x, int) else int(np.asarray(x))
    except ConcretizationTypeError as e:
        raise ConcretizationTypeError(
            f"{what} must be known while tracing, since it sets the number of stored "
            f"elements (an array length); pass it as a Python int: {e}"
        ) from e


def fill_value(sparse_shape, dtype, lead=()):
    """Padding indices: the coordinate ``sparse_shape``, broadcast to ``lead + (n_sparse,)``."""
    fill = jnp.array(sparse_shape, dtype=dtype) if sparse_shape else jnp.zeros(0, dtype)
    return jnp.broadcast_to(fill, (*lead, len(sparse_shape)))


def in_bounds(indices, sparse_shape):
    """Which rows of ``indices`` (..., nse, n_sparse) are real entries, not padding."""
    bound = fill_value(sparse_shape, indices.dtype)
    return jnp.all(indices < bound, axis=-1)


def as_index_tuple(indices):
    """The columns of ``indices`` (nse, n_sparse) as a tuple, for ``.at[...]`` indexing."""
    return tuple(indices[:, i] for i in range(indices.shape[-1]))


# ------------------------------------------------------------------------- to and from dense


def _fromdense_unbatched(mat, *, nse, n_dense, index_dtype):
    sparse_shape = mat.shape[: mat.ndim - n_dense]
    if not sparse_shape:  # no sparse dims: the one entry is the whole (dense) array
        return mat[None], jnp.zeros((1, 0), index_dtype)
    mask = mat != 0
    if n_dense:
        mask = jnp.any(mask, axis=tuple(range(len(sparse_shape), mat.ndim)))
    found = jnp.nonzero(mask, size=nse, fill_value=tuple(sparse_shape))
    indices = jnp.stack([i.astype(index_dtype) for i in found], axis=1)
    data = mat.at[found].get(mode="fill", fill_value=0)
    return data, indices


def fromdense(mat, *, nse=None, n_batch=0, n_dense=0, index_dtype=np.int32):
    """``(data, indices)`` of the nonzeros of ``mat`` (see ``bcoo_fromdense``)."""
    mat = jnp.asarray(mat)
    n_sparse = mat.ndim - n_batch - n_dense
    if n_batch < 0 or n_dense < 0 or n_sparse < 0:
        raise ValueError(
            f"Invalid n_batch={n_batch}, n_dense={n_dense} for array of shape "
            f"{mat.shape}: both must be non-negative with sum at most {mat.ndim}"
        )
    if nse is None:
        try:
            dense = np.asarray(mat)
        except ConcretizationTypeError as e:
            raise ConcretizationTypeError(
                f"bcoo_fromdense: the nse argument is None, so it would be the largest "
                f"number of nonzeros in a batch, but the array is traced. Pass a static "
                f"`nse`: {e}"
            ) from e
        mask = dense != 0
        if n_dense:
            mask = mask.any(axis=tuple(range(mat.ndim - n_dense, mat.ndim)))
        mask = mask.reshape(*mask.shape[:n_batch], -1)
        nse = 1 if n_sparse == 0 else int(mask.sum(-1).max(initial=0))
    nse = concrete_int(nse, "nse argument of bcoo_fromdense")

    def unbatched(m):
        return _fromdense_unbatched(m, nse=nse, n_dense=n_dense, index_dtype=index_dtype)

    return nfold_vmap(unbatched, n_batch)(mat)


def _todense_unbatched(data, indices, *, shape):
    if indices.shape[-1] == 0:  # no sparse dims: sum the entries
        return data.sum(0)
    out = jnp.zeros(shape, data.dtype)
    return out.at[as_index_tuple(indices)].add(data, mode="drop")


def todense(data, indices, shape):
    """The dense array of shape ``shape`` (duplicate entries summed, padding dropped)."""
    p = props(data, indices, shape)
    data, indices = full_batch(data, indices, p.n_batch)
    batch = data.shape[: p.n_batch]
    out = nfold_vmap(
        lambda d, i: _todense_unbatched(d, i, shape=tuple(shape[p.n_batch :])), p.n_batch
    )(data, indices)
    # a broadcast batch dim (size 1 in both buffers) is broadcast to the full shape
    return jnp.broadcast_to(out, shape) if batch != tuple(shape[: p.n_batch]) else out


def extract(indices, mat, n_dense=0):
    """The entries of dense ``mat`` at ``indices``: the data of a BCOO array with these indices
    (0 at padding), as ``bcoo_extract``."""
    n_batch = indices.ndim - 2
    batch = np.broadcast_shapes(indices.shape[:n_batch], mat.shape[:n_batch])
    indices = jnp.broadcast_to(indices, (*batch, *indices.shape[n_batch:]))
    mat = jnp.broadcast_to(mat, (*batch, *mat.shape[n_batch:]))

    def unbatched(i, m):
        if i.shape[-1] == 0:
            return jnp.broadcast_to(m[None], (i.shape[0], *m.shape))
        return m.at[as_index_tuple(i)].get(mode="fill", fill_value=0)

    return nfold_vmap(unbatched, n_batch)(indices, mat)


# ------------------------------------------------------------------------- layout


def sum_duplicates(data, indices, shape, nse=None):
    """``(data, indices)`` with repeated indices summed into one entry, sorted by index, and
    ``nse`` entries (padded or truncated); ``nse=None`` counts the unique entries, which
    needs concrete indices."""
    p = props(data, indices, shape)
    data, indices = full_batch(data, indices, p.n_batch)
    sparse_shape = tuple(shape[p.n_batch : p.n_batch + p.n_sparse])
    if p.n_sparse == 0:  # one entry per batch: the sum of all of them
        data = data.sum(p.n_batch, keepdims=True)
        return data, indices[..., :1, :]
    if nse is None:
        try:
            host = np.asarray(indices).reshape(-1, p.nse, p.n_sparse)
        except ConcretizationTypeError as e:
            raise ConcretizationTypeError(
                f"bcoo_sum_duplicates: nse is None, so it would be counted from the indices, "
                f"but they are traced. Pass a static `nse`: {e}"
            ) from e
        valid = (host < np.array(sparse_shape)).all(-1)
        nse = max(
            (len({tuple(r) for r in b[v]}) for b, v in zip(host, valid, strict=True)), default=0
        )
    nse = concrete_int(nse, "nse argument of bcoo_sum_duplicates")

    def unbatched(d, i):
        fill = fill_value(sparse_shape, i.dtype)
        # every padding row becomes the one row `sparse_shape`, which sorts after all the
        # real indices; unique's fill is that same row, so the tail is padding either way
        i = jnp.where(in_bounds(i, sparse_shape)[:, None], i, fill)
        size = max(nse, 1)
        uniq, inverse = jnp.unique(i, axis=0, size=size, fill_value=fill, return_inverse=True)
        inverse = inverse.reshape(-1)
        out = jnp.zeros((size, *d.shape[1:]), d.dtype).at[inverse].add(d, mode="drop")
        out = jnp.where(in_bounds(uniq, sparse_shape).reshape(-1, *[1] * (d.ndim - 1)), out, 0)
        return out[:nse], uniq[:nse]

    return nfold_vmap(unbatched, p.n_batch)(data, indices)


def transpose(data, indices, shape, permutation):
    """``(data, indices, shape)`` of the transposed array; the permutation must keep batch,
    sparse and dense dimensions each among themselves."""
    p = props(data, indices, shape)
    permutation = tuple(operator.index(d) for d in permutation)
    if sorted(permutation) != list(range(len(shape))):
        raise TypeError(
            f"transpose permutation isn't a permutation of operand dimensions, "
            f"got permutation {permutation} for operand shape {tuple(shape)}."
        )
    nb, ns = p.n_batch, p.n_sparse
    batch_perm, sparse_perm = permutation[:nb], permutation[nb : nb + ns]
    dense_perm = permutation[nb + ns :]
    if set(batch_perm) != set(range(nb)) or set(sparse_perm) != set(range(nb, nb + ns)):
        raise NotImplementedError(
            f"bcoo_transpose: permutation {permutation} mixes batch, sparse or dense "
            f"dimensions (n_batch={nb}, n_sparse={ns}, n_dense={p.n_dense}); only "
            f"permutations within each group are supported."
        )
    data = lax.transpose(data, (*batch_perm, nb, *(d - ns + 1 for d in dense_perm)))
    indices = lax.transpose(indices, (*batch_perm, nb, nb + 1))
    if ns:
        indices = indices[..., [d - nb for d in sparse_perm]]
    return data, indices, tuple(shape[d] for d in permutation)


def reshape(data, indices, shape, new_sizes):
    """``(data, indices, new_shape)`` of the reshaped array; batch, sparse and dense dimensions
    must each reshape among themselves (as JAX's ``bcoo_reshape``)."""
    p = props(data, indices, shape)
    shape = tuple(shape)
    new_sizes = tuple(operator.index(d) for d in new_sizes)
    if -1 in new_sizes:  # one inferred dimension, as jnp.reshape allows
        known = math.prod(d for d in new_sizes if d != -1)
        new_sizes = tuple(math.prod(shape) // max(known, 1) if d == -1 else d for d in new_sizes)
    if math.prod(new_sizes) != math.prod(shape):
        raise TypeError(
            f"cannot reshape array of shape {shape} (size {math.prod(shape)}) into "
            f"shape {new_sizes} (size {math.prod(new_sizes)})"
        )
    batch_shape = shape[: p.n_batch]
    sparse_shape = shape[p.n_batch : p.n_batch + p.n_sparse]
    batch_size, sparse_size = math.prod(batch_shape), math.prod(sparse_shape)
    cuml = np.cumprod(new_sizes)
    if batch_size != 1 and batch_size not in cuml:
        raise ValueError(
            "bcoo_reshape: new shape cannot mix batch and sparse dimensions; "
            f"got shape={shape} new_shape={new_sizes} with n_batch={p.n_batch}"
        )
    if sparse_size != 1 and batch_size * sparse_size not in cuml:
        raise ValueError(
            "bcoo_reshape: new shape cannot mix sparse and dense dimensions; "
            f"got shape={shape} new_shape={new_sizes} with n_dense={p.n_dense}"
        )
    i1 = int(cuml.searchsorted(batch_size, side="right"))
    i2 = int(cuml.searchsorted(batch_size * sparse_size, side="right"))
    new_batch, new_sparse = new_sizes[:i1], new_sizes[i1:i2]
    new_dense = new_sizes[i2:]
    data, indices = full_batch(data, indices, p.n_batch)
    data = data.reshape(*new_batch, p.nse, *new_dense)
    indices = indices.reshape(*new_batch, p.nse, p.n_sparse)
    if new_sparse != sparse_shape:
        # through the linear (row-major) position; padding stays padding
        valid = in_bounds(indices, sparse_shape)
        strides = np.cumprod((1, *sparse_shape[::-1]))[:-1][::-1].astype(np.int64)
        flat = (indices * jnp.array(strides, indices.dtype)).sum(-1)
        new_strides = np.cumprod((1, *new_sparse[::-1]))[:-1][::-1]
        cols = [(flat // int(s)) % int(n) for s, n in zip(new_strides, new_sparse, strict=True)]
        new = jnp.stack(cols, axis=-1) if cols else jnp.zeros((*flat.shape, 0), indices.dtype)
        fill = fill_value(new_sparse, indices.dtype)
        indices = jnp.where(valid[..., None], new.astype(indices.dtype), fill)
    return data, indices, new_sizes


def reduce_sum(data, indices, shape, axes):
    """``(data, indices, shape)`` of the sum over ``axes``: dense axes are summed in the data,
    sparse axes dropped from the indices (entries become duplicates), batch axes folded into
    the entries."""
    p = props(data, indices, shape)
    ndim = len(shape)
    axes = [operator.index(a) for a in axes]
    for a in axes:
        if not -ndim <= a < ndim:
            raise ValueError(
                f"bcoo_reduce_sum: axis {a} is out of bounds for an array of shape {tuple(shape)}"
            )
    axes = sorted({a % ndim for a in axes})
    data, indices = full_batch(data, indices, p.n_batch)
    nb, ns = p.n_batch, p.n_sparse
    sparse_shape = tuple(shape[nb : nb + ns])
    dense_axes = [a for a in axes if a >= nb + ns]
    if dense_axes:
        data = data.sum(tuple(a - ns + 1 for a in dense_axes))
    sparse_axes = [a - nb for a in axes if nb <= a < nb + ns]
    if sparse_axes:
        valid = in_bounds(indices, sparse_shape)
        keep = [i for i in range(ns) if i not in sparse_axes]
        kept_shape = tuple(sparse_shape[i] for i in keep)
        indices = indices[..., keep] if keep else indices[..., :0]
        # a padding row must stay padding after losing the coordinate that marked it
        indices = jnp.where(valid[..., None], indices, fill_value(kept_shape, indices.dtype))
        if not keep:
            data = jnp.where(valid.reshape(*valid.shape, *[1] * (data.ndim - valid.ndim)), data, 0)
    for a in reversed([a for a in axes if a < nb]):  # fold each batch axis into the entries
        data = jnp.moveaxis(data, a, nb - 1)
        indices = jnp.moveaxis(indices, a, nb - 1)
        data = data.reshape(*data.shape[: nb - 1], -1, *data.shape[nb + 1 :])
        indices = indices.reshape(*indices.shape[: nb - 1], -1, indices.shape[-1])
        nb -= 1
    out_shape = tuple(d for i, d in enumerate(shape) if i not in axes)
    return data, indices, out_shape


# ------------------------------------------------------------------------- elementwise


def multiply_dense(data, indices, shape, v):
    """The data of ``sparse * v`` for a dense ``v`` that broadcasts to ``shape`` (the result
    keeps the sparse array's indices)."""
    v = jnp.asarray(v)
    if v.ndim == 0:
        return data * v
    shape = tuple(shape)
    try:
        out_shape = tuple(np.broadcast_shapes(v.shape, shape))
    except ValueError:
        raise ValueError(
            f"Incompatible shapes for broadcasting: shapes={[v.shape, shape]}"
        ) from None
    if out_shape != shape:
        raise NotImplementedError(
            "multiplication between sparse and dense is only implemented for cases where the "
            f"output shape matches the sparse matrix shape. Got shape={shape}, "
            f"v.shape={v.shape}"
        )
    v = jnp.broadcast_to(v, shape)
    return data * extract(indices, v)


def multiply_sparse(lhs, rhs):
    """``(data, indices)`` of the elementwise product of two BCOO buffers ``(data, indices,
    shape)`` of one shape and layout: every pair of entries, kept where the indices match (so
    ``nse`` is the product of the two, as JAX's ``bcoo_multiply_sparse``)."""
    (ld, li, shape), (rd, ri, rshape) = lhs, rhs
    if tuple(shape) != tuple(rshape):
        raise ValueError(
            f"bcoo_multiply_sparse: arrays must have the same shape, got "
            f"{tuple(shape)} and {tuple(rshape)}"
        )
    lp, rp = props(ld, li, shape), props(rd, ri, shape)
    if (lp.n_batch, lp.n_dense) != (rp.n_batch, rp.n_dense):
        raise NotImplementedError(
            "bcoo_multiply_sparse: arrays with different n_batch or n_dense are not supported."
        )
    nb = lp.n_batch
    ld, li = full_batch(ld, li, nb)
    rd, ri = full_batch(rd, ri, nb)
    sparse_shape = tuple(shape[nb : nb + lp.n_sparse])

    def unbatched(ld, li, rd, ri):
        same = jnp.all(li[:, None, :] == ri[None, :, :], axis=-1)
        same = same & in_bounds(li, sparse_shape)[:, None]
        extra = [1] * lp.n_dense
        prod = ld[:, None] * rd[None, :]
        prod = jnp.where(same.reshape(*same.shape, *extra), prod, 0)
        idx = jnp.where(same[..., None], li[:, None, :], fill_value(sparse_shape, li.dtype))
        n = li.shape[0] * ri.shape[0]
        return prod.reshape(n, *prod.shape[2:]), idx.reshape(n, li.shape[1])

    return nfold_vmap(unbatched, nb)(ld, li, rd, ri)


def concatenate_entries(lhs, rhs):
    """``(data, indices)`` holding the entries of both BCOO buffers: their sum as arrays (the
    sum of two sparse arrays with different indices)."""
    (ld, li, shape), (rd, ri, rshape) = lhs, rhs
    lp, rp = props(ld, li, shape), props(rd, ri, rshape)
    if (lp.n_batch, lp.n_dense) != (rp.n_batch, rp.n_dense):
        raise NotImplementedError(
            "Addition between sparse matrices with different batch/dense dimensions."
        )
    ld, li = full_batch(ld, li, lp.n_batch)
    rd, ri = full_batch(rd, ri, rp.n_batch)
    dtype = jnp.result_type(ld, rd)
    data = jnp.concatenate([ld.astype(dtype), rd.astype(dtype)], axis=lp.n_batch)
    indices = jnp.concatenate([li, ri.astype(li.dtype)], axis=lp.n_batch)
    return data, indices
