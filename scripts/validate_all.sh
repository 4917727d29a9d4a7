#!/bin/bash
# Re-runs the committed validation (data/validation/) from the committed measurements:
#   scripts/validate_all.sh            # about 2 hours on two cores
# (2026-11-23: the H100's gemm at 9e8 about 55 minutes of one core, its conv at 2e8 about
# 65, its grid 21, the H200's grid, gemm and conv 33, 30 and 17; conv at 1e9 would take
# some 7 hours, gemm at 2e9 over 2)
# Each suite runs as its own `roofsim validate`, in two queues, one per core; then
# scripts/merge_validation.py writes the scores and the predictions CSV with each suite's engine budget and command. The
# H200 preset is the H100 calibration changed only by the H200's datasheet.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
GRID=${GRID_BUDGET:-6e7} GEMM=${GEMM_BUDGET:-9e8} CONV=${CONV_BUDGET:-2e8}
H200_GEMM=${H200_GEMM_BUDGET:-4e8} H200_CONV=${H200_CONV_BUDGET:-6e7}
run() {  # preset suite budget name
    roofsim validate --hw "$1" --measurements "data/measurements/$1" --suites "$2" \
        --engine-budget "$3" --json "$out/$4.json" > "$out/$4.log"
}
( run h100-sxm gemm "$GEMM" gemm; run h200 grid "$GRID" h200_grid
  run h200 gemm "$H200_GEMM" h200_gemm ) &
first=$!
run h100-sxm grid "$GRID" grid
run h100-sxm conv "$CONV" conv
run h200 conv "$H200_CONV" h200_conv
wait $first
python3 scripts/merge_validation.py "$out" grid="$GRID" gemm="$GEMM" conv="$CONV" \
    h200.grid="$GRID" h200.gemm="$H200_GEMM" h200.conv="$H200_CONV"
cat "$out"/*.log
