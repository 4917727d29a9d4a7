"""Which PTX instruction each SASS instruction came from.

ptxas keeps a PTX program's ``.loc`` line table through its optimisations when asked
for ``-lineinfo`` (debug information only: the code it emits is the same), and nvdisasm
``-g`` prints it beside the SASS. ``tagged_ptx`` writes a ``.loc`` naming the PTX's own
line before every instruction of the PTX (any ``.loc`` and ``.file`` it had are
dropped), so that ``toolchain.sass_lines`` reads, for every SASS instruction, the PTX line it was
compiled from: the map by which a warp's path through the PTX becomes its path through
the SASS (``sassmap``). ``sass_lines`` checks that the tagged build is the same code as
the untagged one and raises where it is not.
"""
from __future__ import annotations

import re

from simulator.kernelcode.ptx import Instruction, parse

#: the file name the tags' ``.file`` directive gives
TAG_FILE = "roofsim-ptx-lines"

_LOC = re.compile(r"^\s*//##\s*File\s+\"([^\"]*)\",\s*line\s+(\d+)")
_INSTR = re.compile(r"^\s*/\*([0-9a-fA-F]+)\*/")
_DROP = re.compile(r"^\s*\.(loc|file)\b")
_USED = re.compile(r"Used (\d+) registers")
_SMEM = re.compile(r"(\d+) bytes smem")


def instruction_lines(ptx: str) -> set:
    """The lines on which the PTX's instructions start (every function's)."""
    module = parse(ptx)
    return {item.line for f in module.functions.values() for item in f.body
            if isinstance(item, Instruction)}


def tagged_ptx(ptx: str) -> str:
    """``ptx`` with ``.loc 1 L 0`` before each line L where an instruction starts, its
    own ``.loc``/``.file`` lines blanked (line numbers unchanged) and a ``.file 1``
    directive after ``.address_size`` (or ``.target``)."""
    starts = instruction_lines(ptx)
    out, filed = [], False
    lines = ptx.split("\n")
    anchor = next((k for k, ln in enumerate(lines) if ln.strip().startswith(".address_size")),
                  next((k for k, ln in enumerate(lines) if ln.strip().startswith(".target")),
                       None))
    if anchor is None:
        raise ValueError("the PTX has no .target directive")
    for k, line in enumerate(lines, start=1):
        if _DROP.match(line):
            out.append("")
            continue
        if k in starts:
            out.append(f"\t.loc\t1 {k} 0")
        out.append(line)
        if k - 1 == anchor and not filed:
            out.append(f'\t.file\t1 "{TAG_FILE}"')
            filed = True
    return "\n".join(out)


def read_lines(listing: str, entry: str) -> dict:
    """{SASS pc: PTX line} from nvdisasm ``-g``'s listing of function ``entry``: each
    instruction takes the line of the last ``//## File`` comment before it in its
    section (0 before any)."""
    out, line, inside = {}, 0, False
    for text in listing.splitlines():
        if text.startswith("//-") and ".text." in text:
            inside = text.split(".text.", 1)[1].split()[0].rstrip("-") == entry
            line = 0
            continue
        if not inside:
            continue
        m = _LOC.match(text)
        if m:
            line = int(m.group(2)) if m.group(1) == TAG_FILE else 0
            continue
        m = _INSTR.match(text)
        if m:
            out[int(m.group(1), 16)] = line
    return out


def resources(verbose: str) -> tuple:
    """(registers per thread, static shared bytes per block) from ptxas -v's report."""
    regs = _USED.search(verbose)
    smem = _SMEM.search(verbose)
    return (int(regs.group(1)) if regs else 0), (int(smem.group(1)) if smem else 0)
