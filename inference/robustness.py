"""How a translator fares on what people type rather than on benchmark captions: the same
sentences lower-cased, upper-cased, without their final punctuation, three to a line, each word
alone, and with a number in place of a number word. bench/robustness.py runs it on a split;
training logs it at the end of a run.

Each variant is scored with lowercased sacreBLEU (so that a change of case alone costs nothing)
and counted for loops: an output holding a word three or more times in a row, or a character
five or more times, where its input holds none (the failure of small models on inputs unlike
their training data: "Hund" -> "dog dog dog ...").
"""

import re
from collections.abc import Callable, Sequence

import numpy as np
from sacrebleu.metrics import BLEU

from data.augment import without_final_punctuation
from inference.loop_guard import has_loop
from inference.numbers import NUMBER

Translate = Callable[[list[str]], list[str]]

_EDGES = re.compile(r"^\W+|\W+$")
PARAGRAPH = 3  # lines joined into one paragraph
MIN_LETTERS = 4  # words tried alone: the distinct source words of at least this many letters
MOST_WORDS = 4  # a word alone should come out as a word or a short phrase: at most this many
NUMBER_DIGITS = 6  # the numbers variant's numbers: 1 to this many digits
# The number words two to ten of each language, a word's forms joined by "/": the numbers variant
# puts the same number in place of the one in a sentence and the one in its reference
NUMBER_WORDS = {
    "en": "two three four five six seven eight nine ten",
    "de": "zwei drei vier fünf sechs sieben acht neun zehn",
    "fr": "deux trois quatre cinq six sept huit neuf dix",
    "cs": "dva/dvě/dvou/dvěma/dvěmi tři/tří/třemi čtyři/čtyř/čtyřmi pět šest sedm osm devět deset",
}


def loops(sources: Sequence[str], outputs: Sequence[str]) -> int:
    """Outputs with a loop whose source has none."""
    return sum(has_loop(out) and not has_loop(src) for src, out in zip(sources, outputs))


def bleu(outputs: Sequence[str], references: Sequence[str]) -> float:
    return BLEU(lowercase=True).corpus_score(list(outputs), [list(references)]).score


def paragraphs(lines: Sequence[str]) -> list[str]:
    """Consecutive lines joined `PARAGRAPH` at a time with a space (the last group may be shorter)."""
    return [" ".join(lines[i : i + PARAGRAPH]) for i in range(0, len(lines), PARAGRAPH)]


def single_words(sources: Sequence[str]) -> list[str]:
    """Every distinct word of `MIN_LETTERS`+ letters in the sources, punctuation stripped, in first-seen order."""
    words = (_EDGES.sub("", word) for source in sources for word in source.split())
    return list(dict.fromkeys(w for w in words if len(w) >= MIN_LETTERS and w.isalpha()))


def _number_word(language: str, value: int) -> re.Pattern:
    """Any form of the number word for `value` (2 to 10), as a whole word, in any case."""
    forms = NUMBER_WORDS[language].split()[value - 2].split("/")
    return re.compile(r"\b(?:" + "|".join(forms) + r")\b", re.IGNORECASE)


def random_number(rng: np.random.Generator) -> str:
    """A number of 1 to NUMBER_DIGITS digits, each length alike, no leading zero."""
    digits = int(rng.integers(1, NUMBER_DIGITS + 1))
    return str(int(rng.integers(10 ** (digits - 1) if digits > 1 else 0, 10**digits)))


