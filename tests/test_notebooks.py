"""Every notebook under notebooks/ runs from top to bottom (as CI runs it), its cells are
those of its paired percent-format script (notebooks/<name>.py, the source reviewers
read), and that source uses roofsim only through its public API (``import simulator``)."""
import ast
from pathlib import Path

import jupytext
import nbformat
import pytest
from nbclient import NotebookClient

FOLDER = Path(__file__).resolve().parents[1] / "notebooks"
NOTEBOOKS = sorted(FOLDER.glob("*.ipynb"))
SOURCES = sorted(FOLDER.glob("*.py"))
# roofsim's packages besides the public ``simulator`` (hardware presets and workloads
# come through rs.load_hardware and rs.load_workload)
INTERNAL = ("hwmodels", "workloads")


def test_there_are_notebooks():
    assert NOTEBOOKS


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs(path, tmp_path):
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert not errors


def test_every_notebook_has_its_percent_script_and_back():
    assert sorted(p.stem for p in NOTEBOOKS) == sorted(p.stem for p in SOURCES)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_cells_equal_its_percent_script(path):
    nb = nbformat.read(path, as_version=4)
    assert nb.metadata.get("jupytext", {}).get("formats") == "ipynb,py:percent", \
        f"{path.name} is not paired with its percent script"
    script = jupytext.read(path.with_suffix(".py"))
    cells = [(c.cell_type, c.source) for c in nb.cells]
    want = [(c.cell_type, c.source) for c in script.cells]
    assert cells == want, (f"{path.name} and {path.with_suffix('.py').name} have drifted apart: "
                           f"run `jupytext --sync notebooks/{path.stem}.py`, then execute the "
                           "notebook so that its outputs are the new code's")


def _imports(source: str):
    """(line, module) of every import in a notebook script (magics are comments there)."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                yield node.lineno, "." * node.level + (node.module or "")
            else:
                yield from ((node.lineno, f"{node.module}.{a.name}") for a in node.names)


@pytest.mark.parametrize("path", SOURCES, ids=[p.name for p in SOURCES])
def test_notebook_uses_only_the_public_api(path):
    """``import simulator`` (as rs) and nothing below it; no hwmodels or workloads."""
    bad = [f"line {n}: {m}" for n, m in _imports(path.read_text(encoding="utf-8"))
           if m.startswith(".") or (m.split(".")[0] == "simulator" and m != "simulator")
           or m.split(".")[0] in INTERNAL]
    assert not bad, f"{path.name} imports roofsim internals: {bad}"
    text = path.read_text(encoding="utf-8")
    for needle in ("importlib", "__import__", "sys.modules"):
        assert needle not in text, f"{path.name} reaches modules by {needle}"
