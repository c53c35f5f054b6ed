"""Every notebook in notebooks/ runs top to bottom without an error (outputs are not kept),
and draws the number of matplotlib figures it declares.

A notebook declares its figures in its metadata, ``"xform": {"figures": N}`` with N >= 1:
after the last cell, N figures must be open (figures are drawn off-screen and never saved; a
notebook does not close them)."""

import json
import os
import pathlib

import nbformat
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))

# jupyter_core warns (DeprecationWarning, an error under our pytest config) unless told to use
# the platformdirs locations, which are the future default anyway.
os.environ.setdefault("JUPYTER_PLATFORM_DIRS", "1")
# Kernels inherit this: matplotlib draws off-screen (Agg) and no figure window is opened.
os.environ.setdefault("MPLBACKEND", "Agg")

from nbclient import NotebookClient  # noqa: E402  (after the environment is set)
from nbclient.exceptions import CellExecutionError  # noqa: E402


def test_there_are_notebooks():
    assert NOTEBOOKS, "notebooks/ holds no .ipynb file"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_declares_its_figures(path):
    figures = nbformat.read(path, as_version=4).metadata.get("xform", {}).get("figures")
    assert isinstance(figures, int) and figures >= 1, (
        f"{path.name}: declare the matplotlib figures it draws (at least one) in its metadata "
        f'as "xform": {{"figures": N}}; found {figures!r}'
    )


# Appended to the executed copy (never to the file): how many figures the kernel holds open.
_COUNT_FIGURES = """\
import json as _json, sys as _sys
_plt = _sys.modules.get("matplotlib.pyplot")
print("__xform_figures__", _json.dumps(len(_plt.get_fignums()) if _plt else 0))
"""


def _figure_count(cell):
    # The kernel may split one print into several stream outputs: join them first.
    text = "".join(out.get("text", "") for out in cell.get("outputs", []))
    for line in text.splitlines():
        if line.startswith("__xform_figures__ "):
            return json.loads(line.split(" ", 1)[1])
    raise AssertionError(f"the figure-count cell printed nothing: {cell.get('outputs')}")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs(path):
    nb = nbformat.read(path, as_version=4)
    assert all(not cell.get("outputs") for cell in nb.cells if cell.cell_type == "code"), (
        f"{path.name} is saved with outputs; clear them before committing"
    )
    expected_figures = nb.metadata.get("xform", {}).get("figures")
    nb.cells.append(nbformat.v4.new_code_cell(_COUNT_FIGURES))
    # The kernel starts in the repo root, so `import xform` finds this checkout (an installed
    # copy is found too).
    client = NotebookClient(
        nb, kernel_name="python3", timeout=120, resources={"metadata": {"path": str(ROOT)}}
    )
    try:
        client.execute()
    except CellExecutionError as e:
        pytest.fail(f"{path.name} failed:\n{e}")
    errors = [
        out
        for cell in nb.cells
        if cell.cell_type == "code"
        for out in cell.get("outputs", [])
        if out.output_type == "error"
    ]
    assert not errors, f"{path.name}: {errors}"
    if expected_figures is not None:
        figures = _figure_count(nb.cells[-1])
        assert figures == expected_figures, (
            f"{path.name} drew {figures} matplotlib figures; its metadata declares "
            f"{expected_figures}"
        )
