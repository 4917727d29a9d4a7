#!/bin/bash
# PyTorch eager, TorchScript and torch.compile (default, max-autotune) on the lent GPU
# machine, end to end and per layer, with the per-layer oracle between them
# (docs/networks.md, "Eager against compiled"). PyTorch only: no numba, so no wheel.
#   MODELS=resnet50 BATCHES=1,8,32 DEADLINE=480 bash scripts/measure_compiled_on_device.sh
#   -> $OUT/compiled.json (rewritten after each model and batch), $OUT/log.txt
set -o pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 TORCHINDUCTOR_COMPILE_THREADS=${TORCHINDUCTOR_COMPILE_THREADS:-16}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv
python3 -W ignore -m simulator measure compiled --workload "${MODELS:-resnet50,mobilenet_v2}" \
    --batch "${BATCHES:-1,8,32}" --deadline "${DEADLINE:-480}" --reps "${REPS:-10}" --out "$OUT" \
    2>&1 | grep -v "^[WE][0-9]" | tee "$OUT/log.txt"
