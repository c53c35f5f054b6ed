"""Solves with implicit derivatives: ``custom_linear_solve`` and ``custom_root``.

``custom_linear_solve[const_lengths, matvec, vecmat, solve, transpose_solve] *consts *b``
returns ``solve(matvec, b)``: the result ``x`` (shaped like ``b``), then any auxiliary
outputs of ``solve``. Each of the four sub-jaxprs is a const-free ClosedJaxpr taking its own
consts (``const_lengths[i]`` leading operands, in the order matvec, vecmat, solve,
transpose_solve) and then a vector shaped like ``b``; ``vecmat`` (the transpose of
``matvec``) and ``transpose_solve`` are None when no transpose solve was given.

The derivatives never go through ``solve``: from ``A x = b``,
``x_dot = solve(b_dot - A_dot x)``, where ``A_dot x`` differentiates ``matvec`` in its
consts; transposing in ``b`` is a solve of the transposed system (``vecmat`` with
``transpose_solve``); the result is one more ``custom_linear_solve``, so every order works.
Partial evaluation has no rule of its own, as in JAX: an equation with an unknown operand
(the tangent solve of ``linearize``) is staged whole, with its known consts as residuals.

``custom_root`` is a ``custom_jvp_call`` (the primitive behind ``xform.custom_jvp``) whose
JVP rule is the implicit function theorem.
"""

import functools

from xform import pytree
from xform.core import (
    ClosedJaxpr,
    Jaxpr,
    Primitive,
    Tracer,
    Var,
    abstract_eval_rules,
    eager_rules,
    escaped_tracer_error,
    eval_jaxpr,
    eval_trace,
    get_aval,
    set_current_trace,
)
from xform.interpret import ad, batching, partial_eval, transpose
from xform.interpret.batching import not_mapped
from xform.interpret.staging import convert_constvars, trace_to_jaxpr
from xform.primitives.autodiff import custom_jvp_call_p
from xform.primitives.elementwise import convert_element_type_p, neg

__all__ = ["custom_linear_solve", "custom_root"]

_NAMES = ("matvec", "vecmat", "solve", "transpose_solve")


def custom_linear_solve(matvec, b, solve, transpose_solve=None, symmetric=False, has_aux=False):
    """``solve(matvec, b)``, differentiated implicitly through ``matvec x == b``.

    Derivatives do not go through ``solve`` (which may be an iterative method, a
    ``while_loop``, a kernel): the JVP solves again with ``b_dot - matvec_dot(x)``, and
    reverse mode solves the transposed system with ``transpose_solve``.

    Args:
      matvec: the linear map ``x -> A x`` (a pytree shaped like ``b`` in and out); it must
        be differentiable in what it closes over.
      b: the right-hand side, a pytree of arrays.
      solve: ``solve(matvec, b) -> x`` with ``matvec(x) == b`` (not checked); with
        ``has_aux``, ``(x, aux)``.
      transpose_solve: ``transpose_solve(vecmat, b) -> x`` for the transposed map
        ``vecmat`` (computed from ``matvec``); needed for reverse mode unless ``symmetric``.
      symmetric: ``matvec`` is its own transpose: ``transpose_solve`` defaults to ``solve``.
      has_aux: ``solve`` and ``transpose_solve`` return ``(x, aux)``; ``aux`` has zero
        derivatives.

    Returns:
      ``solve(matvec, b)``, with the structure ``solve`` returns.

    Example:
      >>> x = xform.lax.custom_linear_solve(lambda x: a @ x, b,
      ...                                   lambda mv, b: xform.numpy.linalg.solve(a, b),
      ...                                   symmetric=True)
    """
    if transpose_solve is None and symmetric:
        transpose_solve = solve
    b_leaves, tree = pytree.tree_flatten(b)
    b_avals = [get_aval(x) for x in b_leaves]
    matvec_jaxpr, matvec_consts, _ = _trace_vector_fun(matvec, "matvec", tree, b_avals, False)
    solve_jaxpr, solve_consts, out_tree = _trace_vector_fun(
        functools.partial(solve, matvec), "solve", tree, b_avals, has_aux
    )
    vecmat_jaxpr = transpose_solve_jaxpr = None
    vecmat_consts, transpose_solve_consts = [], []
    if transpose_solve is not None:
        if symmetric:
            vecmat, vecmat_jaxpr, vecmat_consts = matvec, matvec_jaxpr, matvec_consts
        else:
            vecmat_jaxpr, vecmat_consts = _transpose_matvec(matvec_jaxpr, matvec_consts, b_avals)
            vecmat = _as_tree_fun(vecmat_jaxpr, vecmat_consts, tree)
        transpose_solve_jaxpr, transpose_solve_consts, _ = _trace_vector_fun(
            functools.partial(transpose_solve, vecmat), "transpose_solve", tree, b_avals, has_aux
        )
    groups = (matvec_consts, vecmat_consts, solve_consts, transpose_solve_consts)
    outs = linear_solve_p.bind(
        *[c for g in groups for c in g],
        *b_leaves,
        const_lengths=tuple(len(g) for g in groups),
        matvec=matvec_jaxpr,
        vecmat=vecmat_jaxpr,
        solve=solve_jaxpr,
        transpose_solve=transpose_solve_jaxpr,
    )
    return pytree.tree_unflatten(out_tree, outs)


