"""Invariants of the whole Transformer: causality, padding, cached decoding, gradients."""

import dataclasses

import pytest
import torch

from helpers import tiny_model
from model import Transformer, TransformerConfig

_IDS = TransformerConfig()  # the model is told its special ids; these are the defaults
PAD_ID, BOS_ID = _IDS.pad_id, _IDS.bos_id


def test_forward_returns_logits_loss_and_attention_in_fixed_places(tiny_config):
    model = tiny_model(tiny_config)
    src, tgt_in, targets = torch.randint(4, 50, (2, 8)), torch.randint(4, 50, (2, 6)), torch.randint(4, 50, (2, 6))
    targets[1, 4:] = PAD_ID
    scored = model(src, tgt_in)
    assert scored.loss is None and scored.attention is None
    trained = model(src, tgt_in, targets=targets, return_attention=True)
    assert trained.logits is None and len(trained.attention.cross) == tiny_config.n_decoder_layers
    real = targets != PAD_ID
    expected = torch.nn.functional.cross_entropy(scored.logits[real], targets[real], reduction="sum")
    torch.testing.assert_close(trained.loss, expected)


def test_decode_is_the_decoder_states_through_the_output_layer_as_forward_computes_them(tiny_config):
    model = tiny_model(tiny_config)
    src, tgt_in = torch.randint(4, 50, (2, 8)), torch.randint(4, 50, (2, 5))
    memory, src_mask, _ = model.encode(src)
    states = model.decoder_states(tgt_in, memory, src_mask).states  # (B, T, d_model)
    logits = model.decode(tgt_in, memory, src_mask)[0]
    torch.testing.assert_close(logits, model.output_proj(states))
    torch.testing.assert_close(logits, model(src, tgt_in).logits)


def test_decoder_is_causal(tiny_config):
    model = tiny_model(tiny_config)
    src = torch.randint(4, 50, (2, 8))
    tgt = torch.randint(4, 50, (2, 10))
    logits = model(src, tgt).logits
    for t in range(10):
        changed = tgt.clone()
        changed[:, t + 1 :] = torch.randint(4, 50, changed[:, t + 1 :].shape)
        changed_logits = model(src, changed).logits
        torch.testing.assert_close(changed_logits[:, : t + 1], logits[:, : t + 1], rtol=0, atol=1e-5)
        if t < 9:
            assert not torch.allclose(changed_logits[:, t + 1 :], logits[:, t + 1 :])


def test_source_padding_does_not_change_outputs(tiny_config):
    model = tiny_model(tiny_config)
    src = torch.randint(4, 50, (1, 6))
    tgt = torch.randint(4, 50, (1, 5))
    logits = model(src, tgt).logits
    padded = torch.cat([src, torch.full((1, 4), PAD_ID)], dim=1)
    padded_logits, _, attn = model(padded, tgt, return_attention=True)
    torch.testing.assert_close(padded_logits, logits, rtol=0, atol=1e-5)
    # padding columns get exactly zero weight in every layer of both kinds that see the source
    for w in attn.encoder_self + attn.cross:
        assert (w[..., 6:] == 0).all()


def test_target_padding_does_not_change_real_positions(tiny_config):
    model = tiny_model(tiny_config)
    src = torch.randint(4, 50, (1, 6))
    tgt = torch.randint(4, 50, (1, 5))
    logits = model(src, tgt).logits
    padded_logits = model(src, torch.cat([tgt, torch.full((1, 3), PAD_ID)], dim=1)).logits
    torch.testing.assert_close(padded_logits[:, :5], logits, rtol=0, atol=1e-5)


def test_attention_maps_are_distributions_of_the_right_shape(tiny_config):
    model = tiny_model(tiny_config)
    src, tgt = torch.randint(4, 50, (2, 7)), torch.randint(4, 50, (2, 4))
    src[1, 5:] = PAD_ID
    attn = model(src, tgt, return_attention=True).attention
    assert len(attn.encoder_self) == tiny_config.n_encoder_layers
    assert len(attn.decoder_self) == len(attn.cross) == tiny_config.n_decoder_layers
    for w in attn.encoder_self + attn.decoder_self + attn.cross:
        torch.testing.assert_close(w.sum(-1), torch.ones(w.shape[:-1]))
    for w in attn.decoder_self:
        assert w.shape == (2, 4, 4, 4) and (w.triu(1) == 0).all()
    assert attn.cross[0].shape == (2, 4, 4, 7)
    assert (attn.cross[0][1, ..., 5:] == 0).all()


