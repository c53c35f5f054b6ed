"""Conditionals: ``cond`` and ``switch``, both the primitive ``cond``.

``cond[branches=(b0, b1, ...)] index *operands`` runs ``branches[index]`` on the operands.
Each branch is a const-free ClosedJaxpr taking the same operands; values a branch closed
over become leading operands, shared by every branch (a branch ignores the others'). The
index is an int32 scalar: ``cond`` turns its predicate into 0 (false) or 1 (true), ``switch``
clamps its index into range. Both branches are traced once, whichever one runs.

Each transformation rewrites the branches once per (branches, what is known about the
operands) and caches the result, as the ``jit`` call primitive does with its body.
"""

import weakref

import numpy as np

from xform import config, core, dtypes, pytree
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
from xform.interpret import ad, batching, dce, partial_eval, transpose
from xform.interpret.staging import convert_constvars, trace_to_jaxpr
from xform.primitives import refs
from xform.primitives.autodiff import stop_gradient
from xform.primitives.comparisons import eq, ne, select_n
from xform.primitives.elementwise import clamp, convert_element_type, convert_element_type_p
from xform.primitives.structural import broadcast_in_dim
from xform.primitives.while_loop import asarray
from xform.traceback_util import api_boundary, fun_sourceinfo

# ``cond_p`` is listed here, not found by xform.lax's loop over family modules: the module
# ``cond`` would be shadowed there by the function ``cond``.
__all__ = ["cond", "cond_p", "switch"]

_NO_OPERAND = object()


@api_boundary
def cond(pred, true_fun, false_fun, *operands, operand=_NO_OPERAND):
    """``true_fun(*operands)`` if ``pred`` else ``false_fun(*operands)``, as one primitive.

    Both functions are traced (with abstract operands) and must return pytrees of the same
    structure and types; only the chosen one runs. Under ``vmap`` with a batched ``pred``
    both run and the results are selected per example, as in JAX.

    Args:
      pred: a scalar boolean (or number: nonzero is true).
      true_fun, false_fun: functions of ``*operands``. The legacy form
        ``cond(pred, true_operand, true_fun, false_operand, false_fun)`` is accepted too.
      operands: pytrees of arrays passed to the chosen function.

    Returns:
      The chosen function's result.

    Example:
      >>> xform.lax.cond(x > 0, lambda x: x * 2.0, lambda x: -x, x)
    """
    if not (callable(true_fun) and callable(false_fun)):
        if callable(false_fun) and len(operands) == 2 and callable(operands[1]):
            x_true, f_true, x_false, f_false = true_fun, false_fun, *operands
            return cond(pred, lambda x, _: f_true(x), lambda _, x: f_false(x), x_true, x_false)
        raise TypeError("lax.cond: true_fun and false_fun arguments should be callable.")
    operands = _operand_keyword("cond", operands, operand)
    if pred is None:
        raise TypeError("cond predicate is None")
    if isinstance(pred, (list, tuple)) or np.ndim(pred) != 0:
        raise TypeError(f"Pred must be a scalar, got {pred!r} of shape {np.shape(pred)}.")
    try:
        pred_dtype = get_aval(pred).dtype
    except TypeError as e:
        raise TypeError(f"Pred type must be either boolean or number, got {pred!r}.") from e
    if pred_dtype != dtypes.bool_ and pred_dtype.kind not in "iuf":
        raise TypeError(f"Pred type must be either boolean or number, got {pred_dtype}.")
    if config.values.disable_jit and not isinstance(pred, Tracer):
        return true_fun(*operands) if pred else false_fun(*operands)  # Python, as JAX's
    if pred_dtype != dtypes.bool_:
        pred = ne(pred, np.zeros((), pred_dtype))
    index = convert_element_type(pred, np.int32)
    return _bind_branches("cond", index, (false_fun, true_fun), ("false_fun", "true_fun"), operands)


