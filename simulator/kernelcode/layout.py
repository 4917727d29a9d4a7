"""Where a kernel's variables live: each in its window (the global window's module
variables, static then dynamic shared memory, const with its initialisers, a thread's
local depot, the parameters), and the symbols' addresses in their state spaces."""
from __future__ import annotations

from simulator.kernelcode.isa import BASE, S_CONST, S_GLOBAL, S_LOCAL, S_PARAM, S_SHARED
from simulator.kernelcode.ptx import Function, Module


def _align(x: int, a: int) -> int:
    return (x + a - 1) // a * a


def layout(symbols: dict, module: Module, func: Function) -> dict:
    """Offsets of every variable in its window; the symbols' addresses."""
    glob = shared = const = local = 0
    module_globals, const_init, extern = [], bytearray(), None
    for v in list(module.variables) + list(func.variables):
        if v.space == "global":
            glob = _align(glob, max(v.align, 8))
            module_globals.append((glob, v))
            symbols[v.name] = (S_GLOBAL, BASE + glob)
            glob += max(v.nbytes, 1)
        elif v.space == "shared":
            if v.extern or v.count == 0:
                extern = v.name
                continue
            shared = _align(shared, v.align)
            symbols[v.name] = (S_SHARED, shared)
            shared += v.nbytes
        elif v.space == "const":
            const = _align(const, v.align)
            const_init += bytes(const - len(const_init))
            symbols[v.name] = (S_CONST, const)
            const_init += v.init if v.init is not None else bytes(v.nbytes)
            const += v.nbytes
        elif v.space == "local":
            local = _align(local, v.align)
            symbols[v.name] = (S_LOCAL, local)
            local += v.nbytes
    if extern is not None:
        shared = _align(shared, 16)
        symbols[extern] = (S_SHARED, shared)
    poff, offsets = 0, []
    for p in func.params:
        poff = _align(poff, p.align)
        offsets.append(poff)
        symbols[p.name] = (S_PARAM, poff)
        poff += p.nbytes
    return dict(module_globals=module_globals, global_bytes=_align(glob, 256),
                shared_static=shared, shared_extern=extern, const_bytes=const,
                const_init=bytes(const_init), local_bytes=_align(local, 8),
                param_offsets=offsets, param_bytes=_align(poff, 8))
