"""The README's and the docs' examples run as shown, and their tables and links hold.

Every ```console block of README.md and docs/*.md is a list of ``$ roofsim ...``
commands, each followed by the output it prints. A line ``...`` in the shown output
stands for any number of lines. A stale example fails with the output it printed.
Every ```python block of those pages runs and prints. Every table between
``<!-- table: NAME -->`` markers is what scripts/docs_tables.py generates from the
committed data, and every relative link points to a file that exists.
"""
import importlib.util
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from simulator.cli import main

README = Path(__file__).resolve().parents[1] / "README.md"
PAGES = [README] + sorted((README.parent / "docs").glob("*.md"))


def _blocks(text):
    return re.findall(r"```console\n(.*?)```", text, flags=re.S)


def _examples():
    """(page, command, shown lines) of every console block, pages in order."""
    out = []
    for page in PAGES:
        for block in _blocks(page.read_text()):
            cmd, shown = None, []
            for line in block.splitlines():
                if line.startswith("$ "):
                    if cmd:
                        out.append((page.name, cmd, shown))
                    cmd, shown = line[2:], []
                else:
                    shown.append(line)
            if cmd:
                out.append((page.name, cmd, shown))
    return out


def _matches(shown, actual):
    """``...`` in ``shown`` matches any run of lines in ``actual``."""
    if not shown:
        return not actual
    if shown[0] == "...":
        return any(_matches(shown[1:], actual[i:]) for i in range(len(actual) + 1))
    return bool(actual) and shown[0].rstrip() == actual[0].rstrip() and _matches(shown[1:], actual[1:])


EXAMPLES = _examples()


@pytest.mark.fast
def test_readme_has_examples():
    assert sum(page == "README.md" for page, _, _ in EXAMPLES) >= 5
    assert any(page != "README.md" for page, _, _ in EXAMPLES)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """One folder for all examples, in page order (later ones may read earlier files),
    holding a copy of examples/ and data/."""
    d = tmp_path_factory.mktemp("readme")
    shutil.copytree(README.parent / "examples", d / "examples")
    shutil.copytree(README.parent / "data", d / "data")
    return d


@pytest.mark.parametrize("page,cmd,shown", EXAMPLES, ids=[f"{p}: {c}" for p, c, _ in EXAMPLES])
def test_readme_example(page, cmd, shown, workdir, monkeypatch, capsys):
    argv = shlex.split(cmd)
    assert argv[0] == "roofsim", f"{page}: console examples must be roofsim commands"
    monkeypatch.chdir(workdir)
    code = main(argv[1:])
    out, err = capsys.readouterr()
    assert code == 0, err
    actual = out.rstrip("\n").splitlines()
    assert _matches(shown, actual), f"{page}: the output of `{cmd}` is stale:\n{out}"


PYTHON_BLOCKS = [(page.name, code) for page in PAGES
                 for code in re.findall(r"```python\n(.*?)```", page.read_text(), flags=re.DOTALL)]


@pytest.mark.fast
def test_docs_have_python_examples():
    assert any(page == "api.md" for page, _ in PYTHON_BLOCKS)


@pytest.mark.parametrize("page,code", PYTHON_BLOCKS,
                         ids=[f"{p}: python block {i}" for i, (p, _) in enumerate(PYTHON_BLOCKS)])
def test_python_block_runs(page, code, workdir, monkeypatch, capsys):
    """The pages' Python examples run as shown, from a folder holding a copy of data/ and
    examples/ (where their data paths point; what they write stays there)."""
    monkeypatch.chdir(workdir)
    exec(compile(code, page, "exec"), {"__name__": "docs"})
    assert capsys.readouterr().out


def _docs_tables():
    spec = importlib.util.spec_from_file_location(
        "docs_tables", README.parent / "scripts" / "docs_tables.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.fast
def test_docs_tables_are_current():
    """Every generated table (validation scores, the network and compiled tables, the
    teaching table, check's traces, the benchmarks' records, ...) says what the committed
    data give: ``scripts/docs_tables.py --check`` exits 0. After a change to the data or
    to the code behind a table, ``python3 scripts/docs_tables.py`` rewrites them."""
    script = README.parent / "scripts" / "docs_tables.py"
    run = subprocess.run([sys.executable, str(script), "--check"], capture_output=True,
                         text=True, cwd=README.parent, check=False)
    assert run.returncode == 0, run.stdout + run.stderr


@pytest.mark.fast
def test_docs_tables_check_finds_a_stale_cell():
    """An edited cell of a generated table is stale (the check's other half: it does not
    pass whatever the page holds)."""
    dt = _docs_tables()
    page = README.parent / "docs" / "validation.md"
    text = dt.rewrite(page.read_text(), README.parent, "validation.md")[0]   # current
    assert dt.rewrite(text, README.parent, "validation.md")[1] == []
    edited = text.replace("| H100 | grid | engine | 250/250 | 5.8% |",
                          "| H100 | grid | engine | 250/250 | 5.7% |", 1)
    assert edited != text
    assert dt.rewrite(edited, README.parent, "validation.md")[1] == ["validation"]


@pytest.mark.fast
def test_every_page_has_its_tables_generated():
    """The tables the docs promise are marked for generation, each once."""
    names = [n for page in PAGES for n in re.findall(r"^<!-- table: ([\w.-]+) -->$",
                                                         page.read_text(), flags=re.MULTILINE)]
    assert sorted(names) == sorted(set(names))
    assert set(names) == set(_docs_tables().TABLES)


LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


@pytest.mark.fast
def test_relative_links_point_to_files():
    """Every relative link of README.md and docs/*.md names a file that exists."""
    broken = []
    for page in PAGES:
        text = re.sub(r"```.*?```", "", page.read_text(), flags=re.DOTALL)    # code blocks
        text = re.sub(r"`[^`\n]*`", "", text)                                  # code spans
        for target in LINK.findall(text):
            if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
                continue                      # a URL or an anchor in the page
            path = target.split("#", 1)[0]
            if not (page.parent / path).exists():
                broken.append(f"{page.name}: {target}")
    assert not broken, broken


@pytest.mark.fast
def test_a_benchmark_record_becomes_its_table(tmp_path):
    """docs/performance.md's tables come from data/benchmarks/<bench>.json as the
    benchmarks' ``--json`` writes it (benchmarks/_record.py); without one, the caption
    says it is not yet recorded."""
    dt = _docs_tables()
    assert dt.render("bench-roofline", tmp_path).startswith("*Not yet recorded")
    spec = importlib.util.spec_from_file_location(
        "_record", README.parent / "benchmarks" / "_record.py")
    record = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(record)
    record.write(tmp_path / "data" / "benchmarks" / "bench_roofline.json", "bench_roofline", {
        "workload": "resnet50", "batch": 8, "ops": 106,
        "presets": [{"hw": "gtx480", "precision": "fp32", "roofline_ms": 2.98,
                     "datamove_ms": 2.22}],
        "cli": [{"command": "roofline", "median_s": 1.04, "min_s": 0.95, "max_s": 1.17}]},
        note="nothing else running")
    text = dt.render("bench-roofline", tmp_path)
    assert text.startswith("*Recorded ") and "nothing else running" in text
    assert "| gtx480 | fp32 | 2.98 | 2.22 |" in text
