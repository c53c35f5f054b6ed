"""Ahead-of-time stages of a jitted function, as JAX's ``jax.stages``.

``jit(f).trace(*args)`` gives a ``Traced`` (the jaxpr), ``.lower()`` a ``Lowered`` (the
StableHLO module), ``.compile()`` a ``Compiled`` (XLA's executable, called as ``f`` without
its static arguments, on arguments of the types it was compiled for). Arguments may be abstract
(``ShapeDtypeStruct``s). Each stage reuses the jitted function's caches: tracing here is the
trace a call would make, and compiling without options is the executable a call would run.

Also here: ``ShapeDtypeStruct``, the type of an array without data, which the stages report
(``out_info``) and take as arguments.
"""

import dataclasses

import numpy as np
from jax.sharding import SingleDeviceSharding
from jaxlib import _jax

from lowering import mlir, runtime
from xform import core, dtypes, pytree
from xform.core import ShapedArray, Tracer
from xform.primitives.pmap import replicas_needed
from xform.runtime import dispatch
from xform.runtime.array import ShardedArray
from xform.traceback_util import positional_names


class ShapeDtypeStruct:
    """The shape and dtype of an array, without data (``eval_shape``'s outputs, a
    ``pure_callback``'s result type). Immutable and hashable, as JAX's.

    Args:
      shape: a sequence of ints.
      dtype: a dtype (not canonicalized: ``int64`` stays ``int64``), or a key dtype.
      sharding: optional, a ``jax.sharding.Sharding`` the array is laid out by.
      weak_type: whether the type is weak (a Python scalar's).
    """

    __slots__ = ("shape", "dtype", "sharding", "weak_type")

    def __init__(self, shape, dtype, *, sharding=None, weak_type=False):
        if dtype is None:
            raise ValueError("ShapeDtypeStruct: dtype must be specified.")
        if sharding is not None and not runtime.is_sharding(sharding):
            raise ValueError(
                "ShapeDtypeStruct: sharding should be an instance of "
                f"`jax.sharding.Sharding`. Got {sharding} of type "
                f"{type(sharding)}."
            )
        set_ = object.__setattr__
        set_(self, "shape", tuple(shape))
        set_(self, "dtype", dtype if dtypes.issubdtype(dtype, dtypes.extended) else np.dtype(dtype))
        set_(self, "sharding", sharding)
        set_(self, "weak_type", bool(weak_type))

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))

    @classmethod
    def like(cls, x):
        """The shape, dtype, weak type and sharding of an array (or of anything with
        ``shape`` and ``dtype``)."""
        aval = abstractify(x)
        sharding = getattr(x, "sharding", None) if isinstance(x, ShardedArray) else None
        return cls(aval.shape, aval.dtype, sharding=sharding, weak_type=aval.weak_type)

    def update(self, **kwargs):
        """A copy with some of ``shape``, ``dtype``, ``sharding``, ``weak_type`` replaced."""
        unknown = set(kwargs) - set(self.__slots__)
        if unknown:
            raise TypeError(f"ShapeDtypeStruct.update: unexpected fields {sorted(unknown)}")
        fields = {k: getattr(self, k) for k in self.__slots__}
        return ShapeDtypeStruct(**{**fields, **kwargs})

    def __setattr__(self, name, value):
        raise RuntimeError(
            f"Cannot reassign attributes ({name}) of immutable ShapeDtypeStruct objects"
        )

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __array__(self, dtype=None, copy=None):
        # Whatever needs the value of a constant (a jit program's inputs, eager evaluation,
        # an inline literal) reads it as NumPy: here is where it learns there is none.
        raise TypeError(
            "A ShapeDtypeStruct does not have a value and cannot be used as a "
            "constant in an xform function."
        )

    def _key(self):
        return (self.shape, self.dtype, self.sharding, self.weak_type)

    def __eq__(self, other):
        return isinstance(other, ShapeDtypeStruct) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        sharding = f", sharding={self.sharding}" if self.sharding is not None else ""
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name}{sharding}{weak})"

    __str__ = __repr__


def _shape_dtype_struct_aval(x):
    return ShapedArray(x.shape, dtypes.canonicalize(x.dtype), x.weak_type)


