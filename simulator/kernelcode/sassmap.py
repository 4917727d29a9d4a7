"""A warp's path through the PTX, as the front end ran it, becomes its path through the
kernel's SASS: the instruction stream the engine times.

Every SASS instruction carries the PTX line it was compiled from (``lineinfo``), hence
a PTX instruction and the PTX basic block holding it (its *origin*). Each SASS basic
block that runs from the entry (not a subroutine reached only by ``CALL``, such as the
slow path of a 64-bit division) is given a *home*: the PTX block among its
instructions' origins that dominates the others (ptxas hoists work into a loop's
preheader, merges a block into its predecessor and if-converts short branches into
predicated code: in each case the block that runs is the dominating one), else the most
frequent. The SASS blocks homed on a PTX block are walked from the first of them along
their edges, staying at home; where a branch stays at home both ways (a division's
fast path against its slow one), the path without a ``CALL``, else the fall-through,
is taken. That walk is what one visit of the PTX block issues.

A ``CALL`` of a PTX ``.func`` NVVM kept (fp64 ``pow``, ``sin``'s large-argument
reduction, ``lgamma``) is mapped the same way onto the function's copy the emulator
inlined at that call: the subroutine's blocks are homed on the copy's PTX blocks, so a
warp issues the subroutine as it ran it -- its loop trips, and its branches under their
own lanes. A subroutine of ptxas's own (64-bit division), whose instructions name no
line of a ``.func``, issues its straight path at the ``CALL`` under the caller's lanes.

A warp's SASS stream is then, for every visit of a PTX block in its recorded path (a
run of its events from the block's first instruction), that block's SASS instructions
under the visit's active mask (predicated code issues whatever its predicate). A memory
instruction takes the 32 lane addresses of the PTX access it came from in the same
visit -- or, moved out of its block, that access's latest addresses in the warp (its
first, where ptxas moved it ahead of the block's first visit: a store hoisted above a
math function's slow path) --
its width from its own opcode (``LDS.128`` holds four merged ``ld.shared``), and its
space from its opcode or, for a generic access, its address.
"""
from __future__ import annotations

import dataclasses
from collections import Counter

import numpy as np
from numba import njit

from simulator.kernelcode import sassclass as sc
from simulator.kernelcode.isa import F_OP, OP_ATOM, OP_LD, OP_ST
from simulator.simt import isa as E

#: the base of the byte addresses given to local memory (interleaved per thread as the
#: GPU lays it out: word k of every lane of a warp side by side)
LOCAL_BASE = 1 << 44


@dataclasses.dataclass(frozen=True)
class SassMap:
    """What ``build`` derives from a kernel's PTX program and SASS."""
    rows: np.ndarray       # (n_sass, 5) int64: engine class, dst, src0, src1, src2
    mem: np.ndarray        # (n_sass,) sassclass.MEM_*
    width: np.ndarray      # (n_sass,) bytes per lane of a memory access
    origin: np.ndarray     # (n_sass,) the PTX row each came from (-1: none named)
    home: np.ndarray       # (n_sass,) the PTX block it issues with (-1: never)
    emit_ptr: np.ndarray   # (n_ptx_blocks + 1,) CSR offsets into emit_idx / emit_src
    emit_idx: np.ndarray   # SASS instruction indices, per PTX block, in issue order
    emit_src: np.ndarray   # per entry: the PTX row whose addresses it uses (-1: none)
    block_of: np.ndarray   # (n_ptx_rows + 1,) PTX row -> PTX block
    leaders: np.ndarray    # the first PTX row of each block
    texts: tuple           # each SASS instruction's text
    pcs: np.ndarray        # each SASS instruction's byte offset
    # (n_sass,) for an instruction of a block ptxas branches around within one PTX block
    # (a predicated PTX store made a branch): the PTX access whose active lanes run it
    # (``_region_sources``); -1 elsewhere
    lanes_src: np.ndarray = None


def _dominators(nb: int, succ) -> list:
    """Per PTX block, the set of blocks dominating it (entry 0)."""
    preds = [[] for _ in range(nb)]
    for b, ss in enumerate(succ):
        for s in ss:
            if s < nb:
                preds[s].append(b)
    full = set(range(nb))
    dom = [full for _ in range(nb)]
    dom[0] = {0}
    changed = True
    while changed:
        changed = False
        for b in range(1, nb):
            ps = [dom[p] for p in preds[b]]
            new = (set.intersection(*ps) if ps else set()) | {b}
            if new != dom[b]:
                dom[b], changed = new, True
    return dom


def _reached(sass, start: int, by_start) -> list:
    """Indices of the SASS blocks a path from block ``start`` reaches along the control
    flow graph's edges (not through CALL), ``start`` first, in the order found."""
    seen, todo = [start], [start]
    while todo:
        for s in sass.blocks[todo.pop()].succs:
            k = by_start.get(s)
            if k is not None and k not in seen:
                seen.append(k)
                todo.append(k)
    return seen


def _main_blocks(sass) -> list:
    """Indices of the SASS blocks a path from the entry reaches (not through CALL)."""
    return sorted(_reached(sass, 0, {b.start: k for k, b in enumerate(sass.blocks)}))


