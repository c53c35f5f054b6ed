"""Test setup: jaxprs typechecked after every transformation; bounded hypothesis profiles;
the eager path under test (``--eager``)."""

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


# Eager primitives run on a CPU backend with NumPy (xform_eager_path="host") unless the flag
# says "xla", the compiled path every GPU or TPU takes. So that the README's one command tests
# both, the eager-heavy files below run twice by default ("--eager=both"): as they are, and
# again under the XLA path, each test's twin with "xla-eager" in its brackets
# (``test_sin[float32-xla-eager]``; ``-k xla-eager`` selects the twins). The twins add about
# 90 s on 2 cores (every primitive signature compiled); test_elementwise.py would add 100 s
# more, and test_host_numerics.py under XLA would compare eager XLA with jit, which the jit
# tests cover. "--eager=xla" runs every test on the XLA path (the flag set before any test
# module is imported); "--eager=host" runs every test once, on the host path.
XLA_EAGER_FILES = frozenset(
    [
        "test_dispatch.py",
        "test_eager_fast_paths.py",
        "test_fidelity_eager.py",
        "test_reductions.py",
    ]
)


def pytest_addoption(parser):
    parser.addoption(
        "--eager",
        choices=("both", "host", "xla"),
        default="both",
        help="the eager path on a CPU: 'both' (default: every test on the host path, the "
        "eager-heavy files again under XLA), 'host' (host only) or 'xla' (everything "
        "under XLA, as on a GPU)",
    )


def pytest_configure(config):
    if config.getoption("eager") == "xla":
        xform.config.update("xform_eager_path", "xla")


@pytest.hookimpl(trylast=True)  # after the test's own parametrize marks: the id comes last
def pytest_generate_tests(metafunc):
    # The twins: one more parameter of the autouse fixture below, hidden from the node ids
    # on the host path (they stay as they are) and "xla-eager" on the XLA path.
    if (
        metafunc.config.getoption("eager") == "both"
        and metafunc.definition.path.name in XLA_EAGER_FILES
    ):
        metafunc.parametrize(
            "eager_path",
            ["host", "xla"],
            ids=[pytest.HIDDEN_PARAM, "xla-eager"],
            indirect=True,
        )


@pytest.fixture(autouse=True)
def eager_path(request):
    """The eager path a test runs on: "xla" for the twins of ``XLA_EAGER_FILES`` (and every
    test under ``--eager=xla``), else "host"."""
    path = getattr(request, "param", None)
    if path is None:
        yield xform.config.xform_eager_path
        return
    with xform.config.scope("xform_eager_path", path):
        yield path


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
