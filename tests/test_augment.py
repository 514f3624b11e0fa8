"""data/augment.py: training pairs varied as people type, both sides alike, anew each epoch.
A resumed run with augmentation trains as an uninterrupted one: test_resume.py."""

import numpy as np
import pytest
from datasets import Dataset

from data.augment import AugmentedPairs, title_case, varied, without_final_punctuation
from data.config import AugmentConfig
from helpers import toy_sentences

PAIRS = list(zip(toy_sentences("train"), toy_sentences("train", "en")))


def only(**shares: float) -> AugmentConfig:
    """These shares, every other modifier off (the recipe's defaults turn some on)."""
    return AugmentConfig(**{"lower": 0.0, "no_final_punct": 0.0, "fragment": 0.0, **shares})


def test_each_case_change_changes_both_sides_and_nothing_else():
    rng = np.random.default_rng(0)
    for name, change in (("upper", str.upper), ("title", title_case), ("lower", str.lower)):
        assert varied(PAIRS, only(**{name: 1.0}), rng) == [(change(s), change(t)) for s, t in PAIRS]
    assert title_case("ein  Hund, der läuft.") == "Ein  Hund, Der Läuft."  # spacing and the rest kept


def test_dropping_the_final_punctuation_drops_it_on_both_sides():
    out = varied(PAIRS, only(no_final_punct=1.0), np.random.default_rng(0))
    assert out == [(without_final_punctuation(s), without_final_punctuation(t)) for s, t in PAIRS]
    assert all(not s.endswith((".", "!", "?")) and not t.endswith((".", "!", "?")) for s, t in out)
    assert without_final_punctuation("Wo ist er?! ") == "Wo ist er" and without_final_punctuation("3.5 m") == "3.5 m"


def test_merges_join_consecutive_pairs_in_order_on_both_sides():
    """Every pair is in exactly one output pair, in order, its source beside its own target:
    each merged line is the same run of consecutive pairs on both sides."""
    out = varied(PAIRS, only(merge=0.5, merge_max=4), np.random.default_rng(3))
    sizes, i = [], 0
    for src, tgt in out:
        for n in range(1, 5):
            group = PAIRS[i : i + n]
            if (" ".join(s for s, _ in group), " ".join(t for _, t in group)) == (src, tgt):
                sizes.append(n)
                i += n
                break
        else:
            raise AssertionError(f"not a run of pairs from {i}: {src!r} / {tgt!r}")
    assert i == len(PAIRS) and set(sizes) == {1, 2, 3, 4}
    assert abs(sum(n > 1 for n in sizes) / len(sizes) - 0.5) < 0.1  # share of the pairs that start a merge


@pytest.mark.parametrize("name", ["upper", "title", "lower", "no_final_punct"])
def test_a_modifier_takes_its_share_of_the_pairs(name):
    pairs = PAIRS * 12  # 8,400
    out = varied(pairs, only(**{name: 0.3}), np.random.default_rng(1))
    share = sum(a != b for a, b in zip(out, pairs)) / len(pairs)
    assert abs(share - 0.3) < 0.03  # ~0.005 standard error; a few pairs are unchanged by it anyway


def test_the_case_changes_exclude_each_other():
    out = varied(PAIRS * 4, only(upper=0.3, title=0.3, lower=0.4), np.random.default_rng(2))
    kinds = [
        "upper" if s == s.upper() else "lower" if s == s.lower() else "title" if s == title_case(s) else "?"
        for s, _ in out
    ]
    assert "?" not in kinds
    assert all(abs(kinds.count(k) / len(kinds) - p) < 0.05 for k, p in (("upper", 0.3), ("title", 0.3), ("lower", 0.4)))


def test_each_epoch_is_drawn_from_the_seed_and_epoch_alone(toy, tmp_path):
    """The same (seed, epoch): the same pairs, also from another AugmentedPairs (a resumed run,
    another rank); another epoch or seed: others. The ids are the tokenizer's of the varied text."""
    modifiers = only(upper=0.2, title=0.1, lower=0.2, no_final_punct=0.3, merge=0.1)
    pairs = AugmentedPairs(toy.tokenizer, toy.text["train"], modifiers, tmp_path)
    again = AugmentedPairs(toy.tokenizer, toy.text["train"], modifiers, tmp_path)
    first = pairs.epoch(3, 1234)
    assert isinstance(first, Dataset) and first.column_names == ["src_ids", "tgt_ids"]
    assert first["src_ids"] == again.epoch(3, 1234)["src_ids"] and first["tgt_ids"] == again.epoch(3, 1234)["tgt_ids"]
    assert first["src_ids"] != pairs.epoch(4, 1234)["src_ids"] and first["src_ids"] != pairs.epoch(3, 1)["src_ids"]
    text = varied(pairs.pairs, modifiers, np.random.default_rng([1234, 3, 1]))
    assert first["tgt_ids"] == toy.tokenizer.encode_tgt([t for _, t in text])
    assert len(first) < len(toy.text["train"])  # merges: fewer, longer lines


def test_fragments_are_added_after_the_pairs_from_their_own_pairs():
    """Each pair gives at most one of its fragments, with the share asked; the pairs themselves
    stay, in order, and the case modifiers vary the fragments as the pairs."""
    fragments = [[(s.split()[1], t.split()[1]), (s.split()[0], t.split()[0])] for s, t in PAIRS]
    out = varied(PAIRS, only(fragment=0.4), np.random.default_rng(5), fragments)
    assert out[: len(PAIRS)] == PAIRS
    extra = out[len(PAIRS) :]
    assert abs(len(extra) / len(PAIRS) - 0.4) < 0.06
    owners, drawn = iter(range(len(PAIRS))), []
    for pair in extra:  # in the order of the pairs they come from, each from a pair of its own
        owner = next(i for i in owners if pair in fragments[i])
        drawn.append(fragments[owner].index(pair))
    assert abs(drawn.count(0) / len(drawn) - 0.5) < 0.1  # either fragment of a pair, alike
    lowered = varied(PAIRS, only(fragment=1.0, lower=1.0), np.random.default_rng(5), fragments)
    assert all(s == s.lower() and t == t.lower() for s, t in lowered) and len(lowered) == 2 * len(PAIRS)
    assert varied(PAIRS, only(fragment=1.0), np.random.default_rng(5), [[]] * len(PAIRS)) == PAIRS
