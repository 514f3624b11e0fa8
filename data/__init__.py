"""minitrans data: Multi30k loading, SentencePiece tokenization, token-budget batching."""
from data.batching import Batch, TokenBucketSampler, collate
from data.errors import UserError
from data.multi30k import load_multi30k
from data.prepare import DataConfig, PreparedData, prepare_data
from data.tokenizer import Tokenizer, TokenizerConfig, train_tokenizer

__all__ = [
    "Batch", "DataConfig", "PreparedData", "TokenBucketSampler", "Tokenizer", "TokenizerConfig",
    "UserError", "collate", "load_multi30k", "prepare_data", "train_tokenizer",
]
