"""A warm Python for the tests' own runs of the project's scripts (`python train.py ...`).

Every process that trains or translates spends ~3.5 s importing torch, torch._dynamo (which
torch.optim imports in every step), `datasets`, SacreMoses and Hydra before its first line of work,
and a suite starts ~100 such processes of its own (docs/tests.md, "How long it takes"). A server,
started once per pytest worker and environment, imports those libraries, then forks a child for
each run. The child
takes the run's folder, environment, cores, umask, arguments and standard streams (its input a
file or /dev/null; its output pipes, read until every process holding them is done) and runs the
script as `python SCRIPT` does (runpy, as `__main__`); its exit, an exception's traceback and exit
status included, is the interpreter's own.

What a child shares with the server, unlike a new interpreter: the libraries' import-time work
(what they read of the environment, the warning filters they set, a few `ignore` rules of torch's
and numpy's own), the string hash seed, and whatever random state nobody seeds again (numpy's and
`datasets`' generators are). So a run forks only where its environment differs from the server's
in variables read as the code runs (READ_AS_IT_RUNS), and a test that compares two runs for exactly
the same result runs one of them in a new interpreter (`run_script(..., fresh=True)`), as do the
runs a test interrupts (`start_script`). The documented commands' checkout runs in an environment
of its own: its one-script lines fork from a server started in it (`own_environment`).

    python tests/helpers/warm.py REPLY_FD   # the server: requests on stdin, replies on REPLY_FD
"""

import io
import json
import locale
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

# the libraries a training or translating process spends its start on (imported by the server)
PRELOADED = (
    "torch",
    "torch._dynamo",
    "torch.optim",
    "torch.utils.tensorboard",
    "datasets",
    "sacremoses",
    "sacrebleu",
    "sentencepiece",
    "hydra",
    "omegaconf",
)
# variables read as the code runs, never at import time (the project's corpus folder; pytest's name
# of the test, set anew for each; what make hands the line it runs: its flags, level and the
# command line's variables): a run may set, change or drop them and still be forked
READ_AS_IT_RUNS = frozenset(
    {"MULTI30K_DIR", "PYTEST_CURRENT_TEST", "MAKEFLAGS", "MFLAGS", "MAKEOVERRIDES", "MAKELEVEL", "ARGS"}
)


# --- the server -----------------------------------------------------------------------------------


def _preload() -> str:
    """Import PRELOADED; '' where that printed nothing and left no thread of Python's running, else
    why runs must not fork from here. (numpy's BLAS and Arrow's allocator start threads of their
    own, which their fork handlers stop and restart, as in the decoding workers inference/workers.py
    forks.)"""
    with tempfile.TemporaryFile() as printed:
        saved = [os.dup(1), os.dup(2)]
        for fd in (1, 2):
            os.dup2(printed.fileno(), fd)
        try:
            for module in PRELOADED:
                try:
                    __import__(module)
                except ImportError:  # an optional library this environment lacks: the run imports what it has
                    pass
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            for fd, copy in zip((1, 2), saved):
                os.dup2(copy, fd)
                os.close(copy)
        printed.seek(0)
        said = printed.read().decode(errors="replace").strip()
    if said:  # a warning a run would print once, at its own import: a child would not
        return f"importing the libraries printed: {said[:500]}"
    if threading.active_count() > 1:
        return "a library started a thread of Python's while imported"
    return ""


def _become(request: dict, streams: list[int], replies: io.TextIOBase) -> None:
    """In the forked child: the request's process, then its script run as `__main__`."""
    import runpy

    for fd, stream in enumerate(streams):
        os.dup2(stream, fd)
        os.close(stream)
    replies.close()  # the server's: a child holding it would keep the client from seeing the server end
    os.sched_setaffinity(0, request["affinity"])
    os.umask(request["umask"])
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    script = request["argv"][0]
    sys.argv = list(request["argv"])
    safe_path = getattr(sys.flags, "safe_path", False)  # Python 3.11's -P; 3.10 has no such flag
    if not safe_path:  # as `python SCRIPT` puts the script's folder first
        sys.path.insert(0, str(Path(script).resolve().parent))
    if "numpy" in sys.modules:  # generators seeded once, in the server
        sys.modules["numpy"].random.seed()
    if "datasets.fingerprint" in sys.modules:
        sys.modules["datasets.fingerprint"].fingerprint_rng.seed()
    # `__file__` as Python 3.9 and later give it, absolute (not resolved); sys.argv[0] is that path too,
    # where a new interpreter keeps it as typed (the project reads only argv[1:])
    runpy.run_path(os.path.abspath(script), run_name="__main__")  # its SystemExit or exception ends the interpreter


