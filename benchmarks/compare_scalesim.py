"""Cross-check roofsim's ``--mode scalesim`` against SCALE-Sim 3.0.0 and time both.

    bash benchmarks/setup_scalesim_venv.sh /tmp/scalesim-venv
    python benchmarks/compare_scalesim.py --scalesim-python /tmp/scalesim-venv/bin/python \
        --cfg CFG --topology TOPOLOGY.csv [--dataflow ws] [--array 32x32] [--first N] [--out F.json]

SCALE-Sim runs in its own environment (it needs numpy < 2.4), through its public Python
API, driven by this file's ``--driver`` role; no SCALE-Sim code is copied here. The
topology gets the trailing comma SCALE-Sim requires on every row. Prints per-layer
total cycles, stall cycles, utilisation, mapping efficiency and SRAM/DRAM counts from
both, the mismatches, and the wall time of each with their ratio (one run, one machine).
"""
from __future__ import annotations

import argparse
import configparser
import io
import json
import os
import subprocess
import sys
import tempfile
import time

KEYS = ("total_cycles", "stall_cycles", "overall_util", "mapping_efficiency", "sram_ifmap_reads",
        "sram_filter_reads", "sram_ofmap_writes", "dram_ifmap_reads", "dram_filter_reads",
        "dram_ofmap_writes")


def effective_cfg(text, dataflow=None, array=None):
    cp = configparser.ConfigParser(interpolation=None)
    cp.read_string(text)
    sec = "architecture_presets"
    if dataflow:
        cp.set(sec, "Dataflow", dataflow)
    if array:
        r, c = array.lower().split("x")
        cp.set(sec, "ArrayHeight", str(int(r)))
        cp.set(sec, "ArrayWidth", str(int(c)))
    buf = io.StringIO()
    cp.write(buf)
    return buf.getvalue()


def normalise_topology(text, first=None):
    lines = [ln.strip() for ln in text.splitlines()]
    out, n = [lines[0]], 0
    for ln in lines[1:]:
        if not ln:
            continue
        if first is not None and n >= first:
            break
        out.append(ln if ln.endswith(",") else ln + ",")
        n += 1
    return "\n".join(out) + "\n"


def driver(cfg, topo, gemm):
    """Runs inside SCALE-Sim's environment: run it and print per-layer JSON."""
    from scalesim.scale_sim import scalesim as ScaleSim
    work = os.path.dirname(os.path.abspath(cfg))
    layout = os.path.join(work, "layout.csv")
    with open(layout, "w") as fh:
        fh.write("Layer name,\n")
    real = sys.stdout
    sys.stdout = open(os.devnull, "w")
    t0 = time.perf_counter()
    try:
        s = ScaleSim(save_disk_space=True, verbose=False, config=cfg, topology=topo, layout=layout,
                     input_type_gemm=gemm)
        s.run_scale(top_path=os.path.join(work, "out"))
    finally:
        sys.stdout = real
    wall = time.perf_counter() - t0
    layers = []
    for lo in s.runner.single_layer_sim_object_list:
        comp = [float(x) for x in lo.get_compute_report_items()]
        det = [float(x) for x in lo.get_detail_report_items()]
        # compute report items: total (incl. prefetch), total, stall, overall util %,
        # mapping efficiency %, compute util %; detail items: start, stop, count for the
        # SRAM ifmap, filter, ofmap, then the same for DRAM
        layers.append({"total_cycles": comp[1], "stall_cycles": comp[2], "overall_util": comp[3],
                       "mapping_efficiency": comp[4], "sram_ifmap_reads": det[2],
                       "sram_filter_reads": det[5], "sram_ofmap_writes": det[8],
                       "dram_ifmap_reads": det[11], "dram_filter_reads": det[14],
                       "dram_ofmap_writes": det[17]})
    print(json.dumps({"wall_s": wall, "layers": layers}))


