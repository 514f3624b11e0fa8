"""SentencePiece tokenization: trained on the training split only, cached, embeddable.

The special ids are defined here, once (pad 0, unk 1, bos 2, eos 3): SentencePiece is told to
put them exactly there, and training hands them to the model through its config, so ids
mean the same in data, model, search and checkpoints.
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
import logging
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, replace
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import sentencepiece as spm

from data.columns import column_lines, digest_lines
from data.config import TokenizerConfig
from data.source_folding import VERSION as FOLDING_VERSION
from data.source_folding import fold, with_folding
from data.word_forms import written_forms
from utils.device import usable_cores
from utils.errors import UserError
from utils.files import atomic_file

if TYPE_CHECKING:  # only a type here: translate.py starts without loading datasets (pandas, Arrow)
    from datasets import Dataset

log = logging.getLogger(__name__)

FORMS_FILE = "src_forms.txt"  # the source's word forms beside the model files

PAD_ID = 0
UNK_ID = 1
BOS_ID = 2
EOS_ID = 3


class Tokenizer:
    """Source and target SentencePiece models (the same one when the vocabulary is joint, unless
    the source is folded: then two files of one vocabulary, data/source_folding.py), and how the
    training source writes its words (`src_forms`, data/word_forms.py; empty for a tokenizer saved
    before they were kept)."""

    def __init__(self, src_model: bytes, tgt_model: bytes, src_forms: Sequence[str] = ()) -> None:
        self.src_model, self.tgt_model = src_model, tgt_model
        self.src = spm.SentencePieceProcessor(model_proto=src_model)
        self.tgt = self.src if tgt_model == src_model else spm.SentencePieceProcessor(model_proto=tgt_model)
        self.src_forms = list(src_forms)
        self.src_form_of = {form.casefold(): form for form in self.src_forms}  # casefolded word -> its form

    @functools.cached_property
    def splits_digits(self) -> bool:
        """Whether the source model writes every digit as a piece of its own (trained with
        data.tokenizer.split_digits), as its model file says."""
        from sentencepiece import sentencepiece_model_pb2  # protobuf: onnx's requirement, and ours

        proto = sentencepiece_model_pb2.ModelProto()  # type: ignore[attr-defined]  # generated, no stubs
        proto.ParseFromString(self.src_model)
        return proto.trainer_spec.split_digits

    @functools.cached_property
    def folds_case(self) -> bool:
        """Whether the source model reads capitals as lower case itself (its normalization rules:
        data.tokenizer.fold_source_case), as its model file does."""
        return self.src.normalize("ABC") == self.src.normalize("abc")

    @functools.cached_property
    def joint(self) -> bool:
        """One vocabulary for both sides: the same pieces under the same ids."""
        if self.src is self.tgt:
            return True
        size = self.src.get_piece_size()
        return size == self.tgt.get_piece_size() and all(
            self.src.id_to_piece(i) == self.tgt.id_to_piece(i) for i in range(size)
        )

    @property
    def model_files(self) -> list[str]:
        """The names `save` writes the model file(s) under: source first, target last."""
        return ["spm_joint.model"] if self.src is self.tgt else ["spm_src.model", "spm_tgt.model"]

    # the ids the SentencePiece models carry (the same in source and target: both are trained here)
    @property
    def pad_id(self) -> int:
        return self.tgt.pad_id()

    @property
    def unk_id(self) -> int:
        return self.tgt.unk_id()

    @property
    def bos_id(self) -> int:
        return self.tgt.bos_id()

    @property
    def eos_id(self) -> int:
        return self.tgt.eos_id()

    @property
    def src_vocab_size(self) -> int:
        return self.src.get_piece_size()

    @property
    def tgt_vocab_size(self) -> int:
        return self.tgt.get_piece_size()

    def encode_src(self, sentences: Iterable[str]) -> list[list[int]]:
        return self.src.encode(list(sentences))

    def encode_tgt(self, sentences: Iterable[str]) -> list[list[int]]:
        return self.tgt.encode(list(sentences))

    def decode_tgt(self, ids: list[list[int]]) -> list[str]:
        return self.tgt.decode(ids)

    def src_pieces(self, ids: list[int]) -> list[str]:
        return [self.src.id_to_piece(i) for i in ids]

    def tgt_pieces(self, ids: list[int]) -> list[str]:
        return [self.tgt.id_to_piece(i) for i in ids]

    def save(self, folder: Path) -> None:
        """Write the model file(s) next to a run, for inspection with the spm tools, and the
        source's word forms (FORMS_FILE, a word a line) where there are any."""
        folder.mkdir(parents=True, exist_ok=True)
        if self.src_forms:
            (folder / FORMS_FILE).write_text("".join(f"{form}\n" for form in self.src_forms), encoding="utf-8")
        for name, model in zip(self.model_files, (self.src_model, self.tgt_model)):
            (folder / name).write_bytes(model)

    def fingerprint(self) -> str:
        return hashlib.sha256(self.src_model + b"\0" + self.tgt_model).hexdigest()[:16]


