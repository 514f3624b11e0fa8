"""Scaled dot-product attention and multi-head attention, written out in full.

    Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V, masked keys given weight 0

Both functions return the attention weights next to the output, so that callers (attention
maps, tests) can look at them without hooks or hidden module state. The other values inside a
call (the heads' queries, keys and values, each head's output, their projection by W_O) are
kept only on request: MultiHeadAttention.recording.

Read from the top: the formula, the heads merged, multi-head attention; after them what
step-by-step decoding, beam search and the analysis tools need.
"""

from __future__ import annotations  # the signatures name the parts defined after the attention

import math
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from model.dropout import Dropout


def scaled_dot_product_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    mask: Tensor | None = None,
    dropout: nn.Module | None = None,
) -> tuple[Tensor, Tensor]:
    """softmax(Q K^T / sqrt(d_k)) V over the last two dimensions.

    Args:
        query: (B, H, T_q, d_k)
        key: (B, H, T_k, d_k)
        value: (B, H, T_k, d_v)
        mask: bool, broadcastable to (B, H, T_q, T_k); False entries get weight exactly 0.
        dropout: applied to the weights before they mix the values (training only).

    Returns:
        output (B, H, T_q, d_v) and the weights (B, H, T_q, T_k), taken before dropout.
        A query row whose keys are all masked gets all-zero weights and a zero output
        instead of NaN.
    """
    d_k = query.size(-1)
    scores = query @ key.transpose(-2, -1) / math.sqrt(d_k)  # (B, H, T_q, T_k)
    if mask is not None:
        # The most negative finite value rather than -inf: a fully masked row then gives a
        # uniform softmax (no NaN, no NaN gradient) that the fill below turns into zeros.
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = F.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~mask, 0.0)
    mixing = dropout(weights) if dropout is not None else weights
    return mixing @ value, weights


def merge_heads(heads: Tensor) -> Tensor:
    """(B, H, T, d_head) -> (B, T, H * d_head): each position's heads side by side, head 1's
    numbers first (the inverse of MultiHeadAttention.split_heads)."""
    b, h, t, d_head = heads.shape
    return heads.transpose(1, 2).reshape(b, t, h * d_head)  # (B, T, d_model)


