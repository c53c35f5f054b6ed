"""``checkpoint`` (alias ``remat``): differentiate a function by recomputing, not storing, its
intermediate values; and the ``checkpoint_policies`` that choose what is stored anyway.

The function is traced once per signature to a jaxpr and bound as the ``checkpoint``
primitive (xform/primitives/remat.py); everything it does differently happens in that
primitive's partial-evaluation rule. Pytrees are handled here.
"""

import dataclasses
import functools
import types

from xform import core, pytree
from xform.interpret.staging import convert_constvars, trace_to_jaxpr
from xform.primitives import refs
from xform.primitives.convolution import conv_general_dilated_p
from xform.primitives.dot import dot_general_p
from xform.primitives.remat import Offloadable, Recompute, Saveable, name_p, remat_p
from xform.runtime.jit import arg_avals, flatten_fun, fun_name
from xform.traceback_util import api_boundary

# --------------------------------------------------------------------------- policies
# ``policy(prim, *avals_in, **params) -> bool``: whether the outputs of a primal equation are
# saved for the backward pass (True) or recomputed there (False).


def everything_saveable(*_, **__):
    """Save every intermediate value: as if the function were not checkpointed."""
    return True


def nothing_saveable(*_, **__):
    """Save nothing but the inputs: recompute everything (the default, ``policy=None``)."""
    return False


@dataclasses.dataclass(frozen=True)
class DotsSaveable:
    """Policy saving the results of matrix multiplications (and, unless
    ``only_if_no_batch_dims``, convolutions): those of ``dot_general``s without batch
    dimensions only, if ``only_if_no_batch_dims``. Recomputes the rest. (JAX's class.)"""

    only_if_no_batch_dims: bool = False

    def __call__(self, prim, *_, **params):
        if prim is dot_general_p:
            (_, _), (lhs_batch, rhs_batch) = params["dimension_numbers"]
            return not self.only_if_no_batch_dims or (not lhs_batch and not rhs_batch)
        return prim is conv_general_dilated_p and not self.only_if_no_batch_dims


dots_saveable = DotsSaveable()
dots_with_no_batch_dims_saveable = DotsSaveable(only_if_no_batch_dims=True)


def offload_dot_with_no_batch_dims(offload_src, offload_dst):
    """As ``dots_with_no_batch_dims_saveable``, but the saved values are offloaded from the
    memory ``offload_src`` to ``offload_dst``. xform has no memory kinds yet: they are saved
    on the device, which gives the same values and derivatives."""

    def policy(prim, *_, **params):
        if prim is dot_general_p:
            (_, _), (lhs_batch, rhs_batch) = params["dimension_numbers"]
            if not lhs_batch and not rhs_batch:
                return Offloadable(src=offload_src, dst=offload_dst)
        return Recompute

    return policy


@dataclasses.dataclass(frozen=True)
class SaveOnlyTheseNames:
    """Policy saving the values named (``checkpoint_name``) with one of ``saveable_names``."""

    saveable_names: frozenset

    def __call__(self, prim, *_, **params):
        return prim is name_p and params["name"] in self.saveable_names


@dataclasses.dataclass(frozen=True)
class SaveAnyNamesButThese:
    """Policy saving every named value except those named with one of ``names``."""

    names: frozenset

    def __call__(self, prim, *_, **params):
        return prim is name_p and params["name"] not in self.names


def _check_names(what, names):
    for n in names:
        if not isinstance(n, str):
            raise TypeError(
                f"checkpoint_policies.{what}: names must be strings, got {type(n).__name__} {n!r}"
            )
    return frozenset(names)


def save_only_these_names(*names_which_can_be_saved):
    """Save only values named (by ``checkpoint_name``) with one of the given names."""
    return SaveOnlyTheseNames(_check_names("save_only_these_names", names_which_can_be_saved))


def save_any_names_but_these(*names_not_to_save):
    """Save every named value (``checkpoint_name``) except those with the given names."""
    return SaveAnyNamesButThese(_check_names("save_any_names_but_these", names_not_to_save))


