#!/bin/bash
# Diagnostics on the lent GPU machine (not a measurement suite): every kernels-suite case's
# first shape under Nsight Compute with the per-pipe instruction counts and the issue-stall
# reasons, to place SASS opcodes on the H100's pipes (docs/simt.md):
#   scripts/ncu_pipes.sh   ->  $OUT/ncu_pipes.csv, $OUT/ncu_pipes_metrics.txt, $OUT/sass/*.sass
set -o pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 3
export PYTHONPATH=/tmp/site:$PWD NUMBA_ENABLE_CUDASIM=0 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv
ncu --version | tail -1
ncu --query-metrics --csv > /tmp/q.csv 2>/dev/null
want="smsp__inst_executed_pipe_alu smsp__inst_executed_pipe_fma smsp__inst_executed_pipe_fmaheavy
smsp__inst_executed_pipe_fmalite smsp__inst_executed_pipe_xu smsp__inst_executed_pipe_fp64
smsp__inst_executed_pipe_lsu smsp__inst_executed_pipe_adu smsp__inst_executed_pipe_cbu
smsp__inst_executed_pipe_uniform smsp__inst_executed_pipe_fp16 smsp__inst_executed_pipe_tensor
smsp__inst_executed smsp__cycles_active sm__cycles_elapsed gpu__time_duration smsp__issue_active
sm__pipe_alu_cycles_active sm__pipe_fma_cycles_active sm__pipe_fmaheavy_cycles_active
sm__pipe_fp64_cycles_active sm__pipe_shared_cycles_active sm__pipe_xu_cycles_active
sm__inst_executed_pipe_xu sm__pipe_fmalite_cycles_active sm__pipe_uniform_cycles_active"
metrics=""
for m in $want; do
  if grep -q "\"$m\"" /tmp/q.csv; then metrics="$metrics,$m.sum"; else echo "no metric $m"; fi
done
for r in short_scoreboard long_scoreboard wait math_pipe_throttle mio_throttle lg_throttle \
         dispatch_stall no_instruction not_selected selected barrier membar branch_resolving \
         drain imc_miss tex_throttle sleeping misc; do
  metrics="$metrics,smsp__average_warps_issue_stalled_${r}_per_issue_active.ratio"
done
metrics="${metrics#,}"
echo "$metrics" | tr ',' '\n' > "$OUT/ncu_pipes_metrics.txt"
items=$(python3 -W ignore - <<'PY'
from simulator.measure.kernels import plan, SEP
from workloads.kernelsuite import all_cases
seen = set()
for case, label, size in plan(all_cases()):
    if case.name not in seen:
        seen.add(case.name)
        print(f"{case.name}{SEP}{label}")
PY
)
echo "$items" | wc -l
ncu --clock-control none --csv --page raw --print-units base --metrics "$metrics" \
    python3 -W ignore -m simulator.measure.kernels --child 0 $items > "$OUT/ncu_pipes.csv" 2> "$OUT/ncu_pipes.err"
echo "ncu rc $?"; tail -3 "$OUT/ncu_pipes.err"
wc -l "$OUT/ncu_pipes.csv"
