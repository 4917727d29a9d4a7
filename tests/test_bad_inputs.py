"""Nothing a user types ends in a traceback, a hang or a silent wrong answer (issue 15).

``tests/bad_inputs/cli.txt`` holds command lines with the exit code each must end with;
for exit 2 the error is one line on stderr naming the problem. Property tests feed any
text or number to the fields users type most: exit 0 or 2, one line, never a traceback
(an internal error, exit 1, fails them too)."""
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simulator.cli import main

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "bad_inputs" / "cli.txt"


def _cases():
    out = []
    for line in CORPUS.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        code, cmd = line.split("\t", 1)
        out.append((int(code), cmd))
    return out


CASES = _cases()


@pytest.mark.parametrize("code,cmd", CASES, ids=[c[:80] for _, c in CASES])
def test_bad_input_corpus(code, cmd):
    argv = shlex.split(cmd)
    assert argv[0] == "roofsim"
    p = subprocess.run([sys.executable, "-m", "simulator", *argv[1:]], cwd=ROOT,
                       capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert p.returncode == code, (p.returncode, p.stderr[-2000:])
    assert "Traceback" not in p.stderr
    if code == 2:
        # a first run's notice that it is compiling the engine comes before the error
        lines = [x for x in p.stderr.strip().splitlines() if not x.startswith("roofsim: compiling")]
        assert len(lines) == 1, p.stderr
        assert lines[0].startswith("roofsim"), lines


def _one_line_or_ok(argv, capsys):
    code = main(argv)
    err = capsys.readouterr().err
    assert code in (0, 2), (argv, code, err)
    assert "Traceback" not in err
    if code == 2:
        assert len(err.strip().splitlines()) == 1, (argv, err)


TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40)
NUMBERISH = st.one_of(
    TEXT,
    st.integers(min_value=-(10 ** 30), max_value=10 ** 30).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.builds(lambda a, u: f"{a}{u}", st.floats(allow_nan=True, allow_infinity=True),
              st.sampled_from(["B", "KiB", "MiB", "GB", "TB/s", "Hz", "GHz", "us", ""])),
    st.just("9" * 400), st.just("1e400KiB"))
FAST = settings(max_examples=40, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])


# characters str.splitlines() breaks on, and ones a terminal acts on: the message shows
# each escaped, on one line (a hypothesis run found a record separator, \x1e, in --block)
CONTROL = ["\x1e", "\x1c", "\x1d", "\x85", "\u2028", "\u2029", "\x0b", "\x0c", "\r",
           "\n", "\x1b[31m", "\x00", "\x7f"]


@pytest.mark.parametrize("ch", CONTROL, ids=[repr(c) for c in CONTROL])
@pytest.mark.parametrize("argv", [["occupancy", "--hw", "h100-sxm", "--block=1{}2"],
                                  ["roofline", "--hw", "h100-sxm", "--workload", "gemm:1{}2"],
                                  ["hw", "show", "h100{}sxm"]])
def test_control_characters_in_a_value_stay_on_one_printable_line(capsys, ch, argv):
    code = main([a.format(ch) for a in argv])
    err = capsys.readouterr().err
    assert code == 2, err
    line = err.rstrip("\n")
    assert len(line.splitlines()) == 1 and line.isprintable(), repr(err)


@FAST
@given(NUMBERISH)
def test_any_onchip_size(capsys, value):
    _one_line_or_ok(["datamove", "--hw", "h100-sxm", "--workload", "gemm:64x64x64",
                     f"--onchip-bytes={value}"], capsys)


@FAST
@given(NUMBERISH)
def test_any_workload_text(capsys, value):
    for form in (f"{value}", f"relu:{value}", f"gemm:{value}x8x8", f"conv:n=1,c=2,h={value},w=8,k=2,r=3,s=3,stride=1,pad=1"):
        _one_line_or_ok(["workload", "show", form], capsys)


@FAST
@given(st.sampled_from(["sm_count", "clock_hz", "l2.size_bytes", "dram.bandwidth_bytes_per_s",
                        "sm.max_threads_per_sm", "sm.l1.latency_cycles"]), NUMBERISH)
def test_any_hardware_override(capsys, field, value):
    _one_line_or_ok(["roofline", "--hw", "h100-sxm", "--workload", "gemm:64x64x64",
                     "--set", f"{field}={value}"], capsys)


