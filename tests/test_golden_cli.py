"""Every number the CLI prints and writes, held to golden files taken before the house was
reshaped (tests/golden/cli/): what each command prints on standard output and standard
error, its exit code, and every file it writes (JSON and CSV in full, without their wall
times; charts by existence only). A changed number, a changed message or a changed file
fails here; ``pytest --regen-golden`` rewrites them (then review the diff: only what a
change meant to change may move).

The commands cover every command family: hardware and workloads, bounds, both engines in
each of their modes and outputs, sweeps, plans and the oracle, check on each trace kind,
calibration, the validation suites the engine's tests do not already pin, tune, and
every line of tests/bad_inputs/cli.txt (whose messages are pinned here, their exit codes
there)."""
import contextlib
import hashlib
import io
import json
import re
import shlex
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "golden" / "cli"

# one command a line; {n} in a name is the file the command writes
COMMANDS = """
hw list
hw show gtx480
hw show h100-sxm --set l2.size_bytes=8MiB --set sm_count=66 --json out/hw.json
hw show tpu-v1 --toml out/tpu.toml
hw show examples/scalesim_32x32_ws.cfg
workload list
workload show resnet50 --batch 2 --csv out/w.csv --json out/w.json
workload show conv-ablation --layout nhwc
workload show resnet50 --scalesim-csv out/r50.csv
workload show gemm:64x32x16 --dtype fp16
roofline --hw h100-sxm --workload resnet50 --batch 8 --csv out/r.csv --json out/r.json --no-timing
roofline --hw gtx480 --set l2.size_bytes=384KiB --workload gemm:4096x4096x4096
roofline --hw tpu-v1 --workload resnet50
roofline --hw h100-sxm --workload conv-ablation --dtype tf32
roofline --hw h100-sxm --workload gemm:8192x8192x8192 --dtype fp16
roofline --hw v100-sxm2 --workload conv:n=8,c=64,h=56,w=56,k=64,r=3,s=3,stride=1,pad=1 --layout nhwc
roofline-compare
roofline-compare --hw gtx480,h100-sxm,tpu-v1
datamove --hw gtx480 --workload gemm:4096x4096x4096 --onchip-bytes 64KiB
datamove --hw h100-sxm --workload resnet50 --batch 4 --json out/d.json --csv out/d.csv --no-timing
datamove --hw tpu-v1 --workload conv-ablation
simulate systolic --hw tpu-v1 --workload resnet50 --csv out/s.csv --json out/s.json --no-timing
simulate systolic --hw tpu-v1 --workload resnet50 --dataflow os --array 128x128
simulate systolic --hw tpu-v1 --workload resnet50 --mode scalesim --dataflow is
simulate systolic --hw tpu-v1 --workload resnet50 --stalls closed-form --batch 4
simulate systolic --hw systolic-8x8 --workload gemm:64x48x40 --timeline out/st.json --json out/s8.json --no-timing
simulate systolic --hw systolic-4x4 --workload conv:n=1,c=3,h=8,w=8,k=4,r=3,s=3,stride=1,pad=1 --timeline out/st4.json
simulate systolic --hw examples/scalesim_32x32_ws.cfg --workload out/r50.csv --mode scalesim
occupancy --hw h100-sxm --block 128 --regs 32 --smem 100KiB
occupancy --hw gtx480 --block 192 --regs 40 --smem 12000 --json out/o.json
simulate simt --hw gtx480 --kernel matadd --m 32 --n 48
simulate simt --hw gtx480 --kernel gemm-naive --m 512 --n 512 --k 256 --thread-x rows --json out/naive.json --no-timing
simulate simt --hw gtx480 --kernel gemm-tiled --m 128 --n 128 --k 128 --mode full
simulate simt --hw gtx480 --kernel relu --n 1048576 --grid 30 --block 128 --policy lrr --mode full
simulate simt --hw h100-sxm --kernel relu --n 67108864
simulate simt --hw h100-sxm --kernel relu --n 4194304 --l2 warm --json out/relu.json --no-timing
simulate simt --hw h100-sxm --kernel gemm-tiled --m 2048 --n 2048 --k 2048 --tile 16
simulate simt --hw h100-sxm --kernel gemm-naive --m 1024 --n 512 --k 1024 --block 32x8 --mode analytic
simulate simt --hw h100-sxm --kernel conv-direct --layer layer1.0.conv2 --batch 8 --layout nhwc
simulate simt --hw h100-sxm --kernel conv-im2col --layer layer3.0.conv2 --batch 2
simulate simt --hw h100-sxm --kernel conv-direct --shape n=2,c=16,h=20,w=20,k=32,r=5,s=5,stride=2,pad=2 --mode full --timeline out/tl.json
simulate simt --hw h200 --kernel pool2d --layer maxpool --batch 4
simulate simt --hw h100-sxm --kernel batchnorm --layer layer1.0.bn3 --batch 8 --layout nhwc
simulate simt --hw h100-sxm --kernel layout-transform --layer layer2.0.conv1 --batch 8 --layout nhwc
simulate simt --hw v100-sxm2 --kernel gemm-tiled --m 512 --n 512 --k 512 --tile 8
sweep grid --hw gtx480 --kernel relu --n 1048576 --grids 15-120:15,121 --blocks 256 --mode full --csv out/g.csv --json out/g.json --no-timing --workers 1
sweep grid --hw h100-sxm --kernel gemm-naive --m 512 --n 512 --k 512 --blocks 16x16,32x8,8x32 --mode analytic --json out/g2.json --no-timing
sweep grid --hw h100-sxm --kernel relu --n 4194304 --grids 66,132,264 --blocks 128,256 --workers 2 --csv out/g3.csv --no-timing
sweep layout --hw h100-sxm --batch 8 --csv out/l.csv --json out/l.json --no-timing
sweep layout --hw gtx480 --workload conv:n=1,c=64,h=28,w=28,k=64,r=3,s=3,stride=1,pad=1 --kernel conv-im2col --mode sampled --workers 1
plan --hw h100-sxm --workload resnet50 --batch 32 --plan im2col-nhwc --mode analytic --json out/p.json --no-timing
plan --hw h100-sxm --workload resnet50 --batch 1 --plan direct-nchw --workers 1 --vs tpu-v1 --csv out/p.csv --no-timing
plan --hw h100-sxm --workload resnet50 --batch 8 --mode analytic --oracle out/fastest.toml --json out/o8.json --no-timing
plan --hw h100-sxm --workload resnet50 --batch 8 --mode analytic --plan out/fastest.toml
plan --hw gtx480 --workload conv-ablation --batch 2 --mode analytic --oracle out/ab.json --workers 1
plan --hw h200 --workload resnet50 --batch 1 --mode analytic --plan data/plans/h200/oracle-engine-b1.toml --vs systolic-8x8
check --hw h100-sxm --trace data/traces/h100-sxm/torch_resnet50_b8.json --csv out/c.csv --json out/c.json --no-timing
check --hw h100-sxm --trace data/traces/h100-sxm/torch_gemm_loop.json --precision tf32
check --hw h100-sxm --trace data/traces/h100-sxm/ncu_roofsim.csv --json out/c2.json --no-timing
check --hw h200 --trace examples/plain.csv
calibrate --hw h100-sxm --measurements data/measurements/h100-sxm --toml out/cal.toml
calibrate --hw h200 --measurements data/measurements/h200
validate --hw h100-sxm --measurements data/measurements/h100-sxm --suites counters --every 3 --json out/vc.json --no-timing
validate --hw h100-sxm --measurements data/measurements/h100-sxm --suites tune --every 4 --csv out/vt.csv --no-timing
validate --hw h100-sxm --measurements data/measurements/h100-sxm --suites grid,gemm,conv --engine-budget 0 --workers 1 --csv out/v0.csv --no-timing
validate --hw h200 --measurements data/measurements/h200 --suites grid --engine-budget 3e5 --workers 1 --json out/v1.json --no-timing
tune --hw h100-sxm --workload gemm:2048x512x1024 --json out/t.json --no-timing
tune --hw gtx480 --workload conv:n=1,c=64,h=28,w=28,k=64,r=3,s=3,stride=1,pad=1 --engine-top 2 --csv out/t.csv --no-timing
measure micro --out out
measure network --out out --plan direct-nhwc --batch 1
""".strip().splitlines()

