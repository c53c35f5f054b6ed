"""The public differentiation transformations (so far forward mode: ``jvp``).

Pytrees are handled here; ``xform.interpreters.ad`` works on flat lists.
"""

import numpy as np
from jax import tree_util

from xform import core, dtypes
from xform.api import _arg_avals, _flatten_fun, _fun_name
from xform.array import Array, from_host
from xform.core import Tracer
from xform.interpreters import ad


def _as_output(x):
    """A flat output of a transformation as users get it: an Array or a tracer."""
    if isinstance(x, (Array, Tracer)):
        return x
    x = np.asarray(x)
    return x if x.dtype == dtypes.float0 else from_host(x)  # float0 stays NumPy, as in JAX


def _check_tangent(path, primal_aval, tangent):
    t_aval = core.get_aval(tangent) if not isinstance(tangent, np.ndarray) or \
        tangent.dtype != dtypes.float0 else core.ShapedArray(tangent.shape, dtypes.float0)
    expected = ad.tangent_aval(primal_aval)
    if t_aval.shape != primal_aval.shape:
        raise ValueError(f"jvp: primal and tangent arguments must have equal shapes; at "
                         f"{path} the primal has shape {primal_aval.shape} and the tangent "
                         f"{t_aval.shape}")
    if t_aval.dtype != expected.dtype:
        raise TypeError(f"jvp: primal and tangent arguments do not match at {path}: a primal "
                        f"of dtype {primal_aval.dtype} needs a tangent of dtype "
                        f"{expected.dtype}, got {t_aval.dtype}")


def jvp(fun, primals, tangents, has_aux=False):
    """The value of ``fun`` at ``primals`` and its derivative along ``tangents``.

    Args:
      fun: a function of arrays (pytrees) returning arrays (pytrees).
      primals, tangents: tuples (or lists) of the positional arguments and of their
        tangents, with the same structure; integer and bool primals take float0 tangents.
      has_aux: ``fun`` returns ``(output, aux)``; aux is returned undifferentiated.

    Returns:
      ``(primals_out, tangents_out)``, or ``(primals_out, tangents_out, aux)``.

    Example:
      >>> xform.jvp(xform.numpy.sin, (0.5,), (1.0,))  # (sin 0.5, cos 0.5)
    """
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError("jvp: primal and tangent arguments must be tuples or lists; found "
                        f"{type(primals).__name__} and {type(tangents).__name__}")
    p_leaves, p_tree = tree_util.tree_flatten(tuple(primals))
    t_leaves, t_tree = tree_util.tree_flatten(tuple(tangents))
    if p_tree != t_tree:
        raise TypeError(f"jvp: primal and tangent arguments must have the same tree "
                        f"structure; got {p_tree} and {t_tree}")
    in_tree = tree_util.tree_structure((tuple(primals), {}))
    avals = _arg_avals(p_leaves, in_tree, fun)
    paths = [tree_util.keystr(k) for k, _ in tree_util.tree_flatten_with_path(primals)[0]]
    for path, aval, t in zip(paths, avals, t_leaves, strict=True):
        _check_tangent(f"primals{path}", aval, t)
    tangents_in = [ad.Zero(ad.tangent_aval(a)) if a.dtype.kind in "biu" or (
        isinstance(t, np.ndarray) and t.dtype == dtypes.float0) else t
        for a, t in zip(avals, t_leaves, strict=True)]
    store = {}
    flat = _flatten_fun(_with_aux(fun, has_aux, store), in_tree, store)
    primals_out, tangents_out = ad.jvp_flat(flat, p_leaves, tangents_in)
    out_tree = store["out_tree"]
    primals_out = [_as_output(p) for p in primals_out]
    tangents_out = [_as_output(ad.instantiate(t)) for t in tangents_out]
    result = (tree_util.tree_unflatten(out_tree, primals_out),
              tree_util.tree_unflatten(out_tree, tangents_out))
    return (*result, store["aux"]) if has_aux else result


def _with_aux(fun, has_aux, store):
    if not has_aux:
        return fun

    def without_aux(*args, **kwargs):
        out = fun(*args, **kwargs)
        if not isinstance(out, tuple) or len(out) != 2:
            raise TypeError(f"{_fun_name(fun)} has has_aux=True, so it must return a pair "
                            f"(output, aux); got {type(out).__name__}")
        store["aux"] = out[1]
        return out[0]

    return without_aux
