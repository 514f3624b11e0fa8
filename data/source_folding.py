"""The source read in one case, and German's ä ö ü ß spelt as typed without them, inside the
SentencePiece model file itself.

A model trained on captions in sentence case meets "EIN MANN FÄHRT FAHRRAD." or "maedchen" as
text it has hardly seen. Folding the source before the model reads it makes those the sentence
it knows. Done in Python around the model, only our own inference would do it; written as the
source SentencePiece model's normalization rules (its `precompiled_charsmap`), it travels in the
model file, and every runtime that encodes with that file (CTranslate2 with SentencePiece,
argostranslate, LibreTranslate) folds the same way. The target model keeps the plain
normalization, so the model still writes in sentence case and with its own letters; the two
files share one vocabulary, learnt from the folded source and the plain target.

`fold` is the same mapping in Python, for the sentences the vocabulary learns from and for tests.
"""

from __future__ import annotations

import functools
import io
import unicodedata

import sentencepiece as spm

# German's letters as written on a keyboard without them (the common spelling, not a loss); a
# capital is spelt as at a word's start ("Übung" -> "Uebung"): the rules see one letter at a time
UMLAUT_SPELLINGS = {"ä": "ae", "ö": "oe", "ü": "ue", "ß": "ss", "Ä": "Ae", "Ö": "Oe", "Ü": "Ue", "ẞ": "SS"}

# Raise when the mapping changes: the tokenizer cache keys a folded vocabulary by it (data/tokenizer.py)
VERSION = 1

# SentencePiece's default rules (NFKC, control characters dropped, tabs, line and zero-width
# spaces made spaces), with its whitespace handling left to the model file's own settings
_NMT_NFKC = spm.SentencePieceNormalizer(
    rule_name="nmt_nfkc", add_dummy_prefix=False, remove_extra_whitespaces=False, escape_whitespaces=False
)


def fold_all(texts: list[str], case: bool, umlauts: bool) -> list[str]:
    """`texts` as the source model reads them before their whitespace is handled: SentencePiece's
    default normalization (`nmt_nfkc`), then case-folded (`case`: "STRASSE" and "Straße" both
    "strasse") and ä ö ü ß spelt ae oe ue ss (`umlauts`; "Ä" -> "Ae" without case folding)."""
    texts = _NMT_NFKC.normalize(texts)  # a list at a time: the rules below fold every character
    if case:
        texts = _NMT_NFKC.normalize([text.casefold() for text in texts])
    if umlauts:
        for letter, spelt in UMLAUT_SPELLINGS.items():
            texts = [text.replace(letter, spelt) for text in texts]
    return texts


def fold(text: str, case: bool, umlauts: bool) -> str:
    """One text as `fold_all` folds it."""
    return fold_all([text], case, umlauts)[0]


def _rules(case: bool, umlauts: bool) -> str:
    """SentencePiece normalization rules (a TSV of code points: from, tab, to; an empty `to`
    deletes) for `fold`: every character it changes, and every character's canonical and
    compatibility decompositions ("a" + U+0308), which NFKC composes before folding."""
    # the characters Python's Unicode knows: unassigned and private ones fold to themselves (but
    # for a hundred letters a newer Unicode added, which SentencePiece's own rules may know)
    chars = [chr(code) for code in range(0x110000) if unicodedata.category(chr(code)) not in ("Cn", "Co", "Cs")]
    changed: dict[str, str] = {}
    for char, folded in zip(chars, fold_all(chars, case, umlauts)):
        if folded != char:
            changed[char] = folded
        for written in (unicodedata.normalize("NFD", char), unicodedata.normalize("NFKD", char)):
            if folded != written:
                changed[written] = folded

    def points(text: str) -> str:
        return " ".join(f"{ord(c):X}" for c in text)

    return "".join(f"{points(source)}\t{points(target)}\n" for source, target in changed.items())


@functools.cache
def _charsmap(case: bool, umlauts: bool) -> bytes:
    """The compiled form of `_rules`: SentencePiece compiles rules only while it trains, so a
    throwaway model is trained on a few letters with them and its compiled map kept."""
    import tempfile
    from pathlib import Path

    from sentencepiece import sentencepiece_model_pb2  # protobuf: onnx's requirement, and ours

    with tempfile.TemporaryDirectory() as folder:
        rules = Path(folder) / "rules.tsv"
        rules.write_text(_rules(case, umlauts), encoding="utf-8")
        stream = io.BytesIO()
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(["abc def ghi"] * 10),
            model_writer=stream,
            model_type="char",
            vocab_size=12,
            hard_vocab_limit=False,
            normalization_rule_tsv=str(rules),
            minloglevel=2,
        )
    proto = sentencepiece_model_pb2.ModelProto()  # type: ignore[attr-defined]  # generated, no stubs
    proto.ParseFromString(stream.getvalue())
    return bytes(proto.normalizer_spec.precompiled_charsmap)


def with_folding(model: bytes, case: bool, umlauts: bool) -> bytes:
    """`model` (a SentencePiece model file) with its normalization replaced by `fold`'s: the same
    vocabulary, whitespace handling and settings otherwise."""
    from sentencepiece import sentencepiece_model_pb2

    proto = sentencepiece_model_pb2.ModelProto()  # type: ignore[attr-defined]
    proto.ParseFromString(model)
    proto.normalizer_spec.name = "minitrans_fold" + ("_case" if case else "") + ("_umlauts" if umlauts else "")
    proto.normalizer_spec.precompiled_charsmap = _charsmap(case, umlauts)
    return proto.SerializeToString()
