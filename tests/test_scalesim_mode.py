"""--mode scalesim against SCALE-Sim 3.0.0's own numbers (golden file, see its provenance)."""
import json
from pathlib import Path

import pytest

import hwmodels
import workloads
from simulator.cli import main
from simulator.systolic import simulate_network
from simulator.systolic.scalesim_mode import SSLayer, as_scalesim_layer, closed_form

GOLDEN = json.loads((Path(__file__).parent / "golden" / "scalesim_resnet50.json").read_text())


@pytest.mark.parametrize("run", sorted(GOLDEN["runs"]))
def test_matches_scalesim_on_resnet50(run, tmp_path):
    g = GOLDEN["runs"][run]
    cfg = tmp_path / "run.cfg"
    cfg.write_text(g["cfg"])
    topo = tmp_path / "resnet50.csv"
    topo.write_text(g.get("topology", GOLDEN["topology"]))
    hw = hwmodels.get(str(cfg))
    assert (hw.rows, hw.cols, hw.dataflow) == (*g["array"], g["dataflow"])
    res = simulate_network(hw, workloads.load_topology(topo), hw.dataflow, "scalesim")
    assert len(res.layers) == len(g["layers"])
    for r, s in zip(res.layers, g["layers"]):
        x = r.systolic
        assert r.workload == s["name"]
        assert r.cycles == s["total_cycles"] and r.stalls_by_cause["dram"] == s["stall_cycles"]
        assert 100 * r.utilization == pytest.approx(s["overall_util"], rel=1e-9)
        assert 100 * x.mapping_efficiency == pytest.approx(s["mapping_efficiency"], rel=1e-9)
        if "compute_util" in s:
            assert 100 * x.scalesim_compute_utilization == pytest.approx(s["compute_util"], rel=1e-9)
        assert x.sram_reads.ifmap == s["sram_ifmap_reads"]
        assert x.sram_reads.filter == s["sram_filter_reads"]
        assert x.sram_writes.ofmap == s["sram_ofmap_writes"]
        assert x.dram_read_bytes.ifmap == s["dram_ifmap_reads"]
        assert x.dram_read_bytes.filter == s["dram_filter_reads"]
        assert x.dram_write_bytes.ofmap == s["dram_ofmap_writes"]


def test_output_size_rounding_differs_from_floor():
    # 11x11 input, 3x3 filter, stride 3: SCALE-Sim computes ceil((11-3+3)/3) = 4 outputs,
    # one more than floor((11-3)/3) + 1 = 3, whose window sticks out of the input
    L = SSLayer(H=11, W=11, R=3, S=3, C=1, K=1, s=3)
    assert L.Eh == 4 and workloads.Conv2d(N=1, C=1, H=11, W=11, K=1, R=3, S=3, stride=3).P == 3


def test_gemm_maps_like_scalesim():
    L = as_scalesim_layer(workloads.Gemm(M=40, N=24, K=30))
    assert (L.P, L.Wn, L.K) == (40, 30, 24)
    cf = closed_form(L, 8, 4, "ws")
    assert (cf["Sr"], cf["Sc"], cf["T"]) == (30, 24, 40)
    assert cf["compute_cycles"] == 4 * 6 * (2 * 8 + 4 + 40 - 2) - 1


def test_cli_scalesim_mode_with_cfg(tmp_path, capsys):
    g = GOLDEN["runs"]["32x32_ws"]
    cfg, topo = tmp_path / "run.cfg", tmp_path / "t.csv"
    cfg.write_text(g["cfg"])
    topo.write_text(GOLDEN["topology"])
    code = main(["simulate", "systolic", "--hw", str(cfg), "--workload", str(topo), "--mode", "scalesim"])
    out = capsys.readouterr().out
    assert code == 0 and "32x32 array, ws, scalesim mode" in out
    first = next(line for line in out.splitlines() if line.startswith("conv1"))
    assert f"{g['layers'][0]['total_cycles']:,}" in first


@pytest.mark.parametrize("edit,needle", [
    (lambda t: t.replace("ArrayHeight:    32", "ArrayHeight:    0"), "ArrayHeight = 0"),
    (lambda t: t.replace("Dataflow : ws", "Dataflow : xs"), "Dataflow = 'xs'"),
    (lambda t: t.replace("InterfaceBandwidth: CALC", "InterfaceBandwidth: FAST"), "InterfaceBandwidth"),
    (lambda t: t.replace("SparsitySupport : false", "SparsitySupport : true"), "not supported"),
    (lambda t: t.replace("[architecture_presets]", "[architecture_presets"), "malformed"),
    (lambda t: t.replace("IfmapSramSzkB:   32768\n", ""), "IfmapSramSzkB is missing"),
])
def test_bad_cfg(edit, needle, tmp_path):
    p = tmp_path / "bad.cfg"
    p.write_text(edit(GOLDEN["runs"]["32x32_ws"]["cfg"]))
    with pytest.raises(ValueError, match=needle):
        hwmodels.get(str(p))


def test_replay_lines_are_known_before_the_run(monkeypatch):
    """``replay_lines`` says, before running, which layers replay SCALE-Sim's buffers (as
    the run then reports) and how many demand lines: the replay loop's own count, counted
    here by running it in Python with its per-line ofmap count wrapped."""
    from simulator.systolic import scalesim_memory
    from simulator.systolic.scalesim_mode import replay_lines, simulate_layer_scalesim
    hw = hwmodels.with_overrides(hwmodels.get("tpu-v1"), ["rows=16", "cols=16"])
    net = workloads.resolve("resnet50")
    seen = {True: 0, False: 0}
    for op in [o for o in net.ops if o.kind in ("conv2d", "gemm")][:12]:
        for df in ("os", "ws", "is"):
            n = replay_lines(hw, op, df)
            r = simulate_layer_scalesim(hw, op, df)
            assert (n > 0) == r.memory_replayed, (op.name, df)
            seen[n > 0] += 1
    assert seen[True] and seen[False]
    op = workloads.Gemm(name="g", M=40, N=24, K=20)
    small = hwmodels.with_overrides(hw, ["ifmap_sram.size_bytes=512B", "filter_sram.size_bytes=512B",
                                         "ofmap_sram.size_bytes=512B", "rows=4", "cols=4"])
    calls = []
    orig = scalesim_memory._ofmap_count.py_func
    monkeypatch.setattr(scalesim_memory, "_ofmap_count", lambda *a: calls.append(1) or orig(*a))
    monkeypatch.setattr(scalesim_memory, "replay_loop", scalesim_memory.replay_loop.py_func)
    for df in ("os", "ws", "is"):
        calls.clear()
        simulate_layer_scalesim(small, op, df)
        assert len(calls) == replay_lines(small, op, df) > 0, df
