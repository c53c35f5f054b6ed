"""``xform.shard_map``: run a function once per device of a mesh on that device's blocks.

The function is traced on block types with the mesh axes bound (so ``psum``,
``all_gather``, ``ppermute``, ``axis_index``, ... name them), once per argument signature,
and bound as ``shard_map_p`` (xform/primitives/shard_map.py). Called outside any
transformation over all the mesh's axes, it runs the body in Python on every device's blocks
as JAX's does (xform/api/shard_map_eager.py); a ``shard_map_p`` evaluated eagerly otherwise
runs as a partitioned ``jit`` whose arguments and results are laid out by the specs. With
``check_vma`` the body's types carry, as JAX's, the manual axes each value varies over
(``typeof(x).vma``, printed ``f32[4]{V:x}``; xform/primitives/shard_map.py), and an out_spec
that leaves out an axis a result may vary over is JAX's ValueError.
"""

import functools
import weakref

from lowering import shard_map as _lowering  # noqa: F401  (registers its lowering rule)
from lowering import sharding as impl
from xform import config, core, pytree
from xform.api import shard_map_eager
from xform.api.jit import jit
from xform.api.sharding import broadcast_prefix
from xform.core import ClosedJaxpr, Jaxpr, Tracer, Var
from xform.interpret.staging import convert_constvars, trace_to_jaxpr
from xform.primitives import collectives as coll
from xform.primitives.cond import cond_p
from xform.primitives.scan import scan_p
from xform.primitives.shard_map import (
    axis_env,
    block_aval,
    dim_sizes,
    shard_map_p,
    spec_names,
    spec_vma,
)
from xform.primitives.while_loop import while_p

__all__ = ["shard_map", "smap"]

Infer = impl.jax_sharding.Infer if hasattr(impl.jax_sharding, "Infer") else object()


def _is_spec(s):
    return s is None or isinstance(s, impl.PartitionSpec)


def _check_spec(mesh, spec, aval, what, k):
    if not isinstance(spec, impl.PartitionSpec):
        raise TypeError(f"shard_map {what}[{k}] must be a PartitionSpec, got {spec!r}")
    if len(spec) > aval.ndim:
        raise ValueError(
            f"shard_map {what}[{k}] is {spec} with {len(spec)} entries, but the "
            f"value has rank {aval.ndim} ({aval.str_short()})"
        )
    for entry in spec:
        for name in spec_names(entry):
            if name not in mesh.shape:
                raise ValueError(
                    f"shard_map {what}[{k}] is {spec}, which refers to axis "
                    f"{name!r} that is not in mesh {dict(mesh.shape)}"
                )
    if what == "in_specs":
        for d, size in enumerate(dim_sizes(mesh, spec, aval.ndim)):
            if aval.shape[d] % size:
                raise ValueError(
                    f"shard_map in_specs[{k}] is {spec} for an argument of shape "
                    f"{aval.str_short()}, whose dimension {d} (size {aval.shape[d]}) is not "
                    f"divisible by {size}, the size of the mesh axes it is split over "
                    f"(mesh {dict(mesh.shape)})"
                )


def _check_specs_are_the_arguments(specs, avals):
    """On a mesh of Explicit axes, all of them manual, the arguments' types hold their
    shardings and the in_specs must be those (JAX's check and message)."""
    for s, a in zip(specs, avals, strict=True):
        want = impl.PartitionSpec(*s, *(None,) * (a.ndim - len(s)))
        have = a.sharding.spec if a.sharding is not None else impl.PartitionSpec(*(None,) * a.ndim)
        if want != have:
            raise ValueError(
                f"in_specs passed to shard_map: {want} does not match the specs of the input: "
                f"{have} for arg: {a.str_short(short_dtypes=False)}. `in_specs` is an "
                "optional argument so you can omit specifying it and shard_map will infer "
                "the in_specs from the arguments. If you want to reshard your inputs, you can "
                "use `xform.reshard` on the arguments and then pass those args to shard_map."
            )


