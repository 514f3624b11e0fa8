"""minitrans model: a from-scratch encoder-decoder Transformer."""

from model.attention import AttentionSteps, KVCache, MultiHeadAttention, scaled_dot_product_attention
from model.config import TransformerConfig
from model.transformer import AttentionMaps, DecoderCache, DecoderOutput, Transformer, TransformerOutput

__all__ = [
    "AttentionMaps",
    "AttentionSteps",
    "DecoderCache",
    "DecoderOutput",
    "KVCache",
    "MultiHeadAttention",
    "Transformer",
    "TransformerConfig",
    "TransformerOutput",
    "scaled_dot_product_attention",
]
