"""PTX text to a module: its variables, the entry's parameters and its instructions.

A deliberately small reader of the PTX that compilers emit (NVVM for numba, NVRTC):
comments, ``.version``/``.target`` headers, module- and function-scope variables in the
global, shared, const and local state spaces (with initialisers), ``.entry`` functions
with their ``.param`` lists, ``.reg`` declarations (``%r<14>`` ranges, nested ``{ }``
scopes), labels and guarded instructions. ``parse(text)`` returns a ``Module``; each
``Instruction`` keeps its opcode split at the dots, its operands as text and its line,
for ``decode`` (``simulator.kernelcode.decode``) to turn into the emulator's table.
"""
from __future__ import annotations

import dataclasses
import re

#: bytes of each PTX fundamental type
TYPE_BYTES = {"b8": 1, "u8": 1, "s8": 1, "b16": 2, "u16": 2, "s16": 2, "f16": 2,
              "bf16": 2, "b32": 4, "u32": 4, "s32": 4, "f32": 4, "b64": 8, "u64": 8,
              "s64": 8, "f64": 8, "pred": 1, "f16x2": 4, "bf16x2": 4, "b128": 16}

SPACES = ("global", "shared", "const", "local", "param")
BODY = "\x00body "      # _statements' mark on a function header that opens a body
_TOKEN = re.compile(r"(?<![\w$%.@])%?[A-Za-z_$][\w$]*(?:@\w+)?")


class PTXError(ValueError):
    """PTX that this reader or the emulator does not handle; names the line."""


@dataclasses.dataclass
class Variable:
    """A variable in a state space: ``.shared .align 4 .b8 smem[512]``."""
    name: str
    space: str
    type: str
    count: int            # elements (0 for an ``.extern`` array of unknown size)
    align: int
    init: bytes | None
    extern: bool = False

    @property
    def nbytes(self) -> int:
        return TYPE_BYTES[self.type] * self.count


@dataclasses.dataclass
class Param:
    name: str
    type: str
    nbytes: int
    align: int


@dataclasses.dataclass
class Instruction:
    opcode: tuple          # ('ld', 'global', 'f32')
    operands: list         # operand texts
    guard: str | None      # '%p1' or '!%p1'
    line: int              # 1-based line in the PTX text
    text: str              # the instruction as written


@dataclasses.dataclass
class Function:
    name: str
    entry: bool
    params: list
    returns: list          # a .func's return parameters (ptx.Param)
    registers: dict        # name -> type
    variables: list        # function-scope variables (local depots, shared)
    body: list             # Instruction or label str, in order


@dataclasses.dataclass
class Module:
    target: str
    address_size: int
    variables: list
    functions: dict


_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_REG_RANGE = re.compile(r"^(%?[\w$]+)<(\d+)>$")
_VAR = re.compile(
    r"^(?P<mods>(?:\.\w+\s+)*?)\.(?P<space>global|shared|const|local)\s+"
    r"(?P<attrs>(?:\.\w+\s+\d*\s*)*?)\.(?P<type>[a-z]\d+|pred)\s+(?P<name>[\w$.]+)"
    r"(?:\[(?P<count>\d*)\])?\s*(?:=\s*(?P<init>.*))?$", re.S)


def _split_operands(text: str) -> list:
    """Operands at top-level commas (not inside [] or {})."""
    out, depth, cur = [], 0, []
    for ch in text:
        if ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        out.append("".join(cur).strip())
    return out


_LINE_DIRECTIVES = (".version", ".target", ".address_size", ".file", ".loc")


def _statements(text: str):
    """(line, statement) pairs: statements end at ';', braces and labels stand alone."""
    text = _COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    line, cur, start = 1, [], 1
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "\n":
            if cur and "".join(cur).lstrip().startswith(_LINE_DIRECTIVES):
                yield start, "".join(cur).strip()
                cur = []
            line += 1
        if not cur and ch.isspace():
            i += 1
            continue
        if not cur:
            start = line
        if ch in "{}" and not "".join(cur).strip():
            yield start, ch
            cur = []
        elif ch == "{" and _opens_body(cur):
            yield start, BODY + "".join(cur).strip()
            yield line, "{"
            cur = []
        elif ch == ";":
            yield start, "".join(cur).strip()
            cur = []
        elif ch == ":" and re.fullmatch(r"\s*[$\w.]+", "".join(cur)) and text[i + 1:i + 2] != ":" \
                and text[i - 1:i] != ":":         # (not an opcode's L2::evict_last)
            yield start, "".join(cur).strip() + ":"
            cur = []
        else:
            cur.append(ch)
        i += 1
    if "".join(cur).strip():
        yield start, "".join(cur).strip()


