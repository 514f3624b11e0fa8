"""The fused output layer + label-smoothed cross-entropy against PyTorch's own cross-entropy."""

import dataclasses

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


@pytest.mark.parametrize("consistency", [0.5, 5.0])
def test_r_drop_value_and_gradients_equal_the_formula_over_the_logits(consistency):
    """The R-Drop loss: the mean of the two passes' cross-entropies plus alpha / 4 times their
    symmetric KL divergence, against the same written with PyTorch's own functions."""
    g = torch.Generator().manual_seed(2)
    states = torch.randn(2 * 23, 16, dtype=torch.float64, generator=g)  # two passes over 23 positions
    weight = torch.randn(29, 16, dtype=torch.float64, generator=g)
    targets = torch.randint(0, 29, (23,), generator=g).repeat(2)

    def reference(h, w):
        log_probs = torch.log_softmax(h @ w.t(), dim=-1)
        first, second = log_probs.chunk(2)
        kl = F.kl_div(second, first, log_target=True, reduction="sum")  # KL(p || p')
        kl_reverse = F.kl_div(first, second, log_target=True, reduction="sum")  # KL(p' || p)
        cross_entropy = F.cross_entropy(h @ w.t(), targets, label_smoothing=0.1, reduction="sum")
        return cross_entropy / 2 + consistency / 4 * (kl + kl_reverse)

    ours = loss_and_grads(lambda h, w: output_cross_entropy(h, w, targets, 0.1, consistency), states, weight)
    for a, b in zip(ours, loss_and_grads(reference, states, weight)):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)


def test_the_models_r_drop_loss_pairs_each_position_with_itself_in_the_second_pass(tiny_config):
    """Transformer.forward(consistency=...) in training mode against the same two passes made by
    hand (the batch given twice, the same dropout draws): the KL term pairs each target position
    of the first copy with the same position of the second, padding left out."""
    model = Transformer(dataclasses.replace(tiny_config, dropout=0.3, attention_dropout=0.1)).double().train()
    pad = tiny_config.pad_id
    src, tgt_in, targets = torch.randint(4, 50, (3, 7)), torch.randint(4, 50, (3, 6)), torch.randint(4, 50, (3, 6))
    targets[0, 4:] = tgt_in[0, 5:] = pad
    torch.manual_seed(3)
    loss = model(src, tgt_in, targets=targets, label_smoothing=0.1, consistency=5.0).loss
    torch.manual_seed(3)
    logits = model(torch.cat([src, src]), torch.cat([tgt_in, tgt_in])).logits  # (2B, T, V)
    real = targets != pad
    first, second = torch.log_softmax(logits, dim=-1).chunk(2)  # 2 x (B, T, V)
    kl = F.kl_div(second[real], first[real], log_target=True, reduction="sum")
    kl += F.kl_div(first[real], second[real], log_target=True, reduction="sum")
    both = torch.cat([targets, targets])
    cross_entropy = F.cross_entropy(logits[both != pad], both[both != pad], label_smoothing=0.1, reduction="sum")
    assert kl > 1e-3  # the two passes differ: dropout drew its own masks for each copy
    torch.testing.assert_close(loss, cross_entropy / 2 + 5.0 / 4 * kl, rtol=1e-10, atol=1e-10)
