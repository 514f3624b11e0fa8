"""How training data reaches the loop: pairs the model can take, and batches across epochs."""

from collections.abc import Iterator

from torch.utils.data import DataLoader

from data import Batch, PreparedData, SampledPairs, TokenBucketSampler, token_batches


class TrainingBatches:
    """Batches of the training pairs, epoch after epoch, from a given (epoch, position) on.

    Without subword sampling every epoch sees the tokenized split, so its pairs and their
    lengths are prepared once; with it (`sampled`) each epoch draws new segmentations, whose
    lengths differ, so that epoch's pairs and batches are made when it starts.
    """

    def __init__(
        self,
        data: PreparedData,
        sampled: SampledPairs | None,
        max_len: int,
        max_tokens: int,
        seed: int,
        rank: int,
        world_size: int,
    ) -> None:
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
