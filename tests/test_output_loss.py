"""The fused output layer + label-smoothed cross-entropy against PyTorch's own cross-entropy."""

import pytest
import torch
import torch.nn.functional as F

from model import Transformer
from model.output_loss import output_cross_entropy


def loss_and_grads(loss_fn, states, weight):
    states, weight = states.clone().requires_grad_(), weight.clone().requires_grad_()
    loss = loss_fn(states, weight)
    (loss * 0.37).backward()  # an upstream gradient other than 1 must scale both results
    return loss.detach(), states.grad, weight.grad


@pytest.mark.parametrize("label_smoothing", [0.0, 0.1, 0.3])
def test_value_and_gradients_equal_cross_entropy_of_the_logits(label_smoothing):
    g = torch.Generator().manual_seed(0)
    states = torch.randn(37, 16, dtype=torch.float64, generator=g)
    weight = torch.randn(29, 16, dtype=torch.float64, generator=g)
    targets = torch.randint(0, 29, (37,), generator=g)
    ours = loss_and_grads(lambda h, w: output_cross_entropy(h, w, targets, label_smoothing), states, weight)
    reference = loss_and_grads(
        lambda h, w: F.cross_entropy(h @ w.t(), targets, label_smoothing=label_smoothing, reduction="sum"),
        states,
        weight,
    )
    for a, b in zip(ours, reference):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)


def test_no_positions_give_zero_loss_and_zero_gradient():
    weight = torch.randn(29, 16, requires_grad=True)
    loss = output_cross_entropy(torch.zeros(0, 16), weight, torch.zeros(0, dtype=torch.long), 0.1)
    loss.backward()
    assert loss.item() == 0.0 and torch.count_nonzero(weight.grad) == 0


def test_bf16_autocast_follows_the_fp32_loss_and_keeps_fp32_gradients():
    g = torch.Generator().manual_seed(1)
    states, weight = torch.randn(64, 32, generator=g), torch.randn(50, 32, generator=g) * 0.3
    targets = torch.randint(0, 50, (64,), generator=g)

    def under_autocast(h, w):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return output_cross_entropy(h, w, targets, 0.1)

    fp32 = loss_and_grads(lambda h, w: output_cross_entropy(h, w, targets, 0.1), states, weight)
    bf16 = loss_and_grads(under_autocast, states, weight)
    assert bf16[0].dtype == torch.float32 and bf16[1].dtype == bf16[2].dtype == torch.float32
    for a, b in zip(bf16, fp32):  # bf16 keeps 8 bits of mantissa: agreement to about 1%
        torch.testing.assert_close(a, b, rtol=0.02, atol=0.02)


def test_the_models_training_loss_is_cross_entropy_over_its_logits_ignoring_padding(tiny_config):
    """Transformer.forward(targets=...) against F.cross_entropy(logits, ignore_index=pad),
    gradients of every parameter included; the batch has padded target positions."""
    torch.manual_seed(0)
    model = Transformer(tiny_config).double().eval()  # eval: no dropout, so both passes match
    pad = tiny_config.pad_id
    src = torch.randint(4, 50, (3, 7))
    tgt_in = torch.randint(4, 50, (3, 6))
    targets = torch.randint(4, 50, (3, 6))
    targets[0, 4:] = tgt_in[0, 5:] = pad
    targets[2, 2:] = tgt_in[2, 3:] = pad

    def run(fused: bool):
        model.zero_grad()
        if fused:
            loss = model(src, tgt_in, targets=targets, label_smoothing=0.1).loss
        else:
            logits = model(src, tgt_in).logits
            loss = F.cross_entropy(
                logits.flatten(0, 1), targets.flatten(), ignore_index=pad, label_smoothing=0.1, reduction="sum"
            )
        loss.backward()
        return loss.detach(), {name: p.grad.clone() for name, p in model.named_parameters()}

    (fused_loss, fused_grads), (reference_loss, reference_grads) = run(True), run(False)
    torch.testing.assert_close(fused_loss, reference_loss, rtol=1e-10, atol=1e-10)
    for name, grad in reference_grads.items():
        torch.testing.assert_close(fused_grads[name], grad, rtol=1e-8, atol=1e-10, msg=name)
    assert all(grad.abs().sum() > 0 for grad in fused_grads.values())  # every parameter took part
