"""How a translator fares on what people type rather than on benchmark captions: the same
sentences lower-cased, upper-cased, with typing errors, typed without accented letters (ä as ae,
or as a), with something to copy through (a URL, an address, an emoji, a word in another script)
at an end or inside, without their final punctuation, three to a line, each word alone, and with
a number as people write it in place of a number word (data/noise.py draws the changes, seeded).
bench/robustness.py runs it on a split; training logs it at the end of a run.

Each variant is scored with lowercased sacreBLEU (so that a change of case alone costs nothing)
and counted for loops: an output holding a word three or more times in a row, or a character
five or more times, where its input holds none (the failure of small models on inputs unlike
their training data: "Hund" -> "dog dog dog ..."); and for invented digits: an output holding a
number (digits with their separators) that its input lacks.
"""

import re
from collections.abc import Callable, Sequence

import numpy as np
from sacrebleu.metrics import BLEU

from data.augment import without_final_punctuation
from data.noise import COPY_KINDS, TYPO_WORDS, copy_item, folded, inserted, number, with_number, with_typos
from inference.loop_guard import has_loop
from inference.numbers import NUMBER

Translate = Callable[[list[str]], list[str]]

_EDGES = re.compile(r"^\W+|\W+$")
PARAGRAPH = 3  # lines joined into one paragraph
MIN_LETTERS = 4  # words tried alone: the distinct source words of at least this many letters
MOST_WORDS = 4  # a word alone should come out as a word or a short phrase: at most this many


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


def numbered(
    sources: Sequence[str], references: Sequence[str], languages: tuple[str, str]
) -> list[tuple[str, str, str]]:
    """(source, reference, number) for each pair that holds the same number word (two to ten) once
    on each side, both replaced by one number as people write it (data/noise.py's `number`: 4071,
    3,50, 10:30, 1.000, 28.11.2026, 1999, 030 1234567; seeded: the same pairs and numbers
    every time): "Zwei Hunde" / "Two dogs" -> "3,50 Hunde" / "3,50 dogs". Nothing for a language
    without number words."""
    rng, found = np.random.default_rng(0), []
    for pair in zip(sources, references):
        written = number(rng)
        replaced = with_number(pair, languages, written)
        if replaced:
            found.append((*replaced, written))
    return found


def copied(written: str, output: str) -> bool:
    """Whether `output` holds `written` exactly, not as a part of a longer number."""
    return re.search(rf"(?<![\d.,:]){re.escape(written)}(?![\d,:]|\.\d)", output) is not None


def _as_a_word(item: str) -> re.Pattern:
    """`item` exactly, as a word of its own: not inside a longer one ("@abc" in "@abcd");
    punctuation may follow it."""
    return re.compile(rf"(?<!\S){re.escape(item)}(?=[.,;:!?)]*(?:\s|$))")


def copied_through(item: str, output: str) -> bool:
    """Whether `output` holds `item` exactly, as a word of its own (`_as_a_word`)."""
    return _as_a_word(item).search(output) is not None


def invented_digits(inputs: Sequence[str], outputs: Sequence[str]) -> int:
    """Outputs holding a number that their input does not hold (a number with its separators, as
    inference/numbers.py reads one: "3.50" for "3,50" counts, as a number not kept exactly)."""
    return sum(bool(set(NUMBER.findall(out)) - set(NUMBER.findall(src))) for src, out in zip(inputs, outputs))


def with_copy_items(sources: Sequence[str], references: Sequence[str]) -> tuple[list[str], list[str], list[str]]:
    """Each pair with one thing to copy through (data/noise.py: a URL, an e-mail address, an
    @handle, an emoji, a file name or a word in another script, each alike) put at the start or
    the end of both sides, seeded: (sources, references, items)."""
    rng = np.random.default_rng(1)
    kinds = [kind for kind in COPY_KINDS if kind != "number"]  # numbers: their own variant
    items = [copy_item(rng, kinds[int(rng.integers(len(kinds)))]) for _ in sources]
    starts = rng.random(len(sources)) < 0.5
    return (
        [inserted(s, item, bool(at)) for s, item, at in zip(sources, items, starts)],
        [inserted(r, item, bool(at)) for r, item, at in zip(references, items, starts)],
        items,
    )