def numbered(
    sources: Sequence[str], references: Sequence[str], languages: tuple[str, str]
) -> list[tuple[str, str, str]]:
    """(source, reference, number) for each pair that holds the same number word (two to ten) once
    on each side, both replaced by one random number (`random_number`; seeded: the same pairs and
    numbers every time): "Zwei Hunde" / "Two dogs" -> "4071 Hunde" / "4071 dogs". Nothing for a
    language without NUMBER_WORDS."""
    if not all(language in NUMBER_WORDS for language in languages):
        return []
    words = [tuple(_number_word(language, value) for language in languages) for value in range(2, 11)]
    rng, found = np.random.default_rng(0), []
    for source, reference in zip(sources, references):
        for src_word, ref_word in words:
            if len(src_word.findall(source)) == len(ref_word.findall(reference)) == 1:
                number = random_number(rng)
                found.append((src_word.sub(number, source), ref_word.sub(number, reference), number))
                break
    return found


def copied(number: str, output: str) -> bool:
    """Whether `output` holds `number` whole (not as a part of a longer one)."""
    return number in NUMBER.findall(output)


def robustness(
    translate: Translate, sources: list[str], references: list[str], languages: tuple[str, str]
) -> dict[str, dict[str, float]]:
    """Per variant: lowercased BLEU and loops (and without final punctuation the translations as
    they are with theirs removed; for paragraphs the sentence-by-sentence translation joined, with
    both length ratios; for single words the outputs over MOST_WORDS words; for numbers the
    outputs that hold theirs, in the sentence and alone). `translate` takes a list of lines and
    returns one translation per line; `languages` are (source, target)."""
    results: dict[str, dict[str, float]] = {}
    as_is = translate(sources)

    def scored(inputs: list[str], outputs: list[str], refs: Sequence[str]) -> dict[str, float]:
        return {"bleu": round(bleu(outputs, refs), 2), "loops": loops(inputs, outputs), "lines": len(inputs)}

    results["as is"] = scored(sources, as_is, references)
    for name, change in (("lower-cased", str.lower), ("upper-cased", str.upper)):
        inputs = [change(s) for s in sources]
        results[name] = scored(inputs, translate(inputs), references)
    inputs = [without_final_punctuation(s) for s in sources]
    stripped_refs = [without_final_punctuation(r) for r in references]  # what was typed had none: nor has the reference
    results["no final punctuation"] = {
        **scored(inputs, translate(inputs), stripped_refs),
        # what a missing stop would score if it changed nothing: the translations of the sources as
        # they are, their final punctuation removed afterwards. The stop is a token nearly every
        # translation gets right: taking it away from both sides alone lowers BLEU.
        "bleu_as_is_punctuation_removed": round(bleu([without_final_punctuation(o) for o in as_is], stripped_refs), 2),
    }

    joined, joined_refs = paragraphs(sources), paragraphs(references)
    outputs = translate(joined)
    by_sentence = paragraphs(as_is)  # the same lines translated one by one, joined
    results[f"paragraphs of {PARAGRAPH}"] = {
        **scored(joined, outputs, joined_refs),
        "length_ratio": round(_length_ratio(outputs, joined_refs), 3),
        "bleu_sentence_by_sentence": round(bleu(by_sentence, joined_refs), 2),
        "length_ratio_sentence_by_sentence": round(_length_ratio(by_sentence, joined_refs), 3),
    }

    words = single_words(sources)
    outputs = translate(words)
    results["single words"] = {
        "loops": loops(words, outputs),
        "over_4_words": sum(len(out.split()) > MOST_WORDS for out in outputs),
        "lines": len(words),
    }

    with_numbers = numbered(sources, references, languages)
    if with_numbers:
        inputs, refs, numbers = (list(column) for column in zip(*with_numbers))
        outputs, alone = translate(inputs), translate(numbers)
        results["numbers"] = {
            **scored(inputs, outputs, refs),
            "copied": sum(copied(n, out) for n, out in zip(numbers, outputs)),
            "alone_copied": sum(_EDGES.sub("", out) == n for n, out in zip(numbers, alone)),
        }
    return results


def _length_ratio(outputs: Sequence[str], references: Sequence[str]) -> float:
    score = BLEU(lowercase=True).corpus_score(list(outputs), [list(references)])
    return score.sys_len / max(score.ref_len, 1)
