"""``custom_jvp`` and ``custom_vjp``: functions whose derivatives are given by the user.

A call binds a call primitive carrying the function and the user's rules, wrapped to work on
flat lists; pytrees are handled here. As in JAX, the function itself is traced only where a
jaxpr is needed (jit, make_jaxpr, vmap): under ``jvp`` and ``grad`` only the rule runs, so the
function's Python control flow on its (concrete) arguments keeps working there.
"""

import functools
import inspect

from jax import tree_util

from xform import core, dtypes
from xform.api import _arg_avals, _fun_name
from xform.core import Tracer
from xform.interpreters import ad
from xform.primitives.autodiff import custom_jvp_call_p, custom_vjp_call_p


class _CustomFunction:
    """What custom_jvp and custom_vjp share: argument handling and the flat function."""

    def __init__(self, fun, nondiff_argnums):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.name = _fun_name(fun)
        self.nondiff_argnums = tuple(sorted(nondiff_argnums))
        try:
            self._signature = inspect.signature(fun)
        except (TypeError, ValueError):
            self._signature = None

    def _positional(self, args, kwargs):
        if kwargs and self._signature is not None:
            bound = self._signature.bind(*args, **kwargs)
            bound.apply_defaults()
            return bound.args
        if kwargs:
            raise TypeError(f"{self.name}: keyword arguments need an inspectable signature")
        return args

    def _flatten(self, args):
        """(nondiff args, diff args, flat leaves, in_tree, the function on flat leaves, store):
        ``store["out_tree"]`` is set by the first of the function and its rules to run."""
        nondiff = [args[i] for i in self.nondiff_argnums]
        diff = tuple(a for i, a in enumerate(args) if i not in self.nondiff_argnums)
        leaves, in_tree = tree_util.tree_flatten(diff)
        _arg_avals(leaves, tree_util.tree_structure((diff, {})), self.fun)  # checks the types
        store = {}

        def flat_fun(*flat):
            out = self.fun(*self._merge_args(nondiff, tree_util.tree_unflatten(in_tree, flat)))
            out_leaves, out_tree = tree_util.tree_flatten(out)
            _check_out_tree(self.name, "output", out_tree, store)
            return out_leaves

        flat_fun.__name__ = self.name
        return nondiff, diff, leaves, in_tree, flat_fun, store

    def _runs_plainly(self, args):
        """No transformation is active and no argument is traced: just run the function."""
        return core.trace_state.trace is core.eval_trace and not any(
            isinstance(x, Tracer) for x in tree_util.tree_leaves(args))

    def _merge_args(self, nondiff, diff):
        """The full argument list from the non-differentiable and differentiable ones."""
        total = len(nondiff) + len(diff)
        nondiff, diff = iter(nondiff), iter(diff)
        return [next(nondiff) if i in self.nondiff_argnums else next(diff) for i in range(total)]


def _check_out_tree(name, what, tree, store):
    """Record the output structure, or check it against the one already recorded (by the
    function or a rule, whichever ran first)."""
    expected = store.setdefault("out_tree", tree)
    if tree != expected:
        raise TypeError(f"{name}: the {what} must have the structure of the function's "
                        f"output, {expected}; got {tree}")


def _check_pair(name, what, got, expected_tree, expected_avals):
    leaves, tree = tree_util.tree_flatten(got)
    if tree != expected_tree:
        raise TypeError(f"{name}: the {what} must have the structure of the function's "
                        f"output, {expected_tree}; got {tree}")
    for i, (x, aval) in enumerate(zip(leaves, expected_avals, strict=True)):
        shape = core.get_aval(x).shape if not hasattr(x, "dtype") or x.dtype.kind != "V" \
            else x.shape
        if shape != aval.shape:
            raise ValueError(f"{name}: output {i} of the {what} has shape {shape}, expected "
                             f"{aval.shape}")
    return leaves


_ZERO = object()  # stands for the leaves of a None the bwd rule returned: zero cotangents


