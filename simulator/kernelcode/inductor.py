"""The Triton kernels ``torch.compile`` (Inductor) generated for a model, as launches the
any-kernel path can time: each kernel's PTX from Triton's cache, its arguments from
Inductor's wrapper code, its grid and block from a profiler trace of the compiled model.

``scripts/record_compiled_traces.py`` keeps both on the GPU machine: a tar of Triton's
cache (``<hash>/<kernel>.ptx`` and ``.json``) and Inductor's generated code (the module
with ``def call(self, args)``: ``bufN = empty_strided_cuda((shape), (strides), dtype)``
for its buffers, ``kernel.run(buf3, arg2_1, ..., 6422528, stream=stream0)`` for each
launch), and the Chrome trace, whose kernel events give each launch's ``grid``,
``block`` and duration, in launch order. An extern kernel's output (a cuDNN
convolution's) takes the size its ``assert_size_stride`` gives, a reused buffer
(``buf3 = buf2; del buf2  # reuse``) its first name's, and is the same array: one array
a buffer, shared by every launch that takes it, so that a sequence of launches
(``timing.simulate_launches``) finds in the L2 what the launches before it left.

:func:`launches` pairs them: the n-th launch of a kernel in the wrapper is the n-th
event of that name in the trace. A pointer argument becomes a float array of its
buffer's extent (the largest element its shape and strides reach, plus one; the
graph's inputs from ``get_args``'s ``rand_strided``), filled with seeded normal values
(Inductor's pointwise kernels do not branch on their data); an integer argument the
PTX parameter's width; the dynamic shared memory Triton's metadata gives; the parameters
Triton appends (its global and profile scratch
pointers) get a one-byte array each. Anything else the wrapper passes -- a
``reinterpret_tensor`` view, a Python expression -- is refused naming the launch.
"""
from __future__ import annotations

import ast
import dataclasses
import json
import re
import tarfile

import numpy as np

_DTYPES = {"torch.float32": np.float32, "torch.float16": np.float16, "torch.float64": np.float64,
           "torch.int32": np.int32, "torch.int64": np.int64, "torch.int8": np.int8,
           "torch.uint8": np.uint8, "torch.bool": np.bool_, "torch.bfloat16": np.uint16}
_BUFFER = re.compile(r"^\s*(\w+)\s*=\s*(?:empty_strided_cuda|rand_strided)\(\((.*?)\),\s*\((.*?)\),"
                     r".*?(torch\.\w+)\)", re.M)
#: an extern kernel's output, its size checked after it: assert_size_stride(buf2, (8, 64,
#: 112, 112), (802816, 1, 7168, 64), ...)
_ASSERTED = re.compile(r"^\s*assert_size_stride\((\w+),\s*\((.*?)\),\s*\((.*?)\)", re.M)
#: a buffer reused under another name: buf3 = buf2; del buf2  # reuse
_ALIAS = re.compile(r"^\s*(\w+)\s*=\s*(\w+);\s*del\s+\w+\s*#\s*reuse", re.M)
_RUN = re.compile(r"^\s*(triton_\w+)\.run\((.*)\)\s*$", re.M)


@dataclasses.dataclass(frozen=True)
class Launch:
    """One launch of a Triton kernel, ready for ``simulate_kernel(ptx, grid, block,
    args, name=name)``, with the duration the trace recorded."""
    name: str
    ptx: str
    grid: tuple
    block: tuple
    args: list
    traced_seconds: float
    shared_bytes: int = 0      # dynamic shared memory (Triton's metadata: "shared")


def _ints(text: str) -> tuple:
    return tuple(int(x) for x in text.replace(" ", "").split(",") if x)


def _extent(shape, strides) -> int:
    return 1 + sum((s - 1) * st for s, st in zip(shape, strides)) if all(shape) else 0


def read_tar(path) -> tuple:
    """({kernel name: PTX}, wrapper code, {kernel name: Triton's metadata}) of a tar
    written by record_compiled_traces.py."""
    ptx, wrapper, meta = {}, None, {}
    with tarfile.open(path) as tar:
        for m in tar.getmembers():
            if not m.isfile():
                continue
            base = m.name.rsplit("/", 1)[-1]
            # (autotuning compiles several configurations of a kernel, each in its own
            # directory: every one is kept, with its metadata)
            d = m.name.rsplit("/", 1)[0]
            if m.name.endswith(".ptx"):
                ptx.setdefault(base[:-4], {})[d] = tar.extractfile(m).read().decode()
            elif base.endswith(".json") and not base.startswith("__grp__"):
                meta.setdefault(base[:-5], {})[d] = json.loads(tar.extractfile(m).read().decode())
            elif m.name.endswith(".py"):
                text = tar.extractfile(m).read().decode()
                if "def call(" in text and ".run(" in text:
                    wrapper = text
    if wrapper is None:
        raise ValueError(f"{path}: no Inductor wrapper code (a .py with def call( and .run()")
    return ptx, wrapper, meta