# As in JAX, a ShapeDtypeStruct is a type without a value: a traced function may return one
# or compute with one it closes over (equinox's filtered and closure-converted functions
# do), staged as a constant of its type, so eval_shape and make_jaxpr see through it; only
# running the program needs a value (``__array__`` above).
core.pytype_aval_mappings[ShapeDtypeStruct] = _shape_dtype_struct_aval
core.valueless_types.add(ShapeDtypeStruct)


def abstractify(x):
    """The aval of an argument of a function being traced; shape-dtype structs allowed."""
    if (
        not core.is_concrete_array(x)
        and not isinstance(x, Tracer)
        and hasattr(x, "shape")
        and hasattr(x, "dtype")
    ):
        return ShapedArray(
            tuple(x.shape), dtypes.canonicalize(x.dtype), bool(getattr(x, "weak_type", False))
        )
    return core.get_aval(x)


@dataclasses.dataclass(frozen=True)
class ArgInfo:
    """The type of one argument leaf of a stage, and whether its buffer is donated."""

    _aval: object
    donated: bool

    shape = property(lambda self: self._aval.shape)
    dtype = property(lambda self: self._aval.dtype)


def shape_struct(aval):
    """The ``ShapeDtypeStruct`` of ``aval``."""
    return ShapeDtypeStruct(aval.shape, aval.dtype, weak_type=aval.weak_type)


class _Stage:
    """What every stage knows: the traced signature of the jitted function."""

    def __init__(self, jitted, entry, in_tree, avals):
        self._jitted = jitted
        self._entry = entry
        self.in_tree = in_tree
        self.in_avals = pytree.tree_unflatten(in_tree, avals)
        self._avals = avals

    fun_name = property(lambda self: self._jitted._name)
    jaxpr = property(lambda self: self._entry.jaxpr, doc="The ClosedJaxpr traced.")
    out_tree = property(lambda self: self._entry.out_tree)
    out_avals = property(
        lambda self: pytree.tree_unflatten(self._entry.out_tree, self._entry.jaxpr.out_avals)
    )

    @property
    def args_info(self):
        """An ``ArgInfo`` per argument leaf, in the arguments' pytree."""
        donated = self._entry.donated
        n_consts = len(self._entry.consts)
        flags = donated[n_consts:] if donated is not None else (False,) * len(self._avals)
        return pytree.tree_unflatten(
            self.in_tree, [ArgInfo(a, d) for a, d in zip(self._avals, flags, strict=True)]
        )

    @property
    def donate_argnums(self):
        """The flat indices of the donated argument leaves, as JAX's stages give them."""
        donated = self._entry.donated
        if donated is None:
            return ()
        return tuple(i for i, d in enumerate(donated[len(self._entry.consts) :]) if d)

    @property
    def out_info(self):
        """A ``ShapeDtypeStruct`` per output, in the outputs' pytree."""
        return pytree.tree_unflatten(
            self._entry.out_tree, [shape_struct(a) for a in self._entry.jaxpr.out_avals]
        )


class Traced(_Stage):
    """A jitted function traced for one signature; ``.lower()`` lowers it."""

    def __init__(self, jitted, entry, in_tree, avals, partitioned=None):
        super().__init__(jitted, entry, in_tree, avals)
        # () -> the partitioned Lowered stage when the call runs partitioned (shardings given
        # or carried by the arguments), else None (xform/runtime/partitioned.py)
        self._partitioned = partitioned

    def lower(self):
        lowered = self._partitioned and self._partitioned()
        return lowered or Lowered(self._jitted, self._entry, self.in_tree, self._avals)


