"""The public differentiation transformations: ``jvp``, ``vjp``, ``grad``, ``value_and_grad``.

Reverse mode is linearize (JVP on top of partial evaluation, staging only the tangent
computation) followed by transposition of that linear jaxpr. Eagerly (no enclosing trace),
``grad``, ``value_and_grad`` and ``vjp`` keep that linear program on a tape instead and
transpose it from there, with the same rules (``xform.interpret.tape``).

Pytrees are handled here; ``xform.interpret.ad`` works on flat lists.
"""

import functools

import numpy as np

from xform import core, dtypes, pytree
from xform.api.jit import jit
from xform.core import Jaxpr, Tracer
from xform.interpret import ad, dce, partial_eval, tape, transpose, vjp_tape
from xform.interpret.staging import trace_to_jaxpr
from xform.primitives.elementwise import convert_folding_constants
from xform.primitives.sharding import reshard_p
from xform.runtime.array import Array, from_host
from xform.runtime.jit import arg_avals, flatten_fun, fun_name
from xform.runtime.stages import abstractify
from xform.traceback_util import api_boundary


def _as_output(x):
    """A flat output of a transformation as users get it: an Array or a tracer."""
    if isinstance(x, (Array, Tracer)):
        return x
    x = np.asarray(x)
    return x if x.dtype == dtypes.float0 else from_host(x)  # float0 stays NumPy, as in JAX


def _zero_tangent(zero):
    """A ``Zero`` tangent as the array JAX returns: zeros of its type, weak for a Python
    scalar's (float0 for an integer or boolean value's)."""
    t = ad.instantiate(zero)
    if zero.aval.weak_type and zero.aval.dtype != dtypes.float0:
        return convert_folding_constants(t, zero.aval.dtype, True)
    return t


def _returned_tangent(t):
    """An output tangent as JAX returns it: a nonzero one as it is (an input's tangent passed
    through stays a Python or NumPy value), a ``Zero`` as zeros."""
    return _zero_tangent(t) if type(t) is ad.Zero else t


def _check_tangent(path, primal_aval, tangent):
    t_aval = (
        core.get_aval(tangent)
        if not isinstance(tangent, np.ndarray) or tangent.dtype != dtypes.float0
        else core.ShapedArray(tangent.shape, dtypes.float0)
    )
    expected = ad.tangent_aval(primal_aval)
    if t_aval.shape != primal_aval.shape:
        raise ValueError(
            f"jvp: primal and tangent arguments must have equal shapes; at "
            f"{path} the primal has shape {primal_aval.shape} and the tangent "
            f"{t_aval.shape}"
        )
    if t_aval.dtype != expected.dtype:
        raise TypeError(
            f"jvp: primal and tangent arguments do not match at {path}: a primal "
            f"of dtype {primal_aval.dtype} needs a tangent of dtype "
            f"{expected.dtype}, got {t_aval.dtype}"
        )


@api_boundary
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
        raise TypeError(
            "jvp: primal and tangent arguments must be tuples or lists; found "
            f"{type(primals).__name__} and {type(tangents).__name__}"
        )
    p_leaves, p_tree = pytree.tree_flatten(tuple(primals))
    t_leaves, t_tree = pytree.tree_flatten(tuple(tangents))
    if p_tree != t_tree:
        raise TypeError(
            f"jvp: primal and tangent arguments must have the same tree "
            f"structure; got {p_tree} and {t_tree}"
        )
    in_tree = pytree.tree_structure((tuple(primals), {}))
    avals = arg_avals(p_leaves, in_tree, fun)
    paths = [pytree.keystr(k) for k, _ in pytree.tree_flatten_with_path(primals)[0]]
    for path, aval, t in zip(paths, avals, t_leaves, strict=True):
        _check_tangent(f"primals{path}", aval, t)
    tangents_in = [
        ad.Zero(ad.tangent_aval(a))
        if a.dtype.kind in "biu" or (isinstance(t, np.ndarray) and t.dtype == dtypes.float0)
        else t
        for a, t in zip(avals, t_leaves, strict=True)
    ]
    store = {}
    flat = flatten_fun(_with_aux(fun, has_aux, store), in_tree, store)
    primals_out, tangents_out = ad.jvp_flat(flat, p_leaves, tangents_in)
    out_tree = store["out_tree"]
    # As JAX's, outputs that are not tracers (constants, inputs passed through) come back as
    # the function returned them.
    tangents_out = [_returned_tangent(t) for t in tangents_out]
    result = (
        pytree.tree_unflatten(out_tree, primals_out),
        pytree.tree_unflatten(out_tree, tangents_out),
    )
    return (*result, store["aux"]) if has_aux else result


