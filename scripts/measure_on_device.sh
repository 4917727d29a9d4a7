#!/bin/bash
# Runs measurement suites on the lent GPU machine (see docs/measure.md):
#   scripts/measure_on_device.sh SUITE [SUITE...]   ->  $OUT/m/SUITE.json
# The image's numpy 2.5.2 breaks numba-cuda 0.30.4 kernel compilation (np.row_stack is
# gone), so a numpy 2.4 wheel travels in .whl/ and is installed into /tmp/site first.
set -o pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 3
export PYTHONPATH=/tmp/site:$PWD NUMBA_ENABLE_CUDASIM=0 PYTHONUNBUFFERED=1
mkdir -p "$OUT/m"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv
python3 -c "import numpy, numba; from numba import cuda; print('numpy', numpy.__version__, 'numba', numba.__version__, 'gpu', cuda.is_available())"
for s in "$@"; do
    python3 -W ignore -m simulator measure "$s" --out "$OUT/m" --deadline "${DEADLINE:-200}" 2>&1 \
        | tee -a "$OUT/m/log.txt" || exit 4
done