@api_boundary
def switch(index, branches, *operands, operand=_NO_OPERAND):
    """``branches[index](*operands)``, with ``index`` clamped to ``[0, len(branches) - 1]``.

    Every branch is traced and must return the same structure and types; only the chosen one
    runs (under ``vmap`` with a batched index, all run and the results are selected).

    Example:
      >>> xform.lax.switch(i, [lambda x: x, lambda x: x ** 2, jnp.sin], x)
    """
    operands = _operand_keyword("switch", operands, operand)
    if np.ndim(index) != 0:
        raise TypeError(f"Branch index must be scalar, got {index!r} of shape {np.shape(index)}.")
    try:
        aval = get_aval(index)
    except TypeError as e:
        raise TypeError(f"Index type must be an integer, got {index!r}.") from e
    if aval.dtype.kind not in "iu":
        raise TypeError(
            f"switch index must be a scalar integer, such as i32[], got {aval.str_short()}"
        )
    branches = tuple(branches)
    if not branches:
        raise ValueError("Empty branch sequence")
    if len(branches) == 1:
        return branches[0](*operands)
    index = convert_element_type(index, np.int32)
    index = clamp(np.int32(0), index, np.int32(len(branches) - 1))
    if config.values.disable_jit and not isinstance(index, Tracer):
        return branches[int(index)](*operands)  # Python, as JAX's
    names = tuple(f"branches[{i}]" for i in range(len(branches)))
    return _bind_branches("switch", index, branches, names, operands)


def _operand_keyword(construct, operands, operand):
    if operand is _NO_OPERAND:
        return operands
    if operands:
        raise TypeError(
            f"{construct}: if 'operand' keyword is passed then no positional "
            f"operands can be passed, got operand={operand!r} and positional "
            f"operands {operands!r}"
        )
    return (operand,)


def _bind_branches(construct, index, funs, names, operands):
    """Trace each branch on the flattened operands, check they agree, bind ``cond_p``."""
    leaves, in_tree = pytree.tree_flatten(operands)
    fun = funs[-1] if construct == "cond" else funs[0]  # the one JAX's errors name
    arg_names = lambda: refs.arg_names(fun, operands)  # noqa: E731
    refs.check_aliases((), leaves, fun, construct, arg_names)
    avals = [get_aval(x) for x in leaves]
    traced, trees = [], []
    for fun, name in zip(funs, names, strict=True):
        store = {}

        def flat_fun(*xs, fun=fun, store=store):
            out = fun(*pytree.tree_unflatten(in_tree, xs))
            out_leaves, store["tree"] = pytree.tree_flatten(out)
            return out_leaves

        traced.append(trace_to_jaxpr(flat_fun, avals, f"tracing `{name}` of {construct}"))
        trees.append(store["tree"])
    order = _report_order(len(funs)) if construct == "cond" else range(len(funs))
    for i in order[1:]:
        j = order[0]
        outs_i, outs_j = traced[i].out_avals, traced[j].out_avals
        _check_branch_outputs(
            construct,
            (funs[j], trees[j], outs_j, "true_fun" if construct == "cond" else "branch 0"),
            (funs[i], trees[i], outs_i, "false_fun" if construct == "cond" else f"branch{i}"),
        )
        if any(a.vma != b.vma for a, b in zip(outs_j, outs_i, strict=True)):
            raise _vma_mismatch(construct, names[j], names[i], outs_j, outs_i)
    branches, consts = _join_consts([convert_constvars(c) for c in traced])
    if any(refs.has_refs(b.jaxpr) for b in branches):
        refs.check_aliases(consts, leaves, fun, construct, arg_names)
        paths = lambda: refs.out_paths(trees[0])  # noqa: E731
        for b, f in zip(branches, funs, strict=True):
            refs.check_returned(b.jaxpr, f, construct, len(consts), arg_names, paths)
        return _bind_with_refs(construct, index, names, branches, [*consts, *leaves], trees[0])
    args = [*consts, *leaves]
    fwd = _forwarded(branches)
    if any(k is not None for k in fwd):
        branches = tuple(
            ClosedJaxpr(
                Jaxpr(
                    [],
                    b.jaxpr.invars,
                    [v for v, k in zip(b.jaxpr.outvars, fwd, strict=True) if k is None],
                    b.jaxpr.eqns,
                ),
                [],
            )
            for b in branches
        )
    outs = iter(cond_p.bind(index, *args, branches=branches))
    outs = [next(outs) if k is None else asarray(args[k]) for k in fwd]  # (as JAX)
    return pytree.tree_unflatten(trees[0], outs)


def _bind_with_refs(construct, index, names, branches, args, out_tree):
    """Branches that use references (closed over by any of them, or among the operands) as
    branches of their values: each runs its traced jaxpr with the references discharged
    (refs.py) and returns their final values too, which are then written back."""
    ref_args = [x for x in args if refs.is_ref(x)]
    funs = [lambda *xs, b=b: refs.run_discharged(b.jaxpr, xs) for b in branches]
    outs = _bind_branches(construct, index, funs, names, tuple(refs.read_refs(args)))
    n = len(outs) - len(ref_args)
    refs.write_refs(ref_args, outs[n:])
    return pytree.tree_unflatten(out_tree, outs[:n])


