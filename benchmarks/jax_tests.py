"""JAX's own test files run twice, once on JAX and once on xform, and their outcomes compared.

The measure: of JAX's tests that pass under JAX (and, separately, of those that use only
public API), the share that also pass with ``jax`` swapped for xform. Usage (see
benchmarks/README.md)::

    python benchmarks/jax_tests.py --git-dir /work/.mirror/jax-ml+jax/repo --tag jax-v0.10.2 \\
        --out /tmp/jt/results api_test random_test
    python benchmarks/jax_tests.py --tests-dir DIR --out OUT api_test   # files already there
    python benchmarks/jax_tests.py --out OUT --report-only api_test     # re-summarise

How the swap is made (this file is also the pytest plugin, ``-p jax_tests``, that each run
loads). Each file runs under pytest in a subprocess, one at a time under ``nice``, with JAX's
own pytest settings (``filterwarnings = error`` and its exceptions, read from JAX's
``pyproject.toml``). In the xform run, before the test module is imported:

1. real JAX's ``jax._src.test_util`` and every ``jax._src`` module the test file imports are
   imported, then ``xform.compat.install()`` runs and those modules are put back in
   ``sys.modules``: the test file's internal imports (``jtu``, ``jax._src.core``, ...) bind to
   real JAX, its ``import jax`` / ``jax.numpy`` / ``jax.lax`` / ``jax.experimental.*`` to xform;
2. public API the test reaches through an internal module is xform's: once the test module
   is imported, its names bound from the modules in ``PUBLIC_TWINS`` are rebound, a public
   name (``from jax._src.checkify import JaxRuntimeError``) to xform's, a module
   (``from jax._src import api``) to a view whose public names (``api.jit``) are xform's;
3. the helpers of ``jtu`` that apply a transformation to the test's function are pointed at
   xform's public equivalents, since they stand for "the library under test":
   ``jtu.check_grads``/``check_jvp``/``check_vjp`` become ``xform.test_util``'s, and the
   ``jit``/``make_jaxpr``/``vjp`` that ``JaxTestCase._CompileAndCheck`` and friends call
   become xform's. JAX's assertions (``assertAllClose`` and its tolerances) are unchanged;
4. the configuration ``JaxTestCase.setUp`` puts on JAX (strict dtype promotion, rank
   promotion "raise", checks on, x64 as set, a class's ``@jtu.with_config``) is mirrored onto
   xform's flags of the same names for the test.

Each test gets a time limit (SIGALRM in the test's call; no pytest-timeout here); a run that
dies (a crash, the file's time limit) is resumed after the test it died in, which is recorded
as failed. Outcomes are written a line per phase to ``OUT/<file>.<jax|xform>.jsonl``.

"Uses only public API" is decided from the test's source, read through ``ast``: the test
function's body, and the bodies of the helpers of the same file it calls (``self._helper``,
module-level functions), must not reference a name the test file imports from JAX's
internals (``jax._src``, ``jax.core``, ``jax.interpreters``, ``jax.extend``, ``jax.lib``,
``jaxlib``), except the public names of ``PUBLIC_TWINS`` (``api.jit`` is ``jax.jit``), reading
a flag (``config.enable_x64.value``; setting one through ``jax._src.config`` is internal),
the scaffolding modules (``SCAFFOLDING``: ``safe_zip``, NumPy references) and ``jtu``'s
assertion, random-input, device-query and test-generation helpers (``PUBLIC_JTU``); nor
``jax._src``/``jax.core``/``jax.interpreters``/``jax.extend``/``jax.lib`` as attributes, nor
``mlir``, ``hlo``, ``xla_client``, ``xla_bridge``, nor a private attribute (``f._cache_size``,
``key._impl``) or a primitive's attribute (``lax.sin_p.impl``). Of the decorators, only
internal ones (``@config.legacy_prng_key(...)``) and parameters made of JAX's own functions
count (``@jtu.sample_product(dtype=dtypes._float8_dtypes)`` is data); ``setUp`` is not read.
"""

import argparse
import ast
import collections
import importlib
import json
import os
import re
import signal
import subprocess
import sys
import time

