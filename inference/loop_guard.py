"""A translation that loops where its source does not, searched again without the loop.

A loop: a word three or more times in a row, or a character five or more times ("Hund" -> "dog
dog dog ..."), the failure of small models on inputs unlike their training data. Training on
such inputs removes most of them (docs/recipe_search.md, "What people type") but not all: the
sentences whose best translation still loops, where the sentence does not, are searched again,
together, with the repetitions suppressed (a unit of pieces written twice may not be begun a
third time: CTranslate2's suppress_sequences, and the same in our search), up to `ROUNDS`
times, each round adding what the last translations repeated. The other sentences'
translations are not touched, so this costs nothing where nothing loops (bench/robustness.py
measures the rest).
"""

import re
from collections.abc import Callable, Sequence

_REPEATED_CHARACTER = re.compile(r"(.)\1{4,}")
_EDGES = re.compile(r"^\W+|\W+$")
LONGEST_UNIT = 6  # pieces in the longest repeating unit looked for
ROUNDS = 3  # searches again at most, each without what the one before repeated

# (pieces, score) of the n best translations of one sentence
Hypotheses = list[tuple[list[str], float]]


def has_loop(text: str) -> bool:
    """Whether `text` holds a word three or more times in a row (case and the punctuation at
    its edges aside) or a character five or more times in a row."""
    if _REPEATED_CHARACTER.search(text):
        return True
    words = [_EDGES.sub("", word).lower() for word in text.split()]
    return any(a and a == b == c for a, b, c in zip(words, words[1:], words[2:]))


def repetitions(pieces: Sequence[str]) -> list[tuple[str, ...]]:
    """Each unit of 1 to LONGEST_UNIT pieces that `pieces` write twice in a row and begin a third
    time, case aside as `has_loop` reads words, as the sequence to suppress: the unit twice and
    its first piece, as written ("▁dog ▁dog ▁dog", "▁dog , ▁dog , ▁dog", "▁city ▁City ▁City").
    Shortest unit first, each once."""
    folded = [piece.lower() for piece in pieces]
    found: dict[tuple[str, ...], None] = {}
    for size in range(1, LONGEST_UNIT + 1):
        for start in range(len(pieces) - 2 * size):
            unit = folded[start : start + size]
            if folded[start + size : start + 2 * size] == unit and folded[start + 2 * size] == unit[0]:
                found.setdefault(tuple(pieces[start : start + 2 * size + 1]))
    return list(found)


def without_loops(
    sentences: Sequence[str],
    found: list[Hypotheses],
    text: Callable[[list[str]], str],
    search_again: Callable[[list[str], list[tuple[str, ...]]], list[Hypotheses]],
) -> list[Hypotheses]:
    """`found` (each sentence's hypotheses, best first), with the sentences whose best
    translation (`text` of its pieces) loops where the sentence does not searched again together
    by `search_again(sentences, suppress)`, suppressing what their translations repeated, until
    none loops, none repeats anything new, or ROUNDS searches are done (the last is kept). One
    suppression list serves them all: each entry is a repetition, which no sentence without a
    loop should hold, and one search of all of them costs far less than one a sentence (a model
    that loops on most inputs would otherwise be searched again input by input)."""
    found = list(found)
    suppress: dict[tuple[str, ...], None] = {}  # in the order found
    looping = [i for i, sentence in enumerate(sentences) if found[i] and not has_loop(sentence)]
    for _ in range(ROUNDS):
        looping = [i for i in looping if has_loop(text(found[i][0][0]))]
        new = {unit: None for i in looping for unit in repetitions(found[i][0][0]) if unit not in suppress}
        if not new:  # nothing more that suppressing could stop
            break
        suppress.update(new)
        for i, hyps in zip(looping, search_again([sentences[i] for i in looping], list(suppress))):
            found[i] = hyps
    return found
