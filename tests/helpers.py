"""Shared by the test modules: running train.py as a user would."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONF = ROOT / "conf"


def run_train(run_dir: Path, *overrides: str, check=True, **kwargs) -> subprocess.CompletedProcess:
    cmd = [sys.executable, str(ROOT / "train.py"), f"hydra.run.dir={run_dir}", *overrides]
    result = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600, **kwargs)
    if check and result.returncode != 0:
        raise AssertionError(f"train.py failed ({result.returncode}):\n{result.stderr[-3000:]}")
    return result
