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
# # Teaching SIMT and systolic dataflow on kernels you write
#
# Four SIMT ideas and one systolic one, each shown on ordinary numba.cuda kernels
# (`examples/teaching.py`) that roofsim compiles, emulates and times from their own SASS,
# with no GPU:
#
# 1. **divergence**: a warp whose lanes take different paths runs each path with the other
#    lanes idle; *SIMT efficiency* (thread instructions over 32 x warp instructions, as
#    Nsight Compute counts them) says how much of the SIMD width did work;
# 2. **bank conflicts**: a warp's shared-memory access takes one pass per distinct word
#    in the busiest of the 32 banks;
# 3. **latency hiding**: while one warp waits for memory, the scheduler issues another's
#    instructions; the per-warp timeline shows who waits and why;
# 4. **source-level attribution**: which line of the kernel costs what;
# 5. a **systolic array**, cycle by cycle, on matrices of your own.
#
# Predictions are set beside measurements of the same kernels on an H100, taken with
# roofsim's harness (`roofsim measure teaching`, committed in
# `data/measurements/h100-sxm/teaching.json` with Nsight Compute's counters).

# %%
import json
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

import simulator as rs

ROOT = Path(rs.__file__).resolve().parent.parent                # the repository
EXAMPLES = ROOT / "examples" / "teaching.py"
MEASURED = json.loads((ROOT / "data" / "measurements" / "h100-sxm" / "teaching.json").read_text())
H100, FERMI = rs.load_hardware("h100-sxm"), rs.load_hardware("gtx480")


def measured(kernel, shape):
    """The H100 record of examples/teaching.py's ``kernel`` at ``shape``."""
    return next(r for r in MEASURED["records"]
                if r["kernel"] == f"teaching.{kernel}" and r["shape"] == shape)


def ncu_efficiency(rec):
    c = rec["counters"]
    return c["smsp__thread_inst_executed.sum"] / c["smsp__inst_executed.sum"] / 32


def ncu_conflicts(rec):
    c = rec["counters"]
    return (c["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"]
            + c["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"])


def run(name, hw, **size):
    """examples/teaching.py's ``launch_<name>`` at ``size`` on ``hw``: (Result, kernel, args)."""
    kernel, grid, block, args = rs.load_launcher(f"{EXAMPLES}:launch_{name}", **size)
    return rs.simulate_kernel(kernel, grid, block, args, hw=hw), kernel, args


# %% [markdown]
# ## 1. The reduction ladder
#
# Mark Harris's steps for a parallel sum, each summing 256-element block shares of
# 2^24 floats: interleaved addressing with `tid % (2*s)` (divergent warps), with a
# strided index (bank conflicts), sequential addressing, the first add during the load,
# and warp shuffles. Predicted on the H100 preset at the measured size, against the
# measured H100 times and Nsight Compute's counters:

# %%
LADDER = ("interleaved", "strided", "sequential", "first_add", "warp_shuffle")
rows = []
for step in LADDER:
    r, _, _ = run(f"reduce_{step}", H100, n=1 << 24)
    m = measured(f"reduce_{step}", "n=2^24")
    rows.append((step, r.seconds + H100.kernel_launch_s, m["median_s"], r.simt_efficiency,
                 ncu_efficiency(m), r.bank_conflicts, ncu_conflicts(m)))
print(f"{'step':13s} {'predicted':>10s} {'measured':>9s}  {'SIMT eff':>8s} {'(ncu)':>6s}  "
      f"{'conflicts':>10s} {'(ncu)':>10s}")
for step, p, m, e, me, c, mc in rows:
    print(f"{step:13s} {p * 1e6:8.1f}us {m * 1e6:7.1f}us  {e:8.3f} {me:6.3f}  {c:10,.0f} {mc:10,.0f}")
predicted_order = [s for s, *_ in sorted(rows, key=lambda x: -x[1])]
measured_order = [s for s, *_ in sorted(rows, key=lambda x: -x[2])]
print("predicted, slowest first:", " > ".join(predicted_order))
print("measured,  slowest first:", " > ".join(measured_order))

# %%
fig, ax = plt.subplots(figsize=(7, 3))
x = np.arange(len(rows))
ax.bar(x - 0.2, [p * 1e6 for _, p, *_ in rows], 0.4, label="roofsim (h100-sxm)")
ax.bar(x + 0.2, [m * 1e6 for _, _, m, *_ in rows], 0.4, label="H100, measured")
ax.set_xticks(x, LADDER)
ax.set_ylabel("us for 2^24 floats")
ax.legend()
ax.set_title("The reduction ladder")
plt.show()

# %% [markdown]
# The same ladder on the GTX 480 preset (Fermi), at a size a laptop simulates in full in
# a few seconds; Fermi has no fast integer modulo, and its shared memory has 32 banks as
# Hopper's:

# %%
for step in LADDER:
    r, _, _ = run(f"reduce_{step}", FERMI, n=1 << 16)
    print(f"{step:13s} {r.seconds * 1e6:7.1f} us  SIMT efficiency {r.simt_efficiency:.2f}  "
          f"bank-conflict passes {r.bank_conflicts:9,.0f}")

# %% [markdown]
# ## 2. Divergence, line by line
#
# `if tid % (2*s) == 0` leaves half of each warp's lanes idle at the first step, three
# quarters at the second, and so on. The source view puts each figure on the line it
# belongs to (the CLI: `roofsim simulate kernel examples/teaching.py:launch_reduce_interleaved
# --hw gtx480 --arg n=2^16 --source`):

