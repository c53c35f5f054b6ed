"""JAX's mesh and sharding classes, which xform's arrays and types carry as they are (a
``NamedSharding`` over a ``Mesh`` or its ``AbstractMesh``, a ``PartitionSpec``), and the mesh
that ``set_mesh`` makes current.

Beside ``xform/pytree.py`` (JAX's pytree registry), the one module below the runtime that
reaches into JAX: the primitives type and check shardings with these classes without
importing JAX themselves.
"""

from jax.sharding import (  # noqa: F401
    AbstractMesh,
    Mesh,
    NamedSharding,
    PartitionSpec,
    get_abstract_mesh,
    get_mesh,
)
