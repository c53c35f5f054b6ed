"""``vmap``: map a function over an axis of its arguments, as one vectorized program.

Pytrees and ``in_axes``/``out_axes`` prefixes are handled here; the batching interpreter
(``xform.interpret.batching``) works on flat lists.
"""

import functools
import inspect

import numpy as np

from xform import core, dtypes, pytree
from xform.api.autodiff import _as_output
from xform.interpret import batching
from xform.interpret.batching import AxisData, not_mapped
from xform.primitives import refs
from xform.primitives.reductions import reduce_sum
from xform.runtime.jit import arg_avals, flatten_fun, fun_name
from xform.traceback_util import api_boundary


def _check_axis_spec(spec, what):
    if spec is None or (isinstance(spec, (int, np.integer)) and not isinstance(spec, bool)):
        return
    of = "arguments" if what == "in_axes" else "outputs"
    raise TypeError(
        f"vmap {what} must be an int, None, or a (nested) tuple/list/dict of "
        f"them matching the structure of the {of}, but got {spec!r}"
    )


def _broadcast_prefix(prefix, tree, what):
    """One axis spec per leaf of ``tree``, from ``prefix``, a pytree prefix of it."""
    specs = []
    try:
        pytree.tree_map(
            lambda spec, sub: specs.extend([spec] * len(pytree.tree_leaves(sub))),
            prefix,
            tree,
            is_leaf=lambda x: x is None,
        )
    except ValueError as e:
        raise ValueError(
            f"vmap {what} specification must be a tree prefix of the "
            f"corresponding value, got specification {prefix!r} for value tree "
            f"{pytree.tree_structure(tree)}:\n{e}"
        ) from None
    for spec in specs:
        _check_axis_spec(spec, what)
    return specs


def _leaf_paths(tree):
    return [pytree.keystr(k) for k, _ in pytree.tree_flatten_with_path(tree)[0]]


def _arg_names(fun, n):
    """Parameter names of ``fun`` for its first ``n`` positional arguments, when knowable."""
    try:
        params = list(inspect.signature(fun).parameters.values())
    except (TypeError, ValueError):
        return None
    if len(params) < n or any(
        p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params[:n]
    ):
        return None
    return [p.name for p in params[:n]]


