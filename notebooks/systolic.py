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
# # Systolic arrays, cycle by cycle
#
# This notebook uses roofsim's public API only. It walks through
#
# 1. a 3x3 matrix multiply on a 3x3 array, cycle by cycle: the skewed inputs and the
#    partial sums moving through the PEs;
# 2. the three dataflows (output-, weight- and input-stationary) side by side;
# 3. array-size and SRAM what-ifs on ResNet-50 layers;
# 4. the TPU v1 roofline with ResNet-50's layers on it.

# %%
# %matplotlib inline
import matplotlib.pyplot as plt
import numpy as np

import simulator as rs

# %% [markdown]
# ## 1. A 3x3 matrix multiply, cycle by cycle (output-stationary)
#
# `rs.systolic_array_run` moves operands from PE to PE every cycle. Row r of A enters the left edge
# r cycles late and column c of B enters the top edge c cycles late (the *skew*), so
# A[r, k] and B[k, c] meet in PE (r, c) at cycle r + c + k. `record=True` keeps every
# register of every PE at every cycle.

# %%
op = rs.load_workload("gemm:3x3x3")                     # M = N = K = 3
run = rs.systolic_array_run(op, "os", 3, 3, record=True)
print("cycles:", run.cycles, " MACs:", run.macs, " result equals numpy:", run.correct)
tr = run.trace
for t in range(7):
    print(f"cycle {t}: active PEs\n{tr['active'][t].astype(int)}")

# %%
fig, axes = plt.subplots(2, 6, figsize=(15, 5))
for t in range(6):
    for row, (key, title) in enumerate((("h", "A moving right"), ("s", "accumulators"))):
        ax = axes[row, t]
        grid = tr[key][t]
        ax.imshow(np.nan_to_num(grid, nan=0.0) != 0, cmap="Blues", vmin=0, vmax=2)
        for (r, c), v in np.ndenumerate(grid):
            ax.text(c, r, "" if np.isnan(v) else f"{v:g}", ha="center", va="center", fontsize=9)
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_title(f"cycle {t}: {title}", fontsize=8)
plt.tight_layout()

# %% [markdown]
# In weight-stationary order the 3x3 tile of B is first shifted into the PEs (3 cycles),
# then A's rows stream in from the left and partial sums move *down* the columns: the
# `v` registers below hold the running partial sums.

# %%
ws = rs.systolic_array_run(op, "ws", 3, 3, record=True)
print("cycles:", ws.cycles, " correct:", ws.correct)
for t in range(3, 10):
    print(f"cycle {t}: partial sums\n{np.round(ws.trace['v'][t], 1)}")

# %% [markdown]
# ## 2. The three dataflows side by side
#
# One parameterised schedule covers all three: the stationary operand is a parameter.
# The closed form that `rs.simulate_systolic` runs gives the same cycles and SRAM counts as the
# register-level array (the tests check this on random shapes).

# %%
net = rs.load_workload("resnet50")
layer = next(op for op in net.ops if op.name == "layer1.1.conv2")  # a 3x3 convolution
hw = rs.load_hardware("systolic-8x8")
rows = []
for df in ("os", "ws", "is"):
    r = rs.simulate_systolic(hw, layer, df, stalls="closed-form").systolic
    rows.append((df, r.compute_cycles, r.compute_utilization, r.mapping_efficiency,
                 r.sram_reads.ifmap, r.sram_reads.filter, r.sram_writes.ofmap))
print(f"{layer.name}: {layer.describe()}")
print(f"{'df':3s} {'cycles':>10s} {'util':>6s} {'map':>6s} {'ifmap rd':>10s} {'filter rd':>10s} {'ofmap wr':>10s}")
for df, c, u, m, a, b, o in rows:
    print(f"{df:3s} {c:10d} {u:6.2%} {m:6.2%} {a:10d} {b:10d} {o:10d}")

