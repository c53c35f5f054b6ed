"""``pmap``: run a function on several devices at once, one slice of the mapped axis each,
as one SPMD program (see ``xform/runtime/pmap.py`` for running it, ``lowering/pmap.py`` for the
program).

Pytrees, ``in_axes``/``out_axes`` prefixes and static arguments are handled here; the body
is traced once per signature with the axis name bound, so collectives can name it.
"""

import functools

from xform import config, core, pytree
from xform.api.batching import _arg_names, _axis_size, _broadcast_prefix, _leaf_paths
from xform.core import Tracer
from xform.interpret.staging import convert_constvars, trace_to_jaxpr
from xform.primitives.pmap import pmap_p, unmapped_aval
from xform.runtime import pmap as spmd
from xform.runtime.array import Array
from xform.runtime.jit import (
    arg_avals,
    flatten_fun,
    fun_name,
    normalize_statics,
    split_statics,
)
from xform.runtime.jit_cache import flat_tree
from xform.traceback_util import api_boundary


def _canonical_axis(spec, aval, what):
    if spec is None:
        return None
    rank = aval.ndim + (what == "out_axes")
    if not -rank <= spec < rank:
        raise ValueError(
            f"pmap {what}: axis {spec} is out of bounds for a value of rank "
            f"{aval.ndim} (shape {aval.shape})"
        )
    return spec % rank


class PmapFunction:
    """A function mapped over devices; see ``pmap``."""

    def __init__(
        self,
        fun,
        axis_name,
        in_axes,
        out_axes,
        static_broadcasted_argnums,
        devices,
        axis_size,
        donate_argnums,
    ):
        functools.update_wrapper(self, fun)
        self._fun = fun
        self._name = fun_name(fun)
        self._axis_name = axis_name
        self._in_axes = tuple(in_axes) if isinstance(in_axes, list) else in_axes
        self._out_axes = out_axes
        self._statics, _ = normalize_statics(fun, static_broadcasted_argnums, None)
        self._donate = frozenset(normalize_statics(fun, donate_argnums, None, "donate")[0])
        if self._donate & set(self._statics):
            raise ValueError(
                f"pmap of {self._name}: arguments "
                f"{sorted(self._donate & set(self._statics))} are both static "
                "and donated"
            )
        self._devices = None if devices is None else tuple(devices)
        self._axis_size = axis_size
        self._cache = {}
        # trace context -> avals -> entry, for positional Array arguments
        self._flat_cache = {}

    @api_boundary
    def __call__(self, *args, **kwargs):
        entry, leaves = self._entry(args, kwargs)
        operands = [*entry["consts"], *leaves] if entry["consts"] else leaves
        if core.trace_state.trace is core.eval_trace and not any(
            isinstance(x, Tracer) for x in leaves
        ):
            program = entry.get("program")
            if program is None:  # compiled on the first eager call, then kept with the entry
                program = entry["program"] = spmd.program_for(entry["params"])
            outs = spmd.run_program(program, operands, entry["params"]["donated"])
        else:
            outs = pmap_p.bind(*operands, **entry["params"])
        return pytree.tree_unflatten(entry["out_tree"], outs)

    def lower(self, *args, **kwargs):
        """The SPMD program for these arguments; ``.as_text()`` is its StableHLO module (the
        per-device program every replica runs)."""
        entry, _ = self._entry(args, kwargs)
        return LoweredPmap(spmd.lower_pmap(entry["params"])[0])

    def _entry(self, args, kwargs):
        if not kwargs and not self._statics:
            # The common case, kept lean: positional arrays already seen with these types.
            avals = tuple(x.aval if isinstance(x, Array) else None for x in args)
            entry = self._flat_cache.get(config.trace_context(), {}).get(avals)
            if entry is not None:
                return entry, list(args)
        if kwargs or self._statics:
            dyn_args, dyn_kwargs, statics = split_statics(
                self._fun, args, kwargs, self._statics, frozenset()
            )
        else:
            dyn_args, dyn_kwargs, statics = args, {}, None
        leaves, in_tree = pytree.tree_flatten((dyn_args, dyn_kwargs))
        avals = [x.aval if isinstance(x, Array) else None for x in leaves]
        if None in avals:
            avals = arg_avals(leaves, in_tree, self._fun)
        # The axes and sizes follow from the structure and types: checked once per signature.
        key = (
            in_tree,
            None if statics is None else statics.key,
            tuple(avals),
            config.trace_context(),
        )
        entry = self._cache.get(key)
        if entry is None:
            entry = self._trace(in_tree, statics, avals, dyn_args, dyn_kwargs)
            if not any(isinstance(c, Tracer) for c in entry["consts"]):
                self._cache[key] = entry
                if in_tree == flat_tree(len(args)) and not kwargs and statics is None:
                    self._flat_cache.setdefault(config.trace_context(), {})[tuple(avals)] = entry
        return entry, leaves

    def _mapped_axes(self, dyn_args, dyn_kwargs, avals):
        """The mapped axis of each argument leaf and the axis size, checked."""
        in_axes = self._in_axes
        if isinstance(in_axes, tuple) and len(in_axes) != len(dyn_args):
            raise ValueError(
                f"pmap of {self._name}: in_axes must be an int, None, or a tuple "
                "with one entry per positional argument, but got "
                f"len(in_axes)={len(in_axes)}, len(args)={len(dyn_args)}"
            )
        arg_specs = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(dyn_args)
        specs = _broadcast_prefix((arg_specs, 0), (dyn_args, dyn_kwargs), "in_axes")
        axes = tuple(_canonical_axis(s, a, "in_axes") for s, a in zip(specs, avals, strict=True))
        size = _axis_size(
            "pmap",
            self._name,
            avals,
            axes,
            _leaf_paths((dyn_args, dyn_kwargs)),
            _arg_names(self._fun, len(dyn_args)),
            self._axis_size,
        )
        if size == 0:  # ValueError, as JAX's
            raise ValueError(
                f"pmap of {self._name}: the mapped axis has size 0, but pmap runs "
                "one instance per device and needs at least one; skip the call "
                "for empty inputs, or use vmap"
            )
        return axes, size

    def _trace(self, in_tree, statics, avals, dyn_args, dyn_kwargs):
        axes, local_size = self._mapped_axes(dyn_args, dyn_kwargs, avals)
        size = local_size * spmd.runtime.process_count() if self._devices is None else local_size
        per_device = [unmapped_aval(a, ax) for a, ax in zip(avals, axes, strict=True)]
        store = {}
        flat = flatten_fun(self._fun, in_tree, store, statics)
        with core.extend_axis_env(self._axis_name, size):
            closed = trace_to_jaxpr(flat, per_device, f"tracing `{self._name}` for pmap")
        jaxpr, consts = convert_constvars(closed)
        out_specs = _broadcast_prefix(
            self._out_axes,
            pytree.tree_unflatten(store["out_tree"], [0] * len(jaxpr.out_avals)),
            "out_axes",
        )
        out_axes = tuple(
            _canonical_axis(s, a, "out_axes")
            for s, a in zip(out_specs, jaxpr.out_avals, strict=True)
        )
        donated = self._donated_leaves(in_tree, dyn_args)
        params = dict(
            jaxpr=jaxpr,
            name=self._name,
            axis_name=self._axis_name,
            axis_size=size,
            in_axes=(None,) * len(consts) + axes,
            out_axes=out_axes,
            devices=self._devices,
            donated=None if donated is None else (False,) * len(consts) + donated,
        )
        return {"params": params, "consts": consts, "out_tree": store["out_tree"]}

    def _donated_leaves(self, in_tree, dyn_args):
        if not self._donate:
            return None
        positions = [i for i in range(len(dyn_args) + len(self._statics)) if i not in self._statics]
        flags = []
        for position, arg in zip(positions, dyn_args, strict=False):
            flags += [position in self._donate] * len(pytree.tree_leaves(arg))
        return tuple(flags + [False] * (in_tree.num_leaves - len(flags)))

    def __repr__(self):
        return f"<pmapped function {self._name}>"


