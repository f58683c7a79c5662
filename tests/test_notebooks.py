"""The notebooks in notebooks/ run from top to bottom without an error.

Each notebook is executed in a fresh ``python3`` Jupyter kernel (ipykernel installs that kernelspec
into the environment: ``pip install -e ".[test]"``), with notebooks/ as the working directory, as a
reader would run it. The notebooks keep their problem sizes small: the three together take well
under two minutes on a 2-core machine.
"""

from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
NAMES = ["01_register_banks_and_traversal.ipynb", "02_simulated_vs_measured.ipynb",
         "03_one_main_loop_iteration.ipynb"]
CELL_TIMEOUT = 300  # seconds per cell


def test_every_notebook_is_tested():
    assert sorted(p.name for p in NOTEBOOKS.glob("*.ipynb")) == sorted(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_notebook_runs(name):
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    # committed without outputs: what runs here is what a reader gets
    assert all(not c.get("outputs") and c.get("execution_count") is None
               for c in nb.cells if c.cell_type == "code"), f"{name} is committed with outputs"
    client = nbclient.NotebookClient(nb, timeout=CELL_TIMEOUT, kernel_name="python3",
                                     resources={"metadata": {"path": str(NOTEBOOKS)}})
    client.execute()  # raises CellExecutionError (with the cell and its traceback) on any error
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors
