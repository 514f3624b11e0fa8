"""A split's columns read in batches: a million-pair corpus never becomes one Python list.

`datasets` keeps a split in Arrow (in memory, compact, or memory-mapped from the cache); reading
a column as `list(ds["src"])` would make a Python object of every sentence at once (about twice
the text's size again) and, row by row, take seconds per million. These read it a batch at a
time instead.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # only a type here: translate.py starts without loading datasets (pandas, Arrow)
    from datasets import Dataset

BATCH = 100_000  # rows per batch: a few megabytes of text


def column_lines(ds: Dataset, column: str) -> Iterator[str]:
    """The column's values in order, read `BATCH` rows at a time."""
    for batch in ds.select_columns([column]).iter(batch_size=BATCH):
        yield from batch[column]


def list_lengths(ds: Dataset, column: str) -> np.ndarray:
    """(N,) the length of every list in a list column (token ids), computed in Arrow."""
    import pyarrow.compute as pc  # here, not at the top: translate.py imports this module, never calls this

    return pc.list_value_length(ds.with_format("arrow")[column]).to_numpy().astype(np.int64)


def digest_lines(digest: hashlib._Hash, lines: Iterable[str]) -> None:
    """Feed `digest` with "\\n".join(lines) + "\\0", without making the joined string."""
    for number, line in enumerate(lines):
        digest.update((f"\n{line}" if number else line).encode())
    digest.update(b"\0")
