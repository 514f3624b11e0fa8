"""model/masks.py: which keys each query may see. True means "may attend"."""

import torch

from model.masks import causal_mask, decoder_self_attention_mask, padding_mask


def test_the_padding_mask_hides_padded_keys_from_every_query():
    tokens = torch.tensor([[5, 6, 7], [8, 0, 0]])  # pad id 0: the second sentence is one piece long
    mask = padding_mask(tokens, pad_id=0)
    assert mask.shape == (2, 1, 1, 3)  # broadcast over heads and queries
    assert mask[:, 0, 0].tolist() == [[True, True, True], [True, False, False]]


def test_the_causal_mask_lets_position_i_see_positions_up_to_i():
    mask = causal_mask(4, 4)
    assert torch.equal(mask, torch.ones(4, 4, dtype=torch.bool).tril())
    assert all(mask[i, j] == (j <= i) for i in range(4) for j in range(4))


def test_causal_mask_offset_for_incremental_decoding():
    """New queries sit at the end of the cached keys: the last of them sees every key."""
    assert torch.equal(causal_mask(1, 4), torch.ones(1, 4, dtype=torch.bool))
    assert torch.equal(causal_mask(2, 4), torch.tensor([[1, 1, 1, 0], [1, 1, 1, 1]], dtype=torch.bool))
    assert torch.equal(causal_mask(2, 4), causal_mask(4, 4)[2:])  # the last rows of the full mask


def test_the_decoder_mask_is_causal_and_hides_padding():
    tgt = torch.tensor([[1, 5, 6], [1, 7, 0]])
    mask = decoder_self_attention_mask(tgt, pad_id=0)
    assert mask.shape == (2, 1, 3, 3)
    assert torch.equal(mask[0, 0], causal_mask(3, 3))
    expected = torch.tensor([[1, 0, 0], [1, 1, 0], [1, 1, 0]], dtype=torch.bool)  # the pad key is seen by none
    assert torch.equal(mask[1, 0], expected)
