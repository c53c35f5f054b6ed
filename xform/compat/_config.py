"""``jax.config`` under ``xform.compat``: JAX's ``Config`` object over ``xform.config``.

JAX's ``jax.config`` is an object, not a module: its attributes have other types than the
functions of ``xform.config`` (``jax.config.x64_enabled`` is a bool; a library that calls
``jnp.float64 if jax.config.x64_enabled else ...`` must read the flag, not a function's truth),
and ``import jax.config`` fails. Every flag is xform's own: this object only reads and sets
them with JAX's signatures.
"""

import sys

from xform import config as _config


class Config:
    """JAX's configuration object: ``update``/``read`` by flag name, flags as attributes
    (``jax.config.jax_enable_x64``), ``x64_enabled`` and ``values`` as JAX types them."""

    def update(self, name, value):
        """Set flag ``name`` globally (``xform.config.update``)."""
        _config.update(name, value)

    def read(self, name):
        """Flag ``name``'s value in this thread."""
        return _config.read(name)

    @property
    def x64_enabled(self):
        """Whether 64-bit dtypes are on in this thread (a bool, as JAX's)."""
        return bool(_config.x64_enabled())

    @property
    def values(self):
        """Every flag's value in this thread, by name (a dict, as JAX's)."""
        return {name: _config.read(name) for name in _config.flags()}

    def parse_flags_with_absl(self):
        """Reads ``--jax_<flag>=<value>`` command-line arguments into the flags (test suites
        call it at import time); with absl installed, also parses absl's flags from the
        command line, as JAX's does (absltest-based suites read ``--test_tmpdir`` then)."""
        try:
            import absl.flags  # noqa: PLC0415  (absl is optional, as for JAX)
        except ImportError:
            pass
        else:
            if not absl.flags.FLAGS.is_parsed():
                absl.flags.FLAGS(sys.argv, known_only=True)
        for arg in sys.argv[1:]:
            if arg.startswith("--jax_") and "=" in arg:
                name, value = arg[2:].split("=", 1)
                self.update(name, {"true": True, "false": False}.get(value.lower(), value))

    def config_with_absl(self):
        """JAX reads its flags from absl here; xform's flags come from ``update`` and the
        ``JAX_<NAME>`` environment variables, so nothing more is read."""

    complete_absl_config = use_absl = config_with_absl

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        try:
            return _config.read(name)
        except AttributeError:
            raise AttributeError(f"'Config' object has no attribute {name!r}") from None

    def __repr__(self):
        return "<jax.config under xform.compat>"


config = Config()
