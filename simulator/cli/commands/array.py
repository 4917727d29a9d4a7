"""``roofsim simulate array``: the cycle-level systolic array multiplying your matrices (or
a random GEMM), every PE register labelled with the element of C = A @ B it holds, cycle
by cycle, as text and as an animation (for teaching)."""
from __future__ import annotations

import argparse
import os
import re

EXAMPLES = """examples:
  roofsim simulate array --dataflow ws --a "1 2 3; 4 5 6" --b "1 0; 0 1; 1 1"
  roofsim simulate array --dataflow os --array 4x4 --workload gemm:4x4x4 --cycles 0-5
  roofsim simulate array --dataflow is --array 2x3 --a "1 -2 3; 4 5 6" --b "1 0; 0 1; 1 1" --values
  roofsim simulate array --dataflow ws --workload gemm:4x4x4 --cycles none --animate ws.gif

Matrices: --a and --b take a literal, rows separated by ';' and numbers by spaces or
commas ("1 2 3; 4 5 6" is 2x3), or a file: FILE.npy (numpy), FILE.csv (comma-separated
rows) or FILE.txt (whitespace-separated rows).
"""

DESCRIPTION = (
    "Run C = A @ B on a small systolic array register by register and show it cycle by "
    "cycle: each PE's registers labelled with the element they hold (A[i,k], B[k,j], "
    "C[i,j] n/K: a sum of n of its K terms), the PEs doing a MAC and the registers it used "
    "(*), the operands entering at the left and top edges, the weight-stationary preload "
    "chain, and what leaves at the bottom; then the cycles (against the closed form), the "
    "MACs and C checked against numpy. See docs/systolic_teaching.md.")

SUFFIXES = (".npy", ".csv", ".txt")
_NUMBER = re.compile(r"[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")
MAX_LITERAL = 10_000     # characters of a matrix typed on the command line


def add_array(sim):
    """``simulate array`` under the ``simulate`` subcommands ``sim``."""
    p = sim.add_parser("array", help="the systolic array cycle by cycle on your matrices, "
                       "every register labelled (for teaching)", description=DESCRIPTION,
                       epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dataflow", choices=("os", "ws", "is"), default="ws",
                   help="output-, weight- or input-stationary (default ws)")
    p.add_argument("--array", metavar="RxC", default="4x4",
                   help="PE rows x columns (default 4x4; the views draw up to 16x16)")
    p.add_argument("--a", metavar="MATRIX", help='A (M x K): "1 2 3; 4 5 6", or FILE.npy, '
                   "FILE.csv or FILE.txt")
    p.add_argument("--b", metavar="MATRIX", help="B (K x N), as --a")
    p.add_argument("--workload", metavar="W", help="instead of --a and --b: random small "
                   "integers for one op, e.g. gemm:4x4x4 (M x N x K) or conv:n=..,c=..")
    p.add_argument("--seed", type=int, default=0, help="--workload's random operands (default 0)")
    p.add_argument("--cycles", default="all", metavar="A-B|N|all|none",
                   help="the cycles to print: a range (0-5), one cycle, all (default), or none "
                        "(no view: the run is not recorded, so any size runs)")
    p.add_argument("--values", action="store_true", help="show each register's value too")
    p.add_argument("--animate", metavar="FILE.gif|FILE.html",
                   help="write an animation, one frame per cycle: a GIF, or an HTML page with "
                        "a player")
    p.add_argument("--fps", type=float, default=2.0, help="--animate's frames per second "
                   "(default 2)")
    p.set_defaults(func=run, in_thread=True)


# ---------------------------------------------------------------- matrices

def parse_matrix(text: str, flag: str):
    """A literal ("1 2; 3 4") or a .npy / .csv / .txt file -> a list of rows, or an array."""
    import numpy as np
    if text.lower().endswith(SUFFIXES) or os.path.isfile(text):
        if not text.lower().endswith(SUFFIXES):
            raise ValueError(f"{flag} {text!r}: a file must end in .npy, .csv or .txt")
        if not os.path.isfile(text):
            raise ValueError(f"{flag} {text!r}: no such file")
        try:
            if text.lower().endswith(".npy"):
                return np.load(text, allow_pickle=False)
            return np.loadtxt(text, delimiter="," if text.lower().endswith(".csv") else None,
                              ndmin=2)
        except (OSError, ValueError, EOFError) as e:
            raise ValueError(f"{flag} {text!r}: cannot read it as a matrix "
                             f"({str(e).splitlines()[0] if str(e) else type(e).__name__})") from None
    if len(text) > MAX_LITERAL:
        raise ValueError(f"{flag}: a literal of {len(text):,} characters; at most "
                         f"{MAX_LITERAL:,} (use a .npy, .csv or .txt file)")
    rows = []
    for n, line in enumerate(re.split(r"[;\n]", text.strip().rstrip(";")), 1):
        items = [x for x in re.split(r"[\s,]+", line.strip()) if x]
        if not items:
            raise ValueError(f"{flag} {text!r}: row {n} is empty; write rows separated by ';' "
                             'and numbers by spaces, e.g. "1 2; 3 4"')
        row = []
        for x in items:
            if not _NUMBER.fullmatch(x):
                raise ValueError(f"{flag} {text!r}: {x!r} is not a number; write rows "
                                 "separated by ';' and numbers by spaces, e.g. \"1 2; 3 4\"")
            row.append(int(x) if re.fullmatch(r"[-+]?[0-9]+", x) else float(x))
        if rows and len(row) != len(rows[0]):
            raise ValueError(f"{flag} {text!r}: row {n} has "
                             f"{len(row)} number{'s' if len(row) != 1 else ''}, row 1 has "
                             f"{len(rows[0])}; every row needs as many")
        rows.append(row)
    return rows