class Lowered(_Stage):
    """A traced and lowered jitted function, ready to compile."""

    def __init__(self, jitted, entry, in_tree, avals):
        super().__init__(jitted, entry, in_tree, avals)
        lowered, _, donated = dispatch.lowered_form(
            entry.jaxpr, entry.donated, entry.consts, entry.keep_unused
        )
        self._module = mlir.lower_to_module(
            lowered,
            jitted._name,
            replicas_needed(entry.jaxpr.jaxpr),
            donated,
            pytree.result_info(entry.out_tree),
        )

    def as_text(self, dialect=None, *, debug_info=False):
        """The module as text: StableHLO (the default) or, with ``dialect="hlo"``, XLA HLO;
        with ``debug_info``, the StableHLO's locations (named scopes, file:line) too."""
        if dialect in (None, "stablehlo"):
            return mlir.module_text(self._module, debug_info)
        if dialect == "hlo":
            return self._hlo().as_hlo_text()
        raise ValueError(
            f"Lowered.as_text: unknown dialect {dialect!r}; expected 'stablehlo' or 'hlo'"
        )

    def compiler_ir(self, dialect=None):
        """The module: an MLIR ``Module`` (StableHLO) or, with ``dialect="hlo"``, an
        ``XlaComputation``."""
        if dialect in (None, "stablehlo"):
            return self._module
        if dialect == "hlo":
            return self._hlo()
        raise ValueError(
            f"Lowered.compiler_ir: unknown dialect {dialect!r}; expected 'stablehlo' or 'hlo'"
        )

    def _hlo(self):
        return _jax.mlir.mlir_module_to_xla_computation(
            mlir.module_text(self._module), use_tuple_args=False, return_tuple=False
        )

    def cost_analysis(self):
        """XLA's cost estimates of the unoptimized module (flops, bytes accessed, ...)."""
        device = self._jitted._device or runtime.default_device()
        return _jax.hlo_module_cost_analysis(device.client, self._hlo().as_hlo_module())

    def compile(self, compiler_options=None):
        """Compile with XLA (``compiler_options``: XLA debug options by name, as JAX's)."""
        entry, jitted = self._entry, self._jitted
        options = tuple(sorted((compiler_options or {}).items()))
        compiled = dispatch.compile_jaxpr(
            entry.jaxpr,
            jitted._name,
            jitted._device,
            entry.donated,
            options=options,
            module=self._module,
            consts=entry.consts,
            keep_unused=entry.keep_unused,
        )
        if not options and entry.compiled is None:
            entry.compiled = compiled  # what the next call of the jitted function runs
        return Compiled(jitted, entry, self.in_tree, self._avals, compiled)


class Compiled(_Stage):
    """The compiled program of one signature of a jitted function; call it with the dynamic
    arguments (the static ones are part of the program), of the types it was compiled for."""

    def __init__(self, jitted, entry, in_tree, avals, compiled):
        super().__init__(jitted, entry, in_tree, avals)
        self._compiled = compiled

    def __call__(self, *args, **kwargs):
        # As JAX's: only the dynamic arguments (the static ones are baked into the program).
        leaves, in_tree = pytree.tree_flatten((args, kwargs))
        if in_tree != self.in_tree:
            raise TypeError(_tree_mismatch_message(self.in_tree, in_tree))
        avals = [core.get_aval(x) for x in leaves]
        if any(
            a.shape != c.shape or a.dtype != c.dtype
            for a, c in zip(avals, self._avals, strict=True)
        ):  # weak types may differ
            raise TypeError(
                _mismatch_message(
                    self._jitted, in_tree, self._entry.statics_key, self._avals, avals
                )
            )
        outs = self._entry.run_with(self._compiled, leaves, self._avals)
        return pytree.tree_unflatten(self._entry.out_tree, outs)

    def _loaded(self):
        executable = self._compiled.executable
        return getattr(executable, "loaded", None) or executable.spmd.loaded

    def runtime_executable(self):
        """jaxlib's loaded executable."""
        return self._loaded()

    def as_text(self):
        """XLA's optimized HLO of the program."""
        return "\n\n".join(m.to_string() for m in self._loaded().hlo_modules())

    def cost_analysis(self):
        """XLA's cost estimates of the optimized program (flops, bytes accessed, ...)."""
        return self._loaded().cost_analysis()

    def memory_analysis(self):
        """XLA's memory figures: argument, output, alias, temporary and code bytes."""
        return self._loaded().get_compiled_memory_stats()

    @property
    def input_shardings(self):
        """Where each argument lives: ``(args, kwargs)`` of shardings, as JAX's."""
        s = self._sharding()
        return pytree.tree_unflatten(self.in_tree, [s] * self.in_tree.num_leaves)

    @property
    def output_shardings(self):
        s = self._sharding()
        return pytree.tree_unflatten(self._entry.out_tree, [s] * self._entry.out_tree.num_leaves)

    def _sharding(self):
        return SingleDeviceSharding(self._compiled.device or runtime.default_device())


