#!/bin/bash
# Re-runs the committed validation (data/validation/) from the committed measurements,
# the engine on every record, the records spread over one Dask worker per core:
#   scripts/validate_all.sh            # some 15 minutes on two cores
# The H200 preset is the H100 calibration changed only by the H200's datasheet.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
for hw in h100-sxm h200; do
    roofsim validate --hw "$hw" --measurements "data/measurements/$hw" --json "$out/$hw.json" \
        | tee "$out/$hw.log"
done
python3 scripts/merge_validation.py "$out"
