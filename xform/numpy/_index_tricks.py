"""Index helpers: meshgrid, indices, ix_, the ``mgrid``/``ogrid``/``r_``/``c_``/``s_``/
``index_exp`` objects, and the diagonal and triangle index functions.

Shapes here are static: dimensions, slice bounds and triangle sizes must be concrete; the
arrays given to meshgrid and ix_ may be traced.
"""

import operator

import numpy as np

from xform import dtypes
from xform.core import Tracer
from xform.lax import _names as lax
from xform.numpy._creation import arange, linspace, ones
from xform.numpy._promote import (
    _canonical_dtype,
    array,
    asarray,
    aval_of,
    check_arraylike,
    promote_dtypes,
)
from xform.numpy._shape import concatenate, expand_dims, nonzero, stack, transpose

__all__ = [
    "meshgrid",
    "indices",
    "ix_",
    "mgrid",
    "ogrid",
    "r_",
    "c_",
    "s_",
    "index_exp",
    "diag_indices",
    "diag_indices_from",
    "tril_indices",
    "triu_indices",
    "tril_indices_from",
    "triu_indices_from",
    "mask_indices",
]

s_ = np.s_
index_exp = np.index_exp


def _static_index(x, what):
    if isinstance(x, Tracer):
        x = x._concretize(what)
    return operator.index(x)


def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    """Coordinate grids from 1-D coordinate arrays (``indexing='xy'``: Cartesian, the first
    two outputs' axes swapped; ``'ij'``: matrix). ``sparse=True`` keeps them broadcastable."""
    check_arraylike("meshgrid", *xi)
    args = [asarray(a) for a in xi]
    if not copy:
        raise ValueError("jax.numpy.meshgrid only supports copy=True")
    if indexing not in ("xy", "ij"):
        raise ValueError(f"Valid values for indexing are 'xy' and 'ij', got {indexing}")
    if any(aval_of(a).ndim != 1 for a in args):
        raise ValueError(
            "Arguments to jax.numpy.meshgrid must be 1D, got shapes "
            f"{[aval_of(a).shape for a in args]}"
        )
    swap = indexing == "xy" and len(args) >= 2
    if swap:
        args[0], args[1] = args[1], args[0]
    sizes = [aval_of(a).shape[0] for a in args]
    out = []
    for i, a in enumerate(args):
        shape = tuple(sizes[k] if (k == i or not sparse) else 1 for k in range(len(args)))
        out.append(lax.broadcast_in_dim(a, shape, (i,)))
    if swap:
        out[0], out[1] = out[1], out[0]
    return out


def indices(dimensions, dtype=None, sparse=False):
    """The index of each position of a grid of shape ``dimensions``: one stacked array, or a
    tuple of broadcastable ones if ``sparse``."""
    dtype = _canonical_dtype(int if dtype is None else dtype, "indices")
    dims = tuple(_static_index(d, "the dimensions argument of indices") for d in dimensions)
    n = len(dims)
    out = []
    for i, d in enumerate(dims):
        shape = (1,) * i + (d,) + (1,) * (n - i - 1) if sparse else dims
        out.append(lax.broadcast_in_dim(lax.iota(dtype, d), shape, (i,)))
    if sparse:
        return tuple(out)
    return stack(out, 0) if out else array([], dtype=dtype)


def ix_(*args):
    """Open-mesh index arrays from 1-D integer sequences: ``x[ix_(rows, cols)]`` is the
    cross product selection."""
    check_arraylike("ix", *args)
    n = len(args)
    out = []
    for i, a in enumerate(asarray(a) for a in args):
        aval = aval_of(a)
        if aval.ndim != 1:
            raise ValueError(
                f"Arguments to jax.numpy.ix_ must be 1-dimensional, got shape {aval.shape}"
            )
        if aval.dtype == dtypes.bool_:
            raise NotImplementedError("Boolean arguments to jax.numpy.ix_ are not implemented")
        shape = [1] * n
        shape[i] = aval.shape[0]
        if aval.shape[0] == 0:
            out.append(lax.full(tuple(shape), 0, dtypes.canonicalize(np.intp)))
        else:
            out.append(lax.broadcast_in_dim(a, tuple(shape), (i,)))
    return tuple(out)


# --------------------------------------------------------------------------- grids


def _grid_1d(s, name):
    """The 1-D grid of a slice: ``arange``, or ``linspace`` for an imaginary step."""
    what = f"the slice of jnp.{name}"
    start = _concrete_scalar(s.start, what) or 0
    stop = _concrete_scalar(s.stop, what)
    step = _concrete_scalar(s.step, what) or 1
    if np.iscomplex(step):
        return linspace(start, stop, int(abs(step)))
    return arange(start, stop, step)


def _concrete_scalar(x, what):
    if isinstance(x, Tracer):
        return x._concretize(what)
    return x


class _Mgrid:
    """``mgrid[a:b:c, ...]``: a dense grid (one stacked array) of ``arange``/``linspace``
    ranges, as ``np.mgrid``."""

    def __getitem__(self, key):
        if isinstance(key, slice):
            return _grid_1d(key, "mgrid")
        grids = promote_dtypes(*(_grid_1d(k, "mgrid") for k in key))
        out = meshgrid(*grids, indexing="ij", sparse=False)
        return stack(out, 0) if out else arange(0)


