"""The house rules: data flows hardware + workload -> lowering -> engine -> Result ->
analysis -> comparison, never backwards; one Result for every predictor; the public API's
examples run; the launches that crashed on a missing result key print their results."""
import doctest
import importlib
import re
from pathlib import Path

import pytest

from simulator.cli import main

ROOT = Path(__file__).resolve().parents[1]


def _imports(folder):
    """(file, imported module) of every import under ``folder``."""
    out = []
    for path in sorted((ROOT / folder).rglob("*.py")):
        for line in path.read_text().splitlines():
            m = re.match(r"\s*(?:from\s+(\S+)\s+import|import\s+(\S+))", line)
            if m:
                out.append((path.relative_to(ROOT), m.group(1) or m.group(2)))
    return out


PACKAGES = ("hwmodels", "workloads", "simulator")
# docs/architecture.md's floors, lowest first: a module imports only its own floor and below
FLOORS = (("hwmodels", "workloads"),
          ("simulator.result", "simulator.table", "simulator.parallel", "simulator.jit",
           "simulator.arguments", "simulator.nbrefs"),
          ("simulator.simt", "simulator.systolic", "simulator.kernelcode"),
          ("simulator.analysis",),
          ("simulator.measure",),
          ("simulator.api", "simulator.cli", "simulator.__main__", "simulator"))


