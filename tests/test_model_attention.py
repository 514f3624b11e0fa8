"""model/attention.py: our attention against PyTorch's reference implementations, and its
invariants (the masks it takes: test_masks.py)."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from model.attention import MultiHeadAttention, scaled_dot_product_attention
from model.masks import causal_mask, decoder_self_attention_mask, padding_mask


def random_padded_tokens(batch, length, pad_id=0, seed=0):
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(4, 50, (batch, length), generator=g)
    lengths = torch.randint(1, length + 1, (batch,), generator=g)
    lengths[0] = length  # at least one full row
    tokens[torch.arange(length)[None, :] >= lengths[:, None]] = pad_id
    return tokens


@pytest.mark.parametrize("causal", [False, True])
def test_sdpa_matches_torch(causal):
    torch.manual_seed(0)
    q, k, v = torch.randn(3, 4, 6, 8), torch.randn(3, 4, 6, 8), torch.randn(3, 4, 6, 8)
    tokens = random_padded_tokens(3, 6)
    mask = decoder_self_attention_mask(tokens, 0) if causal else padding_mask(tokens, 0)
    ours, weights = scaled_dot_product_attention(q, k, v, mask)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    valid_rows = mask.expand(3, 4, 6, 6).any(-1)  # rows with at least one visible key
    torch.testing.assert_close(ours[valid_rows], ref[valid_rows], rtol=1e-5, atol=1e-6)
    assert weights.shape == (3, 4, 6, 6)


def test_fully_masked_row_gives_zeros_not_nan():
    q = torch.randn(1, 2, 3, 4, requires_grad=True)
    k, v = torch.randn(1, 2, 5, 4), torch.randn(1, 2, 5, 4)
    mask = torch.zeros(1, 1, 3, 5, dtype=torch.bool)
    mask[..., 0, :2] = True  # only the first query row sees anything
    out, weights = scaled_dot_product_attention(q, k, v, mask)
    assert torch.isfinite(out).all() and torch.isfinite(weights).all()
    assert (weights[..., 1:, :] == 0).all() and (out[..., 1:, :] == 0).all()
    out.sum().backward()
    assert torch.isfinite(q.grad).all()


def test_weights_sum_to_one_and_masked_entries_are_exactly_zero():
    torch.manual_seed(1)
    tokens = random_padded_tokens(4, 7, seed=1)
    mask = decoder_self_attention_mask(tokens, 0)
    _, weights = scaled_dot_product_attention(
        torch.randn(4, 2, 7, 8), torch.randn(4, 2, 7, 8), torch.randn(4, 2, 7, 8), mask
    )
    full = mask.expand_as(weights)
    assert (weights[~full] == 0).all()
    torch.testing.assert_close(weights.sum(-1), torch.ones(4, 2, 7))
    assert (weights.triu(diagonal=1) == 0).all(), "decoder self-attention must be lower-triangular"


def copy_into_torch_mha(ours: MultiHeadAttention, d_model: int, n_heads: int) -> nn.MultiheadAttention:
    ref = nn.MultiheadAttention(d_model, n_heads, batch_first=True)
    with torch.no_grad():
        ref.in_proj_weight.copy_(ours.in_proj.weight)
        ref.in_proj_bias.copy_(ours.in_proj.bias)
        ref.out_proj.weight.copy_(ours.out_proj.weight)
        ref.out_proj.bias.copy_(ours.out_proj.bias)
    return ref.eval()


@pytest.mark.parametrize("kind", ["self", "cross", "causal_self"])
def test_multi_head_attention_matches_torch(kind):
    torch.manual_seed(2)
    d_model, n_heads = 32, 4
    ours = MultiHeadAttention(d_model, n_heads, cross=kind == "cross").eval()
    ref = copy_into_torch_mha(ours, d_model, n_heads)
    src_tokens = random_padded_tokens(3, 9, seed=2)
    memory = torch.randn(3, 9, d_model)
    x = memory if kind != "cross" else torch.randn(3, 5, d_model)
    if kind == "causal_self":
        mask = causal_mask(9, 9)
        out, w = ours(x, mask=mask)
        ref_out, ref_w = ref(x, x, x, attn_mask=~mask, average_attn_weights=False)
    else:
        mask = padding_mask(src_tokens, 0)
        out, w = ours(x, memory, mask) if kind == "cross" else ours(x, mask=mask)  # self: x is memory
        ref_out, ref_w = ref(
            x, memory, memory, key_padding_mask=~padding_mask(src_tokens, 0)[:, 0, 0], average_attn_weights=False
        )
    torch.testing.assert_close(out, ref_out, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(w, ref_w, rtol=1e-5, atol=1e-6)


def test_queries_in_groups_attend_to_their_shared_keys_as_torch_does_with_copies():
    """Cross-attention with G query rows per key/value row (beam search's hypotheses sharing a
    source) equals torch's attention given each query row its own copy of the keys and values."""
    torch.manual_seed(4)
    d_model, n_heads, groups = 32, 4, 3
    ours = MultiHeadAttention(d_model, n_heads, cross=True).eval()
    ref = copy_into_torch_mha(ours, d_model, n_heads)
    src_tokens = random_padded_tokens(2, 9, seed=4)
    memory = torch.randn(2, 9, d_model)
    x = torch.randn(2 * groups, 4, d_model)
    out, w = ours(x, memory, padding_mask(src_tokens, 0))
    copies = memory.repeat_interleave(groups, 0)
    ref_out, ref_w = ref(
        x,
        copies,
        copies,
        key_padding_mask=~padding_mask(src_tokens, 0)[:, 0, 0].repeat_interleave(groups, 0),
        average_attn_weights=False,
    )
    torch.testing.assert_close(out, ref_out, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(w, ref_w, rtol=1e-5, atol=1e-6)


def test_self_attention_one_matmul_equals_separate_projections():
    """Self-attention projects Q, K, V with one matmul; a cross-attention module with the same
    weights (separate query and key/value projections) given the same sequence twice must give
    the same result."""
    torch.manual_seed(3)
    self_attention = MultiHeadAttention(32, 4).eval()
    cross_attention = MultiHeadAttention(32, 4, cross=True).eval()
    cross_attention.load_state_dict(self_attention.state_dict())
    x = torch.randn(2, 7, 32)
    fused_out, fused_w = self_attention(x)
    split_out, split_w = cross_attention(x, x.clone())
    torch.testing.assert_close(fused_out, split_out)
    torch.testing.assert_close(fused_w, split_w)


def test_a_module_is_self_or_cross_attention_as_built():
    """Self-attention attends over its query alone and refuses a second sequence; cross-attention
    needs the encoder's output."""
    torch.manual_seed(5)
    module = MultiHeadAttention(32, 4).eval()
    x, memory = torch.randn(2, 7, 32), torch.randn(2, 9, 32)
    assert module(x)[0].shape == (2, 7, 32)
    with pytest.raises(AssertionError, match="give no key_value"):
        module(x, memory)
    with pytest.raises(AssertionError, match="encoder's output"):
        MultiHeadAttention(32, 4, cross=True)(x)


def test_recorded_steps_are_the_computation_of_the_returned_weights_and_output():
    """What Transformer.recording_attention keeps of each call is the formula's every value:
    q, k, v are the input's projections by W_Q, W_K, W_V split into heads, softmax(q k^T /
    sqrt(d_k)) under the mask is the weights returned, weights @ v each head's output, and those
    concatenated and projected by W_O the layer's output."""
    from helpers.models import tiny_model

    model = tiny_model()
    src, tgt = random_padded_tokens(3, 7, seed=1), random_padded_tokens(3, 5, seed=2)
    tgt[:, 0] = model.cfg.bos_id
    with model.recording_attention() as record:
        attention = model(src, tgt, return_attention=True).attention
    assert all(module.recording is None for layers in model.attention_modules().values() for module in layers)
    masks = {
        "encoder_self": padding_mask(src, model.cfg.pad_id),
        "cross": padding_mask(src, model.cfg.pad_id),
        "decoder_self": decoder_self_attention_mask(tgt, model.cfg.pad_id),
    }
    modules = model.attention_modules()
    for kind, layers in record.items():
        for layer, calls in enumerate(layers):
            assert len(calls) == 1  # one teacher-forced pass: one call of each module
            q, k, v, heads, output = calls[0]
            d_head = model.cfg.d_model // model.cfg.n_heads
            assert q.shape[1:] == (model.cfg.n_heads, q.size(2), d_head)
            scores = (q @ k.transpose(-2, -1) / d_head**0.5).masked_fill(~masks[kind], float("-inf"))
            weights = scores.softmax(-1).nan_to_num(0.0)  # (B, H, T_q, T_k); padded query rows: all masked
            torch.testing.assert_close(weights, getattr(attention, kind)[layer])
            torch.testing.assert_close(heads, weights @ v)
            w_o = modules[kind][layer].out_proj
            merged = heads.transpose(1, 2).flatten(2)  # (B, T_q, d_model): head 1's numbers, then head 2's...
            torch.testing.assert_close(output, w_o(merged))
    # q is its input's projection by W_Q, split into heads: the first encoder layer's input is
    # the embedded source, normed first under pre-norm
    embedded = model.positional(model.src_embedding(src))  # (B, S, d_model)
    if model.cfg.norm_first:
        embedded = model.encoder.layers[0].self_attn_residual.norm(embedded)
    in_proj = modules["encoder_self"][0].in_proj
    d = model.cfg.d_model
    q_reference = F.linear(embedded, in_proj.weight[:d], in_proj.bias[:d]).view(3, 7, model.cfg.n_heads, -1)
    q_reference = q_reference.transpose(1, 2)  # (B, H, S, d_head)
    torch.testing.assert_close(record["encoder_self"][0][0].query, q_reference)
    # outside the context nothing is kept
    model(src, tgt)
    assert all(len(calls) == 1 for layers in record.values() for calls in layers)
