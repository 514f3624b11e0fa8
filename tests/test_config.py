"""The Hydra configuration (conf/, training/config.py) and train.py's one-line errors."""
import os

import pytest
import torch
import yaml
from omegaconf import OmegaConf

from model import TransformerConfig
from training.config import RunConfig, to_run_config

from helpers import CONF, compose_config, run_train


def leaves(tree: dict, prefix: str = "") -> dict:
    """{"train.lr": 0.003, ...} of a nested dict."""
    out = {}
    for key, value in tree.items():
        out.update(leaves(value, f"{prefix}{key}.") if isinstance(value, dict) else {f"{prefix}{key}": value})
    return out


SCHEMA_DEFAULTS = leaves(OmegaConf.to_container(OmegaConf.structured(RunConfig)))


def group_file(group: str, option: str) -> dict:
    return yaml.safe_load((CONF / group / f"{option}.yaml").read_text()) or {}


@pytest.mark.parametrize("experiment", [None, "ci", "proxy"])
@pytest.mark.parametrize("model", ["tiny", "compact", "small", "base"])
def test_every_config_composes_to_the_schema_defaults_and_what_its_files_change(experiment, model):
    overrides = [f"model={model}"] + ([f"experiment={experiment}"] if experiment else [])
    composed = leaves(OmegaConf.to_container(OmegaConf.structured(to_run_config(compose_config(*overrides)))))
    expected = dict(SCHEMA_DEFAULTS)
    expected.update({f"model.{key}": value for key, value in leaves(group_file("model", model)).items()})
    if experiment:
        experiment_file = group_file("experiment", experiment)
        expected.update(leaves({k: v for k, v in experiment_file.items() if k != "defaults"}))
    assert composed == expected


@pytest.mark.parametrize("path", sorted(p for group in ("model", "data") for p in (CONF / group).glob("*.yaml")),
                         ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_group_options_set_only_what_differs_from_the_schema(path):
    """Every default lives in the schema's dataclasses alone: an option that repeated one would be
    a second copy that could drift from it."""
    for key, value in leaves(yaml.safe_load(path.read_text()) or {}).items():
        default = SCHEMA_DEFAULTS[f"{path.parent.name}.{key}"]
        assert value != default, f"{path.name} sets {key} to {value!r}, the schema's default"


def test_the_default_run_is_the_one_hour_recipe():
    run = to_run_config(compose_config())
    assert run.model == TransformerConfig()  # model=compact is the model's defaults
    assert run.model.d_model == 128 and run.model.n_encoder_layers == 4
    assert (run.train.max_minutes, run.train.precision, run.train.schedule) == (60, "auto", "linear")
    overridden = to_run_config(compose_config("experiment=ci", "train.precision=bf16"))
    assert overridden.train.precision == "bf16" and overridden.model.d_model == 64


def test_hydra_settings_live_in_their_group():
    hydra = compose_config(return_hydra_config=True).hydra
    assert hydra.run.dir.startswith("runs/") and hydra.job.chdir is False


@pytest.mark.parametrize("path", sorted((CONF / "experiment").glob("*.yaml")), ids=lambda p: p.stem)
def test_experiment_files_hold_only_what_they_change(path):
    """Every value an experiment file sets differs from the one the run would have without it,
    and every model group it picks differs from the default's."""
    assert path.read_text().startswith("# @package _global_"), path
    experiment = yaml.safe_load(path.read_text())
    without = leaves(yaml.safe_load(yaml.safe_dump(OmegaConf.to_container(compose_config()))))
    for key, value in leaves({k: v for k, v in experiment.items() if k != "defaults"}).items():
        assert without[key] != value, f"{path.name} sets {key} to {value!r}, which it already is"
    default_model = to_run_config(compose_config()).model
    for override in experiment.get("defaults", []):
        (group, option), = override.items()
        assert group == "override /model" and to_run_config(compose_config(f"model={option}")).model != default_model


@pytest.mark.parametrize("override, message", [
    ("train.lrr=1", "error: Could not override 'train.lrr'; Key 'lrr' not in 'TrainConfig'"),
    ("train.max_steps=abc", "Value 'abc' of type 'str' could not be converted to Integer"),
    ("model=huge", "Could not find 'model/huge'; available: base, compact, small, tiny"),
    ("train.precision=fp8", "error: train.precision must be auto, fp32 or bf16, not 'fp8'"),
    ("model.n_heads=7", "error: invalid config: d_model (128) must be divisible by n_heads (7)"),
    ("train.lr=-1", "error: train.lr must be positive, not -1.0"),
    ("train.betas=[0.9,1.5]", "error: train.betas must be two numbers in [0, 1), not [0.9, 1.5]"),
    ("model.dropout=1.2", "error: model.dropout and model.attention_dropout must be in [0, 1)"),
    ("train.warmup_steps=-5", "error: train.warmup_steps must be >= 0, not -5"),
    ("train.attention_sentences=['Ein Hund.','  ']", "error: train.attention_sentences holds an empty sentence"),
    ("train.init_from=x", None),  # with train.resume (below)
    ("train.reserve_minutes=60", "error: train.reserve_minutes must be at least 0 and below train.max_minutes"),
    ("data.subword_sampling=-0.5", "error: data.subword_sampling must be >= 0 (0: off) and data.subword_n_best at least 2"),
    ("data.tokenizer.model_type=bpe", None),  # with data.subword_sampling (below)
    ("data.dir=/does/not/exist", "error: Multi30k folder /does/not/exist (from data.dir) does not exist"),
    ("train.device=cuda:0", None),  # on a CPU machine: no GPU; on a GPU machine: trains (not run here)
])
def test_bad_input_gives_one_line_error(tmp_path, override, message):
    if override.startswith("train.device") and torch.cuda.is_available():
        pytest.skip("a GPU is present")
    overrides = [override]
    if override == "train.init_from=x":
        overrides.append("train.resume=y")
        message = "error: give train.resume (continue a run) or train.init_from (start from its weights), not both"
    if override == "data.tokenizer.model_type=bpe":
        overrides.append("data.subword_sampling=0.5")
        message = "error: data.subword_sampling needs data.tokenizer.model_type=unigram (a BPE model has no n best"
    message = message or "error: train.device is cuda:0 but no CUDA GPU is available"
    result = run_train(tmp_path, *overrides, check=False, env={**os.environ, "MULTI30K_DIR": str(tmp_path)})
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_a_run_folder_that_cannot_be_created_is_one_line(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    result = run_train(blocker / "run", check=False)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.startswith(f"error: Not a directory: {blocker}"), result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
