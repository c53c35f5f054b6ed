"""``xform.shard_map``: run a function once per device of a mesh on that device's blocks.

The function is traced once on block types with the mesh axes bound (so ``psum``,
``all_gather``, ``ppermute``, ``axis_index``, ... name them) and bound as ``shard_map_p``
(xform/primitives/shard_map.py). Called eagerly it runs as a partitioned ``jit`` whose
arguments and results are laid out by the specs.
"""

import functools
import weakref

from lowering import shard_map as _lowering  # noqa: F401  (registers its lowering rule)
from lowering import sharding as impl
from xform import core, tree_util
from xform.api import jit
from xform.api_sharding import broadcast_prefix
from xform.core import Jaxpr, Tracer, Var
from xform.interpreters.staging import convert_constvars, trace_to_jaxpr
from xform.primitives import collectives as coll
from xform.primitives.shard_map import (
    axis_env,
    block_aval,
    dim_sizes,
    shard_map_p,
    spec_names,
)

__all__ = ["shard_map"]

Infer = impl.jax_sharding.Infer if hasattr(impl.jax_sharding, "Infer") else object()


def _is_spec(s):
    return s is None or isinstance(s, impl.PartitionSpec)


def _check_spec(mesh, spec, aval, what, k):
    if not isinstance(spec, impl.PartitionSpec):
        raise TypeError(f"shard_map {what}[{k}] must be a PartitionSpec, got {spec!r}")
    if len(spec) > aval.ndim:
        raise ValueError(f"shard_map {what}[{k}] is {spec} with {len(spec)} entries, but the "
                         f"value has rank {aval.ndim} ({aval.str_short()})")
    for entry in spec:
        for name in () if entry is None else (entry,) if isinstance(entry, str) else entry:
            if name not in mesh.shape:
                raise ValueError(f"shard_map {what}[{k}] is {spec}, which refers to axis "
                                 f"{name!r} that is not in mesh {dict(mesh.shape)}")
    if what == "in_specs":
        for d, size in enumerate(dim_sizes(mesh, spec, aval.ndim)):
            if aval.shape[d] % size:
                raise ValueError(
                    f"shard_map in_specs[{k}] is {spec} for an argument of shape "
                    f"{aval.str_short()}, whose dimension {d} (size {aval.shape[d]}) is not "
                    f"divisible by {size}, the size of the mesh axes it is split over "
                    f"(mesh {dict(mesh.shape)})")


def _inferred_spec(x, mesh):
    s = getattr(x, "sharding", None) if not isinstance(x, Tracer) else None
    if isinstance(s, impl.NamedSharding) and s.mesh == mesh:
        return s.spec
    return impl.PartitionSpec()


def shard_map(f=None, /, *, out_specs, in_specs=Infer, mesh=None, axis_names=frozenset(),
              check_vma=True):
    """Map ``f`` over the devices of ``mesh``: each device runs ``f`` on its blocks of the
    arguments (split as ``in_specs``, a pytree prefix of the positional arguments; rank
    kept) and the results' blocks are put together as ``out_specs`` says.

    Args:
      f: the per-device function; collectives in it name mesh axes.
      mesh: a ``Mesh`` (default: the one set with ``xform.sharding.set_mesh``).
      in_specs, out_specs: PartitionSpecs (or pytree prefixes of them); ``in_specs``
        defaults to the arguments' own shardings.
      axis_names: the mesh axes the body is manual over (default: all).
      check_vma: kept for JAX's signature; see xform/primitives/shard_map.py.

    Example:
      >>> mesh = xform.make_mesh((8,), ("i",))
      >>> f = xform.shard_map(lambda x: xform.lax.psum(x, "i"), mesh=mesh,
      ...                     in_specs=P("i"), out_specs=P())
    """
    if f is None:
        return functools.partial(shard_map, out_specs=out_specs, in_specs=in_specs, mesh=mesh,
                                 axis_names=axis_names, check_vma=check_vma)
    if not callable(f):
        raise TypeError(f"shard_map requires a callable for its first argument, got {f!r}")

    @functools.wraps(f)
    def mapped(*args):
        the_mesh = mesh if mesh is not None else impl.get_mesh()
        if the_mesh is None or not getattr(the_mesh, "shape", None):
            raise ValueError("shard_map: no mesh given; pass mesh= or set one with "
                             "xform.sharding.set_mesh")
        manual = tuple(n for n in the_mesh.axis_names if not axis_names or n in axis_names)
        leaves, in_tree = tree_util.tree_flatten(args)
        avals = [core.get_aval(x) for x in leaves]
        if in_specs is Infer:
            specs_in = [_inferred_spec(x, the_mesh) for x in leaves]
        else:
            specs_in = broadcast_prefix_specs(in_specs, args, "in_specs")
        for k, (s, a) in enumerate(zip(specs_in, avals, strict=True)):
            _check_spec(the_mesh, s, a, "in_specs", k)
        store = {}

        def body(*blocks):
            out = f(*tree_util.tree_unflatten(in_tree, blocks))
            out_leaves, store["out_tree"] = tree_util.tree_flatten(out)
            return out_leaves

        block_avals = [block_aval(a, the_mesh, s) for a, s in zip(avals, specs_in, strict=True)]
        with axis_env(the_mesh, manual):
            closed = trace_to_jaxpr(body, block_avals, f"tracing {_name(f)} for shard_map")
        out_tree = store["out_tree"]
        specs_out = broadcast_prefix_specs(out_specs, tree_util.tree_unflatten(
            out_tree, [0] * out_tree.num_leaves), "out_specs")
        for k, (s, a) in enumerate(zip(specs_out, closed.out_avals, strict=True)):
            _check_spec(the_mesh, s, a, "out_specs", k)
        if check_vma:
            _check_replication(_name(f), the_mesh, manual, closed.jaxpr, specs_in, specs_out)
        jaxpr, consts = convert_constvars(closed)
        replicated = impl.PartitionSpec()
        outs = shard_map_p.bind(*consts, *leaves, jaxpr=jaxpr, mesh=the_mesh,
                                in_specs=(replicated,) * len(consts) + tuple(specs_in),
                                out_specs=tuple(specs_out), manual_axes=frozenset(manual),
                                check_vma=bool(check_vma))
        return tree_util.tree_unflatten(out_tree, outs)

    return mapped