def parse_cycles(text: str):
    """"all" -> None, "none" -> False, "N" -> range(N, N+1), "A-B" -> range(A, B+1)."""
    t = text.strip().lower()
    if t == "all":
        return None
    if t == "none":
        return False
    m = re.fullmatch(r"([0-9]{1,9})(?:\s*-\s*([0-9]{1,9}))?", t)
    if not m or (m.group(2) and int(m.group(2)) < int(m.group(1))):
        raise ValueError(f"--cycles {text!r}: a range A-B (0-5), one cycle (3), all or none")
    a = int(m.group(1))
    return range(a, int(m.group(2) or a) + 1)


def _check_animation_path(path):
    from pathlib import Path
    if not path.lower().endswith((".gif", ".html")):
        raise ValueError(f"--animate {path!r}: the file must end in .gif or .html")
    p = Path(path)
    if p.is_dir():
        raise ValueError(f"--animate {path!r}: is a folder, not a file")
    folder = p.resolve().parent
    if not folder.is_dir():
        raise ValueError(f"--animate {path!r}: folder {str(folder)!r} does not exist")
    if not os.access(folder, os.W_OK):
        raise ValueError(f"--animate {path!r}: folder {str(folder)!r} is not writable")


def _flags(message: str) -> str:
    """The API's argument names in the command line's terms."""
    message = re.sub(r"^record=True: ", "", message)
    message = message.replace("or record=False", "or --cycles none")
    message = re.sub(r"^op=", "--workload ", message)
    message = re.sub(r"\ba \((\d+x\d+)\) and b \((\d+x\d+)\)", r"--a (\1) and --b (\2)", message)
    message = re.sub(r"^([ab])=", r"--\1 ", message)
    return message


# ---------------------------------------------------------------- the command

def run(args):
    from simulator.api import systolic_animation, systolic_array_run, systolic_text
    from simulator.arguments import dims_text
    from simulator.systolic import fold_timing

    shape = dims_text(args.array, 2)
    if shape is None:
        raise ValueError(f"--array {args.array!r}: expected ROWSxCOLS with positive integers, "
                         "e.g. 4x4")
    matrices = args.a is not None or args.b is not None
    if matrices and args.workload:
        raise ValueError("--workload and --a/--b: give random operands (--workload) or your "
                         "matrices (--a and --b), not both")
    if not matrices and not args.workload:
        raise ValueError("give --a and --b (your matrices), or --workload (e.g. gemm:4x4x4)")
    if matrices and (args.a is None or args.b is None):
        raise ValueError(f"{'--b' if args.b is None else '--a'} is missing: give both --a "
                         "(M x K) and --b (K x N)")
    if args.seed < 0:
        raise ValueError(f"--seed {args.seed}: must be >= 0")
    if not args.fps > 0 or args.fps > 100:
        raise ValueError(f"--fps {args.fps:g}: frames per second from just above 0 to 100")
    cycles = parse_cycles(args.cycles)
    record = cycles is not False or bool(args.animate)
    if args.animate:
        _check_animation_path(args.animate)
    kw = dict(dataflow=args.dataflow, rows=shape[0], cols=shape[1], record=record)
    try:
        if matrices:
            a, b = parse_matrix(args.a, "--a"), parse_matrix(args.b, "--b")
            r = systolic_array_run(a=a, b=b, **kw)
        else:
            r = systolic_array_run(args.workload, seed=args.seed, **kw)
    except ValueError as e:
        raise ValueError(_flags(str(e))) from None
    if cycles is not False:
        if cycles is not None and (cycles.start >= r.cycles or cycles[-1] >= r.cycles):
            raise ValueError(f"--cycles {args.cycles!r}: the run has cycles 0 to {r.cycles - 1}")
        try:
            print(systolic_text(r, cycles, values=args.values))
        except ValueError as e:
            raise ValueError(f"--array {args.array}: {str(e).removeprefix('run: ')}; use "
                             "--cycles none") from None
    L = r.lowered
    M, N, K = L.mnk
    closed = fold_timing(L)[2]
    print(f"{L.dataflow} on a {L.rows}x{L.cols} array, C ({M}x{N}) = A ({M}x{K}) @ B ({K}x{N}):")
    print(f"  cycles: {r.cycles} (closed form: {closed})")
    print(f"  MACs: {r.macs} (M x N x K = {M} x {N} x {K} = {M * N * K})")
    check = ("equals numpy's A @ B exactly" if r.exact else "equals numpy's A @ B to 1e-9") \
        if r.correct else "DIFFERS from numpy's A @ B"
    print(f"  C: {check}")
    if M <= 12 and N <= 12:
        import numpy as np
        body = np.array2string(r.output.astype(np.int64) if r.exact else r.output,
                               precision=4, suppress_small=True)
        print("  C =\n" + "\n".join("    " + line for line in body.splitlines()))
    if args.animate:
        n = systolic_animation(r, args.animate, fps=args.fps, values=args.values)
        print(f"wrote {args.animate} ({n} frames, one per cycle)")
    if not r.correct:
        raise RuntimeError("the array's result differs from numpy's")