def _trace_vector_fun(fun, name, tree, b_avals, has_aux):
    """``fun`` (a pytree shaped like ``b`` in; that, or with ``has_aux`` a pair of it and
    aux, out) as ``(const-free jaxpr, consts, out tree)``, its outputs checked against b."""
    store = {}

    def flat_fun(*leaves):
        out = fun(pytree.tree_unflatten(tree, leaves))
        aux_leaves = []
        if has_aux:
            if not (isinstance(out, (tuple, list)) and len(out) == 2):
                raise ValueError(
                    f"{name}() produced a pytree with structure "
                    f"{pytree.tree_structure(out)}, but a pytree tuple with "
                    "auxiliary output was expected because has_aux was set to "
                    "True."
                )
            out, aux = out
            aux_leaves = pytree.tree_leaves(aux)
        out_leaves, out_tree = pytree.tree_flatten(out)
        out_avals = [get_aval(x) for x in out_leaves]
        got, want = [a.shape for a in out_avals], [a.shape for a in b_avals]
        if got != want:
            raise ValueError(f"{name}() output shapes must match b, got {got} and {want}")
        if out_tree != tree:
            raise TypeError(
                f"{name}() output pytree structure must match b, got {out_tree} and {tree}."
            )
        got, want = [a.dtype for a in out_avals], [a.dtype for a in b_avals]
        if got != want:
            raise TypeError(
                f"{name}() output dtypes must match b, got {[str(d) for d in got]} "
                f"and {[str(d) for d in want]}"
            )
        store["tree"] = pytree.tree_structure((out, aux)) if has_aux else out_tree
        return out_leaves + aux_leaves

    closed = trace_to_jaxpr(flat_fun, b_avals, f"tracing `{name}` of custom_linear_solve")
    jaxpr, consts = convert_constvars(closed)
    return jaxpr, consts, store["tree"]


def _transpose_matvec(matvec_jaxpr, matvec_consts, b_avals):
    """The transpose of ``matvec`` (linear in its vector operands), as (jaxpr, consts)."""
    n_consts = len(matvec_consts)

    def vecmat(*cts):
        invals = [*matvec_consts, *[transpose.UndefinedPrimal(a) for a in b_avals]]
        cts_in = transpose.backward_pass(matvec_jaxpr.jaxpr, matvec_jaxpr.consts, invals, list(cts))
        return [ad.instantiate(ct) for ct in cts_in[n_consts:]]

    closed = trace_to_jaxpr(vecmat, b_avals, "transposing `matvec` of custom_linear_solve")
    return convert_constvars(closed)