#: performance directives between a function's parameters and its body (Triton writes
#: ``.reqntid 256``; NVVM ``.maxntid``): how the function may be launched, nothing it runs
_PERF = re.compile(r"(\s*\.(maxntid|reqntid|minnctapersm|maxnreg|noreturn|explicitcluster|"
                   r"reqnctapercluster|maxclusterrank)\b[\s\d,]*)+$")


def _header(s: str) -> str:
    """A function header without the performance directives after its parameters."""
    return _PERF.sub("", s).strip()


def _opens_body(cur) -> bool:
    """Whether a '{' after ``cur`` opens a function body (after ``.entry f(...)``)."""
    s = _header("".join(cur).strip())
    return bool(re.match(r"^(\.visible\s+|\.weak\s+|\.extern\s+)*\.(entry|func)\b", s)) \
        and s.endswith(")")


def _int(text: str) -> int:
    t = text.strip()
    neg = t.startswith("-")
    if neg:
        t = t[1:]
    if t.lower().startswith("0x"):
        v = int(t[2:].rstrip("Uu"), 16)
    elif len(t) > 1 and t.startswith("0") and t.isdigit():
        v = int(t, 8)
    else:
        v = int(t.rstrip("Uu"))
    return -v if neg else v


def _initialiser(text: str, type_: str, count: int) -> bytes:
    """The bytes of a ``= {1, 2, ...}`` or ``= 5`` initialiser."""
    import numpy as np
    body = text.strip()
    if body.startswith("{"):
        body = body.strip("{}")
    items = [x for x in (s.strip() for s in body.split(",")) if x]
    size = TYPE_BYTES[type_]
    out = bytearray()
    for it in items:
        if type_.startswith("f") and (it[:2].lower() in ("0f", "0d")):
            raw = int(it[2:], 16)
            out += raw.to_bytes(size, "little")
        elif type_.startswith("f"):
            out += np.array(float(it), dtype=f"<f{size}").tobytes()
        else:
            out += (_int(it) % (1 << (8 * size))).to_bytes(size, "little")
    need = size * max(count, 1)
    return bytes(out[:need]) + bytes(max(0, need - len(out)))


def _variable(stmt: str, line: int) -> Variable:
    m = _VAR.match(stmt)
    if not m:
        raise PTXError(f"line {line}: cannot read the declaration {stmt!r}")
    attrs = m.group("attrs") or ""
    am = re.search(r"\.align\s+(\d+)", attrs)
    type_ = m.group("type")
    if type_ not in TYPE_BYTES:
        raise PTXError(f"line {line}: type .{type_} in {stmt!r} is not supported")
    count_text = m.group("count")
    extern = ".extern" in (m.group("mods") or "")
    count = 1 if count_text is None else (int(count_text) if count_text else 0)
    init = _initialiser(m.group("init"), type_, count) if m.group("init") else None
    return Variable(m.group("name"), m.group("space"), type_, count,
                    int(am.group(1)) if am else TYPE_BYTES[type_], init, extern)


def _params(text: str, line: int) -> list:
    out = []
    for p in _split_operands(text):
        # (a kernel's pointer parameter may say what it points to: `.param .u64 .ptr .global
        # .align 16 p`, as Triton writes them; the pointer itself is a .u64 as any other)
        m = re.match(r"^\.param\s+(?:\.align\s+(\d+)\s+)?\.(\w+)(?:\s+\.ptr(?:\s+\.(?:global|shared|"
                     r"const|local))?(?:\s+\.align\s+\d+)?)?\s+([\w$]+)(?:\[(\d+)\])?$", p.strip())
        if not m:
            raise PTXError(f"line {line}: cannot read the parameter {p!r}")
        type_ = m.group(2)
        if type_ not in TYPE_BYTES:
            raise PTXError(f"line {line}: parameter type .{type_} is not supported")
        size = TYPE_BYTES[type_] * int(m.group(4) or 1)
        align = int(m.group(1) or TYPE_BYTES[type_])
        out.append(Param(m.group(3), type_, size, align))
    return out


def _instruction(stmt: str, line: int) -> Instruction:
    guard = None
    s = stmt
    if s.startswith("@"):
        g, s = s.split(None, 1)
        guard = g[1:]
    parts = s.split(None, 1)
    opcode = tuple(parts[0].split("."))
    operands = _split_operands(parts[1]) if len(parts) > 1 else []
    return Instruction(opcode, operands, guard, line, " ".join(stmt.split()))


def rename(ins: Instruction, mapping: dict) -> Instruction:
    """``ins`` with every register, label or symbol named in ``mapping`` renamed (in its
    operands and guard; the opcode is kept)."""
    if not mapping:
        return ins

    def sub(text):
        return _TOKEN.sub(lambda m: mapping.get(m.group(0), m.group(0)), text)
    return Instruction(ins.opcode, [sub(o) for o in ins.operands],
                       sub(ins.guard) if ins.guard else None, ins.line, ins.text)


