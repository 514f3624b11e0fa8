"""data/augment.py: training pairs varied as people type, both sides alike, anew each epoch.
A resumed run with augmentation trains as an uninterrupted one: test_resume.py."""

import hashlib
import json
import re
from dataclasses import replace

import numpy as np
import pytest
from datasets import Dataset

import data.augment
from data.augment import ROOM, AugmentedPairs, title_case, varied, without_final_punctuation
from data.config import SHARES, AugmentConfig
from data.fragments import split_points
from helpers import toy_sentences

PAIRS = list(zip(toy_sentences("train"), toy_sentences("train", "en")))


def only(**shares: float) -> AugmentConfig:
    """These shares, every other modifier off (the recipe's defaults turn some on)."""
    return AugmentConfig(**{**dict.fromkeys(SHARES, 0.0), **shares})


def test_each_case_change_changes_both_sides_and_nothing_else():
    rng = np.random.default_rng(0)
    for name, change in (("upper", str.upper), ("title", title_case), ("lower", str.lower)):
        assert varied(PAIRS, only(**{name: 1.0}), rng) == [(change(s), change(t)) for s, t in PAIRS]
    assert varied(PAIRS, only(upper_source=1.0), rng) == [(s.upper(), t) for s, t in PAIRS]  # the source alone
    assert varied(PAIRS, only(lower_source=1.0), rng) == [(s.lower(), t) for s, t in PAIRS]
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


def test_a_source_alone_share_leaves_the_other_case_changes_where_they_were():
    """lower_source, drawn after the other case changes, takes pairs only from those left as
    they were: a pair the others change is changed alike with it on."""
    without = varied(PAIRS, only(upper=0.2, title=0.2), np.random.default_rng(4))
    with_it = varied(PAIRS, only(upper=0.2, title=0.2, lower_source=0.3), np.random.default_rng(4))
    changed = [a != p for a, p in zip(without, PAIRS)]
    assert all(b == a for a, b, c in zip(without, with_it, changed) if c)
    assert all(b in (a, (a[0].lower(), a[1])) for a, b, c in zip(without, with_it, changed) if not c)
    assert sum(b != a for a, b in zip(without, with_it)) > 0.2 * len(PAIRS)


@pytest.mark.parametrize("name", ["upper", "title", "lower", "upper_source", "lower_source", "no_final_punct"])
def test_a_modifier_takes_its_share_of_the_pairs(name):
    pairs = PAIRS * 12  # 8,400
    out = varied(pairs, only(**{name: 0.3}), np.random.default_rng(1))
    share = sum(a != b for a, b in zip(out, pairs)) / len(pairs)
    assert abs(share - 0.3) < 0.03  # ~0.005 standard error; a few pairs are unchanged by it anyway


def test_the_case_changes_exclude_each_other():
    shares = {"upper": 0.2, "title": 0.2, "lower": 0.2, "upper_source": 0.2, "lower_source": 0.2}
    out = varied(PAIRS * 4, only(**shares), np.random.default_rng(2))

    def kind(src: str, tgt: str) -> str:
        if src == src.upper():
            return "upper" if tgt == tgt.upper() else "upper_source"
        if src == src.lower():
            return "lower" if tgt == tgt.lower() else "lower_source"
        return "title" if src == title_case(src) else "?"

    # what makes the kinds tell apart: no target is all lower case, no source already title case
    assert not any(t == t.lower() or s == title_case(s) for s, t in PAIRS)
    kinds = [kind(s, t) for s, t in out]
    assert "?" not in kinds
    assert all(abs(kinds.count(k) / len(kinds) - p) < 0.05 for k, p in shares.items())


def test_each_epoch_is_drawn_from_the_seed_and_epoch_alone(toy, tmp_path):
    """The same (seed, epoch): the same pairs, also from another AugmentedPairs (a resumed run,
    another rank); another epoch or seed: others. The ids are the tokenizer's of the varied text."""
    modifiers = only(upper=0.2, title=0.1, lower=0.2, no_final_punct=0.3, merge=0.1)
    pairs = AugmentedPairs(toy.tokenizer, toy.text["train"], modifiers, tmp_path, ("de", "en"))
    again = AugmentedPairs(toy.tokenizer, toy.text["train"], modifiers, tmp_path, ("de", "en"))
    first = pairs.epoch(3, 1234)
    assert isinstance(first, Dataset) and first.column_names == ["src_ids", "tgt_ids"]
    assert first["src_ids"] == again.epoch(3, 1234)["src_ids"] and first["tgt_ids"] == again.epoch(3, 1234)["tgt_ids"]
    assert first["src_ids"] != pairs.epoch(4, 1234)["src_ids"] and first["src_ids"] != pairs.epoch(3, 1)["src_ids"]
    text = varied(pairs.pairs, modifiers, np.random.default_rng([1234, 3, 1]))
    assert first["tgt_ids"] == toy.tokenizer.encode_tgt([t for _, t in text])
    assert len(first) < len(toy.text["train"])  # merges: fewer, longer lines


