"""roofsim's Python API: what scripts and notebooks use (``from simulator import ...``).

Each function mirrors a CLI command and returns the same objects the CLI prints:
hardware presets (``hwmodels`` dataclasses), workloads (``workloads`` networks and ops),
and :class:`~simulator.result.Result` for every prediction -- the SIMT engine, the
analytic model, the roofline bound and the systolic engine. The functions from
:func:`occupancy` on expose what the notebooks look at inside a run: occupancy, one
warp's instructions and their coalescing, a launch's timeline, the register-level
systolic array, host copies and validation suite by suite.

>>> import simulator as rs
>>> hw = rs.load_hardware("gtx480")
>>> r = rs.simulate_simt(hw, "matadd", m=32, n=48, mode="full")
>>> (r.predictor, r.mode, r.cycles > 0, r.flops)
('engine', 'full', True, 1536)
"""
from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from simulator import arguments as arg
from simulator.arguments import show
from simulator.result import Measurement, Result

if TYPE_CHECKING:
    import os
    from collections.abc import Callable, Sequence

    import numpy as np
    from numpy.typing import ArrayLike

    from hwmodels.schema import SIMTGPU, Hardware, SystolicArray
    from simulator.analysis.compare import Prediction
    from simulator.analysis.measurements import SuiteFile
    from simulator.analysis.oracle import Choice
    from simulator.analysis.validate import ValidationRow
    from simulator.kernelcode import launch as kernel_launch
    from simulator.simt.api import Problem
    from simulator.simt.occupancy import Occupancy
    from simulator.systolic.array import ArrayRun
    from workloads.ir import Network, TensorOp

__all__ = ["Result", "Measurement", "load_hardware", "hardware_names", "load_workload", "kernels",
           "build", "simulate_simt", "analytic", "predict", "simulate_systolic", "roofline",
           "data_movement", "calibrate", "load_measurements", "validate", "occupancy",
           "warp_instructions", "coalesce", "timeline", "systolic_array_run", "systolic_text",
           "systolic_animation", "h2d_seconds", "validation_rows", "validation_scores"]


def hardware_names() -> list:
    """The preset names (``roofsim hw list``).

    >>> "h100-sxm" in hardware_names()
    True
    """
    import hwmodels
    return hwmodels.names()


def load_hardware(name_or_path: Hardware | str | os.PathLike,
                  overrides: str | Sequence[str] = ()) -> Hardware:
    """A preset by name, a TOML file or a SCALE-Sim ``.cfg``, with ``overrides`` applied
    (``["l2.size_bytes=1536KiB", ...]``, as ``--set``).

    >>> load_hardware("gtx480", ["l2.size_bytes=1536KiB"]).l2.size_bytes
    1572864
    """
    import hwmodels
    overrides = arg.overrides(overrides)
    hw = arg.hardware(name_or_path, arg="name_or_path")
    try:
        return hwmodels.with_overrides(hw, overrides)
    except ValueError as e:            # it names the field or the assignment
        raise ValueError(f"overrides: {e}") from None


def load_workload(spec: str | os.PathLike, batch: int | None = None, resolution: int | None = None,
                  dtype: str | None = None, layout: str | None = None) -> Network:
    """A network or a single op (``resnet50``, ``conv-ablation``, ``gemm:MxNxK``,
    ``relu:N``, ``conv:n=..,c=..``, or a SCALE-Sim topology CSV), as ``--workload``.

    >>> net = load_workload("resnet50", batch=8)
    >>> len(net.ops), net.ops[0].name
    (106, 'conv1')
    """
    import os

    import workloads
    if not isinstance(spec, (str, os.PathLike)):
        raise TypeError(f"spec={arg.show(spec)}: a workload string ('resnet50', 'gemm:MxNxK', "
                        "'conv:n=..,c=..', a topology CSV's path as a str or a Path)")
    return workloads.resolve(os.fspath(spec), batch=batch, resolution=resolution, dtype=dtype, layout=layout)


def kernels() -> tuple:
    """The registered SIMT kernels (``simulate simt --kernel``).

    >>> kernels()[:3]
    ('relu', 'matadd', 'gemm-naive')
    """
    from simulator.simt.api import kernels as names
    return names()


def build(hw: SIMTGPU | str | os.PathLike, kernel: str, **problem: object) -> Problem:
    """A registered kernel's launches for ``problem`` (see ``simulator.simt.api.build``).

    >>> p = build(load_hardware("gtx480"), "gemm-naive", m=64, n=64, k=32, thread_x="rows")
    >>> p.args["thread_x"], p.grid
    ('rows', (4, 4, 1))
    """
    from simulator.simt import api
    hw = arg.hardware(hw, "simt")
    if not isinstance(kernel, str):
        raise TypeError(f"kernel={arg.show(kernel)}: a registered kernel's name (kernels())")
    return api.build(hw, kernel, **problem)


def _problem(hw, kernel, problem):
    """(hardware, Problem) of a SIMT call: a kernel's name and its ``problem``, or a
    Problem from :func:`build` (and then no ``problem`` arguments)."""
    hw = arg.hardware(hw, "simt")
    if isinstance(kernel, str):
        return hw, build(hw, kernel, **problem)
    if not hasattr(kernel, "programs"):
        raise TypeError(f"kernel={arg.show(kernel)}: a registered kernel's name (kernels()) or "
                        f"a Problem from build(); not a {type(kernel).__name__}")
    if problem:
        raise TypeError(f"{', '.join(problem)}: a Problem from build() takes no problem "
                        "arguments; give them to build()")
    return hw, kernel


def simulate_simt(hw: SIMTGPU | str | os.PathLike, kernel: str | Problem, mode: str = "sampled",
                  policy: str = "gto", trace: int = 0, l2: str = "cold", **problem: object) -> Result:
    """The SIMT engine's Result for a kernel (a registered name with its ``problem``
    arguments, or a Problem from :func:`build`). ``mode`` full or sampled; ``policy`` gto
    or lrr; ``trace`` keeps that many issued instructions (at most 20,000, what
    ``--timeline`` keeps) in ``result.detail`` for timelines; ``l2`` the L2 the launch
    finds: cold (full of earlier launches' lines), warm (its arrays in it where they fit)
    or flushed (empty).

    >>> r = simulate_simt(load_hardware("gtx480"), "relu", n=4096, mode="full")
    >>> r.bytes_by_level["dram"] >= r.compulsory_bytes
    True
    """
    from simulator.simt import api
    from simulator.simt.engine import POLICIES
    mode, policy = arg.choice(mode, "mode", ("full", "sampled")), arg.choice(policy, "policy", POLICIES)
    trace, l2 = arg.trace(trace), arg.l2_state(l2)
    hw, prob = _problem(hw, kernel, problem)
    return api.simulate(hw, prob, mode, policy, trace, l2)