PLAIN_CSV = 'name,op,seconds\nmy_gemm,gemm:1024x1024x1024,0.0001\nmy_relu,relu:1048576,0.000009\nmy_conv,"conv:n=1,c=64,h=56,w=56,k=64,r=3,s=3,stride=1,pad=1",0.00002\n'


def _bad_inputs():
    out = []
    for line in (ROOT / "tests" / "bad_inputs" / "cli.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            out.append(line.split("\t", 1)[1][len("roofsim "):])
    return out


CASES = [(f"{i:03d}", c) for i, c in enumerate(COMMANDS)] + \
        [(f"bad{i:03d}", c) for i, c in enumerate(_bad_inputs())]

_MASKS = [
    (re.compile(r"wall time: .*"), "wall time: <masked>"),
    (re.compile(r"; \d+ s\)"), "; <n> s)"),
    (re.compile(r" in \d+\.\d s"), " in <n> s"),
    (re.compile(r"done \(\d+ s\)"), "done (<n> s)"),
    (re.compile(r"has [0-9.]+ GiB free"), "has <n> GiB free"),      # this machine's memory now
]


def _mask(text: str) -> str:
    # a first run's notice that it compiles an engine depends on numba's cache, not the input
    text = "".join(x for x in text.splitlines(True) if not x.startswith("roofsim: compiling"))
    # a long run's progress note off a terminal comes every 30 s: how many, the machine's speed
    text = "".join(x for x in text.splitlines(True)
                   if not re.fullmatch(r"  [^:]+: \d+ of \d+ done \(\d+ s\)\n", x))
    for pat, rep in _MASKS:
        text = pat.sub(rep, text)
    return text


def _file_entry(path: Path) -> str:
    if path.suffix in (".png", ".svg", ".pdf"):
        return f"== {path.name}: a chart ({'non-empty' if path.stat().st_size else 'EMPTY'})\n"
    data = path.read_bytes()
    if path.suffix == ".json" and path.name.startswith(("st", "tl")):
        doc = json.loads(data)     # a timeline: its events' count and digest
        ev = doc["traceEvents"]
        digest = hashlib.sha256(json.dumps(ev, sort_keys=True).encode()).hexdigest()[:16]
        return f"== {path.name}: {len(ev)} events, sha256 {digest}\n"
    text = data.decode()
    if path.suffix == ".json":
        text = json.dumps(_drop_wall(json.loads(text)), indent=1, sort_keys=True) + "\n"
    return f"== {path.name}\n{text}"


def written(name: str, filename: str) -> str:
    """What golden command ``name`` wrote to ``filename`` (as the golden file holds it;
    ``test_golden_cli`` holds the code to it): for tests that check goals on a run this
    suite already makes, so that it runs once."""
    text = (GOLDEN / f"{name}.txt").read_text()
    head = f"\n== {filename}\n"
    assert head in text, f"golden {name} holds no {filename}"
    return text.split(head, 1)[1].split("\n== ", 1)[0]


def _drop_wall(o):
    if isinstance(o, dict):
        return {k: _drop_wall(v) for k, v in o.items() if "wall" not in k}
    if isinstance(o, list):
        return [_drop_wall(v) for v in o]
    return o


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    d = tmp_path_factory.mktemp("golden")
    shutil.copytree(ROOT / "examples", d / "examples")
    (d / "examples" / "plain.csv").write_text(PLAIN_CSV)
    d.joinpath("data").symlink_to(ROOT / "data")
    d.joinpath("tests").symlink_to(ROOT / "tests")
    (d / "out").mkdir()
    return d


def run(cmd: str, cwd: Path) -> str:
    import os

    from simulator.cli import main
    before = {p: p.stat().st_mtime_ns for p in (cwd / "out").iterdir()}
    out, err = io.StringIO(), io.StringIO()
    old = os.getcwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(shlex.split(cmd))
    finally:
        os.chdir(old)
    text = f"$ roofsim {cmd}\nexit {code}\n-- stdout\n{_mask(out.getvalue())}-- stderr\n{_mask(err.getvalue())}"
    for p in sorted((cwd / "out").iterdir()):
        if before.get(p) != p.stat().st_mtime_ns:
            text += _file_entry(p)
    return text


@pytest.mark.parametrize("name,cmd", CASES, ids=[f"{n} {c[:70]}" for n, c in CASES])
def test_golden_cli(name, cmd, workdir, regen_golden):
    got = run(cmd, workdir)
    path = GOLDEN / f"{name}.txt"
    if regen_golden:
        GOLDEN.mkdir(parents=True, exist_ok=True)
        path.write_text(got)
        return
    assert path.exists(), f"no golden file {path.name}; run pytest --regen-golden"
    want = path.read_text()
    assert got == want, f"{name}: `roofsim {cmd}` changed; diff {path} against this run"