@pytest.mark.parametrize("norm_first", [True, False])
def test_cached_decoding_equals_full_forward(tiny_config, norm_first):
    cfg = dataclasses.replace(tiny_config, norm_first=norm_first)
    model = tiny_model(cfg)
    src = torch.randint(4, 50, (3, 9))
    src[2, 6:] = PAD_ID
    tgt = torch.cat([torch.full((3, 1), BOS_ID), torch.randint(4, 50, (3, 7))], dim=1)
    full_logits = model(src, tgt).logits
    memory, src_mask, _ = model.encode(src)
    cache = model.new_cache()
    step_logits = []
    for t in range(tgt.size(1)):
        logits, self_w, _ = model.decode(tgt[:, t : t + 1], memory, src_mask, cache)
        assert self_w[0].shape[-1] == t + 1  # the new position sees all cached ones
        step_logits.append(logits)
    torch.testing.assert_close(torch.cat(step_logits, dim=1), full_logits, rtol=1e-5, atol=1e-5)
    # the source's keys and values kept as every step's products read them, not as strided views
    assert all(c.key.is_contiguous() and c.value.is_contiguous() for c in cache.cross_attn)
    # a multi-position chunk on top of a cache (the causal mask with offset) agrees too
    cache = model.new_cache()
    first, _, _ = model.decode(tgt[:, :3], memory, src_mask, cache)
    rest, _, _ = model.decode(tgt[:, 3:], memory, src_mask, cache)
    torch.testing.assert_close(torch.cat([first, rest], dim=1), full_logits, rtol=1e-5, atol=1e-5)