def _with_aux(fun, has_aux, store):
    if not has_aux:
        return fun

    def without_aux(*args, **kwargs):
        out = fun(*args, **kwargs)
        if not isinstance(out, tuple) or len(out) != 2:
            raise TypeError(
                f"{fun_name(fun)} has has_aux=True, so it must return a pair "
                f"(output, aux); got {type(out).__name__}"
            )
        # aux is not differentiated: its traced leaves are returned as their primal values,
        # never as tracers of a differentiation that is over once the caller gets them.
        trace = core.trace_state.trace
        store["aux"] = pytree.tree_map(
            lambda x: (
                _as_output(x.primal)
                if isinstance(x, ad.JVPTracer) and x._trace is trace
                else _as_output(x.value)
                if isinstance(x, vjp_tape.VJPTracer) and x._trace is trace
                else x
            ),
            out[1],
        )
        return out[0]

    return without_aux


# --------------------------------------------------------------------------- reverse mode


def _linearize_flat(flat_fun, primals, avals, taped=True):
    """Primal outputs now, and the linear jaxpr from the tangents of the inexact inputs to
    the tangents of the outputs (or the ``tape.TapeTrace`` holding that linear program),
    with a mask of which output tangents are not zero."""
    diff = [ad.is_differentiable(a) for a in avals]
    store = {}

    def tangents_of(*args):
        known, unknown = args[: len(primals)], iter(args[len(primals) :])
        tangents = [
            next(unknown) if d else ad.Zero(ad.tangent_aval(a))
            for a, d in zip(avals, diff, strict=True)
        ]
        primals_out, tangents_out = ad.jvp_flat(flat_fun, known, tangents)
        store["primals_out"] = primals_out
        store["nonzero"] = [type(t) is not ad.Zero for t in tangents_out]
        return [t for t in tangents_out if type(t) is not ad.Zero]

    tangent_avals = [ad.tangent_aval(a) for a, d in zip(avals, diff, strict=True) if d]
    if taped and tape.applies(avals):  # eager: the linear part is kept on a tape, not staged
        _, linear = tape.linearize_flat(tangents_of, primals, tangent_avals, "linearizing")
    else:
        _, linear = partial_eval.partial_eval_flat(
            tangents_of, primals, tangent_avals, "linearizing"
        )
    return store["primals_out"], linear, store["nonzero"], diff


class _Linearized:
    """``fun`` linearized at ``primals`` (pytrees): what vjp and linearize both start from."""

    def __init__(self, fun, primals, has_aux, taped=True, flat=None):
        leaves, self.in_tree = flat or pytree.tree_flatten((primals, {}))
        self.avals = arg_avals(leaves, self.in_tree, fun)
        self.store = {}
        flat = flatten_fun(_with_aux(fun, has_aux, self.store), self.in_tree, self.store)
        self.primals_out, linear, self.nonzero, self.diff = _linearize_flat(
            flat, leaves, self.avals, taped
        )
        self.tape = linear if type(linear) is tape.TapeTrace else None
        self._linear = None if self.tape is not None else linear
        self.out_tree = self.store["out_tree"]
        self.out_avals = [core.get_aval(p) for p in self.primals_out]
        self.leaves = leaves

    def returned_primals(self):
        """The primal output as JAX's ``vjp`` returns it: the inputs passed through (and
        every computed value) as arrays, the constants the function returned as they are."""
        # A constant has a zero tangent; so has a non-differentiable input, told apart by
        # identity (a differentiable input passed through has a nonzero tangent).
        fixed = {id(x) for x, d in zip(self.leaves, self.diff, strict=True) if not d}
        return pytree.tree_unflatten(
            self.out_tree,
            [
                p if not (isinstance(p, (Array, Tracer)) or nz or id(p) in fixed) else _as_output(p)
                for p, nz in zip(self.primals_out, self.nonzero, strict=True)
            ],
        )

    @property
    def linear(self):
        """The linear program as a closed jaxpr (a tape is staged into one)."""
        if self._linear is None:
            self._linear = self.tape.closed_jaxpr()
        return self._linear

    def pullback_flat(self, ct_leaves):
        """Cotangents of the flat inputs (arrays) from those of the flat outputs, which the
        caller has checked."""
        if self.tape is not None and self._linear is None:
            cts = [ct for ct, nz in zip(ct_leaves, self.nonzero, strict=True) if nz]
            return _input_cotangents(self.avals, self.diff, self.tape.backward(cts))
        return _pull_back(
            self.linear.jaxpr, self.linear.consts, self.nonzero, self.avals, self.diff, ct_leaves
        )


