"""A run's config, events and checkpoints as tests read them."""

import torch
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from inference.checkpoint import load_checkpoint


def scalars(run_dir) -> EventAccumulator:
    """The TensorBoard events of a run folder, everything loaded."""
    events = EventAccumulator(str(run_dir), size_guidance={"scalars": 0, "images": 0, "tensors": 0})
    events.Reload()
    return events


def assert_same_training(path_a, path_b) -> None:
    """Two full checkpoints hold the same training state: weights, progress, schedule, both
    of the optimizer's moments and the moving average of the weights where there is one."""
    a, b = load_checkpoint(path_a), load_checkpoint(path_b)
    for name, tensor in a["model"].items():
        assert torch.equal(tensor, b["model"][name]), f"{name} differs"
    progress = [
        {k: v for k, v in ckpt["train_state"]["progress"].items() if k != "elapsed"}  # wall clock differs
        for ckpt in (a, b)
    ]
    assert progress[0] == progress[1]
    assert a["train_state"]["scheduler"] == b["train_state"]["scheduler"]
    for name, state in a["train_state"]["optimizer"]["state"].items():
        for moment in ("exp_avg", "exp_avg_sq"):
            assert torch.equal(state[moment], b["train_state"]["optimizer"]["state"][name][moment]), f"{moment} differs"
    assert ("ema" in a["train_state"]) == ("ema" in b["train_state"])
    for name, tensor in a["train_state"].get("ema", {}).items():
        assert torch.equal(tensor, b["train_state"]["ema"][name]), f"the moving average's {name} differs"
