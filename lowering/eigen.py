"""Placeholder: lowering of the eigen family."""