def _inferred_spec(x, mesh):
    s = getattr(x, "sharding", None) if not isinstance(x, Tracer) else None
    if isinstance(s, impl.NamedSharding) and s.mesh == mesh:
        return s.spec
    typed = core.get_aval(x).sharding  # a traced value's, in explicit mode
    if typed is not None and typed.mesh == mesh.abstract_mesh:
        return typed.spec
    return impl.PartitionSpec()


def shard_map(
    f=None, /, *, out_specs, in_specs=Infer, mesh=None, axis_names=frozenset(), check_vma=True
):
    """Map ``f`` over the devices of ``mesh``: each device runs ``f`` on its blocks of the
    arguments (split as ``in_specs``, a pytree prefix of the positional arguments; rank
    kept) and the results' blocks are put together as ``out_specs`` says.

    Args:
      f: the per-device function; collectives in it name mesh axes.
      mesh: a ``Mesh`` (default: the one set with ``xform.sharding.set_mesh``).
      in_specs, out_specs: PartitionSpecs (or pytree prefixes of them); ``in_specs``
        defaults to the arguments' own shardings.
      axis_names: the mesh axes the body is manual over (default: all).
      check_vma: as JAX's, reject out_specs that leave out a mesh axis a result may vary
        over (a ValueError, JAX's message), inferring what varies as JAX types it;
        differentiation gives JAX's values either way (xform/primitives/shard_map.py).

    Example:
      >>> mesh = xform.make_mesh((8,), ("i",))
      >>> f = xform.shard_map(lambda x: xform.lax.psum(x, "i"), mesh=mesh,
      ...                     in_specs=P("i"), out_specs=P())
    """
    if f is None:
        return functools.partial(
            shard_map,
            out_specs=out_specs,
            in_specs=in_specs,
            mesh=mesh,
            axis_names=axis_names,
            check_vma=check_vma,
        )
    if not callable(f):
        raise TypeError(f"shard_map requires a callable for its first argument, got {f!r}")

    traced = {}  # (in_tree, avals, mesh, in_specs, context) -> traced body

    @functools.wraps(f)
    def mapped(*args):
        the_mesh = mesh if mesh is not None else impl.get_mesh()
        if the_mesh is None or not getattr(the_mesh, "shape", None):
            raise ValueError(
                "shard_map: no mesh given; pass mesh= or set one with xform.sharding.set_mesh"
            )
        manual = tuple(n for n in the_mesh.axis_names if not axis_names or n in axis_names)
        leaves, in_tree = pytree.tree_flatten(args)
        avals = [core.get_aval(x) for x in leaves]
        if in_specs is Infer:
            specs_in = [_inferred_spec(x, the_mesh) for x in leaves]
        else:
            specs_in = broadcast_prefix_specs(in_specs, args, "in_specs")
        for k, (s, a) in enumerate(zip(specs_in, avals, strict=True)):
            _check_spec(the_mesh, s, a, "in_specs", k)
        if (
            in_specs is not Infer
            and len(manual) == len(the_mesh.axis_names)
            and all(t == impl.AxisType.Explicit for t in the_mesh.axis_types)
        ):
            _check_specs_are_the_arguments(specs_in, avals)
        if (
            core.trace_state.trace is core.eval_trace
            and len(manual) == len(the_mesh.axis_names)
            and isinstance(the_mesh, impl.Mesh)
            and not any(isinstance(x, Tracer) for x in leaves)
        ):  # as JAX's: the body runs in Python on every device's blocks
            return _run_eagerly(f, the_mesh, leaves, in_tree, specs_in, out_specs, check_vma)
        # A cached body keeps calls from tracing and lowering again; none whose consts are
        # outer tracers.
        key = (
            in_tree,
            tuple(avals),
            the_mesh,
            tuple(specs_in),
            config.trace_context(),
            core.trace_state.axis_env,
        )
        hit = traced.get(key)
        if hit is None:
            hit = _trace_body(f, the_mesh, manual, in_tree, avals, specs_in, out_specs, check_vma)
            if not any(isinstance(c, Tracer) for c in hit[1]):
                traced[key] = hit
        jaxpr, consts, out_tree, specs_out = hit
        replicated = impl.PartitionSpec()
        outs = shard_map_p.bind(
            *consts,
            *leaves,
            jaxpr=jaxpr,
            mesh=the_mesh,
            in_specs=(replicated,) * len(consts) + tuple(specs_in),
            out_specs=tuple(specs_out),
            manual_axes=frozenset(manual),
            check_vma=bool(check_vma),
        )
        return pytree.tree_unflatten(out_tree, outs)

    return mapped


