"""How training data reaches the loop: pairs the model can take, and batches across epochs."""
import logging
from typing import Iterator

import numpy as np
import torch
from datasets import Dataset
from torch.utils.data import DataLoader

from data import Batch, PreparedData, SampledPairs, TokenBucketSampler, collate
from data.columns import list_lengths

log = logging.getLogger("train")


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


class TrainingBatches:
    """Batches of the training pairs, epoch after epoch, from a given (epoch, position) on.

    Without subword sampling every epoch sees the tokenized split, so its pairs and their
    lengths are prepared once; with it (`sampled`) each epoch draws new segmentations, whose
    lengths differ, so that epoch's pairs and batches are made when it starts.
    """

    def __init__(self, data: PreparedData, sampled: SampledPairs | None, max_len: int, max_tokens: int, seed: int,
                 rank: int, world_size: int) -> None:
        self.data, self.sampled, self.max_len, self.max_tokens, self.seed = data, sampled, max_len, max_tokens, seed
        self.sampler_args = dict(shuffle=True, seed=seed, rank=rank, world_size=world_size)
        self.loader_epoch = 0  # whose pairs self.loader holds; without sampling, every epoch's
        self.loader = self._loader(self.loader_epoch)

    def _loader(self, epoch: int) -> DataLoader:
        pairs = self.data.tokens["train"] if self.sampled is None else self.sampled.epoch(epoch, self.seed)
        # skipped pairs are said once
        return token_batches(pairs, self.max_len, self.max_tokens, quiet=epoch > 0, **self.sampler_args)

    @property
    def sampler(self) -> TokenBucketSampler:
        """The current epoch's (batches per epoch: len(sampler) + sampler.start)."""
        return self.loader.batch_sampler

    @property
    def n_pairs(self) -> int:
        return len(self.loader.dataset)

    def __call__(self, epoch: int, position: int, max_epochs: int) -> Iterator[tuple[int, int, Batch]]:
        """Batches starting `position` batches into `epoch`: (epoch, position after the batch,
        batch), so that a checkpoint can say where to continue."""
        while epoch < max_epochs:
            if self.sampled is not None and self.loader_epoch != epoch:
                self.loader_epoch, self.loader = epoch, self._loader(epoch)
            self.sampler.set_epoch(epoch, start=position)
            for batch in self.loader:
                position += 1
                yield epoch, position, batch
            epoch, position = epoch + 1, 0
