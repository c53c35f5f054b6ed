"""Placeholder: filled in by the eigen family."""

__all__ = []
