"""nvdisasm's SASS listing as data: a kernel's instructions and its control-flow graph.

``parse_sass(text, entry)`` reads the listing ``nvdisasm -c`` prints for a cubin and keeps
the code of function ``entry``: one ``Instr`` per instruction (its byte offset, predicate
guard, opcode with modifiers, operands, and the label it names) and the basic blocks
(``Block``) with their successor edges, in a ``Sass``.

Basic blocks follow nvdisasm's own ``-bbcfg`` graph: a block starts at the function's
first instruction, at every label nvdisasm prints (branch targets, BSSY reconvergence
points, its dataflow analysis's points) and after every control-transfer instruction
(``BRA``, ``BRX``, ``JMP``, ``JMX``, ``CALL``, ``RET``, ``EXIT``, ``KILL``, guarded or
not). Edges: a branch to its target, and to the next block where it is conditional (a
guard, a predicate or register operand as in ``BRA.DIV UR4, `(.L_x_1)`` or ``BRA.U !UP0,
...``); a ``CALL`` to the next block (the callee returns there; it is reachable as a root
of its own); ``RET``, ``EXIT`` and ``KILL`` to nothing unless guarded; anything else to the
next block. BSSY/BSYNC, WARPSYNC and ENDCOLLECTIVE fall through, as in nvdisasm's graph.
The blocks cover every instruction of the function exactly once; those no path from the
entry (or a called subroutine) reaches, such as the ``BRA`` to itself and the ``NOP``
padding after the last ``EXIT``, are marked ``reachable=False``.
"""
from __future__ import annotations

import dataclasses
import re
from collections import deque

#: bytes per SASS instruction (Volta and later, all that CUDA 13 targets)
INSTR_BYTES = 16

#: opcodes (without modifiers) that end a basic block
CONTROL = frozenset({"BRA", "BRX", "BRXU", "JMP", "JMX", "JMXU", "CALL", "RET", "EXIT",
                     "KILL"})
_BRANCHES = frozenset({"BRA", "JMP"})
_INDIRECT = frozenset({"BRX", "BRXU", "JMX", "JMXU"})
_ENDS = frozenset({"RET", "EXIT", "KILL"})

_SECTION = re.compile(r"^//-+\s*(\S+)\s*-+\s*$")
_INSTR = re.compile(r"^\s*/\*([0-9a-fA-F]+)\*/\s*(.*)$")
_LABEL = re.compile(r"^\s*([.$\w@][^\s:]*):\s*$")
_GUARD = re.compile(r"^(@!?U?P(?:T|\d+))\s+(.*)$")
_REF = re.compile(r"`\(([^)]+)\)")
_HEX_TARGET = re.compile(r"(?:^|,\s*)(0x[0-9a-fA-F]+)\s*$")


@dataclasses.dataclass(frozen=True)
class Instr:
    """One SASS instruction."""
    pc: int            # byte offset in the function's code
    guard: str         # predicate guard: "", "@P0", "@!P1", "@!UP0", "@PT"...
    opcode: str        # with modifiers: "ISETP.GE.U32.AND", "LDG.E.64", "BRA"
    operands: str      # as nvdisasm prints them: "P0, PT, R2, UR4, PT"; "" where none
    ref: str           # the label it names: a branch's or call's target, BSSY's
    #                    reconvergence point, WARPSYNC.COLLECTIVE's end; "" where none
    target: int | None  # the pc of ``ref`` in this function (or of a branch's hex
    #                     address); None where there is none or it lies elsewhere

    @property
    def op(self) -> str:
        """The opcode without modifiers: ``ISETP``."""
        return self.opcode.split(".")[0]

    @property
    def modifiers(self) -> tuple:
        """The opcode's modifiers: ``("GE", "U32", "AND")``."""
        return tuple(self.opcode.split(".")[1:])

    @property
    def text(self) -> str:
        """The instruction as nvdisasm prints it (without the ``;``)."""
        return " ".join(x for x in (self.guard, self.opcode, self.operands) if x)

    @property
    def conditional(self) -> bool:
        """Whether a control transfer may not be taken: a guard other than ``@PT``, or a
        predicate or register operand beside the target (``BRA.DIV UR4, ...``)."""
        if self.guard not in ("", "@PT"):
            return True
        rest = _REF.sub("", self.operands).strip().strip(",").strip()
        return self.op in _BRANCHES and bool(rest) and not _HEX_TARGET.fullmatch(rest)