import tomllib

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODES = ("jax", "xform")
# Files whose generated cases are many: run with JAX_NUM_GENERATED_CASES=--small-cases.
LARGE_FILES = {"lax_test", "lax_numpy_test", "lax_vmap_test", "lax_autodiff_test"}
# Files that need several host devices (as JAX's CI gives them).
MULTI_DEVICE_FILES = {"shard_map_test", "pjit_test", "pmap_test", "array_test"}
HOST_DEVICES = 8
# ``jtu.<name>`` prefixes that are test scaffolding or assertions, not JAX internals.
PUBLIC_JTU = (
    "assert",
    "check_",
    "rand",
    "skip",
    "run_on_devices",
    "test_device_matches",
    "device_under_test",
    "is_",  # environment queries: is_device_tpu, is_cuda_compute_capability_at_least, ...
    "default_tolerance",
    "join_tolerance",
    "tolerance",
    "format_shape_dtype_string",
    "dtypes",
    "cases_from",
    "sample_product",
    "ignore_warning",
    "capture_std",
    "create_mesh",
    "supported_dtypes",
    "num_float_bits",
    "promote_like_jnp",
    "JaxTestCase",
    "NotPresent",
    "parameterized",
    "thread_unsafe_test",
)
# Internal modules that are test scaffolding (pure-Python helpers, NumPy references, case
# generators), not uses of JAX's machinery: importing from them keeps a test public.
SCAFFOLDING = (
    "jax._src.util",
    "jax._src.internal_test_util",
    "jax._src.lax_reference",
    "jax._src.tree_util.tree_map",
)
# ... except these, which hand the test JAX's own functions (``lax.add`` as a reducer).
JAX_CALLABLE_RECORDS = (
    "lax_test_util.lax_reduce_ops",
    "lax_test_util.lax_named_reduce_ops",
)
# Internal modules whose public names are JAX's public API under another name
# (``jax._src.api.jit`` is ``jax.jit``): a test that reaches a public name through one of them
# uses public API, and in the xform run gets xform's. Their other names stay JAX's internals.
PUBLIC_TWINS = {
    "jax._src.api": "jax",
    "jax._src.shard_map": "jax",
    "jax._src.custom_derivatives": "jax.custom_derivatives",
    "jax._src.custom_batching": "jax.custom_batching",
    "jax._src.ad_checkpoint": "jax.ad_checkpoint",
    "jax._src.checkify": "jax.experimental.checkify",
    "jax._src.lax.lax": "jax.lax",
    "jax._src.lax.control_flow": "jax.lax",
    "jax._src.numpy.lax_numpy": "jax.numpy",
    "jax._src.random": "jax.random",
    "jax._src.dtypes": "jax.dtypes",
    "jax._src.tree_util": "jax.tree_util",
    "jax._src.debugging": "jax.debug",
    "jax._src.sharding_impls": "jax.sharding",
}
INTERNAL_MODULES = ("jax._src", "jax.core", "jax.interpreters", "jax.extend", "jax.lib", "jaxlib")
INTERNAL_ATTRS = {"_src", "core", "interpreters", "extend", "lib"}  # jax.<attr>
INTERNAL_NAMES = {"mlir", "hlo", "xla_client", "xla_bridge", "xla_extension", "jaxlib"}


# --------------------------------------------------------------------------- the plugin


def _record(event):
    with open(os.environ["XFORM_JT_OUT"], "a", encoding="utf-8") as f:
        f.write(json.dumps(event) + "\n")


def _internal_imports(tree):
    """``(module, full name, bound name)`` of the test file's imports from JAX's internals
    (``from jax._src import api``: ``("jax._src", "jax._src.api", "api")``)."""
    found = []
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                if full.startswith(INTERNAL_MODULES) or node.module.startswith(INTERNAL_MODULES):
                    found.append((node.module, full, alias.asname or alias.name))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith(INTERNAL_MODULES) and alias.asname:
                    found.append((alias.name, alias.name, alias.asname))
    return found


_public = {}  # public JAX module -> its public names (read from real JAX)
_twins_found = {}  # the xform run's test file: bound name -> (public module, attribute)


def _public_names(module):
    if module not in _public:
        _public[module] = {n for n in dir(importlib.import_module(module)) if n[0] != "_"}
    return _public[module]


def _twins(tree):
    """The test file's names bound from ``PUBLIC_TWINS``: ``{name: (public module, attr)}``,
    ``attr`` None for the module itself (its public names are public API), else a public name
    (read from real JAX: call it before compat mode is installed)."""
    found = {}
    for module, full, bound in _internal_imports(tree):
        attr = full.rpartition(".")[2]
        if full in PUBLIC_TWINS:
            found[bound] = (PUBLIC_TWINS[full], None)
            _public_names(PUBLIC_TWINS[full])
        elif module in PUBLIC_TWINS and attr in _public_names(PUBLIC_TWINS[module]):
            found[bound] = (PUBLIC_TWINS[module], attr)
    return found


class _Twin:
    """An internal module as the xform run's test file sees it: its public names are xform's
    (through compat mode), the rest real JAX's."""

    def __init__(self, real, public, names):
        self._real, self._public, self._names = real, public, names

    def __getattr__(self, name):
        return getattr(self._public if name in self._names else self._real, name)


def _lacking(name, error):
    def lacks(*args, **kwargs):
        raise NotImplementedError(f"xform lacks {name} ({error})")

    return lacks


def _bind_twins(test_file):
    """Points the test module's public names reached through internal modules at xform's."""
    module = next(
        (m for m in list(sys.modules.values()) if getattr(m, "__file__", None) == test_file),
        None,
    )
    for bound, (twin, attr) in _twins_found.items() if module is not None else ():
        public = importlib.import_module(twin)  # compat mode is installed: xform's
        if attr is None:
            setattr(module, bound, _Twin(getattr(module, bound), public, _public[twin]))
        else:
            try:
                setattr(module, bound, getattr(public, attr))
            except AttributeError as e:
                setattr(module, bound, _lacking(f"{twin}.{attr}", e))


