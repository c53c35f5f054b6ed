"""Exported programs, interoperable with JAX's ``jax.export``: every public name of
``jax.export``.

``export(jit(f))(*specs)`` lowers ``f`` to an ``Exported``: StableHLO in JAX's calling
convention, serialized (``Exported.serialize``) in JAX's flatbuffer format, so JAX runs what
xform exports and xform runs what JAX exports (``deserialize(...).call(...)``, also under
``jit`` and ``grad``). Symbolic dimensions (``symbolic_shape``) describe, and let xform call,
programs JAX exported for polymorphic shapes.
"""

from xform.export._export import (  # noqa: F401
    DisabledSafetyCheck,
    Exported,
    default_export_platform,
    deserialize,
    export,
    maximum_supported_calling_convention_version,
    minimum_supported_calling_convention_version,
    register_namedtuple_serialization,
    register_pytree_node_serialization,
)
from xform.export._shape_poly import (  # noqa: F401
    SymbolicScope,
    is_symbolic_dim,
    symbolic_args_specs,
    symbolic_shape,
)