def _bwd_cotangents(name, cts, diff, in_tree, in_avals):
    """The flat cotangents of a custom_vjp bwd rule's result, checked against the arguments.

    As in JAX, ``None`` in place of an argument's cotangent, or of any subtree of it, means
    zero cotangents there; integer and boolean arguments always get zero (float0) ones.
    """
    if isinstance(cts, list) and len(cts) == len(diff):
        cts = tuple(cts)
    if not isinstance(cts, tuple) or len(cts) != len(diff):
        length = f" of length {len(cts)}" if isinstance(cts, (tuple, list)) else ""
        raise TypeError(f"custom_vjp bwd rule of {name} must return a tuple with one "
                        f"cotangent per differentiable argument ({len(diff)}), got "
                        f"{type(cts).__name__}{length}")
    flat = []

    def collect(ct, arg):
        if ct is None:
            flat.extend([_ZERO] * len(tree_util.tree_leaves(arg)))
        else:
            flat.append(ct)

    try:  # None is a leaf here, so it may stand for a whole subtree of the arguments
        tree_util.tree_map(collect, cts, diff, is_leaf=lambda x: x is None)
    except ValueError:
        raise TypeError(f"custom_vjp bwd rule of {name} returned cotangents with the "
                        f"structure {tree_util.tree_structure(cts)}; the arguments have "
                        f"{in_tree}") from None
    if len(flat) != len(in_avals):
        raise TypeError(f"custom_vjp bwd rule of {name} returned cotangents with the "
                        f"structure {tree_util.tree_structure(cts)}; the arguments have "
                        f"{in_tree}")
    out = []
    for i, (ct, aval) in enumerate(zip(flat, in_avals, strict=True)):
        t_aval = ad.tangent_aval(aval)
        if ct is _ZERO or t_aval.dtype == dtypes.float0:
            out.append(ad.Zero(t_aval))
            continue
        ct_aval = core.get_aval(ct)
        if ct_aval.shape != aval.shape or ct_aval.dtype != t_aval.dtype:
            raise ValueError(f"custom_vjp bwd rule of {name}: cotangent {i} has shape "
                             f"{ct_aval.shape} and dtype {ct_aval.dtype}; its argument is "
                             f"{aval.str_short()}, so the cotangent must have shape "
                             f"{aval.shape} and dtype {t_aval.dtype}")
        out.append(ct)
    return out


class custom_jvp(_CustomFunction):
    """A function with a custom JVP rule (``defjvp``); see ``jax.custom_jvp``.

    Example:
      >>> @xform.custom_jvp
      ... def f(x):
      ...     return xform.numpy.sin(x)
      >>> @f.defjvp
      ... def f_jvp(primals, tangents):
      ...     (x,), (t,) = primals, tangents
      ...     return f(x), xform.numpy.cos(x) * t
    """

    def __init__(self, fun, nondiff_argnums=()):
        super().__init__(fun, nondiff_argnums)
        self.jvp = None

    def defjvp(self, jvp, symbolic_zeros=False):
        """Set the rule ``jvp(*nondiff_args, primals, tangents) -> (out, tangent_out)``."""
        self.jvp = jvp
        return jvp

    def defjvps(self, *tangent_fns):
        """Set the rule from one function per argument: ``fn(t, out, *args)``."""

        def jvp(primals, tangents):
            out = self(*primals)
            total = None
            for fn, t in zip(tangent_fns, tangents, strict=True):
                if fn is not None:
                    term = fn(t, out, *primals)
                    total = term if total is None else tree_util.tree_map(
                        lambda a, b: a + b, total, term)
            return out, total

        self.defjvp(jvp)

    def __call__(self, *args, **kwargs):
        if self.jvp is None:
            raise AttributeError(f"No JVP defined for custom_jvp function {self.name} using "
                                 "defjvp.")
        args = self._positional(args, kwargs)
        if self._runs_plainly(args):
            return self.fun(*args)
        nondiff, _, leaves, in_tree, flat_fun, store = self._flatten(args)
        name, rule = self.name, self.jvp

        def flat_jvp(primal_leaves, tangent_leaves):
            primals = tree_util.tree_unflatten(in_tree, primal_leaves)
            tangents = tree_util.tree_unflatten(in_tree, tangent_leaves)
            result = rule(*nondiff, tuple(primals), tuple(tangents))
            if not isinstance(result, (tuple, list)) or len(result) != 2:
                raise TypeError(f"custom_jvp rule of {name} must return a pair (primal_out, "
                                f"tangent_out), got {type(result).__name__}")
            out, out_tree = tree_util.tree_flatten(result[0])
            _check_out_tree(name, "primal output of its custom_jvp rule", out_tree, store)
            out_avals = [core.get_aval(x) for x in out]
            tangent = _check_pair(name, "tangent output of its custom_jvp rule", result[1],
                                  out_tree, out_avals)
            return list(out), list(tangent)

        flat_jvp.__name__ = getattr(rule, "__name__", "jvp")  # printed as the jvp= param
        outs = custom_jvp_call_p.bind(*leaves, fun=flat_fun, jvp=flat_jvp, num_consts=0)
        return tree_util.tree_unflatten(store["out_tree"], outs)


