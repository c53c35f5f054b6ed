"""Placeholder: filled in by the qr family."""

__all__ = []
