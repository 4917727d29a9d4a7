"""A numba kernel to PTX, cubin and SASS with its control-flow graph, with no GPU and no
CUDA toolkit (NVIDIA's PyPI wheels only), and the disk cache of the three."""
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from numba import cuda, float32

from simulator.kernelcode import disasm, toolchain


@cuda.jit(device=True)
def _square(x):
    return x * x


@cuda.jit
def calls_device(a, b):
    i = cuda.grid(1)
    if i < a.size:
        b[i] = _square(a[i]) + 1.0


@cuda.jit
def row_sums(a, out, n):
    i = cuda.grid(1)
    s = float32(0.0)
    for k in range(n):
        s += a[i * n + k]
    out[i] = s


@cuda.jit
def reverse_block(a, b):
    tile = cuda.shared.array(128, float32)
    t = cuda.threadIdx.x
    tile[t] = a[cuda.grid(1)]
    cuda.syncthreads()
    b[cuda.grid(1)] = tile[127 - t]


@cuda.jit
def adds_a_string(a):
    i = cuda.grid(1)
    a[i] = a[i] + "one"


A = np.zeros(256, np.float32)
KERNELS = {"calls_device": (calls_device, (A, A)),
           "row_sums": (row_sums, (A, A, 4)),
           "reverse_block": (reverse_block, (A, A))}


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A fresh disk cache and an empty in-process one."""
    monkeypatch.setattr(toolchain, "CACHE_DIR", None)
    monkeypatch.setenv("ROOFSIM_CACHE", str(tmp_path / "kernels"))
    toolchain.clear_memory_cache()
    yield tmp_path / "kernels"
    toolchain.clear_memory_cache()


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """{name: (KernelPTX, cubin, Sass)} of the three kernels, compiled once."""
    old = toolchain.CACHE_DIR
    toolchain.CACHE_DIR = str(tmp_path_factory.mktemp("kernels"))
    try:
        out = {}
        for name, (k, args) in KERNELS.items():
            p = toolchain.kernel_ptx(k, args, (9, 0))
            out[name] = (p, toolchain.cubin(p), toolchain.sass(p))
        return out
    finally:
        toolchain.CACHE_DIR = old


def test_tools_come_from_nvidias_wheels():
    for name in ("ptxas", "nvdisasm"):
        path = Path(toolchain.tool_path(name))
        assert "site-packages" in path.parts and "nvidia" in path.parts, path
        assert not str(path).startswith("/usr/local/cuda")


@pytest.mark.parametrize("name", list(KERNELS))
def test_ptx_cubin_sass(compiled, name):
    p, binary, s = compiled[name]
    assert p.name == name and name in p.entry
    assert f".entry {p.entry}(" in p.ptx
    assert binary[:4] == b"\x7fELF"
    assert s.entry == p.entry and s.arch == "sm_90a"
    ops = {i.op for i in s.instrs}
    assert {"EXIT", "S2R", "LDG", "STG"} <= ops
    assert any(i.operands.startswith("R") and "SR_TID.X" in i.operands for i in s.instrs)
    pcs = [i.pc for i in s.instrs]
    assert pcs == list(range(0, 16 * len(pcs), 16))


def test_sass_opcodes_per_kernel(compiled):
    shared = {i.op for i in compiled["reverse_block"][2].instrs}
    assert {"BAR", "STS", "LDS"} <= shared
    loop = compiled["row_sums"][2]
    assert any(i.op == "BRA" and i.target is not None and i.target < i.pc
               for i in loop.instrs), "the loop's back edge"
    ops = {i.op for i in compiled["calls_device"][2].instrs}
    assert ops & {"FMUL", "FFMA"} and "CALL" not in ops   # _square inlined: x * x + 1


@pytest.mark.parametrize("name", list(KERNELS))
def test_cfg_covers_every_instruction_once(compiled, name):
    s = compiled[name][2]
    covered = [k for b in s.blocks for k in range(b.first, b.stop)]
    assert covered == list(range(len(s.instrs)))
    starts = {b.start for b in s.blocks}
    for b in s.blocks:
        assert b.start == s.instrs[b.first].pc and b.end == s.instrs[b.stop - 1].pc + 16
        assert set(b.succs) <= starts
        for i in s.block_instrs(b)[:-1]:
            assert i.op not in disasm.CONTROL, f"{i.text} inside a block"
    for i in s.instrs:
        if i.op == "BRA":
            assert i.target in starts, f"{i.text}: target not a block start"
            assert i.target in s.block_at(i.pc).succs
        if i.op == "EXIT" and not i.guard:
            assert s.block_at(i.pc).succs == ()
    assert s.blocks[0].reachable
    assert any(s.at(b.start).op == "EXIT" for b in s.blocks if b.reachable)


def _nvdisasm_bbcfg(binary, tmp_path):
    """{first pc: {successor first pcs}} of nvdisasm's own -bbcfg graph."""
    f = tmp_path / "k.cubin"
    f.write_bytes(binary)
    dot = subprocess.run([toolchain.tool_path("nvdisasm"), "-bbcfg", "-poff", str(f)],
                         capture_output=True, text=True, check=True).stdout
    first, edges, node = {}, [], None
    for line in dot.splitlines():
        m = re.match(r'^"([^"]+)"\s*$', line)
        if m:
            node = m.group(1)
        elif line.startswith("[label=") and node is not None:
            pcs = re.findall(r"([0-9a-f]{4,}):\\ ", line)
            first[node] = int(pcs[0], 16)
        m = re.match(r'^"([^"]+)"(?::\w+)*:\w+ -> "([^"]+)"', line)
        if m:
            edges.append((m.group(1), m.group(2)))
    graph = {pc: set() for pc in first.values()}
    for a, b in edges:
        graph[first[a]].add(first[b])
    return graph


