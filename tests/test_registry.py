"""The kernel registry: one spec per kernel, read by the CLI, the API, the suites and
validation; the numba dispatch held to it; a toy kernel added in one module and one line."""
import ast
import inspect

import numpy as np
import pytest

import hwmodels
from simulator.cli import main
from simulator.simt import api, dispatch, walk
from simulator.simt.kernels import REGISTRY
from simulator.simt.kernels.recorder import recording

FERMI = hwmodels.get("gtx480")
VARIANTS = [(s.name, i) for s in REGISTRY for i in range(len(s.variants))]


def _nonempty(d):
    return {k: v for k, v in d.items() if v}


def test_dispatch_branches_follow_faces():
    """Branch i of dispatch.setup, dispatch.trips and dispatch.lanes calls FACES[i]'s
    function; the last (unconditional) return is the last face."""
    for fn in (dispatch.setup, dispatch.trips, dispatch.lanes):
        tree = ast.parse(inspect.getsource(fn.py_func))
        calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)]
        called = [n.func.value.id for n in sorted(calls, key=lambda n: n.lineno)]
        tests = [n.test.comparators[0].value for n in ast.walk(tree) if isinstance(n, ast.If)]
        assert tests == list(range(len(dispatch.FACES) - 1))
        assert called == list(dispatch.FACES)
    assert set(dispatch.MODULES) == set(dispatch.FACES)


@pytest.mark.parametrize("kernel,i", VARIANTS)
def test_every_kernel_builds_on_dispatched_faces_with_its_accesses(kernel, i):
    """Each registered kernel's programs run on a dispatched face and make the accesses
    its reference face says (the engine's walk of the program against the reference)."""
    spec = REGISTRY.get(kernel)
    problem = spec.problem(**spec.variants[i])
    progs = spec.build(FERMI, problem)
    refs = spec.accesses(problem)
    assert len(progs) == len(refs)
    for prog, ref in zip(progs, refs):
        assert prog.face in dispatch.FACES
        assert len(prog.param_names) == len(prog.params)
        assert walk.thread_accesses(prog) == _nonempty(ref)


