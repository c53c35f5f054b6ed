"""jaxpr -> StableHLO lowering and the XLA runtime. Importing this registers every rule."""

from lowering import (  # noqa: F401  (each module registers its family's lowering rules)
    call,
    elementwise,
    indexing,
    linalg,
    reductions,
    sorting,
    structural,
)
