"""The Hydra configuration (conf/, engine/config.py) and train.py's one-line errors."""
import os

import pytest
import torch

from engine.config import to_run_config

from helpers import CONF, compose_config, run_train


@pytest.mark.parametrize("experiment", [None, "ci", "cpu_1h"])
@pytest.mark.parametrize("model", ["tiny", "small", "base"])
def test_every_config_composes(experiment, model):
    overrides = [f"model={model}"] + ([f"experiment={experiment}"] if experiment else [])
    run = to_run_config(compose_config(*overrides))
    assert run.model.d_model > 0 and run.train.max_steps > 0


def test_experiment_files_hold_only_what_they_change():
    for path in (CONF / "experiment").glob("*.yaml"):
        assert path.read_text().startswith("# @package _global_"), path


@pytest.mark.parametrize("override, message", [
    ("train.lrr=1", "error: Could not override 'train.lrr'; Key 'lrr' not in 'TrainConfig'"),
    ("train.max_steps=abc", "Value 'abc' of type 'str' could not be converted to Integer"),
    ("model=huge", "Could not find 'model/huge'; available: base, small, tiny"),
    ("train.precision=fp8", "error: train.precision must be fp32 or bf16, not 'fp8'"),
    ("model.n_heads=7", "error: invalid config: d_model (256) must be divisible by n_heads (7)"),
    ("train.reserve_minutes=60", "error: train.reserve_minutes must be at least 0 and below train.max_minutes"),
    ("data.dir=/does/not/exist", "error: Multi30k folder /does/not/exist (from data.dir) does not exist"),
    ("train.device=cuda:0", None),  # on a CPU machine: no GPU; on a GPU machine: trains (not run here)
])
def test_bad_input_gives_one_line_error(tmp_path, override, message):
    if override.startswith("train.device") and torch.cuda.is_available():
        pytest.skip("a GPU is present")
    message = message or "error: train.device is cuda:0 but no CUDA GPU is available"
    result = run_train(tmp_path, override, check=False, env={**os.environ, "MULTI30K_DIR": str(tmp_path)})
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
