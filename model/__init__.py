"""minitrans model: a from-scratch encoder-decoder Transformer.

The names below are imported when first used (PEP 562): a program that needs only the
configuration (train.py checking its settings) starts without torch.
"""

from typing import TYPE_CHECKING

from utils.lazy_names import lazy_getattr

# each name this package exports -> the module that defines it
_EXPORTS = {
    "AttentionSteps": "model.attention",
    "KVCache": "model.attention",
    "MultiHeadAttention": "model.attention",
    "scaled_dot_product_attention": "model.attention",
    "TransformerConfig": "model.config",
    "AttentionMaps": "model.transformer",
    "DecoderCache": "model.transformer",
    "DecoderOutput": "model.transformer",
    "Transformer": "model.transformer",
    "TransformerOutput": "model.transformer",
}
__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:  # what type checkers and editors see, eagerly (tests/test_architecture.py: the same names)
    from model.attention import AttentionSteps, KVCache, MultiHeadAttention, scaled_dot_product_attention  # noqa: F401
    from model.config import TransformerConfig  # noqa: F401
    from model.transformer import (  # noqa: F401
        AttentionMaps,
        DecoderCache,
        DecoderOutput,
        Transformer,
        TransformerOutput,
    )

__getattr__ = lazy_getattr(__name__, _EXPORTS)