def _as_tree_fun(jaxpr, consts, tree):
    def fun(x):
        return pytree.tree_unflatten(tree, _run(jaxpr, *consts, *pytree.tree_leaves(x)))

    return fun


def _run(closed, *args):
    return eval_jaxpr(closed.jaxpr, closed.consts, *args)


# --------------------------------------------------------------------------- custom_root


def custom_root(f, initial_guess, solve, tangent_solve, has_aux=False):
    """A root of ``f`` found by ``solve(f, initial_guess)``, differentiated implicitly.

    Derivatives with respect to what ``f`` closes over come from the implicit function
    theorem at the root ``x*``: ``x*_dot = -tangent_solve(g, f_dot(x*))``, where ``g`` is
    ``f`` linearized at ``x*``; ``solve`` itself is never differentiated.

    Args:
      f: the function whose root is sought; it maps a pytree shaped like
        ``initial_guess`` to one of the same structure.
      initial_guess: where ``solve`` starts.
      solve: ``solve(f, initial_guess) -> x`` with ``f(x) == 0`` (not checked); with
        ``has_aux``, ``(x, aux)``.
      tangent_solve: ``tangent_solve(g, y) -> x`` with ``g(x) == y`` for the linear map
        ``g``; for a scalar, ``lambda g, y: y / g(1.0)``.
      has_aux: ``solve`` returns ``(x, aux)``; ``aux`` has zero derivatives.

    Returns:
      ``solve(f, initial_guess)``.

    Example:
      >>> sqrt_a = xform.lax.custom_root(lambda x: x ** 2 - a, 1.0, newton,
      ...                                lambda g, y: y / g(1.0))
    """
    guess_leaves, tree = pytree.tree_flatten(initial_guess)
    avals = [get_aval(x) for x in guess_leaves]
    f_jaxpr, f_consts, f_tree = _trace_tree_fun(f, tree, avals, "f")
    if f_tree != tree:
        raise TypeError(
            f"f() output pytree structure must match initial_guess, got {f_tree} and {tree}."
        )
    solve_jaxpr, solve_consts, out_tree = _trace_tree_fun(
        functools.partial(solve, f), tree, avals, "solve"
    )
    solution_tree = out_tree
    if has_aux:
        children = out_tree.children()
        if len(children) != 2:
            raise ValueError(
                f"solve() produced a pytree with structure {out_tree}, but a "
                "pytree tuple with auxiliary output was expected because "
                "has_aux was set to True."
            )
        solution_tree = children[0]
    if solution_tree != tree:
        raise TypeError(
            f"solve() output pytree structure must match initial_guess, got "
            f"{solution_tree} and {tree}."
        )
    n = len(guess_leaves)
    store = {}

    def linearize_and_solve(*args):
        x, y = args[:n], args[n:]
        g = _linearized(f, tree, list(x))
        out = tangent_solve(g, pytree.tree_unflatten(tree, y))
        out_leaves, store["tree"] = pytree.tree_flatten(out)
        return out_leaves

    closed = trace_to_jaxpr(
        linearize_and_solve, avals + avals, "tracing `tangent_solve` of custom_root"
    )
    if store["tree"] != tree:
        raise TypeError(
            f"tangent_solve() output pytree structure must match x, got {store['tree']} and {tree}."
        )
    ls_jaxpr, ls_consts = convert_constvars(closed)

    # The call runs solve on every operand (f's and tangent_solve's consts unread), so its
    # JVP rule sees the tangents of what f closes over.
    lengths = (len(f_consts), len(solve_consts), len(ls_consts))
    operands = [*f_consts, *solve_consts, *ls_consts, *guess_leaves]
    body = solve_jaxpr.jaxpr
    unread = [Var(get_aval(c)) for c in f_consts], [Var(get_aval(c)) for c in ls_consts]
    call_jaxpr = ClosedJaxpr(
        Jaxpr(
            [],
            [*unread[0], *body.invars[: lengths[1]], *unread[1], *body.invars[lengths[1] :]],
            body.outvars,
            body.eqns,
        ),
        [],
    )

    def bind(args):
        return custom_jvp_call_p.bind(
            *args,
            call_jaxpr=call_jaxpr,
            jvp=root_jvp,
            num_consts=0,
            name="_custom_root",
            symbolic_zeros=False,
        )

    def root_jvp(primals, tangents):
        f_args, _, ls_args, _ = _split(primals, lengths)
        f_dots = _split(tangents, lengths)[0]
        outs = bind(primals)
        solution, aux = outs[:n], outs[n:]
        _, rhs = ad.jvp_flat(lambda *c: _run(f_jaxpr, *c, *solution), f_args, f_dots)
        solution_dot = _run(ls_jaxpr, *ls_args, *solution, *[ad.instantiate(t) for t in rhs])
        aux_dot = [ad.Zero(ad.tangent_aval(ad.aval_of(a))) for a in aux]
        return outs, [neg(t) for t in solution_dot] + aux_dot

    root_jvp.__name__ = "_root_jvp"  # the jvp= param prints as JAX's
    return pytree.tree_unflatten(out_tree, bind(operands))


