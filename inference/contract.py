"""What every translator does alike, whichever engine searches: the `Translating` interface that
translate.py, the Python API and training use, and the behaviour both engines share, written
once here: blank in, empty out; sources cut to the model's positions and counted; length-sorted
batches; one line per translation; and where text comes as people type it, a line of several
sentences translated sentence by sentence, a sentence in one case alone recased (unless the source
model folds case itself), numbers copied
as written, a translation that loops searched again without its loop (`LineTranslator`)."""

import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Protocol, TypeVar, runtime_checkable

from data import Tokenizer
from inference.casing import COPY_THROUGH, in_capitals, recased, shouted, uncased
from inference.loop_guard import Hypotheses, without_loops
from inference.numbers import restored, with_stand_ins
from inference.search_config import SearchConfig
from inference.splitting import sentence_parts

_T = TypeVar("_T", bound="Translating")
_L = TypeVar("_L", bound="LineTranslator")

# Called as each batch is translated, with its share of the lines (a progress bar's update)
Progress = Callable[[int], object] | None


@runtime_checkable
class Translating(Protocol):
    """A translator: inference/translator.py (ours) and inference/ct2_translator.py (CTranslate2)."""

    search: SearchConfig
    tokenizer: Tokenizer
    truncated: int  # sources cut to max_len by this thread's last call

    @property
    def max_len(self) -> int:
        """Longest source (in pieces) the model reads; longer ones are truncated."""

    def translate(self, sentences: Sequence[str], progress: Progress = None) -> list[str]:
        """One translation per sentence, in input order; blank input gives an empty string.
        `progress(n)` is called as each batch is done, with its share n of the lines (never
        more than the lines given in all)."""

    def translate_nbest(
        self, sentences: Sequence[str], n_best: int, progress: Progress = None
    ) -> list[list[tuple[str, float]]]:
        """(translation, score) pairs, best first, for each sentence; [] for a blank one."""

    def close(self) -> None:
        """Let go of what the translator holds beyond memory (worker processes, a loaded engine);
        also at the end of a `with` block."""

    def __enter__(self: "_T") -> "_T": ...

    def __exit__(self, *exc: object) -> None: ...


def one_line(text: str) -> str:
    """A decoded translation as one line: a line break it decodes to (a byte-fallback <0x0A>,
    U+2028, ...) becomes a space, so that a translation never spans lines."""
    return " ".join(text.splitlines())


def source_ids(tokenizer: Tokenizer, sentences: Sequence[str], max_len: int) -> tuple[list[list[int]], int]:
    """Each sentence's source piece ids, surrounding blanks stripped and cut to `max_len`; and
    how many were cut."""
    ids = tokenizer.encode_src([s.strip() for s in sentences])
    return [x[:max_len] for x in ids], sum(len(x) > max_len for x in ids)


def length_sorted_batches(sources: Sequence[Sequence], batch_size: int) -> Iterator[list[int]]:
    """Indices of the non-empty sources, shortest first, `batch_size` at a time: batches of
    similar lengths pad little. An empty source is in none (its translation is empty)."""
    order = sorted((i for i, source in enumerate(sources) if source), key=lambda i: len(sources[i]))
    for start in range(0, len(order), batch_size):
        yield order[start : start + batch_size]


