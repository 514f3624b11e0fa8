"""The CPU dropout draws its masks from 15-bit slices of 64-bit random words and builds the
factor's bits with integer arithmetic: check that it behaves as dropout must (rate, unbiased
scaling, gradient, determinism, eval identity)."""

import pytest
import torch

from model.dropout import Dropout, keep_factor


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16, torch.float64])
@pytest.mark.parametrize("keep", [0.9, 0.7, 0.5])
def test_factors_keep_at_the_given_rate_in_every_16_bit_lane(keep, dtype):
    torch.manual_seed(0)
    factor = keep_factor(torch.Size([400_000]), 1 / keep, dtype)
    assert factor.dtype == dtype
    # exactly two values, whatever the float's width: the scale's bits or all zeros
    assert set(factor.unique().tolist()) == {0.0, torch.tensor(1 / keep, dtype=dtype).item()}
    mask = factor != 0
    # 100k elements per lane of the 64-bit words: sd of the rate is below 0.0016
    for lane in range(4):
        assert abs(mask[lane::4].float().mean().item() - keep) < 0.006, f"lane {lane}"
    # neighbours are independent: both kept with probability keep^2
    assert abs((mask[:-1] & mask[1:]).float().mean().item() - keep * keep) < 0.004


def test_the_bit_arithmetic_keeps_exactly_the_lanes_below_the_threshold():
    """The sign-spreading shift against a plain comparison of the same random lanes."""
    n, scale = 10_001, 1 / 0.7  # n not a multiple of 4: the last word is partly used
    torch.manual_seed(3)
    factor = keep_factor(torch.Size([n]), scale, torch.float32)
    torch.manual_seed(3)
    words = torch.empty((n + 3) // 4, dtype=torch.int64).random_(-(1 << 63), None)
    lanes = words.view(torch.int16)[:n].int() & 0x7FFF  # uniform over [0, 2^15)
    assert torch.equal(factor != 0, lanes < round(2**15 / scale))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_training_output_is_zero_or_scaled_and_unbiased(dtype):
    torch.manual_seed(0)
    dropout = Dropout(0.1).train()
    x = torch.ones(2000, 1000, dtype=dtype)
    y = dropout(x)
    assert y.dtype == dtype
    assert set(y.unique().tolist()) == {0.0, dropout.scale(dtype)}
    assert abs(y.double().mean().item() - 1) < 0.002  # 2M elements: sd 0.0002
    assert abs((y == 0).double().mean().item() - 0.1) < 0.002


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_gradient_flows_through_kept_elements_only(dtype):
    torch.manual_seed(1)
    x = torch.randn(64, 33, dtype=dtype, requires_grad=True)
    dropout = Dropout(0.5).train()
    y = dropout(x)
    y.sum().backward()
    expected = (y != 0).to(dtype) * dropout.scale(dtype)
    torch.testing.assert_close(x.grad, expected)


def test_same_seed_same_mask_and_eval_is_identity():
    dropout = Dropout(0.1).train()
    x = torch.randn(8, 16)
    torch.manual_seed(5)
    first = dropout(x)
    torch.manual_seed(5)
    assert torch.equal(first, dropout(x))
    assert not torch.equal(first, dropout(x))
    assert dropout.eval()(x) is x


def test_probability_outside_zero_one_is_rejected():
    with pytest.raises(ValueError, match="dropout probability"):
        Dropout(1.0)
