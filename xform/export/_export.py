"""``export``: a jitted function as a serializable StableHLO program, ``Exported``, in JAX's
format and calling convention; and calling one (``Exported.call``) from xform.

An ``Exported`` records what a caller needs: the pytrees and abstract values of the inputs
and outputs, the platforms, and the module as portable StableHLO bytecode. Calling it binds
``call_exported_p``, whose lowering inlines the module's functions into the program being
compiled (lowering/export.py); reverse-mode derivatives go through the exported VJP (a second
``Exported``, serialized alongside with ``serialize(vjp_order=1)``), as in JAX.
"""

import numpy as np

from lowering import export as lowering_export
from xform import core, dtypes, lax, pytree
from xform.api import jit as api
from xform.api.autodiff import vjp as _vjp
from xform.api.jit import ShapeDtypeStruct
from xform.core import ShapedArray
from xform.custom_derivatives import SymbolicZero, custom_vjp
from xform.export import _serialization, _shape_poly
from xform.export._serialization import (
    DisabledSafetyCheck,
    maximum_supported_calling_convention_version,
    minimum_supported_calling_convention_version,
    register_namedtuple_serialization,
    register_pytree_node_serialization,
)
from xform.interpret import batching
from xform.primitives.base import standard_primitive
from xform.primitives.compiler import platform_index_p
from xform.primitives.fft import FftType, fft_p
from xform.runtime import dispatch
from xform.runtime.jit import JitFunction, split_statics
from xform.runtime.stages import abstractify

_PLATFORMS = ("cpu", "cuda", "rocm", "tpu")

__all__ = [
    "DisabledSafetyCheck",
    "Exported",
    "call_exported_p",
    "default_export_platform",
    "deserialize",
    "export",
    "maximum_supported_calling_convention_version",
    "minimum_supported_calling_convention_version",
    "register_namedtuple_serialization",
    "register_pytree_node_serialization",
]

# --------------------------------------------------------------------------- Exported


