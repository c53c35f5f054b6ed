"""``with_sharding_constraint`` and ``reshard``: the identity on values, a layout for the
partitioner.

Inside a partitioned ``jit`` it lowers to ``sdy.sharding_constraint`` (JAX 0.10.2's
lowering); in a program on one device it is the identity. Eagerly it lays the array out as
asked (``device_put``). Linear: its tangent and cotangent carry the same constraint.

``reshard_p`` is ``reshard`` in a traced function (JAX's ``reshard``): the same layout, and
the result's type carries the sharding asked for (explicit mode); its cotangent goes back to
the operand's sharding.
"""

from xform import core, meshes, pytree
from xform.core import ShapedArray
from xform.interpret import ad, batching
from xform.interpret import transpose as transpose_interp
from xform.interpret.typed import spec_names  # noqa: F401  (sharding's name too)
from xform.primitives.base import standard_primitive

# (with_sharding_constraint's public form, which takes PartitionSpecs of the current mesh
# too, is xform/api/sharding.py's)
__all__ = [
    "sharding_constraint_p",
    "reshard_p",
    "out_sharding_param",
    "full_spec",
    "typed",
    "bind_laid_out",
    "spec_names",
]


def with_sharding_constraint(x, shardings):
    """Constrain the layout of each array of pytree ``x`` to the matching sharding of
    ``shardings`` (a NamedSharding, or a pytree prefix of ``x`` of them), as JAX's."""
    leaves, tree = pytree.tree_flatten(x)
    if hasattr(shardings, "spec") or shardings is None:
        per_leaf = [shardings] * len(leaves)
    else:
        counted = pytree.tree_map(
            lambda s, sub: (s, len(pytree.tree_leaves(sub))),
            shardings,
            x,
            is_leaf=lambda s: s is None or hasattr(s, "spec"),
        )
        per_leaf = [s for s, n in pytree.tree_leaves(counted, is_leaf=_is_pair) for _ in range(n)]
    outs = []
    for leaf, sharding in zip(leaves, per_leaf, strict=True):
        if sharding is None:
            outs.append(leaf)
            continue
        aval = core.get_aval(leaf)
        _check(sharding, aval)
        outs.append(
            sharding_constraint_p.bind(leaf, sharding=sharding, origin="with_sharding_constraint")
        )
    return pytree.tree_unflatten(tree, outs)


def _is_pair(p):
    return (
        type(p) is tuple
        and len(p) == 2
        and type(p[1]) is int
        and (p[0] is None or hasattr(p[0], "spec"))
    )


def _check(sharding, aval):
    spec = getattr(sharding, "spec", None)
    if spec is None:
        raise TypeError(
            "with_sharding_constraint: shardings must be NamedShardings, got "
            f"{type(sharding).__name__}"
        )
    mesh = sharding.mesh
    types = dict(zip(mesh.axis_names, getattr(mesh, "axis_types", ()), strict=False))
    named = [n for entry in spec for n in spec_names(entry)]
    if any(getattr(types.get(n), "name", "") == "Explicit" for n in named):
        raise ValueError(
            f"The spec of NamedSharding passed to with_sharding_constraint can "
            f"only refer to Auto axes of the mesh. Got spec={spec} and "
            f"mesh={mesh}. You probably meant to use `reshard` API?"
        )
    check_spec_fits("with_sharding_constraint", mesh, spec, aval)


def check_spec_fits(what, mesh, spec, aval):
    """``ValueError`` naming ``what`` unless PartitionSpec ``spec`` fits an array of type
    ``aval`` on ``mesh``: at most one entry per dimension, axes the mesh has, and each
    dimension divisible by the product of its axes' sizes."""
    if len(spec) > aval.ndim:
        raise ValueError(
            f"{what}: one of the arguments has rank {aval.ndim} "
            f"({aval.str_short()}) but its PartitionSpec {spec} has {len(spec)} "
            "entries; a spec may name at most one entry per dimension"
        )
    for dim, entry in enumerate(spec):
        names = spec_names(entry)
        size = 1
        for name in names:
            if name not in mesh.shape:
                raise ValueError(
                    f"{what}: resource axis {name!r} of PartitionSpec {spec} is "
                    f"not found in mesh {dict(mesh.shape)}"
                )
            size *= mesh.shape[name]
        if aval.shape[dim] % size:
            raise ValueError(
                f"{what}: one of the arguments has shape {aval.str_short()} "
                f"but dimension {dim} (size {aval.shape[dim]}) is not divisible "
                f"by {size}, the size of mesh axes {names} of {spec}"
            )