def _depths(nb: int, succ, dom) -> list:
    """Per block, how many natural loops hold it (a back edge u -> h: h dominates u)."""
    preds = [[] for _ in range(nb)]
    for b, ss in enumerate(succ):
        for x in ss:
            if x < nb:
                preds[x].append(b)
    depth = [0] * nb
    for u in range(nb):
        for h in succ[u]:
            if h < nb and h in dom[u]:
                body, todo = {h, u}, ([u] if u != h else [])
                while todo:
                    for q in preds[todo.pop()]:
                        if q not in body:
                            body.add(q)
                            todo.append(q)
                for x in body:
                    depth[x] += 1
    return depth


def _idom(dom: list) -> list:
    """Each block's immediate dominator (-1 for the entry)."""
    out = []
    for b, ds in enumerate(dom):
        strict = ds - {b}
        out.append(max(strict, key=lambda d: len(dom[d])) if strict else -1)
    return out


def _homes(sass, main, ob, dom, ptx_depth, base_depth: int = 0, default: int = 0) -> dict:
    """{SASS block index: its home PTX block} for the blocks in ``main`` (the first: the
    entry): among its instructions' origins at its own loop depth (plus ``base_depth``:
    a subroutine's blocks, called from inside a loop), the one dominating the others
    (else the most frequent); a block with none at its depth (work hoisted out of a
    loop, or a reconvergence left after one) issues with its nearest dominator that has
    a home (``default`` where none has)."""
    by_start = {sass.blocks[k].start: j for j, k in enumerate(main)}
    succ = [[by_start[s] for s in sass.blocks[k].succs if s in by_start] for k in main]
    sdom = _dominators(len(main), succ)
    sdepth = _depths(len(main), succ, sdom)
    sidom = _idom(sdom)
    own = {}
    for j, k in enumerate(main):
        b = sass.blocks[k]
        tags = [int(ob[i]) for i in range(b.first, b.stop)
                if ob[i] >= 0 and ptx_depth[ob[i]] == sdepth[j] + base_depth]
        if tags:
            distinct = set(tags)
            top = [t for t in distinct if all(t in dom[u] for u in distinct)]
            own[j] = top[0] if top else Counter(tags).most_common(1)[0][0]
    home = {}
    for j, k in enumerate(main):
        x = j
        while x not in own and sidom[x] >= 0:
            x = sidom[x]
        home[k] = own.get(x, default)
    return home


def _walk(sass, blocks, home_of, by_start, entry: int = 0) -> list:
    """The SASS blocks (indices) one visit of a PTX block issues: from the first of its
    ``blocks`` entered from elsewhere (or the ``entry`` block) along edges that stay
    among them."""
    mine = set(blocks)
    entered = [k for k in blocks if k == entry or any(
        by_start.get(s) == k for j, b in enumerate(sass.blocks) if j not in mine
        and home_of.get(j) is not None for s in b.succs)]
    cur = entered[0] if entered else blocks[0]
    out, seen = [], set()
    while cur is not None and cur not in seen:
        seen.add(cur)
        out.append(cur)
        b = sass.blocks[cur]
        nxt = [by_start[s] for s in b.succs if by_start.get(s) in mine]
        nxt = [k for k in nxt if k not in seen]
        if not nxt:
            break
        calls = [k for k in nxt if any(i.op == "CALL" for i in sass.block_instrs(sass.blocks[k]))]
        plain = [k for k in nxt if k not in calls] or nxt
        fall = [k for k in plain if sass.blocks[k].start == b.end]
        cur = fall[0] if fall else plain[0]
    return out


def called(sass, ins, by_start, depth: int = 0) -> list:
    """The SASS instructions a ``CALL`` issues in its subroutine (ptxas's out-of-line slow
    paths: 64-bit division, IEEE division's corner cases, fp64 functions' reductions):
    from its first block along the fall-through (else the first) edge until a ``RET``,
    each block once, calls within it followed (to a depth of 4); [] for anything else."""
    if ins.op != "CALL" or ins.target not in by_start or depth > 4:
        return []
    out, seen, k = [], set(), by_start[ins.target]
    while k is not None and k not in seen:
        seen.add(k)
        b = sass.blocks[k]
        for i in range(b.first, b.stop):
            out.append(i)
            out += called(sass, sass.instrs[i], by_start, depth + 1)
        if sass.instrs[b.stop - 1].op in ("RET", "EXIT"):
            break
        nxt = [by_start[x] for x in b.succs if x in by_start and by_start[x] not in seen]
        fall = [x for x in nxt if sass.blocks[x].start == b.end]
        k = fall[0] if fall else (nxt[0] if nxt else None)
    return out


