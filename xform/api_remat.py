"""``checkpoint`` (alias ``remat``): differentiate a function by recomputing, not storing, its
intermediate values; and the ``checkpoint_policies`` that choose what is stored anyway.

The function is traced once per signature to a jaxpr and bound as the ``checkpoint``
primitive (xform/primitives/remat.py); everything it does differently happens in that
primitive's partial-evaluation rule. Pytrees are handled here.
"""

import functools
import types

from jax import tree_util

from xform import core
from xform.api import _arg_avals, _flatten_fun, _fun_name
from xform.interpreters.staging import convert_constvars, trace_to_jaxpr
from xform.primitives.contractions import conv_general_dilated_p, dot_general_p
from xform.primitives.remat import remat_p

# --------------------------------------------------------------------------- policies
# ``policy(prim, *avals_in, **params) -> bool``: whether the outputs of a primal equation are
# saved for the backward pass (True) or recomputed there (False).


def everything_saveable(*_, **__):
    """Save every intermediate value: as if the function were not checkpointed."""
    return True


def nothing_saveable(*_, **__):
    """Save nothing but the inputs: recompute everything (the default, ``policy=None``)."""
    return False


def dots_saveable(prim, *_, **__):
    """Save the results of matrix multiplications and convolutions, recompute the rest."""
    return prim is dot_general_p or prim is conv_general_dilated_p


def dots_with_no_batch_dims_saveable(prim, *_, **params):
    """Save the results of ``dot_general``s without batch dimensions, recompute the rest."""
    if prim is not dot_general_p:
        return False
    (_, _), (lhs_batch, rhs_batch) = params["dimension_numbers"]
    return not lhs_batch and not rhs_batch


def save_from_both_policies(policy_1, policy_2):
    """A policy saving what either of two policies saves."""

    def policy(prim, *args, **params):
        return bool(policy_1(prim, *args, **params)) or bool(policy_2(prim, *args, **params))

    return policy


checkpoint_policies = types.SimpleNamespace(
    everything_saveable=everything_saveable,
    nothing_saveable=nothing_saveable,
    dots_saveable=dots_saveable,
    checkpoint_dots=dots_saveable,
    dots_with_no_batch_dims_saveable=dots_with_no_batch_dims_saveable,
    checkpoint_dots_with_no_batch_dims=dots_with_no_batch_dims_saveable,
    save_from_both_policies=save_from_both_policies,
)


# --------------------------------------------------------------------------- checkpoint


def _check_static_argnums(static_argnums):
    if type(static_argnums) is int:
        return (static_argnums,)
    if not (type(static_argnums) is tuple and all(type(d) is int for d in static_argnums)):
        raise TypeError("the `static_argnums` argument to `xform.checkpoint` / `xform.remat` "
                        f"must be an int or a tuple of ints, but got value {static_argnums!r}")
    return static_argnums


def _with_statics(fun, positions, static_values, nargs):
    """``fun`` of the dynamic arguments only, the static ones put back in place."""

    def dyn_fun(*dyn_args, **kwargs):
        dyn, static = iter(dyn_args), iter(static_values)
        args = [next(static) if i in positions else next(dyn) for i in range(nargs)]
        return fun(*args, **kwargs)

    return dyn_fun


def _static_key(values):
    """A cache key for the static arguments; None when one of them is not hashable."""
    try:
        hash(values)
    except TypeError:
        return None
    return values


def checkpoint(fun, *, prevent_cse=True, policy=None, static_argnums=()):
    """``fun``, differentiated by recomputing its intermediate values rather than storing them.

    Under ``grad`` (any reverse mode) the forward pass keeps only ``fun``'s inputs (and what
    ``policy`` saves); the backward pass runs ``fun``'s forward computation again to get the
    rest. This trades computation for memory. Values and derivatives are unchanged.

    Args:
      fun: a function of arrays (pytrees) returning arrays (pytrees).
      prevent_cse: keep XLA from merging the recomputation with the forward pass (by an
        optimization barrier) under ``jit``. Inside ``scan``, whose iterations XLA does not
        merge anyway, ``False`` may be faster.
      policy: ``policy(prim, *avals, **params) -> bool``, whether the outputs of a primal
        operation are saved rather than recomputed; see ``xform.checkpoint_policies``.
        ``None`` saves nothing.
      static_argnums: positions of arguments passed as Python values (not traced), so
        Python control flow may depend on them.

    Returns:
      A function with the signature of ``fun``.

    Example:
      >>> @xform.checkpoint
      ... def f(x):
      ...     return xform.numpy.sin(xform.numpy.sin(x))
      >>> xform.grad(f)(1.0)  # the backward pass recomputes sin(x)
    """
    static_argnums = _check_static_argnums(static_argnums)
    name = _fun_name(fun)
    cache = {}  # (in_tree, avals, static args) -> (jaxpr, consts, out_tree)

    @functools.wraps(fun)
    def fun_remat(*args, **kwargs):
        nargs = len(args)
        if not all(-nargs <= d < nargs for d in static_argnums):
            raise ValueError("the `static_argnums` argument to `xform.checkpoint` / "
                             "`xform.remat` can only take integer values greater than or equal "
                             f"to `-len(args)` and less than `len(args)`, but got "
                             f"{static_argnums}, while `len(args)` = {nargs}")
        positions = frozenset(d % nargs for d in static_argnums)
        static_values = tuple(args[i] for i in sorted(positions))
        dyn_args = tuple(a for i, a in enumerate(args) if i not in positions)
        leaves, in_tree = tree_util.tree_flatten((dyn_args, kwargs))
        avals = _arg_avals(leaves, in_tree, fun)
        statics = _static_key((tuple(sorted(positions)), nargs, static_values))
        key = None if statics is None else (in_tree, tuple(avals), statics)
        hit = None if key is None else cache.get(key)
        if hit is None:
            store = {}
            flat = _flatten_fun(_with_statics(fun, positions, static_values, nargs)
                                if positions else fun, in_tree, store)
            jaxpr, consts = convert_constvars(trace_to_jaxpr(
                flat, avals, f"tracing `{name}` for checkpoint"))
            hit = (jaxpr, consts, store["out_tree"])
            # A body closing over tracers belongs to this trace only: not reused.
            if key is not None and not any(isinstance(c, core.Tracer) for c in consts):
                cache[key] = hit
        jaxpr, consts, out_tree = hit
        outs = remat_p.bind(*consts, *leaves, jaxpr=jaxpr, prevent_cse=bool(prevent_cse),
                            differentiated=False, policy=policy)
        return tree_util.tree_unflatten(out_tree, outs)

    return fun_remat


remat = checkpoint