class MultiHeadAttention(nn.Module):
    """Multi-head attention, self- or cross- (`cross`, said when it is built).

    Self-attention: queries, keys and values are projections of the same sequence. Cross-
    attention: queries from the decoder's states, keys and values from the encoder's output.

    Beam search may give cross-attention G query rows to every key/value row (its G hypotheses of
    one source): the G rows then attend to their shared source in one product, and the source is
    projected and kept once instead of G times. That is the fast path; with the model's `plain`
    setting beam search gives each hypothesis its own copy of the source instead (model/search.py),
    and G is 1.
    """

    head_gate: Tensor | None  # a buffer (see __init__), which a type checker cannot see through

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0, cross: bool = False, plain: bool = False):
        super().__init__()
        assert d_model % n_heads == 0, "d_model must be divisible by n_heads"
        self.n_heads = n_heads
        self.d_head = d_model // n_heads
        self.d_model = d_model
        self.cross = cross
        # W_Q, W_K, W_V stacked in one (3 d_model, d_model) matrix, as PyTorch's own attention does:
        # self-attention then projects its input with one matmul instead of three.
        self.in_proj = nn.Linear(d_model, 3 * d_model)
        self.out_proj = nn.Linear(d_model, d_model)  # W_O
        self.dropout = Dropout(dropout, plain)
        # (H,) 1 keeps a head, 0 silences it (Transformer.mask_heads); None: all heads, no cost.
        # A buffer so that it follows the module to its device; never saved in checkpoints.
        self.register_buffer("head_gate", None, persistent=False)
        # a list while recording (Transformer.recording_attention): every call appends its
        # AttentionSteps; None, the usual case, keeps nothing
        self.recording: list[AttentionSteps] | None = None

    def split_heads(self, x: Tensor) -> Tensor:
        """(B, T, d_model) -> (B, H, T, d_head): each head gets its own d_head of the features."""
        b, t, _ = x.shape
        return x.view(b, t, self.n_heads, self.d_head).transpose(1, 2)  # (B, H, T, d_head)

    def project(
        self, query: Tensor, key_value: Tensor | None, cache: KVCache | None
    ) -> tuple[Tensor, Tensor | None, Tensor | None]:
        """q = x W_Q, k = y W_K, v = y W_V, each (B, T, d_model), with y = x in self-attention.
        Cross-attention with a filled static cache gives k = v = None: the encoder's keys and
        values were projected once per sentence and are in the cache."""
        d = self.d_model
        if not self.cross:  # self-attention: the three projections of x in one matmul
            assert key_value is None, "self-attention attends over its query: give no key_value"
            q, k, v = self.in_proj(query).split(d, dim=-1)  # 3 x (B, T, d_model)
            return q, k, v
        w_q, w_kv = self.in_proj.weight.split([d, 2 * d])
        b_q, b_kv = self.in_proj.bias.split([d, 2 * d])
        q = F.linear(query, w_q, b_q)
        if cache is not None and cache.static and cache.key is not None:
            return q, None, None
        assert key_value is not None, "cross-attention attends to key_value: the encoder's output"
        k, v = F.linear(key_value, w_kv, b_kv).split(d, dim=-1)  # 2 x (B, T_k, d_model)
        return q, k, v

    def attend(self, q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None) -> tuple[Tensor, Tensor]:
        """Every head's softmax(q k^T / sqrt(d_head)) v: heads (B, H, T_q, d_head) and weights
        (B, H, T_q, T_k). With G query rows to each key/value row (beam search's fast path),
        the G rows of a source are stacked and attend to it in one product. A head the
        `head_gate` sets to 0 gives zeros, its weights too; 1 leaves it as it is."""
        groups = q.size(0) // k.size(0)
        if groups == 1:
            heads, weights = scaled_dot_product_attention(q, k, v, mask, self.dropout)
        else:
            stacked = stack_groups(q, groups)  # (B/G, H, G*T_q, d_head)
            heads, weights = scaled_dot_product_attention(stacked, k, v, mask, self.dropout)
            heads, weights = unstack_groups(heads, groups), unstack_groups(weights, groups)  # (B, H, T_q, ...)
        if self.head_gate is not None:  # the analysis tools' switch (Transformer.mask_heads)
            # a head's output is its weights times the values: gating either gates both
            gate = self.head_gate.view(1, -1, 1, 1)  # (1, H, 1, 1)
            heads, weights = heads * gate, weights * gate
        return heads, weights

    def forward(
        self,
        query: Tensor,
        key_value: Tensor | None = None,
        mask: Tensor | None = None,
        cache: KVCache | None = None,
    ) -> tuple[Tensor, Tensor]:
        """
        Args:
            query: (B, T_q, d_model) the states that ask.
            key_value: cross-attention's (B / G, T_k, d_model) encoder output (row b serves query
                rows b*G ... b*G + G-1; G = 1 but in beam search's fast path); ignored once a
                static cache is filled. Self-attention attends over `query` itself: None.
            mask: bool, broadcastable to (B, H, T_q, T_k_total), True = may attend; with G > 1,
                one row per key/value row, (B / G, 1, 1, T_k).
            cache: keys/values of earlier steps; updated in place.

        Returns:
            output (B, T_q, d_model) and per-head weights (B, H, T_q, T_k_total).
        """
        # 1. project: q = x W_Q, k = y W_K, v = y W_V
        q, k, v = self.project(query, key_value, cache)
        # 2. split each into heads: (B, H, T, d_head)
        q = self.split_heads(q)
        if k is not None and v is not None:
            k, v = self.split_heads(k), self.split_heads(v)
        if cache is not None:  # the keys and values of earlier steps, or the cached source's
            k, v = (cache.key, cache.value) if k is None or v is None else cache.update(k, v)
        assert k is not None and v is not None
        # 3. attend: each head's softmax(q k^T / sqrt(d_head)) v
        heads, weights = self.attend(q, k, v, mask)  # (B, H, T_q, d_head), (B, H, T_q, T_k)
        # 4. merge the heads: (B, T_q, d_model)
        merged = merge_heads(heads)
        # 5. project by W_O
        output = self.out_proj(merged)
        if self.recording is not None:
            self.recording.append(AttentionSteps(q, k, v, heads, output))
        return output, weights


