"""Shardings in types (JAX's explicit sharding mode): the sharding rule of each primitive.

On a mesh whose axes are ``AxisType.Explicit``, an array's type carries its sharding:
``typeof(x)`` is ``f32[8@x,4]`` and ``typeof(x).sharding`` a NamedSharding over the mesh's
abstract mesh, with one spec entry per dimension. Tracing carries these shardings through
the program: after a primitive's abstract evaluation has given its results' shapes and
dtypes, the rule here gives their shardings from the operands'.

Rule signature: ``rule(avals, specs, out_avals, **params) -> [spec or None per result]``,
where ``specs`` are the operands' specs as tuples of one entry per dimension (an operand
without a sharding counts as replicated). Rules raise ``ShardingTypeError`` where JAX's do.
A primitive without a rule gives results without a sharding (replicated), as before this
mode existed; call-like primitives (``jit``) keep the types their bodies gave.

Only consulted when some operand's type has a sharding (xform/interpret/staging.py,
``out_avals_of``), so programs without explicit shardings pay nothing. A sharding param
(``out_sharding=`` of ``reshape``, ``dot_general``, ``broadcast_in_dim``; transposition gives
one to cotangents, as JAX's) decides its result's sharding: the abstract evaluation types
the result by it (xform/primitives/sharding.py, ``typed``) and the rule returns it.
"""

from xform.errors import ShardingTypeError
from xform.interpret.typed import keeps_sharding, named, sharding_rules, spec_names
from xform.interpret.typed import spec_of as _spec
from xform.primitives.sharding import full_spec, type_sharding

__all__ = ["ELEMENTWISE", "sharding_rules", "type_sharding"]

# Primitives whose abstract evaluation already gives sharded types (a call's: those of its
# body, traced with them; ``reshard``'s: the one asked for, xform/primitives/sharding.py):
# their results keep what it gave.
keeps_sharding.update(
    {
        "jit",
        "sharding_constraint",
        "reshard",
        "remat2",
        "custom_jvp_call",
        "custom_vjp_call",
        "cond",
        "while",
        "shard_map",
    }
)


# --------------------------------------------------------------------------- elementwise


def _broadcasting_rule(name, avals, specs, out_avals):
    """Operands of one rank (scalars aside) give each dimension the sharding they agree on;
    unsharded operands and size-1 dimensions defer to the others; two different shardings
    of one dimension are a ``ShardingTypeError``."""
    ranked = [(a.shape, s) for a, s in zip(avals, specs, strict=True) if a.shape]
    if not ranked:
        return [()] * len(out_avals)
    out = []
    for dim in range(len(ranked[0][0])):
        wanted = {s[dim] for _, s in ranked} - {None}
        if len(wanted) > 1:
            got = ", ".join(str(s) for _, s in ranked)
            raise ShardingTypeError(f"{name} got incompatible shardings for broadcasting: {got}.")
        out.append(wanted.pop() if wanted else None)
    return [tuple(out)] * len(out_avals)


# The elementwise primitives: one broadcasting rule (operands of one rank, scalars aside).
ELEMENTWISE = (
    # unary
    "neg sign floor ceil round is_finite abs exp exp2 log log1p expm1 sqrt rsqrt cbrt sin cos "
    "tan asin acos atan sinh cosh tanh asinh acosh atanh logistic erf erfc erf_inv lgamma "
    "digamma not population_count real imag conj clz square integer_pow reduce_precision "
    "copy convert_element_type bitcast_convert_type "
    # n-ary
    "add sub mul div rem max min atan2 nextafter and or xor shift_left shift_right_logical "
    "shift_right_arithmetic eq ne lt le gt ge pow select_n clamp complex mulhi add_any "
    "igamma igammac igamma_grad_a random_gamma_grad polygamma zeta regularized_incomplete_beta "
    "bessel_i0e bessel_i1e"
).split()


def _elementwise_rule(name):
    def rule(avals, specs, out_avals, **params):
        return _broadcasting_rule(name, avals, specs, out_avals)

    return rule


for _name in ELEMENTWISE:
    sharding_rules[_name] = _elementwise_rule(_name)


# --------------------------------------------------------------------------- contractions