class Exported:
    """A function lowered to StableHLO, with its calling convention (JAX's ``Exported``).

    Attributes:
      fun_name: the function's name, for error messages.
      in_tree, out_tree: the pytrees of ``(args, kwargs)`` and of the result.
      in_avals, out_avals: the flat abstract values (shapes may hold symbolic dimensions).
      in_shardings_hlo, out_shardings_hlo: a sharding per input/output (None: unspecified).
      nr_devices: how many devices the module was lowered for.
      platforms: the platforms it runs on ("cpu", "cuda", "rocm", "tpu").
      ordered_effects, unordered_effects: the effects of the module (none from xform).
      disabled_safety_checks: the ``DisabledSafetyCheck``s in force.
      mlir_module_serialized: the module, as portable StableHLO bytecode.
      calling_convention_version: the version of the module's calling convention.
      module_kept_var_idx: the indices of the inputs the module takes (others are unused).
      uses_global_constants: whether the module needs shape refinement before compiling
        (symbolic dimensions, or a platform index argument).
    """

    def __init__(
        self,
        *,
        fun_name,
        in_tree,
        in_avals,
        out_tree,
        out_avals,
        nr_devices,
        platforms,
        ordered_effects,
        unordered_effects,
        disabled_safety_checks,
        mlir_module_serialized,
        calling_convention_version,
        module_kept_var_idx,
        uses_global_constants,
        in_shardings_hlo=None,
        out_shardings_hlo=None,
        get_vjp=None,
    ):
        self.fun_name = fun_name
        self.in_tree = in_tree
        self.in_avals = tuple(in_avals)
        self.out_tree = out_tree
        self.out_avals = tuple(out_avals)
        self.in_shardings_hlo = tuple(in_shardings_hlo or (None,) * len(self.in_avals))
        self.out_shardings_hlo = tuple(out_shardings_hlo or (None,) * len(self.out_avals))
        self.nr_devices = nr_devices
        self.platforms = tuple(platforms)
        self.ordered_effects = tuple(ordered_effects)
        self.unordered_effects = tuple(unordered_effects)
        self.disabled_safety_checks = tuple(disabled_safety_checks)
        self.mlir_module_serialized = bytes(mlir_module_serialized)
        self.calling_convention_version = calling_convention_version
        self.module_kept_var_idx = tuple(module_kept_var_idx)
        self.uses_global_constants = bool(uses_global_constants)
        self._get_vjp = get_vjp
        self._vjp = None
        self._call = None

    def mlir_module(self, serialized=True):
        """The module: as MLIR text, or (``serialized=False``) as an ``ir.Module`` object."""
        if serialized:
            return lowering_export.module_text(self.mlir_module_serialized)
        return lowering_export.deserialize(self.mlir_module_serialized)

    def __str__(self):
        return f"Exported(fun_name={self.fun_name}, ...)"

    __repr__ = __str__

    def in_shardings_jax(self, mesh):
        """A ``jax.sharding.Sharding`` (or None: unspecified) per input, on ``mesh``. xform
        exports single-device programs, whose inputs have no sharding."""
        return tuple(self._sharding(s, mesh) for s in self.in_shardings_hlo)

    def out_shardings_jax(self, mesh):
        """As ``in_shardings_jax``, for the outputs."""
        return tuple(self._sharding(s, mesh) for s in self.out_shardings_hlo)

    def _sharding(self, hlo_sharding, mesh):
        if hlo_sharding is None:
            return None
        raise NotImplementedError(
            f"Exported {self.fun_name} has a specified sharding "
            f"({hlo_sharding}); xform runs single-device programs"
        )

    def has_vjp(self):
        """Whether the VJP is available (exported here, or serialized with the function)."""
        return self._get_vjp is not None

    def vjp(self):
        """The ``Exported`` VJP: it takes the flat primal inputs, then a cotangent per flat
        output, and returns a tuple of cotangents for the flat inputs."""
        if self._get_vjp is None:
            raise ValueError("No VJP is available")
        if self._vjp is None:
            self._vjp = self._get_vjp(self)
        return self._vjp

    def serialize(self, vjp_order=0):
        """Bytes in JAX's flatbuffer format: ``jax.export.deserialize`` reads them.

        Args:
          vjp_order: how many orders of VJP to include (1 allows ``grad`` of the
            deserialized function, 2 ``grad(grad(...))``).
        """
        return _serialization.serialize(self, vjp_order)

    def call(self, *args, **kwargs):
        """Call the exported function on arguments of the exported pytree structure (also
        under ``jit``, and ``grad`` when a VJP is available)."""
        leaves, in_tree = pytree.tree_flatten((args, kwargs))
        if in_tree != self.in_tree:
            lines = "".join(
                f"   - {d}.\n"
                for d in _tree_differences(
                    in_tree.children(), self.in_tree.children(), ("args", "kwargs")
                )
            )
            raise ValueError(
                "The invocation args and kwargs must have the same pytree structure as when "
                f"the function '{self.fun_name}' was exported, but they have the following "
                f"structural differences:\n{lines}"
            )
        outs = self._call_flat(*leaves)
        # A float0 result (a VJP's cotangent of an integer) comes back as bools: JAX's value.
        outs = [
            np.zeros(a.shape, dtypes.float0) if a.dtype == dtypes.float0 else x
            for x, a in zip(outs, self.out_avals, strict=True)
        ]
        return pytree.tree_unflatten(self.out_tree, outs)

    def _call_flat(self, *leaves):
        if self._call is None:
            self._call = _flat_call(self)
        return list(self._call(*leaves))

    def platform_index(self, platform):
        """The index among ``platforms`` of the module's code for ``platform``."""
        if platform in self.platforms:
            return self.platforms.index(platform)
        if DisabledSafetyCheck.platform() in self.disabled_safety_checks:
            return 0
        raise ValueError(
            f"Function '{self.fun_name}' was exported for platforms "
            f"'{self.platforms}' but it is used on '{(platform,)}'."
        )


