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

Only consulted when some operand's type has a sharding (xform/interpreters/staging.py,
``out_avals_of``), so programs without explicit shardings pay nothing. Also here: the
transpose of ``dot_general`` on sharded types, whose cotangents take their operands' types.
"""

from xform.core import ShapedArray
from xform.errors import ShardingTypeError
from xform.interpreters import ad, staging
from xform.interpreters import transpose as transpose_interp
from xform.primitives.contractions import dot_general_p
from xform.primitives.sharding import reshard_p, type_sharding

__all__ = ["ELEMENTWISE", "sharding_rules", "type_sharding", "with_shardings"]

# primitive name -> rule; see the module docstring.
sharding_rules = {}

# Primitives whose abstract evaluation already gives sharded types (a call's: those of its
# body, traced with them; ``reshard``'s: the one asked for, xform/primitives/sharding.py):
# their results keep what it gave.
_keep_rules = {"jit", "sharding_constraint", "reshard", "checkpoint", "custom_jvp_call",
               "custom_vjp_call", "cond", "while", "scan"}


def _named(like, spec):
    """A NamedSharding over the mesh of NamedSharding ``like`` (the runtime's classes)."""
    return type(like)(like.mesh, type(like.spec)(*spec))


def _spec(aval):
    s = getattr(aval, "sharding", None)
    return (None,) * len(aval.shape) if s is None else tuple(s.spec)


def with_shardings(prim, avals, out_avals, params):
    """``out_avals`` (from ``prim``'s abstract evaluation on ``avals``, some of which carry
    shardings) with the shardings of ``prim``'s sharding rule."""
    name = prim.name
    if name in _keep_rules:
        return out_avals
    rule = sharding_rules.get(name)
    like = _first_sharding(name, avals)
    if rule is None:
        specs = [None] * len(out_avals)
    else:
        specs = rule(avals, [_spec(a) for a in avals], out_avals, **params)
    outs = []
    for a, spec in zip(out_avals, specs, strict=True):
        if spec is not None:
            _check_axes_once(name, avals, a, spec)
        outs.append(_typed(a, spec, like))
    return outs


def _check_axes_once(name, avals, out, spec):
    """``ShardingTypeError`` when a result's spec names one mesh axis twice (``outer`` of a
    vector with itself, say), as JAX's."""
    axes = [n for e in spec for n in _entry_axes(e)]
    if len(set(axes)) != len(axes):
        got = ", ".join(a.str_short() for a in avals)
        shown = ShapedArray(out.shape, out.dtype, sharding=_Printed(spec)).str_short()
        raise ShardingTypeError(f"{name} operation with inputs: {got} produces an illegally "
                                f"sharded result: {shown}")


class _Printed:
    """Just enough of a sharding to print a type with ``spec`` (which no sharding holds)."""

    def __init__(self, spec):
        self.spec = spec


def _typed(aval, spec, like):
    if type(aval) is not ShapedArray:
        return aval
    sharding = None if spec is None else _named(like, spec)
    if sharding == aval.sharding:
        return aval
    return ShapedArray(aval.shape, aval.dtype, aval.weak_type, sharding)


def _first_sharding(name, avals):
    """The first of the operands' shardings; ``ShardingTypeError`` when two have different
    meshes."""
    first = None
    for a in avals:
        s = getattr(a, "sharding", None)
        if s is None:
            continue
        if first is not None and s.mesh != first.mesh:
            raise ShardingTypeError(f"{name}: the mesh of all inputs must be equal. Got one "
                                    f"mesh: {first.mesh} and another mesh: {s.mesh}")
        first = first or s
    return first


def _entry_axes(entry):
    return () if entry is None else (entry,) if isinstance(entry, str) else tuple(entry)


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
            raise ShardingTypeError(f"{name} got incompatible shardings for broadcasting: "
                                    f"{got}.")
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


def _dot_general_rule(avals, specs, out_avals, *, dimension_numbers, **params):
    lhs, rhs = specs
    (lc, rc), (lb, rb) = dimension_numbers
    lhs_batch = tuple(lhs[i] for i in lb)
    rhs_batch = tuple(rhs[i] for i in rb)
    if _clash(lhs_batch, rhs_batch):
        raise ShardingTypeError(f"dot_general requires lhs batch dimensions and rhs batch "
                                f"dimensions to have the consistent sharding, got {lhs_batch} "
                                f"and {rhs_batch}.")
    lhs_contract = tuple(lhs[i] for i in lc)
    rhs_contract = tuple(rhs[i] for i in rc)
    if _clash(lhs_contract, rhs_contract):
        raise ShardingTypeError(f"dot_general requires contracting dimensions to have "
                                f"consistent sharding, got {lhs_contract} and {rhs_contract}.")
    if not _transposing and any(a is not None and b is not None
                                for a, b in zip(lhs_contract, rhs_contract, strict=True)):
        raise ShardingTypeError(
            "Contracting dimensions are sharded and it is ambiguous how the output should be "
            "sharded. Please specify the output sharding via the `out_sharding` parameter. "
            f"Got lhs_contracting_spec={lhs_contract} and rhs_contracting_spec={rhs_contract}")
    # batch dimensions first, then lhs's free dimensions, then rhs's (dot_general's order)
    lhs_free = tuple(e for i, e in enumerate(lhs) if i not in lc and i not in lb)
    rhs_free = tuple(e for i, e in enumerate(rhs) if i not in rc and i not in rb)
    return [lhs_batch + lhs_free + rhs_free]


def _clash(a, b):
    return any(x is not None and y is not None and x != y for x, y in zip(a, b, strict=True))


sharding_rules["dot_general"] = _dot_general_rule

# True while a dot_general's transpose rule runs: its dot contracts dimensions sharded alike
# (the partitioner sums the partial products), and its result is laid out as the operand it
# is the cotangent of, as JAX's (which passes that operand's sharding as ``out_sharding``).
_transposing = False


def _typed_bilinear_transpose(rule):
    def transpose(ct, lhs, rhs, **params):
        global _transposing
        if getattr(ct, "aval", None) is None or ct.aval.sharding is None:
            return rule(ct, lhs, rhs, **params)
        before, _transposing = _transposing, True
        try:
            cts = rule(ct, lhs, rhs, **params)
        finally:
            _transposing = before
        return [c if c is None or type(c) is ad.Zero else _reshard_like(c, x.aval, ct)
                for c, x in zip(cts, (lhs, rhs), strict=True)]
    return transpose


def _reshard_like(x, aval, ct):
    """``x`` laid out as the type ``aval`` says (when it says something else)."""
    want = aval.sharding
    if want is None or want == x.aval.sharding:
        return x
    buf_sharding = getattr(ct, "sharding", None)  # a concrete cotangent knows its mesh
    mesh = buf_sharding.mesh if hasattr(buf_sharding, "mesh") else want.mesh
    return reshard_p.bind(x, sharding=type(want)(mesh, want.spec))


transpose_interp.transpose_rules[dot_general_p] = _typed_bilinear_transpose(
    transpose_interp.transpose_rules[dot_general_p])


# --------------------------------------------------------------------------- reductions


def _reduce_rule(avals, specs, out_avals, *, axes, **params):
    (spec,) = specs
    return [tuple(e for i, e in enumerate(spec) if i not in axes)] * len(out_avals)


for _name in ("reduce_sum", "reduce_prod", "reduce_max", "reduce_min", "reduce_and",
              "reduce_or", "reduce_xor", "argmax", "argmin"):
    sharding_rules[_name] = _reduce_rule


# --------------------------------------------------------------------------- structural


def _transpose_rule(avals, specs, out_avals, *, permutation):
    (spec,) = specs
    return [tuple(spec[i] for i in permutation)]


def _broadcast_in_dim_rule(avals, specs, out_avals, *, shape, broadcast_dimensions,
                           **params):
    (spec,) = specs
    out = [None] * len(shape)
    for entry, d in zip(spec, broadcast_dimensions, strict=True):
        out[d] = entry
    return [tuple(out)]


def _squeeze_rule(avals, specs, out_avals, *, dimensions):
    (spec,) = specs
    dims = {d % len(spec) for d in dimensions}
    return [tuple(e for i, e in enumerate(spec) if i not in dims)]


def _reshape_rule(avals, specs, out_avals, *, new_sizes, dimensions):
    """JAX's reshapes of a sharded type: dimensions of size 1 come and go; one dimension
    split into several (its mesh axes handed out, major first, each dividing its part), or
    several merged into one (the merged dimensions' axes, major first, none after an
    unsharded one). Anything else needs the result's sharding given."""
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
        axes = [n for e in entries for n in _entry_axes(e)]
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
        f"{tuple(new_sizes)}")


