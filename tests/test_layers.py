"""model/layers.py: the encoder and decoder layers against PyTorch's own (nn.TransformerEncoderLayer,
nn.TransformerDecoderLayer) given the same weights, pre-norm and post-norm, and the residual's
two orders. (The import architecture, which this file's name once tested: test_architecture.py.)"""

import pytest
import torch
from torch import nn

from helpers.models import tiny_config
from model.layers import DecoderLayer, EncoderLayer, FeedForward, Residual
from model.masks import causal_mask, padding_mask

SOURCE = torch.tensor([[5, 6, 7, 8, 9], [5, 6, 7, 0, 0]])  # the second sentence padded
TARGET = torch.tensor([[1, 5, 6, 7], [1, 8, 9, 0]])


def copy_attention(ours, theirs: nn.MultiheadAttention) -> None:
    theirs.in_proj_weight.copy_(ours.in_proj.weight)
    theirs.in_proj_bias.copy_(ours.in_proj.bias)
    theirs.out_proj.weight.copy_(ours.out_proj.weight)
    theirs.out_proj.bias.copy_(ours.out_proj.bias)


def copy_feed_forward(ours: FeedForward, theirs: nn.Module) -> None:
    theirs.linear1.load_state_dict(ours.net[0].state_dict())
    theirs.linear2.load_state_dict(ours.net[3].state_dict())


def randomized(module: nn.Module) -> nn.Module:
    """Every parameter drawn at random (LayerNorm's ones and zeros would hide a swapped norm)."""
    torch.manual_seed(0)
    with torch.no_grad():
        for p in module.parameters():
            p.normal_(0, 0.3)
    return module.eval()


def ours_and_theirs(ours_class, theirs_class, norm_first: bool):
    """Our layer, its weights drawn at random, and torch's of the same shape and norm order."""
    cfg = tiny_config(norm_first=norm_first, dropout=0.0, attention_dropout=0.0)
    theirs = theirs_class(cfg.d_model, cfg.n_heads, cfg.d_ff, dropout=0.0, batch_first=True, norm_first=norm_first)
    return cfg, randomized(ours_class(cfg)), theirs.eval()


@pytest.mark.parametrize("norm_first", [True, False], ids=["pre-norm", "post-norm"])
def test_the_encoder_layer_is_torchs(norm_first):
    cfg, ours, theirs = ours_and_theirs(EncoderLayer, nn.TransformerEncoderLayer, norm_first)
    with torch.no_grad():
        copy_attention(ours.self_attn, theirs.self_attn)
        copy_feed_forward(ours.feed_forward, theirs)
        theirs.norm1.load_state_dict(ours.self_attn_residual.norm.state_dict())
        theirs.norm2.load_state_dict(ours.feed_forward_residual.norm.state_dict())
    x = torch.randn(2, 5, cfg.d_model)
    out, weights = ours(x, padding_mask(SOURCE, 0))
    expected = theirs(x, src_key_padding_mask=SOURCE == 0)
    torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-5)
    assert weights.shape == (2, cfg.n_heads, 5, 5) and (weights[1, :, :, 3:] == 0).all()


@pytest.mark.parametrize("norm_first", [True, False], ids=["pre-norm", "post-norm"])
def test_the_decoder_layer_is_torchs(norm_first):
    """Masked self-attention, then cross-attention to the encoder's output, then the
    feed-forward: each sub-layer in torch's order with torch's norms."""
    cfg, ours, theirs = ours_and_theirs(DecoderLayer, nn.TransformerDecoderLayer, norm_first)
    with torch.no_grad():
        copy_attention(ours.self_attn, theirs.self_attn)
        copy_attention(ours.cross_attn, theirs.multihead_attn)
        copy_feed_forward(ours.feed_forward, theirs)
        theirs.norm1.load_state_dict(ours.self_attn_residual.norm.state_dict())
        theirs.norm2.load_state_dict(ours.cross_attn_residual.norm.state_dict())
        theirs.norm3.load_state_dict(ours.feed_forward_residual.norm.state_dict())
    x, memory = torch.randn(2, 4, cfg.d_model), torch.randn(2, 5, cfg.d_model)
    tgt_mask = padding_mask(TARGET, 0) & causal_mask(4, 4)
    out, self_weights, cross_weights = ours(x, memory, padding_mask(SOURCE, 0), tgt_mask)
    expected = theirs(
        x,
        memory,
        tgt_mask=~causal_mask(4, 4),
        tgt_key_padding_mask=TARGET == 0,
        memory_key_padding_mask=SOURCE == 0,
    )
    real = TARGET != 0  # torch's padded query rows are not ours to match: nobody reads them
    torch.testing.assert_close(out[real], expected[real], rtol=1e-5, atol=1e-5)
    assert (self_weights.triu(diagonal=1) == 0).all() and (cross_weights[1, :, :, 3:] == 0).all()


def test_the_residual_adds_the_sublayer_before_or_after_the_norm():
    residual = randomized(Residual(8, dropout=0.0, norm_first=True))
    x = torch.randn(3, 8)

    def double(h):
        return 2 * h, None

    out, _ = residual(x, double)
    torch.testing.assert_close(out, x + 2 * residual.norm(x))  # pre-norm: x + sublayer(norm(x))
    residual.norm_first = False
    out, _ = residual(x, double)
    torch.testing.assert_close(out, residual.norm(x + 2 * x))  # post-norm: norm(x + sublayer(x))


def test_the_feed_forward_is_w2_relu_w1_at_each_position():
    ff = randomized(FeedForward(8, 16, dropout=0.0))
    x = torch.randn(2, 3, 8)
    w1, w2 = ff.net[0], ff.net[3]
    torch.testing.assert_close(ff(x), w2(torch.relu(w1(x))))
    torch.testing.assert_close(ff(x)[1, 2], ff(x[1:, 2:])[0, 0])  # each position alone
