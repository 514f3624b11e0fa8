"""What the benchmarks share: the allocators they can preload and how they record results."""

import json
import os
import platform
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import torch

from data import load_multi30k
from inference.checkpoint import load_for_inference
from utils.device import cpu_description, cpuinfo
from utils.errors import UserError

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"


def allocators() -> dict[str, str]:
    """Allocator name -> library to preload ("" for glibc's malloc); only those installed.
    `make train` preloads tcmalloc if present, else mimalloc (see the Makefile)."""
    found = {"glibc": ""}
    mimalloc = Path(sysconfig.get_paths()["purelib"]) / "cmeel.prefix" / "lib" / "libmimalloc.so"
    tcmalloc = Path("/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4")
    for name, path in (("mimalloc", mimalloc), ("tcmalloc", tcmalloc)):
        if path.is_file():
            found[name] = str(path)
    return found


def training_allocator() -> str:
    """The allocator `make train` uses on this machine."""
    available = allocators()
    return next(name for name in ("tcmalloc", "mimalloc", "glibc") if name in available)


def loaded_allocator() -> str:
    """The allocator this process runs with (what LD_PRELOAD brought in, if anything)."""
    maps = Path("/proc/self/maps")
    libraries = maps.read_text() if maps.exists() else ""
    return next((name for name in ("tcmalloc", "mimalloc", "jemalloc") if f"lib{name}" in libraries), "default")


def split_text(src_lang: str, tgt_lang: str, split: str, sentences: int | None = None):
    """A Multi30k split in these languages, its first `sentences` pairs if given (quick runs)."""
    text = load_multi30k(src_lang, tgt_lang, splits=[split])[split]
    return text.select(range(min(sentences, len(text)))) if sentences else text


def checkpoint_and_split(checkpoint: str, split: str, sentences: int | None = None) -> tuple:
    """(model, tokenizer, meta, text) of a checkpoint and a Multi30k split in its languages (its
    first `sentences` pairs if given); a problem the user can fix ends the benchmark with one line."""
    try:
        model, tokenizer, meta = load_for_inference(checkpoint)
        text = split_text(meta["src_lang"], meta["tgt_lang"], split, sentences)
    except UserError as e:
        sys.exit(f"error: {e}")
    return model, tokenizer, meta, text


def cpu_model() -> str:
    """The CPU's model name (Linux: /proc/cpuinfo), e.g. 'AMD EPYC'."""
    return cpuinfo("model name") or platform.processor() or platform.machine()


def measured_commit(root: Path = ROOT) -> str:
    """The commit the code being measured is, with "-dirty" where a tracked file outside
    bench/results/ (where results are written) differs from it."""

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], capture_output=True, text=True, cwd=root).stdout.strip()

    changed = git("status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)bench/results")
    return git("rev-parse", "--short", "HEAD") + ("-dirty" if changed else "")


def write_result(path: Path, result: dict) -> None:
    """JSON with the commit and machine it was measured on, then the numbers."""
    header = {
        "commit": measured_commit(),
        "date": time.strftime("%Y-%m-%d"),
        "machine": cpu_model(),
        "cpu_features": cpu_description(),
        "cpu_count": os.cpu_count(),
        "torch": torch.__version__,
        "allocator": loaded_allocator(),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({**header, **result}, indent=2) + "\n")
    print(f"wrote {path}")