@pytest.mark.parametrize("name", list(KERNELS))
def test_cfg_matches_nvdisasms(compiled, name, tmp_path):
    _, binary, s = compiled[name]
    theirs = _nvdisasm_bbcfg(binary, tmp_path)
    ours = {b.start: set(b.succs) for b in s.blocks if b.reachable}
    assert ours == theirs


TOY = """
//--------------------- .text.k --------------------------
k:
.text.k:
        /*0000*/                   S2R R0, SR_TID.X ;
        /*0010*/                   ISETP.NE.U32.AND P0, PT, R0, RZ, PT ;
        /*0020*/                   BSSY B0, `(.L_x_1) ;
        /*0030*/              @!P0 BRA `(.L_x_0) ;
        /*0040*/                   BRA.DIV UR4, `(.L_x_2) ;
        /*0050*/                   MOV R10, 0x70 ;
        /*0060*/                   CALL.REL.NOINC `($__internal_0_$__div) ;
.L_x_0:
        /*0070*/                   BSYNC B0 ;
.L_x_1:
        /*0080*/                   WARPSYNC.ALL ;
        /*0090*/               @P0 EXIT ;
        /*00a0*/                   BRA.U !UP0, `(.L_x_1) ;
        /*00b0*/                   EXIT ;
.L_x_2:
        /*00c0*/                   BRA `(.L_x_0);
$__internal_0_$__div:
        /*00d0*/                   IMAD R4, R3, R0, RZ ;
        /*00e0*/                   RET.REL.NODEC R10 `(k) ;
.L_x_3:
        /*00f0*/                   BRA `(.L_x_3);
        /*0100*/                   NOP;
.L_x_4:
//--------------------- .nv.shared.k --------------------------
"""


