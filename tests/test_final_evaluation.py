"""training/final_evaluation.py: the end of a run, on the toy corpus (no Multi30k needed)."""

import json

import pytest
import sacrebleu

from data import load_multi30k
from helpers import TOY_CORPUS, compose_config, scalars
from inference import load_translator
from inference.checkpoint import load_checkpoint
from inference.robustness import robustness
from inference.scoring import moses_bleu
from training.config import to_run_config
from training.final_evaluation import flat_hparams
from training.run import train

# made once, its module-scoped fixtures: its tests stay on one worker (`make test`: xdist, --dist loadgroup)
pytestmark = pytest.mark.xdist_group("test_final_evaluation")

OVERRIDES = [
    "experiment=ci",
    f"data.dir={TOY_CORPUS}",
    "data.tokenizer.vocab_size=340",
    "data.max_train_examples=null",
    "train.max_steps=30",
    "train.eval_every=10",
    "train.checkpoint_every=10",
    "train.average_last=3",
    "train.head_importance=false",
    "train.max_minutes=null",
    "train.attention_every=0",
    "train.robustness=true",
]


@pytest.fixture(scope="module")
def toy_run(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("toy_run")
    cache = tmp_path_factory.mktemp("cache")
    results = train(compose_config(*OVERRIDES, f"data.cache_dir={cache}"), run_dir)
    return run_dir, results


def test_results_json_is_what_the_run_returned_and_the_test_bleu_is_sacrebleus(toy_run):
    run_dir, results = toy_run
    assert json.loads((run_dir / "results.json").read_text()) == results
    assert results["steps"] == 30 and results["parameters"] > 0
    hypotheses = (run_dir / "test_2016_flickr.hyp.en").read_text(encoding="utf-8").splitlines()
    references = list(load_multi30k("de", "en", str(TOY_CORPUS))["test_2016_flickr"]["tgt"])
    assert len(hypotheses) == len(references) == 100
    test = results["test"]["test_2016_flickr"]
    assert test["bleu"] == pytest.approx(sacrebleu.corpus_bleu(hypotheses, [references]).score, abs=0.01)
    assert test["bleu_moses_lowercase"] == pytest.approx(moses_bleu(hypotheses, references, "en"), abs=0.01)
    assert test["beam_size"] == 2  # experiment=ci's test_beam_size


def test_the_best_weights_are_the_best_validation_and_the_ones_tested(toy_run):
    run_dir, results = toy_run
    best = load_checkpoint(run_dir / "checkpoints" / "best.pt")
    assert best["meta"]["val_bleu"] == results["best_val_bleu"]
    validated = [event.value for event in scalars(run_dir).Scalars("val/bleu")]
    assert results["best_val_bleu"] == pytest.approx(max(validated), abs=1e-4)  # the average's too, if it won


def test_robustness_is_the_benchmarks_on_the_best_weights_and_is_logged(toy_run):
    """What the run measured at its end is what bench/robustness.py's pieces measure on its best
    checkpoint, loaded as translate.py loads it (sentences split, the run's test beam), and each
    figure is a TensorBoard scalar."""
    run_dir, results = toy_run
    val = load_multi30k("de", "en", str(TOY_CORPUS))["val"]
    with load_translator(run_dir / "checkpoints" / "best.pt", threads=1, beam_size=2) as translator:
        expected = robustness(translator.translate, list(val["src"][:100]), list(val["tgt"][:100]), ("de", "en"))
    assert results["robustness"] == expected
    assert set(expected) == {
        "as is",
        "lower-cased",
        "upper-cased",
        "typing errors",
        "without its letters (ae)",
        "without its letters (a)",
        "copy-through",
        "copy-through inside",
        "no final punctuation",
        "paragraphs of 3",
        "single words",
        "numbers",
    }
    logged = scalars(run_dir)
    for variant, row in expected.items():
        for key in {"bleu", "loops", "invented_digits", "over_4_words", "copied", "alone_copied"} & set(row):
            [event] = logged.Scalars(f"robustness/{variant.replace(' ', '_')}/{key}")
            assert event.value == pytest.approx(row[key]) and event.step == 30


def test_hparams_are_every_scalar_setting():
    run = to_run_config(compose_config(*OVERRIDES))
    hparams = flat_hparams(run)
    assert hparams["train.max_steps"] == 30 and hparams["model.d_model"] == 64 and hparams["data.vocab_size"] == 340
    assert "train.betas" not in hparams and "data.tokenizer" not in hparams  # not scalars: TensorBoard refuses them
