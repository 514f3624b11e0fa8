"""What a run's data is: the corpus, the language pair, the tokenizer and how much of the
corpus, as typed dataclasses that Hydra fills in (training/config.py) and that check their values
when built. Nothing here loads anything: a misspelled or refused setting is said before torch or
datasets are imported (train.py), and data/prepare.py does the loading.
"""

import os
from dataclasses import dataclass, field

from utils.settings import read_when, refuse_unless

OFFICIAL_URL = "https://raw.githubusercontent.com/multi30k/dataset/master/data/task1/raw/{split}.{lang}.gz"
ENV_VAR = "MULTI30K_DIR"


def downloaded(configured: str | None) -> bool:
    """Whether Multi30k is downloaded: no local folder configured, none in $MULTI30K_DIR."""
    return not (configured or os.environ.get(ENV_VAR))


@dataclass
class TokenizerConfig:
    model_type: str = "unigram"  # or "bpe"
    vocab_size: int = 8000
    joint: bool = True  # one vocabulary for both languages (needed for shared embeddings)
    character_coverage: float = 1.0  # Multi30k's alphabets are small: keep every character
    # Unknown characters are spelled as UTF-8 bytes instead of mapping to unk, so any input
    # round-trips exactly (costs 256 vocabulary entries).
    byte_fallback: bool = True
    # SentencePiece learns from at most this many sentences, drawn at random with `seed` from a
    # larger corpus: a million pairs' two million sentences would take minutes and gigabytes for
    # a vocabulary that a sample learns as well. Multi30k's 58,000 are all used. The copies in
    # capitals (upper_copies) come on top of the sample.
    max_sentences: int = 1_000_000
    seed: int = 1234  # the same sample, so the same tokenizer, whenever it is trained again
    # Every number written digit by digit (SentencePiece's split_digits): a model then copies a
    # number of any length one digit piece at a time, instead of meeting "1999" as a piece it
    # has seen a few times in captions. On in the recipe, with AugmentConfig.numbers.
    split_digits: bool = True
    # A share of the sentences SentencePiece learns from is added again in capitals: a vocabulary
    # learnt from captions in sentence case has next to no pieces in capitals, so an upper-cased
    # line is about 4x the pieces (docs/recipe_search.md) and crowds training batches. For a
    # source read as it is (fold_source_case=false), with AugmentConfig.upper_source; the folded
    # source of the recipe has no capitals to learn.
    upper_copies: float = 0.0
    # The source read case-folded ("EIN MANN" and "ein mann" read as "ein mann"), and German's
    # ä ö ü ß spelt ae oe ue ss, by the source SentencePiece model's own normalization
    # (data/source_folding.py): wherever the model file goes (CTranslate2, Argos, LibreTranslate),
    # capitals, lower case and a keyboard without umlauts read as the sentence the model knows.
    # The target keeps its case and letters: the model writes sentence case from the folded source.
    # Both on in the recipe (docs/recipe_search.md, "The source folded in its model file");
    # spell_source_umlauts None: on where the source is German (DataConfig resolves it), since
    # another language typed without its letters drops them ("a" for "ä") rather than spelling them.
    fold_source_case: bool = True
    spell_source_umlauts: bool | None = None

    def __post_init__(self) -> None:
        if self.model_type not in ("unigram", "bpe"):
            raise ValueError(f"tokenizer model_type must be 'unigram' or 'bpe', not {self.model_type!r}")
        refuse_unless(
            (
                0 <= self.upper_copies <= 1,
                f"data.tokenizer.upper_copies must be a share from 0 to 1, not {self.upper_copies}",
            )
        )


SHARES = (
    "upper",
    "title",
    "lower",
    "upper_source",
    "lower_source",
    "no_final_punct",
    "merge",
    "fragment",
    "numbers",
    "copy_through",
    "copy_inside",
    "typos",
    "fold",
)


# The recipe's share of `numbers` where both languages have number words (AugmentConfig.numbers)
NUMBERS_SHARE = 0.5
# The settings whose None DataConfig resolves for the run's languages (the schema keeps them None)
LANGUAGE_RESOLVED = ("tokenizer.spell_source_umlauts", "augment.numbers")


