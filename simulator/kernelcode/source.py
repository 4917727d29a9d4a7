"""A kernel's own source, line by line, with what the engine made of it: the view Nsight
Compute's source page gives of a profiled launch, here from a simulated one.

Every SASS instruction carries the PTX line it came from (``lineinfo``); numba's PTX
built with ``lineinfo=True`` (``toolchain.kernel_ptx_lines``) carries, before each
instruction, the ``.loc`` naming the Python file and line it came from. NVVM emits the
same instructions with and without that table (``python_lines`` checks, instruction by
instruction, and refuses a build that differs), so the i-th instruction of the timed PTX
came from the line the i-th instruction of the other names. Device functions inlined into
the kernel name their own lines (in their own file, if another).

``annotate`` sums the per-SASS-instruction rows of ``simulate_kernel``'s
``result.extra["sass"]`` by source line; ``render`` prints the kernel's file with them.
"""
from __future__ import annotations

import inspect
import linecache
import os
import re

from simulator.kernelcode.ptx import Instruction, parse

_FILE = re.compile(r'^\s*\.file\s+(\d+)\s+"([^"]*)"')
_LOC = re.compile(r"^\s*\.loc\s+(\d+)\s+(\d+)\s+(\d+)")

#: the per-SASS-instruction quantities summed by line (those a row has)
SUMMED = ("warp_instructions", "thread_instructions", "shared_instructions", "shared_passes",
          "stall_cycles", "l1_bytes", "l2_bytes", "dram_bytes")


def _instructions(ptx: str) -> list:
    module = parse(ptx)
    return [i for f in module.functions.values() for i in f.body if isinstance(i, Instruction)]


def python_lines(ptx: str, ptx_with_lines: str) -> dict:
    """{line of ``ptx``: (file, line)} for each instruction of ``ptx``, from the
    ``.loc`` table of ``ptx_with_lines`` (the same kernel built with it); ValueError where
    the two builds differ in their instructions."""
    mine, theirs = _instructions(ptx), _instructions(ptx_with_lines)
    if [i.opcode for i in mine] != [i.opcode for i in theirs]:
        raise ValueError("the kernel's PTX built with its line table is not the same code as "
                         f"the one timed ({len(theirs)} instructions against {len(mine)}); "
                         "no source view")
    files, loc_of_line, loc = {}, {}, None
    for n, text in enumerate(ptx_with_lines.splitlines(), 1):
        m = _FILE.match(text)
        if m:
            files[int(m.group(1))] = m.group(2)
            continue
        m = _LOC.match(text)
        if m:
            loc = (int(m.group(1)), int(m.group(2)))
            continue
        loc_of_line[n] = loc
    found = []
    for b in theirs:
        loc = loc_of_line.get(b.line)
        found.append((files[loc[0]], loc[1]) if loc is not None and loc[1] > 0
                     and loc[0] in files else None)
    _fill_unnamed(mine, found)
    return {a.line: f for a, f in zip(mine, found) if f is not None}


_REG = re.compile(r"%[A-Za-z_][\w]*")
_NO_DEST = ("st", "bra", "bar", "ret", "exit", "red", "call", "membar", "fence", "trap")


def _fill_unnamed(ins: list, found: list) -> None:
    """Lines for the instructions NVVM names line 0 (``.loc N 0``: code of no single
    line, such as the fast and slow paths of a 64-bit ``%``): the line of the first
    instruction after it that reads its result (in program order, wrapping around: a
    loop's), through chains of such instructions; a branch takes its guard's line; what
    is left, the line before it."""
    n = len(ins)
    dest = [None] * n
    reads = [()] * n
    for k, i in enumerate(ins):
        regs = [_REG.findall(o) for o in i.operands]
        if i.opcode[0] in _NO_DEST or not regs:
            reads[k] = tuple(r for rs in regs for r in rs)
        else:
            dest[k] = set(regs[0])
            reads[k] = tuple(r for rs in regs[1:] for r in rs)
        if i.guard:
            reads[k] += tuple(_REG.findall(i.guard))
    for _ in range(4):          # chains of unnamed instructions, a few deep
        changed = False
        for k in range(n):
            if found[k] is not None or not dest[k]:
                continue
            for step in range(1, n):
                j = (k + step) % n
                if dest[k] & set(reads[j]):
                    if found[j] is not None:
                        found[k] = found[j]
                        changed = True
                    break
        if not changed:
            break
    for k in range(n):
        if found[k] is None and ins[k].guard:
            g = set(_REG.findall(ins[k].guard))
            for j in range(k - 1, -1, -1):
                if dest[j] and dest[j] & g:
                    found[k] = found[j]
                    break
    last = None
    for k in range(n):
        if found[k] is None:
            found[k] = last
        last = found[k]


