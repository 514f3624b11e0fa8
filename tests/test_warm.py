"""The tests' warm Python (tests/helpers/warm.py): a script forked from it gives what the same
script gives in a new interpreter, as subprocess.run reports it."""

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import helpers.warm as warm
from helpers import ROOT, run_script
from helpers.commands import python_run

PROBE = """
import json, os, stat, subprocess, sys
if __name__ != "__main__":
    sys.exit("not run as __main__")
import numpy
what = sys.argv[1]
if what == "report":
    umask = os.umask(0)
    os.umask(umask)
    print(json.dumps({
        "argv": sys.argv[1:], "cwd": os.getcwd(), "corpus": os.environ.get("MULTI30K_DIR"),
        "path0": sys.path[0], "stdin": sys.stdin.read(), "parent": os.getppid(), "pid": os.getpid(),
        "draw": numpy.random.rand(), "cores": sorted(os.sched_getaffinity(0)), "umask": umask,
        "pipes": [stat.S_ISFIFO(os.fstat(fd).st_mode) for fd in (1, 2)],
        "probe": os.environ.get("MINITRANS_WARM_PROBE"),
        "preloaded": bool(os.environ.get("LD_PRELOAD"))
        and os.path.realpath(os.environ["LD_PRELOAD"]) in open("/proc/self/maps").read(),
    }))
    print("to stderr\\r\\nand a bar\\rredrawn", file=sys.stderr)
elif what == "message":
    sys.exit("error: a message")
elif what == "status":
    sys.exit(3)
elif what == "raise":
    raise ValueError("a traceback")
elif what == "interrupt":
    print("before", flush=True)
    raise KeyboardInterrupt
elif what == "late":  # a process of its own holds the output after the script ends
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1); print('late', flush=True)"])
    print("early", flush=True)
elif what == "bytes":
    sys.stdout.buffer.write(bytes(range(256)))
elif what == "sleep":
    print(os.getpid(), flush=True)
    import time
    time.sleep(60)
elif what == "spawn":  # a process of its own, both pids said (written whole), then a wait past any test's
    import time
    child = subprocess.Popen(["sleep", "3600"])
    with open(sys.argv[2] + ".part", "w") as said:
        said.write(f"{os.getpid()} {child.pid}")
    os.replace(sys.argv[2] + ".part", sys.argv[2])
    time.sleep(3600)
"""
RAISED = {"raise": '    raise ValueError("a traceback")', "interrupt": "    raise KeyboardInterrupt"}


@pytest.fixture
def probe(tmp_path):
    path = tmp_path / "probe.py"
    path.write_text(PROBE)
    return path


def cold(probe, *args, text=True, **kwargs) -> subprocess.CompletedProcess:
    """The same script in a new interpreter, as run_script ran every run before warm.py."""
    return subprocess.run([sys.executable, str(probe), *args], cwd=ROOT, capture_output=True, text=text, **kwargs)


def report(*args, **kwargs) -> dict:
    return json.loads(run_script(*args, **kwargs).stdout)


def test_the_server_is_ready_here(probe):
    """Its imports printed nothing and left no thread of Python's: the suite's runs fork."""
    run_script(probe, "status", check=False)
    assert (server := warm.server_for(dict(os.environ))) is not None and server.ready


def test_a_forked_run_is_the_scripts_own(probe):
    forked = run_script(probe, "report", "x y", input="typed\n")
    fresh = cold(probe, "report", "x y", input="typed\n")
    assert forked.stderr == fresh.stderr == "to stderr\nand a bar\nredrawn\n"  # text as subprocess's
    seen, theirs = json.loads(forked.stdout), json.loads(fresh.stdout)
    assert seen["parent"] == warm.server_for(dict(os.environ)).server.pid  # forked, not a new interpreter
    for key in ("argv", "cwd", "corpus", "path0", "stdin", "cores", "umask", "pipes"):
        assert seen[key] == theirs[key], key
    assert seen["argv"] == ["report", "x y"] and seen["stdin"] == "typed\n" and seen["pipes"] == [True, True]
    assert seen["path0"] == str(probe.parent) and seen["cores"] == sorted(os.sched_getaffinity(0))
    again = report(probe, "report")
    assert again["pid"] != seen["pid"] and again["parent"] == seen["parent"]
    assert again["draw"] != seen["draw"]  # numpy's generator seeded anew in each child
    assert again["stdin"] == ""  # no input: an empty stdin, never the test's


