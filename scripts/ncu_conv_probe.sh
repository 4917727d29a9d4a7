#!/bin/bash
# Diagnostic, not a measurement suite: Nsight Compute counters of four conv-direct
# launches (ResNet-50 layer3 at batch 8, NCHW against NHWC, 3x3 and 1x1) to hold the
# engine's instruction mix and pipe costs against the H100 (docs/simt.md). Run on the
# GPU machine (device tool, carry .whl):
#   bash scripts/ncu_conv_probe.sh   ->  $OUT/ncu_conv_direct.json (+ the raw CSVs)
# Another registered kernel taking a convolution, on other launches:
#   KERNEL=layout-transform LAUNCHES="conv:...,k=1,r=1,s=1/nhwc ..." bash scripts/ncu_conv_probe.sh
#   ->  $OUT/ncu_layout_transform.json
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 3
export PYTHONPATH=/tmp/site:$PWD NUMBA_ENABLE_CUDASIM=0 PYTHONUNBUFFERED=1
mkdir -p "$OUT/ncu"
R="long_scoreboard short_scoreboard wait math_pipe_throttle mio_throttle lg_throttle not_selected selected dispatch_stall no_instruction branch_resolving barrier drain imc_miss misc"
M="gpu__time_duration.sum,sm__cycles_elapsed.max,smsp__inst_executed.sum,smsp__issue_active.avg.per_cycle_active,smsp__warps_active.avg.per_cycle_active"
for p in alu fma fmaheavy fmalite lsu uniform cbu adu; do M="$M,smsp__inst_executed_pipe_$p.sum"; done
for p in alu fma fmaheavy fmalite; do M="$M,smsp__pipe_${p}_cycles_active.sum"; done
M="$M,lts__t_bytes.sum,dram__bytes_read.sum,lts__t_requests_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_read.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sector_hit_rate.pct,lts__t_sector_hit_rate.pct"
for r in $R; do M="$M,smsp__average_warps_issue_stalled_${r}_per_issue_active.ratio"; done
KERNEL=${KERNEL:-conv-direct}
LAUNCHES=${LAUNCHES:-"conv:n=8,c=256,h=14,w=14,k=256,r=3,s=3,stride=1,pad=1/nchw conv:n=8,c=256,h=14,w=14,k=256,r=3,s=3,stride=1,pad=1/nhwc conv:n=8,c=256,h=14,w=14,k=1024,r=1,s=1,stride=1,pad=0/nchw conv:n=8,c=256,h=14,w=14,k=1024,r=1,s=1,stride=1,pad=0/nhwc"}
i=0
for l in $LAUNCHES; do
  i=$((i+1))
  ncu --clock-control none --launch-skip 1 --launch-count 1 --csv --page raw --metrics "$M" \
      python3 -W ignore scripts/ncu_conv_probe.py "${l%/*}" "${l#*/}" "$KERNEL" \
      > "$OUT/ncu/$i.csv" 2> "$OUT/ncu/$i.err" || { tail -5 "$OUT/ncu/$i.err"; exit 4; }
done
python3 - "$OUT" "$KERNEL" $LAUNCHES <<'PY'
import csv, io, json, subprocess, sys, datetime
out, kernel, launches = sys.argv[1], sys.argv[2], sys.argv[3:]
def num(x):
    try:
        return float(x.replace(",", ""))
    except ValueError:
        return x
recs = []
for i, l in enumerate(launches, 1):
    lines = [s for s in open(f"{out}/ncu/{i}.csv").read().splitlines() if s.startswith('"')]
    rows = list(csv.reader(io.StringIO("\n".join(lines))))
    hdr, units, val = rows[0], rows[1], rows[-1]
    spec, layout = l.rsplit("/", 1)
    recs.append({"kernel": kernel, "conv": spec, "layout": layout, "block": 256,
                 "metrics": {h: num(v) for h, v in zip(hdr, val)
                             if h.startswith(("gpu__", "sm__", "smsp__", "lts__", "dram__", "l1tex__"))},
                 "units": {h: u for h, u in zip(hdr, units) if u}})
smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                     capture_output=True, text=True).stdout.strip()
ncu = subprocess.run(["ncu", "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]
doc = {"what": f"Nsight Compute counters of {kernel} launches (diagnostic)",
       "provenance": {"gpu": smi, "ncu": ncu,
                     "command": f"KERNEL={kernel} LAUNCHES=\"{' '.join(launches)}\" bash scripts/ncu_conv_probe.sh",
                      "ncu_options": "--clock-control none --launch-skip 1 --launch-count 1",
                      "utc": datetime.datetime.utcnow().isoformat(timespec="seconds") + "Z"},
       "records": recs}
json.dump(doc, open(f"{out}/ncu_{kernel.replace('-', '_')}.json", "w"), indent=1)
for r in recs:
    m = r["metrics"]
    print(r["layout"], r["conv"][5:40], f"{m['gpu__time_duration.sum']/1e3:.0f} us",
          f"inst {m['smsp__inst_executed.sum']:.4g}", f"issue {m['smsp__issue_active.avg.per_cycle_active']}",
          f"fmaheavy cyc/inst {m['smsp__pipe_fmaheavy_cycles_active.sum']/max(1, m['smsp__inst_executed_pipe_fmaheavy.sum']):.2f}")
PY