def smap(f=None, /, *, in_axes=Infer, out_axes, axis_name):
    """``shard_map`` over one mesh axis of the current mesh (``xform.sharding.set_mesh``),
    with vmap-style axes: ``f`` is manual over ``axis_name``, its arguments split along
    ``in_axes`` and its results put together along ``out_axes`` (an int or None each, or
    containers of them; ``in_axes`` may be left out on an Explicit axis).

    Example:
      >>> with xform.sharding.set_mesh(xform.make_mesh((8,), ("i",))):
      ...     y = xform.smap(lambda x: x * 2, in_axes=0, out_axes=0, axis_name="i")(x)
    """
    if f is None:
        return functools.partial(smap, in_axes=in_axes, out_axes=out_axes, axis_name=axis_name)
    if isinstance(axis_name, (list, tuple)):
        raise TypeError(f"smap axis_name should be a `str` or a `Hashable`, but got {axis_name}")
    if in_axes is not None and in_axes is not Infer and not isinstance(in_axes, (int, tuple)):
        raise TypeError(
            "smap in_axes must be an int, None, xform.sharding.Infer, or a tuple of entries "
            f"corresponding to the positional arguments passed to the function, but got {in_axes}."
        )

    def specs(axes, what):
        leaves = pytree.tree_leaves(axes)
        if not all(isinstance(a, int) for a in leaves):
            raise TypeError(
                f"smap {what} must be an int, None, or (nested) container with those types "
                f"as leaves, but got {axes}."
            )
        return pytree.tree_map(
            lambda a: (
                impl.PartitionSpec() if a is None else impl.PartitionSpec(*[None] * a, axis_name)
            ),
            axes,
            is_leaf=lambda a: a is None,
        )

    in_specs = Infer if in_axes is Infer else specs(in_axes, "in_axes")
    return shard_map(
        f,
        mesh=None,
        in_specs=in_specs,
        out_specs=specs(out_axes, "out_axes"),
        axis_names=frozenset({axis_name}),
        check_vma=True,
    )


def _run_eagerly(f, mesh, leaves, in_tree, specs_in, out_specs, check_vma):
    out, results = shard_map_eager.run(f, mesh, leaves, in_tree, specs_in, check_vma)
    specs_out = broadcast_prefix_specs(out_specs, out, "out_specs")
    for k, (y, spec) in enumerate(zip(results, specs_out, strict=True)):
        _check_spec(mesh, spec, y.aval, "out_specs", k)
        named = {n for e in spec for n in spec_names(e)}
        if check_vma and not y.aval.vma <= named:
            raise replication_error(f, mesh, y.aval.vma, named, spec)
    outs = zip(specs_out, results, strict=True)
    assembled = [shard_map_eager.assemble(mesh, s, y) for s, y in outs]
    return pytree.tree_unflatten(pytree.tree_structure(out), assembled)