class _Ogrid:
    """``ogrid[a:b:c, ...]``: an open grid (a list of broadcastable arrays), as
    ``np.ogrid``."""

    def __getitem__(self, key):
        if isinstance(key, slice):
            return _grid_1d(key, "ogrid")
        grids = promote_dtypes(*(_grid_1d(k, "ogrid") for k in key))
        return meshgrid(*grids, indexing="ij", sparse=True)


mgrid = _Mgrid()
ogrid = _Ogrid()


class _AxisConcat:
    """Concatenation of slices (as ranges), scalars and arrays along an axis, with NumPy's
    optional leading string directive ``'axis,ndmin,trans1d'``, ``'r'`` or ``'c'``."""

    def __init__(self, axis, ndmin, trans1d, name):
        self.axis, self.ndmin, self.trans1d, self.name = axis, ndmin, trans1d, name

    def __getitem__(self, key):
        items = key if isinstance(key, tuple) else (key,)
        params = [self.axis, self.ndmin, self.trans1d, -1]
        if items and isinstance(items[0], str):
            directive, items = items[0], items[1:]
            if directive == "r":
                params[-1] = 0
            elif directive == "c":
                params[-1] = 1
            else:
                vec = directive.split(",")
                vec = vec + params[len(vec) :] if len(vec) < 4 else vec[:3] + [params[-1]]
                try:
                    params = [int(v) for v in vec]
                except ValueError as err:
                    raise ValueError(f"could not understand directive {directive!r}") from err
        axis, ndmin, trans1d, matrix = params
        out = []
        for item in items:
            if isinstance(item, slice):
                new, item_ndim = _grid_1d(item, self.name), 0
            elif isinstance(item, str):
                raise ValueError("string directive must be placed at the beginning")
            else:
                new = array(item, copy=False)
                item_ndim = aval_of(new).ndim
            new = array(new, copy=False, ndmin=ndmin)
            if trans1d != -1 and ndmin - item_ndim > 0:
                order = tuple(range(ndmin))
                shifts = ndmin - abs(ndmin + trans1d + 1) % ndmin
                new = transpose(new, order[shifts:] + order[:shifts])
            out.append(new)
        result = concatenate(tuple(out), axis=axis)
        if matrix != -1 and aval_of(result).ndim == 1:
            result = expand_dims(result, matrix)
        return result

    def __len__(self):
        return 0


r_ = _AxisConcat(0, 1, -1, "r_")
c_ = _AxisConcat(-1, 2, 0, "c_")


# --------------------------------------------------------------------------- diagonals, triangles


def diag_indices(n, ndim=2):
    """The indices of the main diagonal of an ``(n,) * ndim`` array."""
    n = _static_index(n, "the 'n' argument of diag_indices")
    ndim = _static_index(ndim, "the 'ndim' argument of diag_indices")
    if n < 0:
        raise ValueError(f"n argument to diag_indices must be nonnegative, got {n}")
    if ndim < 0:
        raise ValueError(f"ndim argument to diag_indices must be nonnegative, got {ndim}")
    dtype = (
        dtypes.default_int() if n <= np.iinfo(np.int32).max else dtypes.canonicalize(dtypes.int64)
    )
    return (lax.iota(dtype, n),) * ndim


def diag_indices_from(arr):
    """The indices of the main diagonal of the square (hyper-cubic) ``arr``."""
    check_arraylike("diag_indices_from", arr)
    shape = aval_of(asarray(arr)).shape
    if len(shape) < 2:
        raise ValueError("input array must be at least 2-d")
    if len(set(shape)) != 1:
        raise ValueError("All dimensions of input must be of equal length")
    return diag_indices(shape[0], ndim=len(shape))


def _triangle(n, k, m, lower):
    what = f"the arguments of {'tril' if lower else 'triu'}_indices"
    n, k = _static_index(n, what), _static_index(k, what)
    m = n if m is None else _static_index(m, what)
    mask = np.tril(np.ones((n, m), bool), k) if lower else np.triu(np.ones((n, m), bool), k)
    return tuple(asarray(i.astype(dtypes.default_int())) for i in np.nonzero(mask))


def tril_indices(n, k=0, m=None):
    """The row and column indices of the lower triangle (diagonal ``k`` and below) of an
    ``(n, m)`` array."""
    return _triangle(n, k, m, True)


def triu_indices(n, k=0, m=None):
    """The row and column indices of the upper triangle (diagonal ``k`` and above) of an
    ``(n, m)`` array."""
    return _triangle(n, k, m, False)


def _shape_2d(name, arr):
    if hasattr(arr, "shape"):
        shape = tuple(arr.shape)
    else:
        check_arraylike(name, arr)
        shape = aval_of(asarray(arr)).shape
    if len(shape) != 2:
        raise ValueError("Only 2-D inputs are accepted")
    return shape


def tril_indices_from(arr, k=0):
    """``tril_indices`` for the shape of the 2-D ``arr``."""
    shape = _shape_2d("tril_indices_from", arr)
    return tril_indices(shape[0], k=k, m=shape[1])


def triu_indices_from(arr, k=0):
    """``triu_indices`` for the shape of the 2-D ``arr``."""
    shape = _shape_2d("triu_indices_from", arr)
    return triu_indices(shape[0], k=k, m=shape[1])


def mask_indices(n, mask_func, k=0, *, size=None):
    """The indices where ``mask_func(ones((n, n)), k)`` is nonzero (``size`` under jit)."""
    return tuple(nonzero(mask_func(ones((n, n)), k), size=size))