def _swap_to_xform(test_file):
    """Binds the test file's JAX internals to real JAX and the rest of ``jax`` to xform."""
    with open(test_file, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    import jax._src.test_util as jtu  # noqa: PLC0415  (real JAX, before compat mode)

    for module, full, _ in _internal_imports(tree):
        for name in (full, module):  # ``from jax._src import core``: the module is ``full``
            try:
                importlib.import_module(name)
                break
            except ImportError:
                continue
    _twins_found.update(_twins(tree))
    real = {n: m for n, m in sys.modules.items() if n == "jax._src" or n.startswith("jax._src.")}
    import xform  # noqa: PLC0415
    import xform.compat  # noqa: PLC0415
    import xform.test_util  # noqa: PLC0415

    xform.compat.install()
    sys.modules.update(real)
    _record({"nodeid": None, "when": "info", "xform": xform.__file__})
    for name in ("check_grads", "check_jvp", "check_vjp"):
        setattr(jtu, name, getattr(xform.test_util, name))
    jtu.api = _ApiProxy(jtu.api, xform)
    _mirror_config(jtu, xform.config)


class _ApiProxy:
    """``jtu``'s ``api`` module with the transformations it applies to the test's function
    taken from xform (everything else is real JAX's)."""

    def __init__(self, real, xform):
        self._real = real
        self.jit, self.make_jaxpr, self.vjp = xform.jit, xform.make_jaxpr, xform.vjp

    def __getattr__(self, name):
        return getattr(self._real, name)


def _mirror_config(jtu, xconfig):
    """After ``JaxTestCase.setUp`` configured JAX, sets xform's flags of the same names."""
    from jax._src import config as jconfig  # noqa: PLC0415  (real JAX's)

    set_up = jtu.JaxTestCase.setUp
    names = sorted(set(xconfig.flags()) & set(jconfig.config_states) - {"jax_platforms"})

    def setUp(self):  # noqa: N802  (unittest's name)
        set_up(self)
        for name in names:
            value = jconfig.config_states[name].value
            if value != xconfig.read(name):
                try:
                    self.enterContext(xconfig.scope(name, value))
                except (ValueError, TypeError, AttributeError):
                    pass  # a value xform does not take: its own default stays

    jtu.JaxTestCase.setUp = setUp


def _dotted(node):
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


class _Publicity:
    """Decides, per test, whether it uses only public API (see the module docstring), from
    the test file's source alone: a test's method is found by its name (absl's generated
    cases add a number or ``_<case name>`` to the method's)."""

    def __init__(self, test_file):
        with open(test_file, encoding="utf-8") as f:
            self.tree = ast.parse(f.read())
        self.twins = _twins(self.tree)
        self.internal = {
            bound: full
            for _, full, bound in _internal_imports(self.tree)
            if not full.startswith(SCAFFOLDING) and self.twins.get(bound, (0, None))[1] is None
        }
        self.scaffolding = {
            bound: full
            for _, full, bound in _internal_imports(self.tree)
            if full.startswith(SCAFFOLDING)
        }
        self.functions = {}  # module-level helpers
        self.classes = {}
        for node in self.tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions[node.name] = node
            elif isinstance(node, ast.ClassDef):
                self.classes[node.name] = node

    def _lineage(self, name):
        """The class ``name`` and its bases defined in the file, nearest first."""
        order, todo = [], [name]
        while todo:
            cls = self.classes.get(todo.pop(0))
            if cls is not None and cls not in order:
                order.append(cls)
                todo += [b.id for b in cls.bases if isinstance(b, ast.Name)]
        return order

    def _method(self, lineage, test_name):
        best = None
        for cls in lineage:
            for node in cls.body:
                if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                rest = test_name[len(node.name) :] if test_name.startswith(node.name) else None
                if rest is not None and re.fullmatch(r"(\d+|_.*)?", rest):
                    if best is None or len(node.name) > len(best.name):
                        best = node
        return best

    def reasons(self, nodeid):
        """The internal names a test's body (and its helpers in the file) reference;
        ``["<no source>"]`` where its method is not found."""
        parts = nodeid.split("[")[0].split("::")[1:]
        if len(parts) == 2:
            lineage = self._lineage(parts[0])
            node = self._method(lineage, parts[1])
        else:
            lineage, node = [], self.functions.get(parts[0]) if parts else None
        if node is None:
            return ["<no source>"]
        found = set()
        self._scan(node.body, lineage, found, {id(node)})
        self._scan_decorators(node.decorator_list, found)
        return sorted(found)

    def _scan_decorators(self, decorators, found):
        """A decorator that is an internal (a ``jax._src.config`` scope) or parameters made of
        JAX's own functions (``JAX_CALLABLE_RECORDS``); data such as dtype lists is fine, and
        so are ``jtu``'s decorators (skips, case generation)."""
        for decorator in decorators:
            callee = decorator.func if isinstance(decorator, ast.Call) else decorator
            dotted = _dotted(callee)
            if dotted and dotted.split(".")[0] not in ("jtu", "parameterized"):
                self._check(dotted, found)
            for sub in ast.walk(decorator):
                head, _, attr = (_dotted(sub) or "").partition(".")
                if f"{self.scaffolding.get(head)}.{attr}".endswith(JAX_CALLABLE_RECORDS):
                    found.add(f"{self.scaffolding[head]}.{attr}")

    def _scan(self, nodes, lineage, found, seen):
        inner = set()  # the ``a`` and ``a.b`` of ``a.b.c``: read as part of the whole chain
        for stmt in nodes:
            for sub in ast.walk(stmt):  # (breadth first: a chain before its parts)
                if isinstance(sub, ast.Attribute):
                    inner.add(id(sub.value))
                    self._check_attribute(sub, found)
                if isinstance(sub, (ast.Attribute, ast.Name)) and id(sub) not in inner:
                    self._check(_dotted(sub), found)
                if isinstance(sub, ast.Call):
                    self._follow(sub.func, lineage, found, seen)

    def _check(self, dotted, found):
        if dotted is None:
            return
        head, _, rest = dotted.partition(".")
        attr = rest.split(".")[0]
        if head == "jtu" and head in self.internal:
            if attr and not attr.startswith(PUBLIC_JTU):
                found.add(f"jtu.{attr}")
        elif head in self.twins:  # a public name, or a module whose public names are
            twin, name = self.twins[head]
            if name is None and attr not in _public[twin]:
                found.add(f"{self.internal[head]}.{attr}" if attr else self.internal[head])
        elif self.internal.get(head) == "jax._src.config" and re.fullmatch(
            r"\w+\.\w+\.value", dotted
        ):
            pass  # reading a flag (``config.enable_x64.value``), which xform's mirrors
        elif head in self.internal:
            found.add(self.internal[head])
        elif f"{self.scaffolding.get(head)}.{attr}".endswith(JAX_CALLABLE_RECORDS):
            found.add(f"{self.scaffolding[head]}.{attr}")
        elif head in INTERNAL_NAMES:
            found.add(head)
        elif head == "jax" and attr in INTERNAL_ATTRS:
            found.add(f"jax.{attr}")

    def _check_attribute(self, node, found):
        """A private attribute of anything but the test case (``f._cache_size()``,
        ``key._impl``), or an attribute of a primitive (``lax.sin_p.impl``): internals."""
        base = node.value
        base_name = base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", "")
        if node.attr.startswith("_") and not node.attr.startswith("__"):
            if (_dotted(node) or "").split(".")[0] != "self":
                found.add(f".{node.attr} (private attribute)")
        elif base_name.endswith("_p") and base_name != "_p":
            found.add(f"{base_name}.{node.attr} (primitive internals)")

    def _follow(self, func, lineage, found, seen):
        target = None
        if isinstance(func, ast.Name):
            target = self.functions.get(func.id)
        elif isinstance(func, ast.Attribute) and _dotted(func) == f"self.{func.attr}":
            for cls in lineage:
                target = next((n for n in cls.body if getattr(n, "name", None) == func.attr), None)
                if target is not None:
                    break
        if isinstance(target, (ast.FunctionDef, ast.AsyncFunctionDef)) and id(target) not in seen:
            seen.add(id(target))
            self._scan(target.body, lineage, found, seen)


def pytest_configure(config):
    """In the xform run, swaps ``jax`` for xform before the test module is imported."""
    if os.environ.get("XFORM_JT_MODE") == "xform":
        _swap_to_xform(os.environ["XFORM_JT_FILE"])


def pytest_collection_modifyitems(session, config, items):
    """Drops the tests that a resumed run already has."""
    if "XFORM_JT_MODE" not in os.environ:
        return
    done = set()
    if os.environ.get("XFORM_JT_DONE"):
        with open(os.environ["XFORM_JT_DONE"], encoding="utf-8") as f:
            done = set(f.read().split("\n"))
    items[:] = [i for i in items if i.nodeid not in done]
    if os.environ["XFORM_JT_MODE"] == "xform":
        _bind_twins(os.environ["XFORM_JT_FILE"])


def pytest_collectreport(report):
    """Records a file that fails to import (every test of it then fails)."""
    if "XFORM_JT_MODE" in os.environ and report.failed:
        text = str(report.longrepr).strip().splitlines()
        last = next((ln for ln in reversed(text) if ln.startswith("E ")), text[-1] if text else "")
        _record({"nodeid": report.nodeid, "when": "collect", "outcome": "failed", "error": last})


def pytest_runtest_logstart(nodeid, location):
    """Marks a test as started, so that a run that dies in it knows where."""
    if "XFORM_JT_MODE" in os.environ:
        _record({"nodeid": nodeid, "when": "start"})


class TestTimeout(Exception):
    """A test ran past its time limit."""


def _alarm(signum, frame):
    raise TestTimeout(f"test ran past {os.environ.get('XFORM_JT_TIMEOUT')} s")


def _where(tb):
    """Where a failure is to be fixed, as ``path:line``: the innermost traceback frame inside
    xform or lowering, else the innermost one in the test file, else the innermost of all."""
    ours = in_test = last = None
    src = os.environ.get("XFORM_JT_SRC", REPO)
    roots = tuple(os.path.join(src, d) + os.sep for d in ("xform", "lowering"))
    while tb is not None:
        path = tb.tb_frame.f_code.co_filename
        last = f"{path.rpartition('site-packages/')[2]}:{tb.tb_lineno}"
        if path.startswith(roots):
            ours = f"{os.path.relpath(path, src)}:{tb.tb_lineno}"
        elif path == os.environ.get("XFORM_JT_FILE"):
            in_test = f"{os.path.basename(path)}:{tb.tb_lineno}"
        tb = tb.tb_next
    return ours or in_test or last


def _pytest_hooks():
    import pytest  # noqa: PLC0415  (only the plugin needs pytest)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(item):
        limit = int(os.environ.get("XFORM_JT_TIMEOUT", "0"))
        if limit:
            previous = signal.signal(signal.SIGALRM, _alarm)
            signal.alarm(limit)
        try:
            yield
        finally:
            if limit:
                signal.alarm(0)
                signal.signal(signal.SIGALRM, previous)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(item, call):
        outcome = yield
        report = outcome.get_result()
        event = {"nodeid": item.nodeid, "when": call.when, "outcome": report.outcome}
        if call.when == "call":
            event["duration"] = round(call.duration, 3)
        info = call.excinfo
        if info is not None and report.outcome == "failed":
            exc = info.value
            lines = str(exc).strip().splitlines()
            event["error_type"] = f"{type(exc).__module__}.{type(exc).__qualname__}"
            event["error"] = lines[0][:300] if lines else ""
            event["detail"] = "\n".join(lines[1:8])[:600]
            event["where"] = _where(info.tb)
        if report.outcome == "skipped" and info is not None:
            event["reason"] = str(info.value)[:200]
        _record(event)

    return pytest_runtest_call, pytest_runtest_makereport


if "XFORM_JT_MODE" in os.environ:
    pytest_runtest_call, pytest_runtest_makereport = _pytest_hooks()


# --------------------------------------------------------------------------- the runner


def extract(git_dir, tag, names, dest):
    """Writes ``tests/<name>.py`` of ``tag`` and JAX's pytest settings into ``dest``."""
    os.makedirs(dest, exist_ok=True)

    def show(path):
        return subprocess.run(
            ["git", "-C", git_dir, "show", f"{tag}:{path}"], capture_output=True, check=True
        ).stdout

    for name in names:
        with open(os.path.join(dest, f"{name}.py"), "wb") as f:
            f.write(show(f"tests/{name}.py"))
    with open(os.path.join(dest, "pyproject.toml"), "wb") as f:
        f.write(show("pyproject.toml"))


def snapshot(rev, out):
    """xform's source as of ``rev`` (``git archive``), unpacked under ``out``; its path."""
    commit = subprocess.run(
        ["git", "-C", REPO, "rev-parse", "--short", rev], capture_output=True, check=True, text=True
    ).stdout.strip()
    dest = os.path.join(out, f"xform-{commit}")
    if not os.path.isdir(dest):
        os.makedirs(dest)
        archive = subprocess.run(
            ["git", "-C", REPO, "archive", commit, "xform", "lowering"],
            capture_output=True,
            check=True,
        ).stdout
        subprocess.run(["tar", "-x", "-C", dest], input=archive, check=True)
    return dest, commit


def write_ini(tests_dir, out):
    """A pytest.ini with JAX's filterwarnings and markers (from its pyproject.toml, if found)."""
    options = {"filterwarnings": ["error"], "markers": []}
    for candidate in (tests_dir, os.path.dirname(os.path.abspath(tests_dir))):
        path = os.path.join(candidate, "pyproject.toml")
        if os.path.isfile(path):
            with open(path, "rb") as f:
                found = tomllib.load(f).get("tool", {}).get("pytest", {}).get("ini_options")
            if found:
                options.update({k: found[k] for k in ("filterwarnings", "markers") if k in found})
                break
    ini = os.path.join(out, "pytest.ini")
    with open(ini, "w", encoding="utf-8") as f:
        f.write("[pytest]\n")
        for key, values in options.items():
            f.write(f"{key} =\n" + "".join(f"    {v}\n" for v in values))
    return ini


def _events(path):
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def run_file(name, mode, args, ini):
    """Runs one test file in one mode, resuming past a crash; returns the seconds it took."""
    test_file = os.path.abspath(os.path.join(args.tests_dir, f"{name}.py"))
    out = os.path.join(args.out, f"{name}.{mode}.jsonl")
    log = os.path.join(args.out, f"{name}.{mode}.log")
    for path in (out, log):
        if os.path.exists(path):
            os.remove(path)
    env = dict(os.environ)
    env.update(
        XFORM_JT_MODE=mode,
        XFORM_JT_FILE=test_file,
        XFORM_JT_OUT=out,
        XFORM_JT_TIMEOUT=str(args.per_test_timeout),
        XFORM_JT_SRC=args.xform_src,
        PYTHONPATH=os.pathsep.join([os.path.dirname(os.path.abspath(__file__)), args.xform_src]),
    )
    cases = args.generated_cases or (args.small_cases if name in LARGE_FILES else None)
    if cases:
        env["JAX_NUM_GENERATED_CASES"] = str(cases)
    if name in MULTI_DEVICE_FILES:
        flag = f"--xla_force_host_platform_device_count={HOST_DEVICES}"
        env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " " + flag).strip()
    command = ["nice", "-n", "10", sys.executable, "-m", "pytest", test_file, "-q", "-p"]
    command += ["no:cacheprovider", "-p", "no:xdist", "-p", "jax_tests", "-c", ini]
    command += ["--rootdir", os.path.dirname(test_file), "-o", "addopts="]
    settings = {
        "jax_tests": f"{args.tag}" if args.git_dir else os.path.abspath(args.tests_dir),
        "xform": args.xform_label if mode == "xform" else None,
        "JAX_NUM_GENERATED_CASES": env.get("JAX_NUM_GENERATED_CASES", "JAX's default (10)"),
        "XLA_FLAGS": env.get("XLA_FLAGS"),
        "per_test_timeout_s": args.per_test_timeout,
    }
    start, deadline = time.monotonic(), time.monotonic() + args.file_timeout
    for attempt in range(args.resumes + 1):
        left = deadline - time.monotonic()
        if left <= 0:
            break
        with open(log, "a", encoding="utf-8") as f:
            try:
                rc = subprocess.run(
                    command,
                    check=False,
                    cwd=args.out,  # (``python -m`` puts the working directory first on the path)
                    env=env,
                    stdout=f,
                    stderr=subprocess.STDOUT,
                    timeout=left,
                ).returncode
            except subprocess.TimeoutExpired:
                rc = "file time limit"
        if rc in (0, 1, 5):  # all passed / some failed / nothing collected: it ran through
            break
        events = _events(out)
        started = [e["nodeid"] for e in events if e["when"] == "start"]
        finished = {e["nodeid"] for e in events if e["when"] == "teardown"}
        if not started or started[-1] in finished:
            break  # died outside a test (collection, exit): nothing to resume past
        _record_to(out, {"nodeid": started[-1], "when": "call", "outcome": "failed"}, rc)
        done = os.path.join(args.out, f"{name}.{mode}.done")
        with open(done, "w", encoding="utf-8") as f:
            f.write("\n".join(started))
        env["XFORM_JT_DONE"] = done
        print(f"  {name} [{mode}]: run {attempt + 1} ended ({rc}) in {started[-1]}; resuming")
    settings["minutes"] = round((time.monotonic() - start) / 60, 1)
    with open(os.path.join(args.out, f"{name}.{mode}.settings.json"), "w", encoding="utf-8") as f:
        json.dump(settings, f)
    return time.monotonic() - start


