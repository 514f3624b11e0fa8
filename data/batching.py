"""Length-bucketed batches bounded by a token budget, padding them into tensors, and the
loader of a tokenized split that joins the two."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch
from torch import Tensor
from torch.utils.data import DataLoader, Sampler

from data.columns import list_lengths
from data.tokenizer import BOS_ID, EOS_ID, PAD_ID
from utils.errors import UserError

if TYPE_CHECKING:  # only a type here: translate.py starts without loading datasets (pandas, Arrow)
    from datasets import Dataset

log = logging.getLogger(__name__)


class TokenBucketSampler(Sampler[list[int]]):
    """Batches of sentences of similar length, each within a padded-token budget.

    A batch's size is counted as its padded tensors see it: n_sentences times the longest
    sentence, on whichever side (source, or target with bos/eos) is larger; no batch exceeds
    `max_tokens`. Sentences are sorted by length (random tie-breaks, drawn per epoch), packed
    greedily, and the batches shuffled per epoch from `seed`, so the same seed and epoch
    always give the same batches in the same order.

    Distributed: the batch list is made divisible by `world_size` (by halving the largest
    batches) and rank r takes every world_size-th batch from r, so ranks are disjoint, cover
    the data and run the same number of steps.

    Resuming: `set_epoch(epoch, start=k)` skips the first k batches of that epoch.
    """

    def __init__(
        self,
        src_lengths: Sequence[int] | np.ndarray,
        tgt_lengths: Sequence[int] | np.ndarray,
        max_tokens: int,
        shuffle: bool = True,
        seed: int = 0,
        rank: int = 0,
        world_size: int = 1,
    ) -> None:
        if len(src_lengths) != len(tgt_lengths):
            raise ValueError("src_lengths and tgt_lengths differ in length")
        if not 0 <= rank < world_size:
            raise ValueError(f"rank {rank} outside world size {world_size}")
        self.src_lengths = torch.as_tensor(src_lengths)
        self.tgt_lengths = torch.as_tensor(tgt_lengths) + 1  # decoder sees bos + y, predicts y + eos
        longest = int(torch.maximum(self.src_lengths, self.tgt_lengths).max()) if len(src_lengths) else 0
        if longest > max_tokens:
            raise UserError(f"max_tokens {max_tokens} is smaller than the longest sentence ({longest} tokens)")
        self.max_tokens = max_tokens
        self.shuffle, self.seed = shuffle, seed
        self.rank, self.world_size = rank, world_size
        self.epoch, self.start = 0, 0

    def set_epoch(self, epoch: int, start: int = 0) -> None:
        self.epoch, self.start = epoch, start

    def _all_batches(self) -> list[list[int]]:
        g = torch.Generator().manual_seed(self.seed * 100_003 + self.epoch)
        n = len(self.src_lengths)
        tie_break = torch.randperm(n, generator=g) if self.shuffle else torch.arange(n)
        # lexicographic sort by (src length, tgt length, random): stable sorts, last key first
        order = tie_break
        for key in (self.tgt_lengths, self.src_lengths):
            order = order[torch.sort(key[order], stable=True).indices]

        batches: list[list[int]] = []
        batch: list[int] = []
        longest = 0
        for i, src_len, tgt_len in zip(
            order.tolist(), self.src_lengths[order].tolist(), self.tgt_lengths[order].tolist()
        ):
            new_longest = max(longest, src_len, tgt_len)
            if batch and new_longest * (len(batch) + 1) > self.max_tokens:
                batches.append(batch)
                batch, new_longest = [], max(src_len, tgt_len)
            batch.append(i)
            longest = new_longest
        if batch:
            batches.append(batch)

        while len(batches) % self.world_size:
            largest = max(range(len(batches)), key=lambda b: len(batches[b]))
            if len(batches[largest]) < 2:
                raise UserError(f"too few sentences ({n}) to give each of {self.world_size} ranks a batch")
            half = len(batches[largest]) // 2
            batches[largest : largest + 1] = [batches[largest][:half], batches[largest][half:]]

        if self.shuffle:
            batches = [batches[i] for i in torch.randperm(len(batches), generator=g).tolist()]
        return batches

    def __iter__(self) -> Iterator[list[int]]:
        yield from self._all_batches()[self.rank :: self.world_size][self.start :]

    def __len__(self) -> int:
        """Batches this rank yields in the current epoch (after the resume position)."""
        return len(self._all_batches()) // self.world_size - self.start


@dataclass
class Batch:
    """Padded tensors for one training step. Masks are True at real tokens."""

    src: Tensor  # (B, S) source ids
    tgt_in: Tensor  # (B, T) bos + y: decoder input
    tgt_out: Tensor  # (B, T) y + eos: what the decoder must predict
    src_mask: Tensor  # (B, S) bool
    tgt_mask: Tensor  # (B, T) bool

    @property
    def n_tgt_tokens(self) -> int:
        return int(self.tgt_mask.sum())

    def to(self, device: torch.device | str) -> Batch:
        return Batch(
            *(
                t.to(device, non_blocking=True)
                for t in (self.src, self.tgt_in, self.tgt_out, self.src_mask, self.tgt_mask)
            )
        )


def pad(sequences: Sequence[Sequence[int]]) -> Tensor:
    """List of id lists -> (B, longest) tensor padded with PAD_ID on the right."""
    out = torch.full((len(sequences), max(map(len, sequences), default=0)), PAD_ID, dtype=torch.long)
    for row, seq in enumerate(sequences):
        out[row, : len(seq)] = torch.as_tensor(seq, dtype=torch.long)
    return out


def collate(examples: Sequence[dict]) -> Batch:
    """Examples with `src_ids` and `tgt_ids` (no special tokens) -> a padded Batch."""
    src = pad([ex["src_ids"] for ex in examples])
    tgt_in = pad([[BOS_ID, *ex["tgt_ids"]] for ex in examples])
    tgt_out = pad([[*ex["tgt_ids"], EOS_ID] for ex in examples])
    return Batch(src, tgt_in, tgt_out, src != PAD_ID, tgt_out != PAD_ID)


def both_directions(pairs: Dataset) -> Dataset:
    """The pairs, then each of them the other way round (target as source): bidirectional
    training (Ding et al. 2021, "Improving NMT by Bidirectional Training"). Only for one joint
    vocabulary, where an id means the same piece on either side."""
    from datasets import concatenate_datasets

    swapped = pairs.rename_columns({"src_ids": "tgt_ids", "tgt_ids": "src_ids"})
    return concatenate_datasets([pairs, swapped.select_columns(pairs.column_names)])


def token_batches(dataset: Dataset, max_len: int, max_tokens: int, quiet: bool = False, **sampler_args) -> DataLoader:
    """The pairs the model can take whole (source, and target plus bos/eos, within max_len), in
    length-bucketed batches of up to max_tokens (TokenBucketSampler, given `sampler_args`)."""
    src_lengths, tgt_lengths = list_lengths(dataset, "src_ids"), list_lengths(dataset, "tgt_ids")  # (N,) each
    fits = (src_lengths > 0) & (src_lengths <= max_len) & (tgt_lengths > 0) & (tgt_lengths + 1 <= max_len)
    keep = np.flatnonzero(fits)
    if len(keep) < len(dataset) and not quiet:
        log.info("skipping %d pairs longer than %d pieces (or empty)", len(dataset) - len(keep), max_len)
    sampler = TokenBucketSampler(src_lengths[keep], tgt_lengths[keep], max_tokens, **sampler_args)
    # Its own generator: each iter(DataLoader) draws a seed, and drawing it from the global
    # RNG would shift every dropout mask of a resumed run against an uninterrupted one.
    return DataLoader(dataset.select(keep), batch_sampler=sampler, collate_fn=collate, generator=torch.Generator())