def _dot_general_rule(avals, specs, out_avals, *, dimension_numbers, out_sharding=None, **params):
    if out_sharding is not None:  # given (by the caller, or by transposition): it decides
        return [full_spec(out_sharding, len(out_avals[0].shape))]
    lhs, rhs = specs
    (lc, rc), (lb, rb) = dimension_numbers
    lhs_batch = tuple(lhs[i] for i in lb)
    rhs_batch = tuple(rhs[i] for i in rb)
    if _clash(lhs_batch, rhs_batch):
        raise ShardingTypeError(
            f"dot_general requires lhs batch dimensions and rhs batch "
            f"dimensions to have the consistent sharding, got {lhs_batch} "
            f"and {rhs_batch}."
        )
    lhs_contract = tuple(lhs[i] for i in lc)
    rhs_contract = tuple(rhs[i] for i in rc)
    if _clash(lhs_contract, rhs_contract):
        raise ShardingTypeError(
            f"dot_general requires contracting dimensions to have "
            f"consistent sharding, got {lhs_contract} and {rhs_contract}."
        )
    if any(
        a is not None and b is not None for a, b in zip(lhs_contract, rhs_contract, strict=True)
    ):
        raise ShardingTypeError(
            "Contracting dimensions are sharded and it is ambiguous how the output should be "
            "sharded. Please specify the output sharding via the `out_sharding` parameter. "
            f"Got lhs_contracting_spec={lhs_contract} and rhs_contracting_spec={rhs_contract}"
        )
    # batch dimensions first, then lhs's free dimensions, then rhs's (dot_general's order)
    lhs_free = tuple(e for i, e in enumerate(lhs) if i not in lc and i not in lb)
    rhs_free = tuple(e for i, e in enumerate(rhs) if i not in rc and i not in rb)
    return [lhs_batch + lhs_free + rhs_free]


def _clash(a, b):
    return any(x is not None and y is not None and x != y for x, y in zip(a, b, strict=True))


sharding_rules["dot_general"] = _dot_general_rule

# --------------------------------------------------------------------------- reductions


def _reduce_rule(avals, specs, out_avals, *, axes, **params):
    (spec,) = specs
    return [tuple(e for i, e in enumerate(spec) if i not in axes)] * len(out_avals)


for _name in (
    "reduce_sum",
    "reduce_prod",
    "reduce_max",
    "reduce_min",
    "reduce_and",
    "reduce_or",
    "reduce_xor",
    "argmax",
    "argmin",
):
    sharding_rules[_name] = _reduce_rule


# --------------------------------------------------------------------------- structural


def _transpose_rule(avals, specs, out_avals, *, permutation):
    (spec,) = specs
    return [tuple(spec[i] for i in permutation)]


def _broadcast_in_dim_rule(avals, specs, out_avals, *, shape, broadcast_dimensions, sharding=None):
    if sharding is not None:  # given (``out_sharding``, a transposition, ``full_like``)
        return [full_spec(sharding, len(shape))]
    (spec,) = specs
    out = [None] * len(shape)
    for entry, d in zip(spec, broadcast_dimensions, strict=True):
        out[d] = entry
    return [tuple(out)]


def _squeeze_rule(avals, specs, out_avals, *, dimensions):
    (spec,) = specs
    dims = {d % len(spec) for d in dimensions}
    return [tuple(e for i, e in enumerate(spec) if i not in dims)]


