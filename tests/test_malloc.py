"""inference/malloc.py: a decoding worker's freed tensors stay in the process (glibc only)."""

import os
import platform
import subprocess
import sys

import pytest

from bench.common import allocators
from helpers.commands import ROOT

# Beam search (5 beams, 32 sentences) with the compact shape's default config, untrained: the page
# faults of three searches after two first ones (which fault in what the heap grows to), before
# or after keep_freed_memory(). A fresh process for each, since the thresholds stay set for the
# life of a process.
FAULTS = """
import resource, torch
from inference.malloc import keep_freed_memory
from model import Transformer, TransformerConfig
from model.search import beam_search
if {keep}:
    assert keep_freed_memory()
torch.manual_seed(0)
model = Transformer(TransformerConfig()).eval()
src = torch.randint(4, 8000, (32, 14))
for _ in range(2):
    beam_search(model, src, 5, 12)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(3):
    beam_search(model, src, 5, 12)
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def printed(script: str, preload: str | None) -> str:
    """What `python -c SCRIPT` in the checkout prints, with `preload` as LD_PRELOAD (None: glibc's malloc)."""
    env = {name: value for name, value in os.environ.items() if name != "LD_PRELOAD"}
    if preload is not None:
        env["LD_PRELOAD"] = preload
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def page_faults(keep: bool) -> int:
    return int(printed(FAULTS.format(keep=keep), preload=None))


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt's thresholds are glibc's")
def test_decoding_reuses_freed_memory_instead_of_faulting_it_in_again():
    # glibc's defaults return a step's megabyte-sized blocks to the kernel: ~18,000 faults here.
    # Kept, ~200 on the AMX Xeon, but 2,106 on one CI host (another CPU's kernels and scratch
    # buffers): a factor of 4 still fails where the thresholds change nothing (a factor of ~1)
    assert page_faults(keep=True) * 4 < page_faults(keep=False)


def test_another_malloc_preloaded_is_left_alone():
    """With tcmalloc first in the process (as `make train` preloads it), glibc's thresholds would
    change nothing: the function says so instead of claiming it."""
    library = allocators().get("tcmalloc")  # where `make train` finds it
    if library is None:
        pytest.skip("no tcmalloc (Debian: apt install libtcmalloc-minimal4)")
    script = "from inference.malloc import keep_freed_memory; print(keep_freed_memory())"
    assert printed(script, preload=library) == "False"
