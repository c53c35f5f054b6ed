"""Test setup: jaxprs typechecked after every transformation; bounded hypothesis profiles."""

import importlib
import os
import shutil
import tempfile

import hypothesis
import jax
import pytest

# pmap tests need several devices: 8 CPU devices, set before any backend starts. Everything
# else runs on the first one, as it would on a one-device machine.
jax.config.update("jax_num_cpu_devices", 8)

import xform  # noqa: E402

# The default ("ci") profile draws 8 fixed examples per property: the suite's time budget (15
# minutes on 2 cores) holds thousands of compiles; HYPOTHESIS_PROFILE=dev draws 50, fresh.
hypothesis.settings.register_profile(
    "ci",
    max_examples=8,
    deadline=None,
    derandomize=True,
    print_blob=True,
    suppress_health_check=[hypothesis.HealthCheck.too_slow],
)
hypothesis.settings.register_profile("dev", max_examples=50, deadline=None)
hypothesis.settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

xform.config.update("check_jaxprs", True)
# Many tests call one jitted function on several shapes on purpose; the third-trace warning
# (an error under filterwarnings) is tested on its own in tests/test_config_flags.py.
xform.config.update("xform_warn_recompiles", False)

# The persistent compilation cache stays on, as users run it, in a directory of this run that
# the xdist workers share (made by the controller before it starts them) and that goes after.
if "XFORM_TEST_CACHE_DIR" not in os.environ:
    os.environ["XFORM_TEST_CACHE_DIR"] = tempfile.mkdtemp(prefix="xform-test-cache-")
    _OWN_CACHE_DIR = True
else:
    _OWN_CACHE_DIR = False
from lowering import compile_cache  # noqa: E402

compile_cache.set_directory(os.environ["XFORM_TEST_CACHE_DIR"])


def pytest_unconfigure(config):
    if _OWN_CACHE_DIR:
        shutil.rmtree(os.environ["XFORM_TEST_CACHE_DIR"], ignore_errors=True)


@pytest.fixture
def installed():
    """Run a test with ``xform.compat`` installed (``import jax`` is xform); yields ``jax``."""
    from xform import compat  # noqa: PLC0415  (the compat package loads only for these tests)

    compat.install()
    try:
        yield importlib.import_module("jax")
    finally:
        compat.uninstall()


@pytest.fixture
def x64():
    """Run a test with xform's 64-bit mode on."""
    with xform.enable_x64():
        yield