@pytest.mark.parametrize("what", ["message", "status", "raise", "interrupt", "late", "bytes"])
def test_output_and_exit_status_as_a_new_interpreters(probe, what):
    text = what != "bytes"
    forked = run_script(probe, what, check=False, text=text)
    fresh = cold(probe, what, text=text)
    assert forked.returncode == fresh.returncode
    assert forked.stdout == fresh.stdout
    if what in ("raise", "interrupt"):  # the traceback names the script's line; the frames above it differ
        assert forked.stderr.splitlines()[-1] == fresh.stderr.splitlines()[-1]
        line = PROBE.splitlines().index(RAISED[what]) + 1
        assert f'File "{probe}", line {line}' in forked.stderr
    else:
        assert forked.stderr == fresh.stderr
    assert {"message": 1, "status": 3, "raise": 1, "interrupt": -2, "late": 0, "bytes": 0}[what] == forked.returncode
    assert {"late": "early\nlate\n", "interrupt": "before\n", "bytes": bytes(range(256))}.get(what, "") == forked.stdout


def test_a_run_past_its_timeout_is_killed(probe):
    with pytest.raises(subprocess.TimeoutExpired) as timed_out:
        run_script(probe, "sleep", timeout=5)
    printed = timed_out.value.output
    assert isinstance(printed, bytes) and printed.strip().isdigit(), printed  # as subprocess.run's
    with pytest.raises(ProcessLookupError):
        os.kill(int(printed), 0)  # killed and reaped by the server
    assert run_script(probe, "status", check=False).returncode == 3  # and the server serves on


