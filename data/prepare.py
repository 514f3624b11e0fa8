"""From configuration to tokenized splits: load Multi30k, get a tokenizer, tokenize (cached)."""
import hashlib
import logging
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import datasets
from datasets import DatasetDict, load_from_disk

from data.multi30k import load_multi30k
from data.tokenizer import Tokenizer, TokenizerConfig, train_tokenizer

log = logging.getLogger(__name__)
datasets.disable_progress_bars()  # a few fast steps; the training bar is the one that matters


@dataclass
class DataConfig:
    src_lang: str = "de"
    tgt_lang: str = "en"
    dir: str | None = None  # local Multi30k folder; None: $MULTI30K_DIR, else download
    cache_dir: str = ".cache/minitrans"  # tokenizers and tokenized splits
    tokenizer: TokenizerConfig = field(default_factory=TokenizerConfig)
    # First N pairs only (quick runs, CI); None keeps everything. The tokenizer is trained on
    # the training subset, so a small run also trains a small tokenizer quickly.
    max_train_examples: int | None = None
    max_eval_examples: int | None = None  # per validation/test split
    # Subword regularisation (data/subword_sampling.py): above 0, every epoch trains on each
    # pair in segmentations drawn from its n best, P(x)^alpha-weighted with alpha this value
    # (unigram tokenizer only); 0: the best segmentation throughout, as validation and test.
    subword_sampling: float = 0.0
    subword_n_best: int = 16


@dataclass
class PreparedData:
    tokenizer: Tokenizer
    text: DatasetDict  # columns src, tgt (strings)
    tokens: DatasetDict  # columns src_ids, tgt_ids (no bos/eos), row-aligned with `text`


def _text_digest(text: DatasetDict) -> str:
    digest = hashlib.sha256()
    for split, ds in text.items():
        digest.update(split.encode())
        for column in ("src", "tgt"):
            digest.update("\n".join(ds[column]).encode() + b"\0")
    return digest.hexdigest()[:16]


def tokenize_splits(text: DatasetDict, tokenizer: Tokenizer, cache_dir: Path) -> DatasetDict:
    """Token ids for every split, saved under the cache so a second run skips tokenizing."""
    folder = Path(cache_dir) / "tokenized" / f"{_text_digest(text)}-{tokenizer.fingerprint()}"
    if (folder / "dataset_dict.json").is_file():
        log.info("tokenized splits loaded from cache %s", folder)
        return load_from_disk(str(folder))
    log.info("tokenizing %s", ", ".join(f"{split} ({len(ds)})" for split, ds in text.items()))
    tokens = text.map(
        lambda batch: {"src_ids": tokenizer.encode_src(batch["src"]), "tgt_ids": tokenizer.encode_tgt(batch["tgt"])},
        batched=True, remove_columns=["src", "tgt"], load_from_cache_file=False,
    )
    # Saved under a name of this process's own, then renamed: an entry appears whole or not at
    # all, and runs preparing the same data at once (bench/rank_on_gpu.sh starts several) never
    # write into or delete each other's files. The first rename wins; a later one finds the
    # entry there and keeps it.
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", suffix=".tmp", dir=folder.parent))
    try:
        tokens.save_to_disk(str(tmp))
        try:
            tmp.rename(folder)
        except OSError:
            if not (folder / "dataset_dict.json").is_file():
                raise
            log.info("another run cached the same tokenized splits first; using theirs")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return load_from_disk(str(folder))  # memory-mapped, the same object a cached run gets


def load_text(cfg: DataConfig, splits: list[str] | None = None, data_dir: str | None = None) -> DatasetDict:
    """The configured language pair's splits, each cut to the configured number of examples
    (`data_dir`, if given, instead of the configured folder)."""
    text = load_multi30k(cfg.src_lang, cfg.tgt_lang, data_dir or cfg.dir, splits)
    for split, ds in text.items():
        limit = cfg.max_train_examples if split == "train" else cfg.max_eval_examples
        if limit is not None and limit < len(ds):
            text[split] = ds.select(range(limit))
    return text


def prepare_data(cfg: DataConfig, splits: list[str] | None = None) -> PreparedData:
    text = load_text(cfg, splits)
    if "train" not in text:
        raise ValueError("the tokenizer is trained on the train split; include it in `splits`")
    tokenizer = train_tokenizer(text["train"]["src"], text["train"]["tgt"], cfg.tokenizer, Path(cfg.cache_dir))
    return PreparedData(tokenizer, text, tokenize_splits(text, tokenizer, Path(cfg.cache_dir)))