def _tree_differences(got, want, paths):
    """Where two lists of pytrees (at ``paths``) differ in structure, in JAX's words."""
    for g, w, path in zip(got, want, paths, strict=True):
        gd, wd = g.node_data(), w.node_data()
        if gd is None and wd is None:
            continue
        what = (
            f"{path} is a {_node_name(g)} in the invocation and a {_node_name(w)} when exported, so"
        )
        if gd is None or wd is None or gd[0] is not wd[0]:
            yield f"{what} their types do not match"
        elif len(g.children()) != len(w.children()):
            yield f"{what} the lengths do not match"
        elif gd[0] is dict and list(gd[1]) != list(wd[1]):
            yield f"{what} the keys do not match"
        elif gd[1] != wd[1]:
            yield f"{what} their auxiliary data do not match"
        else:
            keys = list(gd[1]) if gd[0] is dict else range(len(g.children()))
            yield from _tree_differences(
                g.children(), w.children(), [f"{path}[{k!r}]" for k in keys]
            )


def _node_name(treedef):
    node = treedef.node_data()
    if node is None:
        return "leaf"
    if node[0] in (tuple, list):
        return f"{node[0].__name__} of length {len(treedef.children())}"
    return node[0].__name__


def _shape_struct(aval):
    """The spec to trace a value of ``aval`` with: float0 (no XLA type) traced as bool."""
    return ShapeDtypeStruct(aval.shape, _physical(aval.dtype))


def deserialize(blob):
    """The ``Exported`` serialized in ``blob`` (bytes from ``Exported.serialize()``, in xform
    or in JAX).

    Raises:
      ValueError: ``blob`` is not a serialized ``Exported``, or has an unsupported version.
    """
    return _serialization.deserialize(blob, Exported)


def default_export_platform():
    """The platform ``export`` lowers for by default: 'cpu', 'cuda', 'rocm' or 'tpu'."""
    return lowering_export.current_platform()


# --------------------------------------------------------------------------- export


def export(fun_jit, *, platforms=None, disabled_checks=()):
    """Export a jitted function for serialization.

    Args:
      fun_jit: the result of ``xform.jit``.
      platforms: the platforms to export for (default: ``default_export_platform()``);
        with several, the module takes the platform index as its first argument.
      disabled_checks: ``DisabledSafetyCheck``s to skip.

    Returns:
      A function of the arguments (arrays, or ``ShapeDtypeStruct``s) that returns an
      ``Exported``.

    Example:
      >>> exp = export(jit(jnp.sin))(ShapeDtypeStruct((4,), np.float32))
      >>> deserialize(exp.serialize()).call(np.ones(4, np.float32))
    """
    if not isinstance(fun_jit, JitFunction):
        raise ValueError(f"Function to be exported must be the result of `jit` but is: {fun_jit}")
    if platforms is None:
        platforms = (default_export_platform(),)
    platforms = tuple(platforms)
    for p in platforms:
        if p not in _PLATFORMS:
            raise ValueError(f"export: unknown platform {p!r}; expected some of {_PLATFORMS}")
    disabled_checks = tuple(disabled_checks)

    def do_export(*args, **kwargs):
        return _export(fun_jit, args, kwargs, platforms, disabled_checks)

    return do_export


