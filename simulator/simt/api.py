"""The SIMT model's Python API (what ``roofsim simulate simt`` and ``sweep`` call).

``build(hw, kernel, ...)`` turns a kernel name and problem into the launches the engine
runs, with the launch a practitioner would pick by default:

* ``relu``: blocks of 256 and a grid that fills every SM once
  (``sm_count x max_threads_per_SM / 256`` blocks), the usual grid-stride sizing;
* ``matadd``: 16x16 blocks, the grid covering the matrix;
* ``gemm-naive``: 16x16 blocks, threadIdx.x on C's columns, the grid covering C;
* ``gemm-tiled``: T = 16 (16x16 blocks), the grid covering C;
* ``conv-direct``: blocks of 256 over the output tensor;
* ``conv-im2col``: blocks of 256 for the im2col launch, then gemm-tiled with T = 16.

``predict(hw, programs, mode)`` runs the engine (``full`` or ``sampled``) and always the
analytic model, and returns one flat dict.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import analytic, engine
from .kernels import conv_direct, conv_im2col, gemm_naive, gemm_tiled, matadd, relu

KERNELS = ("relu", "matadd", "gemm-naive", "gemm-tiled", "conv-direct", "conv-im2col")
MODES = ("full", "sampled", "analytic")
DEFAULT_BLOCK = 256


@dataclass(frozen=True)
class Problem:
    """A kernel applied to a problem: the op (workloads IR) and its launches."""

    kernel: str
    op: object
    programs: tuple

    @property
    def grid(self):
        return self.programs[-1].launch.grid

    @property
    def block(self):
        return self.programs[-1].launch.block


def _dims(value, name, n):
    if value is None:
        return None
    t = (value,) if isinstance(value, int) else tuple(value)
    if len(t) > n:
        raise ValueError(f"{name} = {'x'.join(map(str, t))}: this kernel takes a "
                         f"{n}-D {name}")
    return t


def build(hw, kernel: str, **kw) -> Problem:
    """Launches for ``kernel`` (see ``_build``), with compiled register counts where known."""
    p = _build(hw, kernel, **kw)
    return Problem(p.kernel, p.op, tuple(with_compiled_resources(hw, x) for x in p.programs))


def _build(hw, kernel: str, *, n=None, m=None, k=None, conv=None, tile=None, thread_x=None,
           grid=None, block=None) -> Problem:
    """Launches for ``kernel``: relu over ``n`` elements; a GEMM of m x n by n x k... (C is
    m x n, the reduction k); a convolution ``conv`` (a ``workloads.ir.Conv2d``)."""
    from workloads.ir import Elementwise, Gemm
    if kernel not in KERNELS:
        raise ValueError(f"kernel = {kernel!r}: allowed: {', '.join(KERNELS)}")
    if tile is not None and kernel not in ("gemm-tiled", "conv-im2col"):
        raise ValueError(f"--tile applies to gemm-tiled and conv-im2col, not {kernel}")
    if thread_x is not None and kernel != "gemm-naive":
        raise ValueError(f"--thread-x applies to gemm-naive, not {kernel}")
    if grid is not None and kernel != "relu":
        raise ValueError(f"--grid applies to relu (its grid-stride loop takes any grid); "
                         f"{kernel}'s grid follows from the problem and the block")
    needs = {"relu": ("n",), "matadd": ("m", "n"), "gemm-naive": ("m", "n", "k"), "gemm-tiled": ("m", "n", "k"),
             "conv-direct": ("conv",), "conv-im2col": ("conv",)}[kernel]
    given = {"n": n, "m": m, "k": k, "conv": conv}
    for name in needs:
        if given[name] is None:
            what = {"n": "--n", "m": "--m", "k": "--k", "conv": "--shape or --layer"}[name]
            raise ValueError(f"{kernel} needs {what}")
    for name in ("n", "m", "k"):
        v = given[name]
        if name in needs and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
            raise ValueError(f"{name} = {v!r}: must be a positive integer")
    extra = [x for x in ("n", "m", "k", "conv") if given[x] is not None and x not in needs]
    if extra:
        raise ValueError(f"{kernel} does not take {', '.join('--' + x for x in extra)}")
    if kernel == "relu":
        b = _dims(block, "block", 1)
        b = b[0] if b else DEFAULT_BLOCK
        g = _dims(grid, "grid", 1)
        g = g[0] if g else hw.sm_count * max(1, hw.sm.max_threads // b)
        lc = relu.launch(g, b)
        lc.check(hw)
        return Problem(kernel, Elementwise(name="relu", n=n), (relu.program(lc, n),))
    if kernel == "matadd":
        b = _dims(block, "block", 2) or (16, 16)
        b = b + (1,) * (2 - len(b))
        lc = matadd.launch(m, n, b)
        lc.check(hw)
        return Problem(kernel, Elementwise(name="matadd", n=m * n, op="add"),
                       (matadd.program(lc, m, n),))
    if kernel == "gemm-naive":
        b = _dims(block, "block", 2) or (16, 16)
        b = b + (1,) * (2 - len(b))
        tx = thread_x or "cols"
        lc = gemm_naive.launch(m, n, b, tx)
        lc.check(hw)
        return Problem(kernel, Gemm(name="gemm", M=m, N=n, K=k),
                       (gemm_naive.program(lc, m, n, k, tx),))
    if kernel == "gemm-tiled":
        if block is not None:
            raise ValueError("gemm-tiled's block is T x T: give --tile, not --block")
        return Problem(kernel, Gemm(name="gemm", M=m, N=n, K=k),
                       (gemm_tiled.program(m, n, k, tile or 16),))
    b = _dims(block, "block", 1)
    b = b[0] if b else DEFAULT_BLOCK
    if b > hw.sm.max_threads_per_block:
        raise ValueError(f"block = {b}: exceeds {hw.name}'s {hw.sm.max_threads_per_block} "
                         "threads per block")
    if kernel == "conv-direct":
        return Problem(kernel, conv, (conv_direct.program(conv, b),))
    return Problem(kernel, conv, conv_im2col.programs(conv, b, tile or 16))


def with_compiled_resources(hw, prog):
    """The program with the registers numba-cuda gave its kernel for ``hw``'s compute
    capability, where the resources suite read them (data/measurements/*/resources.json,
    copied into each kernel module's REGS_COMPILED); else unchanged (a stated estimate)."""
    import dataclasses

    from .dispatch import KINDS
    table = getattr(KINDS[prog.kind], "REGS_COMPILED", {}).get(hw.cc)
    if table is None:
        return prog
    regs = table[("nchw", "nhwc")[int(prog.params[17])]] if isinstance(table, dict) else table
    return dataclasses.replace(prog, regs_per_thread=regs,
                               resources_source=f"compiled for sm_{hw.cc[0]}{hw.cc[1]} (resources suite)")


def roofline_seconds(hw, op) -> float:
    """The roofline lower bound of the op (FP32 peak and every memory level)."""
    from workloads.networks import Network

    from simulator.analysis.roofline import roofline
    return roofline(hw, Network(op.name or op.kind, (op,)), "fp32").points[0].bound_seconds


def predict(hw, problem: Problem, mode: str = "sampled", policy: str = "gto", trace: int = 0,
            with_roofline: bool = True) -> dict:
    """Engine (unless ``mode`` is analytic), analytic model and roofline for one problem."""
    if mode not in MODES:
        raise ValueError(f"mode = {mode!r}: allowed: {', '.join(MODES)}")
    a = analytic.predict(hw, problem.programs, policy)
    last = a.launches[-1]
    out = {"kernel": problem.kernel, "hw": hw.name, "mode": mode, "policy": policy,
           "grid": list(problem.grid), "block": list(problem.block),
           "op": problem.op.to_dict(),
           "analytic_seconds": a.seconds, "analytic_cycles": a.cycles,
           "analytic_wall_seconds": a.wall_seconds, "analytic_limiter": last.limiter,
           "occupancy": last.occupancy.occupancy, "blocks_per_sm": last.occupancy.blocks_per_sm,
           "warps_per_sm": last.occupancy.warps_per_sm, "limited_by": last.occupancy.limited_by,
           "waves": last.waves, "regs_per_thread": problem.programs[-1].regs_per_thread,
           "smem_per_block": problem.programs[-1].smem_per_block,
           "resources_source": problem.programs[-1].resources_source}
    if mode == "analytic":
        out.update(cycles=a.cycles, seconds=a.seconds,
                   warp_instructions=sum(x.warp_instructions for x in a.launches),
                   sim_wall_seconds=a.wall_seconds,
                   bytes_by_level={k: sum(x.bytes_by_level[k] for x in a.launches)
                                   for k in a.launches[0].bytes_by_level},
                   stalls_by_cause={}, sampled=False, engine=None)
    else:
        r = engine.simulate(hw, problem.programs, policy=policy, mode=mode, trace=trace)
        d = r.to_dict()
        out.update(cycles=r.cycles, seconds=r.seconds, warp_instructions=r.warp_instructions,
                   sim_wall_seconds=r.sim_wall_seconds, ipc=r.ipc,
                   bytes_by_level=d["bytes_by_level"], stalls_by_cause=d["stalls_by_cause"],
                   hit_rates=d["hit_rates"], sampled=r.sampled,
                   sampling=[lr.sampled for lr in r.launches], flops_executed=r.flops_executed,
                   launches=d["launches"], engine=r)
    if with_roofline:
        out["roofline_seconds"] = roofline_seconds(hw, problem.op)
    return out
