"""The command line as a package: each command family one module below the size limit,
help that loads no engine, library errors mapped to flags, the first run's compilation
said before it starts, and one unit a line."""
import importlib
import logging
import re
import subprocess
import sys
from pathlib import Path

import pytest

from simulator.cli import main
from simulator.cli.commands import COMMANDS
from simulator.cli.options import as_flags

ROOT = Path(__file__).resolve().parents[1]
CLI = ROOT / "simulator" / "cli"


def test_no_module_of_the_cli_is_above_600_lines():
    sizes = {str(p.relative_to(ROOT)): len(p.read_text().splitlines()) for p in CLI.rglob("*.py")}
    assert sizes and max(sizes.values()) <= 600, sizes


def test_every_command_is_one_module_holding_its_parser_and_handler():
    for c in COMMANDS:
        mod = importlib.import_module(f"simulator.cli.commands.{c.module}")
        assert callable(getattr(mod, "add_" + c.name.replace("-", "_"))), c
        assert set(mod.NEEDS) <= {"kernels", "engine", "gpu", "dask"}, c


HELPS = [[], ["simulate", "simt"], ["simulate", "systolic"], ["sweep", "grid"], ["sweep", "layout"],
         *[[c.name] for c in COMMANDS]]


@pytest.mark.parametrize("argv", HELPS, ids=[" ".join(a) or "roofsim" for a in HELPS])
def test_help_loads_no_engine(argv):
    """``--help`` of every command imports neither numba nor matplotlib nor Dask (what
    makes it take seconds); benchmarks/bench_cli.py times it."""
    code = ("import sys\nfrom simulator.cli import main\n"
            f"try:\n    main({argv + ['--help']!r})\nexcept SystemExit:\n    pass\n"
            "heavy = sorted(m for m in ('numba', 'matplotlib', 'distributed', 'scipy') if m in sys.modules)\n"
            "print('HEAVY', heavy)\n")
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    assert "usage: roofsim" in p.stdout
    assert p.stdout.strip().splitlines()[-1] == "HEAVY []", p.stdout[-500:]


def test_help_lists_the_registry_kernels_without_loading_them():
    """The help's kernel choices come from the catalog, which is the registry's."""
    from simulator.cli.kernel_options import kernels
    assert kernels(live=False) == kernels(live=True)


def test_library_errors_name_arguments_and_the_cli_maps_them_to_flags(capsys):
    from simulator.analysis import plan as pl
    net = pl.network("resnet50", 1)
    with pytest.raises(ValueError, match=r"^plan='nope': allowed"):
        pl.configs_of(net, "nope")
    assert main(["plan", "--hw", "h100-sxm", "--plan", "nope", "--mode", "analytic"]) == 2
    assert capsys.readouterr().err.startswith("roofsim: error: --plan 'nope': allowed")
    # an argument the command has no option for stays as the library wrote it
    assert as_flags("mode='full': x; stalls='pipeline'", {"mode"}) == "--mode 'full': x; stalls='pipeline'"
    assert as_flags("folder='d': no grid.json", {"measurements"}, {"folder": "measurements"}) == \
        "--measurements 'd': no grid.json"
    # shapes echoed in a message are not arguments
    assert as_flags("bad shape 'n=1,mode=max'", {"n", "mode"}) == "bad shape 'n=1,mode=max'"


def test_the_first_run_says_it_is_compiling(tmp_path, monkeypatch, caplog):
    """A numba function with an on-disk cache and nothing in it: announced once, before it
    compiles; once compiled and cached, a fresh process would say nothing."""
    from simulator import jit
    (tmp_path / "tiny_jit_mod.py").write_text(
        "from numba import njit\n@njit(cache=True)\ndef f(x):\n    return x + 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    mod = importlib.import_module("tiny_jit_mod")
    assert jit.cached(mod.f) is False
    monkeypatch.setattr(jit, "_told", set())
    with caplog.at_level(logging.INFO, logger="roofsim"):
        assert jit.announce("tiny engine", [mod.f]) is True
        assert jit.announce("tiny engine", [mod.f]) is False    # once a process
    assert [r.getMessage() for r in caplog.records] == [
        "compiling the tiny engine: first run only; numba caches it for later runs"]
    assert mod.f(1) == 2
    assert jit.cached(mod.f) is True
    monkeypatch.setattr(jit, "_told", set())
    assert jit.announce("tiny engine", [mod.f]) is False


def test_wall_times_in_one_unit(capsys):
    assert main(["simulate", "simt", "--hw", "gtx480", "--kernel", "matadd", "--m", "32",
                 "--n", "48"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if "wall time" in x)
    assert re.fullmatch(r"\s*wall time: model [0-9.]+ s, analytic [0-9.]+ s", line), line
