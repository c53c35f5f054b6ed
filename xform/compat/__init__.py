"""Run JAX programs and JAX libraries (optax, flax, equinox, chex) on xform, unmodified.

``xform.compat.install()`` makes ``import jax`` and ``import jax.<sub>`` resolve to xform's
modules in this process; call it before the libraries are imported. ``python -m xform.run
script.py [args]`` runs a script that way. ``uninstall()`` gives real JAX back to code that
imports it afterwards (modules imported under compat mode keep the xform modules they bound).

How names map (see ``_finder.py``): ``jax`` is a thin module over ``xform`` that reports the
JAX version xform's API follows; ``jax.<sub>`` is ``xform.<sub>`` itself (``jax.numpy`` is
``xform.numpy``) unless ``_finder.ALIASES`` says otherwise (``jax.interpreters.ad`` is
``xform.extend.ad``, ``jax.core`` is ``xform.compat._jax_core``, ...); the ``jax._src``
internals the libraries reach for live in ``_jax_src.py`` (small and stable ones only: the list
of those left out is in its docstring). A ``jax`` name xform lacks raises an
``ImportError``/``AttributeError`` that names it and says that xform lacks it (except
``from jax.<sub> import <missing name>``, where Python words the ``ImportError`` itself).

While installed, xform's ``xform_warn_recompiles`` warning is off (JAX has none; JAX code
retraces on purpose), ``jax.Array``/``jax.numpy.ndarray`` also accept typed key arrays (see
``_types.py``), and ``xform.Array`` has no ``__jax_array__`` (it is a ``jax.Array`` then).

Example::

    import xform.compat
    xform.compat.install()
    import optax, jax                # jax is xform here
    opt = optax.adam(1e-3)
"""

from xform.compat._finder import install, is_installed, uninstall

__all__ = ["install", "is_installed", "uninstall"]
