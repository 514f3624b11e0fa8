"""Data-parallel training under torchrun (engine/distributed.py), gloo on the CPU."""
import subprocess
import sys

import pytest

from helpers import ROOT


@pytest.mark.skipif(sys.platform != "linux", reason="gloo on CPU is tested on Linux")
def test_distributed_two_processes_keep_equal_parameters(multi30k_dir, tmp_path):
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
           str(ROOT / "train.py"), f"hydra.run.dir={tmp_path}", "experiment=ci", "train.max_steps=40",
           "train.eval_every=20", "train.threads=1"]
    result = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    checksums = {}
    for line in (tmp_path / "train.log").read_text().splitlines():
        if "parameter checksum" in line:
            rank = line.split("rank ")[1].split("/")[0]
            checksums[rank] = line.rsplit(" ", 1)[1]
    assert set(checksums) == {"0", "1"}
    assert checksums["0"] == checksums["1"]
    assert (tmp_path / "results.json").is_file()
