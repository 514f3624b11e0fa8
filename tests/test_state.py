"""training/state.py: what a checkpoint saves of a run is what resuming restores, part by part."""

import dataclasses
import io

import torch

from data import collate
from helpers import random_pairs, tiny_model
from training.config import TrainConfig
from training.distributed import Distributed
from training.ema import WeightAverage
from training.schedule import Schedule
from training.state import Progress, RandomStreams, TrainState


def make_state(seed: int) -> TrainState:
    model = tiny_model(seed=seed).train()
    cfg = TrainConfig(schedule="linear", warmup_steps=2, max_steps=50)
    progress = Progress()
    return TrainState(
        model,
        torch.optim.AdamW(model.parameters(), lr=1e-3),
        Schedule.from_config(cfg),
        progress,
        RandomStreams(torch.device("cpu"), Distributed(torch.device("cpu")), seed, progress),
        WeightAverage(model, decay=0.9),
    )


def trained_a_little(seed: int) -> TrainState:
    """A state whose every part differs from a fresh one's: optimizer moments, a planned
    schedule, progress, and a random stream moved on by dropout."""
    state = make_state(seed)
    batch = collate(random_pairs(4, seed=seed))
    for _ in range(3):
        _, loss, _ = state.model(batch.src, batch.tgt_in, targets=batch.tgt_out)
        loss.backward()
        state.optimizer.step()
        state.optimizer.zero_grad()
        state.ema.update(state.model)
    state.schedule.plan(3, 40 + seed)
    state.progress.load_state_dict(
        {"step": 3, "epoch": 1, "position": 2, "best_bleu": 12.5, "elapsed": 7.0 + seed, "one_way_from": seed}
    )
    return state


def same(a, b) -> bool:
    """Deep equality of saved states: dicts, lists, tensors, numbers."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return isinstance(b, (list, tuple)) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and torch.equal(a, b)
    return a == b


def test_every_part_of_the_state_is_saved():
    """A field added to TrainState without a place in the checkpoint would be lost on resume."""
    fields = {f.name for f in dataclasses.fields(TrainState)}
    assert fields - {"model"} == set(TrainState.PARTS.values())  # the weights: the checkpoint's "model"
    assert set(trained_a_little(1).state_dict()) == set(TrainState.PARTS)


def test_a_restored_state_saves_what_the_saved_one_did_and_draws_the_same_numbers():
    saved = trained_a_little(1)
    checkpoint = saved.checkpoint(
        tokenizer=type("T", (), {"src_model": b"s", "tgt_model": b"t", "src_forms": ["Hund"]})(), meta={}
    )
    expected_draw = torch.rand(5)  # what the saved run draws next (torch.rand: as dropout does)
    buffer = io.BytesIO()
    torch.save(checkpoint, buffer)
    restored = trained_a_little(2)  # every part different before restoring
    assert not same(restored.state_dict(), trained_a_little(1).state_dict())
    buffer.seek(0)
    restored.restore(torch.load(buffer, weights_only=False), path="saved.pt")
    assert torch.equal(torch.rand(5), expected_draw)
    for key, part in TrainState.PARTS.items():
        if part != "rng":  # the stream has moved on by the draw above, in both
            assert same(getattr(restored, part).state_dict(), checkpoint["train_state"][key]), part
    assert all(
        torch.equal(a, b) for a, b in zip(restored.model.state_dict().values(), saved.model.state_dict().values())
    )


def test_restoring_works_in_place_so_holders_of_a_part_see_it():
    """The trainer and the random streams hold the progress; restoring must not swap it out."""
    state = make_state(0)
    progress, optimizer = state.progress, state.optimizer
    state.load_state_dict(trained_a_little(1).state_dict())
    assert state.progress is progress and state.optimizer is optimizer and state.rng.progress is progress
    assert progress.step == 3 and progress.elapsed == 8.0


def test_progress_saved_before_a_part_existed_takes_that_part_s_default():
    """A checkpoint from before bidirectional training has no one_way_from: it trained one way from
    its first epoch, whatever this run's fresh progress said."""
    progress = Progress(one_way_from=None, best_bleu=30.0)
    progress.load_state_dict({"step": 7, "epoch": 2, "position": 1, "elapsed": 3.0})
    assert progress == Progress(step=7, epoch=2, position=1, elapsed=3.0, one_way_from=0)
