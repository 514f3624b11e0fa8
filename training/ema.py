"""An exponential moving average of the weights, evaluated instead of the weights themselves.

After every optimizer step the average moves a fraction (1 - decay) of the way towards the new
weights, `ema = decay * ema + (1 - decay) * weights` (the first step copies them), so it
remembers about the last 1 / (1 - decay) steps: a smoothed model, as Polyak averaging gives,
that validation, the best checkpoint and the test translate with (train.ema_decay). The
arithmetic is torch's own (AveragedModel with its EMA update); this file adds what a run needs
around it: a checkpointable state and a way to evaluate the average in the model's place.
"""

from collections.abc import Iterator
from contextlib import contextmanager

import torch
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn

from model import Transformer


class WeightAverage:
    """The moving average of `model`'s parameters with `decay` (in (0, 1))."""

    def __init__(self, model: Transformer, decay: float) -> None:
        self.averaged = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(decay))

    def update(self, model: Transformer) -> None:
        """Move the average towards `model`'s weights after an optimizer step."""
        self.averaged.update_parameters(model)

    def state_dict(self) -> dict:
        return self.averaged.state_dict()  # the averaged weights and how many steps they average

    def load_state_dict(self, state: dict) -> None:
        self.averaged.load_state_dict(state)

    @contextmanager
    def swapped_into(self, model: Transformer) -> Iterator[None]:
        """`model` holds the averaged weights inside the block, its own ones again after it (an error
        inside included). Before the first update the average is the weights themselves."""
        if int(self.averaged.n_averaged) == 0:
            yield
            return
        own = [p.detach().clone() for p in model.parameters()]
        with torch.no_grad():
            for param, averaged in zip(model.parameters(), self.averaged.module.parameters(), strict=True):
                param.copy_(averaged)
        try:
            yield
        finally:
            with torch.no_grad():
                for param, saved in zip(model.parameters(), own, strict=True):
                    param.copy_(saved)