# What decoding and looking inside need, after the attention they serve: the key/value cache of
# step-by-step decoding, the values a call computed on the way, and beam search's grouped rows.


class KVCache:
    """Projected keys and values of one attention module, kept between decoding steps.

    Self-attention caches grow by the new positions at every step; a static cache (cross-
    attention) is filled once from the encoder output, kept contiguous, and then reused as it is:
    the products of every step read it as it lies, where a strided view (the projection's split)
    would be copied at every step.
    """

    def __init__(self, static: bool = False) -> None:
        self.static = static
        self.key: Tensor | None = None  # (B, H, T, d_head)
        self.value: Tensor | None = None

    def __len__(self) -> int:
        return 0 if self.key is None else self.key.size(2)

    def update(self, key: Tensor, value: Tensor) -> tuple[Tensor, Tensor]:
        """Store the new keys/values (appended unless static) and return all of them."""
        if self.static:
            key, value = key.contiguous(), value.contiguous()
        elif self.key is not None and self.value is not None:
            key = torch.cat([self.key, key], dim=2)
            value = torch.cat([self.value, value], dim=2)
        self.key, self.value = key, value
        return key, value

    def reorder(self, index: Tensor) -> None:
        """Keep batch rows `index` (beam search reshuffles and prunes hypotheses; a static cache holds
        one row per source, shared by its beams, and is only pruned)."""
        if self.key is not None and self.value is not None:
            self.key = self.key.index_select(0, index)
            self.value = self.value.index_select(0, index)


class AttentionSteps(NamedTuple):
    """What one multi-head attention call computed on the way, for looking inside it: together with
    its weights, every value of softmax(Q K^T / sqrt(d_k)) V and of the heads' merge."""

    query: Tensor  # (B, H, T_q, d_head) q = x W_Q, split into heads
    key: Tensor  # (B, H, T_k, d_head) k = y W_K (y = x in self-attention)
    value: Tensor  # (B, H, T_k, d_head) v = y W_V
    heads: Tensor  # (B, H, T_q, d_head) each head's output: its weights times the values
    output: Tensor  # (B, T_q, d_model) the heads concatenated and projected by W_O


def stack_groups(x: Tensor, groups: int) -> Tensor:
    """(B*G, H, T, d) -> (B, H, G*T, d): the rows of each run of G consecutive batch rows (beam
    search's G hypotheses of one sentence) side by side, so that one product with the sentence's
    keys serves them all."""
    bg, h, t, d = x.shape
    # (B, G, H, T, d) -> (B, H, G, T, d) -> (B, H, G*T, d)
    return x.view(bg // groups, groups, h, t, d).transpose(1, 2).reshape(bg // groups, h, groups * t, d)


def unstack_groups(x: Tensor, groups: int) -> Tensor:
    """(B, H, G*T, d) -> (B*G, H, T, d), the inverse of `stack_groups`."""
    b, h, gt, d = x.shape
    # (B, H, G, T, d) -> (B, G, H, T, d) -> (B*G, H, T, d)
    return x.view(b, h, groups, gt // groups, d).transpose(1, 2).reshape(b * groups, h, gt // groups, d)