def _record_to(path, event, rc):
    event.update(error_type="crash", error=f"the test process died ({rc})", where=None)
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(event) + "\n")


def outcomes(path):
    """Per test: ``(outcome, failure event or None)``; a failure in any phase fails it."""
    result, collect_error = {}, None
    for event in _events(path):
        if event["when"] == "collect":
            collect_error = event
            continue
        if event["when"] in ("start", "info"):
            continue
        nodeid, outcome = event["nodeid"], event["outcome"]
        previous = result.get(nodeid, ("passed", None))
        if previous[0] != "failed" and outcome != "passed":
            result[nodeid] = (outcome, event if outcome == "failed" else None)
        else:
            result[nodeid] = previous
    return result, collect_error


def _load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def _cause_key(event):
    """A failure's group: its exception type and first message line, locations and numbers
    blanked so that one cause with many shapes or names is one group."""
    if event is None:
        return ("not run", "the xform run ended before this test (crash or file time limit)")
    kind = event.get("error_type", "collection error")
    message = event.get("error", "")
    message = re.sub(r"(/[^\s:;)'\"]+|<[^>]+>):\d+", "<loc>", message)
    message = re.sub(r"0x[0-9a-f]+", "0x…", message)
    message = re.sub(r"\d+", "N", message)
    return (kind.removeprefix("builtins."), message[:200])


