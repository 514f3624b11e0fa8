"""A whole training run (training/run.py) on real Multi30k: the `ci` experiment end to end."""

import json
import os
import shlex
import subprocess

import torch

from analysis.head_stats import KINDS, STATISTICS
from helpers import TOY_DATA, run_train, scalars
from helpers.commands import ROOT
from inference.checkpoint import average_checkpoints, load_checkpoint, load_for_inference
from training.run import next_commands
from utils.checkpoint_files import step_checkpoints


def test_ci_experiment_trains_end_to_end(ci_run):
    results = json.loads((ci_run / "results.json").read_text())
    test = results["test"]["test_2016_flickr"]
    assert test["bleu"] > 1.0, "the tiny model should learn something in 240 steps"
    assert test["bleu_signature"].startswith("nrefs:1|case:mixed|eff:no|tok:13a")
    assert 0 < test["chrf"] <= 100 and test["beam_size"] == 2
    assert results["steps"] == 240
    assert results["total_minutes"] > results["minutes"] > 0  # the final evaluation counts too
    assert results["peak_rss_mb"] > 100
    # where its time went: each thing the ci run does beside its steps took some, and the parts are
    # the run (one session) to the rounding of the minutes
    spent = results["seconds"]
    assert set(spent) == {
        "training steps",
        "preparation (data, model)",
        "validation",
        "attention maps",
        "checkpoints",
        "final validation and averaging",
        "test decoding",
        "head importance",
    }
    assert all(seconds > 0 for seconds in spent.values())
    assert abs(sum(spent.values()) / 60 - results["total_minutes"]) < 0.02
    assert (ci_run / "checkpoints" / "best.pt").is_file()
    assert (ci_run / "checkpoints" / "step_0000240.pt").is_file()
    assert (ci_run / "spm_src.model").is_file() and (ci_run / "spm_tgt.model").is_file()  # the source folded
    assert (ci_run / ".hydra" / "config.yaml").is_file()
    assert "Hund" in (ci_run / "src_forms.txt").read_text(encoding="utf-8").splitlines()
    hyps = (ci_run / "test_2016_flickr.hyp.en").read_text().splitlines()
    assert len(hyps) == 100  # max_eval_examples; line-aligned with the references


def test_checkpoint_averaging_ran_and_averages_elementwise(ci_run):
    assert "average of 3 checkpoints: val BLEU" in (ci_run / "train.log").read_text()
    paths = step_checkpoints(ci_run / "checkpoints")[-2:]
    averaged = average_checkpoints(paths)
    first, second = (load_checkpoint(p)["model"] for p in paths)
    name = "encoder.layers.0.self_attn.in_proj.weight"
    torch.testing.assert_close(averaged[name], (first[name] + second[name]) / 2)


def test_best_checkpoint_holds_the_average_only_if_it_validated_better(ci_run):
    log = (ci_run / "train.log").read_text().splitlines()
    at = next(i for i, line in enumerate(log) if "average of 3 checkpoints: val BLEU" in line)
    average_won = "(best)" in log[at - 1]  # the validation of the average, logged just before
    best = load_checkpoint(ci_run / "checkpoints" / "best.pt")["model"]
    average = average_checkpoints(step_checkpoints(ci_run / "checkpoints")[-3:])
    same = all(torch.equal(best[name], average[name]) for name in average)
    assert same == average_won, f"average won: {average_won}, best.pt is the average: {same}"


def test_events_hold_the_scalar_tags_and_val_loss_decreases(ci_run):
    events = scalars(ci_run)
    tags = set(events.Tags()["scalars"])
    expected = {
        "train/loss",
        "train/lr",
        "train/grad_norm",
        "train/tokens_per_sec",
        "val/loss",
        "val/ppl",
        "val/bleu",
        "test/bleu",
    }
    assert expected <= tags, f"missing {expected - tags}"
    val_loss = [e.value for e in events.Scalars("val/loss")]
    assert len(val_loss) >= 3 and val_loss[-1] < val_loss[0]
    assert "samples/text_summary" in events.Tags()["tensors"]  # how SummaryWriter stores text


def test_head_statistics_are_figures_unless_attention_logging_is_off(ci_run, toy_run):
    """Each validation logs every head statistic as a chart line per head and a layers x heads
    figure per statistic; `train.attention_every=0` (toy_run), which turns the attention pictures
    off, keeps the charts and draws no figure."""
    statistic_figures = {f"heads/{name}" for kind in KINDS for name in STATISTICS[kind]}
    logged, off = scalars(ci_run), scalars(toy_run)
    for events in (logged, off):
        assert "heads/entropy/cross/layer_1/head_1" in events.Tags()["scalars"]
    assert statistic_figures <= set(logged.Tags()["images"])
    assert len(logged.Images("heads/entropy")) == len(logged.Scalars("val/loss")) >= 3  # at every validation
    assert not statistic_figures & set(off.Tags()["images"])


