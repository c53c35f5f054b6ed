"""``Exported`` <-> bytes, in JAX's flatbuffer container (schema: JAX's
``serialization.fbs``), so that JAX and xform read each other's exported programs.

The table accessors and builders are the code flatc generated from JAX's schema, imported
from ``jax._src.export.serialization_generated``: generated data-format code, no part of
JAX's transformations. What goes in each field is written here.

xform writes what JAX 0.10.2 writes: the schema version field says 3 (what every JAX
deserializer accepts), avals both inline (older readers) and by index into a table of unique
avals (newer ones), shardings all unspecified.

What the container records besides the module also lives here: the calling-convention
versions, ``DisabledSafetyCheck``, and the registries of custom pytree nodes
(``register_pytree_node_serialization``, ``register_namedtuple_serialization``).
"""

import collections
import json

import flatbuffers
import numpy as np
from jax._src.export import serialization_generated as fb

from xform import dtypes, pytree
from xform.core import ShapedArray
from xform.export import _shape_poly

# The newest schema version xform reads (JAX 0.10.2's); it writes version 3, as JAX does.
_MAX_SERIALIZATION_VERSION = 11
_WRITTEN_SERIALIZATION_VERSION = 3
_MLIR_BYTECODE_MAGIC = b"ML\xefR"

_DTYPES = {
    dtypes.bool_: fb.DType.bool,
    np.dtype("int8"): fb.DType.i8,
    np.dtype("int16"): fb.DType.i16,
    np.dtype("int32"): fb.DType.i32,
    np.dtype("int64"): fb.DType.i64,
    np.dtype("uint8"): fb.DType.ui8,
    np.dtype("uint16"): fb.DType.ui16,
    np.dtype("uint32"): fb.DType.ui32,
    np.dtype("uint64"): fb.DType.ui64,
    dtypes.float0: fb.DType.f0,
    np.dtype("float16"): fb.DType.f16,
    np.dtype("float32"): fb.DType.f32,
    np.dtype("float64"): fb.DType.f64,
    np.dtype("complex64"): fb.DType.c64,
    np.dtype("complex128"): fb.DType.c128,
    dtypes.bfloat16_dtype: fb.DType.bf16,
    dtypes.int4: fb.DType.i4,
    dtypes.uint4: fb.DType.ui4,
    dtypes.float8_e4m3b11fnuz: fb.DType.f8_e4m3b11fnuz,
    dtypes.float8_e4m3fn: fb.DType.f8_e4m3fn,
    dtypes.float8_e4m3fnuz: fb.DType.f8_e4m3fnuz,
    dtypes.float8_e5m2: fb.DType.f8_e5m2,
    dtypes.float8_e5m2fnuz: fb.DType.f8_e5m2fnuz,
    dtypes.float8_e4m3: fb.DType.f8_e4m3,
    dtypes.float8_e3m4: fb.DType.f8_e3m4,
    dtypes.float8_e8m0fnu: fb.DType.f8_e8m0fnu,
    dtypes.float4_e2m1fn: fb.DType.f4_e2m1fn,
}
_KINDS = {v: k for k, v in _DTYPES.items()}


# The calling conventions xform reads; it writes the newest, as JAX 0.10.2.
minimum_supported_calling_convention_version = 9
maximum_supported_calling_convention_version = 10
CALLING_CONVENTION_VERSION = 10


class DisabledSafetyCheck:
    """A safety check to skip: ``platform()`` lets the calling platform differ from the
    exported ones; ``custom_call(target)`` allows exporting a custom call to ``target``,
    which has no compatibility guarantee."""

    def __init__(self, _impl):
        self._impl = _impl

    @classmethod
    def platform(cls):
        """Allow calling on a platform the function was not exported for."""
        return cls("platform")

    @classmethod
    def custom_call(cls, target_name):
        """Allow exporting a custom call to ``target_name``."""
        return cls(f"custom_call:{target_name}")

    def is_custom_call(self):
        """The custom-call target this check allows, or None."""
        return self._impl[len("custom_call:") :] if self._impl.startswith("custom_call:") else None

    def __str__(self):
        return self._impl

    __repr__ = __str__

    def __eq__(self, other):
        return isinstance(other, DisabledSafetyCheck) and self._impl == other._impl

    def __hash__(self):
        return hash(self._impl)


