"""minitrans data: corpora (Multi30k, files, tables, Hugging Face), SentencePiece tokenization, token-budget
batching."""

from data.batching import Batch, TokenBucketSampler, collate, token_batches
from data.multi30k import load_multi30k
from data.prepare import DataConfig, PreparedData, prepare_data
from data.subword_sampling import SampledPairs
from data.tokenizer import BOS_ID, EOS_ID, PAD_ID, UNK_ID, Tokenizer, TokenizerConfig, train_tokenizer

__all__ = [
    "BOS_ID",
    "EOS_ID",
    "PAD_ID",
    "UNK_ID",
    "Batch",
    "DataConfig",
    "PreparedData",
    "SampledPairs",
    "TokenBucketSampler",
    "Tokenizer",
    "TokenizerConfig",
    "collate",
    "load_multi30k",
    "prepare_data",
    "token_batches",
    "train_tokenizer",
]
