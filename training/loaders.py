"""How training data reaches the loop: pairs the model can take, and batches across epochs."""

from collections.abc import Iterator
from typing import Protocol

from datasets import Dataset
from torch.utils.data import DataLoader

from data import Batch, PreparedData, TokenBucketSampler, both_directions, token_batches


class EpochPairs(Protocol):
    """What makes each epoch's training pairs anew: subword sampling (data.SampledPairs) or
    augmentation (data.AugmentedPairs)."""

    def epoch(self, epoch: int, seed: int) -> Dataset:
        """Columns src_ids and tgt_ids; the same for the same (seed, epoch)."""


class TrainingBatches:
    """Batches of the training pairs, epoch after epoch, from a given (epoch, position) on.

    Without subword sampling or augmentation every epoch sees the tokenized split, so its pairs
    and their lengths are prepared once; with one of them (`sampled`) each epoch draws new
    segmentations or variations, whose lengths differ, so that epoch's pairs and batches are
    made when it starts.

    Bidirectional training (train.bidirectional) trains the epochs before `one_way_from` on every
    pair both ways round (data.both_directions: twice the batches), the rest in the requested
    direction only.
    """

    def __init__(
        self,
        data: PreparedData,
        sampled: EpochPairs | None,
        max_len: int,
        max_tokens: int,
        seed: int,
        rank: int,
        world_size: int,
    ) -> None:
        self.data, self.sampled, self.max_len, self.max_tokens, self.seed = data, sampled, max_len, max_tokens, seed
        self.sampler_args = dict(shuffle=True, seed=seed, rank=rank, world_size=world_size)
        # what self.loader holds: (the epoch whose pairs, or None without sampling: every epoch's;
        # both directions or not)
        self.loader_key: tuple[int | None, bool] = (None if sampled is None else 0, False)
        self.loader = self._loader(0, both_ways=False)

    def _loader(self, epoch: int, both_ways: bool) -> DataLoader:
        pairs = self.data.tokens["train"] if self.sampled is None else self.sampled.epoch(epoch, self.seed)
        if both_ways:
            pairs = both_directions(pairs)
        # skipped pairs are said once
        return token_batches(pairs, self.max_len, self.max_tokens, quiet=epoch > 0 or both_ways, **self.sampler_args)

    @property
    def sampler(self) -> TokenBucketSampler:
        """The current epoch's (batches per epoch: len(sampler) + sampler.start)."""
        return self.loader.batch_sampler

    @property
    def n_pairs(self) -> int:
        return len(self.loader.dataset)

    def __call__(
        self, epoch: int, position: int, max_epochs: int, one_way_from: int | None = 0
    ) -> Iterator[tuple[int, int, Batch]]:
        """Batches starting `position` batches into `epoch`: (epoch, position after the batch,
        batch), so that a checkpoint can say where to continue. Epochs before `one_way_from`
        (all of them if None) train both directions."""
        while epoch < max_epochs:
            both_ways = one_way_from is None or epoch < one_way_from
            key = (None if self.sampled is None else epoch, both_ways)
            if key != self.loader_key:
                self.loader_key, self.loader = key, self._loader(epoch, both_ways)
            self.sampler.set_epoch(epoch, start=position)
            for batch in self.loader:
                position += 1
                yield epoch, position, batch
            epoch, position = epoch + 1, 0
