"""The process around a command: the parser of the command asked for, exit codes,
signals, and the thread a long engine call runs on.

Exit codes: 0 done; 2 bad input (one line on stderr naming the field, the value and what
is allowed); 130 interrupted (Ctrl-C; what finished is written, marked partial); 1 an
internal error (one line too; ``ROOFSIM_DEBUG=1`` shows its traceback). Never a
traceback otherwise.
"""
from __future__ import annotations

import argparse
import importlib
import os
import re
import sys
from typing import TYPE_CHECKING

from . import loading
from .commands import BY_NAME, COMMANDS
from .options import (
    Parser,
    UsageError,
    as_flags,
    check_outputs,
    check_policy,
    join_negative_values,
    refuse_empty_values,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

HELP = ("-h", "--help")


def _version():
    from simulator import __version__
    return f"roofsim {__version__}"


def _module(command):
    return importlib.import_module(f"simulator.cli.commands.{BY_NAME[command].module}")


def build_parser(only: str | None = None, help_only: bool = False) -> Parser:
    """The parser: every command's own when ``only`` is None, else that command's (the
    others listed by name and help alone, their modules not imported). ``help_only``:
    kernel options from the catalog, not the registry (for ``--help``)."""
    ap = Parser(prog="roofsim", description="Roofline bounds, SIMT and systolic simulation, "
                "and GPU measurement of tensor programs.")
    ap.add_argument("--version", action="version", version=_version())
    sub = ap.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    sub.required = True
    for c in COMMANDS:
        if only is None or c.name == only:
            mod = _module(c.name)
            add = getattr(mod, "add_" + c.name.replace("-", "_"))
            add(sub, help_only=help_only) if "kernels" in mod.NEEDS else add(sub)
        else:
            sub.add_parser(c.name, help=c.help)
    return ap


def _chosen(argv):
    """The command named on the command line (its first word that is not an option)."""
    for a in argv:
        if not a.startswith("-"):
            return a if a in BY_NAME else None
    return None


def _dests(parser, argv) -> set:
    """The option names (argparse dests) of the (sub)command ``argv`` runs."""
    out = set()
    while parser is not None:
        nxt = None
        for a in parser._actions:
            if isinstance(a, argparse._SubParsersAction):
                nxt = next((a.choices[w] for w in argv if w in a.choices), None)
            elif a.option_strings:
                out.add(a.dest)
        parser = nxt
    return out


def _given(parser, argv) -> set:
    """The option names (dests) typed on the command line, not left at their defaults:
    ``argv`` parsed again with every default of the chosen command's options replaced by
    a marker (argparse's own matching: abbreviations, ``--x=v``, groups)."""
    marker, changed = object(), []
    # options that add to what they find (--set, counts) start from None: they are given
    # where anything is there
    adding = (argparse._AppendAction, argparse._AppendConstAction, argparse._CountAction,
              argparse._ExtendAction)
    node = parser
    while node is not None:
        nxt = None
        for a in node._actions:
            if isinstance(a, argparse._SubParsersAction):
                nxt = next((a.choices[w] for w in argv if w in a.choices), None)
            elif a.option_strings and a.dest != "help":
                changed.append((a, a.default, a.__class__))
                a.default = None if isinstance(a, adding) else marker
                if type(a) is argparse._StoreAction:
                    a.__class__ = _CountedStore
        node = nxt
    try:
        again = parser.parse_args(argv)
    finally:
        for a, default, cls in changed:
            a.default = default
            a.__class__ = cls
    twice = next((o for o, n in getattr(again, "_typed_", {}).items() if n > 1), None)
    if twice is not None:
        # argparse keeps the last value silently: refused, as --set given twice is
        raise UsageError(f"roofsim: {twice} is given twice; give it once")
    adders = {a.dest for a, *_ in changed if isinstance(a, adding)}
    return {k for k, v in vars(again).items()
            if k != "_typed_" and (v is not None if k in adders else v is not marker)}


class _CountedStore(argparse._StoreAction):
    """A value option that counts how often it is typed (in the namespace's ``_typed_``)."""

    def __call__(self, parser, namespace, values, option_string=None):
        typed = namespace.__dict__.setdefault("_typed_", {})
        flag = max(self.option_strings, key=len)
        typed[flag] = typed.get(flag, 0) + 1
        super().__call__(parser, namespace, values, option_string)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; return its exit code (see the module's doc). A Ctrl-C that lands
    outside the command (as it starts, on its last line, as the process exits) is exit
    130 as well."""
    try:
        code = _main(argv)
    except KeyboardInterrupt:
        print("roofsim: interrupted", file=sys.stderr)
        code = 130
    return loading.leave(code)


def _main(argv=None) -> int:
    loading.ready()
    loading.show_notices()
    # started with standard output or error closed (`roofsim ... >&-`): what would be
    # printed goes nowhere, and the command still does its work (its --csv, --json)
    if sys.stdout is None:
        sys.stdout = open(os.devnull, "w")
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w")
    dests, aliases = set(), {}
    try:
        argv = join_negative_values(sys.argv[1:] if argv is None else list(argv))
        command = _chosen(argv)
        parser = build_parser(only=command or "", help_only=bool(set(HELP) & set(argv)))
        dests = _dests(parser, argv)
        if command:
            aliases = getattr(_module(command), "FLAG_OF", {})
        args = parser.parse_args(argv)
        args.given = _given(parser, argv)
        refuse_empty_values(args)
        check_policy(args)
        check_outputs(args)          # every output path, before any work
        from simulator import table
        table.NO_TIMING = bool(getattr(args, "no_timing", False))
        if getattr(args, "in_thread", False):
            _run_interruptibly(args)
        else:
            args.func(args)
        sys.stdout.flush()
        return 0
    except UsageError as e:
        print(one_line(e), file=sys.stderr)
        return 2
    except BrokenPipeError:  # e.g. `roofsim hw list | head -1`: the reader left, not an error
        try:
            # nothing more reaches the closed pipe, not even the interpreter's last flush
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return 0
    except (ValueError, OSError, OverflowError) as e:
        print(f"roofsim: error: {as_flags(one_line(e), dests, aliases)}", file=sys.stderr)
        return 2
    except MemoryError:
        print("roofsim: error: not enough memory for this input; make it smaller",
              file=sys.stderr)
        return 2
    except (KeyboardInterrupt, SystemError) as e:
        from simulator.parallel import interrupted, tasks_running
        if not interrupted(e):
            return _internal(e)
        print("roofsim: interrupted", file=sys.stderr)
        if tasks_running():
            # a task left on its thread (inside numba, maybe compiling): the interpreter's
            # own exit would tear the modules down under it
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(130)
        return 130
    except Exception as e:  # noqa: BLE001 -- the last line of defence: one line, exit 1
        return _internal(e)


def _run_interruptibly(args):
    """``args.func(args)`` on a thread of its own, so that Ctrl-C stops the command within
    a fraction of a second even inside one long numba call (which does not look at
    signals): the main thread waits, and on SIGINT writes what the command says has
    finished (its ``args.partial``, marked partial) and ends the process, exit 130. Such
    a command writes its whole outputs under ``args.partial.final()``, each atomically,
    so they are whole or partial, never a mix, and nothing half-written is left."""
    import threading
    import time

    from .outputs import partial_of
    box, partial = {}, partial_of(args)

    def work():
        try:
            args.func(args)
        except BaseException as e:  # noqa: BLE001 -- handed to the main thread
            box["error"] = e
    t = threading.Thread(target=work, name="roofsim-command", daemon=True)
    t.start()
    t0, shown = time.monotonic(), False
    tty = sys.stderr.isatty()
    try:
        while t.is_alive():
            t.join(0.05)
            waited = int(time.monotonic() - t0)
            if tty and waited > 2 and waited != shown:   # a long run: time so far, how to stop
                print(f"\r  running {waited:5d} s (Ctrl-C stops)", end="", file=sys.stderr,
                      flush=True)
                shown = waited
        if shown:
            print("\r" + " " * 40 + "\r", end="", file=sys.stderr, flush=True)
    except KeyboardInterrupt:
        try:
            partial.stop()           # what finished, marked partial (or the whole outputs)
        except KeyboardInterrupt:
            pass                     # Ctrl-C again: stop now
        except (ValueError, OSError) as e:
            print(f"roofsim: error: {one_line(e)}", file=sys.stderr)
        print("roofsim: interrupted", file=sys.stderr, flush=True)
        sys.stdout.flush()
        os._exit(130)
    if "error" in box:
        raise box["error"]


def one_line(e: BaseException) -> str:
    """The error as one printable line: runs of spaces, tabs and line breaks become one
    space; any other character a terminal would act on (a record separator, an escape,
    a NUL, typed into a value) is shown escaped, as ``\\x1e``."""
    text = " ".join(re.split(r"[ \t\n\r]+", str(e).strip()))
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return _cut(text) or type(e).__name__


LONG_LINE = 1_000     # characters an error line may have; a longer value given is cut


def _cut(text: str) -> str:
    """A value a user gave of thousands of characters, echoed in an error, cut to its
    start and its length: a quoted value past 120 characters, then the line past
    ``LONG_LINE`` (so that a 1 MB value is not a 1 MB line)."""
    def short(m):
        v = m.group(0)
        return v if len(v) <= 120 else f"{v[:80]}...{v[0]} ({len(v) - 2:,} characters)"
    text = re.sub(r"'[^']*'|\"[^\"]*\"", short, text)
    if len(text) > LONG_LINE:
        text = f"{text[:LONG_LINE - 60]} ... ({len(text):,} characters in all)"
    return text


def _internal(e: BaseException) -> int:
    """An error that is roofsim's, not the input's: one line (the traceback with
    ROOFSIM_DEBUG=1), exit 1."""
    if os.environ.get("ROOFSIM_DEBUG"):
        import traceback
        traceback.print_exception(e)
    print(f"roofsim: internal error: {type(e).__name__}: {one_line(e)[:300]} (a bug in roofsim; "
          "ROOFSIM_DEBUG=1 shows where)", file=sys.stderr)
    return 1