def _reshape_rule(avals, specs, out_avals, *, new_sizes, dimensions, sharding=None):
    """JAX's reshapes of a sharded type: dimensions of size 1 come and go; one dimension
    split into several (its mesh axes handed out, major first, each dividing its part), or
    several merged into one (the merged dimensions' axes, major first, none after an
    unsharded one). Anything else needs the result's sharding given (``out_sharding``)."""
    if sharding is not None:
        return [full_spec(sharding, len(new_sizes))]
    (aval,), (spec,) = avals, specs
    if all(e is None for e in spec):
        return [(None,) * len(new_sizes)]
    old = [d for d in aval.shape if d != 1]
    if old == [d for d in new_sizes if d != 1]:  # only size-1 dimensions change
        kept = iter(e for d, e in zip(aval.shape, spec, strict=True) if d != 1)
        return [tuple(None if d == 1 else next(kept) for d in new_sizes)]
    groups = _group_dims(aval.shape, new_sizes)
    if groups is None:
        _reshape_error(aval, new_sizes)
    mesh = aval.sharding.mesh
    out = []
    changed = [(o, n) for o, n in groups if len(o) != 1 or len(n) != 1]
    if len(changed) != 1 or (len(changed[0][0]) > 1 and len(changed[0][1]) > 1):
        _reshape_error(aval, new_sizes)  # JAX splits or merges one dimension, no more
    for old_dims, new_dims in groups:
        entries = [spec[i] for i in old_dims]
        if len(old_dims) == 1 and len(new_dims) == 1:
            out.append(entries[0])
            continue
        axes = [n for e in entries for n in spec_names(e)]
        if len(old_dims) > 1:  # a merge: no mesh axis may follow an unsharded dimension
            while entries and entries[-1] is None:
                entries.pop()
            if any(e is None for e in entries):
                _reshape_error(aval, new_sizes)
        out.extend(_hand_out(axes, [new_sizes[j] for j in new_dims], mesh, aval, new_sizes))
    return [tuple(out)]


def _group_dims(old, new):
    """``[(old dims, new dims), ...]``: consecutive blocks of equal size, each block's
    size-1 dimensions with it; None when the shapes do not line up so (not a reshape)."""
    groups, i, j = [], 0, 0
    while i < len(old) or j < len(new):
        oi, nj = [i] if i < len(old) else [], [j] if j < len(new) else []
        if not oi or not nj:
            return None
        po, pn = old[i], new[j]
        i, j = i + 1, j + 1
        while po != pn:
            if po < pn and i < len(old):
                po, oi = po * old[i], oi + [i]
                i += 1
            elif pn < po and j < len(new):
                pn, nj = pn * new[j], nj + [j]
                j += 1
            else:
                return None
        while i < len(old) and old[i] == 1 and (j >= len(new) or new[j] != 1):
            oi, i = oi + [i], i + 1
        while j < len(new) and new[j] == 1 and (i >= len(old) or old[i] != 1):
            nj, j = nj + [j], j + 1
        groups.append((oi, nj))
    return groups


def _hand_out(axes, sizes, mesh, aval, new_sizes):
    """Mesh ``axes`` (major first) given to dimensions of ``sizes`` in order, each taking
    axes while it has more than one element left, every axis dividing what is left."""
    axes = list(axes)
    out = []
    for size in sizes:
        taken, left = [], size
        while left > 1 and axes:
            n = mesh.shape[axes[0]]
            if left % n:
                _reshape_error(aval, new_sizes)
            left //= n
            taken.append(axes.pop(0))
        out.append(None if not taken else taken[0] if len(taken) == 1 else tuple(taken))
    if axes:
        _reshape_error(aval, new_sizes)
    return out


def _reshape_error(aval, new_sizes):
    raise ShardingTypeError(
        f"This reshape is not supported. Please specify the sharding of the output via the "
        f"`out_sharding` argument of jax.lax.reshape. Got operand type: {aval.str_short()}, "
        f"new sizes: "
        f"{tuple(new_sizes)}"
    )


def _resized_rule(what):
    """The operand's sharding for a result of another shape (a slice, a pad, a window): each
    split dimension whose size changes must still divide evenly among its devices."""

    def rule(avals, specs, out_avals, **params):
        aval, spec = avals[0], specs[0]
        for out in out_avals:
            _check_resized(what, aval, spec, out.shape)
        return [spec] * len(out_avals)

    return rule


def _check_resized(what, aval, spec, shape):
    mesh = aval.sharding.mesh
    for size, new, entry in zip(aval.shape, shape, spec, strict=True):
        parts = _parts(mesh, entry)
        if new != size and entry is not None and new % parts:
            raise ShardingTypeError(
                f"{what} on sharded dims where out dim ({new}) is not divisible by mesh axes "
                f"({parts}) with spec ({entry}) is not implemented. Got input type="
                f"{aval.str_short()} and output shape={shape}"
            )


def _parts(mesh, entry):
    parts = 1
    for n in spec_names(entry):
        parts *= mesh.shape[n]
    return parts