def ended(pid: int) -> bool:
    """Whether process `pid` is gone, or a zombie its new parent has yet to reap."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    return state in ("Z", "X")


def test_a_run_broken_off_ends_with_every_process_it_started(probe, tmp_path):
    """A signal while a run runs (^C, pytest's timeout) ends the run, the processes it started with
    it (its server's whole group), and that server; the next run forks from a new one."""
    pids = tmp_path / "pids"

    class BrokenOff(Exception):
        pass

    def broken_off(signum, frame):
        raise BrokenOff

    done = threading.Event()

    def signal_once_both_run():  # to the thread that waits in run_script, as a terminal's ^C comes
        while not pids.exists():
            if done.wait(0.05):
                return
        signal.pthread_kill(threading.main_thread().ident, signal.SIGUSR1)

    previous = signal.signal(signal.SIGUSR1, broken_off)
    signaller = threading.Thread(target=signal_once_both_run)
    signaller.start()
    try:
        with pytest.raises(BrokenOff):
            run_script(probe, "spawn", pids)
        broken = warm.server_for(dict(os.environ))
        assert broken is not None and broken.failed and broken.server.returncode is not None
        run, child = map(int, pids.read_text().split())
        # killed before run_script returned: what is left is the kernel's and the reaping's moment
        deadline = time.monotonic() + 30
        while not (ended(run) and ended(child)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert ended(run), "the run outlived its breaking off"
        assert ended(child), "a process the run started outlived it (both sleep an hour)"
    finally:
        done.set()
        signaller.join()
        signal.signal(signal.SIGUSR1, previous)
        for pid in map(int, pids.read_text().split()) if pids.exists() else ():
            if not ended(pid):
                os.kill(pid, signal.SIGKILL)
    seen = report(probe, "report")
    now = warm.server_for(dict(os.environ))
    assert seen["parent"] == now.server.pid and now is not broken


def test_the_environment_decides_forked_or_new(probe):
    own = {**os.environ, "MULTI30K_DIR": "/somewhere"}
    seen = report(probe, "report", env=own)
    assert seen["parent"] == warm.server_for(dict(os.environ)).server.pid  # a variable read as the code runs: forked
    assert seen["corpus"] == "/somewhere"
    assert report(probe, "report", env={k: v for k, v in own.items() if k != "MULTI30K_DIR"})["corpus"] is None
    other = {**os.environ, "MINITRANS_WARM_PROBE": "1"}  # any other may be read by a library as it is imported
    assert report(probe, "report", env=other)["parent"] == os.getpid()  # a new interpreter
    assert report(probe, "report", fresh=True)["parent"] == os.getpid()


def test_a_server_started_again_where_this_processs_environment_moved(probe, monkeypatch):
    """A variable a test or library sets in the worker's own environment: the next run forks from a
    server started in it (its libraries imported with it), not from the one before."""
    before = report(probe, "report")["parent"]
    monkeypatch.setenv("MINITRANS_WARM_PROBE", "1")
    moved = report(probe, "report")["parent"]
    assert moved == warm.server_for(dict(os.environ)).server.pid and moved not in (before, os.getpid())
    assert warm.server_for(dict(os.environ)).env["MINITRANS_WARM_PROBE"] == "1"


def environ_of(pid: int) -> dict:
    """A process's environment as the kernel holds it (what it started with)."""
    pairs = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")[:-1]
    return dict(os.fsdecode(pair).split("=", 1) for pair in pairs)


def test_an_environment_of_its_own_forks_from_a_server_started_in_it(probe, monkeypatch):
    """The documented commands' checkout: its runs share an environment the worker's lacks (a
    variable a library may read when imported, make's allocator preloaded), and fork from a server
    started in that environment; past MOST_SERVERS the least recently used is closed."""
    monkeypatch.setattr(warm, "MOST_SERVERS", 2)
    mimalloc = sorted((ROOT / ".venv" / "lib").glob("python3*/site-packages/cmeel.prefix/lib/libmimalloc.so"))
    preload = {"LD_PRELOAD": str(mimalloc[0])} if mimalloc else {}
    own = [{**os.environ, **preload, "MINITRANS_WARM_PROBE": f"own {i}"} for i in range(3)]
    servers = {}
    try:
        for i in (0, 1, 0, 2):  # the first used again before the third: the second is the least recent
            env = own[i]
            server = servers.setdefault(i, warm.warm_python(env, own_environment=True))
            assert warm.warm_python(env, own_environment=True) is server  # kept for the next run
            seen = json.loads(server.run([str(probe), "report"], ROOT, env, None, True, 120).stdout)
            assert seen["parent"] == server.server.pid != os.getpid()
            started_in = environ_of(server.server.pid)
            assert started_in["MINITRANS_WARM_PROBE"] == f"own {i}" and seen["probe"] == f"own {i}"
            if preload:  # the allocator loaded in the server, so in the run forked from it
                assert started_in["LD_PRELOAD"] == preload["LD_PRELOAD"] and seen["preloaded"]
        assert servers[1].closed and servers[1].server.returncode is not None  # the least recent, closed
        assert not servers[0].closed and not servers[2].closed
        assert warm.server_for(own[1]) is None and warm.server_for(own[0]) is servers[0]
        assert warm.warm_python(own[0]) is None  # not this process's environment: a new interpreter
    finally:
        for server in servers.values():  # ~0.4 GB each: not kept for the module's other tests
            server.close()


def test_a_documented_line_forks_only_where_it_runs_one_script_with_this_python():
    """python_run: the environment and arguments of the one script a line runs (bash's expansion,
    and for `make train` make's own line and environment), None for anything else."""
    if Path(sys.executable) != ROOT / ".venv" / "bin" / "python":
        pytest.skip("the documented commands run .venv/bin/python: run the suite with it (make test)")
    if subprocess.run(["make", "-q", ".venv/.installed"], cwd=ROOT).returncode != 0:
        pytest.skip("make would install the environment first (make install)")
    env = {**os.environ, "PATH": f"{ROOT / '.venv' / 'bin'}:{os.environ['PATH']}", "CORPUS": "/a b"}
    assert python_run('.venv/bin/python translate.py -c "$CORPUS" "Ein Hund."', ROOT, env) == (
        env,
        ["translate.py", "-c", "/a b", "Ein Hund."],
    )
    assert python_run('X="1 2" python train.py a=[b]', ROOT, env) == ({**env, "X": "1 2"}, ["train.py", "a=[b]"])
    made, args = python_run("make train ARGS=\"experiment=ci a='x y'\"", ROOT, env)
    assert args == ["train.py", "experiment=ci", "a=x y"]
    level = str(int(env.get("MAKELEVEL", "0")) + 1)  # one deeper than this process (2 under make test)
    assert "LD_PRELOAD" in made and made["MAKELEVEL"] == level and made["CORPUS"] == "/a b"  # as make gives it
    for other in (
        "cat s.de | .venv/bin/python translate.py -c runs/RUN",
        ".venv/bin/python translate.py -c runs/RUN > out.en",
        ".venv/bin/python translate.py -c runs/RUN && echo done",
        ".venv/bin/python translate.py -c $(echo runs/RUN)",
        ".venv/bin/python -m analysis.formulas -c runs/RUN",
        "python3 -c 'print(1)'",
        f"{os.path.realpath(sys.executable)} train.py",  # the interpreter the environment's links to
        ".venv/bin/python no_such_script.py",
        '"X=1" python train.py',  # a quoted word is no assignment: bash looks for a program "X=1"
        "PATH=/nowhere python train.py",  # the program looked up in the line's own PATH
        "make install",
        ".venv/bin/python translate.py -c a#b > out.en",  # a # inside a word hides nothing from bash
        ".venv/bin/python translate.py -c runs/RUN 2>&1",
        ".venv/bin/python translate.py -c runs/RUN; echo done",
        '.venv/bin/python translate.py "a\\" "',  # bash reads it; shlex cannot: bash runs it
        "make train | tee train.log",  # never looked up with make: that would run the recipe
    ):
        assert python_run(other, ROOT, env) is None, other
    assert not Path(ROOT / "out.en").exists() and not Path(ROOT / "train.log").exists()
    # make's line is expanded as make's /bin/sh expands it: no brace expansion
    _, args = python_run('make train ARGS="+x={a:1,b:2}"', ROOT, env)
    assert args == ["train.py", "+x={a:1,b:2}"]
