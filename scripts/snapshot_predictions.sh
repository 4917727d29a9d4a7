#!/bin/bash
# Every prediction the committed measurements are held to, into one folder, so that a
# change meant to leave predictions alone can be checked against a snapshot of before:
#   scripts/snapshot_predictions.sh DIR            # both devices, every suite
#   python3 scripts/compare_snapshots.py BEFORE AFTER
# The time suites (grid, gemm, conv) with the engine on every record, the counters, tune,
# kernels and teaching suites; --no-timing leaves the run's own wall times out, so two
# runs of the same code give equal files. Some 40 minutes on two cores.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: scripts/snapshot_predictions.sh DIR}
mkdir -p "$out"
for hw in h100-sxm h200; do
    m="data/measurements/$hw"
    python3 -m simulator validate --hw "$hw" --measurements "$m" --json "$out/$hw.times.json" --no-timing \
        > "$out/$hw.times.txt"
    for suite in kernels counters tune teaching; do
        case "$suite" in
            kernels) f="$m/kernels.json" ;;
            teaching) f="$m/teaching.json" ;;
            *) f="$m/$suite.json" ;;
        esac
        [ -f "$f" ] || continue
        python3 -m simulator validate --hw "$hw" --measurements "$m" --suites "$suite" \
            --json "$out/$hw.$suite.json" --no-timing > "$out/$hw.$suite.txt"
    done
done
echo "wrote $out"