def _subroutine(sass, ins, p, by_start, lines, rows_of_line, leaders, block_of, dom,
                ptx_depth, depth):
    """A ``CALL`` of a PTX ``.func`` (NVVM's fp64 slow paths), issued by PTX block ``p``,
    mapped onto the callee's inlined copy (``inline.inline_calls``) that follows ``p``
    (``rows_of_line``: the copies' rows by PTX line):
    ({PTX block of the copy: the subroutine's SASS blocks it walks}, their homes, {SASS
    instruction: its PTX row in the copy}, the entry block); None where the callee's
    instructions name no PTX line (ptxas's own subroutines) or the calls nest too deep.
    A warp's visits of the copy's blocks then issue the subroutine as it ran: its loop
    trips, and its divergent paths under their own lanes."""
    t = by_start.get(ins.target)
    if t is None or depth > 4:
        return None
    blocks = _reached(sass, t, by_start)
    lo, orig = leaders[p], {}
    for k in blocks:
        b = sass.blocks[k]
        for j in range(b.first, b.stop):
            rows = rows_of_line.get(int(lines[j]))
            if rows:
                # the copy of this call site: the first at or after the calling block
                r = next((r for r in rows if r >= lo), -1)
                if r >= 0:
                    orig[j] = r
    if not orig:
        return None
    ob = np.full(len(sass.instrs), -1, np.int64)
    for j, r in orig.items():
        ob[j] = block_of[r]
    hmap = _homes(sass, blocks, ob, dom, ptx_depth, base_depth=ptx_depth[p], default=p)
    per = {}
    for k in blocks:
        per.setdefault(hmap[k], []).append(k)
    return per, hmap, orig, t


def build(prog, sass, lines) -> SassMap:
    """The map of ``prog`` (``decode.Program``) onto ``sass`` given each SASS
    instruction's PTX line (``lineinfo.ptx_lines``)."""
    code = prog.code
    n = code.shape[0]
    leaders = np.array(prog.leaders, dtype=np.int64)
    nb = len(leaders)
    block_of = np.zeros(n, dtype=np.int64)
    for b in range(nb):
        block_of[leaders[b]:(leaders[b + 1] if b + 1 < nb else n)] = b
    pc_of_line = {}
    for pc, line in enumerate(prog.lines):
        if line:
            pc_of_line.setdefault(line, pc)
    instrs = sass.instrs
    ni = len(instrs)
    origin = np.array([pc_of_line.get(int(x), -1) for x in lines], dtype=np.int64)
    ob = np.where(origin >= 0, block_of[np.maximum(origin, 0)], -1)
    rows = np.full((ni, 5), -1, dtype=np.int64)
    mem = np.zeros(ni, dtype=np.int64)
    width = np.zeros(ni, dtype=np.int64)
    alias = {}      # a register written as part of a wider destination -> its first
    for i, ins in enumerate(instrs):
        cls, dst, srcs, m, w = sc.classify(ins)
        # a read of the second word of a 64-bit or vector result waits for that result
        rows[i] = (cls, dst, *(alias.get(r, r) for r in srcs))
        mem[i], width[i] = m, w
        if dst >= 0:
            n = sc.dst_registers(ins, w)
            for r in range(dst, dst + n):
                alias.pop(r, None)
            for r in range(dst + 1, dst + n):
                alias[r] = dst
    dom = _dominators(nb, prog.successors)
    ptx_depth = _depths(nb, prog.successors, dom)
    main = _main_blocks(sass)
    home_of = _homes(sass, main, ob, dom, ptx_depth)
    by_start = {b.start: k for k, b in enumerate(sass.blocks)}
    per = {}
    for k in main:
        per.setdefault(home_of[k], []).append(k)
    rows_of_line = {}      # the rows of the inlined .func bodies, by PTX line
    lo_line, hi_line = prog.own_lines
    for pc, line in enumerate(prog.lines):
        if line and not lo_line <= line <= hi_line:
            rows_of_line.setdefault(int(line), []).append(pc)
    home = np.full(ni, -1, dtype=np.int64)
    lists = [[] for _ in range(nb)]
    is_mem_row = np.isin(code[:, F_OP], (OP_LD, OP_ST, OP_ATOM))

    def add(p, i, o):
        if home[i] < 0:
            home[i] = p
        lists[p].append((i, int(o) if mem[i] != sc.MEM_NONE and o >= 0 and is_mem_row[o]
                         else -1))

    def issue(p, blocks, hmap, entry, orig, depth):
        for k in _walk(sass, blocks, hmap, by_start, entry):
            b = sass.blocks[k]
            for i in range(b.first, b.stop):
                add(p, i, orig.get(i, origin[i]))
                if instrs[i].op != "CALL":
                    continue
                sub = _subroutine(sass, instrs[i], p, by_start, lines, rows_of_line, leaders,
                                  block_of, dom, ptx_depth, depth)
                if sub is None:      # ptxas's own (64-bit division): its straight path
                    for j in called(sass, instrs[i], by_start):
                        add(p, j, origin[j])
                    continue
                sper, shome, sorig, t = sub
                for q, qblocks in sper.items():
                    issue(q, qblocks, shome, t, sorig, depth + 1)

    for p in range(nb):
        if p in per:
            issue(p, per[p], home_of, 0, {}, 0)
    idx = [i for lst in lists for i, _ in lst]
    src = [o for lst in lists for _, o in lst]
    ptr = np.concatenate([[0], np.cumsum([len(lst) for lst in lists])])
    return SassMap(rows, mem, width, origin, home, ptr.astype(np.int64),
                   np.array(idx, np.int64), np.array(src, np.int64), block_of, leaders,
                   tuple(i.text for i in instrs),
                   np.array([i.pc for i in instrs], np.int64),
                   _region_sources(sass, main, home_of, origin, mem, is_mem_row))


