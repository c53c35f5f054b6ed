"""Lowering of the reductions family (being written)."""
