"""(being written)."""