def _region_sources(sass, main, home_of, origin, mem, is_mem_row) -> np.ndarray:
    """Per SASS instruction, the PTX access whose lanes execute it where ptxas made a
    branch the PTX has none of: a block reached from a conditional branch of a block of
    the same PTX home (``@P0 BRA`` around a predicated store) runs with the lanes of its
    first access (those whose predicate holds), not the warp's; so does the block after a
    predicated ``EXIT`` (``@P0 EXIT``: the lanes past a PTX branch's end leave). -1
    elsewhere. (Only the lanes counted change: the engine still issues the block.)"""
    out = np.full(len(sass.instrs), -1, np.int64)
    starts = {sass.blocks[k].start: k for k in main}

    def first_access(lo, hi):
        return next((int(origin[i]) for i in range(lo, hi) if mem[i] != sc.MEM_NONE
                     and origin[i] >= 0 and is_mem_row[origin[i]]), -1)
    for p in main:
        b = sass.blocks[p]
        last = sass.instrs[b.stop - 1]
        if last.op not in ("BRA", "EXIT") or last.guard in ("", "@PT"):
            continue
        for s_pc in b.succs:
            k = starts.get(s_pc)
            if k is None or home_of.get(k) != home_of.get(p):
                continue
            blk = sass.blocks[k]
            src = first_access(blk.first, blk.stop)
            if src >= 0:
                out[blk.first:blk.stop] = np.where(out[blk.first:blk.stop] < 0, src,
                                                   out[blk.first:blk.stop])
    return out


@dataclasses.dataclass(frozen=True)
class Traces:
    """Per-warp SASS streams of the traced blocks (``warp_traces``)."""
    rows: np.ndarray         # (n, 6): class, dst, src0, src1, src2, lanes (>= 0: a row of
    #                          addresses; < 0: ~active mask)
    sass_index: np.ndarray   # (n,) the SASS instruction of each row
    addresses: np.ndarray    # (m, 33): 32 lane byte addresses (-1 inactive), width
    warp_begin: np.ndarray   # (blocks x warps + 1,) offsets of each warp's rows
    blocks: np.ndarray       # the linear ids of the blocks traced, ascending
    warps_per_block: int
    masks: np.ndarray = None  # (n,) the warp's active lanes at each row (a 32-bit mask; an
    #                          access's lanes predicated off included, as Nsight Compute's
    #                          thread instructions count them)
    # the trips the emulator skipped (``emulate_kernel(skip_loops=)``): rows of (warp slot,
    # first row of its last trip before the skip, the row after, trips skipped); each
    # skipped trip issues rows[first:after] again (``skip_counts``)
    skipped: np.ndarray = None
    # with ``warp_traces(..., loop=)``: per row, its trip of that loop, -1 outside it
    trips: np.ndarray = None


def row_weights(tr: Traces) -> np.ndarray:
    """Per SASS row of ``tr``: the times it issues, 1 and once more for each trip the
    emulator skipped that repeats it (``Traces.skipped``)."""
    w = np.ones(len(tr.rows))
    if tr.skipped is not None and len(tr.skipped):
        d = np.zeros(len(tr.rows) + 1)
        np.add.at(d, tr.skipped[:, 1], tr.skipped[:, 3])
        np.add.at(d, tr.skipped[:, 2], -tr.skipped[:, 3])
        w += np.cumsum(d)[:-1]
    return w


def skipped_trips(trace: dict, head_row: int) -> np.ndarray:
    """Per warp (``events``' warp column) the trips the emulator skipped in the loop whose
    header is PTX row ``head_row`` (``trace["loop_events"]``)."""
    le = trace.get("loop_events")
    n = int(trace["events"][:, 0].max()) + 1 if len(trace["events"]) else 1
    out = np.zeros(n, np.int64)
    if le is not None and len(le):
        sk = le[(le[:, 3] == 1) & (le[:, 2] == head_row)]
        np.add.at(out, sk[:, 1], sk[:, 4])
    return out