def test_a_run_places_its_items_inside_by_its_own_alignments(toy, tmp_path):
    """AugmentedPairs aligns the training pairs (eflomal, cached) and offers each pair's split
    points to every epoch, which is the same for the same (seed, epoch)."""
    pytest.importorskip("eflomal", reason="eflomal (requirements.txt) is not installed")
    modifiers = only(copy_inside=0.5)
    pairs = AugmentedPairs(toy.tokenizer, toy.text["train"], modifiers, tmp_path, ("de", "en"))
    assert pairs.inside is not None and len(pairs.inside) == len(pairs.pairs)
    assert sum(map(bool, pairs.inside)) > 0.5 * len(pairs.pairs)  # most captions have room inside
    text = varied(pairs.pairs, modifiers, np.random.default_rng([1234, 3, 1]), inside=pairs.inside)
    assert pairs.epoch(3, 1234)["src_ids"] == toy.tokenizer.encode_src([s for s, _ in text])
    changed = [(s, before) for (s, _), (before, _) in zip(text, pairs.pairs) if s != before]
    assert 0.3 < len(changed) / len(text) < 0.6
    # inside: the first and the last word are those of the caption
    assert all(s.split()[0] == before.split()[0] and s.split()[-1] == before.split()[-1] for s, before in changed)


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


def test_typos_and_folding_change_the_source_alone():
    """The target stays the reference translation; the source gets typing errors (some words, one
    letter each) or its accented letters folded, in the share asked."""
    pairs = [(s, t) for s, t in PAIRS * 6]
    typed = varied(pairs, only(typos=0.5), np.random.default_rng(6))
    assert [t for _, t in typed] == [t for _, t in pairs]
    changed = [(a, b) for (a, _), (b, _) in zip(pairs, typed) if a != b]
    assert abs(len(changed) / len(pairs) - 0.5) < 0.05
    assert all(len(a.split()) == len(b.split()) for a, b in changed)
    with_letters = [(s, t) for s, t in pairs if re.search("[äöüßÄÖÜ]", s)]
    assert with_letters
    folded_pairs = varied(with_letters, only(fold=1.0), np.random.default_rng(6))
    assert all(not re.search("[äöüßÄÖÜ]", s) for s, _ in folded_pairs)
    assert [t for _, t in folded_pairs] == [t for _, t in with_letters]
    styles = {
        "ae" in s or "oe" in s or "ue" in s for (s, _), (orig, _) in zip(folded_pairs, with_letters) if "ä" in orig
    }
    assert styles == {True, False}  # both ways of typing them


def test_numbers_and_copy_items_go_on_both_sides_alike():
    numbered = [("Zwei Hunde rennen.", "Two dogs run."), ("Ein Hund.", "A dog.")] * 200
    out = varied(numbered, only(numbers=0.5), np.random.default_rng(8), languages=("de", "en"))
    changed = [(s, t) for (s, t), before in zip(out, numbered) if (s, t) != before]
    assert abs(len(changed) / 200 - 0.5) < 0.1 and all(s.split()[0] == t.split()[0] for s, t in changed)
    assert all(pair == before for pair, before in zip(out[1::2], numbered[1::2]))  # no number word: as it is
    out = varied(PAIRS * 4, only(copy_through=0.3), np.random.default_rng(9))
    items = [added(after, before) for after, before in zip(out, PAIRS * 4) if after != before]
    assert abs(len(items) / len(out) - 0.3) < 0.05
    assert all(item and item[0] == item[1] for item in items)  # the same thing on both sides
    assert {"start", "end"} == {where for item in items for where in item[2:]}


def added(after: tuple[str, str], before: tuple[str, str]) -> tuple[str, str, str] | None:
    """(what the source gained, what the target gained, where), one word at the start or before
    the final punctuation of each side (the same place), or None."""
    found = []
    for a, b in zip(after, before):
        stop = (
            len(b) - len(b.lstrip()) + len(without_final_punctuation(b).strip())
        )  # where the final punctuation starts
        if a.endswith(" " + b):
            found.append((a[: -len(b) - 1], "start"))
        elif a.startswith(b[:stop] + " ") and a.endswith(b[stop:]):
            found.append((a[stop + 1 : len(a) - len(b[stop:])], "end"))
        else:
            return None
    (src_item, src_where), (tgt_item, tgt_where) = found
    return (src_item, tgt_item, src_where) if src_where == tgt_where else None