def with_copy_items_inside(sources: Sequence[str]) -> tuple[list[str], list[str]]:
    """Each source with one thing to copy through (the kinds of `with_copy_items`) between two of
    its words, at a place drawn at random (a line of one word: after it), its words joined by
    single spaces, seeded: (sources, items). The reference is not changed: where the item would go
    in it is the translation's business (`without_item`)."""
    rng = np.random.default_rng(3)
    kinds = [kind for kind in COPY_KINDS if kind != "number"]
    inputs, items = [], []
    for source in sources:
        item, words = copy_item(rng, kinds[int(rng.integers(len(kinds)))]), source.split()
        at = int(rng.integers(1, len(words))) if len(words) > 1 else len(words)  # after word `at`
        inputs.append(" ".join(words[:at] + [item] + words[at:]))
        items.append(item)
    return inputs, items


def without_item(item: str, output: str) -> str:
    """`output` with `item` taken out where it holds it exactly (`copied_through`): what the rest
    of the translation says, to score against a reference without it. The words around it are
    joined by a space, or none before punctuation ("A dog x@y.de." -> "A dog."); an item that
    began the output takes its punctuation with it. An output without it comes back as it is."""
    found = _as_a_word(item).search(output)
    if found is None:
        return output
    before, after = output[: found.start()].rstrip(), output[found.end() :].lstrip()
    if not before:
        return after.lstrip(".,;:!?) ")
    return before + ("" if not after or after[0] in ".,;:!?)" else " ") + after


def robustness(
    translate: Translate, sources: list[str], references: list[str], languages: tuple[str, str]
) -> dict[str, dict[str, float]]:
    """Per variant: lowercased BLEU and loops (for an item to copy inside a sentence the BLEU of
    the translations with the item taken out where copied, and for both copy-through variants the
    items copied; without final punctuation also the translations as
    they are with theirs removed; for paragraphs the sentence-by-sentence translation joined, with
    both length ratios; for single words the outputs over MOST_WORDS words; for numbers the
    outputs that hold theirs, in the sentence and alone). `translate` takes a list of lines and
    returns one translation per line; `languages` are (source, target)."""
    results: dict[str, dict[str, float]] = {}
    as_is = translate(sources)

    def scored(inputs: list[str], outputs: list[str], refs: Sequence[str]) -> dict[str, float]:
        return {
            "bleu": round(bleu(outputs, refs), 2),
            "loops": loops(inputs, outputs),
            "invented_digits": invented_digits(inputs, outputs),
            "lines": len(inputs),
        }

    results["as is"] = scored(sources, as_is, references)
    for name, change in (("lower-cased", str.lower), ("upper-cased", str.upper)):
        inputs = [change(s) for s in sources]
        results[name] = scored(inputs, translate(inputs), references)
    rng = np.random.default_rng(2)
    inputs = [with_typos(s, TYPO_WORDS, rng) for s in sources]
    results["typing errors"] = scored(inputs, translate(inputs), references)
    for name, style in (("without its letters (ae)", "digraphs"), ("without its letters (a)", "bare")):
        inputs = [folded(s, style) for s in sources]
        results[name] = scored(inputs, translate(inputs), references)
    inputs, refs, items = with_copy_items(sources, references)
    outputs = translate(inputs)
    results["copy-through"] = {**scored(inputs, outputs, refs), "copied": sum(map(copied_through, items, outputs))}
    inputs, items = with_copy_items_inside(sources)
    outputs = translate(inputs)
    results["copy-through inside"] = {
        # BLEU of the translations with their item taken out where copied: what the rest kept
        **scored(inputs, list(map(without_item, items, outputs)), references),
        "loops": loops(inputs, outputs),
        "invented_digits": invented_digits(inputs, outputs),
        "copied": sum(map(copied_through, items, outputs)),
    }
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
            "alone_copied": sum(_EDGES.sub("", out) == _EDGES.sub("", n) for n, out in zip(numbers, alone)),
        }
    return results


def _length_ratio(outputs: Sequence[str], references: Sequence[str]) -> float:
    score = BLEU(lowercase=True).corpus_score(list(outputs), [list(references)])
    return score.sys_len / max(score.ref_len, 1)
