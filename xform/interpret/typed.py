"""Types that carry more than a shape and a dtype: shardings (JAX's explicit sharding mode)
and varying manual axes (``shard_map``'s ``check_vma``), given to a staged equation's
results from its operands' types.

Staging (``staging.out_avals_of``) consults this module only when an operand's type carries
one of them, so other programs pay nothing. The rules are the primitives': the primitives
layer registers them here, keyed by primitive as every rule table is.

- ``sharding_rules[name] = rule`` with ``rule(avals, specs, out_avals, **params) -> [spec or
  None per result]``: ``specs`` are the operands' PartitionSpec entries, one per dimension
  (an operand without a sharding counts as replicated); raises ``ShardingTypeError`` where
  JAX's do (xform/primitives/sharding_rules.py). A primitive without a rule gives results
  without a sharding; those in ``keeps_sharding`` (calls, control flow, ``reshard``) keep the
  types their abstract evaluation gave.
- ``vma_rules[prim] = rule`` with ``rule(avals, out_avals, params) -> out_avals``; without a
  rule, results vary over the union of the operands' axes (a call or scan: its body's);
  ``vma_typed_by_rule`` holds the primitives (collectives) whose abstract evaluation types
  them already. ``vary`` is the primitive that makes a value vary over more axes (``pvary``,
  registered where it is defined): staging records it on operands that vary over fewer axes
  than the union, as JAX's primitives' wrappers do.
"""

from xform import core
from xform.core import ShapedArray
from xform.errors import ShardingTypeError

sharding_rules = {}  # primitive name -> rule
keeps_sharding = set()  # primitive names
vma_rules = {}  # primitive -> rule
vma_typed_by_rule = set()  # primitives
vary = None  # the pvary primitive (xform/primitives/collectives.py)


def spec_names(entry):
    """The mesh axes a PartitionSpec entry splits its dimension over: none for ``None`` and
    for ``P.UNCONSTRAINED`` (the partitioner's choice). PartitionSpec keeps an entry of
    several axes as a tuple."""
    if isinstance(entry, str):
        return (entry,)
    return entry if isinstance(entry, tuple) else ()


# --------------------------------------------------------------------------- shardings


def named(like, spec):
    """A NamedSharding over the mesh of NamedSharding ``like`` (the runtime's classes)."""
    return type(like)(like.mesh, type(like.spec)(*spec))


def spec_of(aval):
    s = getattr(aval, "sharding", None)
    return (None,) * len(aval.shape) if s is None else tuple(s.spec)


def with_shardings(prim, avals, out_avals, params):
    """``out_avals`` (from ``prim``'s abstract evaluation on ``avals``, some of which carry
    shardings) with the shardings of ``prim``'s sharding rule."""
    name = prim.name
    if name in keeps_sharding:
        return out_avals
    rule = sharding_rules.get(name)
    like = _first_sharding(name, avals)
    if rule is None:
        specs = [None] * len(out_avals)
    else:
        specs = rule(avals, [spec_of(a) for a in avals], out_avals, **params)
    outs = []
    for a, spec in zip(out_avals, specs, strict=True):
        if spec is not None:
            _check_axes_once(name, avals, a, spec)
        outs.append(_typed(a, spec, like))
    return outs


def _check_axes_once(name, avals, out, spec):
    """``ShardingTypeError`` when a result's spec names one mesh axis twice (``outer`` of a
    vector with itself, say), as JAX's."""
    axes = [n for e in spec for n in spec_names(e)]
    if len(set(axes)) != len(axes):
        got = ", ".join(a.str_short() for a in avals)
        shown = ShapedArray(out.shape, out.dtype, sharding=_Printed(spec)).str_short()
        raise ShardingTypeError(
            f"{name} operation with inputs: {got} produces an illegally sharded result: {shown}"
        )


class _Printed:
    """Just enough of a sharding to print a type with ``spec`` (which no sharding holds)."""

    def __init__(self, spec):
        self.spec = spec


def _typed(aval, spec, like):
    if type(aval) is not ShapedArray:
        return aval
    sharding = None if spec is None else named(like, spec)
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
            raise ShardingTypeError(
                f"{name}: the mesh of all inputs must be equal. Got one "
                f"mesh: {first.mesh} and another mesh: {s.mesh}"
            )
        first = first or s
    return first


# --------------------------------------------------------------------------- varying axes


def with_vma(prim, avals, out_avals, params):
    """``out_avals`` with the varying axes of ``prim``'s results: its rule's, or the union of
    its operands' (a call's or scan's: its body's)."""
    if prim in vma_typed_by_rule:
        return out_avals
    rule = vma_rules.get(prim)
    if rule is not None:
        return rule(avals, out_avals, params)
    subs = list(core.subjaxprs(params))
    if len(subs) == 1 and len(subs[0].outvars) == len(out_avals):  # scan, calls
        vmas = [a.vma for a in subs[0].out_avals]
    else:
        vmas = [frozenset().union(*(a.vma for a in avals))] * len(out_avals)
    return [a.update(vma=v) for a, v in zip(out_avals, vmas, strict=True)]


def cast_to_vary(trace, prim, invars, params, out_avals, out_avals_of):
    """Operands that vary over fewer axes than the union of all made to vary over it, by
    ``vary`` equations recorded on ``trace`` (a staging trace); returns the new operands and
    the results' types on them."""
    if prim in vma_typed_by_rule or len(invars) < 2 or any(core.subjaxprs(params)):
        return invars, out_avals
    union = frozenset().union(*(v.aval.vma for v in invars))
    if all(v.aval.vma == union for v in invars):
        return invars, out_avals
    cast = []
    for v in invars:
        missing = union - v.aval.vma
        if missing:
            axes = core.vma_order(missing)
            (out,) = trace._record(vary, [v], {"axes": axes}, [v.aval.update(vma=union)])
            cast.append(out.jaxpr_var)
        else:
            cast.append(v)
    return cast, out_avals_of(prim, [v.aval for v in cast], params)