def dominant_loop(smap: SassMap, successors, trace: dict, cuttable=None):
    """(header block, per PTX block whether it is in the loop, most trips of a warp's entry
    into it, SASS instructions of a warp's trip) of the outermost PTX loop whose blocks
    issue the most of the recorded warps' SASS instructions; None where the kernel has no
    loop, or where its warps' trips differ by more than 5% (a data-dependent loop:
    extrapolating every warp to the most trips would overcount). ``cuttable(trips,
    per_trip)``: where the loop's trips are too few to cut, a loop inside it that issues
    at least half of its instructions and that each warp enters once is taken instead (and
    so on down the nest): a 1x1 convolution's channel loop inside its filter taps' loops
    of one trip. An inner loop entered again and again (a 3x3 convolution's channel loop,
    once a tap) is not: cut, every entry would touch its first channels alone, a working
    set a fraction of the whole nest's, and its trips would be timed fast (12% on a padded
    3x3 NHWC convolution of 1024 channels, its later trips missing the L1 that the first
    hit)."""
    nb = len(smap.leaders)
    loops = _natural_loops(nb, successors)
    if not loops:
        return None
    ev = trace["events"]
    pcs = ev[:, 1]
    visits = np.bincount(smap.block_of[pcs[pcs < len(smap.block_of)]], minlength=nb)
    per_visit = np.diff(smap.emit_ptr)
    weight = visits * per_visit / np.maximum(1, np.bincount(
        smap.block_of, minlength=nb))        # SASS per visit, times visits / rows a visit
    outer = [h for h, body in loops.items()
             if not any(h in b2 and h != h2 for h2, b2 in loops.items())]
    for h in outer:
        # trips the emulator skipped: the loop's blocks visited as much more often
        skipped = skipped_trips(trace, int(smap.leaders[h])).sum()
        # (trips run: the header's first row's events -- a header block a warp's
        # divergent paths run twice a trip counts two visits, not two trips)
        entries = int((pcs == smap.leaders[h]).sum())
        if skipped and entries:
            body = list(loops[h])
            weight[body] *= (entries + skipped) / entries
    h = max(outer, key=lambda x: weight[list(loops[x])].sum())
    # a warp's trips: the most header entries between two visits outside the loop
    heads = ev[(pcs == smap.leaders[h])]
    per_warp = np.bincount(heads[:, 0])
    skipped = skipped_trips(trace, int(smap.leaders[h]))
    n = max(len(per_warp), len(skipped))
    per_warp = np.pad(per_warp, (0, n - len(per_warp))) + np.pad(skipped, (0, n - len(skipped)))
    trips = per_warp[per_warp > 0]

    def per_trip(x, each):          # SASS instructions of a warp's trip of loop x
        return float(weight[list(loops[x])].sum()) / max(1, int(each.sum()))
    work = per_trip(h, trips)
    while cuttable is not None and len(trips) and not cuttable(int(trips.max()), work):
        inner = [x for x in loops if x != h and loops[x] < loops[h]]
        inner = [x for x in inner if not any(x in loops[y] and x != y for y in inner)]
        big = max(inner, key=lambda x: weight[list(loops[x])].sum(), default=None)
        if big is None or 2 * weight[list(loops[big])].sum() < weight[list(loops[h])].sum():
            break
        each, entries = _entry_trips(ev, smap, loops[big], big)
        if not len(entries) or entries.max() > 1:
            break
        h, trips = big, each
        work = per_trip(h, each)
    if not len(trips) or trips.max() > 1.05 * trips.mean():
        return None          # trips that differ from warp to warp (data-dependent): no cut
    inloop = np.zeros(nb, np.bool_)
    inloop[list(loops[h])] = True
    return h, inloop, int(trips.max()), work


def _natural_loops(nb: int, successors) -> dict:
    """{header block: the set of blocks of its natural loop} of a CFG of ``nb`` blocks
    (the loops of every back-edge to one header merged)."""
    dom = _dominators(nb, successors)
    preds = [[] for _ in range(nb)]
    for b, ss in enumerate(successors):
        for x in ss:
            if x < nb:
                preds[x].append(b)
    loops = {}
    for u in range(nb):
        for h in successors[u]:
            if h < nb and h in dom[u]:
                body, todo = loops.setdefault(h, {h}), ([u] if u != h else [])
                body.add(u)
                while todo:
                    for q in preds[todo.pop()]:
                        if q not in body:
                            body.add(q)
                            todo.append(q)
    return loops


def _entry_trips(ev: np.ndarray, smap: SassMap, body: set, h: int) -> np.ndarray:
    """(the trips of every entry into the loop of blocks ``body`` (header ``h``) the
    recorded warps made, the entries of each warp that made any): header visits after a
    visit outside the loop start an entry (an inner loop the emulator did not skip:
    every trip is in the events)."""
    order = np.argsort(ev[:, 0], kind="stable")
    warp, pcs = ev[order, 0], ev[order, 1]
    npc = len(smap.block_of)
    blk = np.where(pcs < npc, smap.block_of[np.minimum(pcs, npc - 1)], -1)
    inside = np.zeros(len(smap.leaders) + 1, np.bool_)
    inside[list(body)] = True
    in_loop = inside[blk]
    head = pcs == smap.leaders[h]
    prev_in = np.concatenate([[False], in_loop[:-1] & (warp[1:] == warp[:-1])])
    start = head & ~prev_in
    ids = np.cumsum(start)[head] - 1
    if not len(ids):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    entries = np.bincount(warp[start])
    return np.bincount(ids[ids >= 0]), entries[entries > 0]