def _forwarded(branches):
    """Per output, the operand every branch returns unchanged as it (or None). As in JAX,
    the cond hands such an operand on itself: ``vmap`` then leaves it unbatched when it is,
    and the value is the very object passed in."""
    fwd = None
    for b in branches:
        pos = {id(v): k for k, v in enumerate(b.jaxpr.invars)}
        mine = [pos.get(id(v)) if isinstance(v, Var) else None for v in b.jaxpr.outvars]
        fwd = (
            mine if fwd is None else [a if a == m else None for a, m in zip(fwd, mine, strict=True)]
        )
    return fwd


def _check_branch_outputs(construct, first, second):
    """JAX's TypeError for two branches (each ``(fun, out_tree, out_avals, name)``) whose
    outputs differ in structure or in types (shape, dtype), naming both functions with their
    file and line. JAX names a switch's branches ``branch 0`` and ``branch1``, ``branch2``, ..."""
    (f1, tree1, avals1, name1), (f2, tree2, avals2, name2) = first, second
    paths = [p for p, _ in pytree.tree_flatten_with_path(pytree.tree_unflatten(tree1, avals1))[0]]

    def at(path):
        return f" at path {pytree.keystr(path)}" if path else ""

    def complain(what, differences, revise, listed):
        return TypeError(
            f"{construct} {what}\n\n{name1} is {fun_sourceinfo(f1)}\n"
            f"{name2} is {fun_sourceinfo(f2)}\n\n{listed}\nRevise {name1} and/or {name2} "
            f"so that {revise}."
        )

    if tree1 != tree2:
        differences = [
            f"{name1} output{at(p)} is a {thing1} but {name2} output{at(p)} is a {thing2}, so {why}"
            for p, thing1, thing2, why in pytree.equality_errors(tree1, tree2)
        ]
        if not differences:  # equal structures whose nodes' aux data differ
            return
        if len(differences) == 1:
            listed = f"{differences[0]}.\n"
        else:  # (JAX's layout: a blank line between the items)
            listed = "\n".join(f"  * {d};\n" for d in differences[:-1])
            listed += f"  * {differences[-1]}.\n"
        raise complain(
            "branch outputs must have the same pytree structure, but they differ:",
            differences,
            "they have the same pytree structure",
            listed,
        )
    differences = []
    for p, a1, a2 in zip(paths, avals1, avals2, strict=True):
        mismatches = [
            f"the {what} do not match"
            for what, differ in (("dtypes", a1.dtype != a2.dtype), ("shapes", a1.shape != a2.shape))
            if differ
        ]
        if mismatches:
            differences.append(
                f"the output of {name1}{at(p)} has type {a1.str_short(False)} but the "
                f"corresponding output of {name2} has type {a2.str_short(False)}, so "
                + ", and ".join(mismatches)
            )
    if len(differences) == 1:
        listed = f"{differences[0][0].upper()}{differences[0][1:]}.\n"
    elif differences:
        listed = "\n".join(f"  * {d};" for d in differences[:-1])
        listed += f"\n  * {differences[-1]}.\n"
    else:
        return
    raise complain(
        "branches must have equal output types but they differ.",
        differences,
        "all output types match",
        listed,
    )


def _report_order(n):
    """Branches in the order errors name them: true_fun before false_fun, as users write
    ``cond``; branch 0 first otherwise."""
    return [1, 0] if n == 2 else list(range(n))


def _vma_mismatch(construct, name_a, name_b, outs_a, outs_b):
    """As JAX's: branch results that vary over different manual axes of a shard_map body
    (check_vma=True) are a TypeError, which names the outputs and the cast that fixes them."""
    diffs, fixes = [], []
    for k, (a, b) in enumerate(zip(outs_a, outs_b, strict=True)):
        if a.vma == b.vma:
            continue
        diffs.append(
            f"the output {k} of {name_a} has type {a.str_short(False)} but the "
            f"corresponding output of {name_b} has type {b.str_short(False)}, so the "
            "manual axis types do not match"
        )
        for name, missing in ((name_a, b.vma - a.vma), (name_b, a.vma - b.vma)):
            if missing:
                fixes.append(
                    f"applying `xform.lax.pcast(..., {core.vma_order(missing)}, "
                    f"to='varying')` to the output {k} of {name}"
                )
    return TypeError(
        f"{construct} branches must have equal output types but they differ: "
        + "; ".join(diffs)
        + ". This might be fixed by "
        + "; ".join(fixes)
        + f". Revise {name_a} and/or {name_b} so that all output types match."
    )


