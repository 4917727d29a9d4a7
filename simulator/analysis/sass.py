"""Reading the SASS the resources suite records: the instructions a thread executes.

``fast_path(text)`` follows a kernel's SASS (``nvdisasm`` text, as ``inspect_sass``
gives it) from its first instruction to an ``EXIT``, the way a thread runs it when every
64-bit integer division takes the hardware's 32-bit fast path (operands below 2**32, as
all of this project's sizes are) and no loop repeats:

* an unconditional ``BRA`` is followed;
* a conditional forward ``BRA`` is taken when the code it jumps over reaches a ``CALL``
  (the slow-path division routine) before any other branch, else it falls through;
* a backward ``BRA`` (a loop's back edge) falls through, so each loop body counts once;
* a predicated ``EXIT`` falls through; the first unpredicated one ends the path.

The program templates of ``simulator.simt.kernels`` are written from these paths; the
tests compare their instruction counts with the SASS the H100 compiled.
"""
from __future__ import annotations

import re
from collections import Counter

_INSTR = re.compile(r"\s*/\*([0-9a-f]{4,})\*/\s*(.*?)\s*;")
_LABEL = re.compile(r"\s*(\.L_x_\d+):")
_BRA = re.compile(r"(@!?U?P\w+\s+)?BRA\s+(?:!?U?P\w+,\s*)?`\((\.L_x_\d+)\)")
SFU_PREFIXES = ("MUFU", "I2F", "F2I")


def parse(text: str):
    """(instructions, {label: index of the instruction after it}) of the first kernel."""
    ins, labels = [], {}
    for line in text.splitlines():
        m = _INSTR.match(line)
        if m:
            ins.append(m.group(2))
            continue
        m = _LABEL.match(line)
        if m:
            labels[m.group(1)] = len(ins)
    return ins, labels


def _word(instr: str) -> str:
    return instr.split()[1] if instr.startswith("@") else instr.split()[0]


def opcode(instr: str) -> str:
    """The opcode of one instruction, without its predicate or modifiers: ``IMAD``."""
    return _word(instr).split(".")[0]


def fast_path(text: str) -> list[tuple[int, str]]:
    """[(index, instruction)] along the fast path (see the module doc)."""
    ins, labels = parse(text)
    if not ins:
        raise ValueError("no SASS instructions found in the text")
    pc, path = 0, []
    while pc < len(ins):
        i = ins[pc]
        path.append((pc, i))
        if i.startswith("EXIT"):
            break
        m = _BRA.match(i)
        if m:
            if m.group(2) not in labels:
                raise ValueError(f"branch to unknown label {m.group(2)} at instruction {pc}")
            tgt = labels[m.group(2)]
            if not m.group(1):
                if tgt <= pc:
                    raise ValueError(f"unconditional backward branch at instruction {pc}")
                pc = tgt
                continue
            if tgt > pc:
                ahead = [x for x in ins[pc + 1:tgt] if "CALL" in x or "BRA" in x or "EXIT" in x]
                if ahead and "CALL" in ahead[0]:
                    pc = tgt
                    continue
        pc += 1
    return path


def loops(text: str) -> list[tuple[int, int]]:
    """(first, last) instruction index of each loop: a backward branch's target and itself."""
    ins, labels = parse(text)
    out = []
    for pc, i in enumerate(ins):
        m = _BRA.match(i)
        if m and m.group(2) in labels and labels[m.group(2)] < pc and labels[m.group(2)] != pc:
            out.append((labels[m.group(2)], pc))
    return out


def classes(instrs) -> Counter:
    """Counts by the engine's opcodes (``simulator.simt.isa``): LDG, STG, LDS, STS, BAR,
    FFMA, BRA (EXIT counts as one), SFU (MUFU, I2F, F2I), IMAD (IMAD and the HFMA2.MMA
    moves, on the FP32 pipe), IMADW (IMAD.WIDE, two passes of that pipe), UNI (the
    uniform datapath: U* and S2UR) and ALU (the rest: integer, compare, select, move,
    barrier-sync bookkeeping, constant loads)."""
    c = Counter()
    for i in instrs:
        op = opcode(i)
        if op in ("LDG", "STG", "LDS", "STS", "FFMA", "BRA", "BAR"):
            c[op] += 1
        elif op == "EXIT":
            c["BRA"] += 1
        elif op.startswith(SFU_PREFIXES):
            c["SFU"] += 1
        elif op == "IMAD" and "WIDE" in _word(i).split("."):
            c["IMADW"] += 1
        elif op == "IMAD" or op == "HFMA2":
            c["IMAD"] += 1
        elif op.startswith("U") or op == "S2UR":
            c["UNI"] += 1
        else:
            c["ALU"] += 1
    return c