@FAST
@given(NUMBERISH, NUMBERISH)
def test_any_occupancy(capsys, block, smem):
    _one_line_or_ok(["occupancy", "--hw", "h100-sxm", f"--block={block}", "--regs", "32",
                     f"--smem={smem}"], capsys)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(["n", "grid", "block"]), NUMBERISH)
def test_any_simt_size(capsys, field, value):
    argv = ["simulate", "simt", "--hw", "gtx480", "--kernel", "relu", "--n", "4096",
            "--mode", "analytic"]
    if field == "n":
        argv[argv.index("--n") + 1] = value
        argv = argv[:7] + [f"--n={value}"] + argv[9:] if value.startswith("-") else argv
    else:
        argv += [f"--{field}={value}"]
    _one_line_or_ok(argv, capsys)


def test_every_option_has_help():
    """Every option and argument of every command says what it is (`--help`)."""
    import argparse

    from simulator.cli import build_parser
    missing = []

    def walk(parser, path):
        for a in parser._actions:
            if isinstance(a, argparse._SubParsersAction):
                for name, sub in a.choices.items():
                    walk(sub, f"{path} {name}")
            elif not isinstance(a, argparse._HelpAction) and not isinstance(a, argparse._VersionAction):
                if not a.help:
                    missing.append(f"{path} {'/'.join(a.option_strings) or a.dest}")
    walk(build_parser(), "roofsim")
    assert not missing, missing


def test_no_timing_runs_compare_equal(tmp_path, capsys):
    """Two runs with --no-timing write byte-identical JSON and CSV."""
    outs = []
    for i in range(2):
        j, c = tmp_path / f"{i}.json", tmp_path / f"{i}.csv"
        assert main(["sweep", "grid", "--hw", "gtx480", "--kernel", "relu", "--n", "65536",
                     "--grids", "15,30", "--blocks", "256", "--mode", "analytic", "--workers", "1",
                     "--json", str(j), "--csv", str(c), "--no-timing"]) == 0
        outs.append((j.read_bytes(), c.read_bytes()))
    assert outs[0] == outs[1]
    assert b"wall" not in outs[0][0] and b"wall" not in outs[0][1]
    capsys.readouterr()


def test_ctrl_c_inside_one_long_numba_call():
    """SIGINT during one long engine call (full mode, a single launch: numba never looks
    at signals) ends the command within about a second: one line, exit 130."""
    import signal
    import time

    from conftest import warm_engines
    warm_engines(ROOT)              # so that the signal lands inside the simulation
    p = subprocess.Popen([sys.executable, "-m", "simulator", "simulate", "simt", "--hw", "h100-sxm",
                          "--kernel", "gemm-naive", "--m", "1024", "--n", "1024", "--k", "1024",
                          "--mode", "full"], cwd=ROOT, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    time.sleep(6)                       # imports, compilation from the cache, then simulating
    assert p.poll() is None, "the launch ended before the signal; the test needs a longer one"
    t = time.monotonic()
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=30)
    assert p.returncode == 130 and time.monotonic() - t < 2.0, (p.returncode, err)
    assert err.strip().splitlines() == ["roofsim: interrupted"]


