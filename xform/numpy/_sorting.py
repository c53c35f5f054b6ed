"""Sorting: sort and argsort (a two-operand ``lax.sort`` of the keys and an iota)."""

from xform import dtypes, lax
from xform.numpy._promote import _canonical_dtype, asarray, aval_of, check_arraylike
from xform.numpy._reductions import canonicalize_axis
from xform.numpy._shape import ravel

__all__ = ["sort", "argsort"]


def _prepare(name, a, axis, kind, order):
    check_arraylike(name, a)
    if kind is not None:
        raise TypeError(f"'kind' argument to {name} is not supported. Use stable=True or "
                        "stable=False to specify sort stability.")
    if order is not None:
        raise TypeError(f"'order' argument to {name} is not supported.")
    a = asarray(a)
    if axis is None:
        a, axis = ravel(a), 0
    return a, canonicalize_axis(axis, aval_of(a).ndim, name)


def sort(a, axis=-1, *, kind=None, order=None, stable=True, descending=False):
    """``a`` sorted along ``axis`` (None: flattened); NaNs last."""
    a, dim = _prepare("sort", a, axis, kind, order)
    result = lax.sort(a, dimension=dim, is_stable=stable)
    return lax.rev(result, (dim,)) if descending else result


def argsort(a, axis=-1, *, kind=None, order=None, stable=True, descending=False, dtype=None):
    """Indices that sort ``a`` along ``axis``."""
    a, dim = _prepare("argsort", a, axis, kind, order)
    idx_dtype = dtypes.default_int() if dtype is None else _canonical_dtype(dtype, "argsort")
    iota = lax.broadcasted_iota(idx_dtype, aval_of(a).shape, dim)
    # Reversing keys and indices first keeps ties in their original order when the result
    # is reversed for a stable descending sort.
    if descending and stable:
        a = lax.rev(a, (dim,))
        iota = lax.rev(iota, (dim,))
    _, indices = lax.sort((a, iota), dimension=dim, is_stable=stable, num_keys=1)
    return lax.rev(indices, (dim,)) if descending else indices
