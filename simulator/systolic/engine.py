"""Whole networks on a systolic array: the entry point the CLI and notebooks use."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from workloads.ir import Conv2d

from .closed_form import OPERANDS, SystolicResult, simulate_layer
from .lowering import check_array, check_dataflow, gemm_view

MODES = ("default", "scalesim")


def split_groups(op):
    """A grouped convolution as (one group's convolution, number of groups)."""
    if isinstance(op, Conv2d) and op.groups > 1:
        g = op.groups
        return dataclasses.replace(op, C=op.C // g, K=op.K // g, groups=1), g
    return op, 1


def _scale(r: SystolicResult, g: int, name: str) -> SystolicResult:
    if g == 1:
        return r
    mul = lambda d: {k: v * g for k, v in d.items()}  # noqa: E731
    return dataclasses.replace(r, layer=name, macs=r.macs * g, folds=r.folds * g,
                               compute_cycles=r.compute_cycles * g, stall_cycles=r.stall_cycles * g,
                               sram_reads=mul(r.sram_reads), sram_writes=mul(r.sram_writes),
                               dram_reads_bytes=mul(r.dram_reads_bytes),
                               dram_writes_bytes=mul(r.dram_writes_bytes),
                               extra={**r.extra, "groups": g})


@dataclass(frozen=True)
class SystolicReport:
    hardware: object
    network: object
    dataflow: str
    mode: str
    stalls: str
    layers: tuple[SystolicResult, ...]

    def totals(self) -> dict:
        L = self.layers
        cyc = sum(r.total_cycles for r in L)
        R, C = L[0].rows, L[0].cols
        t = {"layers": len(L), "macs": sum(r.macs for r in L),
             "compute_cycles": sum(r.compute_cycles for r in L),
             "stall_cycles": sum(r.stall_cycles for r in L), "total_cycles": cyc,
             "utilization": sum(r.macs for r in L) / (R * C * cyc),
             "compute_utilization": sum(r.macs for r in L) / (R * C * sum(r.compute_cycles for r in L)),
             "mapping_efficiency": sum(r.mapping_efficiency * r.compute_cycles for r in L)
             / max(1, sum(r.compute_cycles for r in L)),
             "seconds": sum(r.seconds for r in L)}
        for op in OPERANDS:
            t[f"sram_{op}_reads"] = sum(r.sram_reads[op] for r in L)
            t[f"sram_{op}_writes"] = sum(r.sram_writes[op] for r in L)
            t[f"dram_{op}_read_bytes"] = sum(r.dram_reads_bytes[op] for r in L)
            t[f"dram_{op}_write_bytes"] = sum(r.dram_writes_bytes[op] for r in L)
        return t

    def to_dict(self) -> dict:
        from hwmodels import to_dict as hw_dict
        return {"hardware": hw_dict(self.hardware), "workload": self.network.to_dict(),
                "dataflow": self.dataflow, "mode": self.mode, "stalls": self.stalls,
                "layers": [r.row() for r in self.layers], "totals": self.totals()}


def simulate_network(hw, network, dataflow: str = "ws", mode: str = "default",
                     rows: int | None = None, cols: int | None = None,
                     stalls: str = "pipeline") -> SystolicReport:
    """Every layer of ``network`` on ``hw`` (a SystolicArray), in order.

    ``mode="default"`` is the physically faithful model (closed form; stall cycles from
    the access/execute pipeline, or from the closed form's overlap rule with
    ``stalls="closed-form"``); ``mode="scalesim"`` reproduces SCALE-Sim 3.0.0.
    """
    if getattr(hw, "family", None) != "systolic":
        raise ValueError(f"hardware {getattr(hw, 'name', hw)!r} is not a systolic array; "
                         "use a systolic preset (tpu-v1, systolic-4x4, systolic-8x8), a TOML "
                         "file of family 'systolic' or a SCALE-Sim .cfg")
    check_dataflow(dataflow)
    if mode not in MODES:
        raise ValueError(f"mode = {mode!r}: allowed: {', '.join(MODES)}")
    if stalls not in ("pipeline", "closed-form"):
        raise ValueError(f"stalls = {stalls!r}: allowed: pipeline, closed-form")
    rows, cols = rows or hw.rows, cols or hw.cols
    check_array(rows, cols)
    hw = dataclasses.replace(hw, rows=rows, cols=cols)
    out = []
    for op in network.ops:
        gemm_view(split_groups(op)[0])  # a clear error for ops without a lowering
        one, g = split_groups(op)
        if mode == "scalesim":
            from .scalesim_mode import simulate_layer_scalesim
            r = simulate_layer_scalesim(hw, one, dataflow)
        else:
            r = simulate_layer(hw, one, dataflow)
            if stalls == "pipeline":
                from .pipeline import pipeline_layer
                p = pipeline_layer(hw, one, dataflow)
                r = dataclasses.replace(r, stall_cycles=p.stall_cycles)
        out.append(_scale(r, g, op.name))
    return SystolicReport(hw, network, dataflow, mode, stalls if mode == "default" else "scalesim",
                          tuple(out))
