"""Placeholder: lowering of the qr family."""
