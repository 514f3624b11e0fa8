"""Argos Translate and LibreTranslate as their users install them, offline.

LibreTranslate pins old Flask, numpy < 2 and requests 2.31, which do not fit the project's
environment, so it gets a virtual environment of its own, made once per machine under .cache/
(`pip install libretranslate`: about a minute, 600 MB); it brings argos-translate-lt, the
argostranslate LibreTranslate runs on. Where it cannot be made (no package index) the tests that
need it skip and say why; in CI they fail instead.

Every run of argostranslate here is offline and alone: its packages, settings and caches in a
folder of the test's (`argos_environ`), and every HTTP(S) request sent to a closed port, so that
anything that would download (MiniSBD's splitters, the package index) fails at once.
"""

import os
import shutil
import subprocess
import sys
import sysconfig
import time
import urllib.request
from pathlib import Path

import pytest
from filelock import FileLock

from helpers.commands import ROOT

# README's command, run as written but for where the environment goes (once per machine, in .cache/)
INSTALL = "python3 -m venv ~/libretranslate && ~/libretranslate/bin/pip install libretranslate==1.9.6"
ENV = ROOT / ".cache" / "libretranslate-1.9.6"


def argos_python() -> Path:
    """The interpreter of the environment with LibreTranslate and argostranslate, made if needed."""
    ENV.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(f"{ENV}.lock"):
        if not (ENV / ".installed").exists():
            shutil.rmtree(ENV, ignore_errors=True)
            made = subprocess.run(
                ["bash", "-c", INSTALL.replace("~/libretranslate", str(ENV))], capture_output=True, text=True
            )
            if made.returncode != 0:
                shutil.rmtree(ENV, ignore_errors=True)
                reason = f"cannot install LibreTranslate ({INSTALL}): {(made.stderr or made.stdout).strip()[-300:]}"
                if os.environ.get("CI"):
                    pytest.fail(reason)
                pytest.skip(reason)
            (ENV / ".installed").touch()
    return ENV / "bin" / "python"


UPSTREAM = ROOT / ".cache" / "argostranslate-1.11.0"


def upstream_argos_python() -> Path:
    """The interpreter of an environment with upstream argostranslate, made if needed (seconds).

    Upstream imports stanza (which needs torch) as it starts and asks for spaCy: the environment
    reads this project's packages (torch, CTranslate2, SentencePiece, MiniSBD) through a .pth
    file and installs argostranslate and stanza beside them without their pinned dependencies
    (spaCy is imported only if present, and only its own sentence splitter uses it)."""
    UPSTREAM.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(f"{UPSTREAM}.lock"):
        if not (UPSTREAM / ".installed").exists():
            shutil.rmtree(UPSTREAM, ignore_errors=True)
            subprocess.run([sys.executable, "-m", "venv", "--without-pip", UPSTREAM], check=True)
            [site] = (UPSTREAM / "lib").glob("python3*/site-packages")
            (site / "minitrans.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
            packages = ["argostranslate==1.11.0", "stanza==1.10.1", "emoji==2.16.0"]
            made = subprocess.run(
                [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", site, *packages],
                capture_output=True,
                text=True,
            )
            if made.returncode != 0:
                shutil.rmtree(UPSTREAM, ignore_errors=True)
                reason = f"cannot install upstream argostranslate: {(made.stderr or made.stdout).strip()[-300:]}"
                if os.environ.get("CI"):
                    pytest.fail(reason)
                pytest.skip(reason)
            (UPSTREAM / ".installed").touch()
    return UPSTREAM / "bin" / "python"


def argos_environ(home: Path, base: dict[str, str] | None = None) -> dict[str, str]:
    """`base` (default: this process's environment) for argostranslate or LibreTranslate with
    everything they keep under `home` and no network."""
    closed = "http://127.0.0.1:9"  # the discard port: nothing listens, every request fails at once
    return {
        **{k: v for k, v in (os.environ if base is None else base).items() if not k.startswith(("ARGOS_", "XDG_"))},
        "HOME": str(home),
        "ARGOS_PACKAGES_DIR": str(home / "packages"),
        "XDG_DATA_HOME": str(home / "data"),
        "XDG_CONFIG_HOME": str(home / "config"),
        "XDG_CACHE_HOME": str(home / "cache"),
        "http_proxy": closed,
        "https_proxy": closed,
        "HTTP_PROXY": closed,
        "HTTPS_PROXY": closed,
        "no_proxy": "",
        "PYTHONPATH": "",
    }


def started_libretranslate(process: subprocess.Popen, timeout: float = 120) -> tuple[str, str]:
    """(its address, what it said) once a LibreTranslate started with stdout piped answers: it
    says where it will serve just before it binds the port, so it is asked until it does."""
    said = []
    for line in process.stdout:
        said.append(line)
        if "Running on" in line:
            break
    url = said[-1].split("Running on ")[-1].strip() if said else ""
    deadline = time.monotonic() + timeout
    while True:
        assert process.poll() is None and url, "LibreTranslate ended:\n" + "".join(said)
        try:
            urllib.request.urlopen(f"{url}/languages", timeout=10).read()
            return url, "".join(said)
        except OSError:
            assert time.monotonic() < deadline, "LibreTranslate did not answer:\n" + "".join(said)
            time.sleep(0.2)
