"""Placeholder: lowering of the svd family."""