# %%
small = rs.load_workload("gemm:10x7x6")                 # M = 10, N = 7, K = 6
fig, axes = plt.subplots(1, 3, figsize=(14, 3), sharey=True)
for ax, df in zip(axes, ("os", "ws", "is")):
    r = rs.systolic_array_run(small, df, 4, 4, record=True)
    ax.plot(r.trace["active"].sum(axis=(1, 2)))
    ax.set_title(f"{df}: {r.cycles} cycles, correct={r.correct}")
    ax.set_xlabel("cycle")
axes[0].set_ylabel("PEs doing a MAC")
plt.tight_layout()

# %% [markdown]
# ## 3. What-ifs: array size and SRAM on ResNet-50
#
# Bigger arrays finish sooner but fill less of themselves: late ResNet-50 layers have only
# 7x7 output pixels. Smaller SRAMs make operands cross DRAM more than once. (An SRAM too
# small for one fold's tile is an error, so the weight FIFO grows with the array here.)

# %%
tpu = rs.load_hardware("tpu-v1")
sizes = [32, 64, 128, 256, 512]
for df in ("os", "ws"):
    cyc, util = [], []
    for n in sizes:
        # the weight FIFO keeps TPU v1's four tiles of the array's size
        h = rs.load_hardware("tpu-v1", [f"filter_sram.size_bytes={4 * n * n}B"])
        t = rs.simulate_systolic(h, net, df, array=(n, n), stalls="closed-form").systolic
        cyc.append(t.compute_cycles)
        util.append(t.compute_cycles and t.macs / (n * n * t.compute_cycles))
    print(df, "compute cycles:", cyc)
    print(df, "utilisation:   ", [f"{u:.1%}" for u in util])

# %%
layer = net.ops[10]
print(layer.name, layer.describe())
for kib in (4, 16, 64, 256, 1024):
    h = rs.load_hardware("systolic-8x8", [f"ifmap_sram.size_bytes={kib}KiB", f"ofmap_sram.size_bytes={kib}KiB"])
    r = rs.simulate_systolic(h, layer, "ws")            # stall cycles from the access/execute pipeline
    print(f"SRAMs {kib:5d} KiB: DRAM {r.bytes_by_level['dram'] / 1e6:7.2f} MB, "
          f"pipeline stalls {r.systolic.stall_cycles:9d} cycles")

# %% [markdown]
# ## 4. The TPU v1 roofline with ResNet-50's layers
#
# TPU v1's DRAM holds only weights (activations stay in the 24 MiB unified buffer), so a
# layer's intensity is its operations per weight byte. Each point's height is what the
# access/execute pipeline says the layer achieves.

# %%
peak = tpu.peak_flop_per_s("int8")
bw = tpu.dram.bandwidth_bytes_per_s
rep = rs.simulate_systolic(tpu, net, "ws")
x = np.logspace(0, 5, 200)
fig, ax = plt.subplots(figsize=(7, 5))
ax.plot(x, np.minimum(peak, bw * x), "k-", label="TPU v1 roofline (34 GB/s, 92 TOPS)")
pts = []
for r in rep.layers:
    ops = 2 * r.systolic.macs
    wbytes = r.bytes_by_level["dram"]
    pts.append((ops / wbytes, ops / r.seconds))
pts = np.array(pts)
ax.scatter(pts[:, 0], pts[:, 1], s=15, c=np.arange(len(pts)), cmap="viridis", zorder=3,
           label="ResNet-50 layers (pipeline)")
ax.set_xscale("log")
ax.set_yscale("log")
ax.set_xlabel("ops per weight byte")
ax.set_ylabel("ops/s")
ax.legend(fontsize=8)
print(f"ridge: {peak / bw / 2:.0f} MAC per byte; every ResNet-50 layer at batch 1 sits left of it")
assert (pts[:, 1] <= np.minimum(peak, bw * pts[:, 0]) * 1.0001).all()
