"""Shared by the test modules: running train.py as a user would, composing configs, reading events."""
import subprocess
import sys
from pathlib import Path

from hydra import compose, initialize_config_dir
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from engine.config import register_configs

ROOT = Path(__file__).resolve().parents[1]
CONF = ROOT / "conf"
register_configs()


def run_train(run_dir: Path, *overrides: str, check=True, **kwargs) -> subprocess.CompletedProcess:
    cmd = [sys.executable, str(ROOT / "train.py"), f"hydra.run.dir={run_dir}", *overrides]
    result = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600, **kwargs)
    if check and result.returncode != 0:
        raise AssertionError(f"train.py failed ({result.returncode}):\n{result.stderr[-3000:]}")
    return result


def compose_config(*overrides: str):
    """The config train.py would compose from these overrides."""
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose(config_name="config", overrides=list(overrides))


def scalars(run_dir: Path) -> EventAccumulator:
    """The TensorBoard events of a run folder, everything loaded."""
    events = EventAccumulator(str(run_dir), size_guidance={"scalars": 0, "images": 0, "tensors": 0})
    events.Reload()
    return events