def _trace_body(f, mesh, manual, in_tree, avals, specs_in, out_specs, check_vma):
    """``f`` traced on its blocks: ``(jaxpr, consts, out_tree, specs_out)``."""
    store = {}

    def body(*blocks):
        out = f(*pytree.tree_unflatten(in_tree, blocks))
        out_leaves, store["out_tree"] = pytree.tree_flatten(out)
        if not check_vma:
            return out_leaves
        # As JAX's: a result is cast to vary over the manual axes its out_spec splits it over.
        specs = broadcast_prefix_specs(out_specs, out, "out_specs")
        return [_vary(x, spec_vma(s, manual)) for x, s in zip(out_leaves, specs, strict=True)]

    # With check_vma, as JAX's: a block varies over the manual axes its in_spec splits it over.
    block_avals = [
        block_aval(a, mesh, s, spec_vma(s, manual) if check_vma else frozenset())
        for a, s in zip(avals, specs_in, strict=True)
    ]
    with axis_env(mesh, manual, check_vma):
        closed = trace_to_jaxpr(body, block_avals, f"tracing {_name(f)} for shard_map")
    out_tree = store["out_tree"]
    out_shape = pytree.tree_unflatten(out_tree, [0] * out_tree.num_leaves)
    specs_out = tuple(broadcast_prefix_specs(out_specs, out_shape, "out_specs"))
    for k, (s, a) in enumerate(zip(specs_out, closed.out_avals, strict=True)):
        _check_spec(mesh, s, a, "out_specs", k)
    if check_vma:
        _check_replication(f, mesh, manual, closed.jaxpr, specs_in, specs_out)
    jaxpr, consts = convert_constvars(closed)
    return jaxpr, consts, out_tree, specs_out


_REDUCING = (coll.psum_p, coll.pmax_p, coll.pmin_p)
# As JAX's, these make their operand vary over their axes first (its insert_collective_pvary)
# and leave it so; axis_index varies over its axes by definition.
_VARYING = (
    coll.ppermute_p,
    coll.all_gather_p,
    coll.psum_scatter_p,
    coll.all_to_all_p,
    coll.axis_index_p,
    coll.pvary_p,
)


def _varying_axes(jaxpr, manual, in_vma):
    """Per output of ``jaxpr``, the manual axes its value may vary over (JAX's "vma"),
    given those of its inputs; through cond, scan, while and calls (jit, remat, custom rules)
    as JAX types them, and as the union of the inputs' through anything else."""
    manual = frozenset(manual)
    env = dict(zip(jaxpr.invars, in_vma, strict=True))

    def read(v):
        return env.get(v, frozenset()) if isinstance(v, Var) else frozenset()

    for eqn in jaxpr.eqns:
        ins = [read(v) for v in eqn.invars]
        outs = _eqn_varying_axes(eqn, ins, manual)
        for v, vma in zip(eqn.outvars, outs, strict=True):
            env[v] = vma
    return [read(v) for v in jaxpr.outvars]


def _open(j):
    return j.jaxpr if isinstance(j, ClosedJaxpr) else j


def _eqn_varying_axes(eqn, ins, manual):
    prim, params, n_out = eqn.primitive, eqn.params, len(eqn.outvars)
    axes = frozenset(params.get("axes", ()) or ()) & manual
    union = frozenset().union(*ins)
    if prim in _REDUCING:
        return [union - axes] * n_out
    if prim in _VARYING:
        return [union | axes] * n_out
    if prim is cond_p:  # as JAX's: the branches' results, whatever the predicate's
        branches = [_varying_axes(_open(b), manual, ins[1:]) for b in params["branches"]]
        return [frozenset().union(*per) for per in zip(*branches, strict=True)]
    if prim is scan_p:
        n_consts, n_carry = params["num_consts"], params["num_carry"]
        body = _open(params["jaxpr"])
        consts, carry, xs = (
            ins[:n_consts],
            ins[n_consts : n_consts + n_carry],
            ins[n_consts + n_carry :],
        )
        while True:  # the carries' vma grows to a fixed point (a finite lattice)
            outs = _varying_axes(body, manual, consts + carry + xs)
            grown = [c | o for c, o in zip(carry, outs[:n_carry], strict=True)]
            if grown == carry:
                return grown + outs[n_carry:]
            carry = grown
    if prim is while_p:
        cn, bn = params["cond_nconsts"], params["body_nconsts"]
        body = _open(params["body_jaxpr"])
        bconsts, carry = ins[cn : cn + bn], ins[cn + bn :]
        while True:  # as JAX's: the predicate's vma does not reach the carries
            grown = [
                c | o
                for c, o in zip(carry, _varying_axes(body, manual, bconsts + carry), strict=True)
            ]
            if grown == carry:
                return carry
            carry = grown
    calls = [_open(j) for j in params.values() if isinstance(j, (Jaxpr, ClosedJaxpr))]
    if len(calls) == 1 and len(calls[0].invars) == len(ins) and len(calls[0].outvars) == n_out:
        return _varying_axes(calls[0], manual, ins)
    return [union] * n_out


