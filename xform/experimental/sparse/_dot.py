"""``dot_general`` with a BCOO operand, on bare buffers (see ``_core.py`` for the layout).

Sparse times dense never builds the dense form of the sparse operand: for each stored entry
the rows of the dense operand at its contracted coordinates are gathered, multiplied by the
entry's data (a ``dot_general`` batched over the entries, which also contracts the dense
dimensions) and scatter-added into the result at the entry's free coordinates. BCOO batch
dimensions are peeled off one by one with ``vmap``: a dot batch dimension maps both
operands, a free one maps the sparse operand only, a contracted one maps both and sums.
"""

import math
import operator

from xform import lax
from xform import numpy as jnp
from xform.api.batching import vmap
from xform.api.jit import ShapeDtypeStruct, eval_shape
from xform.experimental.sparse import _core


def normalize_dimension_numbers(dimension_numbers):
    """``((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch))`` as tuples of ints."""
    (lc, rc), (lb, rb) = dimension_numbers
    return tuple(
        tuple(tuple(operator.index(d) for d in ds) for ds in pair) for pair in ((lc, rc), (lb, rb))
    )


def out_aval(lhs_shape, lhs_dtype, rhs_shape, rhs_dtype, dimension_numbers, preferred_element_type):
    """The result's shape and dtype, as dense ``lax.dot_general`` would give them (and its
    errors for mismatched shapes)."""
    return eval_shape(
        lambda a, b: lax.dot_general(
            a, b, dimension_numbers, preferred_element_type=preferred_element_type
        ),
        ShapeDtypeStruct(tuple(lhs_shape), lhs_dtype),
        ShapeDtypeStruct(tuple(rhs_shape), rhs_dtype),
    )


def _drop(dims, d):
    """``dims`` without ``d``, the ones above it shifted down."""
    return tuple(x - (x > d) for x in dims if x != d)


def _sparse_dense_unbatched(data, indices, rhs, shape, lc, rc, dtype):
    """``dot_general`` of an unbatched BCOO ``(data, indices)`` with dense ``rhs``; no dot
    batch dimensions. The result's dimensions are the sparse operand's free sparse ones, its
    free dense ones, then the rhs's free ones, as ``dot_general`` orders them."""
    ns = indices.shape[-1]
    sparse_pairs = [(ld, r) for ld, r in zip(lc, rc, strict=True) if ld < ns]
    dense_pairs = [(ld, r) for ld, r in zip(lc, rc, strict=True) if ld >= ns]
    # data axes: 0 is the entry, 1 + k is the lhs dense dim ns + k
    data_contract = tuple(ld - ns + 1 for ld, _ in dense_pairs)
    if sparse_pairs:
        gathered = [r for _, r in sparse_pairs]
        rest = [d for d in range(rhs.ndim) if d not in gathered]
        rhs_t = lax.transpose(rhs, (*gathered, *rest))
        coords = tuple(indices[:, ld] for ld, _ in sparse_pairs)
        # padding coordinates are out of bounds: they read zeros
        rows = rhs_t.at[coords].get(mode="fill", fill_value=0)  # (nse, *rest)
        rows_contract = tuple(1 + rest.index(r) for _, r in dense_pairs)
        prod = lax.dot_general(
            data, rows, ((data_contract, rows_contract), ((0,), (0,))), preferred_element_type=dtype
        )
    else:
        rhs_contract = tuple(r for _, r in dense_pairs)
        prod = lax.dot_general(
            data, rhs, ((data_contract, rhs_contract), ((), ())), preferred_element_type=dtype
        )
    free = [ld for ld in range(ns) if ld not in lc]
    if not free:
        return prod.sum(0)
    out_shape = (*(shape[ld] for ld in free), *prod.shape[1:])
    coords = tuple(indices[:, ld] for ld in free)
    return jnp.zeros(out_shape, prod.dtype).at[coords].add(prod, mode="drop")


def _sparse_dense(data, indices, rhs, shape, n_batch, dn, dtype):
    """``dot_general`` of a BCOO buffer with ``n_batch`` leading batch dims and dense ``rhs``."""
    (lc, rc), (lb, rb) = dn
    if n_batch == 0:
        if lb:
            raise NotImplementedError(
                "bcoo_dot_general: dot batch dimensions of a sparse operand must be its BCOO "
                f"batch dimensions; got lhs_batch={lb} with n_batch=0 (convert the layout "
                "with n_batch= in fromdense)."
            )
        return _sparse_dense_unbatched(data, indices, rhs, tuple(shape), lc, rc, dtype)
    # peel off the leading BCOO batch dimension (0) of the sparse operand
    inner_shape = tuple(shape[1:])
    if 0 in lb:
        r = rb[lb.index(0)]
        inner = ((_drop(lc, 0), _drop(rc, r)), (tuple(d - 1 for d in lb if d != 0), _drop(rb, r)))
        in_axes, out_axis, summed = (0, 0, r), lb.index(0), False
    elif 0 in lc:
        r = rc[lc.index(0)]
        inner = (
            (tuple(d - 1 for d in lc if d != 0), _drop(rc, r)),
            (tuple(d - 1 for d in lb), _drop(rb, r)),
        )
        in_axes, out_axis, summed = (0, 0, r), 0, True
    else:
        inner = ((tuple(d - 1 for d in lc), rc), (tuple(d - 1 for d in lb), rb))
        in_axes, out_axis, summed = (0, 0, None), len(lb), False

    def one(d, i, r):
        return _sparse_dense(d, i, r, inner_shape, n_batch - 1, inner, dtype)

    out = vmap(one, in_axes=in_axes, out_axes=out_axis)(data, indices, rhs)
    return out.sum(out_axis) if summed else out