# --------------------------------------------------------------------------- custom pytrees

# type -> (serialized name, serialize_auxdata); serialized name -> (type,
# deserialize_auxdata, from_children or None)
serialization_registry = {}
deserialization_registry = {}


def register_pytree_node_serialization(
    nodetype, *, serialized_name, serialize_auxdata, deserialize_auxdata, from_children=None
):
    """Let pytrees with nodes of ``nodetype`` (registered with
    ``pytree.register_pytree_node``) appear in the ``in_tree``/``out_tree`` of a
    serialized ``Exported``.

    Args:
      nodetype: the node type.
      serialized_name: its name in the serialization (unique).
      serialize_auxdata: auxdata -> bytes.
      deserialize_auxdata: bytes -> auxdata.
      from_children: optional ``(auxdata, children) -> node``; by default the node is
        rebuilt from its pytree registration.

    Returns:
      ``nodetype`` (usable as a class decorator).
    """
    if nodetype in serialization_registry:
        raise ValueError(
            f"Duplicate serialization registration for type `{nodetype}`. "
            "Previous registration was with serialized_name "
            f"`{serialization_registry[nodetype][0]}`."
        )
    if serialized_name in deserialization_registry:
        raise ValueError(
            f"Duplicate serialization registration for serialized_name "
            f"`{serialized_name}`. Previous registration was for type "
            f"`{deserialization_registry[serialized_name][0]}`."
        )
    serialization_registry[nodetype] = (serialized_name, serialize_auxdata)
    deserialization_registry[serialized_name] = (nodetype, deserialize_auxdata, from_children)
    return nodetype


def register_namedtuple_serialization(nodetype, *, serialized_name):
    """Let a ``collections.namedtuple`` type appear in a serialized ``Exported``'s pytrees
    (its field names are stored and checked on deserialization)."""
    if not (
        isinstance(nodetype, type)
        and issubclass(nodetype, tuple)
        and isinstance(getattr(nodetype, "_fields", None), tuple)
    ):
        raise ValueError(
            "Use `export.register_pytree_node_serialization` for types other "
            "than `collections.namedtuple`."
        )

    def from_children(fields, children):
        return nodetype(**dict(zip(fields, children, strict=True)))

    return register_pytree_node_serialization(
        nodetype,
        serialized_name=serialized_name,
        serialize_auxdata=lambda _: json.dumps(nodetype._fields).encode("utf-8"),
        deserialize_auxdata=lambda b: json.loads(b.decode("utf-8")),
        from_children=from_children,
    )


def _ordereddict_keys(keys):
    if not all(isinstance(k, str) for k in keys):
        raise NotImplementedError(
            "Serialization of collections.OrderedDict is supported only "
            f"when the keys are strings. Found keys: {keys}."
        )
    return json.dumps(list(keys)).encode("utf-8")


register_pytree_node_serialization(
    collections.OrderedDict,
    serialized_name="collections.OrderedDict",
    serialize_auxdata=_ordereddict_keys,
    deserialize_auxdata=lambda b: json.loads(b.decode("utf-8")),
    from_children=lambda keys, children: collections.OrderedDict(zip(keys, children, strict=True)),
)


# --------------------------------------------------------------------------- writing


def serialize(exp, vjp_order=0):
    """``exp`` as bytes, with ``vjp_order`` orders of its VJP."""
    builder = flatbuffers.Builder(65536)
    builder.Finish(_write_exported(builder, exp, vjp_order))
    return builder.Output()


def _vector(builder, offsets):
    fb.PyTreeDefStartChildrenVector(builder, len(offsets))  # any vector of offsets
    for off in reversed(offsets):
        builder.PrependUOffsetTRelative(off)
    return builder.EndVector()


