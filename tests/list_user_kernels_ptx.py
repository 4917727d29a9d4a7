"""Compile every kernel of ``tests/user_kernels.py`` to PTX without a GPU (real
numba-cuda through ``simulator.kernelcode.toolchain.kernel_ptx``, not the CUDA simulator)
and list the PTX the emulator must run: the distinct opcodes with their modifiers, the
state-space declarations and the special registers, each with the kernels that use it.

    PYTHONPATH=. python tests/list_user_kernels_ptx.py [OUT.txt] [--cc 9.0] [--dump DIR]

Exits 1 if any kernel does not compile. Not collected by pytest (no ``test_`` prefix).
"""
import argparse
import collections
import os
import re
import sys

if os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0"):
    sys.exit("unset NUMBA_ENABLE_CUDASIM: PTX needs the real numba.cuda compiler")

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from simulator.kernelcode.toolchain import kernel_ptx  # noqa: E402
from tests.user_kernels import CASES  # noqa: E402

DECLARATION_KEYWORDS = (".visible", ".extern", ".weak", ".common", ".global", ".shared",
                        ".local", ".const")


def survey(ptx: str):
    """(opcodes, declarations, special registers) of one PTX text, as sets of strings."""
    opcodes, decls, sregs = set(), set(), set()
    for raw in ptx.splitlines():
        line = raw.split("//")[0].strip()
        if not line or line.endswith(":") or line in ("{", "}", "(", ")"):
            continue
        sregs.update(re.findall(r"%(?:tid|ntid|ctaid|nctaid|laneid|warpid|lanemask_\w+|"
                                r"clock\w*|smid|nsmid|gridid|SPL?)(?:\.[xyz])?\b", line))
        if line.startswith("."):
            words = line.split()
            if words[0] in DECLARATION_KEYWORDS:
                # keep the directives and alignment, drop the symbol's name and size
                kept = []
                for w in words:
                    if w.startswith(".") or w.isdigit():
                        kept.append(w)
                    else:
                        break
                if line.rstrip(";").endswith("[]"):
                    kept.append("<name>[]")
                decls.add(" ".join(kept))
            continue
        if line.startswith("@"):            # a guard predicate: @%p1 bra ...
            line = line.split(None, 1)[1]
        opcodes.add(line.split()[0].rstrip(";"))
    return opcodes, decls, sregs


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", nargs="?", default="ptx_opcodes.txt")
    ap.add_argument("--cc", default="9.0")
    ap.add_argument("--dump", help="write each kernel's PTX into this folder")
    a = ap.parse_args(argv)
    cc = tuple(int(x) for x in a.cc.split("."))
    tables = [collections.defaultdict(set) for _ in range(3)]
    failures = []
    for case in CASES:
        grid, block, args, shared = case.setup(np.random.default_rng(0))
        try:
            compiled = kernel_ptx(case.kernel, args, cc=cc)
        except ValueError as e:
            failures.append(case.name)
            print(f"FAIL {case.name}: {e}")
            continue
        print(f"ok   {case.name}")
        if a.dump:
            os.makedirs(a.dump, exist_ok=True)
            with open(os.path.join(a.dump, case.name + ".ptx"), "w") as f:
                f.write(compiled.ptx)
        for table, found in zip(tables, survey(compiled.ptx)):
            for item in found:
                table[item].add(case.name)
    titles = ("opcodes (with modifiers)", "declarations (state spaces)", "special registers")
    with open(a.out, "w") as f:
        f.write(f"# PTX of tests/user_kernels.py's {len(CASES)} kernels, cc {a.cc}: "
                "item <tab> number of kernels <tab> the kernels\n")
        f.write("# no 'call' means every device and libdevice function was inlined\n")
        for title, table in zip(titles, tables):
            f.write(f"\n## {title}: {len(table)}\n")
            for item in sorted(table):
                f.write(f"{item}\t{len(table[item])}\t{','.join(sorted(table[item]))}\n")
    print(f"{len(CASES) - len(failures)} of {len(CASES)} compiled; list in {a.out}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
