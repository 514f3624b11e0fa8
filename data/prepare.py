"""From configuration to tokenized splits: load the corpus, get a tokenizer, tokenize (cached)."""

import hashlib
import logging
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import datasets
from datasets import DatasetDict, load_from_disk

from data.columns import column_lines, digest_lines
from data.multi30k import ENV_VAR, OFFICIAL_URL, downloaded, load_multi30k
from data.sources import SOURCES, carve_validation, load_files, load_hf, load_table, split_names
from data.tokenizer import Tokenizer, TokenizerConfig, train_tokenizer
from utils.errors import UserError
from utils.files import atomic_folder
from utils.settings import read_when, refuse_unless

log = logging.getLogger(__name__)
datasets.disable_progress_bars()  # its quick steps say nothing; tokenizing a large corpus shows its bar
BAR_FROM_PAIRS = 100_000  # ~5 s of tokenizing on 2 cores (bench/data_prep.py); Multi30k's 29,000 show none


def _by(*sources: str) -> dict:
    """The field is read only when data.source (the data=... option) is one of `sources`."""
    return read_when(lambda cfg: cfg.source in sources, f"read by data={', '.join(sources)}; add data={sources[0]}")


TABLES = ("files", "tsv", "jsonl", "hf")  # the sources that read their splits from data.train, val, test
CARVED = read_when(
    lambda cfg: cfg.source in TABLES and cfg.val is None,
    "read only where training pairs are set aside for validation: by data=files, tsv, jsonl and hf without data.val",
)


@dataclass
class DataConfig:
    src_lang: str = "de"
    tgt_lang: str = "en"
    # where the pairs come from (data/sources.py): multi30k, files, tsv, jsonl or hf
    source: str = "multi30k"
    # multi30k: the local folder; None: $MULTI30K_DIR, else download
    dir: str | None = field(default=None, metadata=_by("multi30k"))
    # multi30k without a local folder: where its files are downloaded from, {split} and {lang}
    # filled in (a mirror, or a local server); kept under cache_dir/downloads/
    url: str = field(
        default=OFFICIAL_URL,
        metadata=read_when(
            lambda cfg: cfg.source == "multi30k" and downloaded(cfg.dir),
            f"read only where Multi30k is downloaded: by data=multi30k without data.dir and ${ENV_VAR}",
        ),
    )
    # files: a prefix per split ({prefix}.{lang}, or .gz); tsv, jsonl: a file per split; hf: the
    # dataset's split names. Any number of test splits; without val, val_size training pairs
    # drawn with val_seed validate instead.
    train: str | None = field(default=None, metadata=_by(*TABLES))
    val: str | None = field(default=None, metadata=_by(*TABLES))
    test: list[str] = field(default_factory=list, metadata=_by(*TABLES))
    val_size: int = field(default=1000, metadata=CARVED)
    val_seed: int = field(default=1234, metadata=CARVED)
    # tsv: a column number, or its name with header=true (defaults 0 and 1); jsonl: a key, or a
    # language under "translation"; hf: a column, or a language of the translation column
    # (defaults: the languages)
    src_field: str | None = field(default=None, metadata=_by("tsv", "jsonl", "hf"))
    tgt_field: str | None = field(default=None, metadata=_by("tsv", "jsonl", "hf"))
    header: bool = field(default=False, metadata=_by("tsv"))
    # tsv: "none", a field is all between two tabs, quotes too; "csv", fields in double quotes by
    # CSV rules (a tab inside, "" for a quote)
    quoting: str = field(default="none", metadata=_by("tsv"))
    # hf: a dataset on the hub, or a local folder (save_to_disk) or data files
    name: str | None = field(default=None, metadata=_by("hf"))
    subset: str | None = field(default=None, metadata=_by("hf"))  # hf: the dataset's configuration, e.g. de-en
    cache_dir: str = ".cache/minitrans"  # downloads, tokenizers and tokenized splits
    tokenizer: TokenizerConfig = field(default_factory=TokenizerConfig)
    # First N pairs only (quick runs, CI); None keeps everything. The tokenizer is trained on
    # the training subset, so a small run also trains a small tokenizer quickly.
    max_train_examples: int | None = None
    max_eval_examples: int | None = None  # per validation/test split
    # Subword regularisation (data/subword_sampling.py): above 0, every epoch trains on each
    # pair in segmentations drawn from its n best, P(x)^alpha-weighted with alpha this value
    # (unigram tokenizer only); 0: the best segmentation throughout, as validation and test.
    subword_sampling: float = 0.0
    subword_n_best: int = field(
        default=16,
        metadata=read_when(
            lambda cfg: cfg.subword_sampling > 0, "read only with subword sampling on: give data.subword_sampling > 0"
        ),
    )

    def __post_init__(self) -> None:
        """Values that types cannot refuse, refused when the config is built."""
        refuse_unless(
            (self.val_size > 0, f"data.val_size must be positive, not {self.val_size}"),
            (self.quoting in ("none", "csv"), f"data.quoting must be none or csv, not {self.quoting!r}"),
            (
                self.subword_sampling >= 0 and self.subword_n_best >= 2,
                "data.subword_sampling must be >= 0 (0: off) and data.subword_n_best at least 2",
            ),
            (
                self.subword_sampling == 0 or self.tokenizer.model_type == "unigram",
                "data.subword_sampling needs data.tokenizer.model_type=unigram (a BPE model has no n best "
                "segmentations)",
            ),
        )


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
