"""Kernels for teaching SIMT: a reduction ladder (Mark Harris's, five steps), a branch
inside a warp against one at warp boundaries, and a shared-memory transpose with and
without its padding column. Their code lives in ``workloads/kernelsuite/teaching.py``
(read it there: each kernel says what it shows), where the teaching suite measures them.

On roofsim (no GPU needed):

    roofsim simulate kernel examples/teaching.py:launch_reduce_interleaved --hw gtx480 --arg n=65536 --source
    roofsim simulate kernel examples/teaching.py:launch_branch_in_warp --hw h100-sxm --arg n=2^18
    roofsim simulate kernel examples/teaching.py:launch_transpose_tile32 --hw h100-sxm \\
        --arg rows=1024 --arg cols=1024

``python examples/teaching.py`` runs all of them with numba and checks them against numpy
(``--small`` with NUMBA_ENABLE_CUDASIM=1 runs what numba's CUDA simulator can: it has no
warp shuffles).
"""
import sys

from workloads.kernelsuite.teaching import *  # noqa: F403 -- the kernels and their launchers

if __name__ == "__main__":
    run_all(small="--small" in sys.argv)  # noqa: F405