class _Recorded(_Linearized):
    """``fun`` run at ``primals`` on a ``vjp_tape.VJPTrace`` (an eager gradient): what
    ``value_and_grad`` reads of a ``_Linearized``, with no linear program to stage."""

    def __init__(self, fun, leaves, in_tree, avals, has_aux):
        self.in_tree, self.avals, self.leaves = in_tree, avals, leaves
        self.diff = [True] * len(leaves)  # (only real floating-point inputs take this path)
        self.store = {}
        flat = flatten_fun(_with_aux(fun, has_aux, self.store), in_tree, self.store)
        outs, self.trace, inputs = vjp_tape.record_flat(flat, leaves, avals)
        self.in_nodes = [x.node for x in inputs]
        trace = self.trace
        self.out_nodes = [
            x.node if type(x) is vjp_tape.VJPTracer and x._trace is trace else None for x in outs
        ]
        self.primals_out = [
            x if n is None else x.value for x, n in zip(outs, self.out_nodes, strict=True)
        ]
        self.nonzero = [n is not None for n in self.out_nodes]
        self.out_tree = self.store["out_tree"]

    def pullback_flat(self, ct_leaves):
        cts = self.trace.backward(self.out_nodes, ct_leaves, self.in_nodes)
        return _input_cotangents(self.avals, self.diff, cts)


def _linearized_for_grad(fun, primals, has_aux):
    """``fun`` at ``primals`` ready to pull a gradient back: recorded on the VJP tape when
    the gradient is eager, else linearized."""
    leaves, in_tree = pytree.tree_flatten((primals, {}))
    avals = arg_avals(leaves, in_tree, fun)
    if vjp_tape.applies(avals):
        return _Recorded(fun, leaves, in_tree, avals, has_aux)
    return _Linearized(fun, primals, has_aux, flat=(leaves, in_tree))


def _pull_back(linear_jaxpr, residuals, nonzero, avals, diff, ct_leaves, given=frozenset()):
    """Transpose the linear program (``linear_jaxpr`` closed over ``residuals``): the flat
    input cotangents from the flat output ones (``nonzero``: which outputs it computes)."""
    cts = [ct for ct, nz in zip(ct_leaves, nonzero, strict=True) if nz]
    args = [transpose.UndefinedPrimal(v.aval) for v in linear_jaxpr.invars]
    return _input_cotangents(
        avals, diff, transpose.backward_pass(linear_jaxpr, residuals, args, cts), given
    )


def _input_cotangents(avals, diff, cts_in, given=frozenset()):
    """The cotangents of all flat inputs, typed as their primals, from ``cts_in`` (those of
    the differentiable ones). A cotangent whose id is in ``given`` (one the caller passed
    in, which reached an input unchanged) comes back as it was given, as JAX's."""
    cts_in = iter(cts_in)
    flat_cts = []
    for aval, d in zip(avals, diff, strict=True):
        ct = next(cts_in) if d else None
        if ct is None or type(ct) is ad.Zero:
            flat_cts.append(_zero_cotangent(aval))
        else:
            flat_cts.append(ct if id(ct) in given else _typed_like(aval, _as_output(ct)))
    return flat_cts


def _is_float0(x):
    return getattr(x, "dtype", None) == dtypes.float0


def _typed_like(aval, ct):
    """As in JAX, a cotangent has its primal's type: weakly typed for a Python scalar's.
    (A complex one keeps the weak type its computation gave it: JAX's cotangents through
    ``real``/``imag``/``abs`` are strongly typed.)"""
    if aval.weak_type and isinstance(ct, (Array, Tracer)) and aval.dtype.kind != "c":
        ct_aval = core.get_aval(ct)
        if not ct_aval.weak_type and ct_aval.dtype == aval.dtype:
            return convert_folding_constants(ct, aval.dtype, True)
    return ct


