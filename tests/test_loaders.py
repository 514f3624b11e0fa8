"""training/loaders.py: what reaches the training loop, and from where a resumed run goes on."""

import logging

import pytest

from data import PAD_ID, token_batches
from training.loaders import TrainingBatches


def test_pairs_the_model_cannot_take_are_skipped_and_said(toy, caplog):
    train = toy.tokens["train"]
    max_len = sorted(len(ids) for ids in train["src_ids"])[len(train) // 2]  # about half are longer
    too_long = sum(len(s) > max_len or len(t) + 1 > max_len for s, t in zip(train["src_ids"], train["tgt_ids"]))
    with caplog.at_level(logging.INFO, logger="data.batching"):
        loader = token_batches(train, max_len, max_tokens=256)
    assert 0 < too_long < len(train) and len(loader.dataset) == len(train) - too_long
    assert f"skipping {too_long} pairs longer than {max_len} pieces" in caplog.text
    for batch in loader:
        assert batch.src.size(1) <= max_len and batch.tgt_in.size(1) <= max_len
        assert batch.src.numel() <= 256 and batch.tgt_in.numel() <= 256


@pytest.mark.parametrize("epoch, position", [(0, 0), (0, 5), (1, 3)])
def test_starting_from_a_saved_position_gives_what_an_uninterrupted_run_saw_next(toy, epoch, position):
    def batches():
        return TrainingBatches(toy, None, max_len=64, max_tokens=256, seed=7, rank=0, world_size=1)

    straight = [(e, p, b.src.tolist()) for e, p, b in batches()(0, 0, max_epochs=3)]
    per_epoch = len(straight) // 3
    assert [p for e, p, _ in straight if e == 0] == list(range(1, per_epoch + 1))
    assert straight[:per_epoch] != straight[per_epoch : 2 * per_epoch]  # each epoch its own order
    resumed = [(e, p, b.src.tolist()) for e, p, b in batches()(epoch, position, max_epochs=3)]
    assert resumed == straight[epoch * per_epoch + position :]


def test_ranks_split_the_epoch_and_train_as_many_steps(toy):
    shards = [
        list(TrainingBatches(toy, None, 64, 256, seed=0, rank=rank, world_size=2)(0, 0, max_epochs=1))
        for rank in (0, 1)
    ]
    assert len(shards[0]) == len(shards[1])
    rows = [
        tuple(i for i in row if i != PAD_ID) for shard in shards for _, _, batch in shard for row in batch.src.tolist()
    ]
    assert len(set(rows)) == len(rows) == len(toy.tokens["train"])  # every pair once (the toy corpus has no repeats)
