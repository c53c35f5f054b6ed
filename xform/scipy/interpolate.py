"""``xform.scipy.interpolate``: JAX's ``jax.scipy.interpolate`` (``RegularGridInterpolator``).

The interpolator is a pytree (its grid, values and fill value are the leaves; the method
and ``bounds_error`` are static), so it can be passed through ``jit`` and differentiated
with respect to its values.
"""

import itertools

import numpy as np

from xform import dtypes
from xform import numpy as xnp
from xform.numpy._promote import check_arraylike, promote_dtypes_inexact
from xform.tree_util import register_pytree_node

__all__ = ["RegularGridInterpolator"]

_METHODS = ("linear", "nearest")


def _points_array(points, ndim):
    """Sample points as one array whose last axis holds the coordinates."""
    if isinstance(points, tuple) and len(points) == 1:
        points = points[0]
    if isinstance(points, tuple):
        parts = xnp.broadcast_arrays(*points)
        return xnp.stack(parts, axis=-1).astype(dtypes.default_float())
    check_arraylike("xform.scipy.interpolate.RegularGridInterpolator", points)
    points = xnp.asarray(points)
    if points.ndim == 1:
        points = points.reshape(-1, ndim)
    return points


class RegularGridInterpolator:
    """Linear or nearest-neighbour interpolation on a rectilinear grid in any dimension.

    Args:
      points: one strictly ascending 1-D array of coordinates per grid dimension.
      values: the data on the grid, of shape ``(len(p) for p in points) + trailing``.
      method: ``"linear"`` (default) or ``"nearest"``.
      bounds_error: must be False (a bounds check cannot run under ``jit``).
      fill_value: the value outside the grid; ``None`` extrapolates.

    Example:
      >>> f = RegularGridInterpolator((xform.numpy.arange(3.0),), xform.numpy.arange(3.0) ** 2)
      >>> f(xform.numpy.array([[0.5]]))  # [0.5]
    """

    def __init__(self, points, values, method="linear", bounds_error=False, fill_value=np.nan):
        if method not in _METHODS:
            raise ValueError(
                f"RegularGridInterpolator: method {method!r} is not defined; use one of {_METHODS}"
            )
        self.method = method
        self.bounds_error = bounds_error
        if bounds_error:
            raise NotImplementedError(
                "RegularGridInterpolator: `bounds_error` takes no effect "
                "under JIT; pass bounds_error=False"
            )
        check_arraylike("RegularGridInterpolator", values)
        values = xnp.asarray(values)
        if len(points) > values.ndim:
            raise ValueError(
                f"RegularGridInterpolator: there are {len(points)} point arrays, "
                f"but values has {values.ndim} dimensions (shape {values.shape})"
            )
        (values,) = promote_dtypes_inexact(values)
        if fill_value is not None:
            check_arraylike("RegularGridInterpolator", fill_value)
            fill_value = xnp.asarray(fill_value)
            if not xnp.can_cast(fill_value.dtype, values.dtype, casting="same_kind"):
                raise ValueError(
                    "RegularGridInterpolator: fill_value must be either 'None' or "
                    f"of a type compatible with values ({values.dtype}), got "
                    f"{fill_value.dtype}"
                )
        self.fill_value = fill_value
        check_arraylike("RegularGridInterpolator", *points)
        self.grid = tuple(xnp.asarray(p) for p in points)
        self.values = values

    def __call__(self, xi, method=None):
        """The interpolated values at points ``xi`` (shape ``(..., ndim)``, or a tuple of
        ``ndim`` coordinate arrays); ``method`` overrides the constructor's."""
        method = self.method if method is None else method
        if method not in _METHODS:
            raise ValueError(
                f"RegularGridInterpolator: method {method!r} is not defined; use one of {_METHODS}"
            )
        ndim = len(self.grid)
        xi = _points_array(xi, ndim)
        if xi.shape[-1] != ndim:
            raise ValueError(
                f"RegularGridInterpolator: the requested sample points xi have "
                f"dimension {xi.shape[-1]}, but this RegularGridInterpolator has "
                f"dimension {ndim}"
            )
        batch = xi.shape[:-1]
        xi = xi.reshape(-1, ndim)
        indices, fractions, outside = self._find_indices(xi.T)
        if method == "linear":
            result = self._linear(indices, fractions)
        else:
            result = self._nearest(indices, fractions)
        if self.fill_value is not None:
            mask = outside.reshape(result.shape[:1] + (1,) * (result.ndim - 1))
            result = xnp.where(mask, self.fill_value, result)
        return result.reshape(batch + self.values.shape[ndim:])

    def _find_indices(self, xi):
        """Per dimension: the cell each point lies in, its fractional position in the cell,
        and (over all dimensions) whether the point lies outside the grid."""
        indices, fractions = [], []
        outside = xnp.zeros((xi.shape[1],), dtype=bool)
        for x, g in zip(xi, self.grid, strict=False):
            i = xnp.clip(xnp.searchsorted(g, x) - 1, 0, g.size - 2)
            indices.append(i)
            fractions.append((x - g[i]) / (g[i + 1] - g[i]))
            outside = outside | (x < g[0]) | (x > g[-1])
        return indices, fractions, outside

    def _linear(self, indices, fractions):
        trailing = (slice(None),) + (None,) * (self.values.ndim - len(indices))
        total = xnp.asarray(0.0)
        for corner in itertools.product(*[(i, i + 1) for i in indices]):
            weight = xnp.asarray(1.0)
            for ci, i, t in zip(corner, indices, fractions, strict=True):
                weight = weight * xnp.where(ci == i, 1 - t, t)
            total = total + self.values[corner] * weight[trailing]
        return total

    def _nearest(self, indices, fractions):
        picks = tuple(
            xnp.where(t <= 0.5, i, i + 1) for i, t in zip(indices, fractions, strict=True)
        )
        return self.values[picks]


register_pytree_node(
    RegularGridInterpolator,
    lambda obj: ((obj.grid, obj.values, obj.fill_value), (obj.method, obj.bounds_error)),
    lambda aux, children: RegularGridInterpolator(*children[:2], *aux, *children[2:]),
)