def test_cache_reorder_follows_batch_rows(tiny_config):
    model = tiny_model(tiny_config)
    src, tgt = torch.randint(4, 50, (3, 5)), torch.randint(4, 50, (3, 4))
    memory, src_mask, _ = model.encode(src)
    cache = model.new_cache()
    model.decode(tgt[:, :3], memory, src_mask, cache)
    index = torch.tensor([2, 0])
    cache.reorder(index, index)
    logits, _, _ = model.decode(tgt[index, 3:], memory[index], src_mask[index], cache)
    full = model(src[index], tgt[index]).logits
    torch.testing.assert_close(logits[:, 0], full[:, 3], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("use_cache", [False, True])
def test_hypotheses_sharing_a_source_decode_as_if_each_had_its_own_copy(tiny_config, use_cache):
    """Beam search's layout: G decoder rows per source row, the source kept once. Its logits equal
    those of the source repeated G times, with and without the cache, through a reshuffle of the
    hypotheses that moves rows between (never across) sources, as beam search does."""
    model = tiny_model(tiny_config)
    groups = 3
    src = torch.randint(4, 50, (2, 6))
    src[1, 4:] = tiny_config.pad_id  # a padded source: its mask must follow its hypotheses
    tgt = torch.randint(4, 50, (2 * groups, 5))
    memory, src_mask, _ = model.encode(src)
    repeated = model.decode(tgt, memory.repeat_interleave(groups, 0), src_mask.repeat_interleave(groups, 0))[0]
    if not use_cache:
        shared = model.decode(tgt, memory, src_mask)[0]
        torch.testing.assert_close(shared, repeated, rtol=1e-5, atol=1e-5)
        return
    cache = model.new_cache()
    first = model.decode(tgt[:, :3], memory, src_mask, cache)[0]
    torch.testing.assert_close(first, repeated[:, :3], rtol=1e-5, atol=1e-5)
    shuffle = torch.tensor([2, 2, 0, 4, 3, 3])  # each row stays among its source's three
    cache.reorder(shuffle)
    rows = torch.cat([tgt[shuffle, :3], tgt[:, 3:]], dim=1)
    fourth = model.decode(rows[:, 3:4], memory, src_mask, cache)[0]
    reference = model.decode(rows, memory.repeat_interleave(groups, 0), src_mask.repeat_interleave(groups, 0))[0]
    torch.testing.assert_close(fourth, reference[:, 3:4], rtol=1e-5, atol=1e-5)
    # dropping the first source: its hypotheses' rows and its one row of keys and values go
    cache.reorder(torch.arange(3, 6), torch.tensor([1]))
    last = model.decode(rows[3:, 4:], memory[1:], src_mask[1:], cache)[0]
    torch.testing.assert_close(last, reference[3:, 4:], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "variant",
    [
        {},
        {"share_embeddings": False, "tie_output": False, "tgt_vocab_size": 40},
        {"positional": "learned", "norm_first": False, "activation": "gelu"},
    ],
)
def test_every_parameter_gets_a_gradient(tiny_config, variant):
    cfg = dataclasses.replace(tiny_config, **variant)
    model = tiny_model(cfg).train()
    src, tgt = torch.randint(4, 40, (2, 6)), torch.randint(4, 40, (2, 5))
    logits = model(src, tgt).logits
    logits.logsumexp(-1).sum().backward()
    for name, p in model.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, f"{name} got no gradient"


def test_tied_and_shared_weights_are_one_tensor(tiny_config):
    model = tiny_model(tiny_config)
    assert model.output_proj.weight is model.tgt_embedding.weight is model.src_embedding.weight
    untied = tiny_model(dataclasses.replace(tiny_config, share_embeddings=False, tie_output=False))
    assert untied.output_proj.weight is not untied.tgt_embedding.weight


def test_config_rejects_inconsistent_shapes(tiny_config):
    with pytest.raises(ValueError, match="divisible"):
        dataclasses.replace(tiny_config, n_heads=5)
    with pytest.raises(ValueError, match="joint vocabulary"):
        dataclasses.replace(tiny_config, tgt_vocab_size=40)


def test_too_long_input_is_a_clear_error(tiny_config):
    model = tiny_model(tiny_config)
    with pytest.raises(ValueError, match="max_len"):
        model(torch.randint(4, 50, (1, 65)), torch.randint(4, 50, (1, 3)))


def test_masking_no_head_changes_nothing(tiny_config):
    torch.manual_seed(0)
    model = Transformer(tiny_config).eval()
    src, tgt = torch.randint(4, 50, (2, 7)), torch.randint(4, 50, (2, 5))
    before = model(src, tgt).logits
    model.mask_heads([("cross", 1, 2)])
    model.mask_heads([])  # restores every head
    after = model(src, tgt).logits
    assert torch.equal(before, after)
    assert all(m.head_gate is None for kind in model.attention_modules().values() for m in kind)


def test_a_masked_head_contributes_exactly_nothing(tiny_config):
    """With head 2 of the first cross-attention silenced, its weights are 0 and what its values
    hold cannot reach the output: changing them changes no logit by a single bit."""
    torch.manual_seed(0)
    model = Transformer(tiny_config).eval()
    src, tgt = torch.randint(4, 50, (2, 7)), torch.randint(4, 50, (2, 5))
    unmasked = model(src, tgt).logits
    model.mask_heads([("cross", 1, 2)])
    masked, _, attention = model(src, tgt, return_attention=True)
    assert not torch.equal(unmasked, masked)
    assert torch.count_nonzero(attention.cross[0][:, 1]) == 0  # (B, H, T, S): head 2 is all zeros
    assert torch.count_nonzero(attention.cross[0][:, 0]) > 0
    module = model.decoder.layers[0].cross_attn
    d, d_head = tiny_config.d_model, tiny_config.d_model // tiny_config.n_heads
    with torch.no_grad():  # W_V rows of head 2 (in_proj stacks W_Q, W_K, W_V)
        module.in_proj.weight[2 * d + d_head : 2 * d + 2 * d_head] += torch.randn(d_head, d)
    changed = model(src, tgt).logits
    assert torch.equal(masked, changed)


def test_mask_heads_names_the_valid_ranges(tiny_config):
    model = Transformer(tiny_config)
    for spec, message in [
        (("cros", 1, 1), "kind 'cros' is not one of encoder_self, decoder_self, cross"),
        (("cross", 3, 1), "cross has layers 1-2, not 3"),
        (("encoder_self", 1, 5), "layers have heads 1-4, not 5"),
    ]:
        with pytest.raises(ValueError, match=message):
            model.mask_heads([spec])