def _export(fun_jit, args, kwargs, platforms, disabled_checks):
    entry, _, avals = fun_jit._entry(args, kwargs, abstractify)
    name = fun_jit._name
    nconsts = len(entry.consts)
    jaxpr = dispatch.without_dead_code(entry.jaxpr).jaxpr
    used = _used_vars(jaxpr)
    # Arguments with symbolic dimensions are kept unused: main reads the dimensions there.
    kept = tuple(
        k
        for k, v in enumerate(jaxpr.invars[nconsts:])
        if v in used or any(core.is_symbolic_dim(d) for d in v.aval.shape)
    )
    foreign = set(platforms) != {default_export_platform()}
    if foreign:
        _check_platform_independent(jaxpr, name, platforms)
    out_leaves = [v.aval for v in jaxpr.outvars]
    out_tree = entry.out_tree
    result_info = pytree.result_info(out_tree)
    symbolic = any(not isinstance(d, int) for a in avals for d in a.shape)
    module = lowering_export.export_module(
        jaxpr,
        entry.consts,
        name,
        kept,
        len(platforms),
        result_info,
        _arg_describer(args, kwargs, fun_jit) if symbolic else None,
    )
    if foreign and any(
        target != "shape_assertion"  # (platform-independent)
        for target, _ in lowering_export.custom_call_targets(module)
    ):
        raise NotImplementedError(
            f"export of {name} for platforms {platforms}: its module calls kernels of "
            f"'{default_export_platform()}' (custom calls), and xform lowers for the platform it "
            "runs on only. Export on each platform for that platform."
        )
    allowed = {c.is_custom_call() for c in disabled_checks if c.is_custom_call()}
    unstable = lowering_export.unstable_custom_calls(module, allowed)
    if unstable:
        raise ValueError(
            "Cannot serialize code with custom calls whose targets have no "
            "compatibility guarantees (allow one with "
            "DisabledSafetyCheck.custom_call(target)). Examples are:\n" + "\n".join(unstable)
        )
    out_avals = [ShapedArray(a.shape, a.dtype, a.weak_type) for a in out_leaves]
    for i, shape in entry.float0s:  # returned as bools; their type is float0
        out_avals[i] = ShapedArray(shape, dtypes.float0)
    state = fun_jit._state
    dyn_args, dyn_kwargs, statics = split_statics(
        fun_jit._fun, args, kwargs, state.static_argnums, state.static_argnames
    )
    in_tree = pytree.tree_structure((dyn_args, dyn_kwargs))  # static arguments are baked in
    return Exported(
        fun_name=name,
        in_tree=in_tree,
        in_avals=avals,
        out_tree=out_tree,
        out_avals=out_avals,
        nr_devices=1,
        platforms=platforms,
        ordered_effects=(),
        unordered_effects=(),
        disabled_safety_checks=disabled_checks,
        mlir_module_serialized=lowering_export.serialize(module),
        calling_convention_version=_serialization.CALLING_CONVENTION_VERSION,
        module_kept_var_idx=kept,
        uses_global_constants=len(platforms) > 1 or symbolic,
        get_vjp=lambda primal: _export_vjp(primal, fun_jit, statics),
    )


def _arg_describer(args, kwargs, fun_jit):
    """``describe(i, d)``: flat argument ``i``'s dimension ``d`` as JAX's messages name it."""
    state = fun_jit._state
    dyn_args, dyn_kwargs, _ = split_statics(
        fun_jit._fun, args, kwargs, state.static_argnums, state.static_argnames
    )
    paths = [p for p, _ in pytree.tree_flatten_with_path((dyn_args, dyn_kwargs))[0]]

    def describe(i, d):
        keys = paths[i]
        where = ("args" if getattr(keys[0], "idx", 0) == 0 else "kwargs") + pytree.keystr(keys[1:])
        return where if d is None else f"{where}.shape[{d}]"

    return describe


def _used_vars(jaxpr):
    used = {v for v in jaxpr.outvars if type(v) is not core.Literal}
    for eqn in jaxpr.eqns:
        used.update(v for v in eqn.invars if type(v) is not core.Literal)
    return used


def _subjaxprs(params):
    for p in params.values():
        for x in p if isinstance(p, (tuple, list)) else (p,):
            if isinstance(x, core.ClosedJaxpr):
                yield x.jaxpr
            elif isinstance(x, core.Jaxpr):
                yield x