_CTAID = re.compile(r"mov\.u32\s+(%r\d+),\s*%ctaid\.x;")


def _xblock(ptx: str) -> int | None:
    """The elements a block of a pointwise kernel covers: the shift applied to
    ``%ctaid.x`` (``shl.b32 %r16, %r15, 9``: 512), or None where none is."""
    m = _CTAID.search(ptx)
    if not m:
        return None
    k = re.search(r"shl\.b32\s+%r\d+,\s*" + re.escape(m.group(1)) + r",\s*(\d+);", ptx)
    return 1 << int(k.group(1)) if k else None


def _config(name, versions, meta, block, grid, ints):
    """(PTX, metadata) of the configuration of ``name`` that ran: the one whose warps make
    the traced block and, among several, whose block covers the elements nearest to the
    last integer argument (xnumel) over the traced grid."""
    threads = block[0] * block[1] * block[2]
    fits = [d for d in versions if meta.get(d, {}).get("num_warps", threads // 32) * 32 == threads]
    if not fits:
        raise ValueError(f"{name}: no configuration in Triton's cache has {threads // 32} warps "
                         f"(it has {sorted(meta.get(d, {}).get('num_warps') for d in versions)})")
    if len(fits) > 1 and ints:
        def miss(d):
            x = _xblock(versions[d])
            return abs(np.log2(x * grid[0] / ints[-1])) if x and ints[-1] > 0 else 99.0
        fits.sort(key=miss)
    return versions[fits[0]], meta.get(fits[0], {})


def launches(tar_path, trace_path, seed: int = 0) -> list:
    """Every Triton launch of the wrapper in ``tar_path``, in order (see the module doc)."""
    ptx, wrapper, meta = read_tar(tar_path)
    buffers = {name: (_extent(_ints(shape), _ints(strides)), _DTYPES.get(dt, np.float32))
               for name, shape, strides, dt in _BUFFER.findall(wrapper)}
    for name, shape, strides in _ASSERTED.findall(wrapper):
        buffers.setdefault(name, (_extent(_ints(shape), _ints(strides)), np.float32))
    root = {}                        # a reused buffer's name -> the buffer it reuses
    for new, old in _ALIAS.findall(wrapper):
        if old in buffers:
            buffers.setdefault(new, buffers[old])
            root.setdefault(new, root.get(old, old))
    arrays = {}                      # one array a buffer, shared by every launch taking it
    from simulator.kernelcode.ptx import parse
    events = {}                      # kernel name -> its events, in launch order
    for e in json.loads(open(trace_path).read())["traceEvents"]:
        if e.get("cat") == "kernel" and e.get("name", "").startswith("triton"):
            events.setdefault(e["name"], []).append(e)
    seen, out = {}, []
    rng = np.random.default_rng(seed)
    for name, argtext in _RUN.findall(wrapper):
        if name not in ptx:
            raise ValueError(f"{tar_path}: {name}: no PTX for it in Triton's cache")
        k = seen.get(name, 0)
        seen[name] = k + 1
        ev = events.get(name, [])
        if k >= len(ev):
            raise ValueError(f"{trace_path}: launch {k + 1} of {name}: the trace has {len(ev)}")
        e = ev[k]
        call = ast.parse(f"f({argtext})").body[0].value
        ints = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, int)]
        grid, block = tuple(e["args"]["grid"]), tuple(e["args"]["block"])
        code, info = _config(name, ptx[name], meta.get(name, {}), block, grid, ints)
        params = [p.type for p in parse(code).functions[name].params]
        args = []
        for j, a in enumerate(call.args):
            if isinstance(a, ast.Name) and a.id in buffers:
                key = root.get(a.id, a.id)
                if key not in arrays:
                    n, dt = buffers[key] if key in buffers else buffers[a.id]
                    arrays[key] = (rng.standard_normal(max(n, 1)).astype(dt)
                                   if dt in (np.float32, np.float64, np.float16)
                                   else np.zeros(max(n, 1), dt))
                args.append(arrays[key])
            elif isinstance(a, ast.Constant) and isinstance(a.value, int):
                ty = params[j] if j < len(params) else "u32"
                args.append(np.int64(a.value) if ty.endswith("64") else np.int32(a.value))
            else:
                raise ValueError(f"launch {k + 1} of {name}: argument {j} ({ast.unparse(a)}) is "
                                 "neither a buffer nor an integer")
        args += [np.zeros(1, np.uint8) for _ in range(len(params) - len(args))]
        out.append(Launch(name, code, grid, block, args, e["dur"] * 1e-6, int(info.get("shared", 0))))
    return out