def warp_traces(smap: SassMap, trace: dict, cut=None, loop=None) -> Traces:
    """The SASS streams of the warps an emulation recorded (``emulate_kernel(...,
    record=True).trace``); ``cut`` = (header, inloop, cap) issues each entry into that
    loop for its first ``cap`` trips only (``dominant_loop``); ``loop`` = (header,
    inloop) issues every trip and records each row's trip of that loop (``Traces.trips``)
    for ``cut_traces``."""
    ev = trace["events"]
    nw = int(trace["warps_per_block"])
    blocks = np.asarray(trace["blocks"], np.int64)
    order = np.argsort(ev[:, 0], kind="stable")
    sh_base, sh_size = trace["shared"]
    loc_base, loc_size = trace["local"]
    pos = np.full(int(blocks.max()) + 1 if blocks.size else 1, -1, np.int64)
    pos[blocks] = np.arange(blocks.size)
    lanes_src = smap.lanes_src if smap.lanes_src is not None else np.full(len(smap.rows), -1,
                                                                           np.int64)
    if loop is not None:
        cut = (loop[0], loop[1], np.iinfo(np.int64).max)   # trips counted, none left out
    args = (ev, order, trace["addresses"], smap.block_of, smap.leaders,
            smap.emit_ptr, smap.emit_idx, smap.emit_src, lanes_src, smap.rows, smap.mem,
            smap.width,
            int(sh_base), int(sh_size), int(loc_base), int(loc_size), nw, pos,
            *((cut[1], int(cut[0]), int(cut[2])) if cut is not None
              else (np.zeros(1, np.bool_), -1, 0)))
    if cut is None or loop is not None:
        # every visit issues its block's rows: their number exactly, the address rows'
        # at most (an access whose lanes have no address takes none), without a counting pass
        n_rows, n_addr = _visit_rows(ev, order, smap)
    else:
        n_rows, n_addr = _emit(*args, np.zeros((0, 6), np.int64), np.zeros(0, np.int64),
                               np.zeros(0, np.int64), np.zeros((0, 33), np.int64),
                               np.zeros(blocks.size * nw + 1, np.int64), np.zeros(0, np.int64),
                               np.zeros(0, np.int64))
    rows = np.empty((n_rows, 6), np.int64)
    sidx = np.empty(n_rows, np.int64)
    masks = np.empty(n_rows, np.int64)
    addrs = np.empty((n_addr, 33), np.int64)
    begin = np.zeros(blocks.size * nw + 1, np.int64)
    ev_row = np.full(len(ev), -1, np.int64)
    trip = np.full(n_rows if loop is not None else 0, -1, np.int64)
    k, m = _emit(*args, rows, sidx, masks, addrs, begin, ev_row, trip)
    if k != n_rows:
        raise AssertionError(f"warp_traces: {k} rows emitted, {n_rows} sized")
    if m < n_addr:
        # the unused tail dropped: a view where little is unused, else a copy that frees it
        addrs = addrs[:m] if m >= 0.9 * n_addr else addrs[:m].copy()
    tr = Traces(rows, sidx, addrs, begin, blocks, nw, masks)
    return dataclasses.replace(tr, skipped=_skipped(trace, ev_row, pos, nw, n_rows),
                               trips=trip if loop is not None else None)


def _visit_rows(ev, order, smap: SassMap) -> tuple:
    """(the SASS rows ``_emit`` issues for the events ``ev`` in warp order ``order``, with
    no loop cut; at most the address rows it writes): a visit, a run of one warp's events
    at consecutive PTX rows of one block not starting again at its leader, issues its
    block's emission, and each of its entries with a PTX access may take an address row."""
    if not len(ev):
        return 0, 0
    warp, pcs = ev[order, 0], ev[order, 1]
    npc = len(smap.block_of)
    inside = pcs < npc
    blk = np.where(inside, smap.block_of[np.minimum(pcs, npc - 1)], -1)
    start = np.ones(len(pcs), np.bool_)
    start[1:] = ((warp[1:] != warp[:-1]) | (pcs[1:] != pcs[:-1] + 1) | ~inside[1:]
                 | (blk[1:] != blk[:-1]))
    start |= inside & (pcs == smap.leaders[np.maximum(blk, 0)])
    b = blk[start]
    b = b[b >= 0]
    per = np.diff(smap.emit_ptr)
    acc = np.concatenate([[0], np.cumsum(smap.emit_src >= 0)])
    mem = acc[smap.emit_ptr[1:]] - acc[smap.emit_ptr[:-1]]
    return int(per[b].sum()), int(mem[b].sum())


def cut_traces(tr: Traces, cap: int) -> Traces:
    """``tr`` (``warp_traces(..., loop=)``) with each entry into its loop issued for its
    first ``cap`` trips only, as ``warp_traces(..., cut=(header, inloop, cap))`` emits it,
    its address rows shared with ``tr``; no trip skipped (a cut ends before the emulator
    skips, ``timing.SKIP_FIRST``)."""
    if tr.trips is None:
        raise ValueError("cut_traces needs the traces of warp_traces(..., loop=...)")
    keep = tr.trips < cap
    kept = np.concatenate([[0], np.cumsum(keep)])
    return Traces(tr.rows[keep], tr.sass_index[keep], tr.addresses, kept[tr.warp_begin],
                  tr.blocks, tr.warps_per_block,
                  None if tr.masks is None else tr.masks[keep],
                  np.zeros((0, 4), np.int64), None)


