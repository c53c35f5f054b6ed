"""``xform.scipy.ndimage``: JAX's ``jax.scipy.ndimage`` (``map_coordinates``, order 0 or 1).

Interpolation is separable: along each axis a coordinate contributes one (order 0) or two
(order 1) integer sample positions with weights, the boundary mode maps positions outside
the array back inside (or marks them invalid for ``"constant"``), and the result sums the
products over every combination of the per-axis nodes.
"""

import itertools

import numpy as np

from xform import dtypes, lax
from xform import numpy as xnp
from xform.numpy._promote import check_arraylike

__all__ = ["map_coordinates"]


def _mirror(index, size):
    period = size - 1
    if period == 0:
        return xnp.zeros_like(index)
    return xnp.abs((index + period) % (2 * period) - period)


def _reflect(index, size):
    # Reflection about the half-sample edges is mirroring on a doubled, shifted grid.
    return xnp.floor_divide(_mirror(2 * index + 1, 2 * size + 1) - 1, 2)


_MODES = {
    "constant": lambda index, size: index,
    "nearest": lambda index, size: xnp.clip(index, 0, size - 1),
    "wrap": lambda index, size: index % size,
    "mirror": _mirror,
    "reflect": _reflect,
}


def _round_half_away(x):
    return x if dtypes.is_int(x.dtype) else lax.round(x)


def _nodes(coordinate, order):
    """``[(index, weight)]``: the samples one coordinate interpolates between."""
    if order == 0:
        return [(_round_half_away(coordinate).astype(np.int32), None)]
    lower = xnp.floor(coordinate)
    upper_weight = coordinate - lower
    index = lower.astype(np.int32)
    return [(index, 1 - upper_weight), (index + 1, upper_weight)]


def map_coordinates(input, coordinates, order, mode="constant", cval=0.0):  # noqa: A002
    """Values of ``input`` at fractional ``coordinates``, by spline interpolation.

    Args:
      input: the N-dimensional array to sample.
      coordinates: a sequence of N arrays (one per axis of ``input``) of positions, all of
        one broadcastable shape.
      order: 0 (nearest sample) or 1 (linear).
      mode: how positions outside ``input`` are treated: ``"constant"`` (use ``cval``),
        ``"nearest"``, ``"wrap"``, ``"mirror"`` or ``"reflect"``.
      cval: the value outside ``input`` in ``"constant"`` mode.

    Returns:
      The interpolated values, of ``input``'s dtype (rounded for integer inputs).

    Example:
      >>> xform.scipy.ndimage.map_coordinates(xform.numpy.arange(4.0), [[0.5, 2.0]], order=1)
      ... # [0.5, 2.0]
    """
    check_arraylike("xform.scipy.ndimage.map_coordinates", input)
    input_arr = xnp.asarray(input)
    coordinates = [xnp.asarray(c) for c in coordinates]
    if len(coordinates) != input_arr.ndim:
        raise ValueError(
            "xform.scipy.ndimage.map_coordinates: coordinates must be a sequence "
            f"of length input.ndim, but {len(coordinates)} != {input_arr.ndim} "
            f"(input.shape={input_arr.shape})"
        )
    fix = _MODES.get(mode)
    if fix is None:
        raise NotImplementedError(
            f"xform.scipy.ndimage.map_coordinates does not yet support "
            f"mode {mode!r}; supported modes are {sorted(_MODES)}"
        )
    if order not in (0, 1):
        raise NotImplementedError(
            f"xform.scipy.ndimage.map_coordinates currently requires order<=1, got order={order!r}"
        )
    cval = xnp.asarray(cval, input_arr.dtype)
    per_axis = []
    for coordinate, size in zip(coordinates, input_arr.shape, strict=True):
        nodes = []
        for index, weight in _nodes(coordinate, order):
            valid = ((index >= 0) & (index < size)) if mode == "constant" else None
            nodes.append((fix(index, size), valid, weight))
        per_axis.append(nodes)
    total = None
    for combo in itertools.product(*per_axis):
        indices = tuple(index for index, _, _ in combo)
        sample = input_arr[indices]
        valids = [v for _, v, _ in combo if v is not None]
        if valids:
            ok = valids[0]
            for v in valids[1:]:
                ok = ok & v
            sample = xnp.where(ok, sample, cval)
        weights = [w for _, _, w in combo if w is not None]
        if weights:
            weight = weights[0]
            for w in weights[1:]:
                weight = weight * w
            sample = weight * sample
        total = sample if total is None else total + sample
    if dtypes.is_int(input_arr.dtype):
        total = _round_half_away(total)
    return total.astype(input_arr.dtype)
