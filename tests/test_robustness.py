"""inference/robustness.py and bench/robustness.py: a translator on what people type."""

import json
import os
import re

from helpers import TOY_CORPUS, run_script, toy_sentences
from inference.robustness import (
    copied,
    copied_through,
    loops,
    numbered,
    paragraphs,
    robustness,
    single_words,
    with_copy_items_inside,
    without_item,
)


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
    results = robustness(lambda lines: list(lines), sources, sources, ("de", "de"))
    assert results["as is"] == {"bleu": 100.0, "loops": 0, "invented_digits": 0, "lines": 30}
    assert results["lower-cased"]["bleu"] == results["upper-cased"]["bleu"] == 100.0
    assert (
        results["no final punctuation"]["bleu"]
        == results["no final punctuation"]["bleu_as_is_punctuation_removed"]
        == 100.0
    )
    assert results["typing errors"]["bleu"] < 80.0  # the input's typos, given back, are not the reference's words
    folded = [results[f"without its letters ({style})"]["bleu"] for style in ("ae", "a")]
    assert all(60.0 < bleu < 100.0 for bleu in folded)  # only the words with ä ö ü ß differ
    assert results["copy-through"] == {"bleu": 100.0, "loops": 0, "invented_digits": 0, "lines": 30, "copied": 30}
    # inside: the item taken out of what came back, the rest is the reference
    assert results["copy-through inside"] == results["copy-through"]
    paragraph = results["paragraphs of 3"]
    assert paragraph["lines"] == 10 and paragraph["bleu"] == paragraph["bleu_sentence_by_sentence"] == 100.0
    assert paragraph["length_ratio"] == 1.0
    assert results["single words"] == {"loops": 0, "over_4_words": 0, "lines": len(single_words(sources))}
    with_numbers = len(numbered(sources, sources, ("de", "de")))
    assert with_numbers > 0
    assert results["numbers"] == {
        "bleu": 100.0,
        "loops": 0,
        "invented_digits": 0,
        "lines": with_numbers,
        "copied": with_numbers,
        "alone_copied": with_numbers,
    }


def test_items_inside_go_between_words_and_come_out_of_the_translation_for_its_score():
    sources = ["Ein Hund rennt über die Wiese.", "Hund", "Zwei Katzen schlafen."] * 10
    inputs, items = with_copy_items_inside(sources)
    assert (inputs, items) == with_copy_items_inside(sources)  # seeded
    for source, line, item in zip(sources, inputs, items):
        words = line.split()
        assert words.count(item) == 1 and [w for w in words if w != item] == source.split()
        assert len(source.split()) == 1 or words[0] != item and words[-1] != item  # inside, where it can be
    assert len({line.split().index(item) for line, item in zip(inputs[::3], items[::3])}) > 2  # at several places
    assert without_item("x@y.de", "A dog x@y.de runs.") == "A dog runs."
    assert without_item("x@y.de", "A dog runs x@y.de.") == "A dog runs."
    assert without_item("x@y.de", "A dog x@y.de! Runs.") == "A dog! Runs."
    assert without_item("x@y.de", "x@y.de, a dog runs.") == "a dog runs."
    assert without_item("x@y.de", "A dog runs xx@y.de .") == "A dog runs xx@y.de ."  # not copied: as it came


def test_a_translator_that_makes_up_digits_is_counted():
    results = robustness(
        lambda lines: [line + " 1" for line in lines], ["Ein Hund.", "2 Hunde."], ["x", "y"], ("de", "en")
    )
    assert results["as is"]["invented_digits"] == 2  # each output makes up a 1 its source lacks
    results = robustness(lambda lines: [line + " 2" for line in lines], ["2 Hunde."], ["y"], ("de", "en"))
    assert results["as is"]["invented_digits"] == 0


