"""The linalg family of primitives (being written)."""

__all__ = []
