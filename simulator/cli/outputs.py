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
        rows = [{**r, "partial": True} for r in rows]
    if rows:
        write_outputs(args, rows, lambda: {**to_dict(rows),
                                           **({"partial": True} if stopped else {})},
                      plot)
    elif stopped:
        # stopped before any row finished: the JSON still says so (partial, no rows); a
        # table or chart of nothing is not written, and the user is told
        from simulator.table import write_json as write
        if getattr(args, "json", None):
            write(args.json, {**to_dict([]), "partial": True})
            print(f"wrote {args.json} (partial: nothing finished)")
        skipped = [f"--{o}" for o in ("csv", "plot") if getattr(args, o, None)]
        if skipped:
            print(f"nothing finished: {' and '.join(skipped)} not written")
    if stopped:
        raise KeyboardInterrupt


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