def sparse_dense(data, indices, shape, rhs, dimension_numbers, preferred_element_type=None):
    """``dot_general(sparse, rhs)`` for a BCOO buffer and a dense ``rhs``: a dense array."""
    rhs = jnp.asarray(rhs)
    dn = normalize_dimension_numbers(dimension_numbers)
    out = out_aval(shape, data.dtype, rhs.shape, rhs.dtype, dn, preferred_element_type)
    p = _core.props(data, indices, shape)
    data, indices = _core.full_batch(data, indices, p.n_batch)
    dtype = out.dtype
    result = _sparse_dense(
        data.astype(dtype), indices, rhs.astype(dtype), tuple(shape), p.n_batch, dn, dtype
    )
    return result.astype(dtype)


def dense_sparse(lhs, data, indices, shape, dimension_numbers, preferred_element_type=None):
    """``dot_general(lhs, sparse)`` for a dense ``lhs`` and a BCOO buffer: computed as the
    sparse operand on the left, its result's free dimensions then put back in order."""
    lhs = jnp.asarray(lhs)
    (lc, rc), (lb, rb) = normalize_dimension_numbers(dimension_numbers)
    out_aval(
        lhs.shape, lhs.dtype, shape, data.dtype, ((lc, rc), (lb, rb)), preferred_element_type
    )  # for dense dot_general's errors
    swapped = sparse_dense(data, indices, shape, lhs, ((rc, lc), (rb, lb)), preferred_element_type)
    n_lhs_free = lhs.ndim - len(lc) - len(lb)
    n_rhs_free = len(shape) - len(rc) - len(rb)
    nb = len(lb)
    perm = (
        *range(nb),
        *range(nb + n_rhs_free, nb + n_rhs_free + n_lhs_free),
        *range(nb, nb + n_rhs_free),
    )
    return lax.transpose(swapped, perm)


def sparse_sparse(lhs, rhs, dimension_numbers, preferred_element_type=None):
    """``dot_general`` of two unbatched BCOO buffers without dense dimensions: a BCOO
    ``(data, indices, shape)`` of all pairs of entries whose contracted coordinates agree
    (``nse`` the product of the two, at most the result's size, as JAX's)."""
    (ld, li, lshape), (rd, ri, rshape) = lhs, rhs
    (lc, rc), (lb, rb) = normalize_dimension_numbers(dimension_numbers)
    out = out_aval(lshape, ld.dtype, rshape, rd.dtype, ((lc, rc), (lb, rb)), preferred_element_type)
    lp, rp = _core.props(ld, li, lshape), _core.props(rd, ri, rshape)
    if lp.n_batch or rp.n_batch or lp.n_dense or rp.n_dense:
        raise NotImplementedError(
            "bcoo_spdot_general: xform supports sparse-sparse products "
            "only for arrays with n_batch=0 and n_dense=0."
        )
    if lb:
        raise NotImplementedError(
            "bcoo_spdot_general: batch_dims must correspond to batch "
            "dimensions of the sparse representation."
        )
    lfree = [d for d in range(lp.n_sparse) if d not in lc]
    rfree = [d for d in range(rp.n_sparse) if d not in rc]
    dtype = out.dtype
    lvalid = _core.in_bounds(li, tuple(lshape))
    rvalid = _core.in_bounds(ri, tuple(rshape))
    match = (
        jnp.all(li[:, None, list(lc)] == ri[None, :, list(rc)], axis=-1)
        if lc
        else jnp.ones((lp.nse, rp.nse), bool)
    )
    match = match & lvalid[:, None] & rvalid[None, :]
    data = jnp.where(match, ld.astype(dtype)[:, None] * rd.astype(dtype)[None, :], 0)
    out_sparse = tuple(out.shape)
    coords = jnp.concatenate(
        [
            jnp.broadcast_to(li[:, None, lfree], (lp.nse, rp.nse, len(lfree))),
            jnp.broadcast_to(ri[None, :, rfree].astype(li.dtype), (lp.nse, rp.nse, len(rfree))),
        ],
        axis=-1,
    )
    coords = jnp.where(match[..., None], coords, _core.fill_value(out_sparse, li.dtype))
    # an operand without free sparse dims contributes one entry per result entry
    lrep = lp.nse if lfree else 1
    rrep = rp.nse if rfree else 1
    n = lp.nse * rp.nse
    data, coords = data.reshape(n), coords.reshape(n, len(out_sparse))
    out_nse = min(lrep * rrep, math.prod(out_sparse))
    if out_nse < n:
        data, coords = _core.sum_duplicates(data, coords, out_sparse, nse=out_nse)
    return data, coords, out_sparse
