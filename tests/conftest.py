import os

# numba.cuda kernels run on numba's CUDA simulator in the tests (this machine has no GPU);
# a run on a real GPU sets NUMBA_ENABLE_CUDASIM=0 before pytest starts
os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

import signal

import pytest

# a shell's background job starts with Ctrl-C ignored, and its children inherit that: the
# Ctrl-C tests' commands would run on past their signal; these tests deliver it as a
# terminal does to a job in the foreground
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

#: the fast tier (``pytest -m fast``): the test files that compile none of the engines
#: with numba and launch no long run -- hardware, workloads, bounds, schemas, the CLI's
#: parsing and errors, the PTX parser and decoder, the docs' tables: a contributor's check
#: in under a minute on two cores (docs/performance.md, "The tests")
FAST = {
    "test_units.py", "test_hwmodels.py", "test_hw_files.py", "test_workloads.py",
    "test_bounds.py", "test_occupancy.py", "test_one_house.py", "test_cli_package.py",
    "test_oracle.py", "test_network_graph.py", "test_suite_schemas.py",
    "test_trace_schemas.py", "test_check.py", "test_coalescer.py", "test_type_hints.py",
}
# (and single quick tests of other files, marked ``@pytest.mark.fast`` where they stand)


def pytest_collection_modifyitems(config, items):
    for item in items:
        if os.path.basename(str(item.fspath)) in FAST:
            item.add_marker(pytest.mark.fast)


#: what the controller of a spread run compiles into numba's cache before its workers start,
#: two commands at a time, each compiling engines the other does not: otherwise, in a
#: fresh clone, every worker compiles them all at once (minutes each)
#: the commands that compile the SIMT engine and the analytic model (``warm_engines``)
_ENGINE_RUNS = [["simulate", "simt", "--hw", "h100-sxm", "--kernel", "gemm-naive", "--m", "64",
                 "--n", "64", "--k", "64", "--mode", m] for m in ("full", "analytic")]
_WARM_FIRST = (
    _ENGINE_RUNS
    + [["simulate", "kernel", "examples/kernels.py:launch_block_sum", "--hw", "h100-sxm"]],
    [["emulate", "examples/kernels.py:launch_block_sum"],       # (then the PTX cache)
     ["simulate", "systolic", "--hw", "systolic-8x8", "--workload", "gemm:64x48x40"]],
)


def pytest_configure(config):
    """A run spread over workers (``-n``), not the fast tier: the engines compiled first
    (a few seconds where numba's cache has them already)."""
    import shlex
    import subprocess
    import sys
    if hasattr(config, "workerinput") or not getattr(config.option, "numprocesses", None) \
            or "fast" in (config.option.markexpr or ""):
        return
    here = os.path.dirname(__file__)
    root = os.path.dirname(here)
    # the test kernels' PTX cache (``ptx_cache``), made once here for every worker
    import shutil
    import tempfile
    d = tempfile.mkdtemp(prefix="roofsim-test-ptx-")
    config.add_cleanup(lambda: shutil.rmtree(d, ignore_errors=True))

    def chain(cmds):
        return " && ".join(shlex.join([sys.executable, "-m", "simulator", *c]) + " >/dev/null"
                           for c in cmds)
    ready = os.path.join(d, "ready")
    warm_ptx = shlex.join([sys.executable, "-c", _WARM, here, root]) + " && touch " + shlex.quote(ready)
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="0", ROOFSIM_CACHE=d,
               PYTHONPATH=os.pathsep.join([root, here]))
    procs = [subprocess.Popen(chain(_WARM_FIRST[0]), shell=True, cwd=root),
             subprocess.Popen(chain(_WARM_FIRST[1][:1]) + " && " + warm_ptx + " && "
                              + chain(_WARM_FIRST[1][1:]), shell=True, cwd=root, env=env)]
    for p in procs:
        p.wait(timeout=1800)
    if os.path.exists(ready):       # (else each worker makes its own, and says why not)
        os.environ["ROOFSIM_TEST_PTX_CACHE"] = d


def pytest_addoption(parser):
    parser.addoption("--regen-golden", action="store_true", default=False,
                     help="rewrite golden files under tests/golden/ (review the diff)")


@pytest.fixture
def regen_golden(request):
    return request.config.getoption("--regen-golden")


_WARM = r"""
import sys, numpy as np
sys.path.insert(0, sys.argv[1])
sys.path.insert(0, sys.argv[2])
import user_kernels as uk
import examples.kernels as ek
from simulator.kernelcode.launch import emulate_kernel, emulating
from simulator.kernelcode.toolchain import kernel_ptx
from simulator.simt.kernels import REGISTRY
rng = np.random.default_rng(0)
for c in uk.CASES:
    grid, block, args, shared = c.setup(rng)
    emulate_kernel(c.kernel, grid, block, list(args), shared_bytes=shared)
for spec in REGISTRY:
    for prob in spec.variants:
        dev = spec.device(spec.problem(**prob))
        arrays = dict(dev.inputs(rng))
        arrays.update({k: np.zeros(s, np.float32) for k, s in dev.outputs.items()})
        with emulating():
            dev.launch(arrays, 0)
for name in ("launch_block_sum", "launch_transpose", "launch_softmax"):
    k, g, b, a = getattr(ek, name)()
    for cc in ((7, 5), (9, 0)):
        kernel_ptx(k, list(a), cc)
"""


@pytest.fixture(scope="session")
def ptx_cache(tmp_path_factory):
    """A disk cache of the test kernels' PTX (tests/user_kernels.py, the built-in kernels'
    numba faces, examples/kernels.py -- these for 7.5 as well; 9.0), filled by a
    process without numba's CUDA simulator (whose numba.cuda cannot make PTX); it also
    compiles the PTX interpreter into numba's cache."""
    import subprocess
    import sys
    here = os.path.dirname(__file__)
    root = os.path.dirname(here)
    made = os.environ.get("ROOFSIM_TEST_PTX_CACHE")     # by the controller of a spread run
    d = made or str(tmp_path_factory.mktemp("ptx-cache"))
    old = os.environ.get("ROOFSIM_CACHE")
    os.environ["ROOFSIM_CACHE"] = d
    if not made:
        env = dict(os.environ, NUMBA_ENABLE_CUDASIM="0", PYTHONPATH=os.pathsep.join([root, here]))
        r = subprocess.run([sys.executable, "-c", _WARM, here, root], env=env,
                           capture_output=True, text=True, timeout=1500)
        assert r.returncode == 0, r.stderr[-2000:]
    yield d
    if old is None:
        os.environ.pop("ROOFSIM_CACHE", None)
    else:
        os.environ["ROOFSIM_CACHE"] = old


def warm_engines(root):
    """The SIMT engine and the analytic model compiled into numba's cache, by a child
    process (a few seconds once cached): a test that times a signal into a run needs the
    run simulating by then, and the tests run in any order, over several processes."""
    import subprocess
    import sys
    for cmd in _ENGINE_RUNS:
        subprocess.run([sys.executable, "-m", "simulator", *cmd], cwd=root, capture_output=True,
                       timeout=900, check=True)


@pytest.fixture
def no_torch(monkeypatch):
    """This interpreter as one without PyTorch: importing torch or torchvision fails."""
    import builtins
    real = builtins.__import__

    def refuse(name, *a, **kw):
        if name.split(".")[0] in ("torch", "torchvision"):
            raise ModuleNotFoundError(f"No module named {name!r}")
        return real(name, *a, **kw)
    monkeypatch.setattr(builtins, "__import__", refuse)
