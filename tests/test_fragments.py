"""data/fragments.py: word-aligned fragments of the training pairs (eflomal, grow-diag-final-and,
consistent phrase pairs), cut as written and aligned once per text."""

from collections import Counter

import pytest

import data.fragments
from data.fragments import aligned_links, fragments, pair_fragments, phrase_pairs, split_points, symmetrized
from helpers import toy_sentences

PAIRS = list(zip(toy_sentences("train"), toy_sentences("train", "en")))


def test_symmetrized_keeps_the_agreement_and_grows_only_into_unaligned_words():
    forward = {(0, 0), (1, 1), (2, 2), (3, 2)}
    reverse = {(0, 0), (1, 1), (2, 3), (3, 3)}
    # agreement (0,0) (1,1); grows diagonally to (2,2) (unaligned both), then (3,3) and (2,3)
    # next to it align a word not yet aligned; (3,2) too, as its source 3 ... is aligned by then:
    # only links of either direction are ever added
    links = symmetrized(forward, reverse)
    assert {(0, 0), (1, 1)} <= links <= forward | reverse
    assert {i for i, _ in links} == {0, 1, 2, 3} and {j for _, j in links} == {0, 1, 2, 3}
    assert symmetrized({(0, 1)}, {(1, 0)}) == {(0, 1), (1, 0)}  # final-and: both words unaligned


def test_phrase_pairs_are_consistent_with_the_links():
    # Zwei(0) Hunde(1) schlafen(2) am(3) Strand(4) -> Two(0) dogs(1) sleep(2) on(3) the(4) beach(5)
    links = {(0, 0), (1, 1), (2, 2), (3, 3), (3, 4), (4, 5)}
    spans = phrase_pairs(links, 5)
    assert (3, 4, 3, 5) in spans  # am -> on the
    assert (3, 5, 3, 6) in spans  # am Strand -> on the beach
    for i, j, a, b in spans:
        assert 1 <= j - i <= 3 and b - a <= 4
        assert all(i <= s < j for s, t in links if a <= t < b) and any(i <= s < j for s, _ in links)
    crossed = {(0, 1), (1, 0), (2, 2)}  # a swap: neither word alone may take the other's target
    assert (0, 1, 1, 2) in phrase_pairs(crossed, 3) and (0, 2, 0, 2) in phrase_pairs(crossed, 3)
    assert all(not (i == 0 and j == 1 and a == 0) for i, j, a, _ in phrase_pairs(crossed, 3))


def test_fragments_are_cut_as_written_without_edges_of_punctuation_or_the_whole_pair():
    source, target = "Zwei Hunde  schlafen am Strand.", "Two dogs sleep on the beach."
    links = {(0, 0), (1, 1), (2, 2), (3, 3), (3, 4), (4, 5), (5, 6)}
    found = fragments(source, target, links)
    assert ("Hunde  schlafen", "dogs sleep") in found  # the writer's spacing kept
    assert ("am Strand", "on the beach") in found
    assert all(src in source and tgt in target for src, tgt in found)
    assert all(src[-1].isalnum() and tgt[-1].isalnum() for src, tgt in found)  # no "Strand." -> "beach."
    whole = fragments("Hund", "dog", {(0, 0)})
    assert whole == []  # a pair of one word is no fragment of itself
    inside = fragments("Harrod's Kunden", "Harrod's shoppers", {(0, 0), (1, 1), (2, 2), (3, 3)})
    assert ("s", "s") not in inside and ("Kunden", "shoppers") in inside


def test_split_points_cut_both_sentences_only_where_no_link_crosses_the_cut():
    source, target = "Ein Mann hat einen Hund gesehen.", "A man has seen a dog."
    # "gesehen" (5) goes to "seen" (3): the verb moves, so no cut falls inside "einen Hund gesehen"
    links = {(0, 0), (1, 1), (2, 2), (3, 4), (4, 5), (5, 3), (6, 6)}
    cuts = [
        (source[:a] + " |" + source[a:], target[:b] + " |" + target[b:]) for a, b in split_points(source, target, links)
    ]
    assert cuts == [
        ("Ein | Mann hat einen Hund gesehen.", "A | man has seen a dog."),
        ("Ein Mann | hat einen Hund gesehen.", "A man | has seen a dog."),
        ("Ein Mann hat | einen Hund gesehen.", "A man has | seen a dog."),
    ]
    # no cut inside "T-Shirt", and "schlafen" (4) links to the first target word: nothing before
    # it can be cut off; links past the words (another tokenization's): no points
    shirt_links = {(0, 1), (1, 3), (2, 4), (3, 5), (4, 0), (5, 6)}
    assert split_points("Im T-Shirt schlafen.", "Sleeping in the T-shirt.", shirt_links) == []
    assert split_points("Ein Hund rennt", "A dog runs", {(0, 0), (1, 1), (2, 2), (3, 3)}) == []
    # an unlinked target word ("the") may fall on either side of the cut
    points = split_points("Hunde am Strand", "Dogs on the beach", {(0, 0), (1, 1), (2, 3)})
    assert [("Hunde am Strand"[:a], "Dogs on the beach"[:b]) for a, b in points] == [
        ("Hunde", "Dogs"),
        ("Hunde am", "Dogs on"),
        ("Hunde am", "Dogs on the"),
    ]
    # no cut at a sentence's ends, nor before its full stop; none without links
    assert split_points("Ein Hund.", "A dog.", {(0, 0), (1, 1), (2, 2)}) == [(3, 1)]
    assert split_points("Ein Hund.", "A dog.", set()) == []


def test_alignment_runs_once_per_text_and_every_later_call_reads_the_same_links(tmp_path, monkeypatch):
    pytest.importorskip("eflomal", reason="eflomal (requirements.txt) is not installed")
    calls = []
    align = data.fragments._align
    monkeypatch.setattr(data.fragments, "_align", lambda pairs, folder: calls.append(1) or align(pairs, folder))
    first = pair_fragments(PAIRS, aligned_links(PAIRS, tmp_path))
    again = pair_fragments(PAIRS, aligned_links(PAIRS, tmp_path))
    assert calls == [1] and first == again  # eflomal samples from /dev/urandom: the cache is what repeats
    assert len(first) == len(PAIRS)
    assert all(src in s and tgt in t for (s, t), found in zip(PAIRS, first) for src, tgt in found)
    # the aligner really aligns: the fragments that hold one of the toy corpus's frequent nouns
    # most often go to its translation (eflomal samples: a word alone, or with its article, as
    # "Strand" -> "the beach", comes and goes from one alignment to the next)
    for word, translation in (("Hunde", "dogs"), ("Schnee", "snow"), ("Frau", "woman"), ("Strand", "beach")):
        targets = Counter(tgt for found in first for src, tgt in found if word in src.split())
        assert targets, f"no fragment holds {word}"
        best = targets.most_common(1)[0][0]
        assert translation in best.split(), (word, targets.most_common(3))
