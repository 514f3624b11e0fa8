"""minitrans data: corpora (Multi30k, files, tables, Hugging Face), SentencePiece tokenization, token-budget
batching.

The names below are imported when first used (PEP 562): translate.py needs the tokenizer and
padding, not the corpus loaders, whose `datasets` (with pandas and Arrow) would add seconds to
every start.
"""

from typing import TYPE_CHECKING

from utils.lazy_names import lazy_getattr

# each name this package exports -> the module that defines it
_EXPORTS = {
    "AugmentedPairs": "data.augment",
    "Batch": "data.batching",
    "TokenBucketSampler": "data.batching",
    "both_directions": "data.batching",
    "collate": "data.batching",
    "token_batches": "data.batching",
    "AugmentConfig": "data.config",
    "DataConfig": "data.config",
    "TokenizerConfig": "data.config",
    "load_multi30k": "data.multi30k",
    "PreparedData": "data.prepare",
    "prepare_data": "data.prepare",
    "SampledPairs": "data.subword_sampling",
    "BOS_ID": "data.tokenizer",
    "EOS_ID": "data.tokenizer",
    "PAD_ID": "data.tokenizer",
    "UNK_ID": "data.tokenizer",
    "Tokenizer": "data.tokenizer",
    "train_tokenizer": "data.tokenizer",
}
__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:  # what type checkers and editors see, eagerly (tests/test_imports.py: the same names)
    from data.augment import AugmentedPairs  # noqa: F401
    from data.batching import Batch, TokenBucketSampler, both_directions, collate, token_batches  # noqa: F401
    from data.config import AugmentConfig, DataConfig, TokenizerConfig  # noqa: F401
    from data.multi30k import load_multi30k  # noqa: F401
    from data.prepare import PreparedData, prepare_data  # noqa: F401
    from data.subword_sampling import SampledPairs  # noqa: F401
    from data.tokenizer import (  # noqa: F401
        BOS_ID,
        EOS_ID,
        PAD_ID,
        UNK_ID,
        Tokenizer,
        train_tokenizer,
    )

__getattr__ = lazy_getattr(__name__, _EXPORTS)