def _zero_cotangent(aval):
    if dtypes.is_inexact(aval.dtype):
        return from_host(np.zeros(aval.shape, aval.dtype), aval.weak_type)
    return np.zeros(aval.shape, dtypes.float0)


@api_boundary
def vjp(fun, *primals, has_aux=False):
    """``fun``'s value at ``primals`` and a function pulling output cotangents back.

    Returns ``(primals_out, vjp_fun)`` (plus ``aux`` with ``has_aux``), where
    ``vjp_fun(cotangents_out)`` returns a tuple of cotangents, one per primal argument.
    As in JAX, ``vjp_fun`` is a pytree whose leaves are the residuals of the linearization,
    so it can be returned from ``jit`` or passed into it.

    Example:
      >>> y, pullback = xform.vjp(xform.numpy.sin, 0.5)
      >>> pullback(1.0)  # (cos 0.5,)
    """
    lin = _Linearized(fun, primals, has_aux)
    meta = _PullbackMeta(
        fun_name(fun),
        None,
        lin.nonzero,
        lin.avals,
        lin.diff,
        lin.in_tree,
        lin.out_tree,
        lin.out_avals,
    )
    meta.input_ids = [id(x) for x in lin.leaves]
    out = lin.returned_primals()
    if lin.tape is not None:  # eager: the pullback walks the tape until it is a pytree
        vjp_fun = VJP(meta, None, lin.tape)
    else:
        meta.jaxpr, residuals = _primals_first(meta, lin.linear.jaxpr, lin.linear.consts)
        vjp_fun = VJP(meta, residuals)
    return (out, vjp_fun, lin.store["aux"]) if has_aux else (out, vjp_fun)


class _PullbackMeta:
    """What a pullback (or a linearized JVP) knows besides its residuals: the linear program
    (its constvars stand for the residuals) and the structure and types of the inputs and
    outputs. Compared by identity in pytree structures, as JAX's is."""

    __slots__ = (
        "name",
        "jaxpr",
        "nonzero",
        "avals",
        "diff",
        "in_tree",
        "out_tree",
        "out_avals",
        "input_ids",
    )

    def __init__(self, name, jaxpr, nonzero, avals, diff, in_tree, out_tree, out_avals):
        self.name = name
        self.jaxpr = jaxpr
        self.nonzero = nonzero
        self.avals = avals
        self.diff = diff
        self.in_tree = in_tree
        self.out_tree = out_tree
        self.out_avals = out_avals
        self.input_ids = ()  # vjp's: the ids of the primal inputs (``_primals_first``)


class VJP:
    """The pullback ``vjp`` returns: ``vjp_fun(cotangents_out)`` is a tuple of cotangents, one
    per primal argument. A pytree (its leaves: the residuals), as JAX's ``VJP`` is.

    An eager ``vjp`` makes it from a tape (``tape.TapeTrace``), which it walks backwards; it
    stages the tape into its linear jaxpr and residuals the first time these are read (when
    the pullback is flattened as a pytree), and transposes that jaxpr from then on."""

    __slots__ = ("meta", "_residuals", "tape")

    def __init__(self, meta, residuals, tape=None):
        self.meta = meta
        self._residuals = residuals
        self.tape = tape

    @property
    def residuals(self):
        if self._residuals is None:
            closed, self.tape = self.tape.closed_jaxpr(), None
            jaxpr, consts = closed.jaxpr, closed.consts
            self.meta.jaxpr, self._residuals = _primals_first(self.meta, jaxpr, consts)
        return self._residuals

    @api_boundary
    def __call__(self, cotangents, *extra_args):
        meta = self.meta
        if extra_args:
            raise TypeError(
                f"The function returned by `vjp` applied to {meta.name} was called "
                f"with {len(extra_args) + 1} arguments, but it takes a single "
                "argument: the cotangent of the single value the function returned "
                "(a tuple of cotangents if that value is a tuple)."
            )
        ct_leaves, ct_tree = pytree.tree_flatten(cotangents)
        if ct_tree != meta.out_tree:
            raise TypeError(
                f"vjp of {meta.name}: the cotangent must have the structure "
                f"of the primal output, {meta.out_tree}; got {ct_tree}"
            )
        for i, (ct, aval) in enumerate(zip(ct_leaves, meta.out_avals, strict=True)):
            # float0 (an integer output's cotangent, as JAX's) has no aval: its shape is read
            shape = np.shape(ct) if _is_float0(ct) else core.get_aval(ct).shape
            if shape != aval.shape:
                raise ValueError(
                    f"vjp of {meta.name}: cotangent {i} has shape "
                    f"{shape}, the primal output {aval.shape}"
                )
        given = {id(ct) for ct in ct_leaves}
        if self.tape is not None:
            cts = [ct for ct, nz in zip(ct_leaves, meta.nonzero, strict=True) if nz]
            flat = _input_cotangents(meta.avals, meta.diff, self.tape.backward(cts), given)
        else:
            flat = _pull_back(
                meta.jaxpr, self.residuals, meta.nonzero, meta.avals, meta.diff, ct_leaves, given
            )
        return pytree.tree_unflatten(meta.in_tree, flat)[0]

    def __repr__(self):
        return f"<vjp pullback of {self.meta.name}>"


