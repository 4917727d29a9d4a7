#!/bin/bash
# Re-runs the committed validation (data/validation/) from the committed measurements:
#   scripts/validate_all.sh            # about 1.5 hours on two cores
# Each suite runs as its own `roofsim validate` (the H100's gemm on one core; the H100's
# grid and conv, then the H200's, on the other), then scripts/merge_validation.py writes
# the scores and the predictions CSV with each suite's engine budget and command. The
# H200 preset is the H100 calibration changed only by the H200's datasheet.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
GRID=${GRID_BUDGET:-6e7} GEMM=${GEMM_BUDGET:-2e9} CONV=${CONV_BUDGET:-6e7}
H200_GEMM=${H200_GEMM_BUDGET:-4e8}
run() {  # preset suite budget name
    roofsim validate --hw "$1" --measurements "data/measurements/$1" --suites "$2" \
        --engine-budget "$3" --json "$out/$4.json" > "$out/$4.log"
}
run h100-sxm gemm "$GEMM" gemm &
gemm=$!
run h100-sxm grid "$GRID" grid
run h100-sxm conv "$CONV" conv
run h200 grid "$GRID" h200_grid
run h200 conv "$CONV" h200_conv
run h200 gemm "$H200_GEMM" h200_gemm
wait $gemm
python3 scripts/merge_validation.py "$out" grid="$GRID" gemm="$GEMM" conv="$CONV" \
    h200.grid="$GRID" h200.gemm="$H200_GEMM" h200.conv="$CONV"
cat "$out"/*.log