def _same_types(avals_a, avals_b):
    return len(avals_a) == len(avals_b) and all(
        a.shape == b.shape and a.dtype == b.dtype for a, b in zip(avals_a, avals_b, strict=True)
    )


def _types_str(tree):
    """A pytree of avals written with short types: ``(f32[3], {'a': i32[]})``."""
    return str(pytree.tree_map(lambda a: _Short(a.str_short()), tree))


class _Short(str):
    __slots__ = ()

    def __repr__(self):
        return str(self)


def _join_consts(pairs):
    """Branches that each take their own consts as leading operands -> branches that all
    take every branch's consts (each reading only its own), then the shared operands.

    ``pairs`` holds ``(const-free ClosedJaxpr, consts)`` as ``convert_constvars`` returns them.
    The same object closed over by several branches is passed once. Returns ``(branches,
    consts)``; the jaxprs are rewritten, not retraced.
    """
    consts, slot_of = [], {}
    slots = []  # per branch: the slot of each of its consts
    for _, cs in pairs:
        mine, used = [], set()
        for c in cs:
            s = slot_of.get(id(c))
            if s is None or s in used:
                s = len(consts)
                consts.append(c)
                slot_of.setdefault(id(c), s)
            used.add(s)
            mine.append(s)
        slots.append(mine)
    branches = []
    for (closed, cs), mine in zip(pairs, slots, strict=True):
        jaxpr = closed.jaxpr
        const_vars = jaxpr.invars[: len(cs)]
        by_slot = dict(zip(mine, const_vars, strict=True))
        invars = [by_slot[s] if s in by_slot else Var(ad.aval_of(c)) for s, c in enumerate(consts)]
        new = Jaxpr([], invars + jaxpr.invars[len(cs) :], jaxpr.outvars, jaxpr.eqns)
        branches.append(ClosedJaxpr(new, []))
    return tuple(branches), consts


# Transformed branches, cached per branches and per what is known about the operands:
# first branch's jaxpr -> {(kind, the other branches' jaxprs, key): result}. The results are
# new jaxprs and never hold the key itself, so the entries go when the branches do.
_transformed = weakref.WeakKeyDictionary()


def _cached(branches, kind, key, make):
    per = _transformed.setdefault(branches[0].jaxpr, {})
    k = (kind, tuple(b.jaxpr for b in branches[1:]), key)
    hit = per.get(k)
    if hit is None:
        hit = per[k] = make()
    return hit


# --------------------------------------------------------------------------- the primitive

cond_p = Primitive("cond", multiple_results=True)


def _restore_weak_types(outs, avals):
    """``outs`` with the weak types of ``avals`` (the cond's result types): replaying a
    branch reads its literals as NumPy values, which are not weakly typed."""
    return [
        convert_element_type_p.bind(x, new_dtype=ad.aval_of(x).dtype, weak_type=True)
        if a.weak_type and not ad.aval_of(x).weak_type
        else x
        for x, a in zip(outs, avals, strict=True)
    ]


def _branch_name(i, n):
    if n == 2:
        return ("false_fun", "true_fun")[i]
    return f"branches[{i}]"


def _cond_abstract_eval(index, *avals, branches):
    if index.shape != () or index.dtype != np.dtype(np.int32):
        raise TypeError(
            f"cond: the branch index must be a scalar int32, i32[], got {index.str_short()}"
        )
    if not branches:
        raise TypeError("cond: needs at least one branch")
    n = len(branches)
    for i, b in enumerate(branches):
        if not _same_types(b.in_avals, avals):
            got = ", ".join(a.str_short() for a in avals)
            want = ", ".join(a.str_short() for a in b.in_avals)
            raise TypeError(
                f"cond: {_branch_name(i, n)} takes ({want}) but the operands have types ({got})"
            )
    order = _report_order(n)
    first = branches[order[0]].out_avals
    for i in order[1:]:
        outs = branches[i].out_avals
        if not _same_types(outs, first):
            t0 = ", ".join(a.str_short() for a in first)
            t1 = ", ".join(a.str_short() for a in outs)
            raise TypeError(
                f"cond branches must have equal output types: "
                f"{_branch_name(order[0], n)} output ({t0}) and "
                f"{_branch_name(i, n)} output ({t1})"
            )
    # As in JAX, the result types (weak types included) are those of branch 0.
    return branches[0].out_avals


