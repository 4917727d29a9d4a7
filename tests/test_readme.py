"""The README's and the docs' examples run as shown.

Every ```console block of README.md and docs/*.md is a list of ``$ roofsim ...``
commands, each followed by the output it prints. A line ``...`` in the shown output
stands for any number of lines. A stale example fails with the output it printed.
"""
import re
import shlex
import shutil
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


def _table_rows():
    rows = {}
    for line in README.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 8 and cells[0].startswith(("H100", "H200")):
            rows[(cells[0].split()[0], cells[1], cells[2])] = cells[3:]
    return rows


def test_readme_validation_table_is_the_committed_scores():
    """The README's validation table says what data/validation/*_scores.json hold."""
    import json
    root = README.parent / "data" / "validation"
    shown = _table_rows()
    expected = {}
    for device, name in (("H100", "h100-sxm"), ("H200", "h200")):
        sc = json.loads((root / f"{name}_scores.json").read_text())["suites"]
        for suite, s in sc.items():
            for p in ("engine", "analytic", "roofline"):
                x = s[p]
                if x["n"] == 0:
                    continue
                expected[(device, suite, p)] = [f"{x['n']}/{s['records']}", f"{x['mape']:.1%}",
                                                f"{x['pearson']:.3f}", f"{x['spearman']:.3f}",
                                                f"{x['pairs_in_order']:.1%}"]
        # the kernels suite's row, from its own file (users' kernels, their own SASS):
        # MAPE, Pearson on log times and Spearman recomputed from the rows
        kf = root / f"{name}_kernels.json"
        if kf.exists():
            import math

            from scipy.stats import pearsonr, spearmanr
            doc = json.loads(kf.read_text())
            m = [r["measured_seconds"] for r in doc["rows"]]
            e = [r["engine_seconds"] for r in doc["rows"]]
            n = len(m)
            expected[(device, "kernels", "engine (own SASS)")] = [
                f"{n}/{n}", f"{sum(abs(b / a - 1) for a, b in zip(m, e)) / n:.1%}",
                f"{pearsonr([math.log(x) for x in m], [math.log(x) for x in e])[0]:.3f}",
                f"{spearmanr(m, e)[0]:.3f}", f"{doc['scores']['pairs_in_order']['fraction']:.1%}"]
    assert shown == expected


PYTHON_BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_readme_has_python_api_example():
    assert PYTHON_BLOCKS


@pytest.mark.parametrize("code", PYTHON_BLOCKS, ids=[f"python block {i}" for i in range(len(PYTHON_BLOCKS))])
def test_readme_python_block_runs(code, monkeypatch, capsys):
    """The README's Python API examples run as shown (from the repository root, where
    their data paths point)."""
    monkeypatch.chdir(README.parent)
    exec(compile(code, "README.md", "exec"), {"__name__": "readme"})
    assert capsys.readouterr().out


def test_readme_oracle_table_is_the_committed_data():
    """The README's regret table says what the committed network measurements and the
    predictions behind the picks give (simulator.analysis.networks)."""
    import simulator as rs
    shown = {}
    for line in README.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 7 and cells[0] in ("H100", "H200") and cells[2] in ("engine", "analytic"):
            shown[(cells[0], int(cells[1]), cells[2])] = cells[3:]
    want = {}
    for dev, gpu in (("H100", "h100-sxm"), ("H200", "h200")):
        for r in rs.network_summary(gpu, README.parent / "data" / "measurements",
                                    README.parent / "data" / "plans")["regret"]:
            if r["picked_from"] in ("engine", "analytic"):
                want[(dev, r["batch"], r["picked_from"])] = [
                    f"{r['measured_s'] * 1e3:.3f}", f"{r['regret']:+.1%}",
                    f"{r['dp_predicted_s'] * 1e3:.3f}", f"{r['dp_error']:+.1%}"]
    assert shown == want and len(want) == 12


def test_readme_compiled_tables_are_the_committed_data():
    """The README's eager-against-compiled tables say what the committed runs give
    (simulator.analysis.compiled): every forward's two times and every pick's regret."""
    import simulator as rs
    s = rs.compiled_summary("h100-sxm", README.parent / "data" / "measurements",
                            README.parent / "data" / "plans")
    fw = {(r["model"], r["batch"], r["forward"]): r for r in s["forwards"]}
    forwards, picks = {}, {}
    for line in README.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 7 and cells[0] in ("resnet50", "mobilenet_v2"):
            forwards[(cells[0], int(cells[1]))] = cells[2:]
        if len(cells) == 9 and cells[0] in ("resnet50", "mobilenet_v2"):
            picks[(cells[0], int(cells[1]), cells[2])] = cells[4:]
    want = {}
    for (m, b) in {(k[0], k[1]) for k in fw}:
        units = min(r["queued_s"] for k, r in fw.items()
                    if k[:2] == (m, b) and not k[2].startswith("whole-"))
        want[(m, b)] = [f"{fw[(m, b, f'whole-{c}')]['end_to_end_s'] * 1e3:.3f} / "
                        f"{fw[(m, b, f'whole-{c}')]['queued_s'] * 1e3:.3f}"
                        for c in ("eager", "torchscript", "inductor", "inductor-max-autotune")] \
            + [f"{units * 1e3:.3f}"]
    assert forwards == want and len(want) == 6
    want = {}
    for o in s["oracle"]:
        k = (o["model"], o["batch"], o["method"].replace("_", "-"))
        want[k] = ([f"best-of {o['best_of_s'] * 1e3:.3f}", "-", "-", "-", "-"] if o["incomplete"]
                   else [f"{o['predicted_s'] * 1e3:.3f}", f"{o['queued_s'] * 1e3:.3f}",
                         f"{o['regret_units']:+.1%}", f"{o['regret_queued']:+.1%}",
                         f"{o['regret_end_to_end']:+.0%}"])
    assert picks == want and len(want) == 12
