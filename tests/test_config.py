"""The Hydra configuration (conf/, training/config.py) and train.py's one-line errors."""

import dataclasses
import json
import re

import pytest
import yaml
from omegaconf import OmegaConf

from data import DataConfig
from data.prepare import load_corpus
from helpers import CONF, compose_config
from model import TransformerConfig
from training.config import FROM_TOKENIZER, RunConfig, TrainConfig, to_run_config
from utils.errors import UserError
from utils.settings import READ_WHEN


def leaves(tree: dict, prefix: str = "") -> dict:
    """{"train.lr": 0.003, ...} of a nested dict."""
    out = {}
    for key, value in tree.items():
        out.update(leaves(value, f"{prefix}{key}.") if isinstance(value, dict) else {f"{prefix}{key}": value})
    return out


# resolved for the default pair (de-en), as a composed run without overrides is
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


@pytest.mark.parametrize(
    "path",
    # model/auto.yaml is the table of shapes (tests/test_shape_choice.py), not settings of `model`
    sorted(p for group in ("model", "data") for p in (CONF / group).glob("*.yaml") if p.stem != "auto"),
    ids=lambda p: f"{p.parent.name}/{p.stem}",
)
def test_group_options_set_only_what_differs_from_the_schema(path):
    """Every default lives in the schema's dataclasses alone: an option that repeated one would be
    a second copy that could drift from it."""
    for key, value in leaves(yaml.safe_load(path.read_text()) or {}).items():
        default = SCHEMA_DEFAULTS[f"{path.parent.name}.{key}"]
        assert value != default, f"{path.name} sets {key} to {value!r}, the schema's default"


def test_the_default_run_is_the_one_hour_recipe():
    run = to_run_config(compose_config())
    assert run.model == TransformerConfig()  # the compact shape, the model's defaults
    assert set(run.shapes) == {"compact", "small"}  # model=auto: the run picks one by this machine's speed
    assert run.model.d_model == 128 and run.model.n_encoder_layers == 4
    assert (run.train.max_minutes, run.train.precision, run.train.schedule) == (60, "auto", "linear")
    overridden = to_run_config(compose_config("experiment=ci", "train.precision=bf16"))
    assert overridden.train.precision == "bf16" and overridden.model.d_model == 64


def test_what_the_recipe_resolves_for_the_languages_follows_the_command_line():
    """The umlaut spelling (German sources only) and the share of numbers (languages with number
    words) are resolved for the languages a command gives, not for the default pair: the schema
    once held them resolved for German to English, and every run spelt umlauts out."""
    resolved = lambda *overrides: to_run_config(compose_config(*overrides)).data  # noqa: E731
    assert resolved().tokenizer.spell_source_umlauts and resolved().augment.numbers == 0.5
    en_de = resolved("data.src_lang=en", "data.tgt_lang=de")
    assert en_de.tokenizer.spell_source_umlauts is False and en_de.tokenizer.fold_source_case
    ja_en = resolved("data=files", "data.train=/corpus/train", "data.src_lang=ja", "data.tgt_lang=en")
    assert ja_en.augment.numbers == 0 and ja_en.tokenizer.spell_source_umlauts is False
    assert resolved(
        "data.src_lang=en", "data.tgt_lang=de", "data.tokenizer.spell_source_umlauts=true"
    ).tokenizer.spell_source_umlauts


def test_hydra_settings_live_in_their_group():
    hydra = compose_config(return_hydra_config=True).hydra
    assert hydra.run.dir.startswith("runs/") and hydra.job.chdir is False


@pytest.mark.parametrize("path", sorted((CONF / "experiment").glob("*.yaml")), ids=lambda p: p.stem)
def test_experiment_files_hold_only_what_they_change(path):
    """Every value an experiment file sets differs from the one the run would have without it,
    and every model group it picks differs from the default's (model=auto)."""
    assert path.read_text().startswith("# @package _global_"), path
    experiment = yaml.safe_load(path.read_text())
    without = leaves(yaml.safe_load(yaml.safe_dump(OmegaConf.to_container(compose_config()))))
    for key, value in leaves({k: v for k, v in experiment.items() if k != "defaults"}).items():
        assert without[key] != value, f"{path.name} sets {key} to {value!r}, which it already is"
    default = to_run_config(compose_config())
    for override in experiment.get("defaults", []):
        ((group, option),) = override.items()
        picked = to_run_config(compose_config(f"model={option}"))
        # another shape, or a fixed one instead of the table's (model=auto)
        assert group == "override /model" and (picked.model, picked.shapes) != (default.model, default.shapes)


