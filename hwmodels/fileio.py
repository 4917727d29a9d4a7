"""The project's one writer of output files: every file roofsim writes (TOML, CSV, JSON,
charts, SCALE-Sim topologies) is written to a temporary name in the same folder, then
renamed over the target, so a reader never sees a half-written file and an error
leaves the old file in place. Also the reader of small input files
(:func:`read_small_file`): a regular file of bounded size, never a device or a pipe.

It lives in ``hwmodels`` because ``hwmodels`` may import nothing else from the project
and ``simulator`` imports ``hwmodels``; it depends on the standard library only.
"""
from __future__ import annotations

import os
import stat
import sys
import tempfile
from pathlib import Path

from .units import show


def atomic_write(path: str | os.PathLike, data: str | bytes) -> None:
    """Write ``data`` (text, or bytes) to a temporary name in the same folder, then
    rename it over ``path``. The folder must exist (ValueError naming it otherwise); the
    file gets the usual permissions (0o666 less the umask). A symbolic link is followed
    (its target written, the link kept); a device or a pipe (``/dev/null``, a FIFO) is
    written in place, never replaced by a file. A failed write (a full disk, a file-size
    limit) is a ValueError naming ``path``, and leaves nothing behind."""
    p = Path(path)
    mode = "wb" if isinstance(data, bytes) else "w"
    if p.exists() and not p.is_file() and not p.is_dir():
        # a device, a pipe or a socket (/dev/null, /dev/stdout's target, a FIFO): written
        # in place -- a rename would put a plain file where it was; what this process has
        # printed and not yet flushed goes first (/dev/stdout: the lines stay in order)
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (AttributeError, OSError, ValueError):
                pass
        try:
            with open(p, mode) as fh:
                fh.write(data)
        except BrokenPipeError:
            raise                    # the reader left (`| head`): not the file's fault
        except OSError as e:
            raise ValueError(f"{path}: cannot write ({e.strerror or e})") from None
        return
    if p.is_symlink():
        # the link stays; the file it points to is written (a dangling link: its target made)
        p = Path(os.path.realpath(p))
    if not p.parent.is_dir():
        raise ValueError(f"{path}: folder {show(str(p.parent), 200)} does not exist")
    if p.is_dir():
        raise ValueError(f"{path}: is a folder, not a file")
    try:
        fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=f".{p.name}.", suffix=".tmp")
    except OSError as e:
        raise ValueError(f"{path}: cannot write in folder {show(str(p.parent), 200)} "
                         f"({e.strerror or e})") from None
    try:
        with os.fdopen(fd, mode) as fh:
            fh.write(data)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, p)
    except OSError as e:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise ValueError(f"{path}: cannot write ({e.strerror or e}); nothing was written") from None
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


#: the largest hardware file (TOML preset or SCALE-Sim .cfg) read: a preset is 2 to 8 KB,
#: so 1 MiB is over a hundred times any real one, yet bounds what a wrong path can cost
MAX_HARDWARE_FILE_BYTES = 1 << 20


def file_kind(mode: int) -> str:
    """What a path whose ``os.stat`` mode is ``mode`` is, as an error names it: "a regular
    file", "a folder", "a FIFO", "a character device", "a block device" or "a socket" --
    the one rule every reader of a user's file refuses what is not a file by."""
    for test, name in ((stat.S_ISREG, "a regular file"), (stat.S_ISDIR, "a folder"),
                       (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def file_status(path: str | os.PathLike) -> tuple[os.stat_result | None, str | None]:
    """(its ``os.stat``, None) where ``path`` is a regular file, else (None, what is
    wrong, as an error says it: "does not exist", "cannot be read (...)", "is a folder,
    not a regular file", "is a FIFO, not a regular file", ...): the one check every
    reader of a user's file makes before it opens it, so that a device is never read
    forever nor a pipe waited on."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None, "does not exist"
    except OSError as e:
        return None, f"cannot be read ({e.strerror or e})"
    if not stat.S_ISREG(st.st_mode):
        return None, f"is {file_kind(st.st_mode)}, not a regular file"
    return st, None


def read_small_file(path: str | os.PathLike, what: str, limit: int) -> bytes:
    """The bytes of ``path``, which must be a regular file of at most ``limit`` bytes.

    Checked before it is opened, so a device (``/dev/zero``), a pipe (a FIFO) or a socket
    is refused rather than read forever or waited on; a folder is refused too. Every
    error is a ValueError that starts with ``what`` (e.g. "hardware file") and the path.
    A file that reports a size of 0 but is longer (``/proc`` files) is read only up to
    the limit."""
    p = os.fspath(path)
    st, wrong = file_status(p)
    if wrong:
        raise ValueError(f"{what} {show(p, 200)} {wrong}"
                         + ("; give a file" if "regular" in wrong else ""))
    too_big = (f"{what} {p!r} is larger than {limit:,} bytes, the most a file of this kind "
               "may hold")
    if st.st_size > limit:
        raise ValueError(too_big)
    try:
        with open(p, "rb") as fh:
            data = fh.read(limit + 1)
    except OSError as e:
        raise ValueError(f"{what} {show(p, 200)}: cannot read ({e.strerror or e})") from None
    if len(data) > limit:
        raise ValueError(too_big)
    return data
