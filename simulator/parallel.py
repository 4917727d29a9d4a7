"""Independent tasks over local processes or a cluster, through ``dask.distributed``.

``map_tasks(fn, items)`` runs ``fn(item)`` for every item and returns the results in the
items' order. With ``workers=1`` (and no scheduler) it runs them here, one after another;
otherwise on a ``LocalCluster`` of that many single-threaded worker processes (default:
one per core), or on the cluster whose scheduler is at ``scheduler`` (``tcp://host:8786``).
``fn`` must be importable by name (a module-level function) and the items picklable.

A progress bar (``tqdm``) is drawn on a terminal; ``log`` (a callable taking a line) is
told when each group of items -- ``group(item)``, say a measurement suite -- has
finished, so a logged run shows its progress. Ctrl-C stops the run within about a
second: the workers are cancelled and ``map_tasks`` returns what finished, with
``interrupted`` set, for the caller to write as a partial result (and exit 130).
"""
from __future__ import annotations

import os
import signal
import sys
import time
from dataclasses import dataclass


@dataclass
class Outcome:
    """``results[i]`` is ``fn(items[i])``, or None where it did not finish."""

    results: list
    done: int
    interrupted: bool
    wall_seconds: float

    @property
    def finished(self) -> list:
        """The results that finished, in the items' order."""
        return [r for r in self.results if r is not None]


def interrupted(e: BaseException) -> bool:
    """Whether ``e`` is a Ctrl-C: a KeyboardInterrupt, or the SystemError a numba function
    raises when SIGINT arrives inside it ("returned a result with an exception set",
    chained to the KeyboardInterrupt)."""
    while e is not None:
        if isinstance(e, KeyboardInterrupt):
            return True
        if not isinstance(e, SystemError):
            return False
        e = e.__cause__ or e.__context__
    return False


def progress(items, label: str, unit: str = "item"):
    """``items`` with a tqdm bar on a terminal (stderr), as they are consumed; the items
    themselves elsewhere."""
    if not sys.stderr.isatty() or len(items) < 2:
        return items
    from tqdm import tqdm
    return tqdm(items, desc=label, unit=unit, file=sys.stderr, dynamic_ncols=True, leave=False)