# %%
r, kernel, args = run("reduce_interleaved", FERMI, n=1 << 16)
print(rs.source_view(r, kernel, args, FERMI))

# %% [markdown]
# A branch that splits lanes of a warp (`threadIdx.x % 2`) against one that splits at warp
# boundaries (`(threadIdx.x // 32) % 2`): the same work, but the first runs both paths in
# every warp.

# %%
for name in ("branch_in_warp", "branch_at_warp"):
    r, _, _ = run(name, H100, n=1 << 22)
    m = measured(name, "n=2^22")
    print(f"{name:15s} predicted {(r.seconds + H100.kernel_launch_s) * 1e6:6.1f} us, measured "
          f"{m['median_s'] * 1e6:6.1f} us; SIMT efficiency {r.simt_efficiency:.3f} "
          f"(ncu {ncu_efficiency(m):.3f})")

# %% [markdown]
# ## 3. Bank conflicts: a 32x32 tile against a 32x33 one
#
# Reading a column of a 32x32 float tile, the 32 lanes of a warp hit words 32 apart: one
# bank, 32 passes. One spare column (32x33) moves each row by a bank.

# %%
for name in ("transpose_tile32", "transpose_tile33"):
    r, kernel, args = run(name, H100, rows=4096, cols=4096)
    m = measured(name, "4096x4096")
    print(f"{name:17s} predicted {(r.seconds + H100.kernel_launch_s) * 1e6:6.1f} us, measured "
          f"{m['median_s'] * 1e6:6.1f} us; bank-conflict passes {r.bank_conflicts:12,.0f} "
          f"(ncu {ncu_conflicts(m):12,.0f})")
r, kernel, args = run("transpose_tile32", FERMI, rows=256, cols=256)
print(rs.source_view(r, kernel, args, FERMI))

# %% [markdown]
# ## 4. Latency hiding, warp by warp
#
# A streaming kernel's warps spend most of their lives waiting for memory; with enough of
# them resident, a scheduler always has one ready. The engine records each warp's states
# (issuing; stalled on memory, on a dependency, on a busy pipe or MSHR; ready but not
# selected; at a barrier) and each memory request with the level that served it;
# `--timeline FILE.json` writes them as per-warp tracks for Perfetto. Here, how the
# warps of a ReLU over 2^18 floats on the GTX 480 spend their time, with 32-thread
# blocks (8 resident warps an SM: the blocks-per-SM limit) against 256-thread ones (48),
# and under the two scheduling policies:

# %%
for block in (32, 256):
    r = rs.simulate_simt(FERMI, "relu", n=1 << 16, block=block, mode="full")
    stalls = r.stalls_by_cause
    total = sum(stalls.values())
    print(f"block {block:3d}: {r.launches[0].warps_per_sm:2d} warps/SM, {r.seconds * 1e6:5.1f} us; "
          "schedulers' empty cycles: " + ", ".join(
              f"{k} {v / total:.0%}" for k, v in stalls.items() if v / total >= 0.01))

# %% [markdown]
# The first warps of SM 0, state by state, in a 256-thread-block launch: each warp waits
# most of its life -- on dependent arithmetic (a Fermi ALU result takes some 20 cycles),
# on its loads, on the pipe other warps keep busy -- and the schedulers fill the time
# with the others' instructions (the thin green issues).

# %%
r = rs.simulate_simt(FERMI, "relu", n=1 << 16, block=256, mode="full", trace=20000)
t = rs.timeline(r)
colours = {"issue": "tab:green", "memory": "tab:red", "dependency": "tab:orange",
           "pipe": "tab:blue", "not selected": "tab:cyan", "mshr": "tab:purple",
           "barrier": "tab:brown", "done": "lightgrey"}
rows_ = np.flatnonzero(t.warps["sm"] == 0)[:16]
fig, ax = plt.subplots(figsize=(8, 3.5))
for y, w in enumerate(rows_):
    pick = t.states["warp"] == w
    for state, start, end in zip(t.states["state"][pick], t.states["start"][pick],
                                 t.states["end"][pick]):
        ax.barh(y, end - start, left=start, color=colours.get(str(state), "black"), height=0.8)
ax.set_xlabel("cycle")
ax.set_ylabel("warp (SM 0)")
ax.legend(handles=[plt.Rectangle((0, 0), 1, 1, color=c) for c in colours.values()],
          labels=list(colours), ncol=4, fontsize=7, loc="upper right")
ax.set_title("relu on the GTX 480: warp states")
plt.show()

# %% [markdown]
# ## 5. A systolic array, cycle by cycle
#
# A 4x4 weight-stationary array multiplying two matrices of your own: each register is
# labelled with the operand it holds (`A[i,k]`, `B[k,j]`, partial sums `C[i,j]` with the
# terms they have), the preload of the weights down the columns included.

# %%
A = np.arange(1, 17).reshape(4, 4)
B = np.eye(4, dtype=int) + 1
arr = rs.systolic_array_run(a=A, b=B, dataflow="ws", rows=4, cols=4, record=True)
print(f"{arr.cycles} cycles, {arr.macs} MACs, C == A @ B: {arr.correct}")
print(rs.systolic_text(arr, cycles=range(3, 6)))

# %% [markdown]
# The same run as an animation, one frame per cycle (`.gif`, or `.html` with a player; the
# CLI: `roofsim simulate array --dataflow ws --workload gemm:4x4x4 --animate ws.gif`):

# %%
from IPython.display import Image  # noqa: E402

frames = rs.systolic_animation(arr, "ws.gif", fps=1.5)
print(f"{frames} frames")
Image(filename="ws.gif")