def _strings(builder, strings):
    return _vector(builder, [builder.CreateString(s) for s in strings])


def _write_exported(builder, exp, vjp_order):
    unique, index = [], {}
    for a in exp.in_avals + exp.out_avals:
        key = (a.shape, a.dtype)
        if key not in index:
            index[key] = len(unique)
            unique.append(a)
    fun_name = builder.CreateString(exp.fun_name)
    in_tree = _write_tree(builder, exp.in_tree)
    in_avals = _vector(builder, [_write_aval(builder, a) for a in exp.in_avals])
    out_tree = _write_tree(builder, exp.out_tree)
    out_avals = _vector(builder, [_write_aval(builder, a) for a in exp.out_avals])
    in_shardings = _vector(builder, [_write_sharding(builder, s) for s in exp.in_shardings_hlo])
    out_shardings = _vector(builder, [_write_sharding(builder, s) for s in exp.out_shardings_hlo])
    if exp.ordered_effects or exp.unordered_effects:
        raise NotImplementedError(
            f"serialization of {exp.fun_name}: xform does not serialize effects"
        )
    ordered = _vector(builder, [])
    unordered = _vector(builder, [])
    checks = _vector(builder, [_write_check(builder, c) for c in exp.disabled_safety_checks])
    platforms = _strings(builder, exp.platforms)
    module = builder.CreateByteVector(exp.mlir_module_serialized)
    kept = builder.CreateNumpyVector(np.array(exp.module_kept_var_idx, np.uint16))
    vjp = None
    if vjp_order > 0:
        if not exp.has_vjp():
            raise ValueError(
                "serialization of an Exported that does not have vjps of high-enough order"
            )
        vjp = _write_exported(builder, exp.vjp(), vjp_order - 1)
    unique_avals = _vector(builder, [_write_aval(builder, a) for a in unique])
    no_meshes = _vector(builder, [])
    no_shardings = _vector(builder, [])
    in_idx = builder.CreateNumpyVector(
        np.array([index[(a.shape, a.dtype)] for a in exp.in_avals], np.uint32)
    )
    out_idx = builder.CreateNumpyVector(
        np.array([index[(a.shape, a.dtype)] for a in exp.out_avals], np.uint32)
    )
    in_sh_idx = builder.CreateNumpyVector(np.zeros(len(exp.in_avals), np.uint32))
    out_sh_idx = builder.CreateNumpyVector(np.zeros(len(exp.out_avals), np.uint32))

    fields = [  # (field, offset or value), in the order JAX writes them
        ("SerializationVersion", _WRITTEN_SERIALIZATION_VERSION),
        ("FunctionName", fun_name),
        ("InTree", in_tree),
        ("InAvals", in_avals),
        ("OutTree", out_tree),
        ("OutAvals", out_avals),
        ("NrDevices", exp.nr_devices),
        ("InShardings", in_shardings),
        ("OutShardings", out_shardings),
        ("Platforms", platforms),
        ("OrderedEffects", ordered),
        ("UnorderedEffects", unordered),
        ("DisabledChecks", checks),
        ("MlirModuleSerialized", module),
        ("CallingConventionVersion", exp.calling_convention_version),
        ("ModuleKeptVarIdx", kept),
        ("UsesGlobalConstants", exp.uses_global_constants),
        ("Vjp", vjp),
        ("UniqueAvals", unique_avals),
        ("UniqueAbstractMeshes", no_meshes),
        ("UniqueNamedShardings", no_shardings),
        ("InAvalsIdxs", in_idx),
        ("OutAvalsIdxs", out_idx),
        ("InShardingsIdxs", in_sh_idx),
        ("OutShardingsIdxs", out_sh_idx),
    ]
    fb.ExportedStart(builder)
    for field, value in fields:
        if value is not None:
            getattr(fb, f"ExportedAdd{field}")(builder, value)
    return fb.ExportedEnd(builder)


