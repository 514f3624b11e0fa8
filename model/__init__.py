"""minitrans model: a from-scratch encoder-decoder Transformer."""
from model.attention import KVCache, MultiHeadAttention, scaled_dot_product_attention
from model.config import BOS_ID, EOS_ID, PAD_ID, UNK_ID, TransformerConfig
from model.transformer import AttentionMaps, DecoderCache, Transformer

__all__ = [
    "AttentionMaps", "BOS_ID", "DecoderCache", "EOS_ID", "KVCache", "MultiHeadAttention", "PAD_ID",
    "Transformer", "TransformerConfig", "UNK_ID", "scaled_dot_product_attention",
]