def _operand_rule(k):
    """Results laid out as operand ``k`` (``rev``'s, ``clamp``'s middle operand...)."""

    def rule(avals, specs, out_avals, **params):
        return [specs[k]] * len(out_avals)

    return rule


def _concatenate_rule(avals, specs, out_avals, **params):
    """Operands laid out alike give their sharding. One without a sharding (a constant) is
    replicated, and so differs from a split one, as in JAX (whose constants are typed
    replicated over the mesh): ``reshard`` one of them first."""
    if any(s != specs[0] for s in specs):
        like = next(a.sharding for a in avals if a.sharding is not None)
        got = ", ".join(str(named(like, s)) for s in specs)
        raise ShardingTypeError(f"All operands should have the same sharding. Got shardings {got}")
    return [specs[0]]


sharding_rules["transpose"] = _transpose_rule
sharding_rules["slice"] = _resized_rule("slicing")
sharding_rules["concatenate"] = _concatenate_rule
sharding_rules["broadcast_in_dim"] = _broadcast_in_dim_rule
sharding_rules["squeeze"] = _squeeze_rule
sharding_rules["reshape"] = _reshape_rule


def _stack_rule(avals, specs, out_avals, *, axis):
    (spec,) = _concatenate_rule(avals, specs, out_avals)
    return [spec[:axis] + (None,) + spec[axis:]]


def _unstack_rule(avals, specs, out_avals, *, axis):
    (aval,), (spec,) = avals, specs
    if spec[axis] is not None:
        raise ShardingTypeError(
            f"unstack operand cannot be sharded on the unstacking axis "
            f"{axis}. Got operand type={aval.str_short()}"
        )
    return [spec[:axis] + spec[axis + 1 :]] * len(out_avals)


def _tile_rule(avals, specs, out_avals, *, reps):
    (aval,), (spec,) = avals, specs
    for i, (r, entry) in enumerate(zip(reps, spec, strict=True)):
        if r != 1 and entry is not None:
            raise ShardingTypeError(
                f"Operand cannot be sharded on dimension {i} when the "
                f"tiling is non-trivial. Got input type: {_long(aval)} "
                f"with reps: {reps}"
            )
    return [spec]


def _long(aval):
    """A type as JAX's ``str`` writes it in messages: ``float32[8@x,8]``."""
    return aval.dtype.name + aval.str_short()[aval.str_short().index("[") :]


def _jax_repr(aval):
    weak = ", weak_type=True" if aval.weak_type else ""
    return f"ShapedArray({_long(aval)}{weak})"


sharding_rules["rev"] = _operand_rule(0)
sharding_rules["pad"] = _resized_rule("padding")
sharding_rules["split"] = _resized_rule("split")
sharding_rules["stack"] = _stack_rule
sharding_rules["unstack"] = _unstack_rule
sharding_rules["tile"] = _tile_rule


# --------------------------------------------------------------------------- select, clamp


def _select_n_rule(avals, specs, out_avals):
    """Cases laid out alike (unsharded ones aside); a non-scalar predicate laid out as they
    are (JAX's ``select_n``)."""
    which, cases = avals[0], avals[1:]
    sharded = [(a, s) for a, s in zip(cases, specs[1:], strict=True) if a.sharding is not None]
    if not sharded:  # only the predicate is sharded: the cases follow it
        return [specs[0] if which.shape else (None,) * len(out_avals[0].shape)]
    first = sharded[0][1]
    if any(s != first for _, s in sharded):
        got = ", ".join(str(a.sharding) for a, _ in sharded)
        raise ShardingTypeError(f"select cases must have the same shardings, got [{got}].")
    if which.shape and which.sharding is not None and specs[0] != first:
        raise ShardingTypeError(
            f"select `which` must be scalar or have the same sharding as cases, got `which` "
            f"sharding {which.sharding} but case sharding {sharded[0][0].sharding}."
        )
    return [first]


sharding_rules["select_n"] = _select_n_rule
sharding_rules["clamp"] = _operand_rule(1)  # the operand's, as JAX's (min and max aside)


# --------------------------------------------------------------------------- scans, sorts


def _cumulative_rule(avals, specs, out_avals, *, axis, reverse):
    (aval,), (spec,) = avals, specs
    if spec[axis] is not None:
        raise ShardingTypeError(
            f"Input should be unsharded over the axis being reduced. Got "
            f"input type={_long(aval)} and axis={axis}"
        )
    return [spec]