abstract_eval_rules[cond_p] = _cond_abstract_eval


# --------------------------------------------------------------------------- eager


def _cond_eager(index, *operands, branches):
    # Python picks the branch and evaluates its equations eagerly: only the chosen branch
    # runs, and nothing is compiled. Compiling the whole cond instead would cost an XLA
    # compile per call, since every eager cond traces fresh branches; jit is the way to run
    # a compiled cond.
    if isinstance(index, Tracer):
        raise escaped_tracer_error(index, "cond")
    i = min(max(int(np.asarray(index)), 0), len(branches) - 1)
    with set_current_trace(eval_trace):
        outs = eval_jaxpr(branches[i].jaxpr, branches[i].consts, *operands)
        return [_as_result(x, a) for x, a in zip(outs, branches[0].out_avals, strict=True)]


def _as_result(x, aval):
    """``x`` as an xform array of type ``aval``: a branch may return an operand (a NumPy
    value, a Python scalar) or a value whose weak type differs from branch 0's."""
    if getattr(x, "aval", None) == aval:
        return x
    return convert_element_type_p.bind(x, new_dtype=aval.dtype, weak_type=aval.weak_type)


eager_rules[cond_p] = _cond_eager


# --------------------------------------------------------------------------- jvp


def _jvp_branch(branch, nonzeros, instantiate):
    """(jvp jaxpr, consts, nonzero output tangents) of one branch: the jaxpr maps (primals,
    nonzero tangents) to (primals out, nonzero tangents out); outputs marked in
    ``instantiate`` get a tangent even where it is zero in this branch."""
    n = len(nonzeros)
    in_avals = branch.in_avals + [
        ad.tangent_aval(a) for a, nz in zip(branch.in_avals, nonzeros, strict=True) if nz
    ]
    out_nonzeros = []

    def jvp_fun(*args):
        primals, nonzero_tangents = args[:n], iter(args[n:])
        tangents = [
            next(nonzero_tangents) if nz else ad.Zero(ad.tangent_aval(a))
            for a, nz in zip(branch.in_avals, nonzeros, strict=True)
        ]
        primals_out, tangents_out = ad.jvp_flat(
            lambda *xs: eval_jaxpr(branch.jaxpr, branch.consts, *xs), primals, tangents
        )
        primals_out = _restore_weak_types(primals_out, branch.out_avals)
        tangents_out = [
            ad.Zero(ad.tangent_aval(a))
            if not ad.is_differentiable(a)
            else ad.instantiate(t)
            if inst
            else t
            for t, a, inst in zip(tangents_out, branch.out_avals, instantiate, strict=True)
        ]
        out_nonzeros[:] = [type(t) is not ad.Zero for t in tangents_out]
        return primals_out + [t for t in tangents_out if type(t) is not ad.Zero]

    closed = trace_to_jaxpr(jvp_fun, in_avals, "differentiating a cond branch")
    body, consts = convert_constvars(closed)
    return (body, consts), tuple(out_nonzeros)


def _jvp_branches(branches, nonzeros):
    n_out = len(branches[0].out_avals)
    first = [_jvp_branch(b, nonzeros, (False,) * n_out) for b in branches]
    union = tuple(any(nz[j] for _, nz in first) for j in range(n_out))
    pairs = [
        pair if nz == union else _jvp_branch(b, nonzeros, union)[0]
        for b, (pair, nz) in zip(branches, first, strict=True)
    ]
    new_branches, consts = _join_consts(pairs)
    return new_branches, consts, union


def _cond_jvp(primals, tangents, *, branches):
    index, operands, op_tangents = primals[0], primals[1:], tangents[1:]
    nonzeros = tuple(
        type(t) is not ad.Zero and ad.is_differentiable(a)
        for t, a in zip(op_tangents, branches[0].in_avals, strict=True)
    )
    new_branches, consts, out_nonzeros = _cached(
        branches, "jvp", nonzeros, lambda: _jvp_branches(branches, nonzeros)
    )
    outs = cond_p.bind(
        index,
        *consts,
        *operands,
        *[t for t, nz in zip(op_tangents, nonzeros, strict=True) if nz],
        branches=new_branches,
    )
    out_avals = branches[0].out_avals
    primals_out, nonzero_tangents = outs[: len(out_avals)], iter(outs[len(out_avals) :])
    tangents_out = [
        next(nonzero_tangents) if nz else ad.Zero(ad.tangent_aval(a))
        for a, nz in zip(out_avals, out_nonzeros, strict=True)
    ]
    return primals_out, tangents_out