def _tree_mismatch_message(compiled_tree, called_tree):
    """What differs between the (args, kwargs) pytree compiled for and the one called with."""
    want_args, want_kwargs = pytree.tree_unflatten(compiled_tree, [0] * compiled_tree.num_leaves)
    got_args, got_kwargs = pytree.tree_unflatten(called_tree, [0] * called_tree.num_leaves)
    diffs = []
    if len(want_args) != len(got_args):
        diffs.append(
            f"at args: compiled for {len(want_args)} positional arguments, called "
            f"with {len(got_args)}"
        )
    else:
        diffs += [
            f"at args[{i}]: compiled for {pytree.tree_structure(w)}, called with "
            f"{pytree.tree_structure(g)}"
            for i, (w, g) in enumerate(zip(want_args, got_args, strict=True))
            if pytree.tree_structure(w) != pytree.tree_structure(g)
        ]
    if want_kwargs.keys() != got_kwargs.keys():
        diffs.append(
            f"at kwargs: compiled for keywords {sorted(want_kwargs)}, called with "
            f"{sorted(got_kwargs)} (differing: "
            f"{sorted(want_kwargs.keys() ^ got_kwargs.keys())})"
        )
    else:
        diffs += [
            f"at kwargs[{k!r}]: compiled for {pytree.tree_structure(w)}, called with "
            f"{pytree.tree_structure(got_kwargs[k])}"
            for k, w in want_kwargs.items()
            if pytree.tree_structure(w) != pytree.tree_structure(got_kwargs[k])
        ]
    return (
        "Function compiled with input pytree does not match the input pytree it was "
        f"called with. There are {len(diffs)} mismatches, including:\n"
        + "\n".join(f"    * {d}" for d in diffs)
        + "\nA compiled function takes the dynamic arguments only (not the static ones)."
    )


def _mismatch_message(jitted, in_tree, statics_key, compiled_avals, called_avals):
    paths = leaf_paths(jitted.__wrapped__, in_tree, statics_key)
    lines = [
        f"Argument '{name}{path}' compiled with {_type_name(c)} and called with {_type_name(a)}"
        for (name, path), c, a in zip(paths, compiled_avals, called_avals, strict=True)
        if (c.shape, c.dtype) != (a.shape, a.dtype)
    ]
    return (
        "Argument types differ from the types for which this computation was compiled. "
        "Perhaps you are calling the compiled executable with a different enable_x64 "
        "mode than when it was AOT compiled? The mismatches are:\n" + "\n".join(lines)
    )


def _type_name(aval):
    return f"{aval.dtype.name}[{','.join(map(str, aval.shape))}]"


def leaf_paths(fun, in_tree, statics_key):
    """``(name, path)`` per argument leaf of ``fun``'s call: the parameter's name (``args[i]``
    past the named ones, the keyword for keywords) and the leaf's path inside it (keystr)."""
    dyn_args, dyn_kwargs = pytree.tree_unflatten(in_tree, range(in_tree.num_leaves))
    params = positional_names(fun)
    static_positions = () if statics_key is None else statics_key[0]
    positions = [
        i for i in range(len(dyn_args) + len(static_positions)) if i not in static_positions
    ]
    paths = [(f"leaf {i}", "") for i in range(in_tree.num_leaves)]
    for keys, leaf in pytree.tree_flatten_with_path((dyn_args, dyn_kwargs))[0]:
        if keys[0].idx == 0:
            pos = positions[keys[1].idx]
            name = params[pos] if pos < len(params) else f"args[{pos}]"
        else:
            name = keys[1].key
        paths[leaf] = (name, pytree.keystr(keys[2:]))
    return paths


__all__ = ["ArgInfo", "Compiled", "Lowered", "ShapeDtypeStruct", "Traced"]
