#!/bin/bash
# Re-runs the committed validation (data/validation/) from the committed measurements:
#   scripts/validate_all.sh            # about 1.5 hours on two cores
# Each suite runs as its own `roofsim validate` (grid then conv on one core, gemm on the
# other), then scripts/merge_validation.py writes the scores and the predictions CSV
# with each suite's engine budget and command. The H200 is predicted (analytic model
# and roofline) from the H100 calibration changed only by its datasheet.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
GRID=${GRID_BUDGET:-6e7} GEMM=${GEMM_BUDGET:-2e9} CONV=${CONV_BUDGET:-6e7}
run() {  # suite budget
    roofsim validate --hw h100-sxm --measurements data/measurements/h100-sxm --suites "$1" \
        --engine-budget "$2" --csv "$out/$1.csv" --json "$out/$1.json" > "$out/$1.log"
}
run gemm "$GEMM" &
gemm=$!
run grid "$GRID"
run conv "$CONV"
wait $gemm
roofsim validate --hw h200 --measurements data/measurements/h200 --engine-budget 0 \
    --json "$out/h200.json" > "$out/h200.log"
python3 scripts/merge_validation.py "$out" grid="$GRID" gemm="$GEMM" conv="$CONV"
cat "$out"/*.log
