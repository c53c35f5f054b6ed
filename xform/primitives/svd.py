"""Placeholder: filled in by the svd family."""

__all__ = []