pytree.register_pytree_node(
    VJP, lambda pb: (pb.residuals, pb.meta), lambda meta, residuals: VJP(meta, list(residuals))
)


def _primals_first(meta, jaxpr, residuals):
    """``(jaxpr, residuals)`` with the residuals that are primal inputs first, in the inputs'
    order, then the others in the program's: the order of JAX's ``VJP`` leaves."""
    rank = {i: k for k, i in enumerate(meta.input_ids)}
    last = len(rank)
    order = sorted(range(len(residuals)), key=lambda j: (rank.get(id(residuals[j]), last), j))
    if order == list(range(len(residuals))):
        return jaxpr, list(residuals)
    constvars = [jaxpr.constvars[j] for j in order]
    jaxpr = Jaxpr(constvars, jaxpr.invars, jaxpr.outvars, jaxpr.eqns)
    return jaxpr, [residuals[j] for j in order]


def fwd_and_bwd(fun, argnums, has_aux=False, jitted=True):
    """The forward and backward passes of ``fun`` as two functions, as ``jax.fwd_and_bwd``:
    ``fwd(*args)`` is ``vjp`` of ``fun`` in the ``argnums`` arguments, returning
    ``(out, residuals)`` (``(out, residuals, aux)`` with ``has_aux``); ``bwd(residuals,
    cotangent)`` the cotangents of those arguments (one, for an int ``argnums``). The
    residuals are the pullback, a pytree, so both may be jitted (the default) and ``bwd``
    compiles once for all the forward passes it serves."""
    int_argnums = isinstance(argnums, int)
    nums = (argnums,) if int_argnums else tuple(argnums)

    def fwd(*args):
        positions = [i % len(args) for i in nums]

        def partial(*diff_args):
            full = list(args)
            for i, a in zip(positions, diff_args, strict=True):
                full[i] = a
            return fun(*full)

        return vjp(partial, *[args[i] for i in positions], has_aux=has_aux)

    def bwd(residuals, cotangent):
        cts = residuals(cotangent)
        return cts[0] if int_argnums else cts

    if jitted:
        fwd, bwd = jit(fwd), jit(bwd)
    return fwd, bwd


def value_and_grad(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False):
    """A function returning ``fun``'s value and its gradient w.r.t. ``argnums``.

    ``fun`` must return a real scalar (a complex one with ``holomorphic=True``).
    """
    int_argnums = isinstance(argnums, int)
    nums = (argnums,) if int_argnums else tuple(argnums)
    name = fun_name(fun)

    @functools.wraps(fun)  # named as ``fun``, as JAX's (jit's and lowered modules' names)
    @api_boundary
    def value_and_grad_f(*args, **kwargs):
        if any(i >= len(args) or i < -len(args) for i in nums):
            raise TypeError(
                f"differentiating {name} with respect to argnums={argnums} "
                f"requires at least {max(nums) + 1} positional arguments, got "
                f"{len(args)}"
            )
        positions = [i % len(args) for i in nums]
        for i in positions:
            _check_grad_input(name, args[i], holomorphic, allow_int)

        def partial(*diff_args):
            full = list(args)
            for i, a in zip(positions, diff_args, strict=True):
                full[i] = a
            return fun(*full, **kwargs)

        # vjp's steps without its pullback closure and the checks of a user's cotangent: the
        # seed below has the output's structure and shape by construction.
        lin = _linearized_for_grad(partial, tuple(args[i] for i in positions), has_aux)
        out = lin.returned_primals()
        _check_grad_output(name, out, holomorphic)
        out_aval = core.get_aval(out)
        # The seed is weak where the output is, as JAX's; traced, typed as it (explicit
        # sharding mode), as JAX's.
        seed = _one(out_aval.dtype, out_aval.weak_type)
        if out_aval.sharding is not None and isinstance(out, core.Tracer):
            seed = reshard_p.bind(seed, sharding=out_aval.sharding)
        cts = lin.pullback_flat([seed])
        cts = pytree.tree_unflatten(lin.in_tree, cts)[0]
        grads = cts[0] if int_argnums else tuple(cts)
        value = (out, lin.store["aux"]) if has_aux else out
        return value, grads

    return value_and_grad_f


