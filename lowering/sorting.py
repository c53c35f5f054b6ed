"""Lowering of the sorting family (being written)."""
