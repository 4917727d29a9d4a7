"""A toy kernel defined in one module, as a user adding a kernel would write it:
``y = x + x`` over n float32 elements with a grid-stride loop. Its accesses are relu's,
so its program runs on relu's numba address functions (``face="relu"``) and needs no
dispatch line; registering it is one line (``REGISTRY.add(SPEC)``)."""
import numpy as np
from numba import cuda

from simulator.simt import isa
from simulator.simt.kernels import Arg, Device, KernelSpec, relu
from simulator.simt.kernels.launch import Launch

NAME = "toy-double"


@cuda.jit
def double_kernel(x, y, n):
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    while i < n:
        y[i] = x[i] + x[i]
        i += cuda.gridDim.x * cuda.blockDim.x


def _template():
    a = isa.Asm()
    a.alu("i", n=2)             # i = blockIdx.x * blockDim.x + threadIdx.x
    a.body()
    a.ldg("v", 0, "i")          # v = x[i]
    a.fadd("y", "v", "v")       # y = v + v: one FLOP a lane
    a.stg(1, "y", "i")          # y[i] = y
    a.alu("i", "i")             # i += stride
    a.bra("i")
    a.epilogue()
    return a.template()


TEMPLATE = _template()
INSTRUCTIONS_PER_TRIP, PROLOGUE = 5, 2


def _launch(p):
    return Launch(p["grid"][0], p["block"][0])


def build(hw, p):
    lc, n = _launch(p), p["n"]
    lc.check(hw)
    bases = isa.layout_arrays([("x", n), ("y", n)])
    params, names = isa.params(lc, n=n, base_x=bases["x"], base_y=bases["y"])
    t, pro, body, nregs = TEMPLATE
    return (isa.Program(
        name=NAME, face="relu", launch=lc, params=params, template=t, pro_end=pro, body_end=body,
        n_regs=nregs, streams=(isa.Stream("x", "global", "x"), isa.Stream("y", "global", "y")),
        arrays=(("x", bases["x"], n), ("y", bases["y"], n)), regs_per_thread=8, smem_per_block=0,
        resources_source="estimate", flops=n, min_bytes=8 * n, param_names=names),)


def device(p):
    lc, n = _launch(p), p["n"]
    return Device(inputs=lambda rng: {"x": rng.standard_normal(n, dtype=np.float32)},
                  outputs={"y": (n,)},
                  launch=lambda a, stream=0: double_kernel[lc.grid[0], lc.block[0], stream](
                      a["x"], a["y"], n),
                  reference=lambda i: {"y": 2.0 * i["x"].astype(np.float64)},
                  kernels=((NAME, double_kernel),), shapes=((lc.grid, lc.block),))


def op(p):
    from workloads.ir import Elementwise
    return Elementwise(name=NAME, n=p["n"], op="add")


SPEC = KernelSpec(
    name=NAME, summary="y = x + x (a test's toy kernel)",
    args=(Arg("n", "size", "elements", required=True),
          Arg("grid", "dims", "blocks", default=(4,)), Arg("block", "dims", "threads per block",
                                                           default=(64,))),
    build=build, op=op, device=device,
    accesses=lambda p: (relu.thread_accesses(_launch(p), p["n"]),),
    variants=({"n": 100, "grid": (2,), "block": (32,)},),
    group=lambda p: (NAME, p["n"]))
