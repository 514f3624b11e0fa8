"""How training data reaches the loop: pairs the model can take, and batches across epochs."""
import logging
from typing import Iterator

from torch.utils.data import DataLoader

from data import Batch, TokenBucketSampler

log = logging.getLogger("train")


def fitting(dataset, max_len: int):
    """Pairs the model can take whole (source, and target plus bos/eos, within max_len)."""
    keep = [i for i, (s, t) in enumerate(zip(dataset["src_ids"], dataset["tgt_ids"]))
            if 0 < len(s) <= max_len and 0 < len(t) + 1 <= max_len]
    if len(keep) < len(dataset):
        log.info("skipping %d pairs longer than %d pieces (or empty)", len(dataset) - len(keep), max_len)
    return dataset.select(keep)


def micro_batches(loader: DataLoader, sampler: TokenBucketSampler, epoch: int, position: int, max_epochs: int
                  ) -> Iterator[tuple[int, int, Batch]]:
    """Batches across epochs, starting `position` batches into `epoch`: (epoch, position
    after the batch, batch), so that a checkpoint can say where to continue."""
    while epoch < max_epochs:
        sampler.set_epoch(epoch, start=position)
        for batch in loader:
            position += 1
            yield epoch, position, batch
        epoch, position = epoch + 1, 0