def _skipped(trace: dict, ev_row, pos, nw, n_rows) -> np.ndarray:
    """The trips the emulator skipped (``trace["loop_events"]``), as rows of (warp slot,
    first SASS row of the warp's last trip before the skip, the row after it, trips
    skipped): each skipped trip issues that trip's SASS rows again."""
    le = trace.get("loop_events")
    if le is None or not len(le):
        return np.zeros((0, 4), np.int64)
    ev = trace["events"]
    # loop events and real events, each grouped by warp in event order
    le = le[np.lexsort((le[:, 0], le[:, 1]))]
    warp, at, skip = le[:, 1], le[:, 0], le[:, 3] == 1
    n = len(le)
    # per loop event: the latest back-edge mark of its warp before it, and the one before
    same = np.concatenate([[False], warp[1:] == warp[:-1]])
    mark_at = np.where(~skip, np.arange(n), -1)
    start = np.maximum.accumulate(np.where(same, -1, np.arange(n)))   # the warp's first row
    last = np.maximum.accumulate(mark_at)
    prev = np.concatenate([[-1], last[:-1]])                            # marks before row j
    prev = np.where(prev >= start, prev, -1)
    m1 = prev[skip]
    m2 = np.where(m1 >= 0, np.concatenate([[-1], last[:-1]])[np.maximum(m1, 0)], -1)
    m2 = np.where(m2 >= start[skip], m2, -1)
    ok = (m1 >= 0) & (m2 >= 0)
    q = np.flatnonzero(skip)[ok]
    m1, m2 = m1[ok], m2[ok]
    if not len(q):
        return np.zeros((0, 4), np.int64)
    # the trip: from the warp's first event at or after the mark before the last, to its
    # first at or after the last mark
    big = len(ev) + 1
    order = np.argsort(ev[:, 0], kind="stable")
    key = ev[order, 0] * big + order
    ends = np.searchsorted(key, (warp[q] + 1) * big)

    def row(mark):
        i = np.searchsorted(key, warp[q] * big + at[mark])
        r = ev_row[order[np.minimum(i, len(order) - 1)]]
        return np.where(i < ends, r, n_rows)
    r1, r2 = row(m2), row(m1)
    keep = (r1 >= 0) & (r2 >= r1)
    gw = warp[q]
    out = np.stack([pos[gw // nw] * nw + gw % nw, r1, r2, le[q, 4]], axis=1)[keep]
    return out.astype(np.int64).reshape(-1, 4)


@njit(cache=True)
def _addresses_row(o, gw, back, last, last_w, first, first_w, first_pos):
    """The row of addresses warp ``gw``'s SASS access of PTX row ``o`` uses: its latest
    run's, else (an access ptxas hoisted above it) its first run's where the warp gets
    there before it comes back to this block (``back``); -1: none (``o`` -1 included)."""
    if o >= 0 and last_w[o] == gw:
        return last[o]
    if o >= 0 and first_w[o] == gw and first_pos[o] < back:
        return first[o]
    return -1


@njit(cache=True)
def _lanes_with_address(addrs, r):
    """The mask of the lanes of address row ``r`` that have an address (0 for -1)."""
    m = 0
    if r >= 0:
        for lane in range(32):
            if addrs[r, lane] >= 0:
                m |= 1 << lane
    return m


@njit(cache=True)
def _emit(ev, order, addrs, block_of, leaders, eptr, eidx, esrc, lsrc, srows, smem,
          swidth, sh_base, sh_size, loc_base, loc_size, nw, pos, inloop, header, cap, out,
          out_sass, out_mask, out_addr, begin, ev_row, out_trip):
    """Count (``out`` empty) or write the SASS rows of every warp; returns (rows,
    address rows). ``begin[k]`` gets the first row of warp k (block position x nw +
    warp); warps with no events get empty ranges; ``ev_row[e]`` the first row of the
    block visit event ``e`` starts (-1: it starts none). ``cap`` > 0: each entry into the loop
    of PTX blocks ``inloop`` (header block ``header``) issues its first ``cap`` trips
    only; ``out_trip`` (where not empty) gets each row's trip of that loop, -1 outside
    it."""
    fill = out.shape[0] > 0
    trips = out_trip.shape[0] > 0
    trip = 0
    was_in = False
    npc = block_of.shape[0]
    last = np.full(npc, -1, np.int64)
    last_w = np.full(npc, -1, np.int64)
    first = np.full(npc, -1, np.int64)
    first_w = np.full(npc, -1, np.int64)
    first_pos = np.zeros(npc, np.int64)
    seen = np.zeros(leaders.shape[0], np.int64)
    nv = np.zeros(0, np.int64)
    wstart = 0
    n = ev.shape[0]
    k = 0
    m = 0
    i = 0
    cur_warp = -1
    while i < n:
        e = order[i]
        gw = ev[e, 0]
        if gw != cur_warp:
            slot = pos[gw // nw] * nw + gw % nw
            cur_warp = gw
            wstart = i
            nv = _warp_start(ev, order, i, gw, block_of, first, first_w, first_pos, seen)
            trip = 0
            was_in = False
            if fill:
                begin[slot] = k
        pc = ev[e, 1]
        p = block_of[pc] if pc < npc else -1
        # the visit: events from here while they continue the block in order
        j = i + 1
        while j < n:
            e2 = order[j]
            pc2 = ev[e2, 1]
            if ev[e2, 0] != gw or pc2 != ev[order[j - 1], 1] + 1 or pc2 >= npc \
                    or block_of[pc2] != p or pc2 == leaders[p]:
                break
            j += 1
        mask = ev[e, 2]             # the warp's active lanes (guards not applied)
        back = nv[j - 1 - wstart]   # where the warp runs this block again
        if fill:
            ev_row[e] = k
        for q in range(i, j):
            eq = order[q]
            if ev[eq, 3] >= 0:
                last[ev[eq, 1]] = ev[eq, 3]
                last_w[ev[eq, 1]] = gw
        skip = False
        in_loop = False
        if cap > 0 and p >= 0:
            if inloop[p]:
                in_loop = True
                if p == header:
                    trip = trip + 1 if was_in else 0
                was_in = True
                skip = trip >= cap
            else:
                was_in = False
        if p >= 0 and not skip:
            for t in range(eptr[p], eptr[p + 1]):
                si = eidx[t]
                o = esrc[t]
                r = _addresses_row(o, gw, back, last, last_w, first, first_w, first_pos)
                active = _lanes_with_address(addrs, r)
                # the lanes counted: the warp's, or in a block ptxas branches around, the
                # lanes of its access that run it
                lanes = mask
                lm = _lanes_with_address(addrs, _addresses_row(lsrc[si], gw, back, last, last_w,
                                                                first, first_w, first_pos))
                if lm != 0:
                    lanes = lm
                if active > 0:
                    if fill:
                        cls = srows[si, 0]
                        space = _write_addresses(addrs, r, out_addr, m, smem[si], gw, sh_base,
                                                 sh_size, loc_base, loc_size)
                        out_addr[m, 32] = swidth[si]
                        if space == 2:
                            if cls == E.LDG or cls == E.ATOM or cls == E.ACAS:
                                cls = E.LDS
                            elif cls == E.STG or cls == E.RED:
                                cls = E.STS
                        out[k, 0] = cls
                        out[k, 1] = srows[si, 1]
                        out[k, 2] = srows[si, 2]
                        out[k, 3] = srows[si, 3]
                        out[k, 4] = srows[si, 4]
                        out[k, 5] = m
                        out_sass[k] = si
                        out_mask[k] = lanes
                        if trips:
                            out_trip[k] = trip if in_loop else -1
                    m += 1
                else:
                    if fill:
                        cls = srows[si, 0]
                        if smem[si] != 0:
                            cls = E.ALU           # its access is predicated off
                        out[k, 0] = cls
                        out[k, 1] = srows[si, 1]
                        out[k, 2] = srows[si, 2]
                        out[k, 3] = srows[si, 3]
                        out[k, 4] = srows[si, 4]
                        out[k, 5] = ~mask
                        out_sass[k] = si
                        out_mask[k] = lanes
                        if trips:
                            out_trip[k] = trip if in_loop else -1
                k += 1
        i = j
    if fill:
        # warps without events start where the next one does
        begin[begin.shape[0] - 1] = k
        nxt = k
        for s in range(begin.shape[0] - 2, -1, -1):
            if begin[s] == 0 and s > 0:
                begin[s] = nxt
            nxt = begin[s]
    return k, m


@njit(cache=True, inline='always')
def _warp_start(ev, order, i, gw, block_of, first, first_w, first_pos, seen):
    """At warp ``gw``'s first event (position ``i`` of ``order``): each PTX access's first
    addresses in this warp (``first``: for a SASS access ptxas moved ahead of its PTX
    block, issued before that block first runs), and per event of the warp, where its PTX
    block runs next (``n + 1``: not again): a hoisted access takes its first addresses
    only if the warp runs them before it comes back to the block it issues with (not a
    later loop trip's)."""
    n = ev.shape[0]
    npc = block_of.shape[0]
    never = n + 1
    q = i
    while q < n and ev[order[q], 0] == gw:
        eq = order[q]
        if ev[eq, 3] >= 0 and first_w[ev[eq, 1]] != gw:
            first[ev[eq, 1]] = ev[eq, 3]
            first_w[ev[eq, 1]] = gw
            first_pos[ev[eq, 1]] = q
        q += 1
    nv = np.empty(q - i, np.int64)
    for b in range(seen.shape[0]):
        seen[b] = never
    for qq in range(q - 1, i - 1, -1):
        pq = ev[order[qq], 1]
        bq = block_of[pq] if pq < npc else -1
        nv[qq - i] = seen[bq] if bq >= 0 else never
        if bq >= 0:
            seen[bq] = qq
    return nv


@njit(cache=True, inline='always')
def _write_addresses(addrs, r, out_addr, m, space, gw, sh_base, sh_size, loc_base, loc_size):
    """Row ``r`` of the emulator's lane addresses into row ``m`` of the SASS stream's, as
    the engine reads them: a shared access's offsets in the block's window (a generic
    access into that window becomes shared), a local access's addresses in the local
    window, lane-interleaved; returns the access's space."""
    for lane in range(32):
        a = addrs[r, lane]
        if a < 0:
            out_addr[m, lane] = -1
            continue
        if space == 3 and sh_size > 0 and a >= sh_base and a < sh_base + sh_size:
            space = 2           # generic into the shared window
        if space == 2 and a >= sh_base:
            a -= sh_base
        elif space == 4 or (space == 3 and loc_size > 0 and a >= loc_base
                            and a < loc_base + loc_size):
            off = a - loc_base if a >= loc_base else a
            a = LOCAL_BASE + ((gw * ((loc_size + 3) // 4) + off // 4) * 32 + lane) * 4 \
                + off % 4
        out_addr[m, lane] = a
    return space
