"""model/embedding.py: the scaled token embedding and the positional encodings, against the paper's
formulas written out with Python's math."""

import math

import pytest
import torch

from model.embedding import PositionalEncoding, TokenEmbedding, sinusoid_table


def test_sinusoids_are_the_papers_formula():
    d_model = 6
    table = sinusoid_table(50, d_model)
    for pos in (0, 1, 7, 49):
        for i in range(d_model // 2):
            angle = pos / 10000 ** (2 * i / d_model)
            assert table[pos, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-5)
            assert table[pos, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-5)


def test_an_offset_continues_the_positions_where_step_by_step_decoding_is():
    encoding = PositionalEncoding(8, max_len=20)
    x = torch.randn(2, 7, 8)
    whole = encoding(x)
    torch.testing.assert_close(encoding(x[:, 3:], offset=3), whole[:, 3:])
    with pytest.raises(ValueError, match="longer than the model's max_len 20"):
        encoding(x, offset=14)


def test_a_learned_table_is_a_parameter_and_the_fixed_one_is_not_saved():
    assert [name for name, _ in PositionalEncoding(8, 20, learned=True).named_parameters()] == ["table"]
    fixed = PositionalEncoding(8, 20)
    assert not list(fixed.parameters()) and "table" not in fixed.state_dict()  # rebuilt, never loaded


def test_tokens_are_scaled_by_sqrt_d_model_and_padding_learns_nothing():
    embedding = TokenEmbedding(10, 16, pad_id=0)
    tokens = torch.tensor([[3, 0, 5]])
    out = embedding(tokens)
    torch.testing.assert_close(out, embedding.weight[tokens] * 4.0)
    out.sum().backward()
    assert embedding.weight.grad[0].abs().sum() == 0 and embedding.weight.grad[3].abs().sum() > 0