@dataclass
class AugmentConfig:
    """The share of training pairs each modifier of data/augment.py varies, anew every epoch,
    both sides alike but where it says the source alone (0: off). The recipe's shares: 15%
    without their final punctuation, a fifth adding a word-aligned fragment, chosen on validation
    with beam 5 (docs/recipe_search.md, "The hour beside a plain one"), and half the pairs that
    hold a number word with a number as typed, 5% of sources with typing errors and 5% without
    ä ö ü ß (with TokenizerConfig.split_digits; "Numbers, typing errors and folded letters at the
    hour's step count"); `experiment=plain` turns them off. No case changes: the recipe's source
    model reads every case alike (TokenizerConfig.fold_source_case), and refuses them; a source
    read as it is learnt capitals from a tenth lower-cased and a tenth with the source alone in
    capitals ("The hour of capitals in the source alone")."""

    upper: float = 0.0  # upper-cased
    title: float = 0.0  # every word capitalised
    lower: float = 0.0  # lower-cased
    upper_source: float = 0.0  # the source alone upper-cased: capitals in, sentence case out
    lower_source: float = 0.0  # the source alone lower-cased: lower case in, sentence case out
    no_final_punct: float = 0.15  # the final . ! or ? removed
    merge: float = 0.0  # the pair that starts a merge of 2 to merge_max consecutive pairs into one line
    fragment: float = 0.2  # the pair that adds one of its word-aligned fragments as a pair (data/fragments.py)
    # the pair whose number word (two to ten, both sides) becomes a number as typed; None: the
    # recipe's NUMBERS_SHARE where both languages have number words (data/noise.py), else 0, so that
    # a corpus in other languages trains the rest of the recipe (DataConfig resolves it)
    numbers: float | None = None
    copy_through: float = 0.0  # a URL, address, emoji, other script or number put on both sides
    # the same put inside both sentences, where the word links let each take a word of its own
    # between two of theirs (data/fragments.py's split_points): where people put it, mid-sentence
    copy_inside: float = 0.0
    typos: float = 0.05  # the source with typing errors
    # the source without its accented letters (ä -> ae or a, ß -> ss); the "ae" and "ss" half reads
    # as the sentence written where TokenizerConfig.spell_source_umlauts spells them out already
    fold: float = 0.05
    merge_max: int = field(
        default=3,
        metadata=read_when(lambda cfg: cfg.merge > 0, "read only with merges on: give data.augment.merge > 0"),
    )

    def __post_init__(self) -> None:
        shares = {name: getattr(self, name) for name in SHARES}
        case_total = self.upper + self.title + self.lower + self.upper_source + self.lower_source
        refuse_unless(
            *[
                (v is None or 0 <= v <= 1, f"data.augment.{name} must be a share from 0 to 1, not {v}")
                for name, v in shares.items()
            ],
            (
                case_total <= 1 + 1e-9,  # shares written to add up to 1 may sum to 1.0000000000000002 in floats
                "data.augment.upper, title, lower, upper_source and lower_source are shares of the pairs, "
                f"one change a pair: together at most 1, not {case_total:g}",
            ),
            (self.merge_max >= 2, f"data.augment.merge_max must be at least 2, not {self.merge_max}"),
        )

    @property
    def on(self) -> bool:
        """Whether any modifier varies the pairs."""
        return any((getattr(self, name) or 0) > 0 for name in SHARES)  # numbers None: not yet resolved


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
    cache_dir: str = ".cache/minitrans"  # downloads, tokenizers, tokenized splits and word alignments
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

    # Training pairs varied as people type (data/augment.py): shares of the pairs upper-, title-
    # or lower-cased (or the source alone in capitals), without their final punctuation, merged
    # into lines of several sentences, giving a word-aligned fragment as a pair of its own, with
    # numbers, items to copy, typing errors or folded letters
    augment: AugmentConfig = field(default_factory=AugmentConfig)

    def __post_init__(self) -> None:
        """The recipe's umlaut spelling and share of numbers resolved for the languages, then values
        that types cannot refuse, refused when the config is built."""
        if self.tokenizer.spell_source_umlauts is None:
            self.tokenizer.spell_source_umlauts = self.src_lang == "de"
        if self.augment.numbers is None:  # the recipe's share, where there are number words to replace
            from data.noise import NUMBER_WORDS  # numpy: only where a share of numbers is left to resolve

            known = self.src_lang in NUMBER_WORDS and self.tgt_lang in NUMBER_WORDS
            self.augment.numbers = NUMBERS_SHARE if known else 0.0
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
            (
                self.subword_sampling == 0 or not self.augment.on,
                "data.augment and data.subword_sampling each make every epoch's pairs: use one of them "
                "(experiment=plain turns the augmentation off)",
            ),
            (
                not self.tokenizer.fold_source_case
                or self.augment.upper == self.augment.title == self.augment.lower == 0,
                "data.tokenizer.fold_source_case reads every source in one case, so nothing would tell the model "
                "when to write the target in capitals or lower case: give data.augment.upper, title and lower 0 "
                "(or read the source as it is: data.tokenizer.fold_source_case=false "
                "data.tokenizer.spell_source_umlauts=false)",
            ),
            (
                not self.tokenizer.fold_source_case
                or self.augment.upper_source == self.augment.lower_source == self.tokenizer.upper_copies == 0,
                "data.tokenizer.fold_source_case reads a source in capitals or lower case as it is, so the "
                "source-alone shares and the vocabulary's copies in capitals would change nothing: give "
                "data.augment.upper_source, data.augment.lower_source and data.tokenizer.upper_copies 0 "
                "(or read the source as it is: data.tokenizer.fold_source_case=false "
                "data.tokenizer.spell_source_umlauts=false)",
            ),
        )
        if self.augment.numbers:
            from data.noise import NUMBER_WORDS  # numpy: only where numbers are asked for

            refuse_unless(
                (
                    self.src_lang in NUMBER_WORDS and self.tgt_lang in NUMBER_WORDS,
                    f"data.augment.numbers puts numbers in place of number words, known in "
                    f"{', '.join(sorted(NUMBER_WORDS))}, not in both {self.src_lang} and {self.tgt_lang}: "
                    "give data.augment.numbers=0",
                )
            )
