"""Token embeddings and positional encodings."""

import math

import torch
from torch import Tensor, nn


class TokenEmbedding(nn.Module):
    """Embedding lookup scaled by sqrt(d_model), as in "Attention Is All You Need" (3.4).

    The scale lifts embeddings initialised with std d_model^-0.5 to unit size, matching the
    positional encodings they are added to; with tied weights the same matrix then gives
    output logits of unit scale.
    """

    def __init__(self, vocab_size: int, d_model: int, pad_id: int) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, d_model, padding_idx=pad_id)
        self.scale = math.sqrt(d_model)

    @property
    def weight(self) -> Tensor:
        return self.embedding.weight

    def forward(self, tokens: Tensor) -> Tensor:
        return self.embedding(tokens) * self.scale  # (B, T) -> (B, T, d_model)


def sinusoid_table(max_len: int, d_model: int) -> Tensor:
    """PE[pos, 2i] = sin(pos / 10000^(2i/d)), PE[pos, 2i+1] = cos(...): (max_len, d_model)."""
    position = torch.arange(max_len, dtype=torch.float32)[:, None]  # (max_len, 1)
    inv_freq = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model))
    table = torch.zeros(max_len, d_model)
    table[:, 0::2] = torch.sin(position * inv_freq)
    table[:, 1::2] = torch.cos(position * inv_freq[: d_model // 2])
    return table


class PositionalEncoding(nn.Module):
    """Adds position information: fixed sinusoids (default) or a learned table."""

    def __init__(self, d_model: int, max_len: int, learned: bool = False) -> None:
        super().__init__()
        self.max_len = max_len
        if learned:
            self.table = nn.Parameter(torch.randn(max_len, d_model) * 0.02)
        else:
            self.register_buffer("table", sinusoid_table(max_len, d_model), persistent=False)

    def forward(self, x: Tensor, offset: int = 0) -> Tensor:
        """x: (B, T, d_model), whose first position is `offset` (non-zero when decoding step by step)."""
        end = offset + x.size(1)
        if end > self.max_len:
            raise ValueError(f"sequence of {end} positions is longer than the model's max_len {self.max_len}")
        return x + self.table[offset:end]