def analytic(hw: SIMTGPU | str | os.PathLike, kernel: str | Problem, policy: str = "gto", l2: str = "cold",
             **problem: object) -> Result:
    """The analytic model's Result (milliseconds; ``limiter`` names the binding term;
    ``l2`` as :func:`simulate_simt`'s: warm keeps the arrays out of DRAM where they fit).

    >>> analytic(load_hardware("gtx480"), "gemm-tiled", m=256, n=256, k=256).limiter
    'issue'
    """
    from simulator.simt import api
    from simulator.simt.engine import POLICIES
    policy, l2 = arg.choice(policy, "policy", POLICIES), arg.l2_state(l2)
    hw, prob = _problem(hw, kernel, problem)
    return api.analytic(hw, prob, policy, l2)


def predict(hw: SIMTGPU | str | os.PathLike, kernel: str | Problem, mode: str = "sampled",
            policy: str | None = None, **problem: object) -> Prediction:
    """Engine (unless ``mode`` is analytic), analytic model and roofline bound side by
    side: a ``Prediction`` with ``.engine``, ``.analytic`` and ``.roofline`` Results.
    ``policy`` (the engine's warp scheduler, gto where None) is refused with
    ``mode="analytic"``, which runs no engine.

    >>> p = predict(load_hardware("gtx480"), "matadd", mode="analytic", m=32, n=48)
    >>> p.engine is None, p.analytic.seconds > p.roofline.seconds
    (True, True)
    """
    from simulator.analysis.compare import predict as _predict
    from simulator.simt.api import MODES
    mode = arg.choice(mode, "mode", MODES)
    policy = arg.policy(policy, mode)
    hw, prob = _problem(hw, kernel, problem)
    return _predict(hw, prob, mode, policy)


def simulate_systolic(hw: SystolicArray | str | os.PathLike, workload: str | os.PathLike | Network | TensorOp,
                      dataflow: str | None = None, mode: str = "default",
                      array: tuple[int, int] | str | None = None, stalls: str = "pipeline",
                      trace: bool = False) -> Result:
    """The systolic engine on every layer of ``workload`` (a network, an op, or a
    ``--workload`` string): a Result whose ``layers`` are one Result per layer, each
    with its figures in ``systolic``. ``array`` (rows, cols), or "RxC" as the CLI's
    ``--array``, overrides the preset's shape; ``dataflow`` os, ws or is. ``trace=True``
    keeps the access/execute
    pipeline's transfers and matrix-unit spans in ``detail`` for
    ``simulator.analysis.traces.systolic_trace``.

    >>> r = simulate_systolic(load_hardware("tpu-v1"), "gemm:256x256x256")
    >>> r.predictor, r.cycles > 0, len(r.layers)
    ('systolic', True, 1)
    """
    from simulator.systolic import DATAFLOWS
    from simulator.systolic.engine import MODES, simulate_network
    hw = arg.hardware(hw, "systolic")
    net = arg.workload(workload)
    rows, cols = arg.shape(array, "array", 2) if array is not None else (None, None)
    if dataflow is not None:
        dataflow = arg.choice(dataflow, "dataflow", DATAFLOWS)
    mode = arg.choice(mode, "mode", MODES)
    stalls = arg.choice(stalls, "stalls", ("pipeline", "closed-form"))
    return simulate_network(hw, net, dataflow or getattr(hw, "dataflow", "ws"), mode, rows, cols,
                            stalls=stalls, trace=arg.boolean(trace, "trace"))


def roofline(hw: Hardware | str | os.PathLike, workload: str | os.PathLike | Network | TensorOp,
             precision: str | None = "fp32") -> Result:
    """The hierarchical roofline bound (``roofsim roofline``) of an op or a network: a
    Result with ``limiter`` and ``bytes_by_level``; ``detail`` the RooflineReport that
    ``simulator.analysis.plots.roofline_chart`` draws. ``precision`` None: the ops' own
    dtype.

    >>> r = roofline(load_hardware("h100-sxm"), "resnet50")
    >>> len(r.layers), r.limiter
    (106, 'compute')
    """
    from hwmodels.schema import PRECISIONS
    from simulator.analysis.roofline import bound
    from workloads.ir import TensorOp
    w = workload if isinstance(workload, TensorOp) else arg.workload(workload)
    if precision is not None:
        precision = arg.choice(precision, "precision", PRECISIONS)
    return bound(arg.hardware(hw), w, precision)


def data_movement(hw: Hardware | str | os.PathLike, workload: str | os.PathLike | Network | TensorOp,
                  onchip_bytes: int | None = None) -> list:
    """Per op: compulsory bytes, the pebble bound at ``onchip_bytes`` and host-to-device
    time (``roofsim datamove``).

    >>> d = data_movement(load_hardware("gtx480"), "gemm:4096x4096x4096", 64 * 1024)
    >>> d[0].lower_bound_bytes > d[0].compulsory_bytes
    True
    """
    from simulator.analysis.datamovement import data_movement as dm
    if onchip_bytes is not None:
        onchip_bytes = arg.nbytes(onchip_bytes, "onchip_bytes", minimum=1)
    return dm(arg.hardware(hw), arg.workload(workload), onchip_bytes)


def calibrate(hw: SIMTGPU | str | os.PathLike, folder: str | os.PathLike) -> tuple[SIMTGPU, list[tuple]]:
    """(calibrated preset, [(field, preset value, measured value, source)]) from a
    folder's micro (and h2d) suite (``roofsim calibrate``).

    >>> new, changes = calibrate(load_hardware("h100-sxm"), "data/measurements/h100-sxm")
    >>> [f for f, *_ in changes][:2]
    ['dram.sustained_fraction', 'dram.queue_cycles']
    """
    from simulator.analysis.calibrate import calibrate as cal
    return cal(arg.hardware(hw, "simt"), arg.path(folder, "folder", "a measurement folder"))


