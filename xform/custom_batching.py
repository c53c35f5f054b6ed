"""``custom_vmap`` and ``sequential_vmap``: functions whose ``vmap`` is given by the user (see
``jax.custom_batching``).

A call traces the function (as JAX does) and binds ``custom_vmap_call``
(xform/primitives/custom_batching.py) with its jaxpr and the rule; pytrees are handled here
and in the primitive's batching rule, which unflattens the operands for the rule.
"""

import functools
import inspect

from xform import core, pytree
from xform.core import Tracer
from xform.custom_derivatives import resolve_kwargs
from xform.interpret.staging import convert_constvars, trace_to_jaxpr
from xform.primitives.custom_batching import call_rule, custom_vmap_p
from xform.primitives.scan import map as _lax_map
from xform.runtime.jit import arg_avals, fun_name
from xform.traceback_util import api_boundary

__all__ = ["custom_vmap", "sequential_vmap"]


class _ClosedRule:
    """The user's rule as the primitive calls it: on ``(consts, args)``, of which only the
    arguments reach the rule (the function's closed-over values must not be batched)."""

    def __init__(self, rule, name):
        functools.update_wrapper(self, rule)
        self.rule = rule
        self.name = name

    def __call__(self, axis_size, all_in_batched, consts, args):
        consts_batched, in_batched = all_in_batched
        if any(pytree.tree_leaves(consts_batched)):
            raise ValueError(
                f"custom_vmap function {self.name} closes over values batched by an enclosing "
                "vmap; pass them to it as arguments instead"
            )
        return call_rule(self.rule, axis_size, in_batched, args)

    def __str__(self):
        return str(self.rule)


class custom_vmap:
    """A function with a custom batching rule (``def_vmap``); see
    ``jax.custom_batching.custom_vmap``.

    Outside ``vmap`` the function runs as it is; under ``vmap`` the rule
    ``rule(axis_size, in_batched, *args) -> (out, out_batched)`` is called with the batched
    arguments (batch dimension first) and ``in_batched``, a list of bool pytrees saying which
    are batched; ``out_batched`` (a bool pytree like ``out``) says which outputs are.
    Differentiation (``jvp``) goes through the function and the rule; reverse mode does not
    (combine with ``custom_vjp`` for it).

    Example:
      >>> @xform.custom_batching.custom_vmap
      ... def f(x, y):
      ...     return x + y
      >>> @f.def_vmap
      ... def f_vmap_rule(axis_size, in_batched, xs, ys):
      ...     return xs * ys, True
      >>> xform.vmap(f)(xform.numpy.arange(3), xform.numpy.arange(1, 4))  # [0, 2, 6]
    """

    def __init__(self, fun):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.vmap_rule = None
        self.name = fun_name(fun)
        try:
            self._signature = inspect.signature(fun)
        except (TypeError, ValueError):
            self._signature = None

    def __getattr__(self, name):
        # As JAX's: other attributes are the function's (a custom_vmap of a custom_jvp
        # function still has ``defjvp``).
        if name == "fun":  # not set yet (copying, unpickling): no recursion
            raise AttributeError(name)
        return getattr(self.fun, name)

    def def_vmap(self, vmap_rule):
        """Set the rule ``vmap_rule(axis_size, in_batched, *args) -> (out, out_batched)``;
        returns it unchanged."""
        self.vmap_rule = vmap_rule
        return vmap_rule

    def _positional(self, args, kwargs):
        return resolve_kwargs("custom_vmap", self.name, self.fun, self._signature, args, kwargs)

    @api_boundary
    def __call__(self, *args, **kwargs):
        args = self._positional(args, kwargs)
        if self.vmap_rule is None:
            raise AttributeError(
                f"No batching rule defined for custom_vmap function {self.name} using def_vmap."
            )
        leaves, in_tree = pytree.tree_flatten(args)
        if core.trace_state.trace is core.eval_trace and not any(
            isinstance(x, Tracer) for x in leaves
        ):
            return self.fun(*args)  # no transformation: the function as it is
        avals = arg_avals(leaves, pytree.tree_structure((args, {})), self.fun)
        store = {}

        def flat_fun(*flat):
            out_leaves, store["out_tree"] = pytree.tree_flatten(
                self.fun(*pytree.tree_unflatten(in_tree, flat))
            )
            return out_leaves

        flat_fun.__name__ = self.name
        closed = trace_to_jaxpr(flat_fun, avals, f"tracing custom_vmap function `{self.name}`")
        call, consts = convert_constvars(closed)
        outs = custom_vmap_p.bind(
            *consts,
            *leaves,
            call=call,
            rule=_ClosedRule(self.vmap_rule, self.name),
            in_tree=pytree.tree_structure((list(consts), args)),
            out_tree=store["out_tree"],
        )
        return pytree.tree_unflatten(store["out_tree"], outs)


def _tree_split(mask, tree):
    mapped = pytree.tree_map(lambda m, x: x if m else None, mask, tree)
    rest = pytree.tree_map(lambda m, x: None if m else x, mask, tree)
    return mapped, rest


def _tree_merge(mask, mapped, rest):
    return pytree.tree_map(lambda m, a, b: a if m else b, mask, mapped, rest)


def sequential_vmap(f):
    """``f`` as a ``custom_vmap`` function whose ``vmap`` is a loop (``lax.map``) over the
    batch: for functions that do not batch natively. Unbatched arguments are closed over.

    Example:
      >>> @xform.custom_batching.sequential_vmap
      ... def f(x):
      ...     return x + 1
      >>> xform.vmap(f)(xform.numpy.arange(3))  # one call of f per element
    """
    f = custom_vmap(f)

    @f.def_vmap
    def rule(axis_size, in_batched, *args):
        mapped, rest = _tree_split(in_batched, list(args))

        def one(mapped_args):
            return f(*_tree_merge(in_batched, mapped_args, rest))

        out = _lax_map(one, mapped)
        return out, pytree.tree_map(lambda _: True, out)

    return f