def serve() -> int | None:
    """Answer requests until stdin closes. A child returns from here (or raises) as its script
    ended, and the interpreter exits with that."""
    del sys.path[0]  # this file's folder: its modules must not stand for a library's
    replies = os.fdopen(int(sys.argv[1]), "w", buffering=1)
    why_not = _preload()
    replies.write(json.dumps({"ready": not why_not, "why_not": why_not}) + "\n")
    if why_not:
        return 0
    for line in sys.stdin.buffer:
        request = json.loads(line)
        # the client opened the pipes' reading ends first, so these opens do not wait
        streams = [
            os.open(request["stdin"], os.O_RDONLY),
            os.open(request["stdout"], os.O_WRONLY),
            os.open(request["stderr"], os.O_WRONLY),
        ]
        pid = os.fork()
        if pid == 0:
            _become(request, streams, replies)
            return None
        for stream in streams:
            os.close(stream)
        replies.write(json.dumps({"pid": pid}) + "\n")
        _, status = _waited(pid)
        replies.write(json.dumps({"returncode": os.waitstatus_to_exitcode(status)}) + "\n")
    return 0


def _waited(pid: int) -> tuple[int, int]:
    """os.waitpid(pid, 0), but where stdin ends first (the client gone, even killed, mid-run: no
    request comes while a run runs) the server ends with its whole group, the run's processes in it."""
    run = os.pidfd_open(pid)
    try:
        with selectors.DefaultSelector() as selector:
            selector.register(run, selectors.EVENT_READ, "run")
            selector.register(sys.stdin.fileno(), selectors.EVENT_READ, "client")
            if any(key.data == "client" for key, _ in selector.select()):
                os.killpg(0, signal.SIGKILL)
    finally:
        os.close(run)
    return os.waitpid(pid, 0)


# --- the client -----------------------------------------------------------------------------------


def _decoded(data: bytes) -> str:
    """Output as subprocess's text mode gives it: the locale's encoding, universal newlines."""
    return data.decode(locale.getpreferredencoding(False)).replace("\r\n", "\n").replace("\r", "\n")


class ServerClosed(RuntimeError):
    """The server was closed before the run was sent (warm_python closed it for another)."""