def _trace_tree_fun(fun, tree, avals, name):
    """``fun`` on a pytree of ``tree``: (const-free jaxpr, consts, output tree)."""
    store = {}

    def flat_fun(*leaves):
        out_leaves, store["tree"] = pytree.tree_flatten(fun(pytree.tree_unflatten(tree, leaves)))
        return out_leaves

    closed = trace_to_jaxpr(flat_fun, avals, f"tracing `{name}` of custom_root")
    jaxpr, consts = convert_constvars(closed)
    return jaxpr, consts, store["tree"]


def _linearized(f, tree, x):
    """``f`` linearized at ``x`` (flat), as a function of a pytree tangent: its primal part
    is computed once, here; each call replays only the staged tangent program."""
    out_tree = {}

    def tangents_of(*tangents):
        def flat_f(*leaves):
            out_leaves, out_tree["tree"] = pytree.tree_flatten(
                f(pytree.tree_unflatten(tree, leaves))
            )
            return out_leaves

        _, tangents_out = ad.jvp_flat(flat_f, x, list(tangents))
        return [ad.instantiate(t) for t in tangents_out]

    tangent_avals = [ad.tangent_aval(ad.aval_of(p)) for p in x]
    _, linear = partial_eval.partial_eval_flat(
        tangents_of, [], tangent_avals, "linearizing `f` of custom_root"
    )

    def g(t):
        leaves = pytree.tree_leaves(t)
        return pytree.tree_unflatten(out_tree["tree"], _run(linear, *leaves))

    return g


def _split(args, lengths):
    """``args`` cut into ``len(lengths)`` groups of those lengths, then the rest."""
    groups, i = [], 0
    for k in lengths:
        groups.append(list(args[i : i + k]))
        i += k
    return [*groups, list(args[i:])]


# --------------------------------------------------------------------------- the primitive

linear_solve_p = Primitive("custom_linear_solve", multiple_results=True)


def _same_types(avals_a, avals_b):
    return len(avals_a) == len(avals_b) and all(
        a.shape == b.shape and a.dtype == b.dtype for a, b in zip(avals_a, avals_b, strict=True)
    )


def _types(avals):
    return "(" + ", ".join(a.str_short() for a in avals) + ")"


