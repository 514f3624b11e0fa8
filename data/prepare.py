"""From configuration to tokenized splits: load the corpus, get a tokenizer, tokenize (cached)."""

import hashlib
import logging
import tempfile
from dataclasses import dataclass
from pathlib import Path

import datasets
from datasets import DatasetDict, load_from_disk

from data.columns import column_lines, digest_lines
from data.config import OFFICIAL_URL, DataConfig, downloaded
from data.multi30k import load_multi30k, resolve_data_dir
from data.sources import SOURCES, carve_validation, load_files, load_hf, load_table, split_names
from data.tokenizer import Tokenizer, train_tokenizer
from utils.errors import UserError
from utils.files import atomic_folder

log = logging.getLogger(__name__)
datasets.disable_progress_bars()  # its quick steps say nothing; tokenizing a large corpus shows its bar
BAR_FROM_PAIRS = 100_000  # ~5 s of tokenizing on 2 cores (bench/data_prep.py); Multi30k's 29,000 show none


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
            digest_lines(digest, column_lines(ds, column))
    return digest.hexdigest()[:16]


def tokenize_splits(text: DatasetDict, tokenizer: Tokenizer, cache_dir: Path) -> DatasetDict:
    """Token ids for every split, saved under the cache so a second run skips tokenizing."""
    folder = Path(cache_dir) / "tokenized" / f"{_text_digest(text)}-{tokenizer.fingerprint()}"
    if (folder / "dataset_dict.json").is_file():
        log.info("tokenized splits loaded from cache %s", folder)
        return load_from_disk(str(folder))
    log.info("tokenizing %s", ", ".join(f"{split} ({len(ds)})" for split, ds in text.items()))
    if max(len(ds) for ds in text.values()) >= BAR_FROM_PAIRS:  # a large corpus takes a while: say how far it is
        datasets.enable_progress_bars()
    # Written under a name of this process's own, then renamed: an entry appears whole or not at
    # all, and runs preparing the same data at once (bench/rank_on_gpu.sh starts several) never
    # write into or delete each other's files. The first rename wins; a later one keeps it.
    with (
        atomic_folder(folder, replace=False) as staging,
        tempfile.TemporaryDirectory(prefix=f".{folder.name}.", dir=folder.parent) as work,
    ):
        try:
            # Each batch's ids go to a file as they are made (not into memory), then saved in
            # the layout load_from_disk reads.
            tokens = text.map(
                lambda batch: {
                    "src_ids": tokenizer.encode_src(batch["src"]),
                    "tgt_ids": tokenizer.encode_tgt(batch["tgt"]),
                },
                batched=True,
                batch_size=10_000,
                remove_columns=["src", "tgt"],
                load_from_cache_file=False,
                cache_file_names={split: str(Path(work) / f"{split}.arrow") for split in text},
                desc="tokenizing",
            )
        finally:
            datasets.disable_progress_bars()
        tokens.save_to_disk(str(staging))
    return load_from_disk(str(folder))  # memory-mapped, the same object a cached run gets


def load_corpus(cfg: DataConfig, splits: list[str] | None = None, data_dir: str | None = None) -> DatasetDict:
    """The configured source's splits (`splits` only, if given): train, val, tests."""
    source = getattr(cfg, "source", "multi30k")  # a checkpoint's config from before sources had a name
    if source == "multi30k":
        folder = data_dir or cfg.dir
        # data.url is read only where it is used (tests/test_config.py); a config from before it has none
        url = getattr(cfg, "url", OFFICIAL_URL) if downloaded(folder) else OFFICIAL_URL
        return load_multi30k(cfg.src_lang, cfg.tgt_lang, folder, splits, url, cfg.cache_dir)
    if source not in SOURCES:
        raise UserError(f"data.source must be one of {', '.join(SOURCES)}, not {source!r}")
    if cfg.src_lang == cfg.tgt_lang:
        raise UserError(f"source and target language are both {cfg.src_lang!r}")
    what = {"files": "prefix ({prefix}.{lang})", "hf": "split's name"}.get(source, f"{source} file")
    named = split_names(cfg.train, cfg.val, list(cfg.test), what)
    wanted = set(splits or named) | ({"train"} if cfg.val is None else set())  # carving val needs train
    named = {split: where for split, where in named.items() if split in wanted}
    if source == "files":
        text = load_files(cfg.src_lang, cfg.tgt_lang, named)
    else:  # which column or key holds each side
        fields = (
            cfg.src_field or ("0" if source == "tsv" else cfg.src_lang),
            cfg.tgt_field or ("1" if source == "tsv" else cfg.tgt_lang),
        )
        if source == "hf":
            if not cfg.name:
                raise UserError("data.name is required with data.source=hf: a dataset's name or a local folder")
            text = load_hf(cfg.name, cfg.subset, named, *fields)
        elif source == "jsonl":
            text = load_table(source, named, *fields)
        else:
            text = load_table(source, named, *fields, header=cfg.header, quoting=getattr(cfg, "quoting", "none"))
    if cfg.val is None:  # no validation split given: one is set aside from training
        text = carve_validation(text, cfg.val_size, cfg.val_seed)
    return DatasetDict({split: ds for split, ds in text.items() if splits is None or split in splits})


def corpus_location(cfg: DataConfig) -> dict[str, str | None]:
    """Where a run's corpus was found, absolute: the Multi30k folder (data.dir, else
    $MULTI30K_DIR; None where it was downloaded) and the cache (downloads, tokenized splits).
    A checkpoint keeps it, so that what reads the corpus again later (export.py --to argos) finds
    it from any shell and folder."""
    folder = resolve_data_dir(cfg.dir) if getattr(cfg, "source", "multi30k") == "multi30k" else None
    return {"dir": str(folder.resolve()) if folder else None, "cache_dir": str(Path(cfg.cache_dir).resolve())}


def load_text(cfg: DataConfig, splits: list[str] | None = None, data_dir: str | None = None) -> DatasetDict:
    """The configured language pair's splits, each cut to the configured number of examples
    (`data_dir`, if given, instead of the configured Multi30k folder)."""
    text = load_corpus(cfg, splits, data_dir)
    for split, ds in text.items():
        limit = cfg.max_train_examples if split == "train" else cfg.max_eval_examples
        if limit is not None and limit < len(ds):
            text[split] = ds.select(range(limit))
    return text


def prepare_data(cfg: DataConfig, splits: list[str] | None = None) -> PreparedData:
    text = load_text(cfg, splits)
    if "train" not in text:
        raise ValueError("the tokenizer is trained on the train split; include it in `splits`")
    tokenizer = train_tokenizer(text["train"], cfg.tokenizer, Path(cfg.cache_dir))
    return PreparedData(tokenizer, text, tokenize_splits(text, tokenizer, Path(cfg.cache_dir)))