def test_the_new_modifiers_leave_the_earlier_draws_as_they_were():
    """The modifiers of data/noise.py draw after case and punctuation, and only when on: a run
    without them varies its pairs exactly as before them (the digest is of the output of commit
    57e547c's data/augment.py, before they existed), and with them the
    targets' case and punctuation are drawn the same."""
    fragments = [[(s.split()[0], t.split()[0])] for s, t in PAIRS]
    # the recipe's shares at 57e547c, and those before them
    shares = AugmentConfig(upper=0.05, title=0.05, lower=0.1, merge=0.1, numbers=0, typos=0, fold=0)
    before = varied(PAIRS, shares, np.random.default_rng([1234, 3, 1]), fragments)
    assert hashlib.sha256(json.dumps(before).encode()).hexdigest()[:16] == "0b0f42a9be6ea696"
    points = [[(len(s.split()[0]), len(t.split()[0]))] for s, t in PAIRS]  # room offered, share 0: the same
    assert varied(PAIRS, shares, np.random.default_rng([1234, 3, 1]), fragments, inside=points) == before
    typed = varied(PAIRS, replace(shares, typos=1.0, fold=0.5), np.random.default_rng([1234, 3, 1]), fragments)
    assert [t for _, t in typed] == [t for _, t in before] and typed != before  # the sources alone change


def test_numbers_are_refused_for_a_language_without_number_words():
    """A share of numbers for a pair whose number words are not known would do nothing: refused
    when the config is built, in one line; the languages that have them take it."""
    from data.config import DataConfig

    with pytest.raises(ValueError, match="known in cs, de, en, fr, not in both it and en"):
        DataConfig(src_lang="it", augment=AugmentConfig(numbers=0.5))
    assert DataConfig(src_lang="fr", tgt_lang="cs", augment=AugmentConfig(numbers=0.5)).augment.numbers == 0.5


def test_the_recipes_numbers_go_where_there_are_number_words_and_nowhere_else():
    """The recipe's share of numbers (left unset) is taken by a pair whose number words are known
    and left out of another, which trains the rest of the recipe instead of being refused."""
    from data.config import NUMBERS_SHARE, DataConfig

    assert DataConfig().augment.numbers == NUMBERS_SHARE == 0.5
    assert DataConfig(src_lang="cs", tgt_lang="fr").augment.numbers == NUMBERS_SHARE
    other = DataConfig(src_lang="es", tgt_lang="it")
    assert other.augment.numbers == 0.0 and other.augment.on  # the other shares still vary its pairs
    assert DataConfig(src_lang="de", tgt_lang="it", augment=AugmentConfig(numbers=0)).augment.numbers == 0


def test_the_case_shares_together_are_refused_above_one():
    """One case change a pair: shares of upper, title, lower, upper_source and lower_source adding
    up to more than the pairs are refused in one line when the config is built."""
    with pytest.raises(ValueError, match="upper_source and lower_source are shares of the pairs.*not 1.1$"):
        AugmentConfig(lower=0.5, upper_source=0.2, lower_source=0.4)
    assert AugmentConfig(lower=0.5, upper_source=0.2, lower_source=0.3).lower_source == 0.3
    # shares that add up to 1 but not in floats (1.0000000000000002) are taken
    assert AugmentConfig(title=0.2, lower=0.4, upper_source=0.3, lower_source=0.1).lower_source == 0.1


def test_items_inside_go_between_the_aligned_words_of_both_sides_untouched_by_the_other_modifiers(monkeypatch):
    pairs = [("Ein Hund rennt über die Wiese.", "A dog runs across the meadow."), ("Hallo.", "Hello.")] * 50
    links = [{(i, i) for i in range(7)}, {(0, 0), (1, 1)}] * 50
    points = [split_points(s, t, pair_links) for (s, t), pair_links in zip(pairs, links)]
    out = varied(pairs, only(copy_inside=1.0), np.random.default_rng(3), inside=points)
    for (src, tgt), (s, t), at in zip(out, pairs, points):
        if not at:  # no room between two words: as it was
            assert (src, tgt) == (s, t)
            continue
        width = len(src) - len(s) - 1  # the item and its one space
        placed = [(a, b) for a, b in at if src == s[:a] + " " + src[a + 1 : a + 1 + width] + s[a:]]
        assert placed, src
        a, b = placed[0]
        item = src[a + 1 : a + 1 + width]
        assert tgt == t[:b] + " " + item + t[b:] and item.strip() == item and item
    assert len({src for src, _ in out}) > 20  # items drawn anew, at every point
    # with typos, folding, capitals, numbers and merges on, every item comes out whole on both sides
    shares = only(copy_inside=0.5, typos=1.0, fold=1.0, upper=0.3, merge=0.3, numbers=0.5, no_final_punct=0.5)
    rich = varied(pairs, shares, np.random.default_rng(4), inside=points)
    assert rich == varied(pairs, shares, np.random.default_rng(4), inside=points)  # seeded
    assert not any(ROOM in s or ROOM in t for s, t in rich)
    drawn = iter(range(10_000))
    monkeypatch.setattr(data.augment, "copy_item", lambda rng: f"äqü-{next(drawn)}")  # a typo or fold would show
    rich = varied(pairs, shares, np.random.default_rng(4), inside=points)
    items = [re.findall(r"äqü-\d+", s) for s, _ in rich]
    assert [re.findall(r"äqü-\d+", t) for _, t in rich] == items and sum(map(len, items)) > 20
