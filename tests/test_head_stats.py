"""Per-head attention statistics (analysis/head_stats.py) on hand-made attention with known answers."""

import pytest
import torch

from analysis.head_stats import STATISTICS, map_sums, punctuation_ids, scalar_layout

T = 5


def averages(weights, causal=False, kind="encoder_self", query_len=T, key_len=T, boundary=None, punctuation=None):
    b = weights.size(0)
    query_mask = torch.arange(weights.size(2))[None, :].expand(b, -1) < query_len
    key_mask = torch.arange(weights.size(3))[None, :].expand(b, -1) < key_len
    none = torch.zeros_like(key_mask)
    sums = map_sums(
        weights,
        query_mask,
        key_mask,
        none if boundary is None else boundary,
        none if punctuation is None else punctuation,
        causal,
        STATISTICS[kind],
    )
    return {name: (total / count).tolist() for name, (total, count) in sums.items()}


def test_one_hot_and_uniform_heads():
    one_hot = torch.zeros(1, 1, T, T)
    one_hot[0, 0, :, 2] = 1.0  # every query on key 2
    uniform = torch.full((1, 1, T, T), 1.0 / T)
    weights = torch.cat([one_hot, uniform], dim=1)  # (B=1, H=2, T, T)
    stats = averages(weights)
    assert stats["entropy"] == pytest.approx([0.0, 1.0], abs=1e-6)
    assert stats["confidence"] == pytest.approx([1.0, 1.0 / T])


def test_previous_and_next_token_heads():
    previous = torch.zeros(1, 1, T, T)
    previous[0, 0, 0, 0] = 1.0  # the first query has no previous position
    for i in range(1, T):
        previous[0, 0, i, i - 1] = 1.0
    following = torch.zeros(1, 1, T, T)
    for i in range(T - 1):
        following[0, 0, i, i + 1] = 1.0
    following[0, 0, T - 1, T - 1] = 1.0
    stats = averages(torch.cat([previous, following], dim=1))
    assert stats["previous"] == pytest.approx([1.0, 0.0])
    assert stats["next"] == pytest.approx([0.0, 1.0])


def test_causal_entropy_counts_only_the_keys_a_query_may_see():
    causal_uniform = torch.tril(torch.ones(T, T)) / torch.arange(1, T + 1)[:, None]  # query i: 1/(i+1) on 0..i
    stats = averages(causal_uniform[None, None], causal=True, kind="decoder_self")
    assert stats["entropy"] == pytest.approx([1.0], abs=1e-6)  # uniform over what it sees


def test_boundary_punctuation_and_padding():
    weights = torch.zeros(1, 1, 3, 4)
    weights[0, 0, :, 3] = 1.0  # every query on key 3, which is padding for the 3-piece sentence...
    weights[0, 0, :2, 3] = 0.0
    weights[0, 0, :2, 2] = 1.0  # ...except that real queries 0 and 1 look at key 2, the last piece
    boundary = torch.tensor([[False, False, True, False]])
    punctuation = torch.tensor([[False, True, False, False]])
    stats = averages(weights, kind="cross", query_len=2, key_len=3, boundary=boundary, punctuation=punctuation)
    assert stats["boundary"] == [1.0] and stats["punctuation"] == [0.0]


def test_diagonal_cross_attention_is_diagonal_and_monotonic():
    diagonal = torch.eye(T)[None, None]
    reversed_ = torch.eye(T).flip(1)[None, None]
    stats = averages(torch.cat([diagonal, reversed_], dim=1), kind="cross")
    assert stats["diagonality"] == pytest.approx([1.0, 1.0 - 0.6])  # reversed: mean |1 - 2i/4| = 0.6
    assert stats["monotonicity"] == pytest.approx([1.0, 0.0])


def test_punctuation_pieces_and_layout():
    assert punctuation_ids(["\u2581.", ",", "\u2581Hund", "\u2581", "-)", "a."]).tolist() == [
        True,
        True,
        False,
        False,
        True,
        False,
    ]
    layout = scalar_layout(4, 3)
    assert layout["heads: next"] == {
        f"encoder_self layer {i}": ["Multiline", [rf"heads/next/encoder_self/layer_{i}/head_\d+"]] for i in (1, 2, 3, 4)
    }
    assert len(layout["heads: entropy"]) == 4 + 3 + 3
