"""Argos Translate and LibreTranslate as their users install them, offline.

LibreTranslate pins old Flask, numpy < 2 and requests 2.31, which do not fit the project's
environment, so it gets a virtual environment of its own, made once per machine under .cache/
(`pip install libretranslate`: about a minute, 600 MB); it brings argos-translate-lt, the
argostranslate LibreTranslate runs on. Where it cannot be made (no package index) the tests that
need it skip and say why; in CI they fail instead.

Every run of argostranslate here is offline and alone (inference/argos_package.offline_environ).
"""

import json
import os
import queue
import shutil
import subprocess
import sys
import sysconfig
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest
from filelock import FileLock

from helpers.commands import ROOT
from inference.argos_package import offline_environ

# README's command, run as written but for where the environment goes (once per machine, in .cache/)
INSTALL = "python3 -m venv ~/libretranslate && ~/libretranslate/bin/pip install libretranslate==1.9.6"
ENV = ROOT / ".cache" / "libretranslate-1.9.6"


def _made_once(folder: Path, make: Callable[[], subprocess.CompletedProcess], what: str) -> None:
    """`folder` made by `make()` unless an earlier session made it whole (its `.installed`);
    under a lock, so that pytest-xdist's workers make it once. A failure skips the test with
    the reason, or fails it in CI."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(f"{folder}.lock"):
        if (folder / ".installed").exists():
            return
        shutil.rmtree(folder, ignore_errors=True)
        made = make()
        if made.returncode != 0:
            shutil.rmtree(folder, ignore_errors=True)
            reason = f"cannot install {what}: {(made.stderr or made.stdout).strip()[-300:]}"
            if os.environ.get("CI"):
                pytest.fail(reason)
            pytest.skip(reason)
        (folder / ".installed").touch()


def argos_python() -> Path:
    """The interpreter of the environment with LibreTranslate and argostranslate, made if needed."""
    command = ["bash", "-c", INSTALL.replace("~/libretranslate", str(ENV))]
    _made_once(ENV, lambda: subprocess.run(command, capture_output=True, text=True), f"LibreTranslate ({INSTALL})")
    return ENV / "bin" / "python"


UPSTREAM = ROOT / ".cache" / "argostranslate-1.11.0"


def upstream_argos_python() -> Path:
    """The interpreter of an environment with upstream argostranslate, made if needed (seconds).

    Upstream imports stanza (which needs torch) as it starts and asks for spaCy: the environment
    reads this project's packages (torch, CTranslate2, SentencePiece, MiniSBD) through a .pth
    file and installs argostranslate and stanza beside them without their pinned dependencies
    (spaCy is imported only if present, and only its own sentence splitter uses it)."""

    def make() -> subprocess.CompletedProcess:
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", UPSTREAM], check=True)
        [site] = (UPSTREAM / "lib").glob("python3*/site-packages")
        (site / "minitrans.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
        packages = ["argostranslate==1.11.0", "stanza==1.10.1", "emoji==2.16.0"]
        install = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", site, *packages]
        return subprocess.run(install, capture_output=True, text=True)

    _made_once(UPSTREAM, make, "upstream argostranslate")
    return UPSTREAM / "bin" / "python"


FORMATTED = """
import html, json, sys
from libretranslate.language import improve_translation_formatting
pairs = json.load(sys.stdin)
print(json.dumps([html.unescape(improve_translation_formatting(source, text)) for source, text in pairs]))
"""


def libretranslate_formatted(python: Path, sources: list[str], translations: list[str], home: Path) -> list[str]:
    """`translations` as LibreTranslate answers them for plain text: it gives the model's text to
    its improve_translation_formatting (the source's final punctuation put at the end, its case
    at the start, html entities unescaped), run here in its own environment."""
    done = subprocess.run(
        [python, "-c", FORMATTED],
        input=json.dumps(list(zip(sources, translations))),
        capture_output=True,
        text=True,
        env=offline_environ(home),
        check=True,
    )
    return json.loads(done.stdout.splitlines()[-1])


def started_libretranslate(process: subprocess.Popen, timeout: float = 180) -> tuple[str, str]:
    """(its address, what it has said) once a LibreTranslate started with stdout piped answers,
    within `timeout` seconds, else the test fails with what it said. It says where it will serve
    just before it binds the port, so it is asked until it does. A thread reads its output to
    the end, so that a full pipe never blocks the server."""
    said: list[str] = []
    address: queue.Queue[str] = queue.Queue()

    def read() -> None:
        for line in process.stdout:
            said.append(line)
            if "Running on" in line:
                address.put(line.split("Running on ")[-1].strip())

    threading.Thread(target=read, daemon=True).start()
    deadline = time.monotonic() + timeout
    try:
        url = address.get(timeout=timeout)
    except queue.Empty:
        raise AssertionError(f"LibreTranslate said nothing of serving in {timeout:.0f} s:\n" + "".join(said)) from None
    while True:
        assert process.poll() is None, "LibreTranslate ended:\n" + "".join(said)
        try:
            urllib.request.urlopen(f"{url}/languages", timeout=10).read()
            return url, "".join(said)
        except OSError:
            assert time.monotonic() < deadline, "LibreTranslate did not answer:\n" + "".join(said)
            time.sleep(0.2)
