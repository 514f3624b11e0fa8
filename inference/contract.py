"""What every translator does alike, whichever engine searches: the `Translating` interface that
translate.py, the Python API and training use, and the behaviour both engines share, written
once here: blank in, empty out; sources cut to the model's positions and counted; length-sorted
batches; one line per translation."""

from collections.abc import Callable, Iterator, Sequence
from typing import Protocol, runtime_checkable

from data import Tokenizer
from inference.search_config import SearchConfig

# Called as each batch is translated, with the number of its sentences (a progress bar's update)
Progress = Callable[[int], object] | None


@runtime_checkable
class Translating(Protocol):
    """A translator: inference/translator.py (ours) and inference/ct2_translator.py (CTranslate2)."""

    search: SearchConfig
    tokenizer: Tokenizer
    truncated: int  # sources cut to max_len by the last call

    @property
    def max_len(self) -> int:
        """Longest source (in pieces) the model reads; longer ones are truncated."""

    def translate(self, sentences: Sequence[str], progress: Progress = None) -> list[str]:
        """One translation per sentence, in input order; blank input gives an empty string.
        `progress(n)` is called as each batch of n sentences is done."""

    def translate_nbest(
        self, sentences: Sequence[str], n_best: int, progress: Progress = None
    ) -> list[list[tuple[str, float]]]:
        """(translation, score) pairs, best first, for each sentence; [] for a blank one."""

    def close(self) -> None:
        """Let go of what the translator holds beyond memory (worker processes, a loaded engine);
        also at the end of a `with` block."""

    def __enter__(self) -> "Translating": ...

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