def load_measurements(folder: str | os.PathLike, suite: str) -> SuiteFile:
    """One suite file of a measurement folder, checked (``analysis.measurements.SuiteFile``).

    >>> s = load_measurements("data/measurements/h100-sxm", "gemm")
    >>> s.device, len(s.records)
    ('NVIDIA H100 80GB HBM3', 40)
    """
    from simulator.analysis.measurements import load_suite
    folder = arg.path(folder, "folder", "a measurement folder")
    if not isinstance(suite, str) or not suite.strip():
        raise TypeError(f"suite={arg.show(suite)}: a suite's name ('grid', 'gemm', ...)")
    return load_suite(folder, suite)


def validate(hw: SIMTGPU | str | os.PathLike, folder: str | os.PathLike,
             suites: Sequence[str] = ("grid", "gemm", "conv"), engine_budget: float | None = None,
             progress: Callable[[str, int, int], object] | None = None,
             workers: int | None = 1, scheduler: str | None = None) -> dict:
    """``roofsim validate``: {suite: (rows, scores)}; rows are ValidationRows (a
    Measurement beside the engine's, analytic model's and roofline's Results), scores
    per predictor (MAPE, correlations, what-if pairs in order). The engine runs on every
    record unless ``engine_budget`` (warp instructions its sampled run may simulate; 0:
    none) leaves some out. ``workers`` > 1 (None: one per core) or a Dask ``scheduler``
    address (not both) spreads the records over processes (``simulator.parallel``); a Ctrl-C there
    raises KeyboardInterrupt.

    >>> v = validate(load_hardware("h100-sxm"), "data/measurements/h100-sxm", ("gemm",), 0)
    >>> rows, scores = v["gemm"]
    >>> scores["engine"]["n"], scores["analytic"]["n"] == len(rows)
    (0, True)
    """
    from simulator.analysis.measurements import KERNEL_SUITES
    from simulator.analysis.validate import load_suites, predict_records, predict_suites, score
    hw = arg.hardware(hw, "simt")
    suites = arg.names(suites, "suites", KERNEL_SUITES)
    engine_budget, progress = arg.budget(engine_budget), arg.function(progress, "progress")
    workers, scheduler = arg.where_to_run(workers, scheduler)
    folder = arg.path(folder, "folder", "a measurement folder")
    files = load_suites(hw, folder, suites)
    if workers == 1 and scheduler is None:
        per = {sf.suite: predict_records(hw, sf, engine_budget, progress) for sf in files}
    else:
        res = predict_suites(hw, files, engine_budget, workers, scheduler)
        if res.interrupted:
            raise KeyboardInterrupt
        per = {sf.suite: [r for r in res.results if r.suite == sf.suite] for sf in files}
    return {suite: (rows, score(rows)) for suite, rows in per.items()}


# --- what the notebooks look at: occupancy, one warp's instructions and their coalescing,
# a launch's timeline, the register-level systolic array, host copies, validation in parts

def occupancy(hw: SIMTGPU | str | os.PathLike, block: int, regs: int, smem_bytes: int = 0) -> Occupancy:
    """Blocks and warps one SM of ``hw`` holds for blocks of ``block`` threads using
    ``regs`` registers per thread and ``smem_bytes`` of shared memory per block, by CUDA's
    occupancy rules: ``blocks_per_sm``, ``warps_per_sm``, ``occupancy`` (resident warps
    over the maximum), ``limited_by`` (ties joined by ``+``) and ``limits`` (the blocks
    each resource allows; None where it sets no limit: no registers or no shared memory
    asked for -- ``regs=0`` is allowed, as CUDA's ``cuda_occupancy.h`` takes a kernel
    whose attributes report no registers, and sets no register limit). A block that cannot
    launch at all is a ValueError naming the limit.

    >>> o = occupancy(load_hardware("gtx480"), 256, 32)
    >>> o.blocks_per_sm, o.warps_per_sm, o.limited_by
    (4, 32, 'registers')
    """
    from simulator.simt.occupancy import occupancy as occ
    return occ(arg.hardware(hw, "simt"), arg.integer(block, "block", minimum=1),
               arg.integer(regs, "regs", minimum=0), arg.nbytes(smem_bytes, "smem_bytes"))


class WarpInstruction(NamedTuple):
    """One instruction a warp executes (:func:`warp_instructions`)."""

    pc: int
    op: str                  # opcode: ALU, IMAD, FFMA, FADD, FMNMX, BRA, LDG, STG, LDS, STS, BAR...
    iteration: int           # loop trip (0 outside the loop)
    stream: str              # the address stream's name ("" for none)
    array: str               # the global array a load or store addresses ("" otherwise)
    addresses: np.ndarray    # per lane: byte address (shared memory: offset), -1 inactive
    offsets: np.ndarray      # per lane: byte offset into ``array``, -1 inactive (or no array)


