"""``roofsim emulate FILE.py:LAUNCHER``: a user's numba.cuda kernel run on this CPU from
its PTX (``simulator.kernelcode``), with what it executed."""
from __future__ import annotations

import argparse

import numpy as np

from ..options import add_hw, add_launcher_args, launcher_args, load_hw, one_dims, positive_int
from ..outputs import write_json
from . import BY_NAME

NEEDS = ("engine",)

EXAMPLES = """examples:
  roofsim emulate examples/kernels.py:launch_block_sum
  roofsim emulate examples/kernels.py:launch_transpose --block 32x8 --top 5
  roofsim emulate examples/kernels.py:launch_softmax --hw gtx480 --json em.json --save out.npz
"""


class _Launcher(argparse.Action):
    """The positional FILE.py:LAUNCHER; its file part is an input (no output may
    overwrite it)."""

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, values)
        namespace.launcher_file = values.rpartition(":")[0] if ":" in values else values


def add_emulate(sub):
    p = sub.add_parser("emulate", help=BY_NAME["emulate"].help,
                       description="Run a numba.cuda kernel on this CPU from its PTX, as "
                       "kernel[grid, block](*args) would on a GPU: compiled with NVIDIA's "
                       "compilers from PyPI (no GPU, no CUDA toolkit), executed warp by warp. "
                       "LAUNCHER is a function in FILE.py, def launch(grid=None, "
                       "block=None), returning (kernel, grid, block, args).",
                       epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("launcher", metavar="FILE.py:LAUNCHER", action=_Launcher,
                   help="a Python file and the function in it that returns (kernel, grid, "
                   "block, args)")
    add_hw(p, required=False)
    p.add_argument("--grid", help="blocks, passed to the launcher (e.g. 64 or 16x16)")
    p.add_argument("--block", help="threads per block, passed to the launcher (e.g. 256 "
                   "or 32x8)")
    add_launcher_args(p)
    p.add_argument("--top", type=positive_int("top", minimum=0), default=10,
                   help="list the N most executed PTX instructions (default 10; 0: none)")
    p.add_argument("--json", metavar="FILE", help="the summary and every PTX "
                   "instruction's counts")
    p.add_argument("--save", metavar="FILE.npz", help="the launch's arrays after it")
    p.set_defaults(func=run, launcher_file=None)


def run(args):
    from simulator.kernelcode.launch import emulate_kernel
    from simulator.kernelcode.toolchain import cc_of
    from simulator.kernelcode.userfile import call_launcher
    cc = (9, 0)
    hw_name = None
    if args.hw:
        hw = load_hw(args, "simt", " (emulation compiles for a GPU's compute capability; "
                     "try gtx480, v100, h100-sxm)")
        cc, hw_name = cc_of(hw), hw.name
    grid, block = one_dims(args.grid, "--grid"), one_dims(args.block, "--block")
    kernel, grid, block, kargs = call_launcher(args.launcher, grid, block, launcher_args(args.arg))
    before = [a.copy() if isinstance(a, np.ndarray) else None for a in kargs]
    bar = _Blocks()
    try:
        res = emulate_kernel(kernel, grid, block, kargs, cc=cc, progress=bar)
    finally:
        bar.close()
    print(f"{res.kernel} emulated from its PTX (cc {cc[0]}.{cc[1]}"
          f"{', ' + hw_name if hw_name else ''}): grid {_dims(res.grid)}, block "
          f"{_dims(res.block)}")
    print(f"  {res.instructions:,} PTX warp-instructions ({res.thread_instructions:,} "
          f"thread-instructions), SIMT efficiency {res.simt_efficiency:.1%}")
    print(f"  emulated in {res.wall_seconds:.2f} s ({res.rate / 1e6:.2f} M "
          "warp-instructions/s)")
    changed = []
    for i, (a, b) in enumerate(zip(kargs, before)):
        if b is not None:
            same = np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")
            if not same:
                changed.append(i)
            print(f"  args[{i}]: {a.dtype} {tuple(a.shape)}"
                  f"{'' if same else ', written'}"
                  + (f", sum {a.astype(np.float64).sum():.6g}" if a.dtype.kind in "fiub"
                     and a.size else ""))
    if args.top:
        top = sorted(res.per_instruction, key=lambda r: -r[2])[:args.top]
        print(f"  most executed PTX instructions (of {len(res.per_instruction)}):")
        print(f"  {'warp execs':>12} {'active':>7}  {'line':>5}  instruction")
        for line, text, warps, threads in top:
            print(f"  {warps:>12,} {threads / (32 * warps):>7.0%}  {line:>5}  {text}")
    if args.json:
        write_json(args.json, {
            "kernel": res.kernel, "cc": f"{cc[0]}.{cc[1]}", "hardware": hw_name,
            "grid": list(res.grid), "block": list(res.block),
            "instructions": res.instructions,
            "thread_instructions": res.thread_instructions,
            "simt_efficiency": res.simt_efficiency, "wall_seconds": res.wall_seconds,
            "written_args": changed,
            "per_instruction": [{"line": ln, "ptx": t, "warp_executions": w,
                                 "thread_executions": th}
                                for ln, t, w, th in res.per_instruction]})
    if args.save:
        np.savez(args.save, **{f"arg{i}": a for i, a in enumerate(kargs)
                               if isinstance(a, np.ndarray)})
        print(f"wrote {args.save}")


class _Blocks:
    """Blocks emulated so far: a tqdm bar on a terminal, off one a line on stderr every
    NOTE_EVERY_S seconds of a long launch."""

    def __init__(self):
        import sys
        import time
        self.sys, self.time = sys, time
        self.t0 = time.perf_counter()
        self.bar = None
        from simulator.parallel import NOTE_EVERY_S
        self.every = NOTE_EVERY_S
        self.next_note = self.t0 + NOTE_EVERY_S

    def __call__(self, done, total):
        if self.sys.stderr.isatty():
            if self.bar is None:
                from tqdm import tqdm
                self.bar = tqdm(total=total, desc="emulate", unit="block",
                                file=self.sys.stderr, dynamic_ncols=True, leave=False)
            self.bar.update(done - self.bar.n)
        elif self.time.perf_counter() >= self.next_note:
            print(f"  emulate, blocks: {done} of {total} done "
                  f"({self.time.perf_counter() - self.t0:.0f} s)", file=self.sys.stderr,
                  flush=True)
            self.next_note = self.time.perf_counter() + self.every

    def close(self):
        if self.bar is not None:
            self.bar.close()


def _dims(d) -> str:
    d = tuple(d)
    while len(d) > 1 and d[-1] == 1:
        d = d[:-1]
    return "x".join(map(str, d))
