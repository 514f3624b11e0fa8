"""The project's commands run as a user runs them: a process in the checkout, forked from a warm
Python where it may be (warm.py), else a new interpreter."""

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from helpers.warm import ServerClosed, warm_python

ROOT = Path(__file__).resolve().parents[2]


def command(script: str, *args) -> list[str]:
    """`python SCRIPT ARGS` with this interpreter; SCRIPT relative to the checkout."""
    return [sys.executable, str(ROOT / script), *map(str, args)]


def run_script(
    script: str, *args, check: bool = True, text: bool = True, timeout: float = 600, fresh: bool = False, **kwargs
) -> subprocess.CompletedProcess:
    """Run it to the end, output captured; with `check`, a non-zero exit fails the test with its
    stderr. Forked from the warm Python where the run's environment allows (warm.py), else, and
    with `fresh`, a new interpreter; `kwargs` are subprocess.run's."""
    argv = command(script, *args)
    env = dict(os.environ if kwargs.get("env") is None else kwargs["env"])
    warm = None if fresh or set(kwargs) - {"env", "input"} else warm_python(env)
    result = None
    if warm is not None:
        try:
            result = warm.run(argv[1:], ROOT, env, kwargs.get("input"), text, timeout)
        except ServerClosed:  # closed for another environment's server meanwhile
            pass
    if result is None:
        result = subprocess.run(argv, cwd=ROOT, capture_output=True, text=text, timeout=timeout, **kwargs)
    if check and result.returncode != 0:
        stderr = result.stderr if text else result.stderr.decode(errors="replace")
        raise AssertionError(f"{script} failed ({result.returncode}):\n{stderr[-3000:]}")
    return result


def run_train(run_dir: Path, *overrides: str, check: bool = True, **kwargs) -> subprocess.CompletedProcess:
    """`python train.py OVERRIDES` writing into `run_dir`."""
    return run_script("train.py", f"hydra.run.dir={run_dir}", *overrides, check=check, **kwargs)


ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
# make's SHELL while a line is looked at: it keeps the line make would run (its `-c` and the line,
# once a recipe line) and the environment make would run it in, and runs nothing
RECORDER = """#!/bin/sh
printf '%s\\0' "$@" >> "$MINITRANS_RECORDED.line"
env -0 > "$MINITRANS_RECORDED.env"
"""


def as_make_runs_it(command: str, cwd: Path, env: dict) -> tuple[str, dict] | None:
    """`make ...` as the one line make would run for it and the environment make gives that line
    (make's own variables, what it exports), with a shell that only records them; None where make
    would run more than one line (a target out of date before it, a `$(shell ...)`)."""
    with tempfile.TemporaryDirectory(prefix="make-") as folder:
        recorder, recorded = Path(folder) / "sh", Path(folder) / "recorded"
        recorder.write_text(RECORDER)
        recorder.chmod(0o755)
        looked = subprocess.run(
            ["bash", "-c", f"{command} SHELL={recorder}"],
            cwd=cwd,
            env={**env, "MINITRANS_RECORDED": str(recorded)},
            capture_output=True,
        )
        line = Path(f"{recorded}.line")
        if looked.returncode != 0 or not line.exists():
            return None
        words = [os.fsdecode(word) for word in line.read_bytes().split(b"\0")[:-1]]
        if len(words) != 2 or words[0] != "-c":
            return None
        pairs = [os.fsdecode(pair).split("=", 1) for pair in Path(f"{recorded}.env").read_bytes().split(b"\0")[:-1]]
    made = {name: value for name, value in pairs if name != "MINITRANS_RECORDED"}
    return words[1], made


def one_simple_command(command: str) -> bool:
    """Whether `command` is one simple command for the shell: no pipe, redirection, list,
    substitution or second line (a `#` inside a word is a word's, as for bash); False where its
    quoting is beyond shlex (bash may accept it: then it runs in bash)."""
    if "`" in command or "$(" in command or "\n" in command:
        return False
    tokens = shlex.shlex(command, posix=True, punctuation_chars=True)
    tokens.whitespace_split = True
    tokens.commenters = ""
    try:
        if any(token and set(token) <= set("();<>|&") for token in tokens):
            return False
        shlex.split(command, posix=False)
    except ValueError:  # "No closing quotation" on a line bash reads: not ours to fork
        return False
    return True


def python_run(command: str, cwd: Path, env: dict) -> tuple[dict, list[str]] | None:
    """`command`, a line for bash, as the environment and the arguments it gives this interpreter
    (`[SCRIPT, *ARGS]`, as bash expands them) where it runs one script with it and nothing else;
    None for any other line (a pipe, a redirection, a list, a substitution, Python's own options,
    another program). `make ...` is the line make would run, in the environment make gives it
    (as_make_runs_it)."""
    if not one_simple_command(command):
        return None
    shell = "bash"
    if command.startswith("make "):
        made = as_make_runs_it(command, cwd, env)
        if made is None:
            return None
        command, env = made
        shell = "sh"  # make runs its recipe's line with /bin/sh (the Makefile sets no SHELL)
        if not one_simple_command(command):
            return None
    # the words as the shell expands them (variables, quotes), each ended by NUL
    expanded = subprocess.run(
        [shell, "-c", f"set -- {command}; printf '%s\\0' \"$@\""], cwd=cwd, env=env, capture_output=True
    )
    if expanded.returncode != 0:
        return None
    words = [os.fsdecode(word) for word in expanded.stdout.split(b"\0")[:-1]]
    # the shell takes NAME=value for a variable only as written so, before the program: not quoted,
    # not the result of an expansion
    written = shlex.split(command, posix=False)
    assignments = 0
    while assignments < len(written) and ASSIGNMENT.match(written[assignments]):
        assignments += 1
    if not all(ASSIGNMENT.match(word) for word in words[:assignments]):
        return None
    env = {**env, **dict(word.split("=", 1) for word in words[:assignments])}
    words = words[assignments:]
    if len(words) < 2 or not words[1].endswith(".py") or not (cwd / words[1]).is_file():
        return None
    program = str(cwd / words[0]) if "/" in words[0] else shutil.which(words[0], path=env.get("PATH"))
    # this interpreter where it stands: a virtual environment's python links to the system's
    if program is None or not all(
        os.path.realpath(part(program)) == os.path.realpath(part(sys.executable)) for part in (os.path.dirname, str)
    ):
        return None
    return env, words[1:]


def start_script(argv: list[str], **popen_args) -> subprocess.Popen:
    """Start a command (e.g. `command("train.py", ...)` or a torchrun line) without waiting."""
    return subprocess.Popen(argv, cwd=ROOT, **popen_args)


def stop_when(
    process: subprocess.Popen,
    ready: Callable[[], bool],
    what: str,
    signum: int = signal.SIGKILL,
    group: bool = False,
    timeout: float = 300,
) -> None:
    """Send `signum` to `process` (its whole process group with `group`: torchrun and its workers)
    as soon as `ready()`, e.g. once a checkpoint exists; fails if the process ends first. After a
    SIGKILL it waits for the process to be gone."""
    deadline = time.monotonic() + timeout
    while not ready():
        assert process.poll() is None and time.monotonic() < deadline, f"the process ended before {what}"
        time.sleep(0.05)
    if group:
        os.killpg(process.pid, signum)
    else:
        process.send_signal(signum)
    if signum == signal.SIGKILL:
        process.wait()
