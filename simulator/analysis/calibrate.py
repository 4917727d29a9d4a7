"""Turn a ``micro`` suite into the latency and bandwidth parameters of a SIMT preset.

One set of parameters per device, read from microbenchmarks only -- never fitted to the
kernels that are validated against it:

| parameter | from |
|---|---|
| ``dram.sustained_fraction``, | ``dram_copy`` at two occupancies (``loaded_latency``): the rate the |
| ``dram.queue_cycles`` | DRAM approaches at full load over the peak, and how its latency grows |
| | with load; with copies at one occupancy only, the best copy over the peak |
| ``l2.bandwidth_bytes_per_cycle`` | ``l2_read`` |
| ``sm.l1.latency_cycles`` | ``latency_l1`` (pointer chase, 16 KiB) |
| ``l2.latency_cycles`` | ``latency_l2`` (pointer chase, 8 MiB) |
| ``dram.latency_cycles`` | ``latency_dram_stream`` (pointer chase, 2 KiB steps through 1 GiB: no TLB |
| | misses), else ``latency_dram`` (random pointer chase over 1 GiB) |
| ``sm.block_launch_cycles`` | ``block_launch_rate`` (SMs / blocks per second) |
| ``sm.block_start_cycles`` | ``block_residency`` of empty 1024-thread blocks (2 per SM): a block's life |
| ``kernel_launch_s`` | ``launch_gpu_side`` (one empty launch, back to back on the GPU) less the |
| | engine's time for that launch (one empty block: ``block_start_cycles``) |
| ``host_link`` bandwidths | the largest ``h2d`` copies, when the h2d suite is there |

Cycles are at the clock the measurement recorded (``nvidia_smi.clock_sm_mhz``), which
must equal the preset's clock.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

from simulator.arguments import show

from .measurements import load_suite

if TYPE_CHECKING:
    import os
    from collections.abc import Iterable

    from hwmodels.schema import SIMTGPU


def parameters(hw: SIMTGPU, folder: str | os.PathLike) -> dict:
    """{field path: (value, source, records)} from the folder's micro (and h2d) suite:
    ``records`` names the file and the records the value comes from (for errors)."""
    micro = load_suite(folder, "micro")
    prov = micro.provenance
    if micro.mismatch(hw):
        raise ValueError(f"{micro.path}: provenance device {show(micro.device)} is not a {hw.name} "
                         f"({hw.description}): {micro.mismatch(hw)}; calibrate the preset of the GPU "
                         "that was measured")
    clock_mhz = float((prov.get("nvidia_smi") or {}).get("clock_sm_mhz") or 0)
    if abs(clock_mhz * 1e6 - hw.clock_hz) > 0.01 * hw.clock_hz:
        raise ValueError(f"{hw.name}: measured SM clock {clock_mhz} MHz differs from the preset's "
                         f"{hw.clock_hz / 1e6:g} MHz")
    rec = {}
    at = {}                          # id(record) -> its index in the file, for errors
    for i, r in enumerate(micro.records):
        if r.get("ok"):
            rec.setdefault(r["name"], []).append(r)
            at[id(r)] = i
    if not rec:
        raise ValueError(f"{micro.path}: no successful record (\"ok\": true) of "
                         f"{len(micro.records)}; nothing to calibrate from")
    for n1, n2 in (("latency_l1", "latency_l2"), ("latency_l2", "latency_dram_stream"),
                   ("latency_l2", "latency_dram")):
        if n1 not in rec or n2 not in rec:
            continue
        r1, r2 = rec[n1][0], rec[n2][0]
        if r1["latency_s"] >= r2["latency_s"]:
            raise ValueError(f"{micro.path}: records {at[id(r1)]} and {at[id(r2)]}: {n1} "
                             f"({r1['latency_s']:.3g} s) is not shorter than {n2} "
                             f"({r2['latency_s']:.3g} s); a nearer level answers sooner")

    def which(*rs):
        return f"{micro.path.name} record{'s' if len(rs) > 1 else ''} " + ", ".join(
            str(at[id(r)]) for r in rs)
    src = f"micro suite, {prov['device']}, {prov['date'][:10]}"
    cyc = hw.clock_hz
    out = {}
    dram = "latency_dram_stream" if "latency_dram_stream" in rec else "latency_dram"
    if "dram_copy" in rec:
        top = max(rec["dram_copy"], key=lambda r: r["bandwidth_bytes_per_s"])
        best = top["bandwidth_bytes_per_s"]
        if best > hw.dram.bandwidth_bytes_per_s:
            raise ValueError(f"{micro.path}: record {at[id(top)]}: dram_copy measured "
                             f"{best / 1e12:.4g} TB/s, above the "
                             f"preset's peak dram.bandwidth_bytes_per_s "
                             f"({hw.dram.bandwidth_bytes_per_s / 1e12:.4g} TB/s): the measurement or "
                             "the preset is wrong, and a sustained fraction above 1 means neither")
        fit = (loaded_latency(hw, rec["dram_copy"], rec[dram][0]["latency_s"])
               if dram in rec else None)
        if fit:
            peak, queue_s, how = fit
            out["dram.sustained_fraction"] = (peak / hw.dram.bandwidth_bytes_per_s,
                                              f"dram_copy loaded latency ({how}), {src}",
                                              which(*rec["dram_copy"], rec[dram][0]))
            out["dram.queue_cycles"] = (queue_s * cyc, f"dram_copy loaded latency ({how}), {src}",
                                        which(*rec["dram_copy"], rec[dram][0]))
        else:
            out["dram.sustained_fraction"] = (best / hw.dram.bandwidth_bytes_per_s,
                                              f"best dram_copy {best / 1e12:.3g} TB/s over the "
                                              f"peak, {src}", which(top))
    if "l2_read" in rec:
        out["l2.bandwidth_bytes_per_cycle"] = (rec["l2_read"][0]["bandwidth_bytes_per_s"] / cyc,
                                               f"l2_read, {src}", which(rec["l2_read"][0]))
    # DRAM: the streaming chase (TLB hits, as kernels walking their arrays see) where the
    # suite has it; the random 1 GiB chase adds TLB misses
    for name, field in (("latency_l1", "sm.l1.latency_cycles"), ("latency_l2", "l2.latency_cycles"),
                        (dram, "dram.latency_cycles")):
        if name in rec:
            out[field] = (int(round(rec[name][0]["latency_s"] * cyc)), f"{name} pointer chase, {src}",
                          which(rec[name][0]))
    if "block_launch_rate" in rec:
        fast = max(rec["block_launch_rate"], key=lambda r: r["blocks_per_s"])
        rate = fast["blocks_per_s"]
        out["sm.block_launch_cycles"] = (int(round(hw.sm_count / rate * cyc)),
                                         f"block_launch_rate (SMs / best blocks per s), {src}",
                                         which(fast))
    start = 0
    empty = [r for r in rec.get("block_residency", []) if r["work"] == "empty"]
    if empty:
        # the largest blocks: fewest per SM, so their life and not dispatch sets the rate
        big = max(empty, key=lambda r: r["block"])
        start = int(round(big["block_life_s"] * cyc))
        out["sm.block_start_cycles"] = (start, f"block_residency, empty {big['block']}-thread "
                                               f"blocks ({big['blocks_per_sm_resident']} per SM), {src}",
                                        which(big))
    if "launch_gpu_side" in rec:
        # the engine already spends block_start_cycles on the launch's one empty block
        out["kernel_launch_s"] = (rec["launch_gpu_side"][0]["median_s"] - start / cyc,
                                  f"launch_gpu_side less one block start, {src}",
                                  which(rec["launch_gpu_side"][0], *([big] if empty else [])))
    # the h2d suite is optional; a broken one is an error, not skipped
    h2d = load_suite(folder, "h2d") if (Path(folder) / "h2d.json").exists() else None
    if h2d and h2d.mismatch(hw):
        raise ValueError(f"{h2d.path}: provenance device {show(h2d.device)} is not a {hw.name} "
                         f"({hw.description}), though the micro suite beside it is: "
                         f"{h2d.mismatch(hw)}; a folder holds one GPU's measurements")
    if h2d and hw.host_link is not None:
        hs = f"h2d suite, {h2d.device}, {h2d.provenance['date'][:10]}"
        for kind in ("pinned", "pageable"):
            rs = [r for r in h2d.records if r["kind"] == kind and r.get("ok")]
            if rs:
                big = max(rs, key=lambda r: r["bytes"])
                out[f"host_link.{kind}_bandwidth_bytes_per_s"] = (
                    big["bandwidth_bytes_per_s"], f"largest {kind} copy ({big['bytes'] >> 20} MiB), {hs}",
                    f"h2d.json record {h2d.records.index(big)}")
    return out


COPY_BYTES_PER_WARP_TRIP = 256   # micro.copy_kernel: a warp loads 128 B and stores 128 B a trip


def loaded_latency(hw: SIMTGPU, copies: Iterable[dict],
                   latency_s: float) -> tuple[float, float, str] | None:
    """(peak bytes/s, queue seconds, how) of a DRAM whose latency grows with load as a
    single-server queue's: ``L = L0 (1 + a u / (1 - u))``, u = X / peak, from the grid-
    stride copies (``micro.copy_kernel``: a warp has one 128-byte load in flight, and
    writes 128 bytes, per trip) at the fewest and the most resident warps. Little's law
    gives each copy's latency, ``L = warps x 256 B / X`` (``COPY_BYTES_PER_WARP_TRIP``);
    two copies, two unknowns (peak, a); L0 is the streaming pointer chase. None where the
    copies do not tell them apart
    (one occupancy only, or latency not growing with load)."""
    from simulator.simt.occupancy import occupancy

    def warps(r):
        per_sm = occupancy(hw, r["block"], regs=32).blocks_per_sm
        return min(-(-r["grid"] // hw.sm_count), per_sm) * hw.sm_count * r["block"] // 32

    at = {}                          # the fastest copy at each occupancy
    for r in copies:
        w = warps(r)
        if w not in at or r["bandwidth_bytes_per_s"] > at[w]["bandwidth_bytes_per_s"]:
            at[w] = r
    pts = sorted(at.items())
    if len(pts) < 2:
        return None
    (w1, r1), (w2, r2) = pts[0], pts[-1]
    x1, x2 = r1["bandwidth_bytes_per_s"], r2["bandwidth_bytes_per_s"]
    e1 = w1 * COPY_BYTES_PER_WARP_TRIP / x1 / latency_s - 1          # latency over the unloaded one, less 1
    e2 = w2 * COPY_BYTES_PER_WARP_TRIP / x2 / latency_s - 1
    if not (0 < e1 < e2 and x1 < x2):
        return None
    # e = a x / (peak - x) at both: peak (e1/x1 - e2/x2) = e1 - e2
    peak = (e1 - e2) / (e1 / x1 - e2 / x2)
    a = e1 * (peak - x1) / x1
    if not (x2 < peak <= hw.dram.bandwidth_bytes_per_s and a > 0):
        return None
    how = (f"{x1 / 1e12:.3g} TB/s at {w1 // hw.sm_count} warps an SM, {x2 / 1e12:.3g} at "
           f"{w2 // hw.sm_count}: peak {peak / 1e12:.3g} TB/s, queue {a:.3g} x latency")
    return peak, a * latency_s, how


def _set(obj, path, value):
    head, _, rest = path.partition(".")
    if not rest:
        return dataclasses.replace(obj, **{head: value})
    return dataclasses.replace(obj, **{head: _set(getattr(obj, head), rest, value)})


def _get(obj, path):
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def calibrate(hw: SIMTGPU, folder: str | os.PathLike) -> tuple[SIMTGPU, list[tuple]]:
    """(calibrated preset, [(field, old, new, source)])."""
    if getattr(hw, "family", None) != "simt":
        raise ValueError(f"hardware {show(hw.name)} is not a SIMT GPU")
    changes = []
    for field, (value, source, records) in parameters(hw, folder).items():
        old = _get(hw, field)
        if field.endswith("_cycles") and value < 1:
            raise ValueError(f"{folder}: {field} from {records} ({source}) comes to {value} cycles; a "
                             "measurement that short is an error in it, not a parameter")
        if field.endswith("_s") and value <= 0:
            raise ValueError(f"{folder}: {field} from {records} ({source}) "
                             f"comes to {value:.3g} s; it must be "
                             "positive (the measurement is shorter than what it includes)")
        try:
            hw = _set(hw, field, type(old)(value) if isinstance(old, int) else float(value))
        except ValueError as e:
            raise ValueError(f"{folder}: {field} from {records} ({source}): {e}") from None
        changes.append((field, old, _get(hw, field), source))
    return hw, changes
