"""``roofsim simulate kernel FILE.py:LAUNCHER``: a user's numba.cuda kernel timed on a
SIMT preset from its own SASS (``simulator.kernelcode.timing``)."""
from __future__ import annotations

import argparse

from hwmodels.units import format_bytes, format_seconds

from ..options import (
    TIMELINE_INSTRUCTIONS,
    add_engine,
    add_hw,
    add_launcher_args,
    add_outputs,
    launcher_args,
    load_hw,
    one_dims,
)
from ..outputs import hw_dict, partial_of, write_json, write_partial, write_timeline

EXAMPLES = """examples:
  roofsim simulate kernel examples/kernels.py:launch_transpose --hw h100-sxm
  roofsim simulate kernel examples/kernels.py:launch_block_sum --hw gtx480 --block 128
  roofsim simulate kernel examples/kernels.py:launch_transpose --hw h100-sxm --mode analytic
  roofsim simulate kernel examples/kernels.py:launch_softmax --hw h100-sxm --mode full --csv sass.csv
  roofsim simulate kernel examples/teaching.py:launch_reduce_interleaved --hw gtx480 --arg n=2^16 --source
"""

DESCRIPTION = (
    "Time a numba.cuda kernel on a SIMT GPU preset from its own SASS: compiled for the "
    "preset's compute capability with NVIDIA's compilers from PyPI (Fermi presets time "
    "sm_75 code: CUDA 13 compiles for nothing older), a few blocks run on the PTX "
    "emulator to weigh the grid, the blocks the engine's sampler picks (every block with "
    "--mode full) run recorded, and their warps' SASS streams -- registers, active masks, "
    "lane addresses -- go through the cycle-level engine (--mode analytic: the analytic "
    "model reads the same warps instead, nothing simulated). LAUNCHER is a function in "
    "FILE.py, def launch(grid=None, block=None), returning (kernel, grid, block, args).")


class _Launcher(argparse.Action):
    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, values)
        namespace.launcher_file = values.rpartition(":")[0] if ":" in values else values