ad.jvp_rules[cond_p] = _cond_jvp


# --------------------------------------------------------------------------- partial eval
# With the index known and some operands unknown, every branch is split into a known part
# (run now, as a cond) and an unknown part (staged, as a cond on the residuals). Branches
# need different residuals: the known cond returns one slot per residual of any branch
# (slots of one type are shared by the branches), zeros in the slots of the branches not
# taken; each unknown branch reads its own slots. So grad of cond recomputes nothing.


def _assign_slots(res_avals_per_branch):
    """A slot per residual, reused across branches by type: (slot avals, slots per branch)."""
    slot_avals, per_branch = [], []
    for res_avals in res_avals_per_branch:
        mine = []
        for a in res_avals:
            s = next(
                (
                    k
                    for k, b in enumerate(slot_avals)
                    if k not in mine and b.shape == a.shape and b.dtype == a.dtype
                ),
                None,
            )
            if s is None:
                s = len(slot_avals)
                slot_avals.append(a)
            mine.append(s)
        per_branch.append(mine)
    return slot_avals, per_branch


def _split_branches(branches, unknowns):
    known_avals = [a for a, u in zip(branches[0].in_avals, unknowns, strict=True) if not u]
    unknown_avals = [a for a, u in zip(branches[0].in_avals, unknowns, strict=True) if u]
    out_avals = branches[0].out_avals  # the cond's result types, weak types included
    splits = [
        partial_eval.partial_eval_jaxpr(b, unknowns, "partially evaluating a cond branch")
        for b in branches
    ]
    n_out = len(branches[0].out_avals)
    out_unknowns = tuple(any(s[3][j] for s in splits) for j in range(n_out))
    # A branch's residuals: its own, then its known outputs that another branch leaves unknown.
    res_avals = []
    for b, (known_jaxpr, _, _, own_unknowns, num_res) in zip(branches, splits, strict=True):
        own_res = known_jaxpr.out_avals[len(known_jaxpr.out_avals) - num_res :]
        forced = [
            a
            for a, u, mine in zip(b.out_avals, out_unknowns, own_unknowns, strict=True)
            if u and not mine
        ]
        res_avals.append(own_res + forced)
    slot_avals, slots = _assign_slots(res_avals)

    known_pairs, unknown_pairs = [], []
    for split, mine in zip(splits, slots, strict=True):
        known_pairs.append(
            _known_branch(split, mine, slot_avals, out_unknowns, known_avals, out_avals)
        )
        unknown_pairs.append(
            _unknown_branch(split, mine, slot_avals, out_unknowns, unknown_avals, out_avals)
        )
    known_branches, known_consts = _join_consts(known_pairs)
    unknown_branches, unknown_consts = _join_consts(unknown_pairs)
    assert not unknown_consts, "internal error: the unknown part of a cond branch has consts"
    return known_branches, known_consts, unknown_branches, out_unknowns, len(slot_avals)


def _known_branch(split, mine, slot_avals, out_unknowns, known_avals, out_avals):
    known_jaxpr, known_consts, _, own_unknowns, num_res = split

    def known_fun(*args):
        outs = eval_jaxpr(known_jaxpr.jaxpr, [], *known_consts, *args)
        own_outs, residuals = outs[: len(outs) - num_res], outs[len(outs) - num_res :]
        own_outs = iter(own_outs)
        kept, forced = [], []
        for u, own_u in zip(out_unknowns, own_unknowns, strict=True):
            if not own_u:
                (forced if u else kept).append(next(own_outs))
        filled = dict(zip(mine, residuals + forced, strict=True))
        kept = _restore_weak_types(
            kept, [a for a, u in zip(out_avals, out_unknowns, strict=True) if not u]
        )
        return kept + [
            filled[s] if s in filled else ad.tangent_ops["zeros"](a)
            for s, a in enumerate(slot_avals)
        ]

    closed = trace_to_jaxpr(known_fun, known_avals, "partially evaluating a cond branch")
    return convert_constvars(closed)


