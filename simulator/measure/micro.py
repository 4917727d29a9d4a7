"""Microbenchmark kernels (numba.cuda) for the ``micro`` suite: the ceilings and latencies
the presets are calibrated from."""
from __future__ import annotations

from pathlib import Path

from numba import cuda, float32, int32  # importing needs no GPU; kernels compile on first launch

CHASE_STEPS = 1 << 16
FMA_ITERS = 4096
SHARED_ITERS = 4096
SHARED_WORDS = 1024


@cuda.jit
def copy_kernel(src, dst, n):
    """Grid-stride float32 copy."""
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    while i < n:
        dst[i] = src[i]
        i += stride


@cuda.jit
def read_kernel(src, out, n, passes):
    """Each thread sums its grid-stride share of ``src``, ``passes`` times (L2 reads when
    ``src`` fits in the L2), and writes one float."""
    i0 = cuda.grid(1)
    stride = cuda.gridsize(1)
    acc = float32(0.0)
    for _ in range(passes):
        i = i0
        while i < n:
            acc += src[i]
            i += stride
    out[i0] = acc


@cuda.jit
def strided_read_kernel(src, out, lines, stride_words, passes, shift):
    """L2 slices under a line stride: the buffer holds ``lines`` lines of 32 float32
    words, ``stride_words`` apart (32: packed; 512: 16 lines apart). In each pass warp
    ``w`` reads lines ``base .. base + 3`` (``base`` = 4 w + the pass's shift, modulo
    ``lines``), each as one coalesced 128-byte access; the shift moves every SM on to
    lines it has not read lately. Each thread writes the sum of what it read."""
    lane = cuda.threadIdx.x % 32
    base = (4 * (cuda.grid(1) // 32)) % lines
    acc = float32(0.0)
    for _ in range(passes):
        a = base * stride_words + lane
        acc += src[a] + src[a + stride_words] + src[a + 2 * stride_words] + src[a + 3 * stride_words]
        base += shift
        if base >= lines:
            base -= lines
    out[cuda.grid(1)] = acc


@cuda.jit
def lines_read_kernel(src, out, nlines, spread, passes):
    """L1 throughput by lines per request: the buffer (``nlines`` lines of 32 float32
    words, a power of two, so that the modulo is a mask and not a 64-bit division)
    stays in the L1. In each pass a warp makes 4 requests; in request ``j`` lane
    ``l`` reads word ``l // spread`` of line ``base + j spread + l % spread`` (modulo
    ``nlines``), so each request touches ``spread`` lines (1: one coalesced 128-byte
    line; 32: one word of each of 32 lines). Each thread writes the sum of what it read."""
    lane = cuda.threadIdx.x % 32
    mask = nlines - 1                          # nlines is a power of two: & for the modulo
    base = (4 * spread * (cuda.grid(1) // 32)) & mask
    off = lane % spread
    word = lane // spread
    acc = float32(0.0)
    for _ in range(passes):
        for j in range(4):
            acc += src[((base + j * spread + off) & mask) * 32 + word]
        base = (base + 4 * spread) & mask
    out[cuda.grid(1)] = acc


@cuda.jit
def lines_write_kernel(dst, nlines, spread, passes):
    """L1-to-L2 store throughput by lines per request, written as a naive transpose
    writes: each block stores into its own ``nlines`` lines (a power of two) of ``dst``
    (int32), all its warps into the same lines, each its own words. In each pass a warp
    makes 4 requests; in request ``j`` lane ``l`` of warp ``w`` stores word
    ``(l // spread + (32 // spread) w) % 32`` of line ``base + j spread + l % spread``
    (modulo ``nlines``); ``base`` moves on ``4 spread`` lines a pass. 1 line: a coalesced
    128-byte store; 32: one word to each of 32 lines, warp w's word w of each (the
    transpose's ``out[col, row]`` with threadIdx.x on col). Each word holds its index."""
    lane = cuda.threadIdx.x % 32
    mask = nlines - 1
    region = cuda.blockIdx.x * nlines * 32
    off = lane % spread
    word = (lane // spread + (32 // spread) * (cuda.threadIdx.x // 32)) & 31
    base = 0
    for _ in range(passes):
        for j in range(4):
            k = region + ((base + j * spread + off) & mask) * 32 + word
            dst[k] = k
        base = (base + 4 * spread) & mask


@cuda.jit
def chase_kernel(nxt, start, steps, out):
    """One thread follows ``j = nxt[j]`` ``steps`` times from ``start``: each load waits
    for the last."""
    j = int32(start)
    for _ in range(steps):
        j = nxt[j]
    out[0] = j


@cuda.jit
def fma_kernel(out, iters):
    """Eight independent FMA chains per thread (issue-bound, not latency-bound)."""
    i = cuda.grid(1)
    a0 = float32(i) * float32(1e-7)
    a1 = a0 + float32(1.0)
    a2 = a0 + float32(2.0)
    a3 = a0 + float32(3.0)
    a4 = a0 + float32(4.0)
    a5 = a0 + float32(5.0)
    a6 = a0 + float32(6.0)
    a7 = a0 + float32(7.0)
    m = float32(0.999999)
    c = float32(1e-6)
    for _ in range(iters):
        a0 = a0 * m + c
        a1 = a1 * m + c
        a2 = a2 * m + c
        a3 = a3 * m + c
        a4 = a4 * m + c
        a5 = a5 * m + c
        a6 = a6 * m + c
        a7 = a7 * m + c
    out[i] = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7


@cuda.jit
def shared_kernel(out, iters):
    """Conflict-free shared-memory reads: lane l of a warp reads word (l + k) mod 1024."""
    sh = cuda.shared.array(SHARED_WORDS, float32)
    t = cuda.threadIdx.x
    j = t
    while j < SHARED_WORDS:
        sh[j] = float32(j)
        j += cuda.blockDim.x
    cuda.syncthreads()
    acc = float32(0.0)
    k = t
    for _ in range(iters):
        acc += sh[k & (SHARED_WORDS - 1)]
        k += 32
    out[cuda.grid(1)] = acc


@cuda.jit
def spin_kernel(microseconds):
    """Keeps the GPU busy for about ``microseconds`` (the harness queues launches behind
    it, so the host's launch latency is hidden from the events that follow)."""
    for _ in range(microseconds):
        cuda.nanosleep(1000)


@cuda.jit
def load_kernel(x, out, mask):
    """Each thread loads one float of ``x`` (index masked into a small, L2-resident
    array) and stores nothing unless it reads -1 (never): a block's life with one load."""
    i = cuda.grid(1) & mask
    v = x[i]
    if v == float32(-1.0):
        out[0] = v


@cuda.jit
def load_store_kernel(x, y, mask):
    """Each thread loads one float and stores it (indices masked into small, L2-resident
    arrays): a block's life with one load and one store."""
    i = cuda.grid(1) & mask
    y[i] = x[i]


@cuda.jit
def empty_kernel(out):
    """Does nothing useful: measures launch cost and block launch rate."""
    if cuda.grid(1) == -1:
        out[0] = 1.0


@cuda.jit
def atomic_line_kernel(words, out, iters, spread, cas):
    """Every lane of every warp hits word ``lane % spread`` of one 128-byte line
    ``iters`` times: an atomic add of 1 (``cas`` 0), or a compare-and-swap whose compare
    never matches (``cas`` 1: the L2 reads and compares, nothing changes). Each request's
    address waits on the last one's result (``acc >> 40`` is 0 but the compiler cannot
    know), so a warp has one request in flight: one warp measures the round trip, many
    warps the line's atomic throughput."""
    lane = cuda.threadIdx.x % 32
    acc = 0
    for _ in range(iters):
        k = (lane + (acc >> 40)) % spread
        if cas:
            old = cuda.atomic.cas(words, k, int32(-1), int32(-2))
        else:
            old = cuda.atomic.add(words, k, int32(1))
        acc += old
    out[cuda.grid(1)] = acc


@cuda.jit
def cas_lanes_kernel(counter, tries, lanes, keys):
    """The first ``lanes`` lanes of every warp add 1 to ``counter[lane % keys]`` with a
    CAS loop, each counting its tries: how a warp's several lanes on one word fare."""
    lane = cuda.threadIdx.x % 32
    if lane < lanes:
        k = lane % keys
        n = 0
        old = counter[k]
        while True:
            n += 1
            assumed = old
            old = cuda.atomic.cas(counter, k, assumed, assumed + 1)
            if old == assumed:
                break
        tries[cuda.grid(1)] = n


@cuda.jit
def cas_order_kernel(counter, tries, rank):
    """Lane 0 of every warp adds 1 to ``counter[0]`` with a CAS loop: its tries and the
    value it found when it succeeded (its place in the order of successes). A line that
    served its requests first come, first served would give the k-th warp to succeed
    k tries (all warps read 0 at once); how far the tries fall short of that says how
    unfair the L2's arbitration among warps and SMs is."""
    if cuda.threadIdx.x % 32 == 0:
        w = cuda.grid(1) // 32
        n = 0
        old = counter[0]
        while True:
            n += 1
            assumed = old
            old = cuda.atomic.cas(counter, 0, assumed, assumed + 1)
            if old == assumed:
                break
        tries[w] = n
        rank[w] = old


# %smid and %globaltimer, which numba does not expose: two PTX functions (C ABI) linked
# into the kernel that calls them (simulator/measure/sm_clock.ptx).
SM_CLOCK_PTX = Path(__file__).with_name("sm_clock.ptx")


def _simulating():
    from numba import config
    return bool(config.ENABLE_CUDASIM)


@cuda.jit(device=True)
def _zero():
    return 0


def cas_trace_kernel(smid=None, globaltimer=None):
    """The CAS loop of ``cas_lanes_kernel`` (the first ``lanes`` lanes of every warp, each
    on its own word: lane l increments ``counter[l]``), traced: lane 0 of warp w writes
    its SM's id (``sm[w]``), the global timer in ns at its first try and at its success
    (``t0[w]``, ``t1[w]``), its tries (``tries[w]``) and the value each try found
    (``seen[w, i]``, the first ``seen.shape[1]`` tries): between two tries a warp missed
    the successes whose values it skipped. ``smid`` and ``globaltimer`` are device
    functions (default: the PTX ones; under numba's simulator, stand-ins giving 0)."""
    if smid is None and _simulating():
        smid = globaltimer = _zero
    if smid is None:
        smid = cuda.declare_device("roofsim_smid", "uint32()", link=[str(SM_CLOCK_PTX)],
                                   abi="c")
        globaltimer = cuda.declare_device("roofsim_globaltimer", "uint64()",
                                          link=[str(SM_CLOCK_PTX)], abi="c")

    @cuda.jit
    def kernel(counter, lanes, tries, seen, sm, t0, t1):
        lane = cuda.threadIdx.x % 32
        w = cuda.grid(1) // 32
        if lane < lanes:
            if lane == 0:
                sm[w] = smid()
                t0[w] = globaltimer()
            n = 0
            old = counter[lane]
            while True:
                assumed = old
                old = cuda.atomic.cas(counter, lane, assumed, assumed + 1)
                if lane == 0 and n < seen.shape[1]:
                    seen[w, n] = old
                n += 1
                if old == assumed:
                    break
            if lane == 0:
                t1[w] = globaltimer()
                tries[w] = n
    return kernel
