"""A translation that loops where its source does not, searched again without the loop.

A loop: a word three or more times in a row, or a character five or more times ("Hund" -> "dog
dog dog ..."), the failure of small models on inputs unlike their training data. Training on
such inputs removes most of them (docs/recipe_search.md, "What people type") but not all: where
a sentence's best translation still loops and the sentence does not, the sentence is searched
again with the repetition suppressed (the unit of pieces written twice and begun a third time
may not be completed: CTranslate2's suppress_sequences, and the same in our search), up to
`ROUNDS` times, each round adding what the last translation repeated. The other sentences'
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
    time, as the sequence to suppress: the unit twice and its first piece ("▁dog ▁dog ▁dog",
    "▁dog , ▁dog , ▁dog"). Shortest unit first, each once."""
    found: dict[tuple[str, ...], None] = {}
    for size in range(1, LONGEST_UNIT + 1):
        for start in range(len(pieces) - 2 * size):
            unit = tuple(pieces[start : start + size])
            if tuple(pieces[start + size : start + 2 * size]) == unit and pieces[start + 2 * size] == unit[0]:
                found.setdefault(unit + unit + unit[:1])
    return list(found)


def without_loops(
    sentences: Sequence[str],
    found: list[Hypotheses],
    text: Callable[[list[str]], str],
    search_again: Callable[[str, list[tuple[str, ...]]], Hypotheses],
) -> list[Hypotheses]:
    """`found` (each sentence's hypotheses, best first), with each sentence whose best
    translation (`text` of its pieces) loops where the sentence does not searched again by
    `search_again(sentence, suppress)`, suppressing what its translations repeated, until one
    does not loop or ROUNDS searches are done (the last is kept)."""
    found = list(found)
    for i, sentence in enumerate(sentences):
        suppress: list[tuple[str, ...]] = []
        for _ in range(ROUNDS):
            if not found[i] or not has_loop(text(found[i][0][0])) or has_loop(sentence):
                break
            new = [unit for unit in repetitions(found[i][0][0]) if unit not in suppress]
            if not new:  # the loop is no repetition of pieces that suppressing could stop
                break
            suppress += new
            found[i] = search_again(sentence, suppress)
    return found
