"""``xform.ad_checkpoint``: JAX's ``jax.ad_checkpoint`` names.

``checkpoint_name`` marks values for the name-based policies, ``checkpoint_policies`` holds
the policies, and ``print_saved_residuals`` shows what reverse-mode differentiation of a
function keeps from its forward pass for its backward pass: the residuals, each with its type
and where it comes from (an argument, a constant, or the equation that computes it).

``Saveable``, ``Recompute`` and ``Offloadable`` are what a policy may return besides a bool.
``checkpoint`` and ``remat`` are here too for code written against older JAX versions (JAX
0.10.2 has them at the top level only).
"""

import inspect

from xform import pytree
from xform.api.autodiff import vjp
from xform.api.jit import make_jaxpr
from xform.api.remat import checkpoint, checkpoint_policies, remat
from xform.core import Literal, source_info, source_span
from xform.primitives.call import jit_p
from xform.primitives.elementwise import reduce_precision_p
from xform.primitives.remat import Offloadable, Recompute, Saveable, checkpoint_name, name_p

__all__ = [
    "Offloadable",
    "Recompute",
    "Saveable",
    "checkpoint",
    "checkpoint_name",
    "checkpoint_policies",
    "print_saved_residuals",
    "remat",
    "saved_residuals",
]


def _arg_names(fun, args, kwargs):
    """A name per flat argument leaf, as JAX's debug info spells them: ``x``,
    ``params['w']``, ``args[0]`` for the extra positional arguments (named after the
    ``*args`` parameter), ``kw['z']`` for extra keyword ones, ``args[2]`` without a
    signature."""
    try:
        params = list(inspect.signature(fun).parameters.values())
    except (TypeError, ValueError):
        params = None
    positional = [p for p in params or () if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    var_args = next((p.name for p in params or () if p.kind is p.VAR_POSITIONAL), "args")
    var_kw = next((p.name for p in params or () if p.kind is p.VAR_KEYWORD), "kwargs")
    named = {p.name for p in params or () if p.kind is not p.VAR_KEYWORD}

    def arg_name(i):
        if params is None:
            return f"args[{i}]"
        if i < len(positional):
            return positional[i].name
        return f"{var_args}[{i - len(positional)}]"

    def kwarg_name(k):
        return k if params is not None and k in named else f"{var_kw}[{k!r}]"

    names = []
    for i, a in enumerate(args):
        names.extend(arg_name(i) + pytree.keystr(p) for p, _ in pytree.tree_flatten_with_path(a)[0])
    for k, v in sorted(kwargs.items()):
        names.extend(
            kwarg_name(k) + pytree.keystr(p) for p, _ in pytree.tree_flatten_with_path(v)[0]
        )
    return names


def saved_residuals(f, *args, **kwargs):
    """The residuals ``vjp(f, *args, **kwargs)`` keeps: a list of ``(aval, source)`` pairs,
    ``source`` a string saying where the value comes from (as in ``print_saved_residuals``)."""
    leaves, in_tree = pytree.tree_flatten((args, kwargs))
    caller = source_info()  # the user's call of print_saved_residuals
    store = {}

    def flat_f(*flat):
        f_args, f_kwargs = pytree.tree_unflatten(in_tree, flat)
        return f(*f_args, **f_kwargs)

    def vjp_of_f(*flat):
        out, pullback = vjp(flat_f, *flat)
        store["num_out"] = len(pytree.tree_leaves(out))
        return out, pullback

    closed = make_jaxpr(vjp_of_f)(*leaves)
    jaxpr = closed.jaxpr
    residuals = jaxpr.outvars[store["num_out"] :]
    names = _arg_names(f, args, kwargs)
    res_vars = {v for v in residuals if type(v) is not Literal}
    results = [(v.aval, "from a literal") for v in residuals if type(v) is Literal]
    results += [(v.aval, "from a constant") for v in jaxpr.constvars if v in res_vars]
    for v, name in zip(jaxpr.invars, names, strict=True):
        if v in res_vars:
            results.append((v.aval, f"from the argument {name}"))

    def where(eqn):
        # An equation a transformation made from a staged one (a checkpointed body's) carries
        # that one's source (core.eval_jaxpr), so each reads as the user's line and column.
        # What the call of ``f`` itself made (a jit'd ``f``) has no source in ``f``: JAX
        # prints none.
        info = eqn.source_info
        if info is None or (caller is not None and info[3:] == caller[3:]):
            return ""
        span = source_span(info)
        column = None if span is None else span[1]
        function = info[3].co_qualname if len(info) > 3 else info[2]  # JAX's qualified name
        return f"{info[0]}:{info[1]}{'' if column is None else f':{column}'} ({function})"

    producers = {v: e for e in jaxpr.eqns for v in e.outvars}

    def origin(eqn):
        # A checkpoint rounds the values it saves with reduce_precision (as JAX does, after
        # JAX reports its residuals): the value's own producer is the source.
        while eqn.primitive is reduce_precision_p and eqn.invars[0] in producers:
            eqn = producers[eqn.invars[0]]
        return eqn

    for saved_by in jaxpr.eqns:
        if not any(v in res_vars for v in saved_by.outvars):
            continue
        eqn = origin(saved_by)
        src = where(eqn)
        for v in saved_by.outvars:
            if v not in res_vars:
                continue
            if eqn.primitive is name_p:
                what = f"named '{eqn.params['name']}'"
            elif eqn.primitive is jit_p:
                what = f"output of jitted function '{eqn.params['name']}'"
            else:
                what = f"output of {eqn.primitive.name}"
            results.append((v.aval, f"{what} from {src}"))
    return results


def print_saved_residuals(f, *args, **kwargs):
    """Print, one per line, the residuals reverse-mode differentiation of ``f`` at ``args``
    keeps for the backward pass: type and source, e.g. ``f32[5] named 'a' from f.py:3 (g)``.

    Example:
      >>> f = xform.checkpoint(lambda x: xform.numpy.sin(xform.numpy.sin(x)))
      >>> print_saved_residuals(f, 1.0)
      f32[] from the argument x
    """
    for aval, src in saved_residuals(f, *args, **kwargs):
        print(f"{aval.str_short()} {src}")
