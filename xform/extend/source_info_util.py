"""Where in the user's code an operation came from, as ``jax.extend.source_info_util`` names
it. xform's source info is a ``(file, line, function)`` tuple (None when unknown); it is
kept on each equation as ``eqn.source_info``."""

from xform.core import format_source_info
from xform.core import source_info as current

__all__ = ["current", "summarize"]


def summarize(source_info):
    """``source_info`` as ``file:line (function)``."""
    return format_source_info(source_info)
