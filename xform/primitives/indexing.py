"""The indexing family of primitives (being written)."""

__all__ = []
