"""The reductions family of primitives (being written)."""

__all__ = []