def test_ctrl_c_while_the_command_loads():
    """SIGINT while ``roofsim`` is still importing (before ``main`` runs): the same one
    line and exit 130, not a traceback from inside an import; a program that imports the
    CLI module (not as the command) keeps Python's own KeyboardInterrupt."""
    code = ("import sys; sys.argv = [{argv!r}]\n"
            "import os, signal, time, simulator.cli\n"
            "os.kill(os.getpid(), signal.SIGINT); time.sleep(5); print('ran on')\n")
    for argv0, want_rc, want_err in (("/usr/bin/roofsim", 130, "roofsim: interrupted"),
                                     ("my_script.py", -2, "KeyboardInterrupt")):
        p = subprocess.run([sys.executable, "-c", code.format(argv=argv0)], cwd=ROOT,
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == want_rc and want_err in p.stderr, (argv0, p.returncode, p.stderr)
        assert "ran on" not in p.stdout
    # and once main runs, Ctrl-C is Python's KeyboardInterrupt again (main's own handling)
    import signal

    from simulator import cli
    before = signal.getsignal(signal.SIGINT)
    try:
        signal.signal(signal.SIGINT, cli.interrupted_while_loading)
        assert cli.main(["hw", "list"]) == 0
        handler = signal.getsignal(signal.SIGINT)
        assert handler is not cli.interrupted_while_loading
        with pytest.raises(KeyboardInterrupt):
            handler(signal.SIGINT, None)
    finally:
        signal.signal(signal.SIGINT, before)


def test_a_reader_that_leaves_early_is_not_an_error(tmp_path):
    """`roofsim ... | head -1`: the closed pipe ends the command quietly, exit 0 (the table
    here, some 300 KB, is larger than any pipe's buffer)."""
    topo = tmp_path / "big.csv"
    topo.write_text("Layer, M, N, K,\n" + "".join(f"g{i}, 64, 64, 64,\n" for i in range(3000)))
    p = subprocess.Popen([sys.executable, "-m", "simulator", "workload", "show", str(topo)],
                         cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = p.stdout.readline()
    p.stdout.close()                     # the reader is gone after one line
    err = p.stderr.read().decode()
    assert p.wait(timeout=60) == 0 and first.startswith(b"big") and err == "", err


def test_outputs_onto_devices_pipes_and_links_keep_them(tmp_path, capsys):
    """--csv onto /dev/null, a FIFO or a symbolic link writes through it: the device,
    the pipe and the link stay what they were (a rename over them would leave a plain
    file), the link's target gets the table."""
    import stat
    import threading
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    (tmp_path / "target.csv").write_text("old")
    (tmp_path / "link.csv").symlink_to("target.csv")
    got = {}
    reader = threading.Thread(target=lambda: got.setdefault("fifo", fifo.read_text()))
    reader.start()
    for out in ("/dev/null", str(fifo), str(tmp_path / "link.csv")):
        assert main(["workload", "show", "gemm:4x4x4", "--csv", out]) == 0, capsys.readouterr().err
    reader.join(timeout=30)
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode) and stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert got["fifo"].startswith("name,kind") and (tmp_path / "link.csv").is_symlink()
    assert (tmp_path / "target.csv").read_text().startswith("name,kind")


def test_a_scheduler_address_where_no_dask_answers(capsys):
    """--scheduler at a port that accepts and stays silent, or that answers in another
    protocol (a web server's bytes, read as a Dask frame length, once asked for exabytes):
    one line naming --scheduler within seconds, exit 2, the process gone."""
    import socket
    import threading
    import time

    def serve(reply):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        s.listen(4)
        keep = []

        def loop():
            while True:
                try:
                    c, _ = s.accept()
                except OSError:
                    return
                keep.append(c)
                if reply:
                    c.sendall(reply)
        threading.Thread(target=loop, daemon=True).start()
        return s, s.getsockname()[1]
    for reply, needle, most_s in ((b"HTTP/1.0 400 Bad Request\r\n\r\n" * 4, "not a Dask scheduler", 8),
                                  (None, "no Dask scheduler answered there within 10 s", 25)):
        sock, port = serve(reply)
        t = time.monotonic()
        p = subprocess.run([sys.executable, "-m", "simulator", "sweep", "grid", "--hw", "gtx480",
                            "--kernel", "relu", "--n", "4096", "--grids", "1-4", "--blocks", "256",
                            "--mode", "analytic", "--scheduler", f"tcp://127.0.0.1:{port}"],
                           cwd=ROOT, capture_output=True, text=True, timeout=60)
        sock.close()
        assert p.returncode == 2 and time.monotonic() - t < most_s, (p.returncode, p.stderr)
        lines = [x for x in p.stderr.strip().splitlines() if not x.startswith("roofsim: compiling")]
        assert len(lines) == 1 and "--scheduler" in lines[0] and needle in lines[0], lines


def test_standard_output_closed(tmp_path):
    """`roofsim ... >&-`: nothing to print to, the work (and its --csv) still done, exit 0."""
    out = tmp_path / "r.csv"
    p = subprocess.run([sys.executable, "-m", "simulator", "roofline", "--hw", "gtx480",
                        "--workload", "gemm:64x64x64", "--csv", str(out)], cwd=ROOT,
                       stderr=subprocess.PIPE, text=True, timeout=60,
                       preexec_fn=lambda: os.close(1))
    assert p.returncode == 0 and p.stderr == "", p.stderr
    assert out.read_text().startswith("layer,kind")
