"""inference/robustness.py and bench/robustness.py: a translator on what people type."""

import json
import os

from helpers import TOY_CORPUS, run_script, toy_sentences
from inference.robustness import loops, paragraphs, robustness, single_words


def test_a_loop_counts_only_where_its_input_had_none():
    assert loops(["Hund", "Hund Hund Hund", "Katze"], ["dog dog dog", "dog dog dog", "cat"]) == 1


def test_paragraphs_and_single_words():
    assert paragraphs(["a", "b", "c", "d"]) == ["a b c", "d"]
    assert single_words(["Ein Hund, der rennt.", "Der Hund schläft; Hunde 2024."]) == [
        "Hund",
        "rennt",
        "schläft",
        "Hunde",
    ]


def test_every_variant_is_scored_and_counted():
    """With a 'translator' that returns its input, each variant's BLEU says what it changed: the
    case alone costs nothing (lowercased BLEU; without ß, which upper-cases to SS), and a paragraph
    scores as its sentences joined."""
    sources = [s for s in toy_sentences("val") if "ß" not in s][:30]
    results = robustness(lambda lines: list(lines), sources, sources)
    assert results["as is"] == {"bleu": 100.0, "loops": 0, "lines": 30}
    assert results["lower-cased"]["bleu"] == results["upper-cased"]["bleu"] == 100.0
    assert (
        results["no final punctuation"]["bleu"]
        == results["no final punctuation"]["bleu_as_is_punctuation_removed"]
        == 100.0
    )
    paragraph = results["paragraphs of 3"]
    assert paragraph["lines"] == 10 and paragraph["bleu"] == paragraph["bleu_sentence_by_sentence"] == 100.0
    assert paragraph["length_ratio"] == 1.0
    assert results["single words"] == {"loops": 0, "over_4_words": 0, "lines": len(single_words(sources))}


def test_a_missing_stop_is_measured_against_the_same_translations_without_it():
    """A translator that stops a sentence early when its full stop is missing loses BLEU on that
    variant only; the translations as they are, their stop removed afterwards, score as if it did
    not, and so stay level with the references (both without their final punctuation)."""
    sources = [s for s in toy_sentences("val") if s.endswith(".")][:30]

    def early_stop(lines: list[str]) -> list[str]:
        return [line if line.endswith(".") else " ".join(line.split()[:3]) for line in lines]

    results = robustness(early_stop, sources, sources)["no final punctuation"]
    assert results["bleu"] < 50.0 and results["bleu_as_is_punctuation_removed"] == 100.0


def test_the_benchmark_runs_on_a_trained_model(ci_run, tmp_path):
    done = run_script(
        "bench/robustness.py",
        *("-c", ci_run, "--sentences", "30", "--out", tmp_path / "r.json"),
        env={**os.environ, "MULTI30K_DIR": str(TOY_CORPUS)},
    )
    assert "single words" in done.stdout and "paragraphs of 3" in done.stdout
    result = json.loads((tmp_path / "r.json").read_text())
    assert result["split"] == "val" and result["engine"] == "Translator"
    assert result["variants"]["as is"]["lines"] == 30 and result["variants"]["as is"]["bleu"] > 50
