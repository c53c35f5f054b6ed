"""Every notebook in notebooks/ runs top to bottom without an error (outputs are not kept)."""

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
def test_notebook_runs(path):
    nb = nbformat.read(path, as_version=4)
    assert all(not cell.get("outputs") for cell in nb.cells if cell.cell_type == "code"), (
        f"{path.name} is saved with outputs; clear them before committing")
    # The kernel starts in the repo root, so `import xform` finds this checkout (an installed
    # copy is found too).
    client = NotebookClient(nb, kernel_name="python3", timeout=120,
                            resources={"metadata": {"path": str(ROOT)}})
    try:
        client.execute()
    except CellExecutionError as e:
        pytest.fail(f"{path.name} failed:\n{e}")
    errors = [out for cell in nb.cells if cell.cell_type == "code"
              for out in cell.get("outputs", []) if out.output_type == "error"]
    assert not errors, f"{path.name}: {errors}"