def save_anything_except_these_names(*names_not_to_save):
    """Save any value, named or not. (As in JAX 0.10.2, the names are not looked at.)"""
    return everything_saveable


def save_and_offload_only_these_names(
    *, names_which_can_be_saved, names_which_can_be_offloaded, offload_src, offload_dst
):
    """As ``save_only_these_names``, and the values named in ``names_which_can_be_offloaded``
    are saved offloaded from ``offload_src`` to ``offload_dst`` (on the device for now: xform
    has no memory kinds yet)."""
    saved = set(names_which_can_be_saved)
    offloaded = set(names_which_can_be_offloaded)
    both = saved & offloaded
    if both:
        raise ValueError(
            "checkpoint_policies.save_and_offload_only_these_names: the names "
            "should be exclusive and should not intersect in "
            "`names_which_can_be_saved` and `names_which_can_be_offloaded`. Got "
            f"names_which_can_be_saved={saved}, names_which_can_be_offloaded="
            f"{offloaded} and the intersection={both}"
        )

    def policy(prim, *_, **params):
        if prim is name_p and params["name"] in saved:
            return Saveable
        if prim is name_p and params["name"] in offloaded:
            return Offloadable(src=offload_src, dst=offload_dst)
        return Recompute

    return policy


def save_from_both_policies(policy_1, policy_2):
    """A policy saving what either of two policies saves (both must return bools)."""

    def policy(prim, *args, **params):
        out_1 = policy_1(prim, *args, **params)
        out_2 = policy_2(prim, *args, **params)
        if not (isinstance(out_1, bool) and isinstance(out_2, bool)):
            raise ValueError(
                "save_from_both_policies: the return value of the policies should "
                f"be a boolean. Got: {out_1} and {out_2}. Please write a custom "
                "policy function directly, rather than using this helper."
            )
        return out_1 or out_2

    return policy


checkpoint_policies = types.SimpleNamespace(
    everything_saveable=everything_saveable,
    nothing_saveable=nothing_saveable,
    dots_saveable=dots_saveable,
    checkpoint_dots=dots_saveable,
    dots_with_no_batch_dims_saveable=dots_with_no_batch_dims_saveable,
    checkpoint_dots_with_no_batch_dims=dots_with_no_batch_dims_saveable,
    offload_dot_with_no_batch_dims=offload_dot_with_no_batch_dims,
    save_anything_except_these_names=save_anything_except_these_names,
    save_any_names_but_these=save_any_names_but_these,
    save_only_these_names=save_only_these_names,
    save_from_both_policies=save_from_both_policies,
    save_and_offload_only_these_names=save_and_offload_only_these_names,
)


# --------------------------------------------------------------------------- checkpoint


def _check_static_argnums(static_argnums):
    if type(static_argnums) is int:
        return (static_argnums,)
    if not (type(static_argnums) is tuple and all(type(d) is int for d in static_argnums)):
        raise TypeError(
            "the `static_argnums` argument to `xform.checkpoint` / `xform.remat` "
            f"must be an int or a tuple of ints, but got value {static_argnums!r}"
        )
    return static_argnums


def _with_statics(fun, positions, static_values, nargs):
    """``fun`` of the dynamic arguments only, the static ones put back in place."""

    def dyn_fun(*dyn_args, **kwargs):
        dyn, static = iter(dyn_args), iter(static_values)
        args = [next(static) if i in positions else next(dyn) for i in range(nargs)]
        if args and type(args[-1]) is _StaticKwargs:
            kwargs = {**kwargs, **dict(args.pop())}
        return fun(*args, **kwargs)

    return dyn_fun


def _with_static_kwargs(positions, static_values, nargs, static_kwargs):
    """Static keyword arguments as one more static positional one: a dict of them, which
    ``_with_statics`` passes back as keywords (see ``_StaticKwargs``)."""
    return positions | {nargs}, static_values + (_StaticKwargs(static_kwargs),), nargs + 1