def _unknown_branch(split, mine, slot_avals, out_unknowns, unknown_avals, out_avals):
    _, _, unknown_jaxpr, own_unknowns, num_res = split

    def unknown_fun(*args):
        filled, unknown_args = args[: len(slot_avals)], args[len(slot_avals) :]
        residuals = [filled[s] for s in mine]
        own_outs = iter(eval_jaxpr(unknown_jaxpr.jaxpr, [], *residuals[:num_res], *unknown_args))
        forced = iter(residuals[num_res:])
        outs = [
            next(own_outs) if own_u else next(forced)
            for u, own_u in zip(out_unknowns, own_unknowns, strict=True)
            if u
        ]
        return _restore_weak_types(
            outs, [a for a, u in zip(out_avals, out_unknowns, strict=True) if u]
        )

    closed = trace_to_jaxpr(
        unknown_fun, slot_avals + unknown_avals, "partially evaluating a cond branch"
    )
    return convert_constvars(closed)


def _cond_partial_eval(trace, args, params):
    branches = params["branches"]
    index, operands = args[0], args[1:]
    if trace.is_unknown(index):  # which branch runs is not known: all of it waits
        return trace.stage(cond_p, args, params, branches[0].out_avals)
    unknowns = tuple(trace.is_unknown(x) for x in operands)
    known_branches, known_consts, unknown_branches, out_unknowns, num_res = _cached(
        branches, "partial_eval", unknowns, lambda: _split_branches(branches, unknowns)
    )
    known_ops = [x for x, u in zip(operands, unknowns, strict=True) if not u]
    known_outs = []
    if known_branches[0].out_avals:
        with set_current_trace(trace.parent):
            known_outs = cond_p.bind(index, *known_consts, *known_ops, branches=known_branches)
    residuals = known_outs[len(known_outs) - num_res :]
    known_outs = iter(known_outs[: len(known_outs) - num_res])
    unknown_outs = iter([])
    if any(out_unknowns):
        unknown_ops = [x for x, u in zip(operands, unknowns, strict=True) if u]
        unknown_outs = iter(
            trace.stage(
                cond_p,
                [index, *residuals, *unknown_ops],
                {"branches": unknown_branches},
                unknown_branches[0].out_avals,
            )
        )
    return [next(unknown_outs) if u else next(known_outs) for u in out_unknowns]


partial_eval.partial_eval_rules[cond_p] = _cond_partial_eval


# --------------------------------------------------------------------------- transpose


def _transpose_branch(branch, linear):
    value_avals = [a for a, lin in zip(branch.in_avals, linear, strict=True) if not lin]

    def transposed(*args):
        values, cts = iter(args[: len(value_avals)]), args[len(value_avals) :]
        invals = [
            transpose.UndefinedPrimal(a) if lin else next(values)
            for a, lin in zip(branch.in_avals, linear, strict=True)
        ]
        cts_in = transpose.backward_pass(branch.jaxpr, branch.consts, invals, list(cts))
        return [ad.instantiate(ct) for ct, lin in zip(cts_in, linear, strict=True) if lin]

    closed = trace_to_jaxpr(transposed, value_avals + branch.out_avals, "transposing a cond branch")
    return convert_constvars(closed)


def _cond_transpose(cts, index, *operands, branches):
    if transpose.is_undefined(index):
        raise TypeError("cond: cannot transpose with respect to the branch index")
    linear = tuple(transpose.is_undefined(x) for x in operands)
    new_branches, consts = _cached(
        branches,
        "transpose",
        linear,
        lambda: _join_consts([_transpose_branch(b, linear) for b in branches]),
    )
    values = [x for x in operands if not transpose.is_undefined(x)]
    cts_in = iter(
        cond_p.bind(
            index, *consts, *values, *[ad.instantiate(ct) for ct in cts], branches=new_branches
        )
    )
    return [None] + [next(cts_in) if lin else None for lin in linear]


transpose.transpose_rules[cond_p] = _cond_transpose


# --------------------------------------------------------------------------- batching


def _batch_branch(branch, axis, dims, force):
    """One branch batched along ``dims``; returns ((jaxpr, consts), out dims)."""
    jaxpr, consts, out_batched = batching.batch_jaxpr(branch, axis, dims, force)
    return (jaxpr, consts), tuple(0 if b else batching.not_mapped for b in out_batched)