def _check_platform_independent(jaxpr, name, platforms):
    """xform lowers once, for the platform it runs on: exporting for other platforms is sound
    only when no primitive lowers differently per platform."""
    for eqn in jaxpr.eqns:
        prim = eqn.primitive
        if prim is platform_index_p or (
            prim is fft_p
            and eqn.params["fft_type"] == FftType.IRFFT
            and len(eqn.params["fft_lengths"]) > 1
        ):
            raise NotImplementedError(
                f"export of {name} for platforms {platforms}: the primitive '{prim.name}' "
                "lowers differently per platform, and xform lowers for one platform only. "
                "Export for one platform at a time."
            )
        for sub in _subjaxprs(eqn.params):
            _check_platform_independent(sub, name, platforms)


def _export_vjp(primal, fun_jit, statics):
    """The exported VJP of ``primal``, exported from ``fun_jit`` (with ``statics``, its static
    arguments): the VJP of ``fun_jit`` on flat arguments, exported in turn (its own VJP is
    the next order). As in JAX, an integer output's cotangent is a float0 input (unused, so
    not in the module)."""
    nin = len(primal.in_avals)
    float0_cts = [not dtypes.is_inexact(a.dtype) for a in primal.out_avals]

    def flat_primal(*leaves):
        args, kwargs = pytree.tree_unflatten(primal.in_tree, leaves)
        if statics is not None:
            args, kwargs = statics.merge(args, kwargs)
        outs = pytree.tree_leaves(fun_jit(*args, **kwargs))
        # A float0 output (the VJP's cotangent of an integer) is a bool zero in the module.
        return [
            np.zeros(x.shape, dtypes.bool_) if getattr(x, "dtype", None) == dtypes.float0 else x
            for x in outs
        ]

    def fun_vjp(*primals_and_cts):
        primals, cts = primals_and_cts[:nin], primals_and_cts[nin:]
        _, pullback = _vjp(flat_primal, *primals)
        return pullback(list(cts))  # (xform's pullback ignores an integer output's)

    # float0 has no XLA type: those cotangents are traced as bools, and typed float0 after.
    ct_specs = [
        ShapeDtypeStruct(a.shape, dtypes.bool_ if f0 else a.dtype)
        for a, f0 in zip(primal.out_avals, float0_cts, strict=True)
    ]
    fun_vjp.__name__ = "fun_vjp"
    exp = export(
        api.jit(fun_vjp), platforms=primal.platforms, disabled_checks=primal.disabled_safety_checks
    )(*[_shape_struct(a) for a in primal.in_avals], *ct_specs)
    float0_ins = [a.dtype == dtypes.float0 for a in primal.in_avals] + float0_cts
    exp.in_avals = tuple(
        ShapedArray(a.shape, dtypes.float0) if f0 else a
        for a, f0 in zip(exp.in_avals, float0_ins, strict=True)
    )
    return exp


# --------------------------------------------------------------------------- call_exported


def _physical(dtype):
    return dtypes.bool_ if dtype == dtypes.float0 else dtype


def _flat_call(exported):
    """``exported``'s function of flat arguments, differentiable in its float arguments
    through the exported VJP (a custom_vjp over those; the others ride along as residuals)."""
    diff = tuple(dtypes.is_inexact(a.dtype) for a in exported.in_avals)

    def merge(diff_args, others):
        diff_it, others_it = iter(diff_args), iter(others)
        return [next(diff_it) if d else next(others_it) for d in diff]

    def bwd(res, cts):
        args_flat = merge(*res)
        exp_vjp = exported.vjp()
        ct_avals = exp_vjp.in_avals[len(args_flat) :]
        cts = [
            np.zeros(a.shape, _physical(a.dtype))
            if type(ct) is SymbolicZero or a.dtype == dtypes.float0
            else ct
            for ct, a in zip(cts, ct_avals, strict=True)
        ]
        in_cts = exp_vjp._call_flat(*args_flat, *cts)
        return tuple(ct for ct, d in zip(in_cts, diff, strict=True) if d)

    def call(*leaves):
        others = [x for x, d in zip(leaves, diff, strict=True) if not d]
        if not any(diff):
            return call_exported_p.bind(*leaves, exported=exported)

        @custom_vjp
        def f_diff(*diff_args):
            return call_exported_p.bind(*merge(diff_args, others), exported=exported)

        def fwd(*diff_args):
            return f_diff(*diff_args), (diff_args, others)

        f_diff.defvjp(fwd, bwd)
        f_diff.__name__ = f"call_exported_{exported.fun_name}"
        return f_diff(*[x for x, d in zip(leaves, diff, strict=True) if d])

    return call


