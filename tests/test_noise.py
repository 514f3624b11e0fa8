"""data/noise.py: typing errors, folded letters, things to copy through and numbers as typed,
drawn from the generator given (the same draws, the same text)."""

import re

import numpy as np
import pytest

from data.noise import (
    COPY_KINDS,
    NEIGHBOURS,
    NUMBER_FORMS,
    copy_item,
    folded,
    inserted,
    number,
    typo,
    with_number,
    with_typos,
)


def one_edit(a: str, b: str) -> str | None:
    """The typing error that turns `a` into `b`, if one does: swap, drop, double or neighbour."""
    if len(b) == len(a) - 1 and any(a[:i] + a[i + 1 :] == b for i in range(len(a))):
        return "drop"
    if len(b) == len(a) + 1 and any(a[: i + 1] + a[i:] == b for i in range(len(a))):
        return "double"
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        if len(diff) == 2 and diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]] and a[diff[1]] == b[diff[0]]:
            return "swap"
        if len(diff) == 1 and b[diff[0]].lower() in NEIGHBOURS[a[diff[0]].lower()]:
            return "neighbour"
    return None


def test_a_typo_is_one_typing_error_of_each_kind():
    rng = np.random.default_rng(0)
    kinds = [one_edit("Fahrrad", out) for out in (typo("Fahrrad", rng) for _ in range(400))]
    assert None not in kinds and set(kinds) == {"swap", "drop", "double", "neighbour"}
    assert NEIGHBOURS["g"] == "fhtzvb" and "ä" in NEIGHBOURS["ö"]  # QWERTZ: beside, above, below
    assert typo("a", rng) == "a"
    upper = {typo("HUND", np.random.default_rng(seed)) for seed in range(50)}
    assert all(w == w.upper() for w in upper)  # a neighbouring key keeps the letter's case


def test_typos_hit_a_share_of_the_longer_words_and_keep_the_rest():
    sentence = "Ein kleiner Junge in einem roten Hemd spielt mit dem Ball am Strand."
    rng = np.random.default_rng(1)
    outs = [with_typos(sentence, 0.1, rng) for _ in range(500)]
    words = sentence.split()
    changed = []
    for out in outs:
        diff = [(a, b) for a, b in zip(words, out.split()) if a != b]
        assert len(out.split()) == len(words) and diff  # one word at least, spacing kept
        assert all(len(re.sub(r"\W", "", a)) >= 3 and one_edit(a, b) for a, b in diff)
        changed.append(len(diff))
    assert 1.5 < np.mean(changed) < 2.5  # one forced, and ~10% of the other 11 long words
    assert with_typos("in a", 0.5, rng) == "in a"  # no word of 3 letters: as it is
    assert with_typos(sentence, 0.1, np.random.default_rng(7)) == with_typos(sentence, 0.1, np.random.default_rng(7))


def test_letters_fold_as_typed_without_them():
    text = "Das Mädchen überquert die Straße, ÄRGERLICH für Öl-Händler."
    assert folded(text, "digraphs") == "Das Maedchen ueberquert die Strasse, AERGERLICH fuer Oel-Haendler."
    assert folded(text, "bare") == "Das Madchen uberquert die Strasse, ARGERLICH fur Ol-Handler."
    assert folded("Čeština, café", "bare") == "Cestina, cafe" and folded("Ü", "digraphs") == "Ue"
    with pytest.raises(ValueError):
        folded(text, "other")


@pytest.mark.parametrize(
    "kind, pattern",
    [
        ("url", r"https://(www\.)?[a-z]+\.[a-z]+(/[a-z]+)?"),
        ("email", r"[a-z]+@[a-z]+\.[a-z]+"),
        ("handle", r"@[a-z]+\d*"),
        ("emoji", r"[\U0001F300-\U0001F6FF\u2600-\u26FF]"),
        ("file", r"[a-z]+_\d+\.[a-z]+"),
        ("script", r"[^\x00-\u024F]{2,5}"),
    ],
)
def test_each_copy_item_is_of_its_kind(kind, pattern):
    rng = np.random.default_rng(2)
    items = [copy_item(rng, kind) for _ in range(100)]
    assert all(re.fullmatch(pattern, item) for item in items) and len(set(items)) > 50
    assert all(" " not in item and item == item.strip() for item in items)


@pytest.mark.parametrize(
    "form, pattern",
    [
        ("count", r"[1-9]\d{0,5}"),
        ("decimal", r"\d{1,2},\d\d"),
        ("time", r"\d{1,2}:\d\d"),
        ("thousands", r"[1-9]\d{0,2}\.\d{3}"),
        ("date", r"\d{1,2}\.\d{1,2}\.(19|20)\d\d"),
        ("year", r"(19|20)\d\d"),
        ("phone", r"0[1-9]\d{1,3} [1-9]\d{4,7}"),
    ],
)
def test_each_number_form_is_written_as_people_write_it(form, pattern):
    rng = np.random.default_rng(3)
    assert all(re.fullmatch(pattern, number(rng, form)) for _ in range(100))


def test_every_kind_and_form_is_drawn():
    rng = np.random.default_rng(4)
    assert {copy_item(rng).startswith("https://") for _ in range(200)} == {True, False}
    forms = [number(rng) for _ in range(400)]
    assert any(":" in f for f in forms) and any("," in f for f in forms) and any(" " in f for f in forms)
    assert len(COPY_KINDS) == 7 and len(NUMBER_FORMS) == 7


def test_an_item_goes_at_the_start_or_before_the_final_punctuation():
    assert inserted("Ein Hund rennt.", "😀", at_start=False) == "Ein Hund rennt 😀."
    assert inserted("Ein Hund rennt !?", "@hund", at_start=False) == "Ein Hund rennt @hund !?"
    assert inserted("Ein Hund rennt", "x.pdf", at_start=False) == "Ein Hund rennt x.pdf"
    assert inserted("Ein Hund rennt.", "x.pdf", at_start=True) == "x.pdf Ein Hund rennt."


def test_a_number_takes_the_place_of_the_same_number_word_on_both_sides():
    assert with_number(("Zwei Hunde und ein Mann.", "Two dogs and a man."), ("de", "en"), "3,50") == (
        "3,50 Hunde und ein Mann.",
        "3,50 dogs and a man.",
    )
    assert with_number(("DREI Hunde.", "THREE dogs."), ("de", "en"), "12") == ("12 Hunde.", "12 dogs.")
    assert with_number(("Zwei Hunde.", "A pair of dogs."), ("de", "en"), "2") is None  # not on both sides
    assert with_number(("Zwei oder zwei.", "Two or two."), ("de", "en"), "2") is None  # not once
    assert with_number(("Zwei Hunde.", "Two dogs."), ("de", "xx"), "2") is None  # no number words
