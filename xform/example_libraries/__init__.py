"""``xform.example_libraries``: the small optimizer and network libraries JAX ships with
its examples."""

from xform.example_libraries import optimizers, stax  # noqa: F401