@dataclasses.dataclass(frozen=True)
class Block:
    """A basic block: instructions ``first`` to ``stop - 1`` of ``Sass.instrs``."""
    start: int         # pc of its first instruction
    end: int           # pc after its last instruction
    first: int         # index of its first instruction in ``Sass.instrs``
    stop: int          # index after its last
    label: str         # the label at ``start`` ("" where none)
    succs: tuple       # start pcs of its successor blocks
    reachable: bool    # whether a path from the entry or a called subroutine reaches it


@dataclasses.dataclass(frozen=True)
class Sass:
    """A kernel's SASS: its instructions, labels and basic blocks."""
    entry: str         # the function's (mangled) name
    arch: str          # the target, "sm_90a" ("" where unknown)
    instrs: tuple      # Instr, in pc order
    blocks: tuple      # Block, in pc order
    labels: dict       # label name -> pc, for the labels inside the function
    text: str          # nvdisasm's whole listing

    def at(self, pc: int) -> Instr:
        """The instruction at byte offset ``pc``; KeyError where there is none."""
        i = self._index().get(pc)
        if i is None:
            raise KeyError(f"no SASS instruction at pc {pc:#x} in {self.entry}")
        return self.instrs[i]

    def block_at(self, pc: int) -> Block:
        """The block holding the instruction at ``pc``; KeyError where there is none."""
        i = self._index().get(pc)
        if i is None:
            raise KeyError(f"no SASS instruction at pc {pc:#x} in {self.entry}")
        lo, hi = 0, len(self.blocks)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self.blocks[mid].first <= i:
                lo = mid
            else:
                hi = mid
        return self.blocks[lo]

    def block_instrs(self, block: Block) -> tuple:
        """The instructions of ``block``."""
        return self.instrs[block.first:block.stop]

    @property
    def edges(self) -> list:
        """[(from block start, to block start)] of every edge."""
        return [(b.start, s) for b in self.blocks for s in b.succs]

    def _index(self) -> dict:
        idx = self.__dict__.get("_pc_index")
        if idx is None:
            idx = {ins.pc: k for k, ins in enumerate(self.instrs)}
            object.__setattr__(self, "_pc_index", idx)
        return idx


def _sections(text: str) -> dict:
    """{function name: its lines} of an ``nvdisasm`` listing; a listing without section
    headers (a fragment) is one function named ""."""
    out, name, headed = {}, None, False
    for line in text.splitlines():
        m = _SECTION.match(line)
        if m:                               # a section; only .text.<name> holds code
            headed = True
            name = m.group(1)[len(".text."):] if m.group(1).startswith(".text.") else None
            if name is not None:
                out[name] = []
        elif name is not None:
            out[name].append(line)
        elif not headed and (_INSTR.match(line) or _LABEL.match(line)):
            out.setdefault("", []).append(line)
    return out


def _instruction(pc: int, body: str) -> tuple:
    """(guard, opcode, operands, ref) of one instruction's text after its ``/*pc*/``."""
    body = re.sub(r"/\*.*?\*/", "", body).strip()      # -hex encodings, comments
    body = body.rstrip().rstrip(";").strip()
    guard = ""
    m = _GUARD.match(body)
    if m:
        guard, body = m.group(1), m.group(2)
    opcode, _, operands = body.partition(" ")
    operands = operands.strip()
    ref = _REF.search(operands)
    return guard, opcode, operands, ref.group(1) if ref else ""


