#!/bin/bash
# Traces of other people's tools for `roofsim check`, recorded on the lent GPU machine:
#   bash scripts/record_traces.sh   ->  $OUT/traces/torch_*.json (PyTorch profiler) and
#                                       $OUT/traces/ncu_roofsim.csv (Nsight Compute, raw page)
set -o pipefail
mkdir -p "$OUT/traces"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/traces/gpu.txt"
python3 scripts/record_traces.py "$OUT/traces" || exit 3
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 4
export PYTHONPATH=/tmp/site:$PWD NUMBA_ENABLE_CUDASIM=0 PYTHONUNBUFFERED=1
M="gpu__time_duration.sum,smsp__inst_executed.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,l1tex__t_bytes.sum,sm__warps_active.avg.pct_of_peak_sustained_active,launch__grid_size,launch__block_size,launch__registers_per_thread"
ncu --clock-control none --csv --page raw --metrics "$M" \
    python3 -W ignore scripts/launch_kernel.py relu=relu:16777216 gemm-tiled=gemm:1024x1024x1024 \
    gemm-naive=gemm:512x512x512 conv-direct=layer3.0.conv2/8@nhwc conv-direct=layer1.0.conv1/8@nchw \
    conv-im2col=layer2.0.conv2/8@nhwc batchnorm=layer1.0.bn3/8@nchw pool2d=maxpool/8@nhwc \
    layout-transform=layer2.0.conv1/8@nhwc 2> "$OUT/traces/ncu.err" > "$OUT/traces/ncu_raw.txt" \
    || { tail -5 "$OUT/traces/ncu.err"; exit 5; }
grep '^"' "$OUT/traces/ncu_raw.txt" > "$OUT/traces/ncu_roofsim.csv"
grep -c '^"' "$OUT/traces/ncu_roofsim.csv"
ls -la "$OUT/traces"