def vmap(
    fun, in_axes=0, out_axes=0, axis_name=None, axis_size=None, spmd_axis_name=None, sum_match=False
):
    """Vectorize ``fun`` over an axis of its arguments.

    Args:
      fun: a function of arrays (pytrees) returning arrays (pytrees).
      in_axes: for each positional argument, the axis to map over: an int (negative counts
        from the end), None (not mapped), or a pytree prefix of the argument with those at
        its leaves. An int or None applies to all arguments; keyword arguments are mapped
        over axis 0.
      out_axes: where the mapped axis goes in each output (a pytree prefix of the output);
        None for outputs that do not vary along it.
      axis_name: a name for the mapped axis, for collectives (``psum(x, axis_name)``).
      axis_size: the size of the axis, needed only when no argument is mapped.
      spmd_axis_name: the mesh axis (or tuple of axes) the mapped axis is split over in a
        partitioned program, as JAX's: ``with_sharding_constraint`` and ``reshard`` under
        the vmap split the batch dimension over it, and a ``shard_map`` gives each device
        its share of the batch (its body varies over those axes).
      sum_match: an output that varies along the mapped axis but whose ``out_axes`` is None
        is summed over that axis (instead of being an error), as JAX's ``sum_match``.

    Returns:
      A function with the signature of ``fun`` whose outputs carry the mapped axis.

    Example:
      >>> xform.vmap(jnp.dot, in_axes=(0, None))(jnp.ones((8, 3)), jnp.ones(3)).shape
      (8,)
    """
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)
    if isinstance(in_axes, bool) or not (in_axes is None or isinstance(in_axes, (int, tuple))):
        raise TypeError(
            "vmap in_axes must be an int, None, or a tuple of entries corresponding "
            f"to the positional arguments passed to the function, but got "
            f"{in_axes!r}."
        )
    if spmd_axis_name is not None and not isinstance(spmd_axis_name, tuple):
        spmd_axis_name = (spmd_axis_name,)
    name = fun_name(fun)

    @functools.wraps(fun)
    @api_boundary
    def vmapped(*args, **kwargs):
        if isinstance(in_axes, tuple) and len(in_axes) != len(args):
            raise ValueError(
                "vmap in_axes must be an int, None, or a tuple of entries "
                "corresponding to the positional arguments passed to the function, "
                f"but got len(in_axes)={len(in_axes)}, len(args)={len(args)}"
            )
        leaves, in_tree = pytree.tree_flatten((args, kwargs))
        arg_specs = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args)
        specs = _broadcast_prefix((arg_specs, 0), (args, kwargs), "in_axes")
        paths = _leaf_paths((args, kwargs))
        store = {}
        flat = flatten_fun(fun, in_tree, store)
        flat, leaves, specs, paths, boxed = _ref_arguments(fun, args, flat, leaves, specs, paths)
        try:
            avals = arg_avals(leaves, in_tree, fun)
        except TypeError:
            flat, leaves, specs, paths = _pass_unmapped_objects(flat, leaves, specs, paths)
            avals = (
                arg_avals(leaves, in_tree, fun)
                if flat is None
                else [core.get_aval(x) for x in leaves]
            )
        names = _arg_names(fun, len(args))
        in_dims = [_in_dim(spec, aval) for spec, aval in zip(specs, avals, strict=True)]
        size = _axis_size("vmap", name, avals, in_dims, paths, names, axis_size)

        def out_dims(n):
            specs = _broadcast_prefix(
                out_axes, _unflatten_placeholder(store["out_tree"]), "out_axes"
            )
            outs = [None if s is None else _out_dim(s, store, i) for i, s in enumerate(specs)]
            return outs + [in_dims[k] for k, _ in boxed]  # the mapped references' final values

        def _out_dim(spec, store, i):
            rank = store["out_ranks"][i] + 1
            if not -rank <= spec < rank:
                raise ValueError(
                    f"vmap out_axes: axis {spec} is out of bounds for output "
                    f"{i} of {name}, of rank {rank - 1} (rank {rank} with the "
                    "mapped axis)"
                )
            return spec % rank

        def flat_recording_ranks(*xs):
            outs = flat(*xs)
            store["out_ranks"] = [np.ndim(o) for o in outs]
            # float0 zeros (integer inputs' gradients) have no XLA type: they are mapped as
            # bool zeros and turned back into float0 below.
            store["float0s"] = [
                i for i, o in enumerate(outs) if getattr(o, "dtype", None) == dtypes.float0
            ]
            for i in store["float0s"]:
                outs[i] = np.zeros(np.shape(outs[i]), np.bool_)
            return outs

        axis = AxisData(axis_name, size, spmd_axis_name)
        outs = _vmap_outputs(
            flat_recording_ranks, axis, leaves, in_dims, out_dims, sum_match, store
        )
        outs = [_as_output(o) for o in refs.write_back(outs, boxed)]
        for i in store["float0s"]:
            outs[i] = np.zeros(np.shape(outs[i]), dtypes.float0)
        return pytree.tree_unflatten(store["out_tree"], outs)

    return vmapped


def _ref_arguments(fun, args, flat, leaves, specs, paths):
    """References among the arguments: a mapped one is passed as its value (refs.py's
    ``box_arguments``) and written back after; an unmapped one goes to ``fun`` as it is.
    Returns ``flat``, ``leaves``, ``specs`` and ``paths`` for the others, and each mapped
    reference with its position among them."""
    if not any(refs.is_ref(x) for x in leaves):
        return flat, leaves, specs, paths, ()
    refs.check_aliases((), leaves, fun, "vmap", lambda: refs.arg_names(fun, args))
    mapped = [s is not None for s in specs]
    flat, kept, leaves, boxed = refs.box_arguments(flat, leaves, mapped)
    return flat, leaves, [specs[i] for i in kept], [paths[i] for i in kept], boxed