def summarise(name, out, tests_dir):
    """The comparison of one file's two runs, as a dict."""
    jax, jax_collect = outcomes(os.path.join(out, f"{name}.jax.jsonl"))
    xf, xf_collect = outcomes(os.path.join(out, f"{name}.xform.jsonl"))
    publicity = _Publicity(os.path.join(tests_dir, f"{name}.py"))
    internal = {n: publicity.reasons(n) for n in jax}
    with open(os.path.join(out, f"{name}.meta.jsonl"), "w", encoding="utf-8") as f:
        f.writelines(json.dumps({"nodeid": n, "internal": r}) + "\n" for n, r in internal.items())
    passing = sorted(n for n, (o, _) in jax.items() if o == "passed")
    public = [n for n in passing if not internal.get(n, ["<unknown>"])]
    ok = {n for n in passing if xf.get(n, ("missing",))[0] == "passed"}
    causes = collections.defaultdict(list)
    for n in passing:
        if n in ok:
            continue
        outcome, event = xf.get(n, ("missing", None))
        if outcome == "skipped":
            event = {"error_type": "skipped under xform", "error": ""}
        elif outcome == "missing" and xf_collect is not None:
            event = xf_collect
        causes[_cause_key(event)].append((n, event))
    by_class = collections.defaultdict(lambda: [0, 0])
    for n in passing:
        entry = by_class[n.split("::")[1] if n.count("::") > 1 else "(functions)"]
        entry[0] += 1
        entry[1] += n in ok
    internal_reasons = collections.Counter(r for n in passing for r in internal.get(n, []))
    return {
        "file": name,
        "jax_collect_error": jax_collect and jax_collect.get("error"),
        "xform_collect_error": xf_collect and xf_collect.get("error"),
        "collected": len(jax),
        "jax_pass": len(passing),
        "jax_fail": sum(o == "failed" for o, _ in jax.values()),
        "jax_skip": sum(o == "skipped" for o, _ in jax.values()),
        "xform_pass": len(ok),
        "public_jax_pass": len(public),
        "public_xform_pass": len(ok.intersection(public)),
        "internal_reasons": internal_reasons.most_common(12),
        "by_class": dict(by_class),
        "settings": {
            mode: _load(path)
            for mode in MODES
            if os.path.exists(path := os.path.join(out, f"{name}.{mode}.settings.json"))
        },
        "causes": sorted(
            (
                {
                    "type": key[0],
                    "message": key[1],
                    "count": len(tests),
                    "public": sum(not internal.get(n, ["?"]) for n, _ in tests),
                    "examples": [n.split("::", 1)[-1] for n, _ in tests[:2]],
                    "example_message": (tests[0][1] or {}).get("error", ""),
                    "where": collections.Counter(
                        (e or {}).get("where") for _, e in tests
                    ).most_common(1)[0][0],
                }
                for key, tests in causes.items()
            ),
            key=lambda c: (-c["public"], -c["count"]),
        ),
    }


