"""``python -m xform.run script.py [args]``: run a JAX program, unmodified, on xform.

The script runs as ``__main__`` with ``sys.argv`` set to ``[script.py, *args]`` after
``xform.compat.install()``, so its ``import jax`` (and the JAX libraries it imports: optax,
flax, equinox, ...) resolve to xform. ``python -m xform.run -m package.module [args]`` runs a
module the same way.
"""

import os
import runpy
import sys

from xform import compat

_USAGE = "usage: python -m xform.run script.py [args ...] | -m module [args ...]"


def main(argv=None):
    """Runs the script (or ``-m`` module) named in ``argv`` under compat mode."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help") or (argv[0] == "-m" and len(argv) < 2):
        print(_USAGE, file=sys.stderr)
        return 2
    compat.install()
    if argv[0] == "-m":
        sys.argv = argv[1:]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = argv
        sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))  # as ``python script.py``
        runpy.run_path(argv[0], run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
