#!/bin/bash
# The whole-network measurements on the lent GPU machine (docs/networks.md), one call:
#   GPU=h100-sxm bash scripts/measure_network_on_device.sh
#   -> $OUT/m/resources.json (every kernel's compiled registers and SASS),
#      $OUT/bB/network_bB.json for B in $BATCHES (default 1 8 32): the four uniform plans,
#      the plan the oracle picks from this run's measurements, and the plans picked from
#      the predictions (data/plans/$GPU/oracle-*-bB.toml, written by roofsim plan --oracle),
#      $OUT/m/torchvision.json (PyTorch's ResNet-50, where importable).
# numpy 2.4 travels in .whl/ (the image's 2.5.2 breaks numba-cuda 0.30.4; see
# measure_on_device.sh).
set -o pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 3
export PYTHONPATH=/tmp/site:$PWD NUMBA_ENABLE_CUDASIM=0 PYTHONUNBUFFERED=1
GPU=${GPU:-h100-sxm}
mkdir -p "$OUT/m"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv
if [ -z "$SKIP_RESOURCES" ]; then
  python3 -W ignore -m simulator measure resources --out "$OUT/m" 2>&1 | tee -a "$OUT/m/log.txt" || exit 4
fi
if [ -z "$SKIP_TORCH" ]; then
  python3 -W ignore -m simulator measure torchvision --out "$OUT/m" 2>&1 | tee -a "$OUT/m/log.txt"
fi
if [ -n "$COUNTERS" ]; then
  python3 -W ignore -m simulator measure counters --out "$OUT/m" 2>&1 | tee -a "$OUT/m/log.txt" || exit 6
fi
for b in ${BATCHES-1 8 32}; do
  plans="direct-nchw,direct-nhwc,im2col-nchw,im2col-nhwc,oracle"
  for f in data/plans/$GPU/oracle-*-b$b.toml; do [ -f "$f" ] && plans="$plans,$f"; done
  mkdir -p "$OUT/b$b"
  python3 -W ignore -m simulator measure network --batch "$b" --plan "$plans" --out "$OUT/b$b" 2>&1 \
      | tee -a "$OUT/m/log.txt" || exit 5
done