def _check_replication(f, mesh, manual, jaxpr, specs_in, specs_out):
    """JAX's check_vma error: an out_spec that leaves out a mesh axis promises a result
    replicated over it, which a value that may vary over it cannot keep. As JAX 0.10.2's, it
    names the first such output's spec only."""
    in_vma = [frozenset(n for e in s for n in spec_names(e) if n in manual) for s in specs_in]
    for vma, spec in zip(_varying_axes(jaxpr, manual, in_vma), specs_out, strict=True):
        named = {n for e in spec for n in spec_names(e)}
        if not vma <= named:
            raise replication_error(f, mesh, vma, named, spec)


def replication_error(f, mesh, vma, named, spec):
    """JAX's ValueError for out_spec ``spec`` (naming mesh axes ``named``) of a result that
    may vary over mesh axes ``vma``."""
    unmentioned = [n for n in mesh.axis_names if n not in named]
    if len(unmentioned) > 1:
        need, got, diff = (
            ",".join(n for n in mesh.axis_names if n in group)
            for group in (named, vma, set(unmentioned) & vma)
        )
        why = (
            f"only varying across mesh axes {{{need}}} and not {{{diff}}}, but it was "
            f"inferred to be possibly varying over {{{got}}}"
        )
    else:
        why = (
            f"replicated across mesh axis '{unmentioned[0]}', but could not infer "
            "replication over any axes"
        )
    return ValueError(
        f"shard_map applied to the function '{_name(f)}' was given out_specs which "
        "require replication which can't be statically inferred given the mesh:\n\nThe "
        f"mesh given has shape {tuple(mesh.shape.values())} with corresponding axis names "
        f"{tuple(mesh.axis_names)}.\n\nout_specs is {spec} which implies that the "
        f"corresponding output value is {why}\n\nCheck if these output values are meant "
        "to be replicated over those mesh axes. If not, consider revising the corresponding "
        "out_specs entries. If so, consider disabling the check by passing the "
        "check_vma=False argument to `xform.shard_map`."
    )


def _vary(x, vma):
    missing = vma - core.get_aval(x).vma
    return coll.pvary_p.bind(x, axes=core.vma_order(missing)) if missing else x


def _name(f):
    return getattr(f, "__name__", type(f).__name__)


def broadcast_prefix_specs(prefix, tree, what):
    """One PartitionSpec per leaf of ``tree`` from pytree-prefix ``prefix`` (None: P())."""
    specs = broadcast_prefix(
        prefix,
        tree,
        f"shard_map {what}",
        is_leaf=_is_spec,
        expected="a PartitionSpec",
        of="the arguments" if what == "in_specs" else "the results",
    )
    return [impl.PartitionSpec() if s is None else s for s in specs]


# --------------------------------------------------------------------------- eagerly

_eager = weakref.WeakKeyDictionary()  # body jaxpr -> {params: jitted call}


def _shard_map_eager(*args, jaxpr, mesh, in_specs, out_specs, manual_axes, check_vma):
    per_jaxpr = _eager.setdefault(jaxpr.jaxpr, {})
    key = (mesh, in_specs, out_specs, manual_axes, check_vma)
    call = per_jaxpr.get(key)
    if call is None:

        def run(*xs):
            return tuple(
                shard_map_p.bind(
                    *xs,
                    jaxpr=jaxpr,
                    mesh=mesh,
                    in_specs=in_specs,
                    out_specs=out_specs,
                    manual_axes=manual_axes,
                    check_vma=check_vma,
                )
            )

        run.__name__ = "shard_map"
        call = per_jaxpr[key] = jit(
            run,
            in_shardings=tuple(impl.NamedSharding(mesh, s) for s in in_specs),
            out_shardings=tuple(impl.NamedSharding(mesh, s) for s in out_specs),
        )
    return list(call(*args))


core.eager_rules[shard_map_p] = _shard_map_eager