# Settings added after tokenizers were first cached, left out of the cache key at these values
# (their defaults when added, under which they change nothing), so that a tokenizer cached before
# them is found again
LATER_FIELDS = {"split_digits": False, "upper_copies": 0.0, "fold_source_case": False, "spell_source_umlauts": False}


def _train_model(sentences: Iterator[str], cfg: TokenizerConfig) -> bytes:
    stream = io.BytesIO()
    # the sample's copies in capitals (at most one a line) come on top of it: all read, none sampled away
    read = 2 * cfg.max_sentences if cfg.upper_copies else cfg.max_sentences
    try:
        # SentencePiece keeps a uniform sample of input_sentence_size of what it reads (a
        # reservoir), so a corpus of any size streams through in bounded memory.
        settings: dict[str, Any] = dict(
            sentence_iterator=sentences,
            model_writer=stream,
            model_type=cfg.model_type,
            vocab_size=cfg.vocab_size,
            character_coverage=cfg.character_coverage,
            byte_fallback=cfg.byte_fallback,
            input_sentence_size=read,
            shuffle_input_sentence=True,
            pad_id=PAD_ID,
            unk_id=UNK_ID,
            bos_id=BOS_ID,
            eos_id=EOS_ID,
            num_threads=usable_cores(),
            minloglevel=2,
        )
        # given only when on: a setting given, even at its default, is written into the model
        # file, which would then differ from one trained before the setting existed
        if cfg.split_digits:
            settings["split_digits"] = True
        spm.SentencePieceTrainer.train(**settings)
    except RuntimeError as e:  # e.g. vocab_size larger than the data supports
        said = str(e).strip().splitlines()[-1]  # "INTERNAL: src/x.cc(744) [check] Vocabulary size too high ..."
        said = said.rsplit("] ", 1)[-1]
        if "required_chars" in said and cfg.upper_copies:  # the copies bring every letter's capital
            said += (
                f" (data.tokenizer.upper_copies={cfg.upper_copies} adds the capitals of the letters; 0 leaves them out)"
            )
        raise UserError(f"SentencePiece training failed: {said}") from None
    return stream.getvalue()


def _with_upper_copies(lines: Iterator[str], share: float, seed: int) -> Iterator[str]:
    """Each line, followed by itself in capitals with probability `share` (drawn with `seed`)."""
    rng = np.random.default_rng([seed, 1])
    for line in lines:
        yield line
        if rng.random() < share:
            yield line.upper()


