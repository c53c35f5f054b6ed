"""``custom_jvp`` and ``custom_vjp``: functions whose derivatives are given by the user.

A call binds a call primitive carrying the function and the user's rules, wrapped to work on
flat lists; pytrees are handled here. As in JAX, the function itself is traced only where a
jaxpr is needed (jit, make_jaxpr, vmap): under ``jvp`` and ``grad`` only the rule runs, so the
function's Python control flow on its (concrete) arguments keeps working there.

Also here, with JAX's ``jax.custom_derivatives`` names: ``SymbolicZero``/``zero_from_primal``
and ``CustomVJPPrimal``/``custom_vjp_primal_tree_values`` for rules defined with
``symbolic_zeros=True``, ``custom_gradient`` (TensorFlow's style, on ``custom_vjp``) and
``closure_convert``. JAX's ``linear_call`` is not implemented yet.
"""

import dataclasses
import functools
import inspect
import typing

import numpy as np

from xform import core, dtypes, errors, pytree
from xform.core import Tracer
from xform.interpret import ad
from xform.interpret.staging import JaxprTrace, trace_to_jaxpr
from xform.primitives.autodiff import custom_jvp_call_p, custom_vjp_call_p
from xform.runtime.array import from_host
from xform.runtime.jit import arg_avals, fun_name
from xform.traceback_util import api_boundary

# --------------------------------------------------------------------------- symbolic zeros


class SymbolicZero:
    """A zero tangent (or cotangent) known to be zero without a value: what a custom rule
    defined with ``symbolic_zeros=True`` gets for an input that is not differentiated.

    It has the zero's type (``aval``, and its ``shape``/``dtype``); it is not an array and
    cannot be passed to ``xform.numpy`` functions. A rule may return one for a zero output.
    """

    def __init__(self, aval):
        self.aval = aval

    def __repr__(self):
        return "SymbolicZero"

    def __getattr__(self, name):
        if name == "aval":  # not set yet (unpickling, copying): no recursion
            raise AttributeError(name)
        try:
            return getattr(self.aval, name)
        except AttributeError:
            raise AttributeError(f"SymbolicZero has no attribute {name}") from None

    @staticmethod
    def from_primal_value(val):
        """The symbolic zero tangent of the primal value ``val``."""
        return SymbolicZero(ad.tangent_aval(core.get_aval(val)))


def zero_from_primal(val, symbolic_zeros=False):
    """Zero tangents for the primal pytree ``val``: ``SymbolicZero``s with
    ``symbolic_zeros=True``, else arrays of zeros of the tangent types."""

    def zero(x):
        t_aval = ad.tangent_aval(core.get_aval(x))
        return SymbolicZero(t_aval) if symbolic_zeros else ad.instantiate(ad.Zero(t_aval))

    return pytree.tree_map(zero, val)


def _from_symbolic(t, aval):
    """A rule's output tangent, a SymbolicZero (or a float0 value: traces hold no float0)
    made the internal zero of the output type."""
    t_aval = ad.tangent_aval(aval)
    return ad.Zero(t_aval) if type(t) is SymbolicZero or t_aval.dtype == dtypes.float0 else t


@dataclasses.dataclass(frozen=True)
class CustomVJPPrimal:
    """A primal argument leaf as a ``custom_vjp`` fwd rule defined with
    ``symbolic_zeros=True`` gets it: the ``value`` and whether it is ``perturbed``
    (differentiated)."""

    value: typing.Any
    perturbed: bool


def custom_vjp_primal_tree_values(tree):
    """``tree`` with each ``CustomVJPPrimal`` leaf replaced by its value: the arguments of a
    symbolic-zeros fwd rule in their plain form."""
    return pytree.tree_map(
        lambda x: x.value if isinstance(x, CustomVJPPrimal) else x,
        tree,
        is_leaf=lambda x: isinstance(x, CustomVJPPrimal),
    )