def test_parse_sass_syntax():
    s = disasm.parse_sass(TOY, "k", "sm_90a")
    assert s.at(0x30).guard == "@!P0" and s.at(0x30).opcode == "BRA"
    assert s.at(0x30).ref == ".L_x_0" and s.at(0x30).target == 0x70
    assert s.at(0x20).target == 0x80 and s.at(0x20).op == "BSSY"
    assert s.at(0x10).modifiers == ("NE", "U32", "AND")
    assert s.at(0x10).operands == "P0, PT, R0, RZ, PT"
    assert s.at(0xe0).target is None                     # RET names its function
    assert s.at(0xc0).text == "BRA `(.L_x_0)"
    succ = {b.start: b.succs for b in s.blocks}
    assert succ == {0x00: (0x70, 0x40), 0x40: (0xc0, 0x50), 0x50: (0x70,),
                    0x70: (0x80,), 0x80: (0xa0,), 0xa0: (0x80, 0xb0), 0xb0: (),
                    0xc0: (0x70,), 0xd0: (), 0xf0: (0xf0,), 0x100: ()}
    reach = {b.start for b in s.blocks if b.reachable}
    assert reach == {0x00, 0x40, 0x50, 0x70, 0x80, 0xa0, 0xb0, 0xc0, 0xd0}
    assert s.block_at(0x90).start == 0x80
    with pytest.raises(ValueError, match="no SASS for entry 'other'"):
        disasm.parse_sass(TOY, "other")
    with pytest.raises(ValueError, match="no SASS instructions"):
        disasm.parse_sass("nothing here")


def _count_runs(monkeypatch):
    runs = []
    real = toolchain._run

    def run(argv, cwd):
        runs.append(Path(argv[0]).name)
        return real(argv, cwd)
    monkeypatch.setattr(toolchain, "_run", run)
    return runs


def _no_numba_compile(monkeypatch):
    def refuse(*a, **k):
        raise AssertionError("numba's compiler ran on a cache hit")
    monkeypatch.setattr(toolchain, "_compile", refuse)
    monkeypatch.setattr(toolchain, "_compile_in_child", refuse)


def test_disk_cache_hit_without_compilers(cache, monkeypatch):
    runs = _count_runs(monkeypatch)
    p = toolchain.kernel_ptx(row_sums, (A, A, 4))
    s = toolchain.sass(p)
    assert runs == ["ptxas", "nvdisasm"]
    assert sorted(f.suffix for f in cache.iterdir()) == [".cubin", ".ptx", ".sass"]
    toolchain.clear_memory_cache()                       # as a second process would
    _no_numba_compile(monkeypatch)
    p2 = toolchain.kernel_ptx(row_sums, (A, A, 4))
    s2 = toolchain.sass(p2)
    assert runs == ["ptxas", "nvdisasm"]
    assert p2.ptx == p.ptx and p2.entry == p.entry and s2.instrs == s.instrs
    assert toolchain.kernel_ptx(row_sums, (A, A, 4)) is p2   # in-process memo


def _fake_compiler(monkeypatch):
    """numba's compiler replaced by one that records its calls and returns a stub PTX."""
    calls = []

    def fake(fn, argtypes, cc):
        calls.append((fn.__name__, tuple(map(str, argtypes)), cc))
        return f".visible .entry stub_{len(calls)}(\n)\n{{\n\tret;\n}}\n"
    monkeypatch.setattr(toolchain, "_compile", fake)
    monkeypatch.setattr(toolchain, "_compile_in_child", fake)
    return calls


def test_cache_keys_differ_by_types_and_cc(cache, monkeypatch):
    calls = _fake_compiler(monkeypatch)
    p = toolchain.kernel_ptx(row_sums, (A, A, 4))
    assert toolchain.kernel_ptx(row_sums, (A.astype(np.float64), A, 4)).key != p.key
    assert toolchain.kernel_ptx(row_sums, (A, A, 4), (8, 0)).key != p.key
    assert toolchain.kernel_ptx(row_sums, (A, A, np.int32(4))).key != p.key
    assert toolchain.kernel_ptx(reverse_block, (A, A)).key != p.key
    assert len(calls) == 5
    toolchain.clear_memory_cache()
    assert toolchain.kernel_ptx(row_sums, (A, A, 4)).ptx == p.ptx and len(calls) == 5
    assert toolchain.sm_arch((8, 0)) == "sm_80" and toolchain.sm_arch((9, 0)) == "sm_90a"