def import_graph(root: Path, packages=PACKAGES) -> dict:
    """{module: the project's modules it imports}, every import statement counted --
    function-local ones too, since they run -- and relative imports resolved."""
    import ast
    files = {}
    for pkg in packages:
        for path in (root / pkg).rglob("*.py"):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            files[".".join(parts)] = path

    def known(name):
        while name and name not in files:
            name = name.rpartition(".")[0]
        return name

    graph = {m: set() for m in files}
    for mod, path in files.items():
        here = mod.split(".") if path.name == "__init__.py" else mod.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(here[:len(here) - node.level + 1] + ([base] if base else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in files else base
                           for a in node.names]
            else:
                continue
            for t in map(known, targets):
                if t and t != mod:
                    graph[mod].add(t)
    return graph


def cycles(graph) -> list:
    """The import cycles: each strongly connected component of more than one module
    (Tarjan's algorithm, iterative), sorted."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return sorted(out)


def floor(module: str) -> int:
    for i, names in enumerate(FLOORS):
        if any(module == n or module.startswith(n + ".") for n in names):
            return i
    raise AssertionError(f"{module} is on no floor of docs/architecture.md")


def test_no_import_cycle_anywhere():
    assert cycles(import_graph(ROOT)) == []


def test_the_cycle_test_finds_a_planted_cycle(tmp_path):
    pkg = tmp_path / "simulator"
    (pkg / "analysis").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "analysis" / "__init__.py").write_text("")
    (pkg / "analysis" / "a.py").write_text("from . import b\n")
    (pkg / "analysis" / "b.py").write_text("def f():\n    from simulator.analysis.c import g\n")
    (pkg / "analysis" / "c.py").write_text("from .a import x\n")
    (pkg / "analysis" / "d.py").write_text("import simulator.analysis.a\n")
    found = cycles(import_graph(tmp_path, ("simulator",)))
    assert found == [["simulator.analysis.a", "simulator.analysis.b", "simulator.analysis.c"]]


def test_nothing_imports_upwards():
    """Each module imports only its own floor and those below (docs/architecture.md);
    hwmodels and workloads import nothing else of the project, nor each other."""
    graph = import_graph(ROOT)
    up = sorted((m, t) for m, ts in graph.items() for t in ts if floor(t) > floor(m))
    sideways = sorted((m, t) for m, ts in graph.items() for t in ts
                      if floor(m) == 0 and m.split(".")[0] != t.split(".")[0])
    assert up == [] and sideways == []


@pytest.mark.parametrize("engine", ["simulator/simt", "simulator/systolic"])
def test_engines_never_import_analysis(engine):
    bad = [(f, m) for f, m in _imports(engine) if "analysis" in m]
    assert not bad, bad


@pytest.mark.parametrize("folder", ["hwmodels", "workloads", "simulator"])
def test_library_errors_name_arguments_not_flags(folder):
    """Errors raised below the CLI name the Python argument or field (``stalls='pipeline'``,
    ``l2.size_bytes: ...``); the CLI maps names to its flags. No ``--flag`` in them."""
    import ast
    bad = []
    for path in sorted((ROOT / folder).rglob("*.py")):
        if (ROOT / "simulator" / "cli") in path.parents:
            continue                          # the CLI's own errors name its flags
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Raise) and node.exc is not None:
                for c in ast.walk(node.exc):
                    # another tool's own flags (ncu --csv) are not roofsim's
                    text = re.sub(r"\bncu( --[\w-]+)+", "", c.value) if isinstance(c, ast.Constant) \
                        and isinstance(c.value, str) else ""
                    if re.search(r"(^|[\s(`'\"])--[a-z]", text):
                        bad.append(f"{path.relative_to(ROOT)}:{node.lineno}: {c.value!r}")
    assert not bad, bad


def test_hwmodels_and_workloads_import_nothing_else_from_the_project():
    for folder in ("hwmodels", "workloads"):
        bad = [(f, m) for f, m in _imports(folder)
               if m.split(".")[0] in ("simulator",) or (folder == "hwmodels" and m.startswith("workloads"))
               or (folder == "workloads" and m.startswith("hwmodels"))]
        assert not bad, bad


def test_plots_draw_results_without_simulating():
    bad = [(f, m) for f, m in _imports("simulator/analysis/plots.py".rsplit("/", 1)[0])
           if f.name == "plots.py" and (m.startswith("simulator.simt") or m.startswith("simulator.systolic")
                                        or m.startswith("workloads"))]
    assert not bad, bad


def test_measure_only_talks_to_the_gpu():
    """measure/ holds the harness, the microbenchmark kernels, the suites, the network's
    forward pass, the framework baseline and the framework against its compilers; validation,
    calibration and reading SASS (which read files and never touch a GPU) are analyses."""
    names = {p.name for p in (ROOT / "simulator" / "measure").glob("*.py")}
    assert names == {"__init__.py", "harness.py", "micro.py", "suites.py", "network.py", "framework.py",
                     "compiled.py", "counters.py", "tune.py", "kernels.py"}


@pytest.mark.parametrize("module", ["simulator.api", "simulator.result", "simulator.simt.api",
                                    "hwmodels.registry",
                                    "simulator.analysis.roofline"])
def test_docstring_examples_run(module, monkeypatch):
    monkeypatch.chdir(ROOT)              # examples read data/measurements/...
    res = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert res.attempted > 0 and res.failed == 0


def test_every_predictor_returns_a_result():
    import simulator as rs
    hw = rs.load_hardware("gtx480")
    p = rs.predict(hw, "gemm-tiled", mode="full", m=64, n=64, k=64)
    rs_tpu = rs.simulate_systolic(rs.load_hardware("tpu-v1"), "gemm:256x256x256")
    for r, pred in ((p.engine, "engine"), (p.analytic, "analytic"), (p.roofline, "roofline"),
                    (rs_tpu, "systolic")):
        assert isinstance(r, rs.Result) and r.predictor == pred
        assert r.flops > 0 and r.compulsory_bytes > 0 and r.seconds > 0
        d = r.to_dict()
        assert set(d) >= {"predictor", "mode", "hardware", "seconds", "flops", "compulsory_bytes",
                          "bytes_by_level", "simulated_fraction", "estimated_error", "wall_seconds"}
    assert p.engine.flops == p.analytic.flops == p.roofline.flops == 2 * 64 ** 3
    assert p.engine.simulated_fraction == 1.0 and p.analytic.simulated_fraction is None


THREE = [
    ["--kernel", "conv-direct", "--layer", "layer1.0.conv2"],
    ["--kernel", "relu", "--n", "67108864"],
    ["--kernel", "gemm-naive", "--m", "256", "--n", "256", "--k", "8192"],
]


@pytest.mark.parametrize("argv", THREE, ids=[" ".join(a) for a in THREE])
def test_trip_extrapolated_launches_print_their_results(argv, capsys, tmp_path):
    """These ended in KeyError: 'estimated_error' (loop-trip extrapolation set no error
    estimate); now every sampled launch prints its estimated error, and the JSON holds it."""
    out = tmp_path / "r.json"
    assert main(["simulate", "simt", "--hw", "h100-sxm", *argv, "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "est. error" in text and "warp instructions" in text
    import json
    d = json.loads(out.read_text())
    assert d["engine"]["estimated_error"] >= 0 and 0 < d["engine"]["simulated_fraction"] < 1


def test_no_issue_numbers_or_outside_files_in_code_and_docs():
    texts = [ROOT / "README.md"] + [p for d in ("hwmodels", "workloads", "simulator", "benchmarks",
                                                "scripts", "docs", "notebooks")
                                     for p in (ROOT / d).rglob("*")
                                     if p.suffix in (".py", ".md", ".sh") and p.is_file()]
    bad = []
    for p in texts:
        t = p.read_text(errors="replace")
        if re.search(r"\bissues? \d+\b", t, re.I) or "../shared" in t:
            bad.append(str(p.relative_to(ROOT)))
    assert not bad, bad