def add_kernel(sim):
    """``simulate kernel`` under the ``simulate`` subcommands ``sim``."""
    p = sim.add_parser("kernel", help="a numba.cuda kernel of yours, timed from its SASS "
                       "(FILE.py:LAUNCHER)", description=DESCRIPTION, epilog=EXAMPLES,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("launcher", metavar="FILE.py:LAUNCHER", action=_Launcher,
                   help="a Python file and the function in it that returns (kernel, grid, "
                   "block, args)")
    add_hw(p)
    p.add_argument("--grid", help="blocks, passed to the launcher (e.g. 64 or 16x16)")
    p.add_argument("--block", help="threads per block, passed to the launcher (e.g. 256 "
                   "or 32x8)")
    add_launcher_args(p)
    add_engine(p, modes=("full", "sampled", "analytic"))
    p.add_argument("--source", action="store_true",
                   help="print the kernel's Python source line by line with what the engine "
                        "made of it: warp instructions, SIMT efficiency (thread instructions "
                        "over 32 x warp instructions), stall cycles and their top cause, "
                        "shared-memory passes and bank-conflict passes, bytes at each level")
    p.add_argument("--top", type=int, default=10,
                   help="list the N most executed SASS instructions (default 10; 0: none)")
    add_outputs(p, timeline=(
        "every block on its SM in time and the first "
        f"{TIMELINE_INSTRUCTIONS:,} instructions issued, a Chrome trace (open it in "
        "chrome://tracing or ui.perfetto.dev)"))
    p.set_defaults(func=run, launcher_file=None, in_thread=True)


def run(args):
    from simulator.kernelcode.timing import simulate_kernel
    from simulator.kernelcode.userfile import call_launcher

    if args.top < 0:
        raise ValueError(f"--top {args.top}: must be 0 or more")
    if args.timeline and args.mode == "analytic":
        raise ValueError("--timeline needs --mode full or sampled: the analytic model "
                         "issues no instruction to draw")
    doc = {}
    partial_of(args).keep(lambda: write_partial(args, [], lambda rs: doc))
    hw = load_hw(args, "simt", " (try gtx480, v100, h100-sxm)")
    grid, block = one_dims(args.grid, "--grid"), one_dims(args.block, "--block")
    kernel, grid, block, kargs = call_launcher(args.launcher, grid, block, launcher_args(args.arg))
    doc.update(hardware=hw_dict(hw), launcher=args.launcher, mode=args.mode)
    r = simulate_kernel(kernel, grid, block, kargs, hw=hw, mode=args.mode, l2=args.l2,
                        policy=args.policy or "gto",
                        trace=TIMELINE_INSTRUCTIONS if args.timeline else 0)
    lc = r.last_launch
    sass = r.extra["sass"]
    print(f"{r.workload} on {hw.name}, timed from its SASS ({r.extra['arch']}, "
          f"{len(sass)} instructions): grid {_dims(lc.grid)}, block {_dims(lc.block)}")
    print(f"  occupancy {lc.blocks_per_sm} blocks/SM, {lc.warps_per_sm} warps/SM "
          f"({lc.occupancy:.0%}, limited by {lc.limited_by}); {lc.waves:.2f} waves; "
          f"{lc.regs_per_thread} regs/thread, {lc.smem_per_block} B shared/block "
          f"({lc.resources_source}); L2 {args.l2}")
    model = (f"analytic model (limited by {r.limiter})" if args.mode == "analytic"
             else f"engine{sampling_note(r)}")
    print(f"  {model}: {r.cycles:.0f} cycles = {format_seconds(r.seconds)}; "
          f"{r.instructions:,.0f} SASS warp instructions, IPC {r.ipc:.2f}")
    busiest = max(r.extra["atomic_unit_cycles"])
    if busiest > 0:
        print(f"  L2 atomics: the busiest line's atomic unit works {busiest:,.0f} cycles, "
              f"{busiest / r.cycles:.0%} of the launch (one warp request at a time)")
    print_traffic(r)
    print_simt(r)
    if args.top:
        top = sorted(sass, key=lambda s: -s["warp_instructions"])[:args.top]
        print(f"  most executed SASS instructions (of {len(sass)}; SIMT: active lanes of 32; "
              "passes: shared-memory passes an execution takes, 1 without bank conflicts):")
        print(f"  {'warp execs':>14}  {'pc':>6}  {'PTX line':>8}  {'SIMT':>5}  {'passes':>6}  "
              "instruction")
        for s in top:
            eff = s.get("simt_efficiency")
            n = s.get("shared_instructions")
            passes = f"{s['shared_passes'] / n:.1f}" if n else ""
            print(f"  {s['warp_instructions']:>14,.0f}  {s['pc']:>#6x}  {s['ptx_line']:>8}  "
                  f"{'' if eff is None else format(eff, '.0%'):>5}  {passes:>6}  {s['text']}")
    if args.source:
        from simulator.kernelcode.source import source_view
        print(source_view(r, kernel, kargs, hw))
    print(f"  wall time: {r.wall_seconds:.2f} s (compile, emulate {r.extra['traced_blocks']} "
          f"of {r.extra['total_blocks']} blocks, "
          f"{'analytic model' if args.mode == 'analytic' else 'engine'})")
    with partial_of(args).final():
        if args.csv:
            from simulator.table import write_csv
            write_csv(args.csv, sass)
            print(f"wrote {args.csv}")
        if args.json:
            write_json(args.json, {"hardware": hw_dict(hw), "launcher": args.launcher,
                                   **r.to_dict()})
        if args.timeline:
            from simulator.analysis.traces import simt_trace
            write_timeline(args.timeline, simt_trace(r, hw.clock_hz))


def _dims(d) -> str:
    d = tuple(d)
    while len(d) > 1 and d[-1] == 1:
        d = d[:-1]
    return "x".join(map(str, d))


def sampling_note(r) -> str:
    """What a sampled run simulated, and its estimated error."""
    if not r.sampled:
        return " (every block)"
    parts = []
    for lc in r.launches:
        if not lc.sampled:
            continue
        s = lc.sampling
        what = []
        if s.get("sms", s.get("sm_count")) != s.get("sm_count"):
            what.append(f"{s['sms']} of {s['sm_count']} SMs")
        if s.get("skips"):
            what.append(f"{s['simulated_blocks']} of {s['total_blocks']} blocks")
        if "trip_caps" in s:
            what.append("loop cut at " + ", ".join(map(str, s["trip_caps"]))
                        + f" of {s['trips']} trips")
        what = ", ".join(what) or "sampled"
        err = (f"est. error {lc.estimated_error:.1%}" if lc.estimated_error is not None
               else "error not estimated")
        parts.append(f"{what}, {lc.simulated_fraction:.1%} of its work simulated, {err}")
    return " (sampled: " + "; ".join(parts) + ")"


def print_simt(r) -> None:
    """A SIMT Result's SIMT efficiency and bank-conflict passes, a line (where known)."""
    parts = []
    if r.simt_efficiency is not None:
        parts.append(f"SIMT efficiency {r.simt_efficiency:.1%} (thread instructions over 32 x "
                     "warp instructions)")
    if r.bank_conflicts is not None:
        parts.append(f"bank conflicts {r.bank_conflicts:,.0f} passes beyond one per "
                     "shared-memory instruction")
    if parts:
        print("  " + "; ".join(parts))


def print_traffic(r) -> None:
    """A SIMT Result's bytes per level and its stall cycles by cause, a line each."""
    print("  bytes: " + ", ".join(f"{k} {format_bytes(v)}" for k, v in r.bytes_by_level.items()))
    if r.stalls_by_cause:
        tot = sum(r.stalls_by_cause.values()) or 1
        print("  scheduler stall cycles: " + ", ".join(
            f"{k} {v / tot:.0%}" for k, v in r.stalls_by_cause.items() if v))
