"""The SIMT core's memory side: each SM's L1 and the shared L2 with its banks and DRAM
channels, as plain ``@njit`` functions over the L1 arrays ``core.run`` owns and the
:class:`L2State` it is handed.

A cache is three arrays indexed (cache, set, way): ``tags`` (the sector or segment held,
-1 for none), ``lru`` (the stamp of its last use) and ``fill`` (the cycle its data
arrives); the L1s are ``n_sm`` such caches of ``segment_bytes`` lines, the L2 one cache
(index 0) of ``l2_sector_bytes`` sectors with a ``dirty`` flag per way. The L2's arrays,
its banks' and DRAM channels' queues and the DRAM's utilisation are one
:class:`L2State`, which the engine carries from launch to launch. Loads allocate in
the L1; stores write through, invalidating the L1 copy, into the L2, which allocates
without fetching and writes dirty victims back. Every request to the L2 queues at the
bank that owns it (``owner``), a miss or a write-back at its DRAM channel; completion
times are reserved at issue. A DRAM read also waits longer the busier the DRAM is
(``dram_wait``: loaded latency, measured on the H100 by the micro suite's copies at two
occupancies); ``L2State.dram_load`` holds the utilisation estimate.
Counts go into the statistics vector (``stats.S_*``).

The MSHRs that a miss holds belong to the SM's scheduler (``core._alloc``), which also
asks ``l1_holds`` before issuing a load, to know how many it will need.

Each line's atomic unit (``l2_atomic``) serves the global atomics one warp request at a
time, each for ``atomic_service`` cycles (``first_pass_cycles``: the one rule of a
request's first pass, which the PTX emulator's run of blocks together orders a CAS
loop's tries by too); ``L2State.unit_*`` is its table.

numba's cache checks each function against its own file only; the package's modules
share one stamp (``simulator.jit.cache_together`` in ``simt/__init__.py``), so editing
this module rebuilds a cached ``core.run`` too.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit

from simulator.nbrefs import last_use  # noqa: F401  (the engines' helpers end with it)

from . import _stamp  # noqa: F401  (numba caches stamped together)

# (constants tables imported by name, for numba: kept compact)
# isort: off
from .hwvec import (
    H_ATOMSCALE, H_DCH, H_DLAT, H_DQ, H_DSVC, H_L1HASH, H_L1LAT, H_L1SETS, H_L1WAYS, H_L2BANKS,
    H_L2HASH, H_L2LAT, H_L2LINE, H_L2OWN, H_L2PRIOR, H_L2SEC, H_L2SETS, H_L2SVC, H_L2WAYS, H_SEG)
# isort: on
# (constants tables imported by name, for numba: kept compact)
# isort: off
from .stats import (
    S_DRB, S_DWB, S_DWBP, S_FIRST, S_GLD, S_GST, S_L1B, S_L1HIT, S_L1MISS, S_L2HIT, S_L2MISS,
    S_L2RB, S_L2WB, S_RWB)
# isort: on

# the four entries of ``L2State.dram_load`` (numba reads module-level ints as constants)
DRAM_UTILISATION = 0   # the DRAM's utilisation: a decaying sum of its service demand
DRAM_UPDATED = 1       # the cycle that sum was last brought up to date
DRAM_WRITES = 2        # the utilisation of its write-backs, over a longer window
DRAM_FIRST = 3         # the cycle of its first use (-1: none yet)


class L2State(NamedTuple):
    """The L2 and DRAM as ``core.run`` finds and leaves them: shared by every SM and
    carried from one launch to the next (``engine.new_l2``). numba takes it as one
    argument and reads its fields by name."""

    tags: np.ndarray       # (1, sets, ways) int64: the sector each way holds, -1 for none
    lru: np.ndarray        # (1, sets, ways) int64: the stamp of the way's last use
    fill: np.ndarray       # (1, sets, ways) float64: the cycle the way's data arrives
    dirty: np.ndarray      # (1, sets, ways) bool: written since it was fetched
    bank_free: np.ndarray  # (banks,) float64: the cycle each L2 bank is next free
    chan_free: np.ndarray  # (channels,) float64: the cycle each DRAM channel is next free
    dram_load: np.ndarray  # (4,) float64: DRAM_UTILISATION, DRAM_UPDATED, DRAM_WRITES,
    #                        DRAM_FIRST (``dram_use``)
    seen: np.ndarray       # bool per sector: held by a sampled slice yet (first touches)
    # the lines' atomic units (``l2_atomic``), a table of ``ATOMIC_UNITS`` entries by the
    # line's low bits (a line meeting another's entry takes it over, idle):
    unit_line: np.ndarray  # (ATOMIC_UNITS,) int64: the line an entry serves, -1 for none
    unit_free: np.ndarray  # (ATOMIC_UNITS,) float64: the cycle its unit is next free
    unit_block: np.ndarray  # (ATOMIC_UNITS,) int64: the block that asked first; SHARED: two

    def copy(self) -> L2State:
        return L2State(*(a.copy() for a in self))

    def restore(self, saved: L2State) -> None:
        """Put back, in place, the state ``saved`` (a ``copy``) holds."""
        for mine, theirs in zip(self, saved):
            mine[...] = theirs


#: entries of the atomic units' table (``L2State.unit_*``)
ATOMIC_UNITS = 1 << 16
#: ``L2State.unit_block`` of a line that requests from more than one block have reached
SHARED = -2


@njit(cache=True)
def place(tags, lru, fill, dirty_flags, sectors, dirty, sets):
    """Sectors into the ways of the L2's first ``sets`` sets, in the order given: the
    first ``ways`` sectors of each set take its ways 0, 1, ... (the rest of the set's
    sectors do not fit), marked present, ready and clean or dirty, used at stamp 1:
    after the lines of earlier launches (``engine._fill_previous``, stamp 0), which go
    first. One pass, no sort; it stops once every set is full."""
    ways = tags.shape[2]
    count = np.zeros(sets, np.int64)
    full = 0
    for s in sectors:
        st = s % sets
        w = count[st]
        if w < ways:
            tags[0, st, w] = s
            lru[0, st, w] = 1
            fill[0, st, w] = 0.0
            dirty_flags[0, st, w] = dirty
            count[st] = w + 1
            if w + 1 == ways:
                full += 1
                if full == sets:
                    break


@njit(cache=True, inline='always')
def lookup(tags, c, s, sets, ways):
    """Way of cache ``c`` (a row of tags) holding sector s in its set, or -1."""
    st = s % sets
    found = -1
    wy = 0
    while wy < ways and found < 0:
        if tags[c, st, wy] == s:
            found = wy
        wy += 1
    return found


@njit(cache=True, inline='always')
def victim(tags, lru, c, st, ways):
    """An empty way of set st of cache c, else its least recently used one."""
    v = 0
    empty = False
    wy = 0
    while wy < ways and not empty:
        if tags[c, st, wy] < 0:
            v = wy
            empty = True
        elif lru[c, st, wy] < lru[c, st, v]:
            v = wy
        wy += 1
    return v


@njit(cache=True, inline='always')
def owner(line, n, hashed):
    """Which of ``n`` banks (or DRAM channels) owns ``line``: in turn, or, ``hashed``, in
    turn within each run of ``n`` lines with the run rotated by a multiplicative hash of
    its index. The hardware's address hash is not public; like it, this one keeps a
    sequential stream on every bank and spreads power-of-two strides (a tile's column, a
    row-major matrix walked down) that taking the line number modulo ``n`` would pile on
    a few banks."""
    if not hashed:
        bank = line % n
    else:
        g = line // n
        bank = (line + ((g * 6364136223846793005) >> 33 & 0x3FFFFFFF)) % n
    return bank


# ---------------------------------------------------------------- L1 (one per SM)

@njit(cache=True, inline='always')
def l1_set(s, sets, hashed):
    """The L1 set of segment s: its index modulo the sets, or, ``hashed`` (the preset's
    ``l1.hashed_sets``), folded with the bits above it (XOR) first, so that rows a power
    of two apart -- a warp's threads each walking a row of a matrix -- do not all fall in
    a few sets."""
    if hashed:
        return (s ^ (s // sets) ^ (s // sets // sets)) % sets
    return s % sets


@njit(cache=True, inline='always')
def l1_holds(tags1, sm, s, sets, ways, hashed):
    """Whether SM sm's L1 holds segment s (no side effects: the scheduler's MSHR count)."""
    # one exit, no ``break``: numba drops the reference counts of the array (as l1_read)
    st = l1_set(s, sets, hashed)
    held = False
    wy = 0
    while wy < ways and not held:
        held = tags1[sm, st, wy] == s
        wy += 1
    return held


@njit(cache=True, inline='always')
def l1_read(s, t, hp, tags1, lru1, fill1, sm, stamp, st):
    """A load's segment s at SM sm's L1 at cycle t: counts it; on a hit marks the way
    used and returns the cycle its data is there (the L1 latency, or the fill still in
    flight); on a miss returns -1 (the caller reads the L2, ``l2_access`` per sector, and
    installs the segment, ``l1_fill``)."""
    # Written so that numba drops the reference counting of the array arguments (two
    # atomic operations per array per call, on every global-load segment): the set's
    # ways searched here with a ``break`` and one return. Calling ``lookup``, or
    # returning from inside the search, keeps it (checked in the LLVM IR, numba 0.6x).
    st[S_GLD] += 1
    st[S_L1B] += hp[H_SEG]
    sets, ways = int(hp[H_L1SETS]), int(hp[H_L1WAYS])
    set1 = l1_set(s, sets, hp[H_L1HASH] > 0)
    wy = -1
    for w in range(ways):
        if tags1[sm, set1, w] == s:
            wy = w
            break
    done = -1.0
    if wy < 0:
        st[S_L1MISS] += 1
    else:
        st[S_L1HIT] += 1
        lru1[sm, set1, wy] = stamp
        done = max(t + hp[H_L1LAT], fill1[sm, set1, wy])
    return done


@njit(cache=True, inline='always')
def l1_fill(s, hp, tags1, lru1, fill1, sm, stamp, done):
    """Install segment s in SM sm's L1 (in an empty way, else the least recently used),
    its data arriving at cycle ``done``."""
    sets = int(hp[H_L1SETS])
    set1 = l1_set(s, sets, hp[H_L1HASH] > 0)
    v = victim(tags1, lru1, sm, set1, int(hp[H_L1WAYS]))
    tags1[sm, set1, v] = s
    lru1[sm, set1, v] = stamp
    fill1[sm, set1, v] = done


@njit(cache=True, inline='always')
def l1_write(s, hp, tags1, sm, st, count):
    """A store's (or an atomic's) segment s at SM sm's L1: counted as a store segment
    where ``count``, and the L1's copy dropped (write through, no allocation); the caller
    writes its sectors to the L2 (``l2_access``)."""
    # one exit, no ``break``, so that numba keeps no reference counts (as l1_read)
    if count:
        st[S_GST] += 1
    sets, ways = int(hp[H_L1SETS]), int(hp[H_L1WAYS])
    set1 = l1_set(s, sets, hp[H_L1HASH] > 0)
    dropped = False
    wy = 0
    while wy < ways and not dropped:
        if tags1[sm, set1, wy] == s:
            tags1[sm, set1, wy] = -1
            dropped = True
        wy += 1


# ---------------------------------------------------------------- L2, banks and DRAM

# the DRAM's utilisation is a moving average over this many DRAM latencies
DRAM_WINDOW = 8.0
# write-backs count over this many such windows: the controllers buffer them and drain
# them in batches, so a read meets their average rate, not their arrival in bursts (a
# wave's stores evicting dirty lines all at once)
WRITE_WINDOWS = 8.0
# and is taken at most this, where the wait below is 49 x queue_cycles: beyond it the
# channels' own queues (the sustained bandwidth) hold the rate
U_MAX = 0.98


@njit(cache=True, inline='always')
def dram_use(t, hp, load, read):
    """One sector's service at cycle t into the DRAM's utilisation (``L2State.dram_load``):
    ``load[DRAM_UTILISATION]`` (reads) and ``load[DRAM_WRITES]`` (write-backs, ``read``
    False), exponentially decaying sums of the service demand (cycles of the whole DRAM
    at its sustained rate) over windows of ``DRAM_WINDOW`` latencies and
    ``WRITE_WINDOWS`` times that, which a steady stream of requests holds at its
    utilisation; ``load[DRAM_UPDATED]``, when they were last updated. A slice of the SMs
    has its share of channels, each as fast, so the same stream per SM gives the same
    utilisation. Nothing to track where the preset's DRAM has a fixed latency
    (``queue_cycles`` 0: ``dram_wait`` does not read it)."""
    if hp[H_DQ] > 0.0:
        tau = max(1.0, DRAM_WINDOW * hp[H_DLAT])
        last = load[DRAM_UPDATED]
        if t > last:
            load[DRAM_UTILISATION] *= math.exp(-(t - last) / tau)
            load[DRAM_WRITES] *= math.exp(-(t - last) / (tau * WRITE_WINDOWS))
            load[DRAM_UPDATED] = t
        if load[DRAM_FIRST] < 0.0:
            load[DRAM_FIRST] = t
        if read:
            load[DRAM_UTILISATION] += hp[H_DSVC] / (hp[H_DCH] * tau)
        else:
            load[DRAM_WRITES] += hp[H_DSVC] / (hp[H_DCH] * tau * WRITE_WINDOWS)
    last_use((hp, load))


@njit(cache=True, inline='always')
def dram_wait(hp, load):
    """The queueing a DRAM read adds to its latency at the present utilisation u:
    ``queue_cycles x u / (1 - u)``, the mean wait of a single-server queue (M/M/1),
    whose service time ``queue_cycles`` the calibration reads off the micro suite's
    copies at two occupancies. It grows well before the bandwidth runs out, as a real
    memory system's latency does (reordering queues, bank conflicts, the crossbar)."""
    wait = 0.0
    if hp[H_DQ] > 0.0:
        # the write-backs' average over the time since the DRAM's first use where that is
        # shorter than their window (the decaying sum's start-up bias taken out)
        tau_w = max(1.0, DRAM_WINDOW * hp[H_DLAT]) * WRITE_WINDOWS
        seen = 1.0 - math.exp(-max(0.0, load[DRAM_UPDATED] - load[DRAM_FIRST]) / tau_w)
        writes = load[DRAM_WRITES] / seen if seen > 1e-9 else 0.0
        u = min(load[DRAM_UTILISATION] + writes, U_MAX)
        wait = hp[H_DQ] * u / (1.0 - u)
    last_use((hp, load))
    return wait


