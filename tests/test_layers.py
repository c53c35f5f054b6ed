"""The architecture's layers, enforced on the import graph (ARCHITECTURE.md has the picture).

Bottom to top; a module may import its own layer and those below, never one above, and no
two modules import each other in a loop. The graph is read from the source by grimp (every
import statement, at module level or inside a function), so a new upward import or cycle
fails here, wherever it hides.
"""

import subprocess
import sys

import grimp
import pytest

# (layer, the packages and modules in it), bottom to top. A module belongs to the longest
# prefix that names it; xform's other modules are the libraries.
LAYERS = [
    (
        "ir",
        [
            "xform.core",
            "xform.jaxpr_printer",
            "xform.dtypes",
            "xform.config",
            "xform.errors",
            "xform.traceback_util",
            "xform.version",
        ],
    ),
    ("reused from JAX", ["xform.pytree", "xform.meshes"]),
    ("interpreters", ["xform.interpret"]),
    ("primitives", ["xform.primitives"]),
    ("lowering", ["lowering"]),
    ("runtime", ["xform.runtime"]),
    (
        "api",
        ["xform.api", "xform.custom_derivatives", "xform.custom_batching", "xform.ad_checkpoint"],
    ),
    ("libraries", ["xform"]),
    ("the package's face", ["xform.__init__", "xform.__main__", "xform.run", "xform.compat"]),
]
_RANK = {name: i for i, (name, _) in enumerate(LAYERS)}


def layer_of(module):
    if module == "xform":  # the package's __init__: it hands every public name on
        return "the package's face"
    best, length = None, -1
    for name, prefixes in LAYERS:
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > length:
                best, length = name, len(p)
    return best


@pytest.fixture(scope="module")
def graph():
    return grimp.build_graph("xform", "lowering", include_external_packages=True, cache_dir=None)


def _ours(graph):
    return sorted(m for m in graph.modules if m.split(".")[0] in ("xform", "lowering"))


def test_every_module_has_a_layer(graph):
    assert [m for m in _ours(graph) if layer_of(m) is None] == []


def test_no_import_runs_up_a_layer(graph):
    upward = []
    for m in _ours(graph):
        for d in graph.find_modules_directly_imported_by(m):
            if d.split(".")[0] in ("xform", "lowering") and _RANK[layer_of(d)] > _RANK[layer_of(m)]:
                upward.append(f"{m} ({layer_of(m)}) imports {d} ({layer_of(d)})")
    assert upward == []


def _cycles(graph, modules):
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.find_modules_directly_imported_by(v):
            if w not in modules:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10_000))
    try:
        for m in modules:
            if m not in index:
                visit(m)
    finally:
        sys.setrecursionlimit(limit)
    return found


def test_no_import_cycles(graph):
    assert _cycles(graph, set(_ours(graph))) == []


def test_jaxlib_is_imported_only_by_lowering_and_the_runtime(graph):
    importers = graph.find_modules_that_directly_import("jaxlib")
    assert sorted(m for m in importers if layer_of(m) not in ("lowering", "runtime")) == []


def _run(code):
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=120
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_the_ir_imports_without_jaxlib_or_the_lowering():
    loaded = _run(
        "import sys, xform.core, xform.jaxpr_printer, xform.dtypes, xform.errors\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & "
        "{'jax', 'jaxlib', 'lowering', 'scipy'}))"
    )
    assert loaded.strip() == "[]"


def test_import_xform_loads_only_what_a_program_uses():
    # A jitted function runs without SciPy, export, compat or the sharding library loading.
    loaded = _run(
        "import sys, xform\n"
        "assert 'jaxlib' not in sys.modules\n"  # `import xform` alone loads nothing
        "import xform.numpy as jnp\n"
        "print(xform.jit(lambda x: jnp.sin(x) * 2)(jnp.ones(3)))\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'scipy' or m in "
        "('xform.scipy', 'xform.export', 'xform.compat', 'xform.sharding')))"
    )
    assert loaded.strip().splitlines()[-1] == "[]"


def test_each_way_in_gives_arrays_their_operators():
    # The operators are xform.numpy's functions: the package's names and xform.lax bring them
    # (as JAX's jax and jax.lax load jax.numpy), whichever a program starts from.
    for start in ("import xform; lax = xform.lax", "import xform.lax as lax",
                  "from xform import lax"):  # fmt: skip
        out = _run(
            f"{start}\nprint(lax.fori_loop(0, 3, lambda i, c: c.astype('float32') + 1, 0.0))"
        )
        assert out.strip() == "3.0", start