def _write_tree(builder, treedef):
    node_data = treedef.node_data()
    children = treedef.children()
    children_off = (
        _vector(builder, [_write_tree(builder, c) for c in children]) if children else None
    )
    names_off = custom_name = custom_aux = None
    node_type = node_data[0] if node_data is not None else None
    if node_data is None:
        kind = fb.PyTreeDefKind.leaf
    elif node_type is type(None):
        kind = fb.PyTreeDefKind.none
    elif node_type is tuple:
        kind = fb.PyTreeDefKind.tuple
    elif node_type is list:
        kind = fb.PyTreeDefKind.list
    elif node_type is dict:
        kind = fb.PyTreeDefKind.dict
        for k in node_data[1]:
            if not isinstance(k, str):
                raise TypeError(
                    "Serialization is supported only for dictionaries with string "
                    f"keys. Found key {k} of type {type(k)}."
                )
        names_off = _strings(builder, node_data[1])
    elif node_type in serialization_registry:
        kind = fb.PyTreeDefKind.custom
        name, serialize_aux = serialization_registry[node_type]
        aux = serialize_aux(node_data[1])
        if not isinstance(aux, (bytes, bytearray)):
            raise ValueError(
                "The custom serialization function for `node_type` must return "
                f"a `bytes` object. It returned a {type(aux)}."
            )
        custom_name = builder.CreateString(name)
        custom_aux = builder.CreateByteVector(bytes(aux))
    else:
        raise ValueError(
            f"Cannot serialize PyTreeDef containing an unregistered type "
            f"`{node_type}`. Use `export.register_pytree_node_serialization` or "
            "`export.register_namedtuple_serialization`."
        )
    fb.PyTreeDefStart(builder)
    fb.PyTreeDefAddKind(builder, kind)
    if children_off is not None:
        fb.PyTreeDefAddChildren(builder, children_off)
    if names_off is not None:
        fb.PyTreeDefAddChildrenNames(builder, names_off)
    if custom_name is not None:
        fb.PyTreeDefAddCustomName(builder, custom_name)
        fb.PyTreeDefAddCustomAuxdata(builder, custom_aux)
    return fb.PyTreeDefEnd(builder)


def _write_aval(builder, aval):
    if aval.dtype not in _DTYPES:
        raise NotImplementedError(f"serialization of an Exported with a {aval.dtype} value")
    dims = [builder.CreateString(str(d)) for d in aval.shape]
    fb.AbstractValueStartShapeVector(builder, len(dims))
    for d in reversed(dims):
        builder.PrependUOffsetTRelative(d)
    shape = builder.EndVector()
    fb.AbstractValueStart(builder)
    fb.AbstractValueAddKind(builder, fb.AbstractValueKind.shapedArray)
    fb.AbstractValueAddShape(builder, shape)
    fb.AbstractValueAddDtype(builder, _DTYPES[aval.dtype])
    fb.AbstractValueAddMemorySpace(builder, fb.MemorySpace.Device)
    return fb.AbstractValueEnd(builder)


def _write_sharding(builder, sharding):
    if sharding is not None:
        raise NotImplementedError(f"serialization of a specified sharding ({sharding})")
    fb.ShardingStart(builder)
    return fb.ShardingEnd(builder)


def _write_check(builder, check):
    target = check.is_custom_call()
    target_off = builder.CreateString(target) if target is not None else None
    if target is None and check != DisabledSafetyCheck.platform():
        raise NotImplementedError(f"serializing DisabledSafetyCheck: {check}")
    fb.DisabledSafetyCheckStart(builder)
    fb.DisabledSafetyCheckAddKind(
        builder,
        fb.DisabledSafetyCheckKind.custom_call
        if target is not None
        else fb.DisabledSafetyCheckKind.platform,
    )
    if target_off is not None:
        fb.DisabledSafetyCheckAddCustomCallTarget(builder, target_off)
    return fb.DisabledSafetyCheckEnd(builder)


# --------------------------------------------------------------------------- reading


