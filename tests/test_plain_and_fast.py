"""The plain computations and the fast ones that stand in for them (TransformerConfig.plain):
the same loss and gradients, dropout that keeps at the same rate with the same scale, the same
beam search translations. bench/plain_and_fast.py measures what the fast ones gain."""

import dataclasses

import pytest
import torch

from helpers.models import tiny_model
from model import Transformer
from model.dropout import Dropout
from model.output_loss import output_cross_entropy, plain_output_cross_entropy
from model.search import beam_search, output_limits


def twins(**changes) -> tuple[Transformer, Transformer]:
    """The tiny model, fast and plain, with the same weights."""
    fast = tiny_model(**changes)
    plain = Transformer(dataclasses.replace(fast.cfg, plain=True))
    plain.load_state_dict(fast.state_dict())
    return fast, plain.eval()


def batch(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Source, decoder input and targets of 6 padded pairs of the tiny vocabulary (50 ids)."""
    g = torch.Generator().manual_seed(seed)
    src, tgt = torch.randint(4, 50, (6, 9), generator=g), torch.randint(4, 50, (6, 8), generator=g)
    src[3:, 6:], tgt[2:, 5:] = 0, 0  # padding
    tgt_in = torch.cat([torch.full((6, 1), 2), tgt[:, :-1]], 1)
    return src, tgt_in, tgt


@pytest.mark.parametrize("consistency", [0.0, 0.5], ids=["cross-entropy", "R-Drop"])
@pytest.mark.parametrize("label_smoothing", [0.0, 0.1])
def test_the_fused_loss_is_the_plain_loss_in_value_and_gradients(label_smoothing, consistency):
    g = torch.Generator().manual_seed(1)
    states = torch.randn(40, 16, dtype=torch.float64, generator=g)  # 2 x 20 positions: R-Drop's two passes
    weight = torch.randn(29, 16, dtype=torch.float64, generator=g)
    targets = torch.randint(0, 29, (20,), generator=g).repeat(2)
    results = []
    for loss_of in (output_cross_entropy, plain_output_cross_entropy):
        h, w = states.clone().requires_grad_(), weight.clone().requires_grad_()
        loss = loss_of(h, w, targets, label_smoothing, consistency)
        (loss * 0.37).backward()
        results.append((loss.detach(), h.grad, w.grad))
    for fast, plain in zip(*results):
        torch.testing.assert_close(fast, plain, rtol=1e-10, atol=1e-10)


def test_the_plain_model_trains_on_the_same_loss_and_gradients():
    """With dropout off (the two draw their masks differently), one training step's loss and
    every parameter's gradient agree, label smoothing and R-Drop on."""
    fast, plain = twins(dropout=0.0, attention_dropout=0.0)
    src, tgt_in, tgt = batch()
    grads = []
    for model in (fast, plain):
        model.train()
        model.zero_grad()
        loss = model(src, tgt_in, tgt, label_smoothing=0.1, consistency=0.3).loss
        loss.backward()
        grads.append((loss.detach(), {name: p.grad for name, p in model.named_parameters()}))
    (fast_loss, fast_grads), (plain_loss, plain_grads) = grads
    torch.testing.assert_close(fast_loss, plain_loss, rtol=1e-5, atol=1e-5)
    for name, grad in fast_grads.items():
        torch.testing.assert_close(grad, plain_grads[name], rtol=1e-4, atol=1e-6, msg=name)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_plain_and_bit_mask_dropout_keep_at_one_rate_with_one_scale(dtype):
    """Both zero about p of the elements and scale the rest by 1 / (1 - p) (the bit masks round
    it to the dtype): the same expected value, from other random draws."""
    x = torch.ones(400_000, dtype=dtype)
    for plain in (False, True):
        dropout = Dropout(0.3, plain).train()
        torch.manual_seed(0)
        out = dropout(x)
        kept = out != 0
        assert abs(kept.float().mean().item() - 0.7) < 0.005, plain
        assert torch.allclose(out[kept].float(), torch.tensor(1 / 0.7), rtol=0.01), plain
        assert abs(out.float().mean().item() - 1.0) < 0.01, plain  # unbiased
    assert "plain" in repr(Dropout(0.3, True)) and "plain" not in repr(Dropout(0.3))


@pytest.mark.parametrize("use_cache", [True, False])
@pytest.mark.parametrize("beam_size", [1, 4])
def test_beam_search_gives_the_same_translations_with_the_source_shared_or_copied(beam_size, use_cache):
    """The fast path (a sentence's hypotheses attend to its one row of encoder output) and the
    plain one (each hypothesis with its own copy, moved with it) find the same hypotheses with
    the same scores, sentences ending at different steps."""
    fast, plain = twins()
    src, _, _ = batch(seed=3)
    limits = output_limits(fast, src, 1.5, 5)
    found = [
        beam_search(model, src, beam_size, limits, n_best=beam_size, use_cache=use_cache) for model in (fast, plain)
    ]
    assert [[h.tokens for h in hyps] for hyps in found[0]] == [[h.tokens for h in hyps] for hyps in found[1]]
    for fast_hyps, plain_hyps in zip(*found):
        for a, b in zip(fast_hyps, plain_hyps):
            assert a.score == pytest.approx(b.score, abs=1e-5)
    assert len({len(hyps[0].tokens) for hyps in found[0]}) > 1  # not all the same length: rows left the batch