@functools.cache
def _one(dtype, weak_type=False):
    """The cotangent that seeds a gradient: made once per dtype (arrays are immutable)."""
    return from_host(np.ones((), dtype), weak_type) if weak_type else from_host(np.ones((), dtype))


def grad(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False):
    """The gradient of scalar-valued ``fun`` w.r.t. its ``argnums`` argument(s).

    Example:
      >>> xform.grad(lambda x: xform.numpy.sum(x ** 2))(xform.numpy.arange(3.0))  # [0, 2, 4]
    """
    vg = value_and_grad(fun, argnums, has_aux, holomorphic, allow_int)

    @functools.wraps(fun)
    @api_boundary
    def grad_f(*args, **kwargs):
        (value, grads) = vg(*args, **kwargs)
        return (grads, value[1]) if has_aux else grads

    return grad_f


_REAL = frozenset(d for d in dtypes.SUPPORTED if dtypes.is_float(d))


def _check_grad_input(name, arg, holomorphic, allow_int):
    for leaf in pytree.tree_leaves(arg):
        dtype = core.get_aval(leaf).dtype
        if dtype in _REAL and not holomorphic:  # the common case, by a set lookup
            continue
        # A complex input of a real-valued function is allowed, as in JAX: the gradient is
        # the cotangent of the input, df/dx - i df/dy for z = x + iy (JAX's convention).
        if not dtypes.is_inexact(dtype) and not allow_int:
            raise TypeError(
                f"grad of {name} requires real- or complex-valued inputs (input "
                f"dtype that is a sub-dtype of np.inexact), but got {dtype}. To "
                "differentiate with respect to integer or boolean inputs use vjp "
                "or set allow_int=True."
            )
        if holomorphic and not dtypes.is_complex(dtype):
            raise TypeError(
                f"grad of {name} with holomorphic=True requires complex inputs, got {dtype}"
            )


def _check_grad_output(name, out, holomorphic):
    if not isinstance(out, (Array, Tracer)) and not core.is_concrete_array(out):
        raise TypeError(
            f"grad of {name}: the function must return a scalar array, got {type(out).__name__}"
        )
    aval = core.get_aval(out)
    if aval.shape:
        raise TypeError(
            f"Gradient only defined for scalar-output functions. Output of {name} "
            f"had shape: {aval.shape}"
        )
    if aval.dtype in _REAL:
        return
    # JAX's words, with the function's name.
    needs = (
        "grad requires real-valued outputs (output dtype that is a sub-dtype of "
        f"np.floating), but got {aval.dtype.name}"
    )
    if dtypes.is_complex(aval.dtype) and not holomorphic:
        raise TypeError(
            f"{needs} (grad of {name}). For holomorphic differentiation, pass "
            "holomorphic=True. For differentiation of non-holomorphic functions "
            "involving complex outputs, use jax.vjp directly."
        )
    if not dtypes.is_inexact(aval.dtype):
        raise TypeError(
            f"{needs} (grad of {name}). For differentiation of functions with "
            "integer outputs, use jax.vjp directly."
        )


# --------------------------------------------------------------------------- linearize & co


