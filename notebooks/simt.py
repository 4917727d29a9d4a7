# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     notebook_metadata_filter: -jupytext.text_representation.jupytext_version
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # A Fermi-style SIMT GPU, warp by warp
#
# roofsim's SIMT model (`simulator/simt`) runs kernel launches on a cycle-approximate
# Fermi-style GPU. This notebook uses its public API only (`import simulator as rs`)
# and walks through
#
# 1. the sum of two 32x48 matrices on a GTX 480: grid, blocks and warps, one warp's
#    instruction stream, and how its loads coalesce into memory transactions;
# 2. warp scheduling: greedy-then-oldest (GTO) against loose round robin (LRR), as
#    timelines, and where the schedulers' cycles go;
# 3. occupancy: which resource limits the blocks an SM holds, on Fermi and on Hopper;
# 4. grid-size sweeps and the wave staircase;
# 5. a coalesced against an uncoalesced naive GEMM;
# 6. the roofline bound against the engine's time.
#
# **What the model assumes** (`docs/simt.md` has the details). Cycles are GTX 480
# *shader* cycles (1401 MHz, the clock of the FP32 lanes). Each SM has two warp
# schedulers, and each issues at most one warp instruction every 2 cycles, because
# Fermi's schedulers run at half the shader clock. A warp's global load or store
# coalesces into the distinct 128-byte segments that its active lanes touch (on Fermi
# the L1 path moves whole 128 B lines; later presets use 32 B sectors). The segments go
# through an L1 with MSHRs, a banked L2 and DRAM channels, each modelled as a queue. The
# kernels are instruction *templates*: index arithmetic is a stated number of ALU
# instructions, and registers per thread are estimates. The preset's latencies come
# from GPGPU-Sim's GTX 480 configuration, and several are guesses. Nothing here has been
# calibrated against a measured GTX 480, so read every number as what the model
# predicts, not as a measurement. Runs are deterministic: the same inputs give the same
# cycles.

# %%
import io
import tempfile

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from IPython.display import Image, display

import simulator as rs