def _linear_solve_abstract_eval(*avals, const_lengths, matvec, vecmat, solve, transpose_solve):
    *groups, b = _split(avals, const_lengths)
    for name, jaxpr, consts in zip(
        _NAMES, (matvec, vecmat, solve, transpose_solve), groups, strict=True
    ):
        if jaxpr is None:
            if consts:
                raise TypeError(
                    f"custom_linear_solve: {len(consts)} operands for {name}, which is None"
                )
            continue
        if not _same_types(jaxpr.in_avals, consts + b):
            raise TypeError(
                f"custom_linear_solve: {name} takes {_types(jaxpr.in_avals)} but "
                f"its operands (consts, then b) have types {_types(consts + b)}"
            )
        if not _same_types(jaxpr.out_avals[: len(b)], b):
            raise TypeError(
                f"custom_linear_solve: {name} returns "
                f"{_types(jaxpr.out_avals)}, which does not start with b's types "
                f"{_types(b)}"
            )
    # As in JAX: x has b's types (weak types included), then solve's auxiliary outputs.
    return b + solve.out_avals[len(b) :]


abstract_eval_rules[linear_solve_p] = _linear_solve_abstract_eval


# --------------------------------------------------------------------------- eager


def _linear_solve_eager(*args, const_lengths, matvec, vecmat, solve, transpose_solve):
    # Only the solve runs, its equations evaluated one by one: an eager custom_linear_solve
    # traces fresh jaxprs per call, so compiling them would cost a compile per call.
    for x in args:
        if isinstance(x, Tracer):
            raise escaped_tracer_error(x, "custom_linear_solve")
    out_avals = _linear_solve_abstract_eval(
        *[get_aval(x) for x in args],
        const_lengths=const_lengths,
        matvec=matvec,
        vecmat=vecmat,
        solve=solve,
        transpose_solve=transpose_solve,
    )
    _, _, solve_consts, _, b = _split(args, const_lengths)
    with set_current_trace(eval_trace):
        outs = _run(solve, *solve_consts, *b)
        return [_as_result(x, a) for x, a in zip(outs, out_avals, strict=True)]


def _as_result(x, aval):
    """``x`` as an xform array of type ``aval``: solve may return b itself (a NumPy value, a
    Python scalar) or a value whose weak type differs from b's."""
    if getattr(x, "aval", None) == aval:
        return x
    return convert_element_type_p.bind(x, new_dtype=aval.dtype, weak_type=aval.weak_type)


eager_rules[linear_solve_p] = _linear_solve_eager


# --------------------------------------------------------------------------- jvp


def _linear_solve_jvp(primals, tangents, **params):
    # A x = b, so A_dot x + A x_dot = b_dot: x_dot solves A x_dot = b_dot - A_dot x.
    const_lengths = params["const_lengths"]
    outs = linear_solve_p.bind(*primals, **params)
    *groups, b = _split(primals, const_lengths)
    *group_dots, b_dots = _split(tangents, const_lengths)
    n = len(b)
    rhs = list(b_dots)
    if any(type(t) is not ad.Zero for t in group_dots[0]):
        x = outs[:n]
        zeros = [ad.Zero(ad.tangent_aval(ad.aval_of(v))) for v in x]
        _, matvec_dots = ad.jvp_flat(
            lambda *a: _run(params["matvec"], *a), groups[0] + x, group_dots[0] + zeros
        )
        rhs = [
            ad.add_tangents(r, t if type(t) is ad.Zero else neg(t))
            for r, t in zip(rhs, matvec_dots, strict=True)
        ]
    diff = [ad.is_differentiable(a) for a in map(ad.aval_of, b)]
    tangents_out = [ad.Zero(ad.tangent_aval(ad.aval_of(o))) for o in outs]
    if any(type(t) is not ad.Zero and d for t, d in zip(rhs, diff, strict=True)):
        # Integer leaves of b have no tangent: they are solved for with zeros of their type.
        rhs = [
            ad.instantiate(t) if d else ad.tangent_ops["zeros"](ad.aval_of(v).strip_weak_type())
            for t, v, d in zip(rhs, b, diff, strict=True)
        ]
        consts = [c for g in groups for c in g]
        x_dots = linear_solve_p.bind(*consts, *rhs, **params)[:n]
        tangents_out[:n] = [
            t if d else z for t, d, z in zip(x_dots, diff, tangents_out, strict=False)
        ]
    return outs, tangents_out


