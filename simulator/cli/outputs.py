"""What a command writes besides its table: --csv, --json, --plot and --timeline, each
only when asked for, each atomically (a temporary name, then a rename), and the partial
outputs of a run Ctrl-C stopped."""
from __future__ import annotations


def write_outputs(args, rows, to_dict, plot=None):
    """--csv (``rows``), --json (``to_dict()``, called only when asked for) and --plot
    (``plot(path)``)."""
    from simulator.table import write_csv, write_json
    if getattr(args, "csv", None):
        write_csv(args.csv, rows)
        print(f"wrote {args.csv}")
    if getattr(args, "json", None):
        write_json(args.json, to_dict())
        print(f"wrote {args.json}")
    if getattr(args, "plot", None):
        if plot is None:      # a command that takes --plot draws it; none may skip it
            raise RuntimeError(f"--plot {args.plot} was accepted and has nothing to draw")
        plot(args.plot)
        print(f"wrote {args.plot}")


def write_json(path, doc):
    """One JSON document to ``path``, and the line saying so."""
    from simulator.table import write_json as write
    write(path, doc)
    print(f"wrote {path}")


def finish(args, out, rows, to_dict, plot=None):
    """--csv, --json and --plot of a run over ``map_tasks`` (``out``: its Outcome, or
    whether Ctrl-C stopped the run): the rows (dicts) and the document
    ``to_dict(rows)``; where Ctrl-C stopped it, each row and the document marked
    ``partial``, then the interrupt passed on (exit 130)."""
    stopped = out if isinstance(out, bool) else out.interrupted
    if stopped:
        write_partial(args, rows, to_dict, plot)
        raise KeyboardInterrupt
    if rows:
        write_outputs(args, rows, lambda: to_dict(rows), plot)


def write_partial(args, rows, to_dict, plot=None):
    """What finished of a run Ctrl-C stopped: --csv (``rows``), --json (``to_dict(rows)``)
    and --plot (``plot(path)``, where there is one), each row and the document marked
    ``partial``. Stopped before any row finished, the JSON still says so (partial, no
    rows); a table or chart of nothing is not written, and the user is told, as of a
    --plot with nothing to draw it from or a --timeline."""
    from simulator.table import write_csv, write_json
    rows = [{**r, "partial": True} for r in rows]
    skipped = [o for o in ("timeline",) if getattr(args, o, None)]
    if getattr(args, "plot", None) and (plot is None or not rows):
        skipped.append("plot")
    if rows:
        if getattr(args, "csv", None):
            write_csv(args.csv, rows)
            print(f"wrote {args.csv} (partial: {len(rows)} rows)")
        if getattr(args, "json", None):
            write_json(args.json, {**to_dict(rows), "partial": True})
            print(f"wrote {args.json} (partial)")
        if "plot" not in skipped and getattr(args, "plot", None):
            plot(args.plot)
            print(f"wrote {args.plot} (partial)")
    else:
        if getattr(args, "json", None):
            write_json(args.json, {**to_dict([]), "partial": True})
            print(f"wrote {args.json} (partial: nothing finished)")
        if getattr(args, "csv", None):
            skipped.insert(0, "csv")
    if skipped:
        print(f"{'nothing finished: ' if not rows else ''}"
              f"{' and '.join('--' + o for o in skipped)} not written")


class Partial:
    """What a command on a thread of its own (``in_thread``) writes should Ctrl-C stop it:
    the command names the writer of what has finished so far (``keep``), and holds
    ``final()`` while it writes its own, whole outputs; the main thread, on Ctrl-C, calls
    ``stop()``, which waits for whole outputs being written, else runs that writer (its
    files marked ``partial``). Either the whole outputs or the partial ones are written,
    never a mix."""

    def __init__(self):
        import threading
        self._lock = threading.Lock()
        self._write = None

    def keep(self, write):
        """``write()`` writes what has finished, should the run stop now."""
        self._write = write

    def final(self):
        """A context: the command's whole outputs are being written; Ctrl-C waits for them."""
        import contextlib

        @contextlib.contextmanager
        def held():
            with self._lock:
                self._write = None
                yield
        return held()

    def stop(self, wait: float = 1.0):
        """On Ctrl-C (the main thread): the partial outputs, unless whole ones are being
        written (waited for up to ``wait`` seconds; files are written whole or not at all)."""
        if not self._lock.acquire(timeout=wait):
            return
        try:
            write, self._write = self._write, None
            if write is not None:
                write()
        finally:
            self._lock.release()


def partial_of(args) -> Partial:
    """The command's :class:`Partial` (set by the process around it; a new one where the
    command is called on its own)."""
    if getattr(args, "partial", None) is None:
        args.partial = Partial()
    return args.partial


def write_timeline(path, doc):
    """A Chrome trace (``{"traceEvents": [...]}``) to ``path``, compact."""
    import json

    from hwmodels.fileio import atomic_write
    atomic_write(path, json.dumps(doc, separators=(",", ":")) + "\n")
    n = sum(e["ph"] != "M" for e in doc["traceEvents"])
    print(f"wrote {path} ({n:,} events; open it in chrome://tracing or ui.perfetto.dev)")


def hw_dict(hw) -> dict:
    """The fully resolved hardware, as every output file embeds it."""
    from hwmodels import to_dict
    return to_dict(hw)