class custom_vjp(_CustomFunction):
    """A function with a custom VJP (``defvjp(fwd, bwd)``); see ``jax.custom_vjp``.

    ``fwd(*args) -> (out, residuals)``; ``bwd(*nondiff_args, residuals, ct) -> tuple`` of one
    cotangent per (differentiable) argument.
    """

    def __init__(self, fun, nondiff_argnums=()):
        super().__init__(fun, nondiff_argnums)
        self.fwd = self.bwd = None

    def defvjp(self, fwd, bwd, symbolic_zeros=False):
        self.fwd, self.bwd = fwd, bwd

    def __call__(self, *args, **kwargs):
        if self.fwd is None:
            raise AttributeError(f"No VJP defined for custom_vjp function {self.name} using "
                                 "defvjp.")
        args = self._positional(args, kwargs)
        if self._runs_plainly(args):
            return self.fun(*args)
        nondiff, diff, leaves, in_tree, flat_fun, store = self._flatten(args)
        in_avals = [core.get_aval(x) for x in leaves]
        name, fwd, bwd, merge = self.name, self.fwd, self.bwd, self._merge_args
        residual_tree = {}

        def flat_fwd(arg_leaves):
            result = fwd(*merge(nondiff, tree_util.tree_unflatten(in_tree, arg_leaves)))
            if not isinstance(result, (tuple, list)) or len(result) != 2:
                raise TypeError(f"custom_vjp fwd rule of {name} must return a pair (output, "
                                f"residuals), got {type(result).__name__}")
            out, out_tree = tree_util.tree_flatten(result[0])
            _check_out_tree(name, "output of its custom_vjp fwd rule", out_tree, store)
            res_leaves, residual_tree["tree"] = tree_util.tree_flatten(result[1])
            return list(out), res_leaves

        def flat_bwd(res_leaves, ct_leaves):
            residuals = tree_util.tree_unflatten(residual_tree["tree"], res_leaves)
            cts = bwd(*nondiff, residuals, tree_util.tree_unflatten(store["out_tree"],
                                                                    ct_leaves))
            return _bwd_cotangents(name, cts, diff, in_tree, in_avals)

        flat_fwd.__name__ = getattr(fwd, "__name__", "fwd")  # printed as the fwd= param
        flat_bwd.__name__ = getattr(bwd, "__name__", "bwd")  # ... and bwd=
        outs = custom_vjp_call_p.bind(*leaves, fun=flat_fun, fwd=flat_fwd, bwd=flat_bwd,
                                      num_consts=0)
        return tree_util.tree_unflatten(store["out_tree"], outs)
