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


def seen_from(toy, epoch: int, position: int, max_epochs: int, one_way_from: int | None = 0) -> list[tuple]:
    """(epoch, position, source ids) of every batch a new TrainingBatches (seed 7) yields from
    `position` batches into `epoch` on: what a run started or resumed there trains on."""
    batches = TrainingBatches(toy, None, max_len=64, max_tokens=256, seed=7, rank=0, world_size=1)
    return [(e, p, b.src.tolist()) for e, p, b in batches(epoch, position, max_epochs, one_way_from)]


@pytest.mark.parametrize("epoch, position", [(0, 0), (0, 5), (1, 3)])
def test_starting_from_a_saved_position_gives_what_an_uninterrupted_run_saw_next(toy, epoch, position):
    straight = seen_from(toy, 0, 0, max_epochs=3)
    per_epoch = len(straight) // 3
    assert [p for e, p, _ in straight if e == 0] == list(range(1, per_epoch + 1))
    assert straight[:per_epoch] != straight[per_epoch : 2 * per_epoch]  # each epoch its own order
    resumed = seen_from(toy, epoch, position, max_epochs=3)
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


def rows(batches) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """(source ids, target ids) of every sentence of the batches, without padding and bos."""
    return [
        (tuple(i for i in src if i != PAD_ID), tuple(i for i in tgt[1:] if i != PAD_ID))
        for batch in batches
        for src, tgt in zip(batch.src.tolist(), batch.tgt_in.tolist())
    ]


def test_epochs_before_one_way_from_train_every_pair_both_ways_round(toy):
    batches = TrainingBatches(toy, None, max_len=64, max_tokens=256, seed=3, rank=0, world_size=1)
    pairs = [(tuple(s), tuple(t)) for s, t in zip(toy.tokens["train"]["src_ids"], toy.tokens["train"]["tgt_ids"])]
    by_epoch: dict[int, list] = {}
    for epoch, _, batch in batches(0, 0, max_epochs=3, one_way_from=2):
        by_epoch.setdefault(epoch, []).append(batch)
    swapped = [(t, s) for s, t in pairs]
    for epoch in (0, 1):
        assert sorted(rows(by_epoch[epoch])) == sorted(pairs + swapped)
    assert sorted(rows(by_epoch[2])) == sorted(pairs)
    assert rows(by_epoch[0]) != rows(by_epoch[1])  # each epoch its own order


@pytest.mark.parametrize("epoch, position", [(0, 7), (1, 0), (1, 4)])
def test_resuming_around_the_switch_to_one_direction_gives_what_an_uninterrupted_run_saw(toy, epoch, position):
    straight = seen_from(toy, 0, 0, max_epochs=2, one_way_from=1)
    before = sum(e == 0 for e, _, _ in straight)
    resumed = seen_from(toy, epoch, position, max_epochs=2, one_way_from=1)
    assert resumed == straight[(before if epoch else 0) + position :]