def parse_sass(text: str, entry: str = "", arch: str = "") -> Sass:
    """Parse nvdisasm's listing ``text``, keeping function ``entry`` (the listing's only
    or first function where ``entry`` is ""); ValueError where the listing has no code
    for it."""
    sections = _sections(text)
    if not sections:
        raise ValueError("no SASS instructions in nvdisasm's listing")
    if entry in sections:
        lines = sections[entry]
    elif not entry or list(sections) == [""]:
        entry, lines = next(iter(sections.items()))
    else:
        raise ValueError(f"no SASS for entry {entry!r} in nvdisasm's listing (functions: "
                         f"{', '.join(sorted(sections)) or 'none'})")
    raw, labels, pending = [], {}, []
    for line in lines:
        m = _INSTR.match(line)
        if m:
            pc = int(m.group(1), 16)
            for name in pending:
                labels[name] = pc
            pending = []
            raw.append((pc, *_instruction(pc, m.group(2))))
            continue
        m = _LABEL.match(line)
        if m:
            pending.append(m.group(1))
    if not raw:
        raise ValueError(f"no SASS instructions for {entry or 'the function'} in "
                         "nvdisasm's listing")
    instrs = []
    for pc, guard, opcode, operands, ref in raw:
        target = labels.get(ref) if ref else None
        if ref and ref == entry:
            target = None                   # RET's `(function) names no target
        if target is None and not ref and opcode.split(".")[0] in _BRANCHES:
            m = _HEX_TARGET.search(operands)   # a raw listing's absolute address
            target = int(m.group(1), 16) if m else None
        instrs.append(Instr(pc, guard, opcode, operands, ref, target))
    return Sass(entry, arch, tuple(instrs), _blocks(instrs, labels), labels, text)


def _blocks(instrs: list, labels: dict) -> tuple:
    """The basic blocks of ``instrs`` (see the module doc)."""
    pcs = {ins.pc: k for k, ins in enumerate(instrs)}
    leaders = {0} | {pcs[pc] for pc in labels.values() if pc in pcs}
    leaders |= {k + 1 for k, ins in enumerate(instrs)
                if ins.op in CONTROL and k + 1 < len(instrs)}
    for ins in instrs:                     # a hex target with no label
        if ins.op in _BRANCHES | _INDIRECT and ins.target in pcs:
            leaders.add(pcs[ins.target])
    starts = sorted(leaders)
    names = {}
    for name, pc in labels.items():         # the first label printed at a pc
        names.setdefault(pc, name)
    spans = list(zip(starts, starts[1:] + [len(instrs)]))
    out = []
    for first, stop in spans:
        last = instrs[stop - 1]
        nxt = [instrs[stop].pc] if stop < len(instrs) else []
        if last.op in _BRANCHES or last.op in _INDIRECT:
            taken = [last.target] if last.target in pcs else []
            succs = list(dict.fromkeys(taken + (nxt if last.conditional else [])))
        elif last.op in _ENDS:
            succs = nxt if last.conditional else []
        else:                               # CALL and everything else fall through
            succs = nxt
        out.append([first, stop, tuple(succs)])
    # reachability: from the entry and from every called subroutine
    by_start = {instrs[f].pc: k for k, (f, _, _) in enumerate(out)}
    roots = [0] + [by_start[ins.target] for ins in instrs
                   if ins.op == "CALL" and ins.target in by_start]
    seen, todo = set(roots), deque(roots)
    while todo:
        for s in out[todo.popleft()][2]:
            k = by_start[s]
            if k not in seen:
                seen.add(k)
                todo.append(k)
    return tuple(Block(instrs[f].pc, instrs[s - 1].pc + INSTR_BYTES, f, s,
                       names.get(instrs[f].pc, ""), succs, k in seen)
                 for k, (f, s, succs) in enumerate(out))