def _pass_unmapped_objects(flat, leaves, specs, paths):
    """Leaves at ``in_axes`` None that are not arrays (a function, a string, ...) go to the
    function as they are, as JAX passes them: ``flat`` of the other leaves, and those leaves,
    specs and paths. ``flat`` is None when an array-or-scalar leaf is still not one."""
    fixed = {}
    for i, (x, spec) in enumerate(zip(leaves, specs, strict=True)):
        if spec is None:
            try:
                core.get_aval(x)
            except TypeError:
                fixed[i] = x
    kept = [i for i in range(len(leaves)) if i not in fixed]
    try:
        for i in kept:
            core.get_aval(leaves[i])
    except TypeError:
        return None, leaves, specs, paths  # a mapped leaf is not an array: the usual error

    def flat_with_objects(*xs):
        full = list(leaves)
        for i, x in zip(kept, xs, strict=True):
            full[i] = x
        return flat(*full)

    return (
        flat_with_objects,
        [leaves[i] for i in kept],
        [specs[i] for i in kept],
        [paths[i] for i in kept],
    )


def _vmap_outputs(fun, axis, args, in_dims, out_dims, sum_match, store):
    """``batching.vmap_flat`` with vmap's handling of an output batched where its out axis
    is None: summed over the mapped axis with ``sum_match``, else JAX's ValueError naming
    the output's place in ``out_axes``."""
    vals, dims = batching.batch_flat(fun, axis, args, in_dims)
    wants = out_dims(len(vals))
    results = []
    for i, (val, dim, want) in enumerate(zip(vals, dims, wants, strict=True)):
        if want is not_mapped and dim is not not_mapped and not sum_match:
            paths = pytree.tree_flatten_with_path(_unflatten_placeholder(store["out_tree"]))[0]
            raise ValueError(
                f"at vmap out_axes{pytree.keystr(paths[i][0])}, got axis spec None but output "
                f"was batched on axis {dim}"
            )
        if want is not_mapped:
            results.append(val if dim is not_mapped else reduce_sum(val, (dim,)))
        else:
            results.append(batching.move_or_broadcast(val, dim, want, axis.size))
    return results


def _unflatten_placeholder(tree):
    return pytree.tree_unflatten(tree, [0] * tree.num_leaves)


def _in_dim(spec, aval):
    if spec is None:
        return not_mapped
    if not -aval.ndim <= spec < aval.ndim:
        raise ValueError(
            f"vmap was requested to map its argument along axis {spec}, which "
            f"implies that its rank should be at least "
            f"{spec + 1 if spec >= 0 else -spec}, but is only {aval.ndim} (its "
            f"shape is {aval.shape})"
        )
    return spec % aval.ndim


def _describe(path, names):
    """``args[0]['w']`` -> ``argument x['w']`` when the parameter name is known."""
    if path.startswith("[0]"):
        rest = path[3:]
        if names is not None and rest.startswith("["):
            i = int(rest[1 : rest.index("]")])
            return f"argument {names[i]}{rest[rest.index(']') + 1 :]}"
        return f"argument args{rest}"
    return f"keyword argument kwargs{path[3:]}"


def _axis_size(transform, name, avals, in_dims, paths, names, axis_size):
    """The size of the mapped axis; errors name the ``transform`` (vmap, pmap) of ``name``."""
    what = f"{transform} of {name}"
    sizes = {aval.shape[d] for aval, d in zip(avals, in_dims, strict=True) if d is not None}
    if axis_size is not None:
        sizes.add(int(axis_size))
    if not sizes:
        raise ValueError(
            f"{what}: {transform} must have at least one non-None value "
            "in in_axes or axis_size must be specified"
        )
    if len(sizes) > 1:
        lines = [
            f"  * axis {d} of {_describe(p, names)} of type {a.str_short()} has size {a.shape[d]}"
            for a, d, p in zip(avals, in_dims, paths, strict=True)
            if d is not None
        ]
        if axis_size is not None:
            lines.append(f"  * axis_size is {axis_size}")
        raise ValueError(
            f"{what} got inconsistent sizes for array axes to be mapped:\n" + "\n".join(lines)
        )
    return sizes.pop()