for _name in ("cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"):
    sharding_rules[_name] = _cumulative_rule


def _sort_rule(avals, specs, out_avals, *, dimension, **params):
    sharded = [a.sharding for a in avals if a.sharding is not None]
    for s in sharded:
        if s.spec[dimension] is not None:
            raise ShardingTypeError(
                f"Arguments to sort must be unsharded over the sorting "
                f"dimension. Got arg sharding={s} and sorting "
                f"dimension={dimension}"
            )
        if s != sharded[0]:
            got = " ".join(str(t) for t in sharded)
            raise ShardingTypeError(f"Arguments to sort must have equal shardings, got: {got}")
    return [tuple(sharded[0].spec)] * len(out_avals)


def _top_k_rule(avals, specs, out_avals, *, k, axis):
    (aval,), (spec,) = avals, specs
    if spec[axis] is not None:
        raise ShardingTypeError(
            f"The input should be unsharded over the axis along which to "
            f"compute the top_k values. Got input type={_long(aval)} and "
            f"axis={axis}"
        )
    return [spec, spec]


sharding_rules["sort"] = _sort_rule
sharding_rules["top_k"] = _top_k_rule


def _scan_rule(avals, specs, out_avals, *, jaxpr, num_carry, **params):
    """The carries as the body gives them; each stacked result laid out as the body's
    per-iteration one, its new leading (iteration) dimension unsplit."""
    body_ys = jaxpr.out_avals[num_carry:]
    return [_spec(a) for a in out_avals[:num_carry]] + [(None,) + _spec(y) for y in body_ys]


sharding_rules["scan"] = _scan_rule


# --------------------------------------------------------------------------- windows


def _select_and_gather_add_rule(avals, specs, out_avals, **params):
    tangents, operand = avals
    if specs[0] != specs[1]:
        raise ShardingTypeError(
            f"select_and_gather_add tangents and operand shardings must "
            f"match, got {tangents.sharding} and {operand.sharding}."
        )
    return _resized_rule("reduce_window")(avals[1:], specs[1:], out_avals)


for _name in ("reduce_window", "reduce_window_sum", "reduce_window_max", "reduce_window_min"):
    sharding_rules[_name] = _resized_rule("reduce_window")
sharding_rules["select_and_gather_add"] = _select_and_gather_add_rule
sharding_rules["select_and_scatter_add"] = _operand_rule(1)  # (source, operand)
sharding_rules["select_and_scatter"] = _operand_rule(0)  # (operand, source, init)


# --------------------------------------------------------------------------- indexing


def _dynamic_update_slice_rule(avals, specs, out_avals):
    (operand, update), (ospec, uspec) = avals[:2], specs[:2]
    if ospec != uspec:
        mesh = (operand.sharding or update.sharding).mesh
        raise ShardingTypeError(
            f"dynamic_update_slice operand sharding must be equal to update sharding, got "
            f"operand sharding {_with_axis_types(operand, mesh)} and update sharding "
            f"{_with_axis_types(update, mesh)}."
        )
    return [ospec]


def _with_axis_types(aval, mesh):
    """A type as JAX's ``str_short(mesh_axis_types=True)`` writes it in messages:
    ``float32[8@x,8]({Explicit: ('x', 'y')})``."""
    by_type = {}
    for name, t in zip(mesh.axis_names, mesh.axis_types, strict=True):
        by_type.setdefault(t.name, []).append(name)
    types = ", ".join(f"{t}: {tuple(names)}" for t, names in by_type.items())
    return f"{_long(aval)}({{{types}}})"