class WarmPython:
    """A server and its runs, one at a time; `failed` once a run broke off (the server stopped)."""

    def __init__(self, env: dict) -> None:
        self.env = env  # what the preloaded libraries read when imported
        reading, writing = os.pipe()
        # A process group of its own, which its runs share: a run broken off is ended with the
        # server and whatever the run started in the group (kill), even one forked as the client
        # stopped waiting for its pid, and the server ends its group when the client is gone (_waited).
        # A run's signal to its own group reaches the server (which then ends: the run broken off),
        # not pytest or its worker; what a run starts in a session of its own (torchrun's workers) is
        # outside the group, as it is outside a new interpreter's.
        self.server = subprocess.Popen(
            [sys.executable, __file__, str(writing)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            pass_fds=[writing],
            env=env,
            cwd=Path(__file__).resolve().parents[2],  # never a test's own folder; each run takes its own
            bufsize=0,  # requests written whole by _send
            start_new_session=True,
        )
        os.close(writing)
        self.replies, self.pending = reading, b""
        self.lock = threading.Lock()
        self.ready: bool | None = None  # not yet said by the server
        self.failed = False
        self.closed = False

    def started(self) -> bool:
        """Whether the server has its libraries and serves (waited for the first time)."""
        with self.lock:  # one thread reads the server's first line
            if self.ready is None:
                try:
                    self.ready = self._reply(time.monotonic() + 120)["ready"]
                except (RuntimeError, TypeError):  # it ended, or said nothing in two minutes
                    self.ready = False
                    self.kill()  # not left importing
        return bool(self.ready) and self.alive()

    def alive(self) -> bool:
        return not self.failed and self.server.poll() is None

    def kill(self) -> None:
        """The server and every process of its group (its runs and what they started) killed."""
        try:
            os.killpg(self.server.pid, signal.SIGKILL)
        except ProcessLookupError:  # all of them ended already
            pass
        self.server.wait()

    def close(self) -> None:
        """The server ends at the end of its requests (killed, with its group, if it has not in
        ten seconds); a second close does nothing."""
        with self.lock:
            if self.closed:
                return
            self.closed = True
            self.server.stdin.close()
            try:
                self.server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()
            os.close(self.replies)

    def _reply(self, deadline: float | None) -> dict | None:
        """The server's next line; None if it has not come by `deadline` (time.monotonic()). Read
        unbuffered, so that a line already here is never waited for."""
        while b"\n" not in self.pending:
            wait = None if deadline is None else max(deadline - time.monotonic(), 0)
            if not _readable([self.replies], wait):
                return None
            chunk = os.read(self.replies, 65536)
            if not chunk:
                raise RuntimeError("the tests' warm Python ended (tests/helpers/warm.py)")
            self.pending += chunk
        line, _, self.pending = self.pending.partition(b"\n")
        return json.loads(line)

    def _send(self, request: dict) -> None:
        data = (json.dumps(request) + "\n").encode()
        while data:
            data = data[os.write(self.server.stdin.fileno(), data) :]

    def run(
        self, argv: list[str], cwd: Path, env: dict, input: str | bytes | None, text: bool, timeout: float | None
    ) -> subprocess.CompletedProcess:
        """What `subprocess.run([python, *argv], capture_output=True, ...)` returns (or raises), from
        a fork."""
        args = [sys.executable, *argv]
        deadline = None if timeout is None else time.monotonic() + timeout
        with self.lock, tempfile.TemporaryDirectory(prefix="warm-") as folder:
            if self.closed:  # closed for another server while the caller held it: a new interpreter serves
                raise ServerClosed("the tests' warm Python was closed (tests/helpers/warm.py)")
            pipes = {name: os.path.join(folder, name) for name in ("stdout", "stderr")}
            readers: dict[int, str] = {}
            output = {"stdout": io.BytesIO(), "stderr": io.BytesIO()}
            pid, sent = None, False
            try:
                for name, path in pipes.items():
                    os.mkfifo(path)
                    readers[os.open(path, os.O_RDONLY | os.O_NONBLOCK)] = name
                stdin = os.devnull
                if input is not None:
                    stdin = os.path.join(folder, "stdin")
                    Path(stdin).write_bytes(
                        input.encode(locale.getpreferredencoding(False)) if isinstance(input, str) else input
                    )
                umask = os.umask(0)
                os.umask(umask)
                request = {"argv": argv, "cwd": str(cwd), "env": env, "stdin": stdin, **pipes, "umask": umask}
                request["affinity"] = sorted(os.sched_getaffinity(0))
                sent = True
                self._send(request)
                started = self._reply(deadline)
                if started is None:
                    raise RuntimeError("the tests' warm Python did not start the run in time")
                pid = started["pid"]
                open_readers = set(readers)
                # the server, until it says the run ended (unless that came with the pid): its end is seen at once
                watched = set() if b"\n" in self.pending else {self.replies}
                while open_readers:  # as subprocess's communicate(): until every writer is done
                    if deadline is not None and time.monotonic() >= deadline:
                        break  # a run that keeps writing is past its time too
                    wait = None if deadline is None else max(deadline - time.monotonic(), 0)
                    ready = _readable([*open_readers, *watched], wait)
                    if not ready:
                        break
                    for fd in ready:
                        chunk = os.read(fd, 65536)
                        if fd == self.replies:
                            if not chunk:
                                raise RuntimeError("the tests' warm Python ended (tests/helpers/warm.py)")
                            self.pending += chunk  # the run's status, while its processes still write
                            watched.clear()
                        elif chunk:
                            output[readers[fd]].write(chunk)
                        else:
                            open_readers.discard(fd)
                done = self._reply(deadline) if not open_readers else None
                if done is None:  # past the timeout: as subprocess.run, the child killed, then the time said
                    # else it ended, reaped by the server (its pid free again); its processes held the pipes
                    if watched:
                        try:
                            os.kill(pid, signal.SIGKILL)
                        except ProcessLookupError:  # ended as the time ran out
                            pass
                    self._reply(None)
                    raise subprocess.TimeoutExpired(
                        args, timeout, output["stdout"].getvalue(), output["stderr"].getvalue()
                    )
            except subprocess.TimeoutExpired:
                raise
            except BaseException:  # a signal, ^C, the server gone: no run may read this one's replies
                if sent:  # else the server never heard of this run and serves on
                    self.failed = True
                    self.kill()  # the run with it, whether or not its pid had come
                raise
            finally:
                for fd in readers:
                    os.close(fd)
        out, err = output["stdout"].getvalue(), output["stderr"].getvalue()
        if text:
            out, err = _decoded(out), _decoded(err)
        return subprocess.CompletedProcess(args, done["returncode"], out, err)


def _readable(fds: list[int], wait: float | None) -> list[int]:
    """Those of `fds` that can be read (or have ended) within `wait` seconds (None: however long);
    epoll, unlike select, takes a descriptor numbered 1024 or more (a worker holding many files)."""
    with selectors.DefaultSelector() as selector:
        for fd in fds:
            selector.register(fd, selectors.EVENT_READ)
        return [key.fd for key, _ in selector.select(wait)]


# this process's servers, by the environment they were started in (but READ_AS_IT_RUNS), least
# recently used first: its own, and a documented command checkout's (many runs in one environment)
_servers: dict[frozenset, WarmPython] = {}
_servers_lock = threading.Lock()  # tests that run scripts from threads of their own start one server
# each holds its libraries' memory (~0.4 GB): the least recently used is closed past this many (a
# worker's own, the checkout's with and without make's allocator, the checkout's for Argos, one more)
MOST_SERVERS = 5


def _changed(env: dict, other: dict) -> set[str]:
    """The variables set differently in `env` and `other`, but those read as the code runs."""
    return {k for k in env.keys() | other.keys() if env.get(k) != other.get(k)} - READ_AS_IT_RUNS


def _key(env: dict) -> frozenset:
    return frozenset((k, v) for k, v in env.items() if k not in READ_AS_IT_RUNS)


def server_for(env: dict) -> WarmPython | None:
    """The server started for runs in `env`, if any (started or not, alive or not)."""
    return _servers.get(_key(env))


def warm_python(env: dict, own_environment: bool = False) -> WarmPython | None:
    """A warm Python for a run in `env`, or None where the run may not fork. Without
    `own_environment`, this process's: a run whose environment differs from this process's in a
    variable a library may read when imported starts a new interpreter; with it, a server started
    in `env` itself (the documented commands' checkout, whose many runs share an environment of
    their own). Started at the first run for that environment, and again where a run broke off;
    None where a server cannot serve here (its imports printed or left a thread)."""
    here = dict(os.environ)
    if not own_environment and _changed(env, here):
        return None
    start_in = env if own_environment else here
    key = _key(start_in)
    closing = []
    with _servers_lock:
        server = _servers.pop(key, None)
        if server is not None and server.ready is False:
            _servers[key] = server
            return None  # its imports printed or left a thread, or it never started: none serves here
        if server is None or not server.alive():
            if server is not None:
                closing.append(server)
            while len(_servers) >= MOST_SERVERS:
                closing.append(_servers.pop(next(iter(_servers))))
            server = WarmPython(start_in)
        _servers[key] = server  # the most recently used last
    for old in closing:  # outside the lock: a run of another thread's may hold one a while
        old.close()
    return server if server.started() else None


if __name__ == "__main__":
    sys.exit(serve())
