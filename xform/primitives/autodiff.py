"""Primitives that exist for differentiation: ``stop_gradient``, the identity whose
derivative is zero."""

from xform import tree_util
from xform.core import get_aval
from xform.interpreters import ad
from xform.primitives.base import standard_primitive

__all__ = ["stop_gradient"]


def stop_gradient(x):
    """``x``, with a zero derivative: gradients do not flow through it (pytrees too)."""

    def stop(leaf):
        return stop_gradient_p.bind(leaf) if get_aval(leaf).dtype.kind in "fc" else leaf

    return tree_util.tree_map(stop, x)


stop_gradient_p = standard_primitive("stop_gradient", lambda x: [x], lambda x: [x])
ad.defjvp_zero(stop_gradient_p)
