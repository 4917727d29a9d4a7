"""Argument types and option groups, each declared once, and the command line's view of
the library: hardware and workloads from the options, library errors mapped to flags.

A command module builds its parser from these groups (``add_hw``, ``add_workload``,
``add_engine``, ``add_workers``, ``add_outputs``) and reads the hardware and workload
with ``load_hw`` and ``load_workload``. Nothing here imports numba or the kernels.
"""
from __future__ import annotations

import argparse
import re

from simulator.arguments import L2_STATES, MAX_TRACE, max_workers, repeated

DTYPE_CHOICES = ("fp32", "fp16", "bf16", "int8", "fp64", "tf32")
LAYOUTS = ("nchw", "nhwc")
MAX_COUNT = 2**48       # any count typed on the command line (elements, sizes, batch...)
MAX_SWEEP = 10_000      # launches (or sizes) one sweep takes
OUTPUT_OPTIONS = ("csv", "json", "plot", "toml", "scalesim_csv", "oracle",
                  "timeline", "save")  # files written
TIMELINE_INSTRUCTIONS = MAX_TRACE   # issued instructions a --timeline keeps (the API's trace limit)


class UsageError(Exception):
    """A mistake on the command line, its message already the whole line."""


# the help of options many commands share, where a command gives none of its own
COMMON_HELP = {
    "--csv": "write the table as CSV to FILE",
    "--json": "write the result, with its inputs, as JSON to FILE",
    "--plot": "draw the chart to FILE (.png, .svg or .pdf)",
    "--toml": "write the hardware as a TOML preset to FILE",
    "--batch": "batch size (default 1)",
    "--resolution": "input height and width of a network (default: its own)",
    "--dtype": "element type (default fp32)",
    "--layout": "activation layout of the convolutions (default nchw)",
    "--policy": "the engine's warp scheduler: gto (greedy then oldest, the default) or lrr "
                "(loose round robin); the analytic model has none",
    "--kernel": "a registered kernel (roofsim simulate simt --help lists them)",
    "--mode": "how to predict (see the command's description)",
    "--suites": "comma-separated suites, e.g. grid,gemm,conv",
    "hw": "a hardware preset name (roofsim hw list), a TOML file or a SCALE-Sim .cfg",
    "workload": "a network (resnet50...), gemm:MxNxK, relu:N, conv:n=..,c=..,... or a "
                "SCALE-Sim topology CSV",
}


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors (exit 2 through ``UsageError``), the shared help of
    common options, and ``--no-timing`` beside any ``--csv`` or ``--json``."""

    def error(self, message):
        raise UsageError(f"{self.prog}: {message}")

    def add_argument(self, *names, **kw):
        if not kw.get("help") and names and names[0] in COMMON_HELP:
            kw["help"] = COMMON_HELP[names[0]]
        action = super().add_argument(*names, **kw)
        if names and names[0] in ("--csv", "--json") and "--no-timing" not in self._option_string_actions:
            super().add_argument("--no-timing", action="store_true",
                                 help="leave the run's own wall times out of --csv and --json, "
                                      "so that two runs' files compare equal")
        return action


# ---------------------------------------------------------------- argument types

def ascii_int(v: str) -> int:
    """int() of plain ASCII digits only (Python's own int() reads any script's digits,
    and ``1_000``): the one integer parser of every option."""
    if not re.fullmatch(r"\s*[+-]?[0-9]+\s*", v):
        raise ValueError(v)
    return int(v)


def ascii_number(v: str) -> float:
    """float() of plain ASCII decimal notation only (``1000``, ``1.5e6``; not ``1_000``,
    ``inf`` or another script's digits), -0 read as 0 (so that it never prints as -0)."""
    if not re.fullmatch(r"\s*[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?\s*", v):
        raise ValueError(v)
    return float(v) + 0.0


def positive_int(name, maximum=MAX_COUNT, minimum=1):
    def conv(text):
        t = str(text).strip()
        if len(t) > 18:
            raise argparse.ArgumentTypeError(f"{t[:12]}... ({len(t)} characters) is too large; "
                                             f"at most {maximum}")
        try:
            v = ascii_int(t)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{t[:40]!r} is not an integer") from None
        if v < minimum:
            raise argparse.ArgumentTypeError(f"{v} must be >= {minimum}")
        if v > maximum:
            raise argparse.ArgumentTypeError(f"{v} is too large; at most {maximum}")
        return v
    conv.__name__ = name
    return conv


def positive_seconds(name):
    """A positive, finite number of seconds (a plain number: ``600``, ``1.5``)."""
    def conv(text):
        t = str(text).strip()
        if not re.fullmatch(r"[0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?", t):
            raise argparse.ArgumentTypeError(f"{t[:40]!r}: expected a positive number of seconds, "
                                             "e.g. 600")
        v = float(t)
        if not 0 < v < 1e9:
            raise argparse.ArgumentTypeError(f"{t[:40]}: expected a positive number of seconds "
                                             "under 1e9")
        return v
    conv.__name__ = name
    return conv


def budget(text):
    """--engine-budget: a whole number of warp instructions, 0 up to 1e15."""
    try:
        v = ascii_number(str(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{str(text)[:40]!r} is not a number in plain digits "
                                         "(e.g. 1000 or 1e6)") from None
    if not 0 <= v <= 1e15 or v != int(v):
        raise argparse.ArgumentTypeError(f"{str(text)[:40]!r}: a whole number of warp "
                                         "instructions from 0 to 1e15")
    return v


def items(text, name) -> list:
    """A comma-separated option's items: none empty (``1,,2``), none given twice (each
    would count twice in a table or a score)."""
    out = [x.strip() for x in str(text).split(",")]
    if any(not x for x in out):
        raise ValueError(f"{name} {text!r}: an empty item; separate items by single commas")
    seen = set()
    for x in out:
        if x in seen:
            raise ValueError(f"{name} {text!r}: {x!r} given twice; give each item once")
        seen.add(x)
    return out


def int_list(text, name, dims=1):
    """'1,2,4', '1-64', '8-1024:8' or (dims 2) '16x16,32x8' -> list of ints or tuples."""
    out = []
    for part in items(text, name):
        try:
            if "x" in part.lower():
                t = tuple(ascii_int(v) for v in part.lower().split("x"))
                if len(t) > dims:
                    raise ValueError
                out.append(t)
            elif "-" in part:
                rng, _, step = part.partition(":")
                lo, hi = (ascii_int(v) for v in rng.split("-"))
                st = ascii_int(step) if step else 1
                if lo < 1 or hi < lo or st < 1:
                    raise ValueError
                if len(out) + (hi - lo) // st + 1 > MAX_SWEEP:
                    raise UsageError(f"roofsim: error: {name} {part!r}: {(hi - lo) // st + 1:,} "
                                     f"sizes; a sweep takes at most {MAX_SWEEP:,} (a coarser "
                                     "STEP, or a few ranges)")
                out += list(range(lo, hi + 1, st))
            else:
                out.append(ascii_int(part))
        except ValueError:
            raise ValueError(f"{name} {part!r}: expected N, A-B, A-B:STEP"
                             + (" or AxB" if dims > 1 else "") + ", comma-separated") from None
    seen = set()
    twice = next((v for v in out if v in seen or seen.add(v)), None)
    if twice is not None:
        raise ValueError(f"{name} {text!r}: {twice} given twice (ranges included); each size "
                         f"once")
    bad = [v for v in out if min(v if isinstance(v, tuple) else (v,)) < 1]
    if bad or not out:
        raise ValueError(f"{name} {text!r}: give one or more positive sizes")
    return out


def one_dims(text, name):
    """One grid or block shape (``256``, ``16x16``), or None where not given."""
    if text is None:
        return None
    v = int_list(text, name, dims=2)
    if len(v) != 1:
        raise ValueError(f"{name} {text!r}: give one size")
    return v[0]


def launcher_args(items) -> dict:
    """``--arg NAME=VALUE`` (repeatable) as keyword arguments for a launcher: VALUE an
    integer (``65536``, ``2^16``), a number (``0.5``) or, failing both, the text."""
    out = {}
    for item in items or ():
        name, eq, text = item.partition("=")
        name = name.strip()
        if not eq or not name.isidentifier():
            raise ValueError(f"--arg {item!r}: expected NAME=VALUE, NAME a Python name "
                             "(e.g. --arg n=65536)")
        if name in out:
            raise ValueError(f"--arg {name}: given twice")
        text = text.strip()
        base, caret, power = text.partition("^")
        if caret and base.isdigit() and power.isdigit():
            out[name] = int(base) ** int(power)
            continue
        for conv in (int, float):
            try:
                out[name] = conv(text)
                break
            except ValueError:
                pass
        else:
            out[name] = text
    return out


def add_launcher_args(p):
    """--arg NAME=VALUE for a FILE.py:LAUNCHER command."""
    p.add_argument("--arg", action="append", metavar="NAME=VALUE",
                   help="a further keyword argument for the launcher, e.g. n=65536 or "
                        "n=2^16 (repeatable; the launcher must take it)")


# ---------------------------------------------------------------- option groups

def add_hw(p, required=True):
    """--hw and --set."""
    p.add_argument("--hw", required=required, metavar="NAME|FILE",
                   help="hardware preset name (`roofsim hw list`), a TOML file or a SCALE-Sim "
                        ".cfg file")
    p.add_argument("--set", action="append", metavar="FIELD=VALUE",
                   help="override one hardware field, e.g. l2.size_bytes=8MiB (repeatable)")


def add_workload(p, required=True, dtype=False):
    """--workload, --batch, --resolution, --layout (and --dtype where asked)."""
    p.add_argument("--workload", required=required, metavar="W",
                   help="resnet50, conv-ablation, gemm:MxNxK, relu:N, conv:n=..,c=..,..., or a "
                        "SCALE-Sim topology CSV")
    p.add_argument("--batch", type=positive_int("batch"), help="batch size (default 1)")
    p.add_argument("--resolution", type=positive_int("resolution"),
                   help="input height and width for networks (resnet50: 224, conv-ablation: 56)")
    p.add_argument("--layout", choices=LAYOUTS, help="activation layout (default nchw)")
    if dtype:
        p.add_argument("--dtype", choices=DTYPE_CHOICES,
                       help="data type and precision (tf32: fp32 data on TF32 matrix units); "
                            "default fp32, or the hardware's fastest precision when it has no "
                            "fp32 (tpu-v1: int8)")


ENGINE_MODES = ("full", "sampled", "analytic")
L2_HELP = ("cold: the launch's buffers are not in the L2, which holds earlier launches' lines "
           "(their dirty ones written back as they are evicted: an application, a benchmark "
           "rotating buffers; default); warm: its buffers start in it, as after an identical "
           "launch (what repeated measurements on one buffer set see); flushed: the L2 empty, "
           "as Nsight Compute leaves it before a profiled launch")
#: what a run's first line says of the L2 it starts from
L2_NOTE = {"cold": " (holding earlier launches' lines at the start)",
           "warm": " (the launch's buffers start in the L2, as after an identical launch)",
           "flushed": " (empty at the start, as Nsight Compute leaves it)"}


def add_engine(p, modes=ENGINE_MODES, default="sampled", policy=True, mode_help=None):
    """--mode, --policy and --l2: how the SIMT engine predicts."""
    p.add_argument("--mode", choices=modes, default=default, help=mode_help)
    if policy:
        p.add_argument("--policy", choices=("gto", "lrr"))
    p.add_argument("--l2", choices=L2_STATES, default="cold", help=L2_HELP)


def add_workers(p):
    """--workers or --scheduler: where independent predictions run (Dask)."""
    g = p.add_mutually_exclusive_group()      # a scheduler's cluster has its own workers
    g.add_argument("--workers", type=positive_int("workers", max_workers()), metavar="N",
                   help="local worker processes (Dask LocalCluster; default: one per core; "
                        "1: run here)")
    g.add_argument("--scheduler", metavar="ADDRESS",
                   help="run on an existing Dask cluster, e.g. tcp://10.0.0.5:8786")


def add_outputs(p, csv=True, json=True, plot=None, timeline=None):
    """--csv, --json (with --no-timing), and --plot / --timeline with the help given."""
    if csv:
        p.add_argument("--csv", metavar="FILE")
    if json:
        p.add_argument("--json", metavar="FILE")
    if plot is not None:
        p.add_argument("--plot", metavar="FILE", help=plot or None)
    if timeline is not None:
        p.add_argument("--timeline", metavar="FILE.json", help=timeline)


def workers(args):
    """--workers, or for the analytic model alone (milliseconds a point) 1: starting
    worker processes would cost more than it saves."""
    if args.workers is None and getattr(args, "mode", None) == "analytic" and not args.scheduler:
        return 1
    return args.workers


# ---------------------------------------------------------------- hardware and workloads

def set_fields(args) -> list:
    """The hardware fields the command's --set options name, in order."""
    return [str(x).partition("=")[0].strip() for x in (getattr(args, "set", None) or [])]


FAMILY_WORDS = {"simt": "a SIMT GPU", "systolic": "a systolic array"}


def load_hw(args, family=None, why=""):
    """--hw with its --set overrides; ``family``: refused unless the preset is one
    (``why`` finishes the message, e.g. " (try gtx480, v100, h100-sxm)")."""
    import hwmodels
    twice = repeated(set_fields(args))
    if twice:
        raise ValueError(f"--set {twice[0]}=...: given {twice[1]} times; set each field once")
    hw = hwmodels.get(args.hw)
    try:
        hw = hwmodels.with_overrides(hw, args.set or [])
    except ValueError as e:            # it names the field or assignment; the option is --set
        raise ValueError(f"--set {e}") from None
    if family is not None and getattr(hw, "family", None) != family:
        raise ValueError(f"--hw {hw.name}: not {FAMILY_WORDS[family]}{why}")
    return hw


def default_dtype(hw) -> str:
    """fp32 where the hardware computes it, else its fastest precision (tpu-v1: int8)."""
    supported = hw.peak_rates().supported()
    if "fp32" in supported:
        return "fp32"
    return max((q for q in supported if q != "tf32"), key=hw.peak_flop_per_s)


def load_workload(args, hw=None):
    """--workload with --batch, --resolution, --dtype and --layout (a --dtype left out
    becomes ``hw``'s default precision)."""
    import workloads
    if getattr(args, "dtype", "absent") is None and hw is not None:
        args.dtype = default_dtype(hw)
    storage = "fp32" if getattr(args, "dtype", None) == "tf32" else getattr(args, "dtype", None)
    return workloads.resolve(args.workload, batch=args.batch, resolution=args.resolution,
                             dtype=storage, layout=getattr(args, "layout", None))


# ---------------------------------------------------------------- the library's errors as flags

_KEYWORD = re.compile(r"(?<![\w-])(?:([a-z][a-z0-9_]*)='((?:[^'\\]|\\.)*)'"
                      r"|([a-z][a-z0-9_]{2,})=([0-9]+)(?![\w.]))")


def as_flags(message: str, dests, aliases=None) -> str:
    """A library message in the command line's terms: each ``name='value'`` (the Python
    API's keyword form) whose ``name`` is one of the command's options (``dests``), or an
    argument ``aliases`` maps to one, becomes ``--name 'value'``; a number written
    unquoted, ``name=8``, becomes ``--name 8`` where the name is three letters or more (a
    shape's ``n=1,c=3`` echoed in a message is not an argument)."""
    def sub(m):
        given, quoted = (m.group(1), True) if m.group(1) else (m.group(3), False)
        name = (aliases or {}).get(given, given)
        if name not in dests:
            return m.group(0)
        return f"--{name.replace('_', '-')} " + (f"'{m.group(2)}'" if quoted else m.group(4))
    return _KEYWORD.sub(sub, message)


# ---------------------------------------------------------------- before any work

def _resolved(name, path):
    """``path`` with its links followed; a loop of links is an error naming the option."""
    from pathlib import Path
    try:
        return Path(path).resolve()
    except RuntimeError:                          # (Python 3.11-3.12: a loop of links)
        raise ValueError(f"{name} {path!r}: a loop of symbolic links; give a file") from None
    except OSError as e:                          # (3.13: ELOOP, and the like)
        raise ValueError(f"{name} {path!r}: cannot follow it ({e.strerror or e})") from None


def written_in_place(path) -> bool:
    """Whether output ``path`` is something written in place, not replaced by a file: a
    device, a named or anonymous pipe, a socket -- whatever its links lead to, as
    ``open`` follows them (``/dev/stdout`` onto a pipe leads to ``/proc/PID/fd/1``, whose
    target ``pipe:[N]`` names no file in any folder)."""
    import os
    import stat
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return False                 # nothing there (yet): a new file
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def _writable(name, path, target):
    """Whether the output can be written, tried as the writer will: a regular file (or a
    new one) is written to a temporary name in its folder and renamed over it, so a
    temporary file is made there and removed; an existing file must take writing."""
    import os
    import tempfile
    folder = target.parent
    if target.is_file() and not os.access(target, os.W_OK):
        raise ValueError(f"{name} {path!r}: the file exists and cannot be replaced")
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".roofsim-probe.")
    except OSError as e:
        raise ValueError(f"{name} {path!r}: cannot write in folder {str(folder)!r} "
                         f"({e.strerror or e})") from None
    os.close(fd)
    os.unlink(tmp)


def check_outputs(args):
    """Refuse output paths that cannot be written before any work, not after it."""
    import os
    from pathlib import Path
    given = [(opt, getattr(args, opt, None)) for opt in OUTPUT_OPTIONS if getattr(args, opt, None)]
    seen = {}
    for opt, path in given:
        name = "--" + opt.replace("_", "-")
        if written_in_place(path):
            continue                 # a device or a pipe takes one output after another
        real = str(_resolved(name, path))
        if real in seen:
            raise ValueError(f"{name} {path!r}: the same file as "
                             f"--{seen[real].replace('_', '-')}; give each output its own")
        seen[real] = opt
    inputs = _input_paths(args)
    for opt in OUTPUT_OPTIONS:
        path = getattr(args, opt, None)
        name = "--" + opt.replace("_", "-")
        if str(path).strip() == "-":
            raise ValueError(f"{name} '-': give a file name ('-' is not standard output here; "
                             "/dev/stdout is)")
        if not path:
            continue
        if written_in_place(path):
            # a device or a pipe (/dev/stdout onto `| cat`): written in place, so it must
            # take writing itself; its folder is not written in
            if not os.access(path, os.W_OK):
                raise ValueError(f"{name} {path!r}: not writable (a device or a pipe)")
            continue
        target = _resolved(name, path)
        folder = target.parent
        if Path(path).is_dir():
            raise ValueError(f"{name} {path!r}: is a folder, not a file")
        if str(path).endswith(("/", os.sep)):
            raise ValueError(f"{name} {path!r}: ends in '/', as a folder does; give a file name")
        _not_an_input(name, path, inputs)
        if not folder.is_dir():
            via = " (where its link leads)" if Path(path).is_symlink() else ""
            raise ValueError(f"{name} {path!r}: folder {str(folder)!r}{via} does not exist")
        if not os.access(folder, os.W_OK):
            raise ValueError(f"{name} {path!r}: folder {str(folder)!r} is not writable")
        _writable(name, path, target)
    if getattr(args, "no_timing", False) and not (getattr(args, "csv", None)
                                                  or getattr(args, "json", None)):
        raise ValueError("--no-timing leaves the run's wall times out of --csv and --json; "
                         "give one of them")
    for opt, ends in (("timeline", (".json",)), ("toml", (".toml",)), ("scalesim_csv", (".csv",)),
                      ("csv", (".csv", ".txt")), ("json", (".json",)), ("save", (".npz",))):
        path = getattr(args, opt, None)
        if path and Path(path).suffix.lower() in _KNOWN_SUFFIXES \
                and not str(path).lower().endswith(ends):
            # a name that says another format (t.png for a Chrome trace) is a slip
            raise ValueError(f"--{opt.replace('_', '-')} {path!r}: writes {ends[0]} "
                             f"({_FORMAT[opt]}); a {Path(path).suffix} name says another format")
    save = getattr(args, "save", None)
    if save and not str(save).lower().endswith(".npz"):
        raise ValueError(f"--save {save!r}: the file must end in .npz (numpy's archive)")
    plot = getattr(args, "plot", None)
    if plot and str(plot).rsplit(".", 1)[-1].lower() not in ("png", "svg", "pdf"):
        raise ValueError(f"--plot {plot!r}: the file must end in .png, .svg or .pdf")


_KNOWN_SUFFIXES = (".png", ".svg", ".pdf", ".jpg", ".jpeg", ".json", ".csv", ".toml", ".txt",
                   ".cfg", ".html", ".xlsx")
_FORMAT = {"timeline": "a Chrome trace", "toml": "a hardware preset", "scalesim_csv":
           "a SCALE-Sim topology", "csv": "a table", "json": "JSON", "save": "numpy arrays"}


INPUT_OPTIONS = ("hw", "trace", "plan", "workload", "vs", "measurements",
                 "launcher_file")   # files (folders) read


def _input_paths(args) -> list:
    """(option, resolved path) of every input the command reads from a file or folder."""
    import os
    from pathlib import Path
    out = []
    for opt in INPUT_OPTIONS:
        v = getattr(args, opt, None)
        for x in (v if isinstance(v, list) else [v]):
            if isinstance(x, str) and x.strip() and os.path.exists(x):
                try:
                    out.append((opt, Path(x).resolve()))
                except (RuntimeError, OSError):
                    continue              # (its own reader names the loop)
    return out


def _not_an_input(name, path, inputs):
    """An output may not overwrite what the command reads: the file itself, or a file in
    a folder it reads (``--measurements``)."""
    from pathlib import Path
    p = Path(path).resolve()
    for opt, src in inputs:
        flag = ("the launcher FILE.py:LAUNCHER" if opt == "launcher_file"
                else "--" + opt.replace("_", "-"))
        if src.is_dir():
            if p.is_file() and p.is_relative_to(src):
                raise ValueError(f"{name} {path!r}: a file in {flag} {str(src)!r}, which this "
                                 "command reads; write the output elsewhere")
        elif p == src:
            raise ValueError(f"{name} {path!r}: the file {flag} reads; writing it would "
                             "destroy the input")


def refuse_empty_values(args):
    """An option given an empty value (``--shape ''``, ``--onchip-bytes=``) is an error,
    never read as "not given" (and so as the default) by a later ``if args.x:``."""
    for name, value in vars(args).items():
        values = value if isinstance(value, list) else [value]
        if any(isinstance(v, str) and not v.strip() for v in values):
            flag = "--" + name.replace("_", "-")
            raise UsageError(f"roofsim: {flag} {value if isinstance(value, str) else ''!r}: an "
                             f"empty value; give one")


def check_policy(args):
    """--policy applies to the engine; unset, it is gto (the API's rule,
    ``arguments.policy``)."""
    from simulator import arguments
    if hasattr(args, "policy"):
        try:
            args.policy = arguments.policy(args.policy, getattr(args, "mode", None))
        except ValueError:
            raise UsageError(f"roofsim: --policy {args.policy}: the analytic model has no warp "
                             f"scheduler; --policy applies to --mode sampled or full") from None


def join_negative_values(argv):
    """``--opt -1KiB`` as ``--opt=-1KiB``: argparse takes a value that starts with '-' and
    is not a plain number for an option, and says "expected one argument"; joined, the
    option's own parser names the value and what is allowed."""
    out, i = [], 0
    while i < len(argv):
        a = argv[i]
        b = argv[i + 1] if i + 1 < len(argv) else ""
        if (a.startswith("--") and "=" not in a and len(b) > 1 and b[0] == "-"
                and (b[1].isdigit() or b[1] == ".")):
            out.append(f"{a}={b}")
            i += 2
        else:
            out.append(a)
            i += 1
    return out
