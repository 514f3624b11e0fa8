"""One optimizer step (training/step.py): accumulation and the non-finite guard."""

import copy
import math
from contextlib import nullcontext

import torch

from data import collate
from helpers import random_pairs, tiny_model
from model import Transformer
from training.step import train_step


def deterministic_model() -> Transformer:
    return tiny_model(src_vocab_size=40, tgt_vocab_size=40, dropout=0.0, attention_dropout=0.0)


def test_accumulated_batches_give_the_gradient_of_one_big_batch():
    data = random_pairs(7)
    small_batches, big_batch = [collate(data[:2]), collate(data[2:5]), collate(data[5:])], collate(data)
    tokens = big_batch.n_tgt_tokens
    assert tokens == sum(b.n_tgt_tokens for b in small_batches)
    accumulated, single = deterministic_model(), deterministic_model()
    before = copy.deepcopy(single.state_dict())
    for model, batches in ((accumulated, small_batches), (single, [big_batch])):
        sgd = torch.optim.SGD(model.parameters(), lr=1.0)  # the update is minus the gradient
        result = train_step(model, sgd, 0.1, batches, tokens, nullcontext, None)
        assert result.updated
    for name, value in single.state_dict().items():
        torch.testing.assert_close(accumulated.state_dict()[name], value, rtol=1e-5, atol=1e-6)
    assert any(not torch.equal(v, before[k]) for k, v in single.state_dict().items())


def test_a_non_finite_loss_leaves_the_weights_alone():
    model = deterministic_model()
    with torch.no_grad():  # one infinite embedding entry makes the loss NaN
        model.src_embedding.weight[5, 0] = float("inf")
    before = copy.deepcopy(model.state_dict())
    batch = collate([{"src_ids": [5, 6, 7], "tgt_ids": [8, 9]}, *random_pairs(2)])
    result = train_step(model, torch.optim.AdamW(model.parameters()), 0.1, [batch], 10.0, nullcontext, 1.0)
    assert not result.updated and not math.isfinite(result.loss)
    for name, value in model.state_dict().items():
        assert torch.equal(value, before[name]), name
    assert all(p.grad is None for p in model.parameters())  # nothing left over for the next step
