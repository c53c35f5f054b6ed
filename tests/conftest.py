"""Test setup: jaxprs typechecked after every transformation; bounded hypothesis profiles."""

import os

import hypothesis
import jax
import pytest

# pmap tests need several devices: 8 CPU devices, set before any backend starts. Everything
# else runs on the first one, as it would on a one-device machine.
jax.config.update("jax_num_cpu_devices", 8)

import xform  # noqa: E402

hypothesis.settings.register_profile(
    "ci", max_examples=12, deadline=None, derandomize=True, print_blob=True,
    suppress_health_check=[hypothesis.HealthCheck.too_slow])
hypothesis.settings.register_profile("dev", max_examples=50, deadline=None)
hypothesis.settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

xform.config.update("check_jaxprs", True)
# Many tests call one jitted function on several shapes on purpose; the third-trace warning
# (an error under filterwarnings) is tested on its own in tests/test_config_flags.py.
xform.config.update("xform_warn_recompiles", False)


@pytest.fixture
def x64():
    """Run a test with xform's 64-bit mode on."""
    with xform.enable_x64():
        yield