def _sentences(train: Dataset, columns: tuple[str, ...], cfg: TokenizerConfig) -> Iterator[str]:
    """The sentences of `columns`, or a sample of `cfg.max_sentences` of them drawn with `cfg.seed`
    (SentencePiece's own sample is not reproducible: a tokenizer trained again after its cache
    was lost would differ, and a run could not resume); a share `cfg.upper_copies` of them also
    in capitals."""
    if cfg.upper_copies > 0:
        yield from _with_upper_copies(
            _sentences(train, columns, replace(cfg, upper_copies=0.0)), cfg.upper_copies, cfg.seed
        )
        return
    total = len(train) * len(columns)
    lines = chain.from_iterable(_column_as_read(train, column, cfg) for column in columns)
    if total <= cfg.max_sentences:
        yield from lines
        return
    log.info(
        "SentencePiece learns from %d of the %d training sentences, drawn with seed %d",
        cfg.max_sentences,
        total,
        cfg.seed,
    )
    keep = np.zeros(total, dtype=bool)
    keep[np.random.default_rng(cfg.seed).choice(total, cfg.max_sentences, replace=False)] = True
    yield from (line for line, kept in zip(lines, keep) if kept)


def _spells_umlauts(cfg: TokenizerConfig) -> bool:
    """spell_source_umlauts as given, or None (a config built outside DataConfig, which resolves it
    for the source language): off."""
    return bool(cfg.spell_source_umlauts)


def _column_as_read(train: Dataset, column: str, cfg: TokenizerConfig) -> Iterator[str]:
    """The lines of `column` as its model will read them: the source folded as its model file
    folds it (the vocabulary learns "maedchen" where the source model reads "Mädchen")."""
    lines = column_lines(train, column)
    if column == "src" and (cfg.fold_source_case or cfg.spell_source_umlauts):
        return (fold(line, cfg.fold_source_case, _spells_umlauts(cfg)) for line in lines)
    return lines


def train_tokenizer(train: Dataset, cfg: TokenizerConfig, cache_dir: Path) -> Tokenizer:
    """Train (or load from the cache) the tokenizer for the training split's `src` and `tgt`.

    The cache key covers the settings and every training sentence, so changed data or
    settings train a new model, and the same ones reuse the cached file. A folded source model
    (data/source_folding.py) is cached beside the plain one it is made from, so that a run
    resumed on the same cache reads its source exactly as it did.
    """
    settings = {k: v for k, v in asdict(cfg).items() if not (k in LATER_FIELDS and v == LATER_FIELDS[k])}
    folding = cfg.fold_source_case or cfg.spell_source_umlauts
    if folding:  # another mapping, or another Unicode's, folds another source: another vocabulary
        settings["folding"] = [FOLDING_VERSION, unicodedata.unidata_version]
    digest = hashlib.sha256(json.dumps(settings, sort_keys=True).encode())
    for side in ("src", "tgt"):
        digest_lines(digest, column_lines(train, side))
    folder = Path(cache_dir) / "tokenizers" / digest.hexdigest()[:16]
    names = ["joint"] if cfg.joint else ["src", "tgt"]
    paths = [folder / f"{name}.model" for name in names]
    if all(p.is_file() for p in paths):
        log.info("tokenizer loaded from cache %s", folder)
    else:
        log.info(
            "training SentencePiece %s, vocabulary %d, %s",
            cfg.model_type,
            cfg.vocab_size,
            "joint" if cfg.joint else "separate",
        )
        sides = [("src", "tgt")] if cfg.joint else [("src",), ("tgt",)]  # joint: one model reads both
        for path, columns in zip(paths, sides):
            path.parent.mkdir(parents=True, exist_ok=True)
            with atomic_file(path, "wb") as file:
                file.write(_train_model(_sentences(train, columns, cfg), cfg))
    src_model, tgt_model = (paths[0].read_bytes(), paths[-1].read_bytes())
    if folding:
        folded = folder / "src_folded.model"
        if not folded.is_file():
            with atomic_file(folded, "wb") as file:
                file.write(with_folding(src_model, cfg.fold_source_case, _spells_umlauts(cfg)))
        src_model = folded.read_bytes()
    return Tokenizer(src_model, tgt_model, written_forms(column_lines(train, "src")))