def _rate(a, b):
    return f"{100 * a / b:.1f}%" if b else "–"


def write_summary(results, path, settings, top):
    """The Markdown summary: a table of rates, then each file's top failure causes."""
    lines = ["# JAX's tests on xform", "", settings, ""]
    lines += [
        "| file | JAX pass | xform pass (of those) | rate | public-API JAX pass | "
        "public xform pass | public rate |",
        "|---|---|---|---|---|---|---|",
    ]
    totals = [0, 0, 0, 0]
    for r in results:
        row = (r["jax_pass"], r["xform_pass"], r["public_jax_pass"], r["public_xform_pass"])
        totals = [t + v for t, v in zip(totals, row, strict=True)]
        lines.append(
            f"| {r['file']} | {row[0]} | {row[1]} | {_rate(row[1], row[0])} | {row[2]} | "
            f"{row[3]} | {_rate(row[3], row[2])} |"
        )
    lines.append(
        f"| **all** | {totals[0]} | {totals[1]} | {_rate(totals[1], totals[0])} | {totals[2]} |"
        f" {totals[3]} | {_rate(totals[3], totals[2])} |"
    )
    overall = {}  # cause -> [count, public count, {file: count}, example]
    for r in results:
        for c in r["causes"]:
            entry = overall.setdefault((c["type"], c["message"]), [0, 0, {}, None])
            entry[0] += c["count"]
            entry[1] += c["public"]
            entry[2][r["file"]] = c["count"]
            entry[3] = entry[3] or f"{r['file']}::{c['examples'][0]}"
    lines += ["", "## Top causes over all files", ""]
    lines += ["| count (public) | cause | files | example |", "|---|---|---|---|"]
    for (kind, message), (n, public, files, example) in sorted(
        overall.items(), key=lambda item: (-item[1][1], -item[1][0])
    )[: 2 * top]:
        cause = f"`{kind}: {message}`".replace("|", "\\|")
        where = ", ".join(f"{f} {k}" for f, k in sorted(files.items(), key=lambda x: -x[1]))
        lines.append(f"| {n} ({public}) | {cause} | {where} | `{example}` |")
    for r in results:
        lines += ["", f"## {r['file']}", ""]
        lines.append(
            f"collected {r['collected']}; under JAX {r['jax_pass']} pass, {r['jax_fail']} fail, "
            f"{r['jax_skip']} skip; {r['xform_pass']} of the JAX-passing pass under xform."
        )
        how = r["settings"].get("xform") or r["settings"].get("jax")
        if how:
            minutes = ", ".join(f"{m} {v['minutes']} min" for m, v in r["settings"].items())
            lines.append(
                f"\nran: JAX's tests {how['jax_tests']}, xform at {how['xform']}, "
                f"JAX_NUM_GENERATED_CASES={how['JAX_NUM_GENERATED_CASES']}, "
                f"XLA_FLAGS={how['XLA_FLAGS'] or '(none)'}, per-test limit "
                f"{how['per_test_timeout_s']} s; {minutes}"
            )
        for key in ("jax_collect_error", "xform_collect_error"):
            if r[key]:
                lines.append(f"\n{key.replace('_', ' ')}: `{r[key]}`")
        if len(r["by_class"]) > 1:
            classes = ", ".join(f"{c} {x}/{j}" for c, (j, x) in r["by_class"].items())
            lines.append(f"\nxform / JAX passes by class: {classes}")
        if r["internal_reasons"]:
            reasons = ", ".join(f"{name} ({n})" for name, n in r["internal_reasons"][:8])
            lines.append(f"\nnot public-API because of: {reasons}")
        lines += ["", "| count (public) | cause | where (xform) | examples |", "|---|---|---|---|"]
        for c in r["causes"][:top]:
            cause = f"`{c['type']}: {c['message']}`".replace("|", "\\|")
            examples = "<br>".join(f"`{e}`" for e in c["examples"])
            lines.append(
                f"| {c['count']} ({c['public']}) | {cause} | {c['where'] or ''} | {examples} |"
            )
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