def typed_sharding_of(mesh, spec, ndim):
    """``type_sharding`` of an array laid out over concrete ``mesh`` as ``spec``."""
    return type_sharding(meshes.NamedSharding(mesh, spec), ndim)


def type_sharding(sharding, ndim):
    """The sharding an array laid out as ``sharding`` carries in its type (explicit
    sharding mode, xform/primitives/sharding_rules.py): a NamedSharding over the mesh's
    abstract mesh, one spec entry per dimension, naming only the mesh's Explicit axes (the
    others are the partitioner's, as in JAX's types), when it has some; else None (none in
    the type)."""
    mesh = getattr(sharding, "mesh", None)
    explicit = (
        {
            n
            for n, t in zip(mesh.axis_names, mesh.axis_types, strict=True)
            if getattr(t, "name", "") == "Explicit"
        }
        if mesh is not None
        else ()
    )
    if not explicit:
        return None
    spec = tuple(sharding.spec) + (None,) * (ndim - len(sharding.spec))
    if len(explicit) < len(mesh.axis_names):
        spec = tuple(_only(entry, explicit) for entry in spec)
    return type(sharding)(mesh.abstract_mesh, type(sharding.spec)(*spec))


def _only(entry, axes):
    """Spec ``entry`` naming only the mesh axes in ``axes``."""
    names = tuple(n for n in spec_names(entry) if n in axes)
    return None if not names else names[0] if len(names) == 1 else names


def out_sharding_param(sharding, what, ndim):
    """An ``out_sharding=`` argument (of ``lax.reshape``, ``lax.dot_general``...) for a result
    of rank ``ndim`` as the param its equation carries: a NamedSharding over an abstract mesh,
    a PartitionSpec being one over the current mesh (its spec as given, as JAX's)."""
    s = resolve_sharding(sharding, what)
    if len(s.spec) > ndim:
        raise ValueError(
            f"{what}: out_sharding {s.spec} has {len(s.spec)} entries for a result of rank {ndim}"
        )
    return s


def full_spec(sharding, ndim):
    """``sharding``'s spec with one entry per dimension of a rank-``ndim`` array."""
    return tuple(sharding.spec) + (None,) * (ndim - len(sharding.spec))


def typed(aval, sharding):
    """``aval`` with the type a sharding param (``out_sharding=``) gives it; None: as it is.
    (For the abstract evaluation of the primitives that take one: their results have it
    whatever their operands' types.)"""
    if sharding is None:
        return aval
    return ShapedArray(
        aval.shape, aval.dtype, aval.weak_type, type_sharding(sharding, len(aval.shape))
    )


def bind_laid_out(prim, operands, params, name, sharding):
    """``prim.bind(*operands, **params)`` with sharding param ``name`` (None: without it).
    Eager on operands of no sharding (computed on one device), the result is laid out as it
    says after, by ``lay_out``."""
    if sharding is None:
        return prim.bind(*operands, **params)
    if core.trace_state.trace is not core.eval_trace or any(
        core.get_aval(x).sharding is not None for x in operands
    ):
        return prim.bind(*operands, **params, **{name: sharding})
    return lay_out(prim.bind(*operands, **params), sharding)


def resolve_sharding(sharding, what):
    """``out_sharding=`` of ``what`` as the sharding a type carries, as JAX's
    ``canonicalize_sharding``: over the abstract mesh; a PartitionSpec over the current one."""
    if isinstance(sharding, meshes.PartitionSpec):
        mesh = meshes.get_abstract_mesh()
        if mesh.empty:
            raise ValueError(
                "Using PartitionSpec when you are not under a mesh context is not "
                "allowed. Please pass a NamedSharding instance or enter into a "
                f"mesh context via `jax.set_mesh`. Got {sharding}"
            )
        return meshes.NamedSharding(mesh, sharding)
    if not isinstance(sharding, meshes.NamedSharding):
        raise TypeError(
            f"`out_sharding` argument of {what} only supports instances of "
            f"`NamedSharding` or `PartitionSpec`. Got {sharding} of type: "
            f"{type(sharding)}"
        )
    return meshes.NamedSharding(sharding.mesh.abstract_mesh, sharding.spec)


