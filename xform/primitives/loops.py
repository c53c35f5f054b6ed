"""``fori_loop``: a ``scan`` when its trip count is known when tracing, else a
``while_loop`` (the two loop primitives are in scan.py and while_loop.py).
"""

import numpy as np

from xform import config, dtypes
from xform.core import (
    Tracer,
    get_aval,
)
from xform.primitives.comparisons import lt
from xform.primitives.elementwise import add, convert_folding_constants
from xform.primitives.scan import scan
from xform.primitives.while_loop import while_loop
from xform.traceback_util import api_boundary

__all__ = ["fori_loop"]


# --------------------------------------------------------------------------- fori_loop


def _concrete_int(x):
    """``x`` as a Python int if its value is known now, else None."""
    if isinstance(x, Tracer):
        x = x.concrete_value()
        if x is None:
            return None
    return int(np.asarray(x))


@api_boundary
def fori_loop(lower, upper, body_fun, init_val, *, unroll=None):
    """``val = body_fun(i, val)`` for ``i`` in ``range(lower, upper)``; the final ``val``.

    With bounds known when tracing (Python ints, concrete arrays) the loop is a ``scan``
    and can be reverse-differentiated; with traced bounds it is a ``while_loop``.

    Args:
      lower, upper: the bounds (``upper <= lower`` runs no iteration); integers, or floats,
        which are truncated when known and counted in their dtype when traced, as in JAX.
      body_fun: ``(i, val) -> val``.
      init_val: the initial value, a pytree of arrays.
      unroll: how many iterations one step of the compiled loop runs (static bounds only).

    Example:
      >>> xform.lax.fori_loop(0, 5, lambda i, x: x + i, 0.0)  # 10.0
    """
    if not callable(body_fun):
        raise TypeError("lax.fori_loop: body_fun argument should be callable.")
    lo_aval, hi_aval = get_aval(lower), get_aval(upper)
    # As JAX: bounds of any one dtype (known float bounds are truncated to ints below, traced
    # ones count in their dtype); of two dtypes only if both are signed integers and one is
    # weakly typed (a Python int), which takes the other's dtype.
    dtype = lo_aval.dtype
    if lo_aval.dtype != hi_aval.dtype:
        signed = dtypes.is_signed_int(lo_aval.dtype) and dtypes.is_signed_int(hi_aval.dtype)
        if signed and lo_aval.weak_type and not hi_aval.weak_type:
            dtype = hi_aval.dtype
        elif signed and hi_aval.weak_type and not lo_aval.weak_type:
            dtype = lo_aval.dtype
        else:
            raise TypeError(
                f"fori_loop: lower and upper arguments must have equal types, got "
                f"{lo_aval.str_short()} and {hi_aval.str_short()}"
            )
    lo, hi = _concrete_int(lower), _concrete_int(upper)
    if lo is not None and hi is not None:

        def scan_body(carry, _):
            i, x = carry
            return (add(i, 1), body_fun(i, x)), None

        unroll = 1 if unroll is None else unroll
        if config.values.disable_jit and hi <= lo:
            return init_val  # the Python scan of disable_jit cannot run zero iterations
        (_, result), _ = scan(
            scan_body, (lo, init_val), None, length=max(hi - lo, 0), unroll=unroll
        )
        return result
    if unroll is not None and unroll is not False and unroll != 1:
        raise ValueError(
            "fori_loop: `unroll` can only be used when the loop bounds are statically known."
        )
    lower = convert_folding_constants(lower, dtype, lo_aval.weak_type and dtype == lo_aval.dtype)
    upper = convert_folding_constants(upper, dtype, hi_aval.weak_type and dtype == hi_aval.dtype)

    def while_cond(carry):
        i, hi_, _ = carry
        return lt(i, hi_)

    one = np.ones((), dtype)  # of the counter's dtype (int16, float32, ...), not a weak int

    def while_body(carry):
        i, hi_, x = carry
        return add(i, one), hi_, body_fun(i, x)

    _, _, result = while_loop(while_cond, while_body, (lower, upper, init_val))
    return result