def _describe(exported, i, d):
    """Argument ``i``'s dimension ``d`` (or the argument, for None) as JAX's errors say."""
    paths = pytree.tree_flatten_with_path(
        pytree.tree_unflatten(exported.in_tree, range(exported.in_tree.num_leaves))
    )[0]
    keys = paths[i][0]
    where = ("args" if keys and getattr(keys[0], "idx", 0) == 0 else "kwargs") + pytree.keystr(
        keys[1:]
    )
    return where if d is None else f"{where}.shape[{d}]"


def _call_exported_abstract_eval(*avals, exported):
    if len(avals) != len(exported.in_avals):
        raise ValueError(
            f"call_exported of '{exported.fun_name}': expected "
            f"{len(exported.in_avals)} arguments, got {len(avals)}"
        )
    for i, (exp, got) in enumerate(zip(exported.in_avals, avals, strict=True)):
        if len(exp.shape) != len(got.shape):
            raise ValueError(
                f"Rank mismatch for {_describe(exported, i, None)}: expected "
                f"{exp.shape} and called with {got.shape}"
            )
        if _physical(exp.dtype) != got.dtype:
            raise ValueError(
                f"Dtype mismatch for {_describe(exported, i, None)}: expected "
                f"{exp.dtype} and called with {got.dtype}"
            )
        for d, (e, g) in enumerate(zip(exp.shape, got.shape, strict=True)):
            if isinstance(e, int) and e != g:
                raise ValueError(
                    f"Shape mismatch for {_describe(exported, i, d)} (expected "
                    f"same constant): expected {exp.shape} and called with "
                    f"{got.shape}"
                )
    env = _shape_poly.solve_dim_vars(
        exported.in_avals, [a.shape for a in avals], lambda i, d: _describe(exported, i, d)
    )
    return [
        ShapedArray(_shape_poly.evaluate_shape(a.shape, env), _physical(a.dtype), a.weak_type)
        for a in exported.out_avals
    ]


call_exported_p = standard_primitive(
    "call_exported", _call_exported_abstract_eval, multiple_results=True
)
# No host impl: eagerly, the one equation is compiled by XLA (the module is StableHLO).
# No JVP rule: Exported.call differentiates in reverse mode through the exported VJP (a
# custom_vjp around the primitive); forward mode is an error, as in JAX.
# No transpose rule: the primitive is not linear (and its VJP is another Exported).


def _call_exported_batch(axis, args, dims, *, exported):
    # The program is opaque, so its batched form is a loop over the batch: a lax.map whose
    # body calls it on one example (JAX has no batching rule for it).
    batched = [i for i, d in enumerate(dims) if d is not None]
    xs = [batching.moveaxis(args[i], dims[i], 0) for i in batched]

    def one(example):
        full = list(args)
        for i, x in zip(batched, example, strict=True):
            full[i] = x
        return call_exported_p.bind(*full, exported=exported)

    outs = lax.map(one, xs)
    return outs, [0] * len(outs)


batching.batch_rules[call_exported_p] = _call_exported_batch
lowering_export.register(call_exported_p)
lowering_export.register_dimension_as_value(_shape_poly.dimension_as_value_p)