def default_workers() -> int:
    """One worker per core this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:                    # not Linux
        return max(1, os.cpu_count() or 1)


NOTE_EVERY_S = 30.0   # off a terminal: a line on stderr at most this often, as tasks finish


class _Progress:
    """A tqdm bar on a terminal (stderr), and a log line per finished group; off a
    terminal (a log file, a pipe) a line on stderr every ``NOTE_EVERY_S`` seconds of a
    long run, so that it is not silent for minutes."""

    def __init__(self, items, label, group, log):
        self.group = group
        self.log = log
        self.label = label or "tasks"
        self.n, self.finished = len(items), 0
        self.next_note = time.perf_counter() + NOTE_EVERY_S
        self.left = {}
        for it in items:
            g = group(it) if group else None
            self.left[g] = self.left.get(g, 0) + 1
        self.total = dict(self.left)
        self.t0 = time.perf_counter()
        self.bar = None
        if sys.stderr.isatty():
            from tqdm import tqdm
            self.bar = tqdm(total=len(items), desc=label, unit="task", file=sys.stderr,
                            dynamic_ncols=True, leave=False)

    def done(self, item):
        self.finished += 1
        if self.bar is not None:
            self.bar.update(1)
        elif time.perf_counter() >= self.next_note and self.finished < self.n:
            print(f"  {self.label}: {self.finished} of {self.n} done "
                  f"({time.perf_counter() - self.t0:.0f} s)", file=sys.stderr, flush=True)
            self.next_note = time.perf_counter() + NOTE_EVERY_S
        g = self.group(item) if self.group else None
        self.left[g] -= 1
        if self.left[g] == 0 and self.log is not None and g is not None:
            self.log(f"{g}: {self.total[g]} done ({time.perf_counter() - self.t0:.0f} s)")

    def close(self):
        if self.bar is not None:
            self.bar.close()


def map_tasks(fn, items, *, workers: int | None = None, scheduler: str | None = None,
              label: str = "", group=None, log=None, ready=None) -> Outcome:
    """``fn`` over ``items`` (see the module's docstring); ``ready()``, if given, is
    called once the workers are there, before any task starts (to say what they will
    do first: compile an engine, say)."""
    items = list(items)
    t0 = time.perf_counter()
    results = [None] * len(items)
    progress = _Progress(items, label, group, log)
    done = 0
    try:
        if scheduler is None and (workers == 1 or len(items) <= 1):
            if ready is not None:
                ready()          # (what the tasks will compile first, said before they start)
            done = _here(fn, items, results, progress)
        else:
            done = _distributed(fn, items, results, progress, workers, scheduler, ready)
    except (KeyboardInterrupt, SystemError) as e:
        if not interrupted(e):
            raise
        progress.close()
        results = list(results)       # (a task still under way on its thread finds its own)
        return Outcome(results, sum(r is not None for r in results), True,
                       time.perf_counter() - t0)
    progress.close()
    return Outcome(results, done, False, time.perf_counter() - t0)


GRACE_S = 0.4         # after Ctrl-C, how long the task under way (here) may take to finish
TASK_THREAD = "roofsim-tasks"


def _here(fn, items, results, progress) -> int:
    """The items run in this process, one after another, on a thread of their own when
    called from the main thread: signals reach the main thread alone, so Ctrl-C is seen
    at once there even while a task sits in one long numba call or in numba's first
    compile (neither looks at signals; a KeyboardInterrupt raised inside a compile can
    leave LLVM half-done). On Ctrl-C the task under way has ``GRACE_S`` to finish, then
    the interrupt goes on with what finished (the thread, a daemon, is left to the
    process's exit: ``simulator.cli`` leaves with ``os._exit`` while it runs)."""
    import threading
    if threading.current_thread() is not threading.main_thread():
        for i, it in enumerate(items):
            results[i] = fn(it)
            progress.done(it)
        return len(items)
    stop = threading.Event()
    box = {"done": 0}

    def work():
        try:
            for i, it in enumerate(items):
                if stop.is_set():
                    return
                r = fn(it)
                results[i] = r
                box["done"] += 1
                if not stop.is_set():
                    progress.done(it)
        except BaseException as e:  # noqa: BLE001 -- handed to the caller's thread
            box["error"] = e
    t = threading.Thread(target=work, name=TASK_THREAD, daemon=True)
    t.start()
    try:
        while t.is_alive():
            t.join(0.05)
    except KeyboardInterrupt:
        stop.set()
        t.join(GRACE_S)
        raise
    if "error" in box:
        raise box["error"]
    return box["done"]


def tasks_running() -> bool:
    """Whether a task thread of ``map_tasks`` is still at work (after a Ctrl-C)."""
    import threading
    return any(t.name == TASK_THREAD and t.is_alive() for t in threading.enumerate())


def _distributed(fn, items, results, progress, workers, scheduler, ready=None) -> int:
    import logging

    import dask
    from distributed import Client, LocalCluster, as_completed
    # a task's own error reaches this process through its future; what the scheduler and
    # workers log (a heartbeat missed while the cluster shuts down, with its traceback)
    # is not the user's business
    quiet = {"logging.distributed": "critical"}
    for name in ("distributed", "bokeh", "tornado"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    # dask's own config gives some of distributed's loggers a level of their own
    # ("Couldn't gather 1 keys" from distributed.client as a Ctrl-C stops the workers)
    for name in list(logging.root.manager.loggerDict):
        if name.startswith("distributed."):
            logging.getLogger(name).setLevel(logging.CRITICAL)
    cluster = client = None
    import warnings
    try:
        with dask.config.set(quiet), warnings.catch_warnings():
            warnings.simplefilter("ignore")      # a slow start's advice is not the user's
            if scheduler is None:
                cluster = _local_cluster(LocalCluster, workers or default_workers())
                try:
                    client = Client(cluster)
                except KeyboardInterrupt:
                    _stop(client, cluster, [])
                    raise
            else:
                # the connect timeout covers Dask's handshake too, so that a port that
                # accepts and never answers is an error within seconds
                with dask.config.set({"distributed.comm.timeouts.connect": f"{CONNECT_S}s"}):
                    client = _connect(Client, scheduler)
    except SchedulerError:
        raise
    except OSError as e:
        raise ValueError(f"scheduler={str(scheduler)[:80]!r}: cannot reach it ({e})") from None
    except (ValueError, TypeError) as e:
        raise ValueError(f"scheduler={str(scheduler)[:80]!r}: not a scheduler address "
                         f"(host:port or tcp://host:port): {e}") from None
    done = 0
    futures = []
    try:
        if ready is not None:
            ready()                      # (it may import and check an engine: seconds)
        futures = client.map(fn, items, pure=False)
        index = {f.key: i for i, f in enumerate(futures)}
        for fut in as_completed(futures):
            i = index[fut.key]
            results[i] = fut.result()
            done += 1
            progress.done(items[i])
        client.close(timeout=5)
        if cluster is not None:
            cluster.close(timeout=5)
    except KeyboardInterrupt:
        # (caught while the cluster closes too: left half-closed, the interpreter's exit
        # would wait 10 s for it)
        _stop(client, cluster, futures)
        raise
    return done


def _local_cluster(LocalCluster, n: int):
    """A LocalCluster of ``n`` single-threaded worker processes, started so that Ctrl-C
    still stops this process at once while they start (a second or several) and never
    reaches them: a terminal's Ctrl-C goes to the whole process group, and the workers,
    busy inside numba, would die noisily; this process stops them (``_stop``).

    The cluster starts on a thread of its own that blocks SIGINT: the threads it makes
    and the processes they start inherit that mask (it survives ``exec``), so SIGINT
    stays pending in the workers for ever, while the kernel hands it to this thread,
    which takes it as KeyboardInterrupt within a tenth of a second. (Where threads have
    no signal mask, Windows, SIGINT is ignored while the workers start, as before.)"""
    import threading
    # workers abandoned at Ctrl-C leave semaphores that multiprocessing's resource
    # tracker reclaims, saying so on stderr after roofsim's one line: the tracker starts
    # with this interpreter's -W options, so that note is filtered here
    quiet = "ignore::UserWarning:multiprocessing.resource_tracker"
    if quiet not in sys.warnoptions:
        sys.warnoptions.append(quiet)
    settings = dict(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=":0")
    # the workers read their logging config from the environment they start in
    env = os.environ.get("DASK_LOGGING__DISTRIBUTED")
    os.environ["DASK_LOGGING__DISTRIBUTED"] = "critical"
    try:
        if not hasattr(signal, "pthread_sigmask"):
            old = signal.signal(signal.SIGINT, signal.SIG_IGN)
            try:
                return LocalCluster(**settings)
            finally:
                signal.signal(signal.SIGINT, old)
        box = {}

        def start():
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
            try:
                box["cluster"] = LocalCluster(**settings)
            except BaseException as e:  # noqa: BLE001 -- handed to the caller's thread
                box["error"] = e
        t = threading.Thread(target=start, name="roofsim-dask-start", daemon=True)
        t.start()
        try:
            while t.is_alive():
                t.join(0.1)              # Ctrl-C: KeyboardInterrupt here, at once
        except KeyboardInterrupt:
            _abandon_start()
            raise
    finally:
        if env is None:
            os.environ.pop("DASK_LOGGING__DISTRIBUTED", None)
        else:
            os.environ["DASK_LOGGING__DISTRIBUTED"] = env
    if "error" in box:
        raise box["error"]
    return box["cluster"]


def _abandon_start():
    """Ctrl-C caught a local cluster half-started: the worker processes started so far
    are killed, and distributed's exit handler is told not to close the cluster (it
    would wait up to 10 s for it to finish starting first)."""
    import multiprocessing

    from distributed.deploy.spec import SpecCluster
    for c in list(getattr(SpecCluster, "_instances", ())):
        c.shutdown_on_close = False
    for proc in multiprocessing.active_children():
        try:
            os.kill(proc.pid, signal.SIGKILL)
        except OSError:
            pass


class SchedulerError(ValueError):
    """``scheduler`` names no Dask scheduler that answers."""


CONNECT_S = 10     # seconds to reach a scheduler and finish Dask's handshake with it


def _connect(Client, scheduler):
    """A client of the scheduler at ``scheduler``; whatever else answers there (a web
    server, a port that accepts and stays silent) is one clear error, not a hang or the
    MemoryError of a stranger's bytes read as a Dask frame length. (The connection runs
    on a daemon thread, so that one stuck in a handshake cannot keep the process.)"""
    import threading
    box = {}

    def connect():
        try:
            box["client"] = Client(scheduler, timeout=CONNECT_S)
        except BaseException as e:          # noqa: BLE001 -- handed to the caller
            box["error"] = e
    t = threading.Thread(target=connect, name="roofsim-connect", daemon=True)
    t.start()
    t.join(CONNECT_S + 1)
    e = box.get("error")
    if "client" in box:
        return box["client"]
    if isinstance(e, (ValueError, TypeError, KeyboardInterrupt)):
        raise e
    name = f"scheduler={str(scheduler)[:80]!r}"
    if e is None or isinstance(e, (TimeoutError, OSError)):
        raise SchedulerError(f"{name}: no Dask scheduler answered there within {CONNECT_S} s "
                             f"(is it running, and is the address right?)")
    why = ("its bytes are not Dask's protocol" if isinstance(e, MemoryError)
           else f"{type(e).__name__}: {str(e)[:80]}")
    raise SchedulerError(f"{name}: what answered there is not a Dask scheduler ({why})")


def _stop(client, cluster, futures):
    """Stop at once: a local cluster's worker processes are killed (they are busy inside
    numba and would not hear a polite request for seconds); a remote cluster's tasks are
    cancelled."""
    if cluster is not None:
        for w in list(getattr(cluster, "workers", {}).values()):
            # a nanny restarts a worker process that dies, and closing the cluster would
            # then wait for the new one (the interpreter's exit, 10 s more)
            if hasattr(w, "auto_restart"):
                w.auto_restart = False
            proc = getattr(getattr(w, "process", None), "process", None)
            pid = getattr(proc, "pid", None)
            if pid:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
    elif client is not None:
        client.cancel(futures)
    try:
        if client is not None:
            client.close(timeout=0.5)
        if cluster is not None:
            cluster.close(timeout=0.5)
    except Exception:          # a cluster torn down this hard may complain; the run is over
        pass
    if cluster is not None:
        # whatever state its closing was left in, distributed's exit handler is not to
        # close it again (it would wait 10 s); its worker processes are gone
        cluster.shutdown_on_close = False
