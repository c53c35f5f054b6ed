"""The sorting family of primitives (being written)."""

__all__ = []
