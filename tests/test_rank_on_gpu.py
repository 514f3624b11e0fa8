"""bench/rank_on_gpu.sh: one training process per candidate line, at once, then the table.

A stand-in for Python records what the script runs (no GPU needed)."""

import shutil
import subprocess

import pytest

from helpers import ROOT

SCRIPT = ROOT / "bench" / "rank_on_gpu.sh"
pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


def test_each_candidate_line_becomes_one_run_with_its_overrides(tmp_path):
    calls = tmp_path / "calls"
    fake_python = tmp_path / "python"
    fake_python.write_text(f'#!/bin/sh\necho "$*" >> {calls}\n')
    fake_python.chmod(0o755)
    candidates = tmp_path / "candidates.txt"
    candidates.write_text("-   # the recipe itself\n\n# a comment line\nmodel.dropout=0.2 seed=2  # two\n")
    out = tmp_path / "out"
    result = subprocess.run(
        ["bash", str(SCRIPT), str(candidates), str(out), "5300", "data.dir=/d"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"PYTHON": str(fake_python), "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 0, result.stderr
    assert "2 runs, 0 failed" in result.stdout
    lines = sorted(calls.read_text().splitlines())
    common = (
        "train.py train.device=cuda train.precision=fp32 train.threads=1 train.max_minutes=null "
        "train.max_steps=5300 data.dir=/d"
    )
    assert lines == [
        f"bench/sweep_table.py {out}",
        f"{common} hydra.run.dir={out}/0",
        f"{common} model.dropout=0.2 seed=2 hydra.run.dir={out}/1",
    ]


def test_missing_arguments_or_file_are_one_line_errors(tmp_path):
    for args in ([], [str(tmp_path / "none.txt"), str(tmp_path), "10"]):
        result = subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, cwd=ROOT)
        assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1