@pytest.mark.parametrize("kernel,i", VARIANTS)
@pytest.mark.parametrize("block", [None, (96, 1, 1), (8, 8, 1), (40, 3, 1)])
def test_trips_is_what_setup_returns_for_every_warp(kernel, i, block):
    """dispatch.trips (what the sampler asks of every warp of a launch) against
    dispatch.setup's return, the reference, on every warp of every block -- default
    blocks and blocks whose warps wrap rows, or end part-filled."""
    from simulator.simt import isa
    spec = REGISTRY.get(kernel)
    problem = spec.problem(**spec.variants[i])
    for prog in spec.build(FERMI, problem):
        p = np.array(prog.params, np.int64)
        if block is not None:
            if prog.face not in ("relu", "conv_direct", "gemm_naive"):
                continue
            t = block[0] * block[1] * block[2]
            p[3:6] = block
            p[0] = max(1, -(-int(prog.launch.blocks) * int(np.prod(prog.launch.block)) // t))
            p[1] = p[2] = 1
            if prog.face == "gemm_naive":         # a 2-D grid over C
                p[0], p[1] = -(-p[7] // block[0]) + 1, -(-p[6] // block[1]) + 1
        kind = dispatch.kind_of(prog.face)
        tv = np.zeros((1, 32, isa.TV), np.int64)
        warps = -(-int(p[3] * p[4] * p[5]) // 32)
        for b in range(int(p[0] * p[1] * p[2])):
            bx, by, bz = b % p[0], (b // p[0]) % p[1], b // (p[0] * p[1])
            for w in range(warps):
                want = dispatch.setup(kind, p, bx, by, bz, w, tv, 0)
                assert dispatch.trips(kind, p, bx, by, bz, w) == want, (prog.name, b, w)


@pytest.mark.parametrize("kernel,i", VARIANTS)
def test_every_kernel_device_face_matches_numpy_and_its_accesses(kernel, i):
    """The numba.cuda face (CUDA simulator) computes the numpy reference and, for the
    one-launch kernels, makes the reference face's accesses."""
    spec = REGISTRY.get(kernel)
    problem = spec.problem(**spec.variants[i])
    dev = spec.device(problem)
    host = dev.inputs(np.random.default_rng(0))
    out = {k: np.full(s, np.nan, np.float32) for k, s in dev.outputs.items()}
    arrays, log = recording({**host, **out})
    dev.launch(arrays)
    for name, ref in dev.reference(host).items():
        got = np.asarray(arrays[name], np.float64).reshape(-1)
        np.testing.assert_allclose(got, np.asarray(ref).reshape(-1), rtol=1e-5, atol=1e-5)
    if len(dev.shapes) == 1:
        assert log.by_thread == _nonempty(spec.accesses(problem)[0])


def test_the_help_catalog_is_the_registry():
    """--help reads the kernels' options from simulator/cli/kernel_catalog.py (no numba):
    it must be the registry's; `python -m simulator.cli.kernel_options` rewrites it."""
    from simulator.cli.kernel_options import kernels
    assert kernels(live=False) == kernels(live=True), \
        "run python -m simulator.cli.kernel_options to write the catalog anew"


def test_cli_choices_are_the_registry():
    from simulator.cli import build_parser
    ap = build_parser()
    sim = ap._subparsers._group_actions[0].choices["simulate"]
    simt = sim._subparsers._group_actions[0].choices["simt"]
    kernel = next(a for a in simt._actions if a.dest == "kernel")
    assert tuple(kernel.choices) == REGISTRY.names()


def test_bad_problems_name_the_argument():
    with pytest.raises(ValueError, match="gemm-tiled: tile = 0: allowed: 8, 16, 32"):
        api.build(FERMI, "gemm-tiled", m=8, n=8, k=8, tile=0)
    with pytest.raises(ValueError, match="relu does not take m"):
        api.build(FERMI, "relu", n=8, m=3)
    with pytest.raises(ValueError, match="gemm-naive needs k"):
        api.build(FERMI, "gemm-naive", m=8, n=8)
    with pytest.raises(ValueError, match="kernel = 'nope': allowed: relu"):
        api.build(FERMI, "nope")


@pytest.fixture
def toy():
    import toy_kernel
    REGISTRY.add(toy_kernel.SPEC)          # the one registry line
    yield toy_kernel
    REGISTRY.remove(toy_kernel.NAME)


def test_a_toy_kernel_registers_in_one_line_and_simulates(toy, capsys):
    n, grid, block = 4 * 64 * 3, 4, 64            # every lane busy, three trips each
    r = api.simulate(FERMI, api.build(FERMI, toy.NAME, n=n), "full")
    warps = grid * block // 32
    assert r.instructions == warps * (toy.PROLOGUE + 3 * toy.INSTRUCTIONS_PER_TRIP)
    assert r.flops == n and r.compulsory_bytes == 8 * n
    assert r.bytes_by_level["dram"] >= 8 * n
    # the CLI offers it and runs it
    assert main(["simulate", "simt", "--hw", "gtx480", "--kernel", toy.NAME, "--n", str(n),
                 "--mode", "full"]) == 0
    assert f"{r.instructions:.0f} warp instructions" in capsys.readouterr().out


@pytest.mark.parametrize("kernel,i", VARIANTS)
def test_every_kernel_gives_its_launches_as_calls(kernel, i):
    """``Device.calls``: one (kernel, grid, block, args) per launch, the shapes the
    device declares, each kernel one of its ``kernels`` -- what ``launch`` enqueues and
    ``simulate_launches`` times."""
    from simulator.simt.kernels.launch import Launch
    from simulator.simt.kernels.spec import host_calls
    spec = REGISTRY.get(kernel)
    dev = spec.device(spec.problem(**spec.variants[i]))
    calls = host_calls(dev)
    assert len(calls) == len(dev.shapes)
    for (k, g, b, args), (sg, sb) in zip(calls, dev.shapes):
        assert Launch(g, b) == Launch(sg, sb)
        assert any(k is kk for _, kk in dev.kernels)
        assert all(isinstance(a, (np.ndarray, int, np.integer)) for a in args)


def test_a_device_needs_its_launches():
    from simulator.simt.kernels.spec import Device, host_calls
    with pytest.raises(ValueError, match="calls"):
        Device(inputs=lambda rng: {}, outputs={}, reference=lambda i: {})
    with pytest.raises(ValueError, match="Device.reference"):
        Device(inputs=lambda rng: {}, outputs={}, calls=lambda a: [])
    only_launch = Device(inputs=lambda rng: {}, outputs={}, launch=lambda a, s=0: None,
                         reference=lambda i: {})
    with pytest.raises(ValueError, match="device.calls is None"):
        host_calls(only_launch)
    bad = Device(inputs=lambda rng: {}, outputs={}, calls=lambda a: [("k", 1)],
                 reference=lambda i: {})
    with pytest.raises(ValueError, match=r"launch 0"):
        host_calls(bad)