def _slice_rule(avals, specs, out_avals, **params):
    """The operand's sharding, where each sliced split dimension still divides evenly."""
    (aval,), (spec,), (out,) = avals, specs, out_avals
    mesh = aval.sharding.mesh
    for size, new, entry in zip(aval.shape, out.shape, spec, strict=True):
        parts = 1
        for n in _entry_axes(entry):
            parts *= mesh.shape[n]
        if new != size and new % parts:
            raise ShardingTypeError(
                f"slicing on sharded dims where out dim ({new}) is not divisible by mesh axes "
                f"({parts}) with spec ({entry}) is not implemented. Got input type="
                f"{aval.str_short()} and output shape={out.shape}")
    return [spec]


def _concatenate_rule(avals, specs, out_avals, **params):
    """Operands laid out alike (those without a sharding aside) give their sharding."""
    sharded = [s for a, s in zip(avals, specs, strict=True) if a.sharding is not None]
    if any(s != sharded[0] for s in sharded):
        got = ", ".join(str(s) for s in specs)
        raise ShardingTypeError(f"concatenate: all operands should have the same sharding. "
                                f"Got shardings {got}")
    return [sharded[0]]


sharding_rules["transpose"] = _transpose_rule
sharding_rules["slice"] = _slice_rule
sharding_rules["concatenate"] = _concatenate_rule
sharding_rules["broadcast_in_dim"] = _broadcast_in_dim_rule
sharding_rules["squeeze"] = _squeeze_rule
sharding_rules["reshape"] = _reshape_rule


# --------------------------------------------------------------------------- constraints


staging.sharding_rule = with_shardings
