"""Lowering of the indexing family (being written)."""