def ours(cfg_path, topo_path):
    import hwmodels
    import workloads
    from simulator.systolic import simulate_network
    hw = hwmodels.get(cfg_path)
    net = workloads.load_topology(topo_path)
    simulate_network(hw, workloads.Network("warm", net.ops[:1]), hw.dataflow, "scalesim")
    t0 = time.perf_counter()
    res = simulate_network(hw, net, hw.dataflow, "scalesim")
    wall = time.perf_counter() - t0
    layers = []
    for r in res.layers:                         # one Result per layer; its figures in systolic
        x = r.systolic
        layers.append({"name": r.workload, "total_cycles": r.cycles,
                       "stall_cycles": r.stalls_by_cause["dram"], "overall_util": 100 * r.utilization,
                       "mapping_efficiency": 100 * x.mapping_efficiency,
                       "sram_ifmap_reads": x.sram_reads.ifmap,
                       "sram_filter_reads": x.sram_reads.filter,
                       "sram_ofmap_writes": x.sram_writes.ofmap,
                       "dram_ifmap_reads": x.dram_read_bytes.ifmap,
                       "dram_filter_reads": x.dram_read_bytes.filter,
                       "dram_ofmap_writes": x.dram_write_bytes.ofmap})
    return wall, layers


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--driver", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--gemm", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--scalesim-python", help="python of an environment with scalesim==3.0.0")
    ap.add_argument("--cfg")
    ap.add_argument("--topology")
    ap.add_argument("--dataflow", choices=("os", "ws", "is"))
    ap.add_argument("--array", help="RxC")
    ap.add_argument("--first", type=int, help="only the first N layers")
    ap.add_argument("--out", help="write both results as JSON")
    a = ap.parse_args()
    if a.driver:
        driver(a.cfg, a.topology, a.gemm)
        return
    if not (a.scalesim_python and a.cfg and a.topology):
        ap.error("--scalesim-python, --cfg and --topology are required")
    work = tempfile.mkdtemp(prefix="cmp_scalesim_")
    cfg = os.path.join(work, "run.cfg")
    topo = os.path.join(work, os.path.basename(a.topology))
    with open(a.cfg) as fh:
        cfg_text = effective_cfg(fh.read(), a.dataflow, a.array)
    with open(cfg, "w") as fh:
        fh.write(cfg_text)
    with open(a.topology) as fh:
        topo_text = normalise_topology(fh.read(), a.first)
    with open(topo, "w") as fh:
        fh.write(topo_text)
    gemm = topo_text.splitlines()[0].split(",")[1].strip().upper() == "M"
    t0 = time.perf_counter()
    res = subprocess.run([a.scalesim_python, os.path.abspath(__file__), "--driver", "--cfg", cfg,
                          "--topology", topo] + (["--gemm"] if gemm else []),
                         capture_output=True, text=True, check=True)
    ss_process = time.perf_counter() - t0
    ss = json.loads(res.stdout.strip().splitlines()[-1])
    wall, mine = ours(cfg, topo)
    bad = 0
    print(f"{'layer':12s} {'SCALE-Sim cycles':>16s} {'roofsim':>12s} {'util% SS':>9s} {'roofsim':>9s} "
          f"{'map% SS':>8s} {'roofsim':>8s}")
    for s, m in zip(ss["layers"], mine):
        for k in KEYS:
            if abs(s[k] - m[k]) > 1e-6 * max(1.0, abs(s[k])):
                bad += 1
                print(f"  MISMATCH {m['name']} {k}: SCALE-Sim {s[k]} roofsim {m[k]}")
        print(f"{m['name']:12s} {s['total_cycles']:16.0f} {m['total_cycles']:12d} {s['overall_util']:9.4f} "
              f"{m['overall_util']:9.4f} {s['mapping_efficiency']:8.3f} {m['mapping_efficiency']:8.3f}")
    n = len(mine) * len(KEYS)
    print(f"{len(mine)} layers x {len(KEYS)} quantities: {n - bad} equal, {bad} differ")
    print(f"wall time: SCALE-Sim {ss['wall_s']:.2f} s (process {ss_process:.2f} s), roofsim scalesim "
          f"mode {wall * 1e3:.2f} ms: {ss['wall_s'] / wall:,.0f}x faster")
    if a.out:
        with open(a.out, "w") as fh:
            json.dump({"cfg": cfg_text, "topology": topo_text, "scalesim": ss,
                       "roofsim": {"wall_s": wall, "layers": mine}}, fh, indent=1)


if __name__ == "__main__":
    main()