# --- a setting the run would not read is refused (utils/settings.py) --------------------------


def rules(config_class) -> dict:
    """{field name: its ReadWhen} of a config dataclass."""
    return {f.name: f.metadata[READ_WHEN] for f in dataclasses.fields(config_class) if READ_WHEN in f.metadata}


# a value unlike each field's default, to give it
GIVEN = {
    "dir": "/corpus",
    "url": "'http://127.0.0.1:1/{split}.{lang}.gz'",
    "train": "/corpus/train",
    "val": "/corpus/dev",
    "test": "[/corpus/test]",
    "val_size": "500",
    "val_seed": "7",
    "src_field": "de",
    "tgt_field": "en",
    "header": "true",
    "quoting": "csv",
    "name": "/data/wmt16",
    "subset": "de-en",
    "subword_n_best": "4",
    "reserve_minutes": "2",
    "lr_floor": "0.1",
    "average_last": "3",
    "length_penalty": "0.6",
    "attention_probes": "1",
    "attention_sentences": "['Ein Hund.']",
    "head_importance_sentences": "10",
}
DATA_OPTIONS = sorted(p.stem for p in (CONF / "data").glob("*.yaml"))
# train's choices that make its other settings read or not, each with the values a run may take
TRAIN_CHOICES = [
    [],
    ["train.schedule=constant"],
    ["train.schedule=inverse_sqrt"],
    ["train.max_minutes=null"],
    ["train.eval_beam_size=1", "train.test_beam_size=1"],
    ["train.attention_every=0"],
    ["train.head_importance=true"],
    ["train.ema_decay=0.999"],
    ["experiment=ci"],
    ["experiment=proxy"],
]


@pytest.mark.parametrize("option", DATA_OPTIONS)
@pytest.mark.parametrize("name", sorted(rules(DataConfig)))
def test_every_data_option_refuses_the_settings_it_does_not_read(option, name, monkeypatch):
    """Each data setting that only some options read, given with each option: refused, in one line
    naming who reads it, exactly where its option does not read it (the rule's test, which the
    next test holds to what loading reads)."""
    monkeypatch.delenv("MULTI30K_DIR", raising=False)
    overrides = [f"data={option}", f"data.{name}={GIVEN[name]}"]
    config = compose_config(*overrides)
    read = rules(DataConfig)[name].test(to_run_config(config, overrides=[]).data)
    if read:
        to_run_config(config, overrides)
    else:
        with pytest.raises(UserError, match=rf"^data\.{name} is (read by|read only) .*data[.=]"):
            to_run_config(config, overrides)
    assert read == {
        "dir": option == "multi30k",
        "url": option == "multi30k",
        "header": option == "tsv",
        "quoting": option == "tsv",
        "name": option == "hf",
        "subset": option == "hf",
        "src_field": option in ("tsv", "jsonl", "hf"),
        "tgt_field": option in ("tsv", "jsonl", "hf"),
        "subword_n_best": False,
        "val_size": option in ("files", "tsv", "jsonl"),
        "val_seed": option in ("files", "tsv", "jsonl"),
    }.get(name, option != "multi30k")


@pytest.mark.parametrize("choices", TRAIN_CHOICES, ids=lambda c: " ".join(c) or "recipe")
@pytest.mark.parametrize("name", sorted(rules(TrainConfig)))
def test_every_train_choice_refuses_the_settings_it_does_not_read(choices, name):
    overrides = [*choices, f"train.{name}={GIVEN[name]}"]
    config = compose_config(*overrides)
    if rules(TrainConfig)[name].test(to_run_config(config, overrides=[]).train):
        to_run_config(config, overrides)
    else:
        with pytest.raises(UserError, match=rf"^train\.{name} is read (by|only)"):
            to_run_config(config, overrides)


@pytest.mark.parametrize("name", FROM_TOKENIZER)
def test_what_the_tokenizer_decides_is_not_a_setting(name):
    with pytest.raises(UserError, match=rf"^model\.{name} is not read: a run takes it from its tokenizer"):
        to_run_config(compose_config(f"model.{name}=99"))


