"""The requests a line's atomic unit queues in order, ``l2.atomic_queue_requests``, from
the atomic_trace suite (``roofsim measure atomic_trace``):

    python scripts/fit_atomic_queue.py data/measurements/h100-sxm/atomic_trace.json

The emulator runs the suite's CAS loop (``micro.cas_lanes_kernel``, the first 1 or 12
lanes of every warp each on its own word: the traced kernel less its recording) at each
shape, for each candidate queue. Where the line keeps up, the queue never fills and the
candidates agree: the emulator's tries are 12-17% above the H100's at every such shape
(a factor the emulator does not model, and not the queue's). With 512 warps of 12
lanes they part (a queue that holds them all, first come, first served: 1.5x the
H100's tries). The fit is the candidate whose ratios to the H100's tries (each shape's
median over its launches) vary least from shape to shape: the least standard
deviation of their logarithms, the common factor left aside. The other atomics figures
are the preset's (scripts/fit_atomics.py)."""
import json
import sys

import numpy as np

CANDIDATES = (16, 32, 48, 64, 80, 96, 112, 128, 160, 192, 256, 384)


def shapes(records):
    """{(grid, block, lanes): median total tries over the launches}."""
    got = {}
    for r in records:
        if r.get("name") == "cas_trace" and r["ok"]:
            got.setdefault((r["grid"], r["block"], r["lanes"]), []).append(r["total_tries"])
    return {k: float(np.median(v)) for k, v in got.items()}


def emulated_tries(grid, block, lanes, queue, hw=None):
    from simulator.kernelcode import emulator as em
    from simulator.kernelcode.atomics import atomic_timing
    from simulator.kernelcode.launch import emulate_kernel
    from simulator.measure import micro
    T = atomic_timing(hw)
    T[em.T_QUEUE] = queue
    counter = np.zeros(32, np.int32)
    tries = np.zeros(grid * block, np.int32)
    emulate_kernel(micro.cas_lanes_kernel, (grid,), (block,), [counter, tries, lanes, lanes],
                   atomics=T)
    return float(tries.sum())


def fit(records, candidates=CANDIDATES, progress=None):
    """(the best queue, {queue: {shape: emulated / measured tries}})."""
    want = shapes(records)
    table = {}
    for q in candidates:
        table[q] = {k: emulated_tries(*k, q) / v for k, v in want.items()}
        if progress:
            progress(q, table[q])
    err = {q: float(np.std(np.log(list(r.values())))) for q, r in table.items()}
    return min(err, key=err.get), table


if __name__ == "__main__":
    data = json.load(open(sys.argv[1]))

    def show(q, row):
        print(f"queue {q:4d}: " + "  ".join(f"{g}x{b} {l:2d} lanes {x:.2f}"
                                            for (g, b, l), x in sorted(row.items())), flush=True)
    best, _ = fit(data["records"], progress=show)
    print(f"atomic_queue_requests = {best}")
