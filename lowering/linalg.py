"""Lowering of the linalg family (being written)."""