@pytest.mark.parametrize("model", ["tiny", "compact", "small", "base"])
@pytest.mark.parametrize("option", [None, *DATA_OPTIONS, "experiment=ci", "experiment=proxy"])
def test_no_option_or_experiment_sets_what_it_does_not_read(option, model):
    """Checked against the defaults (overrides None): a group option or experiment file holds only
    settings its run reads."""
    to_run_config(
        compose_config(f"model={model}", *([option if "=" in option else f"data={option}"] if option else [])),
        overrides=None,
    )


class Recording:
    """A DataConfig that notes which of its settings are read."""

    def __init__(self, config: DataConfig) -> None:
        object.__setattr__(self, "config", config)
        object.__setattr__(self, "read", set())

    def __getattr__(self, name: str):
        self.read.add(name)
        return getattr(self.config, name)


def source_settings(tmp_path) -> dict[str, DataConfig]:
    """Each data option's settings for a corpus of the toy's text, every setting of the option given."""
    from test_sources import hf_copy, write_tsv

    from helpers import TOY_CORPUS

    toy = {
        split: list(
            zip(*(open(TOY_CORPUS / f"{split}.{lang}", encoding="utf-8").read().splitlines() for lang in ("de", "en")))
        )
        for split in ("train", "val")
    }
    tsv = {
        split: write_tsv(tmp_path / f"{split}.tsv", ["en", "de"], [(en, de) for de, en in pairs])
        for split, pairs in toy.items()
    }
    jsonl = tmp_path / "train.jsonl"
    jsonl.write_text("".join(json.dumps({"translation": {"de": de, "en": en}}) + "\n" for de, en in toy["train"]))
    return {
        "multi30k": DataConfig(dir=str(TOY_CORPUS)),
        "files": DataConfig(
            source="files",
            train=str(TOY_CORPUS / "train"),
            val=str(TOY_CORPUS / "val"),
            test=[str(TOY_CORPUS / "test_2016_flickr")],
        ),
        "files, validation set aside": DataConfig(source="files", train=str(TOY_CORPUS / "train"), val_size=50),
        "tsv": DataConfig(
            source="tsv", train=tsv["train"], val=tsv["val"], header=True, quoting="csv", src_field="de", tgt_field="en"
        ),
        "jsonl": DataConfig(source="jsonl", train=str(jsonl), val_size=50, src_field="de", tgt_field="en"),
        "hf": DataConfig(
            source="hf",
            name=hf_copy(tmp_path / "saved"),
            train="train",
            val="validation",
            src_field="de",
            tgt_field="en",
        ),
    }


def test_the_rules_are_what_loading_reads(tmp_path, monkeypatch):
    """For each option, the source settings loading a corpus reads are exactly those the rules call
    read (data.url: tests/test_download.py reads it, without a local folder)."""
    monkeypatch.delenv("MULTI30K_DIR", raising=False)
    sourced = set(rules(DataConfig)) - {"subword_n_best"}  # read by training's sampler, not by loading
    for option, config in source_settings(tmp_path).items():
        recording = Recording(config)
        load_corpus(recording)
        expected = {name for name in sourced if rules(DataConfig)[name].test(config)}
        assert recording.read & sourced == expected, option


@pytest.mark.parametrize(
    "build, said",
    [
        (lambda: TrainConfig(lr=0), "train.lr must be positive, not 0"),
        (lambda: TrainConfig(max_minutes=2, reserve_minutes=2), "train.reserve_minutes must be at least 0 and below"),
        (lambda: TrainConfig(resume="a", init_from="b"), "not both"),
        (lambda: TrainConfig(schedule="cosine"), "train.schedule must be linear, inverse_sqrt or constant"),
        (lambda: DataConfig(val_size=0), "data.val_size must be positive, not 0"),
        (lambda: DataConfig(quoting="excel"), "data.quoting must be none or csv, not 'excel'"),
        (lambda: TransformerConfig(dropout=1.0), "dropout and attention_dropout must be in [0, 1)"),
    ],
)
def test_values_are_checked_when_a_config_is_built(build, said):
    """In the dataclass itself (`__post_init__`), not at first use: the Python API and the tests
    that build a config without Hydra meet the same refusals as train.py (tests/test_bad_input.py)."""
    with pytest.raises(ValueError, match=re.escape(said)):
        build()
    assert TrainConfig() and DataConfig() and TransformerConfig()  # the defaults pass
