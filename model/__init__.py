"""minitrans model: a from-scratch encoder-decoder Transformer."""
from model.attention import KVCache, MultiHeadAttention, scaled_dot_product_attention
from model.config import TransformerConfig
from model.transformer import AttentionMaps, DecoderCache, Transformer

__all__ = [
    "AttentionMaps", "DecoderCache", "KVCache", "MultiHeadAttention", "Transformer", "TransformerConfig",
    "scaled_dot_product_attention",
]
