"""Calls inlined: an entry function with every ``call`` replaced by the callee's body.

NVVM inlines numba's device functions and most of libdevice, but not all: float64
``pow``, ``sin``/``cos``/``tan``'s slow argument reduction and ``lgamma`` stay
``.func``s called as ``call.uni (retval0), f, (param0, param1);`` with their parameters
passed through ``.param`` variables of the call's scope. ``inline_calls`` copies each
callee's body in place of its call (registers, labels and local variables renamed per
call site; its parameters read the caller's argument variables, its return parameter
is the caller's; ``ret`` becomes a branch past the copy), recursively. The SIMT stack
then treats a callee's branches as any others. Recursion, calls through pointers and
calls of functions without a body (``vprintf``) are refused naming the call.
"""
from __future__ import annotations

import dataclasses
import itertools

from simulator.kernelcode.ptx import Function, Instruction, Module, PTXError, rename

#: nested calls deeper than this are refused (numba's code nests a few)
MAX_DEPTH = 16


def _call_parts(ins: Instruction):
    """(return names, callee, argument names) of a ``call`` instruction."""
    ops = [o.strip() for o in ins.operands]

    def names(group):
        return [x.strip() for x in group.strip()[1:-1].split(",") if x.strip()]
    rets = []
    if ops and ops[0].startswith("("):
        rets = names(ops.pop(0))
    if not ops:
        raise PTXError(f"line {ins.line}: cannot read the call `{ins.text}`")
    callee = ops.pop(0)
    args = names(ops.pop(0)) if ops and ops[0].startswith("(") else []
    if ops:   # a prototype: an indirect call through a register
        raise PTXError(f"line {ins.line}: `{ins.text}` calls through a pointer: not "
                       "supported")
    return rets, callee, args


def inline_calls(module: Module, func: Function) -> Function:
    """``func`` with every call replaced by its callee's body (see the module doc)."""
    if not any(isinstance(i, Instruction) and i.opcode[0] == "call" for i in func.body):
        return func
    counter = itertools.count()
    registers = dict(func.registers)
    variables = list(func.variables)
    body: list = []

    def expand(f: Function, mapping: dict, stack: tuple, end_label):
        for item in f.body:
            if isinstance(item, str):
                body.append(mapping.get(item, item))
                continue
            ins = rename(item, mapping)
            op = ins.opcode[0]
            if op == "ret" and end_label is not None:
                body.append(Instruction(("bra", "uni"), [end_label], ins.guard, ins.line,
                                        ins.text))
                continue
            if op != "call":
                body.append(ins)
                continue
            rets, name, args = _call_parts(ins)
            callee = module.functions.get(name)
            if callee is None and ("half" in name or "bf16" in name or "bfloat" in name):
                raise PTXError(f"line {ins.line}: `{ins.text}`: half-precision (float16, "
                               "bfloat16) arithmetic is not supported by the emulator yet")
            if callee is None or callee.entry:
                raise PTXError(f"line {ins.line}: `{ins.text}` calls {name}, which has no "
                               "body in the PTX (printf and other external functions are "
                               "not supported)")
            if name in stack or len(stack) >= MAX_DEPTH:
                raise PTXError(f"line {ins.line}: `{ins.text}`: recursive calls "
                               f"({' -> '.join(stack + (name,))}) are not supported")
            if len(args) != len(callee.params) or len(rets) > len(callee.returns):
                raise PTXError(f"line {ins.line}: `{ins.text}` passes {len(args)} "
                               f"arguments; {name} takes {len(callee.params)}")
            k = next(counter)
            m = {}
            for reg, ty in callee.registers.items():
                m[reg] = f"{reg}@c{k}"
                registers[m[reg]] = ty
            for var in callee.variables:
                m[var.name] = f"{var.name}@c{k}"
                variables.append(dataclasses.replace(var, name=m[var.name]))
            for item2 in callee.body:
                if isinstance(item2, str):
                    m[item2] = f"{item2}@c{k}"
            for p, a in zip(callee.params, args):
                m[p.name] = a
            for p, r in zip(callee.returns, rets):
                m[p.name] = r
            end = f"$return@c{k}"
            expand(callee, m, stack + (name,), end)
            body.append(end)

    expand(func, {}, (), None)
    return dataclasses.replace(func, registers=registers, variables=variables, body=body)