def test_corrupt_cache_entries_are_recompiled(cache, monkeypatch):
    p = toolchain.kernel_ptx(reverse_block, (A, A))
    s = toolchain.sass(p)
    for f in cache.iterdir():
        data = f.read_bytes()
        f.write_bytes(data[:len(data) // 2] + b"garbage")
    toolchain.clear_memory_cache()
    runs = _count_runs(monkeypatch)
    p2 = toolchain.kernel_ptx(reverse_block, (A, A))
    assert p2.ptx == p.ptx
    assert toolchain.sass(p2).instrs == s.instrs
    assert runs == ["ptxas", "nvdisasm"]
    for f in cache.iterdir():                            # rewritten whole
        head, _, body = f.read_bytes().partition(b"\n")
        assert b"garbage" not in body[-10:]


def test_unwritable_cache_degrades_to_memory(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setattr(toolchain, "CACHE_DIR", str(blocker / "kernels"))
    toolchain.clear_memory_cache()
    with pytest.warns(RuntimeWarning, match="not writable"):
        p = toolchain.kernel_ptx(calls_device, (A, A))
    assert toolchain.sass(p).instrs
    assert toolchain.kernel_ptx(calls_device, (A, A)) is p       # kept in memory
    calls = _fake_compiler(monkeypatch)
    monkeypatch.setattr(toolchain, "CACHE_DIR", "")              # disk cache off
    assert toolchain.cache_dir() is None
    toolchain.clear_memory_cache()
    toolchain.kernel_ptx(calls_device, (A, A))
    toolchain.kernel_ptx(calls_device, (A, A))
    assert len(calls) == 1
    assert not any(tmp_path.rglob("*.ptx"))


def test_uncompilable_kernel_one_line(cache):
    with pytest.raises(ValueError) as e:
        toolchain.kernel_ptx(adds_a_string, (A,))
    msg = str(e.value)
    assert "\n" not in msg and "\x1b" not in msg
    assert "'adds_a_string'" in msg and "array(float32, 1d, C)" in msg
    assert "No implementation of function" in msg and "add(float32" in msg


def test_ptxas_error_one_line(cache):
    p = toolchain.kernel_ptx(calls_device, (A, A))
    broken = toolchain.KernelPTX(p.name, p.entry, p.ptx.replace("ret;", "bogus.op;", 1),
                                 p.argtypes, p.cc, p.fingerprint)
    with pytest.raises(ValueError) as e:
        toolchain.cubin(broken)
    msg = str(e.value)
    assert "\n" not in msg and "'calls_device'" in msg and "ptxas" in msg
    assert "error" in msg.lower() and "/tmp" not in msg


def test_missing_tools_name_their_package(monkeypatch):
    monkeypatch.setattr(toolchain, "_find_binary", lambda name: None)
    with pytest.raises(FileNotFoundError, match="nvidia-cuda-nvcc"):
        toolchain.tool_path("ptxas")
    with pytest.raises(FileNotFoundError, match="nvidia-cuda-nvdisasm"):
        toolchain.tool_path("nvdisasm")


def test_a_second_process_reads_the_cache(cache):
    p = toolchain.kernel_ptx(calls_device, (A, A))
    toolchain.sass(p)
    code = ("import numpy as np, test_toolchain as t\n"
            "from simulator.kernelcode import toolchain as tc\n"
            "def refuse(*a, **k): raise AssertionError('compiled again')\n"
            "tc._compile = tc._compile_in_child = tc._run = refuse\n"
            "p = tc.kernel_ptx(t.calls_device, (t.A, t.A))\n"
            "print(p.entry, len(tc.sass(p).instrs))\n")
    here = Path(__file__).resolve()
    env = {"PYTHONPATH": f"{here.parents[1]}:{here.parent}", "ROOFSIM_CACHE": str(cache),
           "PATH": "/usr/bin:/bin", "HOME": str(cache.parent)}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=env, cwd=here.parents[1])
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() == [p.entry, str(len(toolchain.sass(p).instrs))]