def lay_out(x, sharding):
    """Concrete ``x`` laid out as ``sharding`` (a param's, over an abstract mesh): over the
    current mesh where that is its mesh (``reshard``'s eager rule puts it there); else left as
    it is (no devices to put it on)."""
    mesh = meshes.get_mesh()
    if mesh is None or not mesh.shape or mesh.abstract_mesh != sharding.mesh:
        return x
    return reshard_p.bind(x, sharding=meshes.NamedSharding(mesh, sharding.spec))


def _sharding_constraint_abstract_eval(x, *, sharding, origin):
    # ``reshard`` or ``device_put`` in a traced function: the result's type has the sharding
    # asked for (a constraint over Auto axes, with_sharding_constraint's, leaves the type as
    # it is); a jit's in/out_shardings lay its arguments and results out but do not type
    # them, as JAX's (its jit equation keeps them as params; its body's types are the
    # arguments').
    new = type_sharding(sharding, x.ndim)
    if new is None or new == x.sharding or origin == "jit":
        return [x]
    return [x.update(sharding=new)]


# ``origin``: what put the constraint there, "with_sharding_constraint", "device_put" or
# "jit" (a jit's in/out_shardings, under a transformation). Under vmap the batch dimension
# of with_sharding_constraint's is left to the partitioner (``P.UNCONSTRAINED``, as JAX's);
# the others' is not split (JAX's batched jit and device_put keep theirs closed).
sharding_constraint_p = standard_primitive(
    "sharding_constraint", _sharding_constraint_abstract_eval
)
ad.defjvp_linear(sharding_constraint_p)


def _sharding_constraint_transpose(ct, x, **params):
    return [sharding_constraint_p.bind(ct, **params)]


transpose_interp.transpose_rules[sharding_constraint_p] = _sharding_constraint_transpose


def _batched(sharding, ndim, d, axis, what, unsplit=None):
    """``sharding`` of the per-example array, for the batch of rank ``ndim`` mapped at ``d``
    by vmap ``axis``: the batch dimension over vmap's ``spmd_axis_name`` if it has one, else
    ``unsplit`` (None, or ``P.UNCONSTRAINED``)."""
    spec = list(sharding.spec) + [None] * (d - len(sharding.spec))
    spmd = axis.spmd_name
    if spmd is not None:
        if set(spmd) & {n for entry in spec for n in spec_names(entry)}:
            raise ValueError(
                f"vmap spmd_axis_name {spmd} cannot appear in {what} spec, but "
                f"got spec {sharding.spec}"
            )
        unsplit = spmd[0] if len(spmd) == 1 else spmd
    spec.insert(d, unsplit)
    if unsplit is type(sharding.spec).UNCONSTRAINED:
        spec += [None] * (ndim - len(spec))  # as JAX's spec: every dimension named
    return type(sharding)(sharding.mesh, type(sharding.spec)(*spec))


def _sharding_constraint_batch(axis, args, dims, *, sharding, origin):
    (x,), (d,) = args, dims
    unsplit = type(sharding.spec).UNCONSTRAINED if origin == "with_sharding_constraint" else None
    new = _batched(sharding, x.ndim, d, axis, origin, unsplit)
    return [sharding_constraint_p.bind(x, sharding=new, origin=origin)], [d]


batching.batch_rules[sharding_constraint_p] = _sharding_constraint_batch


def _reshard_abstract_eval(x, *, sharding):
    # The type carries the sharding asked for; none over a mesh without Explicit axes (into
    # an ``auto_axes`` region, or out of an ``explicit_axes`` one).
    new = type_sharding(sharding, x.ndim)
    return [x if new == x.sharding else ShapedArray(x.shape, x.dtype, x.weak_type, new)]


reshard_p = standard_primitive("reshard", _reshard_abstract_eval)
ad.defjvp_linear(reshard_p)


def _reshard_transpose(ct, x, *, sharding):
    src = x.aval.sharding  # the operand's type: its cotangent is laid out as it was
    if src is None:
        return [ct]
    back = type(sharding)(sharding.mesh, src.spec)
    return [reshard_p.bind(ct, sharding=back)]


transpose_interp.transpose_rules[reshard_p] = _reshard_transpose


def _reshard_batch(axis, args, dims, *, sharding):
    (x,), (d,) = args, dims
    return [reshard_p.bind(x, sharding=_batched(sharding, x.ndim, d, axis, "reshard"))], [d]


batching.batch_rules[reshard_p] = _reshard_batch