def annotate(sass_rows, lines: dict) -> dict:
    """{(file, line): totals} of ``sass_rows`` (``result.extra["sass"]``) by the source
    line of each one's PTX line (``lines``: ``python_lines``); instructions whose PTX
    line names none go to (None, 0); the instructions of a subroutine ptxas calls (a
    64-bit division's slow path) count at the line of the call. Each total sums ``SUMMED``
    (where the rows have
    them) and the stall cycles by cause (``stall_<cause>``), with ``instructions`` the
    SASS instructions of the line and ``simt_efficiency``."""
    out = {}
    for r in sass_rows:
        key = lines.get(r.get("ptx_line") or r.get("called_from_ptx_line"), (None, 0))
        t = out.setdefault(key, {"instructions": 0})
        t["instructions"] += 1
        for k, v in r.items():
            if v is not None and (k in SUMMED or k.startswith("stall_")):
                t[k] = t.get(k, 0.0) + float(v)
    for t in out.values():
        w = t.get("warp_instructions", 0.0)
        t["simt_efficiency"] = (t["thread_instructions"] / (32 * w)
                                if w and "thread_instructions" in t else None)
    return out


def kernel_lines(kernel) -> tuple:
    """(file, first line, last line) of a numba kernel's Python function."""
    fn = getattr(kernel, "py_func", kernel)
    src, first = inspect.getsourcelines(fn)
    return os.path.abspath(inspect.getsourcefile(fn)), first, first + len(src) - 1


def _count(v) -> str:
    if v is None:
        return ""
    if v >= 1e9:
        return f"{v / 1e9:.1f}G"
    if v >= 1e6:
        return f"{v / 1e6:.1f}M"
    if v >= 1e4:
        return f"{v / 1e3:.0f}k"
    return f"{v:,.0f}"


def _bytes(v) -> str:
    if not v:
        return ""
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if v >= size:
            return f"{v / size:.1f}{unit}"
    return f"{v:.0f}B"


HEADER = ("line", "warp inst", "SIMT", "stall cyc", "top stall", "shared", "conflict",
          "L1", "L2", "DRAM")


def _cells(t) -> list:
    if t is None:
        return [""] * (len(HEADER) - 1)
    stalls = {k[6:]: v for k, v in t.items() if k.startswith("stall_") and k != "stall_cycles"}
    total = t.get("stall_cycles", sum(stalls.values()) if stalls else None)
    top = ""
    if stalls and total:
        cause, v = max(stalls.items(), key=lambda kv: kv[1])
        top = f"{cause} {v / total:.0%}" if v else ""
    eff = t.get("simt_efficiency")
    passes, shared = t.get("shared_passes"), t.get("shared_instructions")
    return [_count(t.get("warp_instructions")), "" if eff is None else f"{eff:.0%}",
            _count(total) if total else "", top, _count(passes) if passes else "",
            _count(passes - shared) if passes and shared is not None else "",
            _bytes(t.get("l1_bytes")), _bytes(t.get("l2_bytes")), _bytes(t.get("dram_bytes"))]


def render(totals: dict, kernel, context: int = 0) -> str:
    """The kernel's Python function line by line, each with its totals (``annotate``),
    then the lines of other functions or files that have instructions (device functions,
    numba's own code), and the instructions with no line."""
    path, first, last = kernel_lines(kernel)
    rows = []
    shown = set()
    for n in range(first, last + 1):
        t = totals.get((path, n))
        rows.append([str(n), *_cells(t), linecache.getline(path, n).rstrip("\n")])
        shown.add((path, n))
    others = sorted((k for k in totals if k not in shown and k[0] is not None),
                    key=lambda k: (k[0] != path, k[0], k[1]))
    if others:
        rows.append(["", *[""] * (len(HEADER) - 1), ""])
    for f, n in others:
        where = f"{n}" if f == path else f"{os.path.basename(f)}:{n}"
        rows.append([where, *_cells(totals[(f, n)]), linecache.getline(f, n).rstrip("\n")])
    if (None, 0) in totals:
        rows.append(["?", *_cells(totals[(None, 0)]), "(instructions with no source line)"])
    widths = [max(len(HEADER[i]) if i < len(HEADER) else 0, *(len(r[i]) for r in rows))
              for i in range(len(HEADER))]
    head = "  ".join(h.rjust(w) for h, w in zip(HEADER, widths)) + "  source"
    lines = [head]
    for r in rows:
        lines.append("  ".join(c.rjust(w) for c, w in zip(r, widths)) + "  " + r[-1])
    return "\n".join(lines)


def source_view(result, kernel, args, hw) -> str:
    """``render`` of a ``simulate_kernel`` Result of ``kernel`` launched with ``args`` on
    ``hw``."""
    from simulator.kernelcode import toolchain as tc
    cc = tc.cc_of(hw)
    ptx = tc.kernel_ptx(kernel, args, cc).ptx
    lines = python_lines(ptx, tc.kernel_ptx_lines(kernel, args, cc))
    return render(annotate(result.extra["sass"], lines), kernel)