def show(fig):
    """Agg draws off screen: show the figure inline as a PNG, then close it."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    display(Image(data=buf.getvalue()))


hw = rs.load_hardware("gtx480")
sm = hw.sm
print(hw.description)
print(f"{hw.sm_count} SMs at {hw.clock_hz / 1e6:.0f} MHz (shader clock: every cycle below is one of these)")
print(f"per SM: {sm.warp_schedulers} warp schedulers issuing once per {sm.issue_interval_cycles} cycles, "
      f"{sm.fp32_lanes} FP32 lanes, {sm.ldst_units} LD/ST units; at most {sm.max_warps} warps, "
      f"{sm.max_blocks} blocks, {sm.registers} registers, {sm.shared_bytes // 1024} KiB shared memory")
print(f"L1 {sm.l1.size_bytes // 1024} KiB in {sm.l1.sector_bytes} B segments ({sm.l1.latency_cycles} cycles), "
      f"L2 {hw.l2.size_bytes // 1024} KiB ({hw.l2.latency_cycles} cycles), "
      f"DRAM {hw.dram.bandwidth_bytes_per_s / 1e9:.1f} GB/s ({hw.dram.latency_cycles} cycles)")

# %% [markdown]
# ## 1. C = A + B on 32x48 matrices: grid, blocks and warps
#
# `matadd` launches one thread per element. With the default 16x16 blocks the grid is
# ceil(48/16) x ceil(32/16) = **3 x 2 = 6 blocks**. Thread (tx, ty) of block (bx, by)
# adds row `16 by + ty` and column `16 bx + tx`, so threadIdx.x walks the columns. A
# block's 256 threads are numbered x fastest (`tx + 16 ty`) and cut into warps of 32:
# **8 warps per block**, and warp w holds rows 2w and 2w + 1 of the block's 16x16 tile,
# two rows of 16 elements each. Six blocks of 8 warps make **48 warps**. The engine
# numbers blocks linearly, `b = bx + 3 by`.
#
# The map below is read off the program the engine executes: for every warp, the
# addresses of its load of A.

# %%
prob = rs.build(hw, "matadd", m=32, n=48)


def blocks_and_warps(p):
    """(blocks, warps per block) of a built kernel's launch."""
    return int(np.prod(p.grid)), -(-int(np.prod(p.block)) // sm.warp_size)


blocks, wpb = blocks_and_warps(prob)
print(f"{prob.kernel} {prob.args}")
print(f"grid {prob.grid[:2]} x block {prob.block[:2]}: {blocks} blocks x {wpb} warps = {blocks * wpb} warps")

M, N = 32, 48
owner = np.full((M, N), -1)                            # global warp number of each element
for b in range(blocks):
    for w in range(wpb):
        ld = next(i for i in rs.warp_instructions(prob, b, w) if i.op == "LDG")
        e = ld.offsets[ld.offsets >= 0] // 4           # element index r * N + c of A
        owner[e // N, e % N] = b * wpb + w
assert (owner >= 0).all()

fig, ax = plt.subplots(figsize=(10, 6.5))
ax.imshow(owner % 8, cmap="Pastel2", aspect="equal")
for g in range(blocks * wpb):
    rr, cc = np.nonzero(owner == g)
    ax.text(cc.mean(), rr.mean(), f"b{g // wpb} w{g % wpb}", ha="center", va="center", fontsize=7)
for x in (15.5, 31.5):
    ax.axvline(x, color="k", lw=2)
ax.axhline(15.5, color="k", lw=2)
ax.set_xlabel("column c (threadIdx.x direction)")
ax.set_ylabel("row r")
ax.set_title("which warp adds each element (thick lines: the six 16x16 blocks)")
show(fig)

# %% [markdown]
# ### One warp's instruction stream
#
# `rs.warp_instructions(problem, block, warp)` lists what one warp executes, without timing:
# each instruction's pc, opcode, loop iteration and lane addresses, where the addresses
# are byte addresses (`offsets`: into the array a load or store reads or writes) and
# inactive lanes hold -1. `matadd` has no loop, so the iteration is
# always 0. Take warp 3 of block 4 (bx = 1, by = 1). It adds rows 16 + 6 and 16 + 7,
# columns 16 to 31.

# %%
block, warp = 4, 3
for i in rs.warp_instructions(prob, block, warp):
    line = f"pc {i.pc:2d}  {i.op:5s} iteration {i.iteration}"
    if i.array:                                            # a global load or store
        off, name = i.offsets, i.array                     # byte offsets into the array
        e = off[off >= 0] // 4
        line += (f"  {name}: {e.size} lanes, rows {np.unique(e // N).tolist()}, columns "
                 f"{(e % N).min()}..{(e % N).max()}; byte addresses {name}+{off[0]}..{name}+{off[15]} "
                 f"(lanes 0-15), {name}+{off[16]}..{name}+{off[31]} (lanes 16-31)")
    print(line)

# %% [markdown]
# There are 13 warp instructions. Six ALU instructions and a branch compute the row
# and column and test `r < M and c < N`; the bounds check is a branch that issues as an
# instruction of its own. Two more ALU instructions form the element offset, and then
# come two loads, one add and one store. A warp issues all 32 lanes of an instruction
# together (SIMT); a lane outside the matrix would be masked off (-1), but 48 columns and
# 32 rows divide evenly into 16x16 blocks, so every lane is active here. How many ALU
# instructions the index arithmetic takes is an assumption of the template, not
# something read from compiled code.
#
# ### Coalescing: how many 128-byte segments does a load touch?
#
# The memory system moves aligned 128 B segments, so one warp load costs as many
# transactions as the distinct segments that its active lanes touch:
# `rs.coalesce(addresses, 4, 128)` lists them for each row of `addresses` (one warp
# access, each lane reading 4 bytes), and the transactions are their count.

# %%
seg = sm.l1.sector_bytes                               # 128 B on Fermi's L1 path


def first_loads(p):
    """Every warp's first global load (a WarpInstruction), warps in launch order."""
    blocks, wpb = blocks_and_warps(p)
    return [next(i for i in rs.warp_instructions(p, b, w) if i.op == "LDG")
            for b in range(blocks) for w in range(wpb)]


def transactions(loads):
    """Segments each warp load moves."""
    return np.array([len(s) for s in rs.coalesce([i.addresses for i in loads], 4, seg)])


loads = first_loads(prob)
n_seg = transactions(loads)
print(f"segments per warp load of A, all {len(n_seg)} warps:", np.bincount(n_seg).nonzero()[0].tolist(),
      "-> counts", np.bincount(n_seg)[np.bincount(n_seg) > 0].tolist())
off = loads[block * wpb + warp].offsets
assert (loads[0].addresses[0] - loads[0].offsets[0]) % 256 == 0       # A's base is 256 B aligned
segs = rs.coalesce(off, 4, seg)[0]                     # so offsets into A give A's segments
print(f"block {block} warp {warp} loads A+{off[0]}..A+{off[15] + 3} and "
      f"A+{off[16]}..A+{off[31] + 3}: segments "
      + ", ".join(f"A+{s * seg}..A+{s * seg + seg - 1}" for s in segs))
assert (n_seg == 2).all()

# %% [markdown]
# Each matrix row holds 48 floats, 192 B, so consecutive rows lie 192 B apart. Arrays
# start on 256 B boundaries (as `cudaMalloc` places them), so the rows start alternately
# on a segment boundary and halfway into a segment. A warp of a 16x16 block reads two
# 64 B pieces of two consecutive rows, and these always fall in two different segments.
# Every load therefore costs **2 transactions, moving 256 B for the 128 B it uses**
# (50% efficiency).
#
# The block's shape decides this. The next cell runs the same sum with 32x8 blocks,
# where a warp reads 32 consecutive floats of one row, and with 8x32 blocks, where a
# warp reads four rows of 8 floats. The engine charges every segment to the LD/ST pipe
# and the L1, so the L1 bytes and the cycles follow the segment counts. DRAM bytes stay
# at the compulsory 18 KiB (A, B and C, 6 KiB each).

# %%
print(f"{'block':>7s} {'grid':>6s} {'warps':>5s}  {'segments per load: warps':28s} {'efficiency':>10s} "
      f"{'L1 bytes':>9s} {'DRAM bytes':>10s} {'cycles':>7s}")
for shape in ((16, 16), (32, 8), (8, 32)):
    p = rs.build(hw, "matadd", m=M, n=N, block=shape)
    a = first_loads(p)
    t = transactions(a)
    useful = sum((i.addresses >= 0).sum() for i in a) * 4
    r = rs.simulate_simt(hw, p, mode="full")
    hist = ", ".join(f"{k}: {v}" for k, v in enumerate(np.bincount(t)) if v)
    print(f"{'x'.join(map(str, shape)):>7s} {'x'.join(map(str, p.grid[:2])):>6s} {len(t):5d}  {hist:28s} "
          f"{useful / (t.sum() * seg):10.0%} {r.bytes_by_level['l1']:9.0f} {r.bytes_by_level['dram']:10.0f} "
          f"{r.cycles:7.0f}")

# %% [markdown]
# With 32x8 blocks, a warp whose row starts on a segment boundary needs one segment, and
# one whose row starts mid-segment needs two. The right-hand blocks of that grid cover
# only columns 32 to 47, so half their lanes are inactive. 8x32 blocks need four
# segments for every load and take the longest.
#
# ## 2. Warp scheduling: GTO against LRR
#
# Each SM has two schedulers. Scheduler s owns the warp slots s, s + 2, s + 4, and so
# on, so here a block's even warps go to scheduler 0 and its odd warps to scheduler 1.
# Every other cycle each scheduler picks one *ready* warp and issues one instruction for
# it. A warp is ready when the scoreboard has its next instruction's registers ready
# (sources and destination) and that instruction's pipe is free.
#
# * **GTO (greedy-then-oldest)** keeps issuing from the warp that issued last for as
#   long as that warp can issue. When it stalls, the scheduler takes the oldest ready
#   warp. Warps run ahead one at a time.
# * **LRR (loose round robin)** moves on to the next ready warp after the one that
#   issued last, every time. All warps advance together, and their loads go out
#   interleaved.
#
# `rs.simulate_simt(..., trace=5000)` keeps the first 5000 issued instructions, and
# `rs.timeline(result)` gives them as columns (cycle, SM, scheduler, block, warp in
# block, opcode), beside each block's SM, start and end. The 32x48 sum issues only 624,
# so both traces below are complete.

# %%
runs = {}
for policy in ("gto", "lrr"):
    r = rs.simulate_simt(hw, prob, mode="full", policy=policy, trace=5000)
    runs[policy] = r
    t = rs.timeline(r)
    print(f"{policy}: {r.cycles:.0f} cycles = {r.seconds * 1e9:.1f} ns, {r.instructions:.0f} warp instructions "
          f"(IPC {r.ipc:.2f} over all SMs), {len(t.trace['cycle'])} trace rows, blocks end at cycles "
          f"{t.blocks['end'].astype(int).tolist()} on SMs {t.blocks['sm'].tolist()}")

print(f"\nscheduler cycles by cause ({hw.sm_count} SMs x {sm.warp_schedulers} schedulers x cycles):")
print(f"{'cause':11s}" + "".join(f"{p:>16s}" for p in runs))
for c in runs["gto"].stalls_by_cause:
    print(f"{c:11s}" + "".join(f"{r.stalls_by_cause[c]:9.0f} ({r.stalls_by_cause[c] / (hw.sm_count * sm.warp_schedulers * r.cycles):4.0%})"
                               for r in runs.values()))
print(f"{'issuing':11s}" + "".join(f"{r.instructions * sm.issue_interval_cycles:9.0f} "
                                   f"({r.instructions * sm.issue_interval_cycles / (hw.sm_count * sm.warp_schedulers * r.cycles):4.0%})"
                                   for r in runs.values()))
for r in runs.values():   # every scheduler cycle either issues or is charged to one cause
    assert sum(r.stalls_by_cause.values()) + r.instructions * sm.issue_interval_cycles == \
        hw.sm_count * sm.warp_schedulers * r.cycles

# %% [markdown]
# `stalls_by_cause` charges every scheduler cycle that issues nothing to one reason,
# taken from the warp that is nearest to being ready. `idle` means the scheduler has no
# warp at all, `memory` that the warp waits on a load, `dependency` that it waits on an
# arithmetic result, `pipe` that its unit is busy, `barrier` that it waits at
# `__syncthreads`, and `mshr` that no miss register is free. Together with the issuing
# cycles (2 per instruction) they add up to SMs x schedulers x cycles. Most of the idle
# time comes from the nine SMs that get no block, since six blocks cannot fill 15 SMs.
# Most of the rest is `memory`: each warp waits for one DRAM round trip.
#
# `rs.plots.simt_timeline_chart(result, path, warps=True)` draws one row per (SM, block,
# warp) with a tick for each issued instruction. It writes a file, so the next cell
# writes into a temporary folder and shows the image from there.

# %%
with tempfile.TemporaryDirectory() as tmp:
    for policy, r in runs.items():
        path = f"{tmp}/timeline-{policy}.png"
        rs.plots.simt_timeline_chart(r, path, warps=True)
        display(Image(filename=path))
plt.close("all")

# %% [markdown]
# Those charts show all 48 warps. The next one zooms in on SM 0, which runs block 0, and
# colours each issued instruction by its opcode, with GTO on top and LRR below.

# %%
colours = {"ALU": "0.65", "BRA": "0.2", "LDG": "tab:blue", "FADD": "tab:green", "STG": "tab:red"}
fig, axes = plt.subplots(2, 1, figsize=(11, 5.5), sharex=True)
for ax, (policy, r) in zip(axes, runs.items()):
    tr = rs.timeline(r).trace
    on0 = tr["sm"] == 0
    for name, col in colours.items():
        sel = on0 & (tr["op"] == name)
        ax.scatter(tr["cycle"][sel], tr["warp"][sel], marker="|", s=120, lw=2, color=col, label=name)
    ax.set_yticks(range(wpb))
    ax.set_yticklabels([f"w{w} (sched {tr['scheduler'][on0 & (tr['warp'] == w)][0]})" for w in range(wpb)],
                       fontsize=8)
    ax.set_title(f"{policy.upper()}: SM 0 (block 0), {r.cycles:.0f} cycles in all", fontsize=10)
    ax.grid(axis="x", alpha=0.3)
axes[0].legend(ncol=5, fontsize=8, loc="center")
axes[1].set_xlabel("cycle")
show(fig)

for policy, r in runs.items():
    tr = rs.timeline(r).trace
    on = lambda w, op: (tr["sm"] == 0) & (tr["warp"] == w) & (tr["op"] == op)  # noqa: E731
    print(f"{policy}, SM 0 -- warp: cycles of its two loads -> its add")
    print("   " + "; ".join(f"w{w}: {tr['cycle'][on(w, 'LDG')].tolist()} -> "
                           f"{tr['cycle'][on(w, 'FADD')][0]}" for w in range(wpb)))

# %% [markdown]
# How to read it: the first ALU instructions of a warp all write the same template
# register, so each waits out the previous one's 10-cycle FP32 latency. Four warps per
# scheduler at 2 cycles each fill only 8 of those 10 cycles, so both policies start
# alike. They differ at the loads. Under GTO a warp that reaches its loads issues both
# of them back to back, and the first warps get their data back first. Under LRR every
# warp's first load goes out before any second load, so a warp's two loads lie further
# apart and the first add comes later. The LD/ST unit is busy in both cases for about 4
# cycles per load (two 128 B segments at the L1's 64 B per cycle). Then every warp waits
# roughly 500 cycles for DRAM. That single round trip, not the order of issue, sets this
# kernel's time, so the two policies end within a few cycles of each other.
#
# The scheduler matters more when many warps compete for a long time. The next cell
# compares the two policies on larger launches. In this model the difference is a few
# percent to about ten percent and can go either way. The model's schedulers are
# simplified (`docs/simt.md` describes them), so take the sign as this model's
# prediction, not as a measured property of Fermi.

# %%
print(f"{'kernel':36s} {'GTO cycles':>10s} {'LRR cycles':>10s} {'LRR / GTO':>9s}")
for kernel, kw in (("matadd", dict(m=256, n=256)), ("gemm-naive", dict(m=128, n=128, k=64)),
                   ("gemm-tiled", dict(m=128, n=128, k=64))):
    r = {pol: rs.simulate_simt(hw, kernel, mode="full", policy=pol, **kw) for pol in ("gto", "lrr")}
    c = {pol: x.cycles for pol, x in r.items()}
    label = f"{kernel} {r['gto'].last_launch.label}"
    print(f"{label:36s} {c['gto']:10.0f} {c['lrr']:10.0f} {c['lrr'] / c['gto']:9.3f}")

# %% [markdown]
# ## 3. Occupancy: which resource limits the resident blocks?
#
# An SM keeps a block resident from its first instruction to its last. How many blocks
# fit at once follows CUDA's occupancy rules (the occupancy calculator's; see
# `simulator/simt/occupancy.py`). The smallest of four limits wins:
#
# * **warps**: `max_warps / warps per block` (48 warps on Fermi, 64 on Hopper);
# * **registers**: registers are allocated per warp in units (64 on Fermi, 256 later),
#   within each of the SM's scheduler partitions (32 K registers per SM on Fermi,
#   64 K on Hopper);
# * **shared memory**: the block's shared memory, rounded up to the allocation unit
#   (48 KiB per SM on Fermi as configured, 228 KiB on Hopper);
# * **blocks**: at most 8 blocks per SM on Fermi, 32 on Hopper.
#
# `rs.occupancy(hw, block_threads, regs_per_thread, smem_bytes)` returns the resident
# blocks and warps, the fraction of the maximum warps (`occupancy`), which limit binds
# (`limited_by`, with `+` joining ties), and the blocks each limit allows (`limits`). A
# launch that cannot fit at all is an error that names the limit.

# %%
configs = [(64, 16, 0), (256, 16, 0), (256, 32, 0), (256, 48, 0), (1024, 32, 0),
           (256, 16, 16 * 1024), (128, 32, 100 * 1024), (1024, 63, 0)]
for name in ("gtx480", "h100-sxm"):
    h = rs.load_hardware(name)
    print(f"{name}: {h.sm.max_warps} warps, {h.sm.max_blocks} blocks, {h.sm.registers} registers, "
          f"{h.sm.shared_bytes // 1024} KiB shared per SM")
    print(f"  {'block':>5s} {'regs':>4s} {'smem':>7s}  {'blocks':>6s} {'warps':>5s} {'occ':>5s}  "
          f"{'limited by':22s} blocks allowed by warps / registers / shared / blocks")
    for block_threads, regs, smem in configs:
        head = f"  {block_threads:5d} {regs:4d} {smem:7d}  "
        try:
            o = rs.occupancy(h, block_threads, regs, smem)
        except ValueError as e:
            print(head + f"cannot launch: {e}")
            continue
        lim = " / ".join("-" if v is None else str(v) for v in o.limits.values())
        print(head + f"{o.blocks_per_sm:6d} {o.warps_per_sm:5d} {o.occupancy:5.0%}  {o.limited_by:22s} {lim}")
    print()

# %% [markdown]
# On the GTX 480:
#
# * 64-thread blocks are capped by the limit of **8 blocks** per SM: 16 warps, a third
#   of the 48 warp slots.
# * 256-thread blocks with 16 registers fill all 48 warps (6 blocks, limited by
#   **warps**).
# * At 32 registers per thread the same blocks need 8192 registers each, and 32 K
#   registers hold only 4 of them. At 48 registers only 2 fit, so **registers** bind.
# * 16 KiB of shared memory per block lets 3 blocks share the SM's 48 KiB.
# * A block of 1024 threads with 63 registers needs 64 K registers and cannot launch.
#
# The H100 has twice the registers, more warp slots, 32 blocks and 228 KiB of shared
# memory per SM, so most of these configurations reach full occupancy there.
# 100 KiB of shared memory per block still leaves only 2 blocks.
#
# The kernels of this notebook, with their launches and estimated resources, on the
# GTX 480:

# %%
for kernel, kw in (("relu", dict(n=1 << 18)), ("matadd", dict(m=32, n=48)),
                   ("gemm-naive", dict(m=128, n=128, k=64)), ("gemm-tiled", dict(m=128, n=128, k=64))):
    L = rs.analytic(hw, kernel, **kw).last_launch        # the launch, with its resources
    threads = int(np.prod(L.block))
    o = rs.occupancy(hw, threads, L.regs_per_thread, L.smem_per_block)
    print(f"{kernel:11s} block {threads:4d}, {L.regs_per_thread:2d} regs, {L.smem_per_block:5d} B shared "
          f"({L.resources_source}): {o.blocks_per_sm} blocks/SM, {o.warps_per_sm} warps ({o.occupancy:.0%}), "
          f"limited by {o.limited_by}")


# %% [markdown]
# ## 4. Grid size and the wave staircase
#
# A grid of B blocks runs in **waves**. The machine holds C = SMs x blocks per SM
# blocks at once, and `waves = B / C`. A block beyond the first C waits until a
# resident block finishes. If blocks are *latency-bound*, meaning one block takes about
# as long whether it runs alone or beside others, then a partial last wave costs as
# much time as a full one. Time then grows in steps at every multiple of C.
#
# The first sweep gives every thread of `relu` a fixed amount of work: the grid-stride
# loop runs 16 times per thread (`n = grid x block x 16`). Blocks have **32 threads**.
# Fermi holds at most 8 blocks per SM, so C = 15 x 8 = 120, and a full wave has only
# 8 warps per SM. Each warp issues in order, and the `max` needs the loaded value, so a
# warp has one load in flight at a time. Every iteration then costs one DRAM round
# trip, and even a full wave keeps DRAM well below its bandwidth: the blocks are
# latency-bound.
#
# For contrast, the second sweep uses **256-thread** blocks (6 per SM, C = 90) with the
# same work per thread. A wave of these asks for more bytes per round trip than DRAM
# can deliver, so time grows with the bytes moved rather than with the waves.
#
# `rs.predict(hw, "relu", mode="full", ...)` returns the engine's Result (`.engine`)
# beside the analytic model's estimate (`.analytic`) and the roofline bound. The analytic model
# prices the waves from a few sampled warps, and the engine is the reference.

# %%
def sweep(block, grids, n_of):
    rows = []
    for G in grids:
        r = rs.predict(hw, "relu", mode="full", n=n_of(G), grid=G, block=block)
        e, L = r.engine, r.engine.last_launch
        rows.append(dict(grid=G, block=block, blocks=G, waves=L.waves, blocks_per_sm=L.blocks_per_sm,
                         engine_seconds=e.seconds, analytic_seconds=r.analytic.seconds,
                         dram_bytes=e.bytes_by_level["dram"], sim_wall=e.wall_seconds))
    return rows


k = 16
small = sweep(32, sorted(set(range(10, 481, 10)) | {5, 121, 241, 361}), lambda G: G * 32 * k)
big = sweep(256, sorted(set(range(10, 361, 10)) | {5, 91, 181, 271}), lambda G: G * 256 * k)
print(f"engine time for the two sweeps: {sum(r['sim_wall'] for r in small + big):.1f} s of simulation")

fig, axes = plt.subplots(1, 2, figsize=(13, 4.5))
for ax, rows in zip(axes, (small, big)):
    C = hw.sm_count * rows[0]["blocks_per_sm"]
    x = [r["grid"] for r in rows]
    ax.plot(x, [r["engine_seconds"] * 1e6 for r in rows], "-o", ms=2.5, label="engine")
    ax.plot(x, [r["analytic_seconds"] * 1e6 for r in rows], "--", label="analytic")
    for m in range(C, max(x) + 1, C):
        ax.axvline(m, color="k", ls=":", lw=1)
    ax.set_xlabel(f"blocks in the grid (dotted: multiples of C = {hw.sm_count} x {rows[0]['blocks_per_sm']} = {C})")
    ax.set_ylabel("predicted time (us)")
    ax.set_title(f"relu, block {rows[0]['block']}, {k} elements per thread")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
show(fig)

for rows in (small, big):
    C = hw.sm_count * rows[0]["blocks_per_sm"]
    print(f"block {rows[0]['block']}, C = {C}:")
    for r in rows:
        if r["grid"] % C in (0, 1) and r["grid"] > 1 or r["grid"] == 5:
            print(f"  {r['grid']:4d} blocks = {r['waves']:5.2f} waves: engine {r['engine_seconds'] * 1e6:6.2f} us, "
                  f"analytic {r['analytic_seconds'] * 1e6:6.2f} us, "
                  f"DRAM {r['dram_bytes'] / r['engine_seconds'] / 1e9:5.1f} GB/s of {hw.dram.bandwidth_bytes_per_s / 1e9:.1f}")

# %% [markdown]
# With 32-thread blocks the engine draws a clean staircase. Time stays almost flat
# within a wave, because 8 latency-bound blocks on an SM run as fast as one. It jumps by
# a whole wave's time one block past each multiple of 120: a single block of a new wave
# costs as much as 120 of them. The analytic model finds the same steps, 9-19% under
# the engine at the wave boundaries printed above. With 256-thread blocks a full
# wave of `relu` asks for more than the DRAM's bandwidth, so the time grows almost in
# proportion to the blocks, and the steps at multiples of 90 all but vanish. The bytes
# set the time, not the waves. (The DRAM rates printed count reads and write-backs; the
# dirty lines still in the L2 at the end are counted in the bytes but not timed.)
#
# ### The grid-stride sizing question
#
# The usual grid-stride launch fixes the problem (here n = 2^18 elements), not the work
# per thread, and asks how many blocks to launch. `rs.build` picks one full wave by
# default (`sm_count x max_threads / block` = 90 blocks of 256). Sweeping 1 to 120
# blocks:

# %%
stride = sweep(256, list(range(1, 121)), lambda G: 1 << 18)
print(f"engine time for the sweep: {sum(r['sim_wall'] for r in stride):.1f} s of simulation")
fig, ax = plt.subplots(figsize=(9, 4.5))
x = [r["grid"] for r in stride]
ax.plot(x, [r["engine_seconds"] * 1e6 for r in stride], "-o", ms=2.5, label="engine")
ax.plot(x, [r["analytic_seconds"] * 1e6 for r in stride], "--", label="analytic")
for m in range(15, 121, 15):
    ax.axvline(m, color="k", ls=":", lw=1 if m % 90 else 2)
ax.set_yscale("log")
ax.set_xlabel("blocks of 256 threads (dotted: multiples of 15 SMs; thick: one full wave, 90)")
ax.set_ylabel("predicted time (us)")
ax.set_title("relu over 2^18 elements, grid-stride loop")
ax.grid(alpha=0.3, which="both")
ax.legend(fontsize=8)
show(fig)
for r in stride:
    if r["grid"] in (1, 8, 15, 16, 30, 31, 45, 46, 60, 61, 87, 90, 91, 120):
        print(f"  {r['grid']:4d} blocks: engine {r['engine_seconds'] * 1e6:7.2f} us, analytic {r['analytic_seconds'] * 1e6:7.2f} us")
best = min(stride, key=lambda r: r["engine_seconds"])
print(f"fastest in the engine: {best['grid']} blocks, {best['engine_seconds'] * 1e6:.2f} us")
compulsory = 8 * (1 << 18) / hw.dram.bandwidth_bytes_per_s
print(f"2 MiB of compulsory DRAM traffic at {hw.dram.bandwidth_bytes_per_s / 1e9:.1f} GB/s: {compulsory * 1e6:.1f} us")

# %% [markdown]
# Here every block does 1/grid of the work, so the work per block shrinks as the grid
# grows. Two latency-bound blocks on one SM run side by side about as fast as one, so
# in the engine the time follows the work per block: it falls roughly as 1/grid, with
# no staircase. From about 45 blocks on, DRAM traffic rather than latency sets the
# pace. The engine
# can come in under the compulsory-traffic time because the write-backs still in the L2
# at the end are not timed. The analytic model's memory-concurrency (Little's-law) term
# counts the loads in flight as if every SM held as many blocks as the busiest one,
# ceil(grid / 15), so it falls in steps at multiples of 15 where the engine does not.
#
# Just past 45 blocks, and again just past 60, the engine's time jumps up, and it
# falls back to its minimum only near one full wave (87 to 90 blocks; 90 is
# `rs.build`'s default). `docs/simt.md` lists this sweep's bumps as a behaviour still
# to check against measurements: their cause inside the model is not pinned down, and
# whether a GTX 480 does the same is open.
#
# ## 5. Coalesced against uncoalesced: the naive GEMM
#
# `gemm-naive` computes C = A B (A is 128x64, B is 64x128, all row-major) with one
# thread per element of C and a k loop. The template unrolls the loop by 4, an assumed
# compilation. Each iteration loads `A[r, k]` and `B[k, c]` for four values of k and
# issues four FFMAs. The two mappings differ only in which thread index walks which
# dimension of C:
#
# * `thread_x="cols"`: threadIdx.x walks C's columns (the usual choice);
# * `thread_x="rows"`: threadIdx.x walks C's rows.

# %%
gemm = {}
for tx in ("cols", "rows"):
    p = rs.build(hw, "gemm-naive", m=128, n=128, k=64, thread_x=tx)
    pr = rs.predict(hw, p, mode="full")
    r, L = pr.engine, pr.engine.last_launch
    gemm[tx] = (p, pr)
    total = sum(r.stalls_by_cause.values())
    print(f"thread_x={tx}: {L.describe()}")
    print(f"  engine {r.seconds * 1e6:.2f} us ({r.cycles:.0f} cycles, IPC {r.ipc:.2f}), "
          f"analytic {pr.analytic.seconds * 1e6:.2f} us (limited by {pr.analytic.limiter}); "
          f"{L.blocks_per_sm} blocks/SM ({L.limited_by}), {L.waves:.2f} waves")
    print("  bytes: " + ", ".join(f"{k} {v / 1e6:.3f} MB" for k, v in r.bytes_by_level.items())
          + f"; hit rates: L1 {r.extra['hit_rates']['l1']:.1%}, L2 {r.extra['hit_rates']['l2']:.1%}")
    print("  scheduler stall cycles: " + ", ".join(f"{c} {v / total:.0%}" for c, v in r.stalls_by_cause.items() if v))
print(f"rows / cols time: {gemm['rows'][1].engine.seconds / gemm['cols'][1].engine.seconds:.2f}")

# %% [markdown]
# Now the segments per warp access, for the first loop iteration's loads of A and B and
# for the final store of C, from warp 0 of block 0 in each mapping:

# %%
ncols = {"A": 64, "B": 128, "C": 128}
for tx, (p, _) in gemm.items():
    print(f"thread_x={tx}:")
    for i in rs.warp_instructions(p, 0, 0):
        if i.op == "LDG" and i.iteration == 0 and i.stream in ("A+0", "B+0") or i.op == "STG":
            e = sorted(set((i.offsets[i.offsets >= 0] // 4).tolist()))     # elements of the array
            cells_ = sorted({(x // ncols[i.array], x % ncols[i.array]) for x in e})
            print(f"  {i.op} {i.array}: {len(e):2d} distinct elements, e.g. (row, col) {cells_[:3]} ... "
                  f"-> {len(rs.coalesce(i.addresses, 4, seg)[0]):2d} segments")

# %% [markdown]
# The warp of a 16x16 block covers 16 values of threadIdx.x and 2 of threadIdx.y.
#
# * **B** costs one segment in both mappings. With `cols`, the warp reads 16
#   consecutive floats of one row of B (64 B). With `rows`, all lanes read one of just
#   two adjacent elements, since c comes from threadIdx.y (the load is a broadcast).
# * **A** is where the mappings differ. With `cols`, the warp's lanes share 2 rows of C,
#   so they read 2 elements of A, one segment per row. With `rows`, the 16 lanes with
#   different threadIdx.x read 16 different rows of A, 256 B apart: **16 segments** for
#   one load.
# * The store of **C** also goes from 2 segments to 16.
#
# So the uncoalesced mapping moves about 5.7x the bytes through the LD/ST pipe and the
# L1, yet takes only about a quarter longer: as numba compiles this kernel, each k costs
# 34 instructions of 64-bit index arithmetic around its two loads and one FMA, so both
# mappings spend most of their cycles issuing that arithmetic and waiting on each load's
# result (`dependency` in the stall causes), and the extra L1 transfers mostly hide
# behind it. Its L1 hit rate is *higher* because each A segment is reused across
# the next k values, but a hit still has to be transferred, 128 B at a time. DRAM bytes
# are the same for both mappings, the compulsory 131 KB: this 128x128x64 problem fits in
# the caches, so the difference lies entirely on the SM side of the memory system.

# %%
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4))
levels = ["l1", "l2", "dram"]
w = 0.38
for i, (tx, (_, pr)) in enumerate(gemm.items()):
    r = pr.engine
    ax1.bar(np.arange(len(levels)) + (i - 0.5) * w, [r.bytes_by_level[k] / 1e6 for k in levels], w, label=tx)
    tot = hw.sm_count * sm.warp_schedulers * r.cycles
    left = 0.0
    parts = [("issuing", r.instructions * sm.issue_interval_cycles)] + list(r.stalls_by_cause.items())
    for j, (c, v) in enumerate(parts):
        ax2.barh(i, v / tot * r.cycles, left=left, color=f"C{j}", label=c if i == 0 else None)
        left += v / tot * r.cycles
ax1.set_xticks(range(len(levels)))
ax1.set_xticklabels(levels)
ax1.set_yscale("log")
ax1.set_ylabel("MB moved")
ax1.set_title("bytes by level")
ax1.legend(title="thread_x")
ax2.set_yticks([0, 1])
ax2.set_yticklabels(list(gemm))
ax2.set_xlabel("cycles, split by what the schedulers did")
ax2.set_title("scheduler cycles by cause")
ax2.legend(fontsize=7, ncol=2)
show(fig)

# %% [markdown]
# ## 6. The roofline bound against the engine
#
# `rs.predict` also returns `.roofline`, the roofline lower bound of the
# operation: the largest of FLOPs at peak FP32 and compulsory bytes at each memory
# level's bandwidth. It knows nothing of latency, waves or coalescing, so the engine
# can only be slower than it.

# %%
cases = [("matadd 32x48", rs.predict(hw, prob, mode="full")), ("gemm-naive cols", gemm["cols"][1]),
         ("gemm-naive rows", gemm["rows"][1])]
print(f"{'case':16s} {'roofline us':>11s} {'engine us':>9s} {'engine / roofline':>17s}")
for label, pr in cases:
    print(f"{label:16s} {pr.roofline.seconds * 1e6:11.3f} {pr.engine.seconds * 1e6:9.3f} "
          f"{pr.engine.seconds / pr.roofline.seconds:17.1f}")

# the coalesced GEMM: simple bounds that the roofline leaves out
p, r = gemm["cols"][0], gemm["cols"][1].engine
ops = np.array([i.op for i in rs.warp_instructions(p, 0, 0)])
ffma_share = (ops == "FFMA").mean()
per_sm_issue = sm.warp_schedulers / sm.issue_interval_cycles           # warp instructions per cycle per SM
t_issue = r.instructions / (hw.sm_count * per_sm_issue) / hw.clock_hz
t_l1 = r.bytes_by_level["l1"] / (hw.sm_count * sm.l1.bandwidth_bytes_per_cycle) / hw.clock_hz
B = int(np.prod(p.grid))
busiest = -(-B // hw.sm_count)
print(f"\ngemm-naive cols: FFMA is {ffma_share:.0%} of a warp's instructions")
print(f"  all {r.instructions:.0f} warp instructions at {per_sm_issue:.0f} per SM per cycle: {t_issue * 1e6:.2f} us")
print(f"  {r.bytes_by_level['l1'] / 1e6:.1f} MB through the L1 at {sm.l1.bandwidth_bytes_per_cycle:.0f} B/cycle per SM: "
      f"{t_l1 * 1e6:.2f} us")
print(f"  {B} blocks on {hw.sm_count} SMs: the busiest SM runs {busiest}, {busiest / (B / hw.sm_count):.2f}x the average "
      f"-> L1 time on it {t_l1 * busiest / (B / hw.sm_count) * 1e6:.2f} us;  engine {r.seconds * 1e6:.2f} us")

# %% [markdown]
# The 32x48 sum is far from its bound. It moves 18 KB, which would take about 0.1 us at
# full DRAM bandwidth, but six blocks on 15 SMs spend nearly all their ~0.5 us waiting
# for one DRAM round trip. No bandwidth bound sees latency.
#
# The coalesced naive GEMM sits some 45x above its compute bound, and the simple
# accounting above explains most of the gap. Only 3% of its instructions are FFMAs (the
# rest is the index arithmetic, the loads and the loop), so perfect issue alone takes
# about four fifths of the engine's time. The L1 has to carry roughly a hundred times the
# compulsory bytes, because the kernel reuses nothing through shared memory, though at
# 64 B per cycle that is the smaller cost here. And 64 blocks do not divide evenly over
# 15 SMs. The rest is latency that the resident warps (at most 40 per SM) do not fully
# hide. The uncoalesced mapping adds the 5.7x L1 traffic on top.
#
# A tiled GEMM (`gemm-tiled`) attacks exactly these terms: it stages tiles in shared
# memory and issues more FFMAs per load. The roofline shows how far there is to go, and
# the engine shows which resource stands in the way.