def deserialize(blob, make_exported):
    """The ``Exported`` serialized in ``blob`` (by xform or by JAX), made by
    ``make_exported(**fields)``."""
    if not isinstance(blob, (bytes, bytearray, memoryview)):
        raise TypeError(f"deserialize: expected bytes, got {type(blob).__name__}")
    blob = bytes(blob)
    try:
        root = fb.Exported.GetRootAs(blob, 0)
        version = root.SerializationVersion()
        module = root.MlirModuleSerializedAsNumpy()
        ok = isinstance(module, np.ndarray) and module[:4].tobytes() == _MLIR_BYTECODE_MAGIC
    except Exception:  # noqa: BLE001 (a garbled buffer fails in many ways)
        ok = False
    if not ok:
        raise ValueError(
            f"deserialize: the {len(blob)} bytes are not a serialized Exported: "
            "expected JAX's flatbuffer format (as Exported.serialize() writes, "
            "in xform or JAX) holding a StableHLO module"
        )
    if not 1 <= version <= _MAX_SERIALIZATION_VERSION:
        raise ValueError(
            f"deserialize: unsupported serialization version {version}; xform "
            f"reads versions 1 to {_MAX_SERIALIZATION_VERSION}"
        )
    return _read_exported(root, make_exported)


def _read_exported(root, make_exported):
    cc = root.CallingConventionVersion()
    if not (
        minimum_supported_calling_convention_version
        <= cc
        <= maximum_supported_calling_convention_version
    ):
        raise ValueError(
            f"deserialize: unsupported calling convention version {cc}; xform supports "
            f"versions {minimum_supported_calling_convention_version} to "
            f"{maximum_supported_calling_convention_version}"
        )
    scope = _shape_poly.SymbolicScope()
    if root.UniqueAvalsLength() and root.InAvalsIdxsLength() + root.OutAvalsIdxsLength():
        unique = [_read_aval(root.UniqueAvals(i), scope) for i in range(root.UniqueAvalsLength())]
        in_avals = [unique[root.InAvalsIdxs(i)] for i in range(root.InAvalsIdxsLength())]
        out_avals = [unique[root.OutAvalsIdxs(i)] for i in range(root.OutAvalsIdxsLength())]
    else:
        in_avals = [_read_aval(root.InAvals(i), scope) for i in range(root.InAvalsLength())]
        out_avals = [_read_aval(root.OutAvals(i), scope) for i in range(root.OutAvalsLength())]
    in_shardings = _read_shardings(
        root,
        root.InShardingsIdxsLength(),
        root.InShardingsIdxs,
        root.InShardingsLength(),
        root.InShardings,
        len(in_avals),
    )
    out_shardings = _read_shardings(
        root,
        root.OutShardingsIdxsLength(),
        root.OutShardingsIdxs,
        root.OutShardingsLength(),
        root.OutShardings,
        len(out_avals),
    )
    if root.OrderedEffectsLength() or root.UnorderedEffectsLength():
        raise NotImplementedError(
            "deserialize: the exported module has effects, which xform does not call"
        )
    vjp = root.Vjp()
    return make_exported(
        fun_name=root.FunctionName().decode("utf-8"),
        in_tree=_read_tree(root.InTree()),
        in_avals=in_avals,
        out_tree=_read_tree(root.OutTree()),
        out_avals=out_avals,
        in_shardings_hlo=in_shardings,
        out_shardings_hlo=out_shardings,
        nr_devices=root.NrDevices() or root.NrDevicesShort(),
        platforms=[root.Platforms(i).decode("utf-8") for i in range(root.PlatformsLength())],
        ordered_effects=(),
        unordered_effects=(),
        disabled_safety_checks=[
            _read_check(root.DisabledChecks(i)) for i in range(root.DisabledChecksLength())
        ],
        mlir_module_serialized=root.MlirModuleSerializedAsNumpy().tobytes(),
        calling_convention_version=cc,
        module_kept_var_idx=root.ModuleKeptVarIdxAsNumpy().tolist()
        if root.ModuleKeptVarIdxLength()
        else (),
        uses_global_constants=root.UsesGlobalConstants(),
        get_vjp=None if vjp is None else (lambda _: _read_exported(vjp, make_exported)),
    )