class _StaticKwargs(tuple):
    """The static keyword arguments, riding in the static positional values (hashable)."""


def _static_key(values):
    """A cache key for the static arguments; None when one of them is not hashable."""
    try:
        hash(values)
    except TypeError:
        return None
    return values


def checkpoint(fun, *, prevent_cse=True, policy=None, static_argnums=(), static_argnames=()):
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
      static_argnames: names of keyword arguments passed as Python values, likewise.

    Returns:
      A function with the signature of ``fun``.

    Example:
      >>> @xform.checkpoint
      ... def f(x):
      ...     return xform.numpy.sin(xform.numpy.sin(x))
      >>> xform.grad(f)(1.0)  # the backward pass recomputes sin(x)
    """
    static_argnums = _check_static_argnums(static_argnums)
    static_argnames = (
        (static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames)
    )
    if isinstance(prevent_cse, (tuple, list)):
        # JAX takes one flag per argument; the barrier here covers all inputs or none.
        prevent_cse = any(pytree.tree_leaves(tuple(prevent_cse)))
    elif not isinstance(prevent_cse, bool):
        raise TypeError(
            f"checkpoint: prevent_cse must be a bool or tuple of bools, got {type(prevent_cse)=}"
        )
    name = fun_name(fun)
    cache = {}  # (in_tree, avals, static args) -> (jaxpr, consts, out_tree)

    @functools.wraps(fun)
    @api_boundary
    def fun_remat(*args, **kwargs):
        nargs = len(args)
        if not all(-nargs <= d < nargs for d in static_argnums):
            raise ValueError(
                "the `static_argnums` argument to `xform.checkpoint` / "
                "`xform.remat` can only take integer values greater than or equal "
                f"to `-len(args)` and less than `len(args)`, but got "
                f"{static_argnums}, while `len(args)` = {nargs}"
            )
        positions = frozenset(d % nargs for d in static_argnums)
        static_values = tuple(args[i] for i in sorted(positions))
        dyn_args = tuple(a for i, a in enumerate(args) if i not in positions)
        if static_argnames and any(k in kwargs for k in static_argnames):
            static_kwargs = tuple(sorted((k, v) for k, v in kwargs.items() if k in static_argnames))
            kwargs = {k: v for k, v in kwargs.items() if k not in static_argnames}
            positions, static_values, nargs = _with_static_kwargs(
                positions, static_values, nargs, static_kwargs
            )
        leaves, in_tree = pytree.tree_flatten((dyn_args, kwargs))
        avals = arg_avals(leaves, in_tree, fun)
        statics = _static_key((tuple(sorted(positions)), nargs, static_values))
        key = None if statics is None else (in_tree, tuple(avals), statics)
        hit = None if key is None else cache.get(key)
        if hit is None:
            store = {}
            flat = flatten_fun(
                _with_statics(fun, positions, static_values, nargs) if positions else fun,
                in_tree,
                store,
            )
            jaxpr, consts = convert_constvars(
                trace_to_jaxpr(flat, avals, f"tracing `{name}` for checkpoint")
            )
            hit = (jaxpr, consts, store["out_tree"])
            # A body closing over tracers belongs to this trace only: not reused.
            if key is not None and not any(isinstance(c, core.Tracer) for c in consts):
                cache[key] = hit
        jaxpr, consts, out_tree = hit

        def bind(jaxpr, args):
            return remat_p.bind(
                *args,
                jaxpr=jaxpr,
                prevent_cse=bool(prevent_cse),
                differentiated=False,
                policy=policy,
            )

        if refs.has_refs(jaxpr.jaxpr):  # a body of the references' values (refs.py)
            outs = refs.call_discharged(jaxpr, [*consts, *leaves], bind)
        else:
            outs = bind(jaxpr, [*consts, *leaves])
        return pytree.tree_unflatten(out_tree, outs)

    return fun_remat


remat = checkpoint