class LoweredPmap:
    """A pmapped function lowered for some arguments."""

    def __init__(self, module):
        self._module = module

    def as_text(self):
        """The StableHLO module, as MLIR text."""
        return spmd.runtime.mlir.module_text(self._module)

    def compiler_ir(self, dialect="stablehlo"):
        return self._module


def pmap(
    fun=None,
    axis_name=None,
    *,
    in_axes=0,
    out_axes=0,
    static_broadcasted_argnums=(),
    devices=None,
    backend=None,
    axis_size=None,
    donate_argnums=(),
    global_arg_shapes=None,
):
    """Map ``fun`` over an axis of its arguments with one device per slice, as one SPMD
    program compiled with XLA; collectives (``xform.lax.psum(x, axis_name)``) combine the
    devices' values.

    Args:
      fun: a function of arrays (pytrees) returning arrays (pytrees).
      axis_name: a name for the mapped axis, for collectives.
      in_axes, out_axes: as for ``vmap``; the mapped size must not exceed the device count.
      static_broadcasted_argnums: positional arguments that are not arrays (hashable Python
        values), passed to every device as they are.
      devices: the devices to use (default: the first ones of ``xform.devices()``).
      axis_size: the size of the axis, needed only when no argument is mapped.
      donate_argnums: arguments whose device buffers the program may reuse for its results.

    Returns:
      A function whose results are ``ShardedArray``s: one slice on each device, gathered by
      ``np.asarray`` and read where they are by the next ``pmap``.

    Example:
      >>> f = xform.pmap(lambda x: x / xform.lax.psum(x, "i"), axis_name="i")
      >>> f(jnp.arange(1.0, 3.0))  # on 2 devices
      Array([0.33333334, 0.6666667 ], dtype=float32)
    """
    if fun is None:
        return functools.partial(
            pmap,
            axis_name=axis_name,
            in_axes=in_axes,
            out_axes=out_axes,
            static_broadcasted_argnums=static_broadcasted_argnums,
            devices=devices,
            backend=backend,
            axis_size=axis_size,
            donate_argnums=donate_argnums,
        )
    if isinstance(static_broadcasted_argnums, int):
        static_broadcasted_argnums = (static_broadcasted_argnums,)
    if isinstance(donate_argnums, int):
        donate_argnums = (donate_argnums,)
    if backend is not None and devices is None:
        devices = spmd.runtime.devices(backend)
    if in_axes is not None and not isinstance(in_axes, (int, tuple, list, dict)):
        raise TypeError(
            f"pmap in_axes must be an int, None, or a tuple of entries "
            f"corresponding to the positional arguments, got {in_axes!r}"
        )
    return PmapFunction(
        fun,
        axis_name,
        in_axes,
        out_axes,
        tuple(static_broadcasted_argnums),
        devices,
        axis_size,
        tuple(donate_argnums),
    )