def _read_aval(aval, scope):
    if aval.Kind() != fb.AbstractValueKind.shapedArray:
        raise NotImplementedError("deserialize: an abstract value that is not an array")
    kind = aval.Dtype()
    if kind not in _KINDS:
        raise NotImplementedError(
            f"deserialize: values of dtype kind {kind} (PRNG keys) are not supported in xform"
        )
    spec = ",".join(aval.Shape(i).decode("utf-8") for i in range(aval.ShapeLength()))
    shape = _shape_poly.symbolic_shape(spec, scope=scope) if spec else ()
    return ShapedArray(shape, _KINDS[kind])


def _read_shardings(root, nidx, idx, nlegacy, legacy, n):
    """A sharding description per value; None for an unspecified (or replicated) one."""
    if nidx:
        return tuple(
            None if idx(i) == 0 else _describe_named(root.UniqueNamedShardings(idx(i) - 1))
            for i in range(nidx)
        )
    if nlegacy:
        return tuple(_read_legacy_sharding(legacy(i)) for i in range(nlegacy))
    return (None,) * n


def _describe_named(s):
    spec = s.Spec()
    parts = [
        tuple(p.Axes(j).decode("utf-8") for j in range(p.AxesLength()))
        for p in (spec.Partitions(i) for i in range(spec.PartitionsLength()))
    ]
    if not any(parts):
        return None  # replicated
    return f"NamedSharding(spec={parts})"


def _read_legacy_sharding(s):
    named = s.NamedSharding()
    if named is not None:
        return _describe_named(named)
    if not s.HloShardingProtoIsNone():
        return "HloSharding(proto)"
    return None


def _read_check(check):
    kind = check.Kind()
    if kind == fb.DisabledSafetyCheckKind.custom_call:
        return DisabledSafetyCheck.custom_call(check.CustomCallTarget().decode("utf-8"))
    if kind == fb.DisabledSafetyCheckKind.platform:
        return DisabledSafetyCheck.platform()
    raise ValueError(f"Cannot deserialize DisabledSafetyCheck with unknown kind: {kind}")


def _read_tree(node):
    """The PyTreeDef a serialized tree stands for (built bottom-up from node data)."""
    kind = node.Kind()
    children = [_read_tree(node.Children(i)) for i in range(node.ChildrenLength())]
    if kind == fb.PyTreeDefKind.leaf:
        return pytree.tree_structure(0)
    if kind == fb.PyTreeDefKind.none:
        return pytree.tree_structure(None)
    if kind == fb.PyTreeDefKind.tuple:
        node_data = (tuple, None)
    elif kind == fb.PyTreeDefKind.list:
        node_data = (list, None)
    elif kind == fb.PyTreeDefKind.dict:
        node_data = (
            dict,
            [node.ChildrenNames(i).decode("utf-8") for i in range(node.ChildrenNamesLength())],
        )
    elif kind == fb.PyTreeDefKind.custom:
        name = node.CustomName().decode("utf-8")
        if name not in deserialization_registry:
            raise ValueError(
                f"Cannot deserialize a PyTreeDef containing an unregistered type "
                f"`{name}`. Use `export.register_pytree_node_serialization` or "
                "`export.register_namedtuple_serialization`."
            )
        nodetype, deserialize_aux, from_children = deserialization_registry[name]
        aux = deserialize_aux(node.CustomAuxdataAsNumpy().tobytes())
        if from_children is not None:
            # Build the node from placeholder children, and read its structure back.
            subtrees = [c.unflatten([0.0] * c.num_leaves) for c in children]
            return pytree.tree_structure(from_children(aux, subtrees))
        node_data = (nodetype, aux)
    else:
        raise ValueError(f"Cannot deserialize PyTreeDef with unknown kind: {kind}")
    return pytree.PyTreeDef.from_node_data_and_children(
        pytree.default_registry, node_data, children
    )