def resolve_kwargs(kind, name, fun, signature, args, kwargs):
    """``args`` and ``kwargs`` as the positional arguments of ``fun`` (its defaults filled
    in), for the ``kind``-decorated function ``name`` (``custom_jvp``, ...): JAX's TypeError
    where they do not bind, or where a keyword-only argument is passed."""
    if isinstance(fun, functools.partial) or signature is None:
        if not kwargs:  # an opaque signature (as JAX treats a partial): nothing to resolve
            return args
        signature = inspect.signature(lambda *args, **kwargs: None)
    try:
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        passed = [k for k in bound.kwargs if k in kwargs]
        if passed:
            raise TypeError(
                "The following keyword arguments could not be resolved to positions: "
                + ", ".join(passed)
            )
    except TypeError as e:
        raise TypeError(
            f"The input arguments to the {kind}-decorated function {name} could not be "
            f"resolved to positional-only arguments. Binding failed with the error:\n{e}"
        ) from e
    return bound.args


class _CustomFunction:
    """What custom_jvp and custom_vjp share: argument handling and the flat function."""

    kind = "custom function"  # JAX's name of the decorator, for messages

    def __init__(self, fun, nondiff_argnums, nondiff_argnames=()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.name = fun_name(fun)
        try:
            self._signature = inspect.signature(fun)
        except (TypeError, ValueError):
            self._signature = None
        if isinstance(nondiff_argnames, str):
            nondiff_argnames = (nondiff_argnames,)
        positions = set(nondiff_argnums)
        if nondiff_argnames and self._signature is not None:
            # As JAX: a name counts where it is a parameter that may be passed by position.
            for i, param in enumerate(self._signature.parameters.values()):
                if param.name in nondiff_argnames and param.kind in (
                    param.POSITIONAL_ONLY,
                    param.POSITIONAL_OR_KEYWORD,
                ):
                    positions.add(i)
        self.nondiff_argnums = tuple(sorted(positions))

    def __getattr__(self, name):
        # As JAX's: other attributes are the function's (a custom_jvp of a custom_vmap
        # function still has ``def_vmap``).
        if name == "fun":  # not set yet (copying, unpickling): no recursion
            raise AttributeError(name)
        return getattr(self.fun, name)

    def _positional(self, args, kwargs):
        return resolve_kwargs(self.kind, self.name, self.fun, self._signature, args, kwargs)

    def _flatten(self, args):
        """(nondiff args, diff args, flat leaves, in_tree, the function on flat leaves, store):
        ``store["out_tree"]`` is set by the first of the function and its rules to run."""
        nondiff = [args[i] for i in self.nondiff_argnums]
        diff = tuple(a for i, a in enumerate(args) if i not in self.nondiff_argnums)
        leaves, in_tree = pytree.tree_flatten(diff)
        arg_avals(leaves, pytree.tree_structure((diff, {})), self.fun)  # checks the types
        store = {}

        def flat_fun(*flat):
            out = self.fun(*self._merge_args(nondiff, pytree.tree_unflatten(in_tree, flat)))
            out_leaves, out_tree = pytree.tree_flatten(out)
            _check_out_tree(self.name, "output", out_tree, store)
            store["fun_out"] = (out_tree, [core.get_aval(x) for x in out_leaves])
            return out_leaves

        flat_fun.__name__ = self.name
        return nondiff, diff, leaves, in_tree, flat_fun, store

    def _runs_plainly(self, args):
        """No transformation is active and no argument is traced: just run the function."""
        return core.trace_state.trace is core.eval_trace and not any(
            isinstance(x, Tracer) for x in pytree.tree_leaves(args)
        )

    def _merge_args(self, nondiff, diff):
        """The full argument list from the non-differentiable and differentiable ones."""
        total = len(nondiff) + len(diff)
        nondiff, diff = iter(nondiff), iter(diff)
        return [next(nondiff) if i in self.nondiff_argnums else next(diff) for i in range(total)]


_PYTHON_SCALARS = frozenset([bool, int, float, complex])


def _as_passed(leaves):
    """For a custom function called with argument ``leaves``: a function giving its rule the
    primal values of those arguments with the kinds they were passed as.

    A call being staged is differentiated (if ever) by replaying its equation, where the
    program's literals reach the rule as Python scalars; JAX traces that rule from the avals,
    so every argument is a tracer there and code such as ``x.shape`` in the rule works. Such
    values become arrays of the argument's type here. Outside staging the values are those
    of the call, and a Python scalar stays one (JAX's rule gets a ``float`` there too).
    """
    if not isinstance(core.trace_state.trace, JaxprTrace):
        return lambda values: values
    avals = [core.get_aval(x) for x in leaves]

    def as_passed(values):
        return [
            from_host(np.asarray(x, a.dtype), a.weak_type) if type(x) in _PYTHON_SCALARS else x
            for x, a in zip(values, avals, strict=True)
        ]

    return as_passed


def _check_out_tree(name, what, tree, store):
    """Record the output structure, or check it against the one already recorded (by the
    function or a rule, whichever ran first)."""
    expected = store.setdefault("out_tree", tree)
    if tree != expected:
        raise TypeError(
            f"{name}: the {what} must have the structure of the function's "
            f"output, {expected}; got {tree}"
        )


def _check_rule_primal_out(rule, out_tree, out_avals, store):
    """A rule's primal output checked against the function's, if the function ran (traced)
    before it, with JAX's TypeErrors; ``rule`` is ``(kind, rule name, function name)``."""
    kind, rule_name, name = rule
    if "fun_out" in store:
        fun_tree, fun_avals = store["fun_out"]
        if fun_tree != out_tree:
            what, also, end = (
                "container/pytree structure",
                "of the same container/pytree structure",
                ".",
            )
        elif not all(map(_same_type, out_avals, fun_avals)):
            what, also, end = "shapes/dtypes of", "with leaves of the same shape/dtype", ""
        else:
            what = None
        if what is not None:
            if kind == "custom_jvp":
                head = (
                    f"Custom JVP rule {rule_name} for function {name} must produce a pair (list "
                    "or tuple of length two) where the first element represents the primal "
                    "output (equal in value to the output of the custom_jvp-decorated function "
                    f"{name}, and in particular {also}), but instead the JVP rule output's"
                )
            else:
                head = (
                    f"Custom VJP fwd rule {rule_name} for function {name} must produce a pair "
                    "(list or tuple of length two) where the first element represents the "
                    f"primal output (equal to the output of the custom_vjp-decorated function "
                    f"{name}) and the second element represents residuals (i.e. values stored "
                    "from the forward pass for use on the backward pass), but instead the fwd "
                    "rule output's"
                )
            raise TypeError(
                f"{head} first element had {what}:\n    {_type_tree(out_tree, out_avals)}\n"
                f"while the {kind}-decorated function {name} had output {what}:\n"
                f"    {_type_tree(fun_tree, fun_avals)}{end}"
            )
    _check_out_tree(name, f"output of its {kind} rule", out_tree, store)


def _mismatch(aval, ct_aval):
    """What differs between an argument's type and its cotangent's, as JAX says it."""
    what = [
        f"the {k}s do not match"
        for k in ("dtype", "shape")
        if getattr(aval, k) != getattr(ct_aval, k)
    ]
    if not what:
        return ""
    return ", so " + (what[0] if len(what) == 1 else f"{what[0]}, and {what[1]}")


def _same_type(a, b):
    """JAX's ``typematch``: equal shapes and dtypes, weak types aside."""
    return a.shape == b.shape and a.dtype == b.dtype


def _type_tree(tree, avals):
    """``tree`` with its leaves' types, printed as JAX prints them in messages."""
    types = [a.str_short(short_dtypes=False) for a in avals]
    return str(pytree.tree_unflatten(tree, types)).replace("'", "")


def _jvp_tangents(names, got, expected_tree, primal_avals):
    """The flat tangent output of a custom_jvp rule, checked as JAX checks it: the primal
    output's structure, and per leaf the tangent type of the primal leaf (float0 for an
    integer or boolean one), weak types aside. TypeError with JAX's messages otherwise."""
    name, rule_name = names
    leaves, tree = pytree.tree_flatten(got)
    if tree != expected_tree:
        raise TypeError(
            f"Custom JVP rule {rule_name} for function {name} must produce primal and tangent "
            "outputs with equal container (pytree) structures, but got "
            f"{expected_tree} and {tree} respectively."
        )
    expected = [ad.tangent_aval(a) for a in primal_avals]
    got_avals = [_tangent_type(x) for x in leaves]
    wrong = [
        (p, e, g)
        for p, e, g in zip(primal_avals, expected, got_avals, strict=True)
        if (e.shape, e.dtype) != g
    ]
    if not wrong:
        return leaves

    def typ(shape, dtype):
        dtype = "float0" if dtype == dtypes.float0 else dtype
        return f"{dtype}[{','.join(map(str, shape))}]"

    if len(primal_avals) == 1:
        ((p, e, g),) = wrong
        raise TypeError(
            "Custom JVP rule must produce primal and tangent outputs with corresponding "
            f"shapes and dtypes. Expected {typ(e.shape, e.dtype)} (tangent type of "
            f"{typ(p.shape, p.dtype)}) but got {typ(*g)}."
        )
    raise TypeError(
        "Custom JVP rule must produce primal and tangent outputs with corresponding shapes "
        "and dtypes, but got:\n"
        + "\n".join(
            f"  primal {typ(p.shape, p.dtype)} with tangent {typ(*g)}, expecting tangent "
            f"{typ(e.shape, e.dtype)}"
            for p, e, g in wrong
        )
    )


def _tangent_type(x):
    """``(shape, dtype)`` of a tangent a rule returned (a float0 NumPy array has no aval)."""
    if type(x) is SymbolicZero:
        return x.aval.shape, x.aval.dtype
    if hasattr(x, "dtype") and x.dtype.kind == "V":
        return tuple(x.shape), dtypes.float0
    aval = core.get_aval(x)
    return aval.shape, aval.dtype


_ZERO = object()  # stands for the leaves of a None the bwd rule returned: zero cotangents


def _bwd_cotangents(cts, diff, in_tree, in_avals):
    """The flat cotangents of a custom_vjp bwd rule's result, checked against the arguments
    as JAX checks them (its TypeError and ValueErrors).

    As in JAX, ``None`` in place of an argument's cotangent, or of any subtree of it, means
    zero cotangents there; integer and boolean arguments always get zero (float0) ones.
    """
    if isinstance(cts, list) and len(cts) == len(diff):
        cts = tuple(cts)
    flat = []

    def collect(ct, arg):
        n = len(pytree.tree_leaves(arg))
        flat.extend([_ZERO if ct is None else ct] * n)
        return ct  # (the map's result is not used, but a pytree's unflatten may see it)

    try:  # None is a leaf here, so it may stand for a whole subtree of the arguments
        if not isinstance(cts, tuple):
            raise ValueError
        pytree.tree_map(collect, cts, diff, is_leaf=lambda x: x is None)
    except ValueError:
        raise TypeError(
            "Custom VJP bwd rule must produce an output with the same container (pytree) "
            "structure as the args tuple of the primal function, and in particular must "
            "produce a tuple of length equal to the number of arguments to the primal "
            f"function, but got bwd output structure {pytree.tree_structure(cts)} for primal "
            f"input structure {in_tree}."
        ) from None
    paths = [pytree.keystr(p) for p, _ in pytree.tree_flatten_with_path(diff)[0]]
    out = []
    for path, ct, aval in zip(paths, flat, in_avals, strict=True):
        t_aval = ad.tangent_aval(aval)
        if ct is _ZERO or t_aval.dtype == dtypes.float0:
            out.append(ad.Zero(t_aval))
        elif type(ct) is SymbolicZero:
            if not _same_type(ct.aval, t_aval):
                raise ValueError(
                    "Custom VJP bwd rule produced a SymbolicZero with a shape/dtype that does "
                    "not match the corresponding input tangent shape/dtype: at "
                    f"output{path} the SymbolicZero had shape/dtype "
                    f"{ct.aval.str_short(short_dtypes=False)} while the corresponding input "
                    f"had shape/dtype {aval.str_short(short_dtypes=False)}. Consider just "
                    "returning a None here instead of a SymbolicZero object."
                )
            out.append(ad.Zero(t_aval))
        else:
            ct_aval = core.get_aval(ct)
            # As JAX: an inexact argument's cotangent may have another dtype (not shape).
            if ct_aval.shape != aval.shape or (
                ct_aval.dtype != t_aval.dtype and not dtypes.is_inexact(t_aval.dtype)
            ):
                raise ValueError(
                    "Custom VJP bwd rule must produce an output with the same type as the "
                    f"args tuple of the primal function, but at output{path} the bwd rule "
                    f"produced an output of type {ct_aval.str_short(short_dtypes=False)} "
                    f"corresponding to an input of type {aval.str_short(short_dtypes=False)}"
                    + _mismatch(aval, ct_aval)
                )
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

    kind = "custom_jvp"

    def __init__(self, fun, nondiff_argnums=(), nondiff_argnames=()):
        super().__init__(fun, nondiff_argnums, nondiff_argnames)
        self.jvp = None
        self.symbolic_zeros = False

    def defjvp(self, jvp, symbolic_zeros=False):
        """Set the rule ``jvp(*nondiff_args, primals, tangents) -> (out, tangent_out)``.

        With ``symbolic_zeros=True`` the rule gets a ``SymbolicZero`` in place of the
        tangent of each input that is not being differentiated, and may return one for an
        output whose tangent is zero.
        """
        self.jvp = jvp
        self.symbolic_zeros = bool(symbolic_zeros)
        return jvp

    def defjvps(self, *tangent_fns):
        """Set the rule from one function per argument: ``fn(t, out, *args)``."""

        def jvp(primals, tangents):
            out = self(*primals)
            total = None
            for fn, t in zip(tangent_fns, tangents, strict=True):
                if fn is not None:
                    term = fn(t, out, *primals)
                    total = (
                        term if total is None else pytree.tree_map(lambda a, b: a + b, total, term)
                    )
            return out, total

        self.defjvp(jvp)

    @api_boundary
    def __call__(self, *args, **kwargs):
        if self.jvp is None:
            raise AttributeError(
                f"No JVP defined for custom_jvp function {self.name} using defjvp."
            )
        args = self._positional(args, kwargs)
        if self._runs_plainly(args):
            return self.fun(*args)
        nondiff, _, leaves, in_tree, flat_fun, store = self._flatten(args)
        name, rule, as_passed = self.name, self.jvp, _as_passed(leaves)
        rule_name = getattr(rule, "__name__", "jvp")

        def flat_jvp(primal_leaves, tangent_leaves):
            primals = pytree.tree_unflatten(in_tree, as_passed(primal_leaves))
            tangents = pytree.tree_unflatten(
                in_tree, [SymbolicZero(t.aval) if type(t) is ad.Zero else t for t in tangent_leaves]
            )
            result = rule(*nondiff, tuple(primals), tuple(tangents))
            if not isinstance(result, (tuple, list)) or len(result) != 2:
                raise TypeError(
                    f"Custom JVP rule {rule_name} for function {name} must produce a pair "
                    "(list or tuple of length two) representing primal and tangent outputs, "
                    f"but got {result}."
                )
            out, out_tree = pytree.tree_flatten(result[0])
            out_avals = [core.get_aval(x) for x in out]
            _check_rule_primal_out(("custom_jvp", rule_name, name), out_tree, out_avals, store)
            tangent = _jvp_tangents((name, rule_name), result[1], out_tree, out_avals)
            return list(out), [
                _from_symbolic(t, a) for t, a in zip(tangent, out_avals, strict=True)
            ]

        flat_jvp.__name__ = rule_name  # printed as the jvp= param
        flat_jvp.symbolic_zeros = self.symbolic_zeros
        outs = custom_jvp_call_p.bind(
            *leaves,
            fun=flat_fun,
            jvp=flat_jvp,
            num_consts=0,
            name=name,
            symbolic_zeros=self.symbolic_zeros,
        )
        return pytree.tree_unflatten(store["out_tree"], outs)


class custom_vjp(_CustomFunction):
    """A function with a custom VJP (``defvjp(fwd, bwd)``); see ``jax.custom_vjp``.

    ``fwd(*args) -> (out, residuals)``; ``bwd(*nondiff_args, residuals, ct) -> tuple`` of one
    cotangent per (differentiable) argument.
    """

    kind = "custom_vjp"

    def __init__(self, fun, nondiff_argnums=(), nondiff_argnames=()):
        super().__init__(fun, nondiff_argnums, nondiff_argnames)
        self.fwd = self.bwd = None
        self.symbolic_zeros = False

    def defvjp(self, fwd, bwd, symbolic_zeros=False, optimize_remat=False):
        """Set the rules: ``fwd(*args) -> (out, residuals)`` and
        ``bwd(*nondiff_args, residuals, ct) -> tuple`` of cotangents, one per argument.

        With ``symbolic_zeros=True``, ``fwd`` gets each differentiable argument's leaves as
        ``CustomVJPPrimal(value, perturbed)`` records (``perturbed``: whether it is being
        differentiated), and ``bwd`` gets a ``SymbolicZero`` for each zero output cotangent.
        ``optimize_remat`` is accepted and has no effect here.
        """
        self.fwd, self.bwd = fwd, bwd
        self.symbolic_zeros = bool(symbolic_zeros)

    @api_boundary
    def __call__(self, *args, **kwargs):
        if self.fwd is None:
            raise AttributeError(
                f"No VJP defined for custom_vjp function {self.name} using defvjp."
            )
        args = self._positional(args, kwargs)
        if self._runs_plainly(args):
            return self.fun(*args)
        if any(
            isinstance(x, Tracer) for i in self.nondiff_argnums for x in pytree.tree_leaves(args[i])
        ):
            raise errors.UnexpectedTracerError(
                "Found a JAX Tracer object passed as an argument to a custom_vjp function in a "
                "position indicated by nondiff_argnums as non-differentiable. Tracers cannot "
                "be passed as non-differentiable arguments to custom_vjp functions; instead, "
                "nondiff_argnums should only be used for arguments that can't be or contain "
                "JAX tracers, e.g. function-valued arguments. In particular, array-valued "
                "arguments should typically not be indicated as nondiff_argnums."
            )
        nondiff, diff, leaves, in_tree, flat_fun, store = self._flatten(args)
        in_avals = [core.get_aval(x) for x in leaves]
        name, fwd, bwd, merge = self.name, self.fwd, self.bwd, self._merge_args
        residual_tree = {}
        symbolic_zeros, as_passed = self.symbolic_zeros, _as_passed(leaves)
        fwd_name = getattr(fwd, "__name__", "fwd")

        def flat_fwd(arg_leaves, perturbed=None):
            arg_leaves = as_passed(arg_leaves)
            if symbolic_zeros:  # the leaves say what is perturbed (all: under vmap's rule)
                perturbed = [True] * len(arg_leaves) if perturbed is None else perturbed
                arg_leaves = [
                    CustomVJPPrimal(x, p) for x, p in zip(arg_leaves, perturbed, strict=True)
                ]
            result = fwd(*merge(nondiff, pytree.tree_unflatten(in_tree, arg_leaves)))
            if not isinstance(result, (tuple, list)) or len(result) != 2:
                raise TypeError(
                    f"Custom VJP fwd rule {fwd_name} for function {name} must produce a pair "
                    "(list or tuple of length two) where the first element represents the "
                    f"primal output (equal to those of the custom_vjp-decorated function "
                    f"{name}) and the second element represents residuals (i.e. values stored "
                    "from the forward pass for use on the backward pass), but instead of a "
                    f"pair the fwd rule {fwd_name} produced {result}."
                )
            out, out_tree = pytree.tree_flatten(result[0])
            out_avals = [core.get_aval(x) for x in out]
            _check_rule_primal_out(("custom_vjp", fwd_name, name), out_tree, out_avals, store)
            res_leaves, residual_tree["tree"] = pytree.tree_flatten(result[1])
            # Python scalars among the residuals reach bwd as they are, as in JAX (where they
            # stay literals): they are kept here, not bound. (equinox's filter_custom_vjp
            # passes Python bools that way and tests them with isinstance.)
            residual_tree["python"] = python = {
                i: x for i, x in enumerate(res_leaves) if type(x) in _PYTHON_SCALARS
            }
            return list(out), [x for i, x in enumerate(res_leaves) if i not in python]

        def flat_bwd(res_leaves, ct_leaves):
            python, bound = residual_tree["python"], iter(res_leaves)
            res_leaves = [
                python[i] if i in python else next(bound)
                for i in range(residual_tree["tree"].num_leaves)
            ]
            residuals = pytree.tree_unflatten(residual_tree["tree"], res_leaves)
            ct_leaves = [SymbolicZero(ct.aval) if type(ct) is ad.Zero else ct for ct in ct_leaves]
            cts = bwd(*nondiff, residuals, pytree.tree_unflatten(store["out_tree"], ct_leaves))
            return _bwd_cotangents(cts, diff, in_tree, in_avals)

        flat_fwd.__name__ = fwd_name  # printed as the fwd= param
        flat_bwd.__name__ = getattr(bwd, "__name__", "bwd")  # ... and bwd=
        flat_fwd.symbolic_zeros = flat_bwd.symbolic_zeros = self.symbolic_zeros
        outs = custom_vjp_call_p.bind(
            *leaves,
            fun=flat_fun,
            fwd=flat_fwd,
            bwd=flat_bwd,
            num_consts=0,
            name=name,
            symbolic_zeros=self.symbolic_zeros,
        )
        return pytree.tree_unflatten(store["out_tree"], outs)


# --------------------------------------------------------------------------- custom_gradient


class _GradientRule:
    """The residuals of a ``custom_gradient`` function: its gradient rule as a jaxpr (static)
    closed over ``consts`` (the pytree's leaves, so they can cross transformations)."""

    __slots__ = ("jaxpr", "in_tree", "consts")

    def __init__(self, jaxpr, in_tree, consts):
        self.jaxpr, self.in_tree, self.consts = jaxpr, in_tree, consts


pytree.register_pytree_node(
    _GradientRule,
    lambda r: (r.consts, (r.jaxpr, r.in_tree)),
    lambda aux, consts: _GradientRule(aux[0], aux[1], list(consts)),
)


def custom_gradient(fun):
    """A function with a custom gradient, in TensorFlow's ``tf.custom_gradient`` style.

    ``fun(*args)`` returns ``(out, vjp)`` where ``vjp(ct)`` maps an output cotangent to the
    cotangents of the arguments (a tuple, or one value for a single argument). The result
    is a function returning ``out`` whose reverse-mode derivative is given by ``vjp``.

    Example:
      >>> @xform.custom_gradient
      ... def f(x):
      ...     return x ** 2, lambda g: (g * x,)
      >>> xform.grad(f)(3.0)  # 3.0, not 6.0
    """
    name = fun_name(fun)

    @custom_vjp
    def wrapped_fun(*args, **kwargs):
        out, _ = fun(*args, **kwargs)
        return out

    def fwd(*args, **kwargs):
        out, rule = fun(*args, **kwargs)
        out_leaves, out_tree = pytree.tree_flatten((out,))
        store = {}

        def flat_rule(*cts):
            result = rule(*pytree.tree_unflatten(out_tree, cts))
            leaves, store["in_tree"] = pytree.tree_flatten(result)
            return leaves

        ct_avals = [ad.tangent_aval(core.get_aval(x)) for x in out_leaves]
        closed = trace_to_jaxpr(flat_rule, ct_avals, f"tracing the gradient rule of `{name}`")
        return out, _GradientRule(closed.jaxpr, store["in_tree"], list(closed.consts))

    def bwd(res, ct):
        cts = core.eval_jaxpr(res.jaxpr, res.consts, *pytree.tree_leaves((ct,)))
        cts = pytree.tree_unflatten(res.in_tree, cts)
        return (cts,) if pytree.treedef_is_leaf(res.in_tree) else cts

    wrapped_fun.defvjp(fwd, bwd)
    return wrapped_fun


# --------------------------------------------------------------------------- closure_convert


def _maybe_perturbed(x):
    """Whether a closed-over value may carry a tangent (as JAX's heuristic): a tracer of an
    inexact type, unless it is a JVP tracer whose tangent is a known zero."""
    if not isinstance(x, Tracer):
        return False
    if isinstance(x, ad.JVPTracer) and type(x.tangent) is ad.Zero:
        return _maybe_perturbed(x.primal)
    return dtypes.is_inexact(x.aval.dtype)


def closure_convert(fun, *example_args):
    """``fun`` with the values it closes over that differentiation may perturb (tracers of
    enclosing transformations) hoisted out as extra trailing arguments.

    Returns ``(converted_fun, hoisted_consts)``: ``converted_fun(*args, *hoisted_consts)``
    equals ``fun(*args)``. This lets a ``custom_vjp`` rule (e.g. of a solver taking a
    function argument) differentiate with respect to what the function closes over.

    Example:
      >>> f, consts = xform.closure_convert(lambda x: x * y, 1.0)  # y: a traced value
      >>> f(2.0, *consts)  # 2.0 * y
    """
    leaves, in_tree = pytree.tree_flatten(example_args)
    avals = arg_avals(leaves, pytree.tree_structure((example_args, {})), fun)
    store = {}

    def flat_fun(*flat):
        out = fun(*pytree.tree_unflatten(in_tree, flat))
        out_leaves, store["out_tree"] = pytree.tree_flatten(out)
        return out_leaves

    closed = trace_to_jaxpr(flat_fun, avals, f"tracing `{fun_name(fun)}` for closure_convert")
    consts = list(closed.consts)
    hoisted_at = [i for i, c in enumerate(consts) if _maybe_perturbed(c)]
    hoisted = [consts[i] for i in hoisted_at]
    jaxpr, out_tree = closed.jaxpr, store["out_tree"]

    def converted_fun(*args_and_consts):
        num_args = len(args_and_consts) - len(hoisted)
        args, new_consts = args_and_consts[:num_args], args_and_consts[num_args:]
        all_consts = list(consts)
        for i, c in zip(hoisted_at, new_consts, strict=True):
            all_consts[i] = c
        flat, tree = pytree.tree_flatten(tuple(args))
        if tree != in_tree:
            raise TypeError(
                "The inputs to the closure produced by closure_convert must have the same "
                "Pytree structure as the example arguments passed when closure_convert was "
                f"called. Expected {in_tree}, but got {tree}"
            )
        return pytree.tree_unflatten(out_tree, core.eval_jaxpr(jaxpr, all_consts, *flat))

    return converted_fun, hoisted