def parse(text: str) -> Module:
    """Read PTX ``text`` into a ``Module``; PTXError naming the line otherwise."""
    target, address_size = "", 64
    variables, functions = [], {}
    func = None
    depth = 0
    scope_stack: list = []
    scope_counter = 0
    for line, stmt in _statements(text):
        if func is None:
            if stmt in ("{", "}"):
                continue
            if stmt.startswith(".version"):
                continue
            if stmt.startswith(".target"):
                target = stmt.split(None, 1)[1].split(",")[0].strip()
                continue
            if stmt.startswith(".address_size"):
                address_size = int(stmt.split()[1])
                continue
            if re.match(r"^(\.visible\s+|\.weak\s+|\.extern\s+)*\.(entry|func)\b", stmt):
                continue   # a declaration (prototype) without a body
            if stmt.startswith(BODY):
                m = re.match(r"^(?:\.\w+\s+)*\.(entry|func)\s+(?:\(([^)]*)\)\s*)?([\w$]+)\s*"
                             r"(?:\((.*)\))?$", _header(stmt[len(BODY):].strip()), re.S)
                if not m:
                    raise PTXError(f"line {line}: cannot read the function header")
                func = Function(m.group(3), m.group(1) == "entry",
                                _params(m.group(4) or "", line),
                                _params(m.group(2) or "", line), {}, [], [])
                depth = 0
                continue
            if stmt.startswith((".global", ".shared", ".const", ".common", ".visible",
                                ".extern", ".weak")):
                variables.append(_variable(stmt.replace(".common", ".visible"), line))
                continue
            if stmt.startswith((".file", ".loc", ".section", ".pragma")):
                continue
            raise PTXError(f"line {line}: unexpected {stmt[:60]!r} outside a function")
        # inside a function body
        if stmt == "{":
            depth += 1
            scope_counter += 1
            scope_stack.append(({}, scope_counter))
            continue
        if stmt == "}":
            depth -= 1
            scope_stack.pop()
            if depth == 0:
                functions[func.name] = func
                func = None
            continue
        if stmt.endswith(":") and not stmt.startswith("."):
            func.body.append(stmt[:-1])
            continue
        if stmt.startswith(".reg"):
            m = re.match(r"^\.reg\s+(?:\.v\d\s+)?\.(\w+)\s+(.*)$", stmt, re.S)
            if not m:
                raise PTXError(f"line {line}: cannot read {stmt!r}")
            type_ = m.group(1)
            names, scope = scope_stack[-1]
            for item in _split_operands(m.group(2)):
                r = _REG_RANGE.match(item)
                expanded = ([f"{r.group(1)}{k}" for k in range(int(r.group(2)))]
                            if r else [item])
                for nm in expanded:
                    unique = nm if scope == scope_stack[0][1] else f"{nm}@{scope}"
                    names[nm] = unique
                    func.registers[unique] = type_
            continue
        if stmt.startswith(".param"):
            # a call's parameter (in a { callseq } scope): per-thread storage, named
            # apart from other scopes' parameters of the same name
            m = re.match(r"^\.param\s+(?:\.align\s+(\d+)\s+)?\.(\w+)\s+([\w$]+)"
                         r"(?:\[(\d+)\])?$", stmt)
            if not m or m.group(2) not in TYPE_BYTES:
                raise PTXError(f"line {line}: cannot read {stmt!r}")
            names, scope = scope_stack[-1]
            unique = f"{m.group(3)}@{scope}"
            names[m.group(3)] = unique
            func.variables.append(Variable(unique, "local", m.group(2), int(m.group(4) or 1),
                                           int(m.group(1) or TYPE_BYTES[m.group(2)]), None))
            continue
        if stmt.startswith((".local", ".shared", ".const", ".global")):
            func.variables.append(_variable(stmt, line))
            continue
        if stmt.startswith((".pragma", ".loc", ".file", ".maxntid", ".reqntid",
                            ".minnctapersm", ".maxnreg", ".noreturn")):
            continue
        if stmt.startswith("."):
            raise PTXError(f"line {line}: directive {stmt.split()[0]} is not supported")
        ins = _instruction(stmt, line)
        if len(scope_stack) > 1:
            # names declared in inner scopes, innermost first, as they are unique here
            visible = {}
            for names, _ in scope_stack[1:]:
                visible.update(names)
            ins = rename(ins, visible)
        func.body.append(ins)
    if func is not None:
        raise PTXError(f"function {func.name!r} is not closed: the PTX is truncated")
    return Module(target, address_size, variables, functions)