class InLines:
    """`progress` told in lines while batches count `sentences` sentences of `lines` lines (a
    share: batches hold sentences of like length, not whole lines): after s sentences,
    s * lines // sentences lines in all, so that the count never passes `lines`; `finish()`
    tells the rest (sentences without a piece are in no batch)."""

    def __init__(self, progress: Progress, sentences: int, lines: int) -> None:
        self.progress, self.sentences, self.lines = progress, max(sentences, 1), lines
        self.done = self.told = 0

    def __call__(self, n: int) -> None:
        self.done += n
        self._tell(min(self.done * self.lines // self.sentences, self.lines))

    def finish(self) -> None:
        self._tell(self.lines)

    def _tell(self, now: int) -> None:
        if self.progress is not None and now > self.told:
            self.progress(now - self.told)
            self.told = now


def nothing_to_translate(sentence: str) -> bool:
    """Whether each word of `sentence` is without letters (an emoji, a number, punctuation) or
    written to be copied (`COPY_THROUGH`: a URL, an e-mail address, an @handle, a file name): it
    is its own translation, which a model trained on captions would not give back ("😀" ->
    "security guards", "https://example.com" -> a sentence)."""
    words = sentence.split()
    return bool(words) and all(COPY_THROUGH.search(w) or not any(c.isalpha() for c in w) for w in words)


def by_sentence(
    lines: Sequence[str],
    lang: str,
    nbest_of: Callable[[list[str], Progress], list[list[tuple[str, float]]]],
    recase: Callable[[str], str],
    progress: Progress = None,
    stand_ins: bool = True,
) -> list[list[tuple[str, float]]]:
    """Each line split into its sentences (inference/splitting.py), all the sentences searched
    together by `nbest_of`, and each line put back: its i-th best is its sentences' i-th best (a
    sentence's last where it has fewer) joined with the line's own spacing, scored by the sum of
    their scores. A line of one sentence is translated as it is. `progress` counts the lines that
    are not blank.

    A sentence written in one case alone goes to the model `recase`d (inference/casing.py), and
    the translations of one in capitals come back in capitals; with `stand_ins`, its longer
    numbers go as one-digit stand-ins and come back as written (inference/numbers.py: for a
    model whose vocabulary keeps digits together; one that writes a number digit by digit copies
    it itself, and better: docs/recipe_search.md, "In the model"); a sentence with nothing to
    translate (`nothing_to_translate`) is its own translation, scored 0, and no model reads it."""
    parts = [sentence_parts(line, lang) for line in lines]
    sentences = [part.strip() for line in parts for part in line]
    copied = [nothing_to_translate(sentence) for sentence in sentences]
    loud = [shouted(sentence) for sentence in sentences]
    standing = [with_stand_ins(s) if stand_ins else (s, {}) for s in sentences]  # (what the model reads, its numbers)
    read = [
        "" if copy else recase(s) if capitals or uncased(s) else s
        for (s, _), capitals, copy in zip(standing, loud, copied)
    ]
    lines_progress = InLines(progress, sum(map(bool, read)), sum(bool(line.strip()) for line in lines))
    found = nbest_of(read, lines_progress)
    lines_progress.finish()
    found = [
        [(sentence, 0.0)] if copy else [(restored(in_capitals(t) if capitals else t, numbers), score) for t, score in h]
        for h, capitals, (_, numbers), copy, sentence in zip(found, loud, standing, copied, sentences)
    ]
    results, start = [], 0
    for line in parts:
        hyps, start = found[start : start + len(line)], start + len(line)
        if len(line) == 1 or not any(hyps):
            results.append(hyps[0] if len(line) == 1 else [])
            continue
        after = [part[len(part.rstrip()) :] for part in line]  # the spacing after each sentence
        joined = []
        for rank in range(max(len(h) for h in hyps)):
            chosen = [h[min(rank, len(h) - 1)] if h else ("", 0.0) for h in hyps]
            text = "".join(t + (space if t else "") for (t, _), space in zip(chosen, after))
            joined.append((one_line(text.strip()), sum(score for _, score in chosen)))
        results.append(joined)
    return results


class _CallState(threading.local):
    """A translator's state of the last call, one for each thread (threading.local)."""

    def __init__(self) -> None:
        self.truncated = 0  # sources cut to the model's max_len
        self.last_hypotheses: list = []  # inference/translator.py's, in input order


class LineTranslator:
    """`translate` and `translate_nbest` of lines for an engine that searches sentences
    (`_translate`: best texts; `_search`: n-best pieces, suppressing what it is told): each line
    whole, as the model reads it, or, where `split_lang` names the source language (load_translator
    sets it; training's own translators leave it None), as people type: sentence by sentence
    (`by_sentence`), a sentence in one case alone recased (inference/casing.py; not where the
    source model folds case itself, and reads the typed sentence as the recased one), its longer
    numbers copied as written (inference/numbers.py; unless the vocabulary writes numbers digit
    by digit, and the model copies them itself), a sentence with nothing to translate given
    back as it is, a translation that loops searched again without its loop
    (inference/loop_guard.py); and the `with` block
    that ends in `close()`. Threads may share one: what a call leaves for its caller to read
    (`truncated`) is kept for each thread apart."""

    split_lang: str | None = None
    tokenizer: Tokenizer

    def _this_thread(self) -> "_CallState":
        """What this thread's last call left: a translator is shared between threads (a web
        server's), and each caller reads its own call's counts."""
        if (state := self.__dict__.get("_call_state")) is None:
            state = self.__dict__.setdefault("_call_state", _CallState())  # setdefault: one for all threads
        return state

    @property
    def truncated(self) -> int:
        """Sources cut to the model's max_len by this thread's last call."""
        return self._this_thread().truncated

    @truncated.setter
    def truncated(self, count: int) -> None:
        self._this_thread().truncated = count

    def _translate(self, sentences: Sequence[str], progress: Progress) -> list[str]:
        raise NotImplementedError

    def _search(
        self, sentences: Sequence[str], n_best: int, progress: Progress, suppress: Sequence[Sequence[str]] = ()
    ) -> list[Hypotheses]:
        """(target pieces, score) of each sentence's n best translations, none holding a piece
        sequence of `suppress`; [] for a blank sentence."""
        raise NotImplementedError

    def _text(self, pieces: list[str]) -> str:
        return one_line(self.tokenizer.tgt.decode_pieces(pieces))

    def _nbest(self, sentences: Sequence[str], n_best: int, progress: Progress) -> list[list[tuple[str, float]]]:
        """(text, score) of each sentence's n best translations; with `split_lang` set, those that
        loop where their sentence does not searched again without the loop."""
        found = self._search(sentences, n_best, progress)
        if self.split_lang is not None:
            truncated = self.truncated  # of these sentences, not of one searched again
            found = without_loops(
                sentences,
                found,
                self._text,
                lambda again, suppress: self._search(again, n_best, None, suppress),
            )
            self.truncated = truncated
        return [[(self._text(pieces), score) for pieces, score in hyps] for hyps in found]

    def translate(self, lines: Sequence[str], progress: Progress = None) -> list[str]:
        """One translation per line, in input order; blank input gives an empty string.
        `progress(n)` is called as each batch is done, with its share n of the lines (at the
        end, the lines given, blank ones aside)."""
        if self.split_lang is None:
            return self._translate(lines, progress)
        return [hyps[0][0] if hyps else "" for hyps in self.translate_nbest(lines, 1, progress)]

    def translate_nbest(
        self, lines: Sequence[str], n_best: int, progress: Progress = None
    ) -> list[list[tuple[str, float]]]:
        """(translation, score) pairs, best first, for each line; [] for a blank one."""
        if self.split_lang is None:
            return self._nbest(lines, n_best, progress)
        return by_sentence(
            lines,
            self.split_lang,
            lambda sentences, lines_progress: self._nbest(sentences, n_best, lines_progress),
            # a source model that folds case reads a recased sentence as it reads the typed one
            (lambda sentence: sentence)
            if self.tokenizer.folds_case
            else lambda sentence: recased(sentence, self.tokenizer.src, self.tokenizer.src_form_of),
            progress,
            stand_ins=not self.tokenizer.splits_digits,
        )

    def close(self) -> None:
        """Let go of what the translator holds beyond memory (worker processes, a loaded engine)."""

    def __enter__(self: "_L") -> "_L":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