_REDUCING = (coll.psum_p, coll.pmax_p, coll.pmin_p)


def _varying_axes(jaxpr, manual, in_vma):
    """Per output of the body, the manual axes its value may vary over (JAX's "vma"), or
    None where it is not inferred (results of equations holding jaxprs: never reported)."""
    env = dict(zip(jaxpr.invars, in_vma, strict=True))

    def read(v):
        return env.get(v, frozenset()) if isinstance(v, Var) else frozenset()

    for eqn in jaxpr.eqns:
        ins = [read(v) for v in eqn.invars]
        if any(x is None for x in ins) or any(
                isinstance(getattr(p, "jaxpr", p), Jaxpr) for p in eqn.params.values()):
            out = None
        else:
            out = frozenset().union(*ins)
            axes = set(eqn.params.get("axes", ()) or ())
            if eqn.primitive in _REDUCING:
                out = out - axes
            elif eqn.primitive is coll.axis_index_p or eqn.primitive is coll.psum_scatter_p:
                out = out | (axes & set(manual))
        for v in eqn.outvars:
            env[v] = out
    return [read(v) if isinstance(v, Var) else frozenset() for v in jaxpr.outvars]


def _check_replication(name, mesh, manual, jaxpr, specs_in, specs_out):
    """JAX's check_vma error: an out_spec that leaves out a mesh axis promises a result
    replicated over it, which a value that varies over it cannot keep."""
    in_vma = [frozenset(n for e in s for n in spec_names(e) if n in manual) for s in specs_in]
    for k, (vma, spec) in enumerate(zip(_varying_axes(jaxpr, manual, in_vma), specs_out,
                                        strict=True)):
        if vma is None:
            continue
        named = {n for e in spec for n in spec_names(e)}
        missing = [n for n in manual if n in vma and n not in named]
        if missing:
            raise ValueError(
                f"shard_map applied to the function '{name}' was given out_specs which require "
                f"replication which can't be statically inferred given the mesh:\n\nThe mesh "
                f"given has shape {tuple(mesh.shape.values())} with corresponding axis names "
                f"{tuple(mesh.axis_names)}.\n\nout_specs[{k}] is {spec} which implies that "
                f"the corresponding output value is replicated across mesh axis "
                f"{missing[0]!r}, but the value varies over {sorted(vma)}. Check if these "
                "output values are meant to be replicated over those mesh axes. If not, "
                "consider revising the corresponding out_specs entries. If so, consider "
                "disabling the check by passing the check_vma=False argument to "
                "`xform.shard_map`.")


def _name(f):
    return getattr(f, "__name__", type(f).__name__)


def broadcast_prefix_specs(prefix, tree, what):
    """One PartitionSpec per leaf of ``tree`` from pytree-prefix ``prefix`` (None: P())."""
    specs = broadcast_prefix(prefix, tree, f"shard_map {what}", is_leaf=_is_spec,
                             expected="a PartitionSpec",
                             of="the arguments" if what == "in_specs" else "the results")
    return [impl.PartitionSpec() if s is None else s for s in specs]


# --------------------------------------------------------------------------- eagerly

_eager = weakref.WeakKeyDictionary()  # body jaxpr -> {params: jitted call}


def _shard_map_eager(*args, jaxpr, mesh, in_specs, out_specs, manual_axes, check_vma):
    per_jaxpr = _eager.setdefault(jaxpr.jaxpr, {})
    key = (mesh, in_specs, out_specs, manual_axes, check_vma)
    call = per_jaxpr.get(key)
    if call is None:
        def run(*xs):
            return tuple(shard_map_p.bind(*xs, jaxpr=jaxpr, mesh=mesh, in_specs=in_specs,
                                          out_specs=out_specs, manual_axes=manual_axes,
                                          check_vma=check_vma))
        run.__name__ = "shard_map"
        call = per_jaxpr[key] = jit(
            run, in_shardings=tuple(impl.NamedSharding(mesh, s) for s in in_specs),
            out_shardings=tuple(impl.NamedSharding(mesh, s) for s in out_specs))
    return list(call(*args))


core.eager_rules[shard_map_p] = _shard_map_eager