def test_separate_vocabularies_get_separate_embeddings(tmp_path):
    run_train(
        tmp_path,
        "experiment=ci",
        *TOY_DATA,
        "data.tokenizer.joint=false",
        "data.tokenizer.vocab_size=310",  # the toy corpus's English side has fewer pieces to learn
        "data.tokenizer.upper_copies=0",  # and too few for its letters' capitals beside them
        "train.max_steps=10",
        "train.eval_every=10",
        "train.attention_every=0",
        "train.head_importance=false",
        "train.threads=1",
    )
    checkpoint = load_checkpoint(tmp_path / "checkpoints" / "best.pt")
    assert checkpoint["model_config"]["share_embeddings"] is False
    weights = checkpoint["model"]
    assert not torch.equal(weights["src_embedding.embedding.weight"], weights["tgt_embedding.embedding.weight"])
    assert (tmp_path / "spm_src.model").is_file() and (tmp_path / "spm_tgt.model").is_file()


def test_test_translations_are_utf8_whatever_the_locale(tmp_path):
    """Into German (umlauts, ß) under an ASCII locale, as on a server with LANG unset: the
    translations file is UTF-8, as every file the project writes."""
    ascii_locale = {**os.environ, "LC_ALL": "C", "PYTHONCOERCECLOCALE": "0", "PYTHONUTF8": "0"}
    run_train(
        tmp_path,
        "experiment=ci",
        *TOY_DATA,
        "data.src_lang=en",
        "data.tgt_lang=de",
        "train.attention_every=0",
        "train.head_importance=false",
        env=ascii_locale,
    )  # 240 steps: enough to write umlauts
    translations = (tmp_path / "test_2016_flickr.hyp.de").read_bytes().decode("utf-8")
    assert any(c in translations for c in "äöüß"), "no German letters to test with"


def test_checkpoint_is_self_contained(ci_run):
    model, tokenizer, meta = load_for_inference(ci_run)
    assert meta["src_lang"] == "de" and meta["tgt_lang"] == "en"
    assert model.cfg.src_vocab_size == tokenizer.src_vocab_size == 340
    checkpoint = load_checkpoint(ci_run / "checkpoints" / "step_0000240.pt")
    assert set(checkpoint["train_state"]) == {"optimizer", "scheduler", "progress", "rng"}
    assert checkpoint["model_config"]["eos_id"] == tokenizer.eos_id and checkpoint["model_config"]["unk_id"] == 1
    assert checkpoint["train_state"]["progress"]["step"] == 240


def test_a_run_in_runs_becomes_runs_latest_and_ends_with_the_commands_to_use_it(tmp_path):
    """runs/latest moves from the run before to the new one as it starts; the log's last lines
    are the commands to translate with the run, watch it and export it, and they run as printed
    (TensorBoard's is a server: the README's test runs it), as does -c runs/latest."""
    runs = tmp_path / "runs"
    (runs / "before").mkdir(parents=True)
    (runs / "latest").symlink_to("before")
    run_dir = runs / "2026-11-27_10-00-00"
    short = ["train.max_steps=10", "train.eval_every=10", "train.head_importance=false", "train.attention_every=0"]
    run_train(run_dir, "experiment=ci", *TOY_DATA, *short, f"data.cache_dir={tmp_path / 'cache'}")
    assert os.readlink(runs / "latest") == run_dir.name  # relative: the runs folder may move
    translate, tensorboard, export = next_commands(run_dir, "de", "en")
    assert (run_dir / "train.log").read_text(encoding="utf-8").splitlines()[-3:] == [
        f"  {translate}",
        f"  {tensorboard}",
        f"  {export}",
    ]
    assert str(run_dir) in tensorboard and "Ein Hund rennt durch den Schnee." in shlex.split(translate)

    def run(line: str, *replace: tuple[str, str]) -> str:
        words = shlex.split(line)
        for old, new in replace:
            words = [new if word == old else word for word in words]
        return subprocess.run(words, cwd=ROOT, capture_output=True, text=True, check=True).stdout

    translation = run(translate)  # of ten steps' model: one line, whatever it holds
    assert translation.count("\n") == 1 and run(translate, (str(run_dir), str(runs / "latest"))) == translation
    run(export, ("exports/de-en", str(tmp_path / "export")))  # not into the checkout's exports/
    assert (tmp_path / "export" / "model.bin").is_file()
    assert next_commands(run_dir, "xx", "en")[0].endswith(shlex.quote(str(run_dir)))  # no example: a prompt
