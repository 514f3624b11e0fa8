"""Encoder and decoder layers: attention and feed-forward sub-layers with residuals."""

from torch import Tensor, nn

from model.attention import KVCache, MultiHeadAttention
from model.config import TransformerConfig
from model.dropout import Dropout


class FeedForward(nn.Module):
    """Position-wise FFN(x) = W_2 act(W_1 x + b_1) + b_2."""

    def __init__(self, d_model: int, d_ff: int, dropout: float, activation: str = "relu", plain: bool = False) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(d_model, d_ff),
            nn.ReLU() if activation == "relu" else nn.GELU(),
            Dropout(dropout, plain),
            nn.Linear(d_ff, d_model),
        )

    def forward(self, x: Tensor) -> Tensor:
        return self.net(x)


class Residual(nn.Module):
    """x + dropout(sublayer(norm(x))) (pre-norm) or norm(x + dropout(sublayer(x))) (post-norm).

    Pre-norm keeps an identity path from input to output, which is why it trains without a
    long warmup; post-norm is the original paper's arrangement.
    """

    def __init__(self, d_model: int, dropout: float, norm_first: bool, plain: bool = False) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(d_model)
        self.dropout = Dropout(dropout, plain)
        self.norm_first = norm_first

    def forward(self, x: Tensor, sublayer) -> tuple[Tensor, Tensor | None]:
        """`sublayer` maps a (B, T, d_model) tensor to (output, attention weights or None)."""
        if self.norm_first:
            out, weights = sublayer(self.norm(x))
            return x + self.dropout(out), weights
        out, weights = sublayer(x)
        return self.norm(x + self.dropout(out)), weights


class EncoderLayer(nn.Module):
    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        self.self_attn = MultiHeadAttention(cfg.d_model, cfg.n_heads, cfg.attention_dropout, plain=cfg.plain)
        self.feed_forward = FeedForward(cfg.d_model, cfg.d_ff, cfg.dropout, cfg.activation, cfg.plain)
        self.self_attn_residual = Residual(cfg.d_model, cfg.dropout, cfg.norm_first, cfg.plain)
        self.feed_forward_residual = Residual(cfg.d_model, cfg.dropout, cfg.norm_first, cfg.plain)

    def forward(self, x: Tensor, src_mask: Tensor) -> tuple[Tensor, Tensor]:
        """
        Args:
            x: (B, S, d_model) source states.
            src_mask: (B, 1, 1, S) key padding mask.

        Returns:
            (B, S, d_model) and self-attention weights (B, H, S, S).
        """
        x, self_attn_weights = self.self_attn_residual(x, lambda h: self.self_attn(h, mask=src_mask))
        x, _ = self.feed_forward_residual(x, lambda h: (self.feed_forward(h), None))
        return x, self_attn_weights


class DecoderLayer(nn.Module):
    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        self.self_attn = MultiHeadAttention(cfg.d_model, cfg.n_heads, cfg.attention_dropout, plain=cfg.plain)
        self.cross_attn = MultiHeadAttention(
            cfg.d_model, cfg.n_heads, cfg.attention_dropout, cross=True, plain=cfg.plain
        )
        self.feed_forward = FeedForward(cfg.d_model, cfg.d_ff, cfg.dropout, cfg.activation, cfg.plain)
        self.self_attn_residual = Residual(cfg.d_model, cfg.dropout, cfg.norm_first, cfg.plain)
        self.cross_attn_residual = Residual(cfg.d_model, cfg.dropout, cfg.norm_first, cfg.plain)
        self.feed_forward_residual = Residual(cfg.d_model, cfg.dropout, cfg.norm_first, cfg.plain)

    def forward(
        self,
        x: Tensor,
        memory: Tensor,
        src_mask: Tensor,
        tgt_mask: Tensor | None,
        self_attn_cache: KVCache | None = None,
        cross_attn_cache: KVCache | None = None,
    ) -> tuple[Tensor, Tensor, Tensor]:
        """
        Args:
            x: (B, T, d_model) target states (T new positions when decoding with a cache).
            memory: (B / G, S, d_model) encoder output, one row for every G target rows (G = 1
                but in beam search, whose G hypotheses of a sentence share it).
            src_mask: (B / G, 1, 1, S) source key padding mask.
            tgt_mask: (B, 1, T, T_total) causal + padding mask; None when every query may see
                every key, as for one new position on top of a cache.
            self_attn_cache / cross_attn_cache: keys and values of earlier steps.

        Returns:
            (B, T, d_model), self-attention weights (B, H, T, T_total) and cross-attention
            weights (B, H, T, S).
        """
        # 1. masked self-attention over the target prefix
        x, self_attn_weights = self.self_attn_residual(
            x, lambda h: self.self_attn(h, mask=tgt_mask, cache=self_attn_cache)
        )
        # 2. cross-attention: queries from the decoder, keys and values from the encoder
        x, cross_attn_weights = self.cross_attn_residual(
            x, lambda h: self.cross_attn(h, memory, src_mask, cross_attn_cache)
        )
        # 3. position-wise feed-forward
        x, _ = self.feed_forward_residual(x, lambda h: (self.feed_forward(h), None))
        return x, self_attn_weights, cross_attn_weights