def _batch_branches(branches, axis, dims):
    n_out = len(branches[0].out_avals)
    first = [_batch_branch(b, axis, dims, (False,) * n_out) for b in branches]
    union = tuple(any(od[j] is not batching.not_mapped for _, od in first) for j in range(n_out))
    want = tuple(0 if u else batching.not_mapped for u in union)
    pairs = [
        pair if od == want else _batch_branch(b, axis, dims, union)[0]
        for b, (pair, od) in zip(branches, first, strict=True)
    ]
    new_branches, consts = _join_consts(pairs)
    return new_branches, consts, want


def _mask_operands(index, i, size, operands, op_dims):
    """The operands branch ``i`` sees when every branch runs on the whole batch: the
    examples that take another branch get ``stop_gradient`` of their value, so a branch
    that is not taken (``sqrt`` at 0, say) sends no NaN back through reverse mode."""
    taken = eq(index, np.int32(i))
    ops, dims = [], []
    for x, d in zip(operands, op_dims, strict=True):
        if ad.aval_of(x).dtype.kind not in "fc":
            ops.append(x)
            dims.append(d)
            continue
        full = batching.batch_at_front(x, d, size)
        shape = ad.aval_of(full).shape
        which = taken if len(shape) == 1 else broadcast_in_dim(taken, shape, (0,))
        ops.append(select_n(which, stop_gradient(full), full))
        dims.append(0)
    return ops, tuple(dims)


def _cond_batch(axis, args, dims, *, branches):
    index, index_dim = args[0], dims[0]
    operands, op_dims = args[1:], tuple(dims[1:])
    if index_dim is batching.not_mapped:  # one branch for the whole batch: batch them all
        new_branches, consts, out_dims = _cached(
            branches,
            "batch",
            (op_dims, axis.size, axis.name),
            lambda: _batch_branches(branches, axis, op_dims),
        )
        outs = cond_p.bind(index, *consts, *operands, branches=new_branches)
        return outs, list(out_dims)
    # A branch per example: run every branch on the whole batch, then select per example.
    index = batching.moveaxis(index, index_dim, 0)
    index = clamp(np.int32(0), index, np.int32(len(branches) - 1))
    results = []
    for i, b in enumerate(branches):
        ops, dims = _mask_operands(index, i, axis.size, operands, op_dims)
        vals, out_dims = batching.batch_flat(
            lambda *xs, b=b: eval_jaxpr(b.jaxpr, b.consts, *xs), axis, ops, dims
        )
        vals = _restore_weak_types(vals, branches[0].out_avals)
        results.append(
            [batching.batch_at_front(v, d, axis.size) for v, d in zip(vals, out_dims, strict=True)]
        )
    outs = []
    for cases in zip(*results, strict=True):
        shape = ad.aval_of(cases[0]).shape
        which = index if len(shape) == 1 else broadcast_in_dim(index, shape, (0,))
        outs.append(select_n(which, *cases))
    return outs, [0] * len(outs)


batching.batch_rules[cond_p] = _cond_batch


# --------------------------------------------------------------------------- dead code


def _cond_dce(used_outputs, eqn):
    """Drop unused outputs from every branch, then the operands no branch reads."""
    if not any(used_outputs):
        return [False] * len(eqn.invars), None
    branches = eqn.params["branches"]
    key = tuple(used_outputs)

    def make():
        slimmed = [dce.dce_jaxpr(b.jaxpr, key) for b in branches]
        used = [any(u[i] for _, u in slimmed) for i in range(len(branches[0].in_avals))]
        new = tuple(
            ClosedJaxpr(
                Jaxpr([], [v for v, u in zip(j.invars, used, strict=True) if u], j.outvars, j.eqns),
                [],
            )
            for j, _ in slimmed
        )
        return new, used

    new_branches, used = _cached(branches, "dce", key, make)
    if (
        all(used)
        and all(used_outputs)
        and all(
            len(b.jaxpr.eqns) == len(n.jaxpr.eqns)
            for b, n in zip(branches, new_branches, strict=True)
        )
    ):
        return [True] * len(eqn.invars), eqn
    used_inputs = [True, *used]
    invars = [x for x, u in zip(eqn.invars, used_inputs, strict=True) if u]
    outvars = [v for v, u in zip(eqn.outvars, used_outputs, strict=True) if u]
    new_eqn = type(eqn)(
        eqn.primitive, invars, outvars, {**eqn.params, "branches": new_branches}, eqn.source_info
    )
    return used_inputs, new_eqn


dce.dce_rules[cond_p] = _cond_dce