def test_numbers_stand_for_the_same_number_word_on_both_sides():
    """A pair holding one number word of the same value on each side gets one random number in
    place of both; a pair whose sides do not agree, or hold a value twice, is left out; the pairs
    and numbers are the same every time; a language without number words gives none."""
    sources = ["Zwei Männer und drei Hunde.", "Zwei Hunde.", "Ein Hund.", "Zwei oder zwei Katzen."]
    references = ["Two men and three dogs.", "A pair of dogs.", "A dog.", "Two or two cats."]
    found = numbered(sources, references, ("de", "en"))
    assert found == numbered(sources, references, ("de", "en"))
    [(source, reference, number)] = found
    assert re.search(r"\d", number) and source == f"{number} Männer und drei Hunde."
    assert reference == f"{number} men and three dogs."
    cs = numbered(["Dvě ženy běží."], ["Zwei Frauen laufen."], ("cs", "de"))
    assert [(s.split()[1:], r.split()[1:]) for s, r, _ in cs] == [(["ženy", "běží."], ["Frauen", "laufen."])]
    assert numbered(sources, references, ("de", "xx")) == []


def test_a_number_is_copied_only_when_it_stands_whole():
    assert copied("41", "41 men.") and copied("41", "men (41)") and copied("2.", "the 2. floor")
    assert not copied("41", "413 men.") and not copied("41", "141 men") and not copied("41", "4 1 men")
    assert copied("3,50", "3,50 euros.") and not copied("3,50", "3.50 euros") and not copied("3,50", "13,50")
    assert copied("10:30", "at 10:30.") and not copied("10:30", "10:305") and not copied("1.000", "1.000.5")


def test_a_thing_to_copy_is_copied_only_as_a_word_of_its_own():
    assert (
        copied_through("@abc", "A dog @abc.") and copied_through("😀", "😀 A dog.") and copied_through("x.pdf", "x.pdf")
    )
    assert not copied_through("@abc", "A dog @abcd.") and not copied_through("😀", "A dog😀.")
    assert not copied_through("https://a.de", "https://a.de/b") and not copied_through("@abc", "x@abc")
    assert not copied_through("x.pdf", "x.pdf.bak") and not copied_through("https://a.de", "https://a.de.com")


def test_a_translator_that_garbles_numbers_copies_none():
    sources = [s for s in toy_sentences("val") if "ß" not in s][:30]
    results = robustness(
        lambda lines: [re.sub(r"\d", lambda m: str((int(m.group()) + 1) % 10), line) for line in lines],
        sources,
        sources,
        ("de", "de"),
    )
    assert results["numbers"]["copied"] == results["numbers"]["alone_copied"] == 0


def test_a_missing_stop_is_measured_against_the_same_translations_without_it():
    """A translator that stops a sentence early when its full stop is missing loses BLEU on that
    variant only; the translations as they are, their stop removed afterwards, score as if it did
    not, and so stay level with the references (both without their final punctuation)."""
    sources = [s for s in toy_sentences("val") if s.endswith(".")][:30]

    def early_stop(lines: list[str]) -> list[str]:
        return [line if line.endswith(".") else " ".join(line.split()[:3]) for line in lines]

    results = robustness(early_stop, sources, sources, ("de", "de"))["no final punctuation"]
    assert results["bleu"] < 50.0 and results["bleu_as_is_punctuation_removed"] == 100.0


def test_the_benchmark_runs_on_a_trained_model(ci_run, tmp_path):
    done = run_script(
        "bench/robustness.py",
        *("-c", ci_run, "--sentences", "30", "--out", tmp_path / "r.json"),
        env={**os.environ, "MULTI30K_DIR": str(TOY_CORPUS)},
    )
    assert "single words" in done.stdout and "paragraphs of 3" in done.stdout and "numbers" in done.stdout
    result = json.loads((tmp_path / "r.json").read_text())
    assert result["split"] == "val" and result["engine"] == "Translator"
    assert result["variants"]["as is"]["lines"] == 30 and result["variants"]["as is"]["bleu"] > 50