def main(argv=None):
    """Runs the named test files (default: the set below) and writes the comparison."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="*", help="test file names without .py")
    parser.add_argument("--tests-dir", help="a directory holding the test files")
    parser.add_argument("--git-dir", help="JAX's git dir, to extract tests/ from --tag")
    parser.add_argument("--tag", default="jax-v0.10.2", help="JAX's tag to extract")
    parser.add_argument("--out", default="/tmp/jt/results", help="results directory")
    parser.add_argument("--summary", help="Markdown summary (default: OUT/../summary.md)")
    parser.add_argument("--modes", default="jax,xform", help="which runs (jax, xform)")
    parser.add_argument(
        "--xform-at",
        help="run xform as of this commit of its repository (a `git archive` under OUT), "
        "not the working tree, which others may be editing",
    )
    parser.add_argument("--per-test-timeout", type=int, default=120, help="seconds")
    parser.add_argument("--file-timeout", type=int, default=3600, help="seconds per run")
    parser.add_argument("--resumes", type=int, default=5, help="restarts after a crash")
    parser.add_argument("--generated-cases", type=int, help="JAX_NUM_GENERATED_CASES for all")
    parser.add_argument("--small-cases", type=int, default=2, help="... for LARGE_FILES")
    parser.add_argument("--top", type=int, default=15, help="causes listed per file")
    parser.add_argument("--report-only", action="store_true", help="summarise earlier runs")
    args = parser.parse_args(argv)
    files = args.files or [
        "api_test",
        "custom_api_test",
        "lax_control_flow_test",
        "random_test",
        "mutable_array_test",
        "checkify_test",
        "shard_map_test",
        "lax_test",
    ]
    os.makedirs(args.out, exist_ok=True)
    args.xform_src, args.xform_label = REPO, "the working tree"
    if args.xform_at and not args.report_only:
        args.xform_src, commit = snapshot(args.xform_at, args.out)
        args.xform_label = f"commit {commit}"
    if args.tests_dir is None:
        args.tests_dir = os.path.join(args.out, "tests")
        if not args.report_only:
            if not args.git_dir:
                parser.error("give --tests-dir or --git-dir")
            extract(args.git_dir, args.tag, files, args.tests_dir)
    ini = None if args.report_only else write_ini(args.tests_dir, args.out)
    for name in [] if args.report_only else files:
        for mode in args.modes.split(","):
            seconds = run_file(name, mode, args, ini)
            print(f"{name} [{mode}]: {seconds:.0f} s", flush=True)
        report(args, files)
    report(args, files)


def report(args, files):
    """Writes OUT/summary.json and the Markdown summary for the files run so far (the named
    ones, then any other file OUT holds both runs of)."""
    held = sorted(
        n.removesuffix(".xform.jsonl")
        for n in os.listdir(args.out)
        if n.endswith(".xform.jsonl")
        and os.path.exists(os.path.join(args.out, n[:-11] + "jax.jsonl"))
    )
    names = [n for n in files if n in held] + [n for n in held if n not in files]
    results = [summarise(name, args.out, args.tests_dir) for name in names]
    with open(os.path.join(args.out, "summary.json"), "w", encoding="utf-8") as f:
        json.dump(results, f, indent=1)
    settings = (
        "Each file's section says how it ran (xform's commit, JAX_NUM_GENERATED_CASES, "
        "XLA_FLAGS, the per-test limit, minutes per run). Rates are xform passes among the tests "
        "that pass under JAX; 'public' restricts both to tests that use only public API "
        "(benchmarks/jax_tests.py says how that is decided). Count (public): failing tests "
        "of a cause, and how many of them are public-API tests (causes are listed by the "
        "latter: a failure of a test that uses JAX's internals on xform's values is often "
        "no fault of xform's)."
    )
    write_summary(
        results, args.summary or os.path.join(args.out, "..", "summary.md"), settings, args.top
    )


if __name__ == "__main__":
    main()