@njit(cache=True, inline='always')
def l2_access(s2, t, write, svc, hp, l2, stamp, st):
    """One L2 sector request arriving at cycle t, holding its bank ``svc`` cycles (a
    sector's service, or its share of a line write with a part-written sector:
    ``core._line_write_service``); returns its completion cycle. ``l2`` is the
    :class:`L2State` it reads and updates.

    A slice of the SMs (``hp[H_L2OWN]`` < 1, sampled mode) keeps ``l2.seen``, a flag per
    sector it has held: a read miss to a sector never held is a first touch, which the
    slice fetches from DRAM only for the share ``hp[H_L2OWN]`` of sectors it owns (by a
    hash of the sector); the whole GPU's other SMs fetched the rest into the L2 first."""
    sets, ways = int(hp[H_L2SETS]), int(hp[H_L2WAYS])
    bank = owner(s2 // int(hp[H_L2LINE]), int(hp[H_L2BANKS]), hp[H_L2HASH] > 0)
    start = max(t, l2.bank_free[bank])
    l2.bank_free[bank] = start + svc
    wy = lookup(l2.tags, 0, s2, sets, ways)
    if wy >= 0:
        # a hit (the miss's path is a helper, the hit's written out: see ``last_use``)
        set_ = s2 % sets
        l2.lru[0, set_, wy] = stamp
        if write:
            l2.dirty[0, set_, wy] = True
            st[S_L2WB] += hp[H_L2SEC]
            done = start + svc
        else:
            st[S_L2HIT] += 1
            st[S_L2RB] += hp[H_L2SEC]
            done = max(start + hp[H_L2SVC] + hp[H_L2LAT], l2.fill[0, set_, wy])
    else:
        done = _l2_miss(s2, start, write, hp, l2, stamp, st)
    last_use((hp, l2, st))
    return done


@njit(cache=True, inline='always')
def _l2_miss(s2, start, write, hp, l2, stamp, st):
    """``l2_access`` of sector ``s2``, which the L2 does not hold, its bank's service
    starting at cycle ``start``: it takes the set's victim way (a dirty victim is written
    back, occupying its DRAM channel); a write allocates it dirty; a read fetches it from
    DRAM -- unless it is a slice's first touch of a sector it does not own (see
    ``l2_access``), whose fetch, and write-back of the victim, another SM does. Returns
    its completion cycle."""
    tags2, lru2, fill2, dirty2 = l2.tags, l2.lru, l2.fill, l2.dirty
    chan_free, load = l2.chan_free, l2.dram_load
    sets, ways = int(hp[H_L2SETS]), int(hp[H_L2WAYS])
    per_line = int(hp[H_L2LINE])
    hashed = hp[H_L2HASH] > 0
    sec = hp[H_L2SEC]
    set_ = s2 % sets
    v = victim(tags2, lru2, 0, set_, ways)
    ch = owner(s2 // per_line, int(hp[H_DCH]), hashed)
    first = False
    if hp[H_L2OWN] < 1.0:
        first = not l2.seen[s2]
        l2.seen[s2] = True
    # another SM fetches a first touch (a read) of a sector this slice does not own (see
    # l2_access): it takes DRAM's latency, not this slice's share of DRAM's bandwidth --
    # and the victim it evicts is that SM's to write back
    other = first and not write and ((s2 * 2654435761) >> 16) % 65536 >= hp[H_L2OWN] * 65536
    if tags2[0, set_, v] >= 0 and dirty2[0, set_, v] and not other:
        # write the victim back: it occupies its channel
        vch = owner(tags2[0, set_, v] // per_line, int(hp[H_DCH]), hashed)
        chan_free[vch] = max(chan_free[vch], start) + hp[H_DSVC]
        dram_use(start, hp, load, False)
        st[S_DWB] += sec
        if 0 <= hp[H_L2PRIOR] <= tags2[0, set_, v]:
            st[S_DWBP] += sec
        if not write:
            st[S_RWB] += sec
    tags2[0, set_, v] = s2
    lru2[0, set_, v] = stamp
    if write:
        dirty2[0, set_, v] = True
        fill2[0, set_, v] = start + hp[H_L2SVC]
        st[S_L2WB] += sec
        done = start + hp[H_L2SVC]
    else:
        dirty2[0, set_, v] = False
        if first:
            st[S_FIRST] += 1
        ds = 0.0
        if not other:
            st[S_L2MISS] += 1
            st[S_L2RB] += sec
            st[S_DRB] += sec
            ds = max(start + hp[H_L2SVC], chan_free[ch])
            chan_free[ch] = ds + hp[H_DSVC]
            dram_use(start, hp, load, True)
        wait = dram_wait(hp, load)
        if other:
            done = start + hp[H_L2SVC] + hp[H_DLAT] + wait
            st[S_L2HIT] += 1
            st[S_L2RB] += sec
        else:
            done = ds + hp[H_DSVC] + hp[H_DLAT] + wait
        fill2[0, set_, v] = done
    last_use((hp, l2, st, tags2, lru2, fill2, dirty2, chan_free, load))
    return done


# ---------------------------------------------------------------- the L2's atomic units

@njit(cache=True, inline='always')
def first_pass_cycles(full, one, lanes):
    """A line's atomic unit on a request's first pass, with ``lanes`` of its lanes on the
    line: ``one`` for a lone lane, ``full`` for all 32 (the atomics suite's warps), in
    proportion between (the atomic_trace suite: a lone lane's CAS takes no more than a
    fourth of a whole warp's, twelve lanes' about half). Each further pass (a lane on a
    word already served) takes ``one``. The one rule for both sides: the emulator's run
    of blocks together orders a CAS loop's tries by it, the engine times it."""
    return one + (full - one) * (lanes - 1) / 31.0


@njit(cache=True, inline='always')
def atomic_service(addr, g, line, line_bytes, full, one):
    """The cycles warp g's atomic (its lanes' addresses in ``addr[g]``) holds the atomic
    unit of ``line`` (of ``line_bytes``): its first pass over its lanes on the line
    (``first_pass_cycles``) and ``one`` for each further lane on its busiest word (one
    lane a word a pass). 0 where no lane is on the line."""
    lanes = 0
    most = 0
    for lane in range(32):
        a = addr[g, lane]
        if a >= 0 and a // line_bytes == line:
            lanes += 1
            same = 1
            for j in range(lane):
                if addr[g, j] == a:
                    same += 1
            if same > most:
                most = same
    svc = 0.0
    if lanes > 0:
        svc = first_pass_cycles(full, one, lanes) + one * (most - 1)
    last_use((addr,))
    return svc


@njit(cache=True, inline='always')
def atomic_request_service(addr, g, seg, m, seg_bytes, line_bytes, full, one):
    """The longest ``atomic_service`` of warp g's atomic at any of its lines (its ``m``
    segments sorted in ``seg[g]``): its turn at the units when it is alone there."""
    most = 0.0
    for k in range(m):
        line = (seg[g, k] * seg_bytes) // line_bytes
        if k == 0 or line != (seg[g, k - 1] * seg_bytes) // line_bytes:
            svc = atomic_service(addr, g, line, line_bytes, full, one)
            if svc > most:
                most = svc
    last_use((addr, seg))
    return most


@njit(cache=True, inline='always')
def l2_atomic(line, ready, svc, block, hp, l2):
    """A warp's atomic request reaching the unit of ``line`` with its data there at cycle
    ``ready``, holding it ``svc`` cycles (``atomic_service``), from block ``block``: the
    unit serves one request at a time, first come first served. Returns the cycle its
    service starts. In a slice of the SMs (sampled mode), a line that requests from two
    blocks have reached is one the whole GPU's other SMs reach too: the unit is held
    ``hp[H_ATOMSCALE]`` times as long (1 / the slice's share), for theirs."""
    h = line & (ATOMIC_UNITS - 1)
    if l2.unit_line[h] != line:
        l2.unit_line[h] = line
        l2.unit_free[h] = 0.0
        l2.unit_block[h] = block
    elif l2.unit_block[h] != block:
        l2.unit_block[h] = SHARED
    start = max(ready, l2.unit_free[h])
    hold = svc * hp[H_ATOMSCALE] if l2.unit_block[h] == SHARED else svc
    l2.unit_free[h] = start + hold
    last_use((hp, l2))
    return start


@njit(cache=True, inline='always')
def l2_dirty(s2, hp, l2, st):
    """Sector ``s2``, which the L2 holds (an atomic has just read it), written: marked
    dirty, its bytes counted as written."""
    sets, ways = int(hp[H_L2SETS]), int(hp[H_L2WAYS])
    set_ = s2 % sets
    wy = 0
    done = False
    while wy < ways and not done:
        if l2.tags[0, set_, wy] == s2:
            l2.dirty[0, set_, wy] = True
            st[S_L2WB] += hp[H_L2SEC]
            done = True
        wy += 1
    last_use((hp, l2, st))
