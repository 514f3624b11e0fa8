"""The project's commands run as a user runs them: a process in the checkout, forked from a warm
Python where it may be (warm.py), else a new interpreter."""

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from helpers.warm import warm_python

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
    if warm is not None:
        result = warm.run(argv[1:], ROOT, env, kwargs.get("input"), text, timeout)
    else:
        result = subprocess.run(argv, cwd=ROOT, capture_output=True, text=text, timeout=timeout, **kwargs)
    if check and result.returncode != 0:
        stderr = result.stderr if text else result.stderr.decode(errors="replace")
        raise AssertionError(f"{script} failed ({result.returncode}):\n{stderr[-3000:]}")
    return result


def run_train(run_dir: Path, *overrides: str, check: bool = True, **kwargs) -> subprocess.CompletedProcess:
    """`python train.py OVERRIDES` writing into `run_dir`."""
    return run_script("train.py", f"hydra.run.dir={run_dir}", *overrides, check=check, **kwargs)


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
