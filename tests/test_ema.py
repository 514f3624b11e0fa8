"""training/ema.py: the moving average is the formula's, and evaluating it leaves the weights alone."""

import pytest
import torch

from helpers import tiny_model
from training.ema import WeightAverage


def nudged(model: torch.nn.Module, seed: int) -> None:
    """A stand-in for an optimizer step: every weight moves by a random amount."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for param in model.parameters():
            param.add_(torch.randn(param.shape, generator=generator))


def test_the_average_follows_the_formula_step_by_step():
    """ema_1 = w_1, then ema_t = d * ema_(t-1) + (1 - d) * w_t, for every parameter."""
    model, decay = tiny_model(seed=0), 0.8
    average = WeightAverage(model, decay)
    expected = None
    for step in range(4):
        nudged(model, step)
        average.update(model)
        weights = [p.detach().clone() for p in model.parameters()]
        expected = weights if expected is None else [decay * e + (1 - decay) * w for e, w in zip(expected, weights)]
    with average.swapped_into(model):
        for param, value in zip(model.parameters(), expected, strict=True):
            torch.testing.assert_close(param, value)


def test_evaluating_the_average_restores_the_weights_even_after_an_error():
    model = tiny_model(seed=1)
    average = WeightAverage(model, 0.5)
    with average.swapped_into(model):  # before any update: the weights themselves
        pass
    nudged(model, 0)
    average.update(model)
    nudged(model, 1)
    own = [p.detach().clone() for p in model.parameters()]
    with pytest.raises(RuntimeError), average.swapped_into(model):
        assert not all(torch.equal(p, o) for p, o in zip(model.parameters(), own))
        raise RuntimeError("a validation that failed")
    assert all(torch.equal(p, o) for p, o in zip(model.parameters(), own))
