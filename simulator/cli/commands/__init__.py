"""The commands: one module each family, its parsers beside its handlers.

``COMMANDS`` lists every command once -- its name, the module that holds it and its
one-line help -- so that ``roofsim --help`` lists them all while a run imports only the
module of the command asked for. A module holds, for each of its commands, a function
``add_NAME(sub)`` (``-`` in the name as ``_``) that adds the command's parser to the
subparsers ``sub`` with ``set_defaults(func=handler)``, and declares what its commands
need in ``NEEDS``:

* ``kernels``: options read from the kernel registry (``simulator.cli.kernel_options``);
* ``engine``: a long numba call (run on a thread of its own so Ctrl-C stops it, and a
  first run says it is compiling the engine);
* ``gpu``: a real NVIDIA GPU (``roofsim measure``);
* ``dask``: independent predictions spread over workers (``--workers``, ``--scheduler``).

A new command is one module here and one row below (``docs/architecture.md``).
"""
from __future__ import annotations

from typing import NamedTuple


class Command(NamedTuple):
    name: str
    module: str
    help: str


COMMANDS = (
    Command("hw", "hw", "hardware presets"),
    Command("workload", "workload", "workloads"),
    Command("roofline", "bounds", "hierarchical roofline bound per op and for the network"),
    Command("roofline-compare", "bounds",
            "several hardware rooflines on one chart (default: the TPU paper's)"),
    Command("simulate", "simulate", "run an engine"),
    Command("sweep", "sweep", "what-if sweeps on the SIMT model"),
    Command("emulate", "emulate", "run a numba.cuda kernel on this CPU from its PTX (no GPU)"),
    Command("occupancy", "occupancy", "resident blocks and warps per SM (CUDA's rules)"),
    Command("measure", "measure", "time the kernels on this machine's NVIDIA GPU (numba.cuda)"),
    Command("check", "check", "is a measured time plausible? a trace's kernels against their "
            "roofline bounds"),
    Command("tune", "tune", "the simulator as a cost model: every configuration of roofsim's "
            "kernels for a GEMM or a convolution, ranked"),
    Command("calibrate", "validate", "latency and bandwidth parameters from a micro suite"),
    Command("validate", "validate", "predictions against committed measurements, per suite"),
    Command("plan", "plan", "a network as roofsim's kernels: per-layer and total predicted time "
            "of a plan, or the fastest plan"),
    Command("datamove", "bounds", "compulsory bytes, pebble lower bound, host-to-device time"),
)

BY_NAME = {c.name: c for c in COMMANDS}
NEEDS = ("kernels", "engine", "gpu", "dask")