def warp_instructions(problem: Problem, block: int = 0, warp: int = 0, launch: int = -1) -> list:
    """What warp ``warp`` of block ``block`` executes in one launch of ``problem`` (a
    Problem from :func:`build`; ``launch`` indexes its launches), in issue order and
    without timing: one :class:`WarpInstruction` per instruction, with its lanes'
    addresses. Blocks are numbered linearly, x fastest (``bx + gx * by`` for a 2-D
    grid); a block's threads likewise, cut into warps of 32.

    >>> p = build(load_hardware("gtx480"), "matadd", m=32, n=48)
    >>> ins = warp_instructions(p, block=4, warp=3)
    >>> [(i.op, i.array) for i in ins if i.array]
    [('LDG', 'A'), ('LDG', 'B'), ('STG', 'C')]
    >>> ins[-1].offsets[:2].tolist()        # row 22, columns 16 and 17 of a 32x48 C
    [4288, 4292]
    """
    import numpy as np

    from simulator.simt import isa, walk
    if not hasattr(problem, "programs"):
        raise TypeError(f"problem={arg.show(problem)}: a Problem from build()")
    n = len(problem.programs)
    prog = problem.programs[arg.integer(launch, "launch", minimum=-n, maximum=n - 1)]
    g, b = prog.launch.grid, prog.launch.block
    blocks, threads = g[0] * g[1] * g[2], b[0] * b[1] * b[2]
    arg.integer(block, "block", minimum=0, maximum=blocks - 1)
    arg.integer(warp, "warp", minimum=0, maximum=-(-threads // 32) - 1)
    bases = {name: base for name, base, _ in prog.arrays}
    out = []
    for pc, op, it, addr in walk.warp_stream(prog, block, warp):
        sid = int(prog.template[pc, 5])
        s = prog.streams[sid] if 0 <= sid < len(prog.streams) else None
        array = s.array if op in (isa.LDG, isa.STG) and s is not None and s.space == "global" else ""
        offsets = np.where(addr >= 0, addr - bases[array], -1) if array else np.full_like(addr, -1)
        out.append(WarpInstruction(int(pc), isa.OP_NAMES[op], int(it), s.name if s else "", array,
                                   addr, offsets))
    return out


def coalesce(addresses: ArrayLike, access_bytes: int = 4, segment_bytes: int = 128) -> list:
    """The aligned segments a warp access moves: for each row of ``addresses`` (a lane's
    byte address per column, -1 for an inactive lane; each lane reads ``access_bytes``),
    the sorted distinct segment numbers (``address // segment_bytes``) its lanes touch.
    The transactions an access costs are their count. Fermi's L1 path moves 128 B
    lines, later presets 32 B sectors (``hw.sm.l1.sector_bytes``). An address is >= 0 and
    a multiple of ``access_bytes`` (1, 2, 4, 8 or 16: CUDA's aligned widths), or -1; one
    row (a list of ints) is one access; at most 4,194,304 addresses in all
    (``arguments.MAX_ADDRESSES``); ``segment_bytes`` a power of two up to 4096.

    >>> [s.tolist() for s in coalesce([[0, 4, 124, 128, -1], [256, 256, -1, -1, -1]])]
    [[0, 1], [2]]
    """
    from simulator.simt.coalescer import segments
    a = arg.addresses(addresses)
    access_bytes = arg.power_of_two(access_bytes, "access_bytes", arg.ACCESS_BYTES[-1])
    segment_bytes = arg.power_of_two(segment_bytes, "segment_bytes", arg.MAX_SEGMENT_BYTES)
    odd = a[(a >= 0) & (a % access_bytes != 0)]
    if odd.size:
        raise ValueError(f"addresses: address {int(odd[0])} is not a multiple of "
                         f"access_bytes={access_bytes} (a misaligned access faults)")
    return segments(a, access_bytes, segment_bytes)


class Timeline(NamedTuple):
    """One launch of an engine run, in time (:func:`timeline`)."""

    launch: object           # the Result's Launch
    blocks: dict             # per simulated block: "sm", "start", "end" (cycles)
    trace: dict              # per kept issued instruction: "cycle", "sm", "scheduler",
                             # "block", "warp" (in its block), "op" (opcode name), and what
                             # its warp waited on before it (``core.WAIT_COLUMNS``):
                             # "wait_from", "barrier_release", "ready", "on_load",
                             # "unit_free", "mshr_free", "pc", "warp_row", "site" (-1: none)
    warps: dict = None       # per warp of those instructions (``trace["warp_row"]`` indexes
                             # it; ``core.WARP_COLUMNS``): "start", "finish" (-1: not in the
                             # run), "sm", "scheduler", "block", "warp", "position", "issued"
    states: dict = None      # its states as spans (``analysis.traces.warp_states``): "warp"
                             # (row of warps), "state" (issue, memory, dependency, pipe,
                             # mshr, not selected, barrier, done), "start", "end", "op"
                             # (opcode name, "" for a wait), "pc" (-1: none)
    memory: dict = None      # per kept global access (``core.MEMORY_COLUMNS``): "issue",
                             # "done" (data back; a store: the L2 accepted it), "level"
                             # ("L1 hit", "L2", "DRAM"), "sm", "scheduler", "warp_row",
                             # "block", "warp", "op" (name), "segments", "pc"


def timeline(result: Result, launch: int = 0) -> Timeline:
    """When each block of launch ``launch`` of an engine Result ran and on which SM, and
    the instructions it issued, as columns (numpy arrays). The engine keeps the first N
    issued instructions when run with ``trace=N`` (:func:`simulate_simt`); without it
    the trace is empty (and, with it, ``warps`` and ``states``; ``memory`` keeps as many
    global accesses). Cycles are the engine's, counted from the first launch's start.
    ``plots.simt_timeline_chart`` draws the same; ``analysis.traces.simt_trace`` the
    warps' states and the memory requests too.

    >>> r = simulate_simt(load_hardware("gtx480"), "matadd", m=32, n=48, mode="full", trace=50)
    >>> t = timeline(r)
    >>> len(t.blocks["sm"]), len(t.trace["cycle"]), str(t.trace["op"][0])
    (6, 50, 'ALU')
    >>> int((t.states["state"] == "issue").sum()), sorted(t.memory)[:3]
    (50, ['block', 'done', 'issue'])
    """
    import numpy as np

    from simulator.simt.isa import OP_NAMES
    if not isinstance(result, Result):
        raise TypeError(f"result={arg.show(result)}: the engine's Result (simulate_simt)")
    if result.predictor != "engine" or result.detail is None:
        raise ValueError("result: a timeline needs the engine's Result (simulate_simt, full or "
                         f"sampled), not the {result.predictor}'s")
    n = len(result.detail.launches)
    launch = arg.integer(launch, "launch", minimum=0, maximum=n - 1)
    lr = result.detail.launches[launch]
    tr = np.asarray(lr.trace).reshape(-1, 6)
    trace = {k: tr[:, i].astype(np.int64)
             for i, k in enumerate(("cycle", "sm", "scheduler", "block", "warp"))}
    trace["op"] = np.array(OP_NAMES)[tr[:, 5].astype(np.int64)]
    from simulator.analysis.traces import warp_states
    from simulator.simt.core import LEVELS, MEMORY_COLUMNS, WAIT_COLUMNS, WARP_COLUMNS
    ints = {"on_load", "pc", "warp_row", "site", "sm", "scheduler", "block", "warp", "position",
            "issued", "segments"}

    def columns(table, names):
        table = np.zeros((0, len(names))) if table is None else np.asarray(table).reshape(-1, len(names))
        return {k: table[:, i].astype(np.int64) if k in ints else table[:, i].astype(np.float64)
                for i, k in enumerate(names)}
    waits = getattr(lr, "waits", None)
    if waits is not None and len(waits) == len(tr):
        trace.update(columns(waits, WAIT_COLUMNS))
    warps = columns(getattr(lr, "warps", None), WARP_COLUMNS)
    states = warp_states(lr, float(result.detail.hw.sm.issue_interval_cycles))
    states["op"] = np.where(states["op"] >= 0, np.array(OP_NAMES + ("",))[states["op"]], "")
    states["state"] = states["state"].astype(str)
    memory = columns(getattr(lr, "memory", None), MEMORY_COLUMNS)
    memory["level"] = np.array(LEVELS + ("",))[memory["level"].astype(np.int64)]
    memory["op"] = np.array(OP_NAMES)[memory["op"].astype(np.int64)] if len(memory["op"]) \
        else np.zeros(0, str)
    return Timeline(result.launches[launch], {k: np.asarray(v) for k, v in lr.blocks.items()}, trace,
                    warps, states, memory)


def systolic_array_run(op: str | os.PathLike | Network | TensorOp | None = None,
                       dataflow: str | None = None, rows: int | None = None,
                       cols: int | None = None, record: bool = False, seed: int = 0, *,
                       a: ArrayLike | None = None, b: ArrayLike | None = None) -> ArrayRun:
    """``op`` (an op, or a workload of one op such as ``"gemm:3x3x3"``, on random
    small-integer operands drawn with ``seed``) or your own matrices ``a`` (M x K) and
    ``b`` (K x N) -- numpy arrays or nested lists of numbers, not both forms -- on a
    ``rows`` x ``cols`` systolic array, register by register and cycle by cycle
    (``dataflow`` os, ws or is): ``cycles``, ``macs``, SRAM ``sram_reads`` and
    ``sram_writes`` (words), the ``output`` against numpy's ``reference`` (``correct``:
    equal exactly for integers, to 1e-9 relative for other numbers), the operands ``a``
    and ``b``. The closed form :func:`simulate_systolic` runs gives the same cycles.

    ``record=True`` keeps a ``trace`` of (cycles, rows, columns) arrays: ``active`` (the
    PE did a MAC) and the registers ``h`` (moving right), ``v`` (moving down) and ``s``
    (staying), NaN where empty; and for every register of a PE (``value``, ``index``:
    (cycles, rows, columns, 4, ...)) the element of C = A @ B it holds -- A[i, k], B[k, j],
    or C[i, j] with the first and last k it sums -- which :func:`systolic_text` and
    :func:`systolic_animation` show as labels. A recording keeps at most 5000 cycles and
    10^6 PE-cycles (a larger run is a ValueError).

    >>> r = systolic_array_run("gemm:3x3x3", "os", 3, 3, record=True)
    >>> r.cycles, r.macs, r.correct, r.trace["active"].shape
    (10, 27, True, (10, 3, 3))
    >>> r = systolic_array_run(a=[[1, 2], [3, 4]], b=[[5, 6], [7, 8]], dataflow="ws", rows=2,
    ...                        cols=2, record=True)
    >>> r.output.tolist(), r.correct
    ([[19.0, 22.0], [43.0, 50.0]], True)
    """
    from simulator.systolic import DATAFLOWS, Lowered
    from simulator.systolic.array import (
        MAX_RECORD_CYCLES,
        MAX_RECORD_PE_CYCLES,
        record_size,
        run_array,
        run_matrices,
    )
    if op is not None and (a is not None or b is not None):
        raise ValueError(f"op={show(op)} and a/b: give an op, or matrices a and b, not both")
    if op is None and a is None and b is None:
        raise TypeError("op=None: an op ('gemm:MxNxK', a Gemm or Conv2d), or matrices a "
                        "(M x K) and b (K x N)")
    dataflow = arg.choice(dataflow, "dataflow", DATAFLOWS)
    rows, cols = arg.integer(rows, "rows", minimum=1), arg.integer(cols, "cols", minimum=1)
    record = arg.boolean(record, "record")
    if op is None:
        A, B, exact = _matrices(a, b)
        L = Lowered(_gemm(A, B), dataflow, rows, cols)
    else:
        net = arg.workload(op, "op")
        if len(net.ops) != 1:
            raise ValueError(f"op={show(net.name)}: the array runs one op at a time, not "
                             f"{len(net.ops)}")
        if net.ops[0].kind not in ("gemm", "conv2d"):
            raise ValueError(f"op={show(net.name)}: a {net.ops[0].kind}; the array runs a GEMM "
                             "or a convolution")
        seed = arg.integer(seed, "seed", minimum=0)
        L = Lowered(net.ops[0], dataflow, rows, cols)
    if record:
        n, pe = record_size(L)
        if n > MAX_RECORD_CYCLES or pe > MAX_RECORD_PE_CYCLES:
            M, N, K = L.mnk
            raise ValueError(f"record=True: C ({M}x{N}) = A ({M}x{K}) @ B ({K}x{N}) on a "
                             f"{rows}x{cols} array runs {n:,} cycles ({pe:,} PE-cycles); a "
                             f"recording keeps at most {MAX_RECORD_CYCLES:,} cycles and "
                             f"{MAX_RECORD_PE_CYCLES:,} PE-cycles: use smaller matrices, or "
                             "record=False")
    if op is None:
        return run_matrices(A, B, dataflow, rows, cols, record=record, exact=exact)
    return run_array(L.op, dataflow, rows, cols, seed=seed, record=record)


def _gemm(A, B):
    from workloads.ir import Gemm
    return Gemm(M=A.shape[0], N=B.shape[1], K=A.shape[1], name="A@B")


def _matrix(x, name: str):
    """``x`` (a numpy array or nested lists of real numbers) as a 2-D float64 array, and
    whether its values are all integers."""
    import numpy as np
    if x is None:
        raise TypeError(f"{name}=None: give both a (M x K) and b (K x N)")
    if isinstance(x, (str, bytes)) or not isinstance(x, (list, tuple, np.ndarray)):
        raise TypeError(f"{name}={show(x)}: a matrix (a numpy array or a list of rows of "
                        f"numbers), not a {type(x).__name__}")
    try:
        m = np.asarray(x)
    except ValueError:
        m = None
    if m is None or m.dtype == object:
        raise ValueError(f"{name}={show(x)}: rows of different lengths or not numbers; give "
                         "a list of rows of numbers, all of one length")
    if m.dtype.kind not in "iuf":
        raise ValueError(f"{name}={show(x)}: holds {m.dtype} values; allowed: real numbers "
                         "(integers or floats)")
    if m.ndim != 2:
        raise ValueError(f"{name}={show(x)}: a {m.ndim}-D array; allowed: a 2-D matrix "
                         "(a list of rows, such as [[1, 2, 3]] for one row)")
    if m.size == 0:
        raise ValueError(f"{name}={show(x)}: an empty matrix ({m.shape[0]}x{m.shape[1]}); "
                         "allowed: at least 1x1")
    if m.dtype.kind == "f" and not np.isfinite(m).all():
        raise ValueError(f"{name}={show(x)}: holds NaN or infinity; allowed: finite numbers")
    integer = m.dtype.kind in "iu" or bool(np.all(m == np.round(m)))
    if m.dtype.kind in "iu" and np.abs(m).max() >= 2**53:
        raise ValueError(f"{name}={show(x)}: an integer of 2**53 or more; the array computes "
                         "in float64, exact to 2**53")
    return m.astype(np.float64), integer


def _matrices(a, b):
    """(A, B, exact): the user's matrices, checked; exact when both hold integers whose
    products and sums stay exact in float64."""
    import numpy as np
    A, ia = _matrix(a, "a")
    B, ib = _matrix(b, "b")
    if A.shape[1] != B.shape[0]:
        raise ValueError(f"a ({A.shape[0]}x{A.shape[1]}) and b ({B.shape[0]}x{B.shape[1]}): "
                         f"do not chain; a's columns ({A.shape[1]}) must equal b's rows "
                         f"({B.shape[0]})")
    exact = ia and ib
    if exact and A.shape[1] * np.abs(A).max() * np.abs(B).max() >= 2**53:
        raise ValueError(f"a and b: integers whose products summed over K = {A.shape[1]} may "
                         "reach 2**53, past float64's exact integers; use smaller values")
    return A, B, exact


def systolic_text(run: ArrayRun, cycles: int | range | None = None, values: bool = False) -> str:
    """A recorded :func:`systolic_array_run` as text, cycle by cycle (``cycles``: one cycle,
    a ``range``, or None for all): the grid of PEs with the element of C = A @ B each
    register holds (``A[i,k]``, ``B[k,j]``, ``C[i,j] 3/4``: a sum of 3 of C[i,j]'s 4 terms),
    ``*`` on the registers the PE's MAC used, the operands entering at the left and top,
    the preload chain (ws, is) and what leaves at the bottom; ``values``: each register's
    value too. For arrays of up to 16 x 16 PEs.

    >>> r = systolic_array_run(a=[[1, 2], [3, 4]], b=[[5, 6], [7, 8]], dataflow="os",
    ...                        rows=2, cols=2, record=True)
    >>> lines = systolic_text(r, cycles=1).splitlines()
    >>> print("\\n".join([lines[4]] + lines[7:11]))
    cycle 1/5: 3 MACs
        A[0,1] >|*h   A[0,1]    |*h   A[0,0]    |
                |*v   B[1,0]    |*v   B[0,1]    |
                | acc .         |*acc C[0,1] 1/2|
                |*out C[0,0] 2/2| out .         |
    """
    from simulator.systolic.teach import systolic_text as text
    return text(run, cycles, arg.boolean(values, "values"))


def systolic_animation(run: ArrayRun, path: str | os.PathLike, fps: float = 2.0, values: bool = False) -> int:
    """A recorded :func:`systolic_array_run` as an animation, one frame per cycle, written
    to ``path``: ``.gif`` (matplotlib's PillowWriter) or ``.html`` (a page with a player,
    ``Animation.to_jshtml``); each register labelled as in :func:`systolic_text`, the PEs
    doing a MAC highlighted and the registers their MAC used in bold. Returns the number
    of frames written."""
    from simulator.analysis.plots import systolic_animation as animate
    from simulator.systolic.teach import MAX_FRAMES, Labels, check_run
    lab = Labels(check_run(run), arg.boolean(values, "values"))
    return animate(lab, arg.path(path, "path"), arg.number(fps, "fps", positive=True),
                   MAX_FRAMES)


def h2d_seconds(hw: Hardware | str | os.PathLike, nbytes: int, pinned: bool = False) -> float | None:
    """Seconds the preset's host link takes to copy ``nbytes`` from host to device: its
    latency plus the bytes at the pinned or pageable bandwidth (None without a host link).

    >>> round(h2d_seconds(load_hardware("h100-sxm"), 1 << 30, pinned=True) * 1e3, 1)
    21.8
    """
    from simulator.analysis.datamovement import h2d_seconds as h2d
    return h2d(arg.nbytes(nbytes, "nbytes"), arg.hardware(hw).host_link, arg.boolean(pinned, "pinned"))


def validation_rows(hw: SIMTGPU | str | os.PathLike, suite_file: SuiteFile,
                    engine_budget: float | None = None,
                    progress: Callable[[str, int, int], object] | None = None) -> list:
    """The rows :func:`validate` scores, for one suite file from
    :func:`load_measurements` -- or part of one (``dataclasses.replace(suite_file,
    records=[...])``): a ValidationRow per record that passed its check, with ``suite``,
    ``group``, ``kernel``, ``label``, the ``measurement``, the ``analytic``,
    ``roofline`` and ``engine`` Results (the engine on every record, or where its sampled
    run stays within ``engine_budget`` warp-instructions), ``measured_s`` and
    ``predicted_s(predictor)``.

    >>> sf = load_measurements("data/measurements/h100-sxm", "gemm")
    >>> rows = validation_rows(load_hardware("h100-sxm"), sf, 0)
    >>> len(rows), rows[0].engine, rows[0].predicted_s("analytic") > rows[0].predicted_s("roofline")
    (40, None, True)
    """
    from simulator.analysis.measurements import SuiteFile
    from simulator.analysis.validate import predict_records
    if not isinstance(suite_file, SuiteFile):
        raise TypeError(f"suite_file={arg.show(suite_file)}: a SuiteFile (load_measurements()), "
                        f"not a {type(suite_file).__name__}")
    engine_budget, progress = arg.budget(engine_budget), arg.function(progress, "progress")
    return predict_records(arg.hardware(hw, "simt"), suite_file, engine_budget, progress)


def validation_scores(rows: Sequence[ValidationRow]) -> dict:
    """The scores :func:`validate` gives, for any list of ValidationRows: per predictor
    (engine, analytic, roofline) ``n``, ``mape``, ``pearson`` (of log times),
    ``spearman``, ``pairs_in_order`` of ``pairs`` (what-if pairs ranked as measured;
    pairs within 2% are not counted); ``records`` and ``faster_than_bound`` (the
    measurements faster than their roofline bound).

    >>> sf = load_measurements("data/measurements/h100-sxm", "gemm")
    >>> s = validation_scores(validation_rows(load_hardware("h100-sxm"), sf, 0))
    >>> s["records"], s["analytic"]["n"], s["faster_than_bound"]
    (40, 40, 0)
    """
    from simulator.analysis.validate import ValidationRow, score
    if not isinstance(rows, (list, tuple)) or not all(isinstance(r, ValidationRow) for r in rows):
        raise TypeError(f"rows={arg.show(rows)}: a list of ValidationRows (validation_rows())")
    return score(list(rows))


def plan_network(hw: SIMTGPU | str | os.PathLike,
                 workload: str | os.PathLike | Network | TensorOp = "resnet50", batch: int | None = None,
                 plan: str | os.PathLike = "im2col-nhwc", mode: str = "analytic",
                 workers: int | None = 1) -> tuple[list[dict], dict]:
    """``roofsim plan``: every layer of a network run as roofsim's kernels under ``plan``
    (a uniform name or a plan file), the layout transforms it implies included, predicted
    by the analytic model and the roofline bound, and the engine too with
    ``mode="sampled"``: (layer rows, {predictor: total seconds}). ``hw``: a SIMT preset
    or its name; ``workload``: a workload string or a Network whose layers connect (a
    chain, or ``edges`` saying what each reads); ``batch`` None: the workload's own (1
    for a named network).

    >>> rows, tot = plan_network(load_hardware("h100-sxm"), "resnet50", 1, "direct-nhwc")
    >>> len(rows), rows[0]["layer"], tot["analytic"] > tot["roofline"]
    (107, 'input.to_nhwc', True)
    """
    from simulator.analysis import plan as pl
    hw = arg.hardware(hw, "simt")
    workers = arg.workers(workers)
    mode = arg.choice(mode, "mode", ("sampled", "analytic"))
    plan = arg.path(plan, "plan", "a uniform plan's name or a plan file's path")
    net = pl.network(workload, batch)
    out, totals = pl.predict_plan(hw, pl.expand(net, pl.configs_of(net, str(plan))), mode,
                                  workers=workers)
    return out.finished, totals


def choose_plan(workload: str, batch: int, seconds: dict) -> tuple[Choice, float]:
    """The per-layer oracle over a network (``roofsim plan --oracle``'s search): from
    ``seconds`` (``analysis.plan.time_key`` -> seconds, for every layer in each
    configuration and every transform), (the dynamic program's Choice -- ``configs``,
    ``seconds``, ``switch_seconds`` --, the best-of bound)."""
    from simulator.analysis import plan as pl
    net, seconds = pl.network(workload, batch), arg.seconds_table(seconds)
    try:
        return pl.choose(net, seconds)
    except ValueError as e:          # a time the table lacks
        raise ValueError(f"seconds: {e}") from None


def network_summary(gpu: str, measurements: str | os.PathLike = "data/measurements",
                    plans: str | os.PathLike = "data/plans") -> dict:
    """Whole-network measurements against predictions (``analysis.networks.summary``):
    {"plans": per batch and plan the three timing methods and each predictor's total
    and error, "regret": the picked plans' regret and the dynamic program's error,
    "layers": per-layer measured and predicted times of the uniform plans,
    "layer_errors": {predictor: MAPE by layer kind}, "torchvision": PyTorch's records}.

    >>> s = network_summary("h100-sxm")
    >>> sorted({r["batch"] for r in s["regret"]}), max(r["regret"] for r in s["regret"]) < 0.05
    ([1, 8, 32], True)
    """
    from pathlib import Path

    from simulator.analysis import networks as nw
    measurements = arg.path(measurements, "measurements", "the measurements' folder")
    plans = arg.path(plans, "plans", "the plans' folder")
    if not isinstance(gpu, str):
        raise TypeError(f"gpu={arg.show(gpu)}: a device's folder name under measurements "
                        f"('h100-sxm', 'h200'), not a {type(gpu).__name__}")
    if not gpu.strip() or "/" in gpu or gpu in (".", ".."):
        raise ValueError(f"gpu={show(gpu)}: a device's folder name under measurements "
                         "('h100-sxm', 'h200')")
    if not (Path(measurements) / gpu).is_dir():
        raise ValueError(f"gpu={show(gpu)}: no folder {Path(measurements) / gpu} "
                         f"(measurements={show(str(measurements), 200)})")
    s = nw.summary(gpu, measurements, plans)
    return {**s, "layer_errors": {p: nw.layer_errors(s["layers"], p) for p in ("engine", "analytic")},
            "torchvision": nw.framework(gpu, measurements)}


def compiled_summary(gpu: str, measurements: str | os.PathLike = "data/measurements",
                     plans: str | os.PathLike = "data/plans") -> dict:
    """Eager PyTorch against TorchScript and torch.compile (``analysis.compiled``), from
    ``measurements/GPU/compiled/`` (``roofsim measure compiled``): {"forwards": per model,
    batch and forward (whole model or per unit, each configuration, and the oracle's
    plans) its time as issued and queued, "oracle": per model, batch and timing method
    the plan picked per unit, its predicted and measured time and its regret, "compile":
    seconds to build each configuration, "roofsim": ResNet-50's roofline bound (fp32 and
    TF32) and roofsim's own kernels' best measured plan per batch}.

    >>> s = compiled_summary("h100-sxm")
    >>> sorted({(r["model"], r["batch"]) for r in s["forwards"]})[:2]
    [('mobilenet_v2', 1), ('mobilenet_v2', 8)]
    """
    from pathlib import Path

    from simulator.analysis import compiled as cp
    measurements = arg.path(measurements, "measurements", "the measurements' folder")
    plans = arg.path(plans, "plans", "the plans' folder")
    if not isinstance(gpu, str):
        raise TypeError(f"gpu={arg.show(gpu)}: a device's folder name under measurements "
                        f"('h100-sxm', 'h200'), not a {type(gpu).__name__}")
    folder = Path(measurements) / gpu / "compiled"
    if not gpu.strip() or "/" in gpu or gpu in (".", "..") or not folder.is_dir():
        raise ValueError(f"gpu={show(gpu)}: no folder {folder} (roofsim measure compiled "
                         "writes compiled.json; keep it there)")
    s = cp.summary(folder)
    batches = sorted({r["batch"] for r in s["forwards"] if r["model"] == "resnet50"})
    return {**s, "roofsim": cp.roofsim_beside(gpu, batches, measurements, plans)}


def emulate_kernel(kernel: object | str, grid: int | Sequence[int], block: int | Sequence[int],
                   args: Sequence[object], hw: SIMTGPU | str | None = None, shared_bytes: int = 0,
                   record: bool = False, name: str | None = None) -> kernel_launch.Emulation:
    """Run a numba.cuda kernel on the CPU from its PTX, as ``kernel[grid, block](*args)``
    would on a GPU: the arrays in ``args`` receive what it writes. ``kernel`` is a numba
    ``@cuda.jit`` kernel (compiled here with NVIDIA's PyPI compilers: no GPU, no CUDA
    toolkit) or PTX text (``name``: its entry); ``hw`` a preset (name or Hardware) whose
    compute capability the PTX is compiled for (default 9.0). Returns an ``Emulation``:
    ``instructions`` (PTX warp-instructions executed), ``simt_efficiency``,
    ``wall_seconds``, ``per_instruction`` counts and, with ``record=True``, every warp's
    path, active masks and memory addresses (``trace``)."""
    from simulator.kernelcode.launch import emulate_kernel as run
    from simulator.kernelcode.toolchain import cc_of
    cc, nsm = (9, 0), 132
    if hw is not None:
        hw = load_hardware(hw) if isinstance(hw, str) else hw
        if getattr(hw, "family", None) != "simt":
            raise ValueError(f"hw={getattr(hw, 'name', hw)!r}: not a GPU preset")
        cc, nsm = cc_of(hw), hw.sm_count
    return run(kernel, grid, block, args, name=name, shared_bytes=shared_bytes, cc=cc,
               nsm=nsm, record=record)


def simulate_kernel(kernel: object | str, grid: int | Sequence[int], block: int | Sequence[int],
                    args: Sequence[object], *, hw: SIMTGPU | str | os.PathLike, mode: str = "sampled",
                    l2: str = "cold", policy: str = "gto", name: str | None = None,
                    shared_bytes: int = 0, budget: float | None = None, trace: int = 0) -> Result:
    """The SIMT engine's Result for ``kernel[grid, block](*args)`` on ``hw``, timed from
    the kernel's own SASS: a numba ``@cuda.jit`` kernel (or PTX text, ``name`` its entry)
    compiled for ``hw``'s compute capability (Fermi presets: sm_75, the oldest CUDA 13
    targets), the blocks the sampler picks (every block with ``mode="full"``) run on the
    PTX emulator, their warps' SASS streams timed by the engine. ``args`` are read, not
    written. ``result.instructions`` are SASS warp instructions;
    ``result.extra["sass"]`` lists every SASS instruction with its warp executions, thread
    executions and SIMT efficiency, PTX line, and what the engine charged it (stall cycles
    by cause, shared-memory passes, bytes at each level); ``result.simt_efficiency`` and
    ``result.bank_conflicts`` are the launch's."""
    from simulator.kernelcode.timing import simulate_kernel as run
    return run(kernel, grid, block, args, hw=hw, mode=mode, l2=l2, policy=policy, name=name,
               shared_bytes=shared_bytes, budget=budget, trace=trace)


def load_launcher(spec: str, grid: int | Sequence[int] | None = None,
                  block: int | Sequence[int] | None = None, **kwargs: object,
                  ) -> tuple[object, int | Sequence[int], int | Sequence[int], tuple]:
    """``(kernel, grid, block, args)`` from a launcher ``"FILE.py:FUNCTION"`` (what the
    CLI's ``simulate kernel`` takes), called with ``grid``, ``block`` and ``kwargs`` (its
    own parameters, such as a size); ValueError naming what is wrong."""
    from simulator.kernelcode.userfile import call_launcher
    return call_launcher(spec, grid, block, kwargs)


def source_view(result: Result, kernel: object, args: Sequence[object],
                hw: SIMTGPU | str | os.PathLike) -> str:
    """``kernel``'s Python source line by line with what ``result`` (its
    :func:`simulate_kernel` Result with ``args`` on ``hw``) made of each line: warp
    instructions, SIMT efficiency, stall cycles and their top cause, shared-memory and
    bank-conflict passes, bytes at the L1, the L2 and DRAM (the CLI's ``--source``)."""
    from simulator.kernelcode.source import source_view as view
    if not isinstance(result, Result) or "sass" not in result.extra:
        raise TypeError(f"result={arg.show(result)}: simulate_kernel's Result")
    return view(result, kernel, args, arg.hardware(hw, "simt"))


def emulating(**options: object) -> kernel_launch.emulating:
    """A context in which numba launches ``kernel[grid, block](*args)`` run on the
    emulator (``emulate_kernel``) with numpy arrays; ``.launches`` holds each launch's
    ``Emulation``."""
    from simulator.kernelcode.launch import emulating as context
    return context(**options)