ad.jvp_rules[linear_solve_p] = _linear_solve_jvp


# --------------------------------------------------------------------------- transpose


def _linear_solve_transpose(cts, *args, const_lengths, matvec, vecmat, solve, transpose_solve):
    if transpose_solve is None:
        raise TypeError(
            "transpose_solve required for backwards mode automatic "
            "differentiation of custom_linear_solve"
        )
    *groups, b = _split(args, const_lengths)
    if any(transpose.is_undefined(c) for g in groups for c in g):
        raise NotImplementedError(
            "custom_linear_solve: cannot transpose with respect to "
            "what matvec or the solves close over, only with respect "
            "to b (as in JAX)"
        )
    n = len(b)
    if any(type(ct) is not ad.Zero for ct in cts[n:]):
        raise NotImplementedError(
            "custom_linear_solve: cannot transpose with a nonzero "
            "cotangent for the auxiliary outputs (as in JAX)"
        )
    # The transposed system: vecmat for matvec, transpose_solve for solve, and back.
    m, v, s, t = groups
    cts_b = linear_solve_p.bind(
        *v,
        *m,
        *t,
        *s,
        *[ad.instantiate(ct) for ct in cts[:n]],
        const_lengths=(const_lengths[1], const_lengths[0], const_lengths[3], const_lengths[2]),
        matvec=vecmat,
        vecmat=matvec,
        solve=transpose_solve,
        transpose_solve=solve,
    )
    return [None] * sum(const_lengths) + [
        ct if transpose.is_undefined(x) else None for ct, x in zip(cts_b, b, strict=False)
    ]


transpose.transpose_rules[linear_solve_p] = _linear_solve_transpose


# --------------------------------------------------------------------------- batching


def _linear_solve_batch(axis, args, dims, *, const_lengths, **jaxprs):
    *groups, b = _split(args, const_lengths)
    *group_dims, b_dims = _split(dims, const_lengths)
    n = len(b)
    subs = [jaxprs[name] for name in _NAMES]

    def batch(k, vector_batched):
        """Sub-jaxpr ``k`` batched on its consts' dims and, at 0, the batched vector leaves;
        those leaves come out batched at 0 (the others as they come)."""
        sub = subs[k]
        in_dims = tuple(group_dims[k]) + tuple(0 if v else not_mapped for v in vector_batched)
        force = tuple(vector_batched) + (False,) * (len(sub.out_avals) - n)
        return batching.batch_jaxpr(sub, axis, in_dims, force)

    # All four maps act on one vector space, so they must agree on which vector leaves are
    # batched: grow the set from b's until no map batches another one (at most n rounds).
    vector_batched = [d is not not_mapped for d in b_dims]
    while True:
        grown = list(vector_batched)
        for k, sub in enumerate(subs):
            if sub is not None:
                out_batched = batch(k, vector_batched)[2]
                grown = [g or o for g, o in zip(grown, out_batched, strict=False)]
        if grown == vector_batched:
            break
        vector_batched = grown

    new_jaxprs, new_groups, out_batched = {}, [], None
    for k, (name, sub) in enumerate(zip(_NAMES, subs, strict=True)):
        if sub is None:
            new_jaxprs[name] = None
            new_groups.append([])
            continue
        jaxpr, consts, batched = batch(k, vector_batched)
        new_jaxprs[name] = jaxpr
        new_groups.append([*consts, *groups[k]])
        if name == "solve":
            out_batched = batched
    new_b = [
        batching.batch_at_front(x, d, axis.size) if v else x
        for x, d, v in zip(b, b_dims, vector_batched, strict=True)
    ]
    outs = linear_solve_p.bind(
        *[c for g in new_groups for c in g],
        *new_b,
        const_lengths=tuple(len(g) for g in new_groups),
        **new_jaxprs,
    )
    return outs, [0 if o else not_mapped for o in out_batched]


batching.batch_rules[linear_solve_p] = _linear_solve_batch