def _gather_rule(avals, specs, out_avals, *, dimension_numbers, slice_sizes, **params):
    """JAX's gather: operand dimensions indexed into must be replicated (or taken whole),
    indices replicated except along batching dimensions; the result's offset dimensions take
    the operand's shardings, its other dimensions the indices'."""
    (operand, indices), (ospec, ispec) = avals, specs
    dn = dimension_numbers
    ispec = list(ispec)
    ok = all(slice_sizes[d] == operand.shape[d] or ospec[d] is None for d in dn.start_index_map)
    pairs = list(zip(dn.operand_batching_dims, dn.start_indices_batching_dims, strict=True))
    ok = ok and all(_agree(ospec[o], ispec[i]) for o, i in pairs)
    ok = ok and all(
        e is None for i, e in enumerate(ispec) if i not in dn.start_indices_batching_dims
    )
    if not ok:
        raise ShardingTypeError(
            "Use `.at[...].get(out_sharding=)` to provide output PartitionSpec for the gather "
            "indexing as out sharding could not be resolved unambiguously (or would require "
            f"collectives on inputs). Got operand={_jax_repr(operand)}, "
            f"indices={_jax_repr(indices)}"
        )
    for o, i in pairs:
        ispec[i] = ispec[i] or ospec[o]
    window = iter(
        d
        for d in range(operand.ndim)
        if d not in dn.collapsed_slice_dims and d not in dn.operand_batching_dims
    )
    batch = iter(ispec)
    rank = len(dn.offset_dims) + indices.ndim - 1
    return [tuple(ospec[next(window)] if i in dn.offset_dims else next(batch) for i in range(rank))]


def _agree(*entries):
    return len({e for e in entries if e is not None}) <= 1


def _scatter_rule(avals, specs, out_avals, *, dimension_numbers, **params):
    """JAX's scatter, the gather rule read backwards: the result is laid out as the operand,
    its unsharded window and batching dimensions taking the updates' (or indices')."""
    (operand, indices, updates), (ospec, ispec, uspec) = avals[:3], specs[:3]
    dn = dimension_numbers
    if all(e is None for e in ospec + ispec + uspec):
        return [ospec]
    vector_dim = indices.ndim - 1
    query_dims = [d for d in range(updates.ndim) if d not in dn.update_window_dims]
    update_batch = tuple(query_dims[i] for i in dn.scatter_indices_batching_dims)
    window = [
        d
        for d in range(operand.ndim)
        if d not in dn.inserted_window_dims and d not in dn.operand_batching_dims
    ]
    if updates.sharding is None:  # a constant (``x.at[i].set(1.0)``): laid out as needed
        by_window = dict(zip(dn.update_window_dims, window, strict=True))
        uspec = tuple(
            ospec[by_window[u]]
            if u in by_window and updates.shape[u] == operand.shape[by_window[u]]
            else None
            for u in range(updates.ndim)
        )
    batch = list(
        zip(dn.operand_batching_dims, dn.scatter_indices_batching_dims, update_batch, strict=True)
    )
    ok = all(_agree(ospec[o], ispec[i], uspec[u]) for o, i, u in batch)
    ok = ok and all(
        (updates.shape[u] == operand.shape[o] and uspec[u] == ospec[o])
        or (uspec[u] is None and ospec[o] is None)
        for u, o in zip(dn.update_window_dims, window, strict=True)
    )
    ok = ok and all(ospec[d] is None for d in dn.inserted_window_dims)
    ok = ok and all(
        e is None
        for d, e in enumerate(uspec)
        if d not in update_batch and d not in dn.update_window_dims
    )
    ok = ok and all(
        e is None
        for d, e in enumerate(ispec[:vector_dim])
        if d not in dn.scatter_indices_batching_dims
    )
    ok = ok and ispec[vector_dim] is None
    if not ok:
        raise ShardingTypeError(
            "Use `.at[...].set/add/mul/...(out_sharding=)` to provide output PartitionSpec for "
            "the scatter update as out sharding could not be resolved unambiguously (or would "
            f"require collectives on inputs). Got operand={_jax_repr(operand)}, "
            f"indices={_jax_repr(indices)}, updates={_jax_repr(updates)}"
        )
    out = list(ospec)
    for o, i, u in batch:
        out[o] = out[o] or ispec[i] or uspec[u]
    for u, o in zip(dn.update_window_dims, window, strict=True):
        out[o] = out[o] or uspec[u]
    return [tuple(out)]


sharding_rules["dynamic_slice"] = _resized_rule("dynamic_slice")
sharding_rules["dynamic_update_slice"] = _dynamic_update_slice_rule
sharding_rules["gather"] = _gather_rule
for _name in ("scatter", "scatter-add", "scatter-sub", "scatter-mul", "scatter-min", "scatter-max"):
    sharding_rules[_name] = _scatter_rule
