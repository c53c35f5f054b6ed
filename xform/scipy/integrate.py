"""``xform.scipy.integrate``: JAX's ``jax.scipy.integrate`` (the trapezoid rule)."""

from xform import numpy as xnp

__all__ = ["trapezoid"]


def trapezoid(y, x=None, dx=1.0, axis=-1):
    """Integral of ``y`` along ``axis`` by the composite trapezoid rule.

    Args:
      y: samples to integrate.
      x: sample points along ``axis`` (default: evenly spaced by ``dx``).
      dx: spacing between samples when ``x`` is None.
      axis: the axis to integrate along.

    Returns:
      The integral, with ``axis`` removed.

    Example:
      >>> xform.scipy.integrate.trapezoid(xform.numpy.array([1.0, 2.0, 3.0]))  # 4.0
    """
    return xnp.trapezoid(y, x, dx, axis)