@api_boundary
def linearize(fun, *primals, has_aux=False):
    """``fun``'s value at ``primals`` and its linear map ``f_jvp(*tangents)``, computed once.

    The primal computation runs now; ``f_jvp`` replays only the staged tangent program.
    """
    lin = _Linearized(fun, primals, has_aux, taped=False)  # f_jvp replays a jaxpr
    in_tree, out_tree, avals, diff = lin.in_tree, lin.out_tree, lin.avals, lin.diff
    nonzero, out_avals, store = lin.nonzero, lin.out_avals, lin.store
    primals_out = lin.primals_out
    # f_jvp runs the linear program forward on every call: drop the tangent equations that
    # reach no output once, and the residuals only they read. (vjp needs no such pass: its
    # backward pass transposes only the equations a cotangent reaches.)
    linear, _ = dce.dce_closed_jaxpr(lin.linear, [True] * len(lin.linear.jaxpr.outvars))

    meta = _PullbackMeta(
        fun_name(fun), linear.jaxpr, nonzero, avals, diff, in_tree, out_tree, out_avals
    )
    f_jvp = LinearizedJVP(meta, list(linear.consts))
    out = pytree.tree_unflatten(out_tree, primals_out)  # as JAX's: not made arrays
    return (out, f_jvp, store["aux"]) if has_aux else (out, f_jvp)


class LinearizedJVP:
    """The linear map ``linearize`` returns: ``f_jvp(*tangents)`` replays the staged tangent
    program. A pytree whose leaves are the residuals, as JAX's (a ``Partial``) is, so it can
    be passed through ``jit``."""

    __slots__ = ("meta", "residuals")

    def __init__(self, meta, residuals):
        self.meta = meta
        self.residuals = residuals

    @api_boundary
    def __call__(self, *tangents):
        meta = self.meta
        t_leaves, t_tree = pytree.tree_flatten((tangents, {}))
        if t_tree != meta.in_tree:
            raise TypeError(
                f"linearize of {meta.name}: tangents must have the structure "
                f"of the primals, {meta.in_tree}; got {t_tree}"
            )
        for i, (t, aval) in enumerate(zip(t_leaves, meta.avals, strict=True)):
            _check_tangent(f"tangent {i}", aval, t)
        inputs = [t for t, d in zip(t_leaves, meta.diff, strict=True) if d]
        outs = iter(core.eval_jaxpr(meta.jaxpr, self.residuals, *inputs))
        # A tangent passed through comes back as it was given, as JAX's.
        flat_out = [
            next(outs) if nz else _zero_tangent(ad.Zero(ad.tangent_aval(a)))
            for a, nz in zip(meta.out_avals, meta.nonzero, strict=True)
        ]
        return pytree.tree_unflatten(meta.out_tree, flat_out)

    def __repr__(self):
        return f"<linearized jvp of {self.meta.name}>"


pytree.register_pytree_node(
    LinearizedJVP,
    lambda f: (f.residuals, f.meta),
    lambda meta, residuals: LinearizedJVP(meta, list(residuals)),
)


def linear_transpose(fun, *primals):
    """The transpose of the linear function ``fun``, for arguments shaped like ``primals``.

    ``fun`` must be linear in its arguments; the result maps output cotangents to a tuple of
    input cotangents.
    """
    leaves, in_tree = pytree.tree_flatten((primals, {}))
    avals = arg_avals(leaves, in_tree, fun, abstractify)
    for aval in avals:
        if not dtypes.is_inexact(aval.dtype):
            raise TypeError(
                f"linear_transpose of {fun_name(fun)}: arguments must be float or "
                f"complex, got {aval.dtype}"
            )
    store = {}
    closed = trace_to_jaxpr(
        flatten_fun(fun, in_tree, store), avals, f"tracing `{fun_name(fun)}` for linear_transpose"
    )
    out_tree = store["out_tree"]

    @api_boundary
    def transposed(*cotangents):
        ct_leaves, ct_tree = pytree.tree_flatten(
            cotangents[0] if len(cotangents) == 1 else cotangents
        )
        if ct_tree != out_tree:
            raise TypeError(
                f"linear_transpose of {fun_name(fun)}: cotangent structure "
                f"{ct_tree} differs from the output's {out_tree}"
            )
        args = [transpose.UndefinedPrimal(a) for a in avals]
        cts = transpose.backward_pass(closed.jaxpr, closed.consts, args, ct_leaves)
        flat = [
            _zero_cotangent(a) if type(ct) is ad.Zero else _as_output(ct)
            for ct, a in zip(cts, avals, strict=True)
        ]
        return pytree.tree_unflatten(in_tree, flat)[0]

    return transposed
