"""The SIMT model's Python API: kernels from the registry, launches, and the two
predictors that live in ``simulator.simt`` (the engine and the analytic model).

``build(hw, kernel, **problem)`` turns a registered kernel's name and its problem
arguments (``kernels.spec``: validated, defaults filled) into the launches the engine
runs, with the launch a practitioner would pick by default (each kernel's ``build``
says which) and the registers numba-cuda compiled it with where they were read.
``simulate`` runs the engine and ``analytic`` the analytic model; both return a
``simulator.result.Result``. The roofline bound, which lives above the engines, is
``simulator.analysis.roofline.bound``; ``simulator.analysis.compare.predict`` runs all
three.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

from . import analytic as _analytic
from . import engine
from .kernels import REGISTRY

if TYPE_CHECKING:
    from hwmodels.schema import SIMTGPU
    from simulator.result import Result

    from . import isa, traces

MODES = ("full", "sampled", "analytic")


@dataclass(frozen=True)
class Problem:
    """A registered kernel applied to a problem: its arguments (defaults filled), the op
    it computes (workloads IR) and its launches."""

    kernel: str
    args: dict
    op: object
    programs: tuple

    @property
    def grid(self):
        return self.programs[-1].launch.grid

    @property
    def block(self):
        return self.programs[-1].launch.block


def kernels() -> tuple:
    """Names of the registered kernels."""
    return REGISTRY.names()


def build(hw: SIMTGPU, kernel: str, **args: object) -> Problem:
    """Launches of ``kernel`` on ``hw`` for the problem ``args`` (see each kernel's
    ``SPEC.args``), with compiled register counts where known.

    >>> import hwmodels
    >>> p = build(hwmodels.get("gtx480"), "gemm-tiled", m=64, n=64, k=64)
    >>> p.args["tile"], p.grid, p.block
    (16, (4, 4, 1), (16, 16, 1))
    """
    spec = REGISTRY.get(kernel)
    problem = spec.problem(**args)
    programs = tuple(with_compiled_resources(hw, p) for p in spec.build(hw, problem))
    footprint = engine.footprint_bytes(programs)
    if footprint > hw.dram.size_bytes:
        from hwmodels.units import format_bytes
        raise ValueError(f"{spec.name}: the launch's arrays take {format_bytes(footprint)}, more "
                         f"than {hw.name}'s {format_bytes(hw.dram.size_bytes)} of device memory "
                         f"(dram.size_bytes); no GPU of it could run it")
    return Problem(spec.name, problem, spec.op(problem), programs)


def with_compiled_resources(hw: SIMTGPU,
                            prog: isa.Program | traces.TraceProgram) -> isa.Program | traces.TraceProgram:
    """The program with the registers numba-cuda gave its kernel for ``hw``'s compute
    capability, where the resources suite read them (data/measurements/*/resources.json,
    copied into each kernel module's REGS_COMPILED); else unchanged (a stated estimate)."""
    from .dispatch import MODULES
    if getattr(prog, "face", None) is None:       # a trace program: its front end's
        return prog
    table = getattr(MODULES[prog.face], "REGS_COMPILED", {}).get(hw.cc)
    if table is None:
        return prog
    regs = table[("nchw", "nhwc")[prog.param("layout")]] if isinstance(table, dict) else table
    return dataclasses.replace(prog, regs_per_thread=regs,
                               resources_source=f"compiled for sm_{hw.cc[0]}{hw.cc[1]} (resources suite)")


def _with_op(result, problem: Problem):
    return dataclasses.replace(result, workload=problem.kernel, op=problem.op.identity())


def announce_compiling() -> bool:
    """Log (``simulator.jit``) that the SIMT engine is about to be compiled, where numba's
    cache does not hold its entry points yet (the cycle loop and the analytic model's
    warp walk, which compile the rest with them); callers that spread predictions over
    worker processes call it before they start them."""
    from simulator import jit

    from . import core, walk
    return jit.announce("SIMT engine", [core.run, walk.profile])


def announce_compiling_analytic() -> bool:
    """``announce_compiling`` for a run of the analytic model alone: its warp walk (what
    an analytic run compiles; the engine's cycle loop it never needs)."""
    from simulator import jit

    from . import walk
    return jit.announce("SIMT analytic model", [walk.profile])


def simulate(hw: SIMTGPU, problem: Problem, mode: str = "sampled", policy: str = "gto",
             trace: int = 0, l2: str = "cold") -> Result:
    """The engine's Result for ``problem`` (``mode`` full or sampled; ``l2`` the L2's
    start, as ``engine.simulate``)."""
    announce_compiling()
    return _with_op(engine.simulate(hw, problem.programs, policy=policy, mode=mode, trace=trace,
                                    l2=l2), problem)


def analytic(hw: SIMTGPU, problem: Problem, policy: str = "gto", l2: str = "cold") -> Result:
    """The analytic model's Result for ``problem`` (``l2`` as ``analytic.predict``)."""
    announce_compiling_analytic()
    return _with_op(_analytic.predict(hw, problem.programs, policy, l2=l2), problem)
