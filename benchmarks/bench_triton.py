"""Triton kernels torch.compile generated, timed from their own PTX on the any-kernel path,
beside the durations the profiler recorded for them on the H100
(data/traces/h100-sxm/: ResNet-50 at batch 8 compiled with torch.compile, its Triton
cache and Inductor's wrapper; ``simulator.kernelcode.inductor``). Prints figures; not a
pass/fail test.

The durations are the profiler's, one forward (each launch once, L2 as the forward left
it): not a harness measurement (medians over repeats behind a spin kernel). Kernels
with tensor-core instructions (``mma``, ``wgmma``) are listed as out of scope, not
predicted, and kernels with an instruction the emulator does not run yet would be listed
with it. Each distinct (kernel, grid) is simulated once, sampled,
with the L2 warm (``--l2 warm``, the default: the forward's activations are written just
before) or cold (``--l2 cold``), compile cached after the first; or (``--l2 sequence``)
the forward's launches as one engine run, each finding in the L2 what the launches
before it left (one array a buffer, shared by the launches that take it). Predictions include the
preset's GPU-side launch cost, as every time suite's do; the profiler's durations are the
kernels' own.

    python3 benchmarks/bench_triton.py [--l2 warm|cold|sequence] [--json FILE]
"""
from __future__ import annotations

import json
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT]

import simulator as rs  # noqa: E402
from simulator.kernelcode.inductor import launches  # noqa: E402
from simulator.kernelcode.ptx import PTXError  # noqa: E402
from simulator.kernelcode.timing import simulate_kernel, simulate_launches  # noqa: E402

DATA = os.path.join(ROOT, "data", "traces", "h100-sxm")


def main(argv):
    out = argv[argv.index("--json") + 1] if "--json" in argv else None
    l2 = argv[argv.index("--l2") + 1] if "--l2" in argv else "warm"
    hw = rs.load_hardware("h100-sxm")
    ls = launches(os.path.join(DATA, "triton_resnet50_b8.tar.gz"),
                  os.path.join(DATA, "torch_resnet50_b8_compiled.json"))
    done, rows = {}, []
    t_all = time.perf_counter()
    if l2 == "sequence":
        done = _sequence(ls, hw)
    for pos, lau in enumerate(ls):
        key = pos if l2 == "sequence" else (lau.name, lau.grid, lau.block)
        if key not in done:
            if "mma" in lau.ptx:
                done[key] = (None, 0.0, "tensor-core instructions (mma/wgmma): out of scope")
            else:
                t = time.perf_counter()
                try:
                    r = simulate_kernel(lau.ptx, lau.grid, lau.block, lau.args, hw=hw, name=lau.name,
                                        l2=l2, shared_bytes=lau.shared_bytes)
                    done[key] = (r.seconds + hw.kernel_launch_s, time.perf_counter() - t, "")
                except PTXError as e:         # an instruction the emulator has not yet
                    done[key] = (None, 0.0, "not run: " + str(e).split(": ", 1)[-1][:70])
        pred, wall, note = done[key]
        rows.append({"kernel": lau.name, "grid": list(lau.grid), "block": list(lau.block),
                     "traced_us": lau.traced_seconds * 1e6,
                     "predicted_us": pred * 1e6 if pred is not None else None,
                     "error": pred / lau.traced_seconds - 1 if pred is not None else None,
                     "wall_s": wall, "note": note})
    print(f"{'kernel':60s} {'grid':>8s} {'traced us':>10s} {'predicted':>10s} {'error':>7s}")
    for r in rows:
        p = f"{r['predicted_us']:10.2f} {r['error']:+7.1%}" if r["predicted_us"] is not None else r["note"]
        print(f"{r['kernel'][-60:]:60s} {r['grid'][0]:8d} {r['traced_us']:10.2f} {p}")
    errs = [abs(r["error"]) for r in rows if r["error"] is not None]
    big = [abs(r["error"]) for r in rows if r["error"] is not None and r["traced_us"] >= 5]
    walls = [w for _, w, _ in done.values() if w]
    skipped = [r for r in rows if r["predicted_us"] is None]
    if skipped:
        print(f"not predicted: {len(skipped)} launches, {sum(r['traced_us'] for r in skipped):.1f} us "
              "traced (the reason in each row)")
    print(f"{len(rows)} launches, {len(done)} distinct; MAPE {statistics.mean(errs):.1%} "
          f"(median |error| {statistics.median(errs):.1%}); on the {len(big)} of 5 us or more: "
          f"{statistics.mean(big):.1%}; traced total {sum(r['traced_us'] for r in rows):.1f} us, "
          f"predicted {sum(r['predicted_us'] or 0 for r in rows):.1f} us")
    print(f"wall: median {statistics.median(walls):.2f} s a distinct launch, "
          f"{time.perf_counter() - t_all:.0f} s in all")
    if out:
        with open(out, "w") as f:
            json.dump({"rows": rows}, f, indent=1)


def _sequence(ls, hw) -> dict:
    """Every launch the emulator runs, in the forward's order, as one engine run: each
    finds in the L2 what the launches before it left (the first the L2 cold). Keyed by
    the launch's position; a launch left out (tensor cores, an instruction not run yet)
    with its reason."""
    from simulator.kernelcode.decode import decode
    from simulator.kernelcode.ptx import parse
    out, todo, why = {}, [], {}
    for i, lau in enumerate(ls):
        if "mma" in lau.ptx:
            out[i] = (None, 0.0, "tensor-core instructions (mma/wgmma): out of scope")
            continue
        if (lau.name, lau.ptx) not in why:
            try:                         # an instruction the emulator does not run yet
                decode(parse(lau.ptx), lau.name)
                why[(lau.name, lau.ptx)] = ""
            except PTXError as e:
                why[(lau.name, lau.ptx)] = "not run: " + str(e).split(": ", 1)[-1][:70]
        if why[(lau.name, lau.ptx)]:
            out[i] = (None, 0.0, why[(lau.name, lau.ptx)])
        else:
            todo.append(i)
    t = time.perf_counter()
    r = simulate_launches([(ls[i].ptx, ls[i].grid, ls[i].block, ls[i].args, ls[i].name,
                            ls[i].shared_bytes) for i in todo], hw=hw, l2="cold")
    wall = (time.perf_counter() - t) / max(1, len(todo))
    for i, lr in zip(todo, r.launches):
        out[i] = (lr.cycles / hw.clock_hz + hw.kernel_launch_s, wall, "")
    return out


if __name__ == "__main__":
    main(sys.argv[1:])
