"""data/tokenizer.py: SentencePiece trained on the training text, round trips, special ids, caches."""

import gzip
import logging
import re
import unicodedata
from dataclasses import replace
from pathlib import Path

import pytest
from datasets import Dataset

from data import BOS_ID, EOS_ID, PAD_ID, TokenizerConfig
from data.source_folding import fold
from data.tokenizer import train_tokenizer
from utils.errors import UserError


def nmt_nfkc(s: str) -> str:
    """What SentencePiece's default normalizer does: NFKC, whitespace runs collapsed, stripped."""
    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", s)).strip()


def test_round_trip_on_test_sentences(toy):
    tok = toy.tokenizer
    test = toy.text["test_2016_flickr"]
    src, tgt = list(test["src"]), list(test["tgt"])
    assert tok.src.decode(tok.encode_src(src)) == [fold(s, True, True) for s in src]  # the recipe's source folded
    assert tok.decode_tgt(tok.encode_tgt(tgt)) == [nmt_nfkc(s) for s in tgt]
    # byte fallback: characters never seen in training still survive
    assert tok.decode_tgt(tok.encode_tgt(["Ωμέγα 漢字 ✓"])) == ["Ωμέγα 漢字 ✓"]


def test_special_ids_are_fixed(toy):
    sp = toy.tokenizer.src
    assert (sp.pad_id(), sp.unk_id(), sp.bos_id(), sp.eos_id()) == (PAD_ID, 1, BOS_ID, EOS_ID)
    assert toy.tokenizer.joint and toy.tokenizer.src_vocab_size == 340


def test_tokenizer_trained_on_train_only_and_cached(tmp_path, caplog):
    words_de = "ein kleiner hund eine katze spielt im garten mit zwei kindern und einem ball".split()
    words_en = "a small dog a cat plays in the garden with two children and one ball".split()
    train = Dataset.from_dict(
        {
            "src": [" ".join(words_de[i:] + words_de[:i]) for i in range(14)] * 10,
            "tgt": [" ".join(words_en[i:] + words_en[:i]) for i in range(14)] * 10,
        }
    )
    # vocabularies this small hold the corpus's characters alone: none in capitals
    cfg = TokenizerConfig(vocab_size=300, model_type="bpe", upper_copies=0.0)
    with caplog.at_level(logging.INFO, logger="data.tokenizer"):
        first = train_tokenizer(train, cfg, tmp_path)
        second = train_tokenizer(train, cfg, tmp_path)
        separate = train_tokenizer(
            train, TokenizerConfig(vocab_size=30, joint=False, byte_fallback=False, upper_copies=0.0), tmp_path
        )
    assert first.fingerprint() == second.fingerprint()
    assert sum("training SentencePiece" in r.message for r in caplog.records) == 2
    assert any("loaded from cache" in r.message for r in caplog.records)
    assert not separate.joint and separate.src_model != separate.tgt_model
    with pytest.raises(UserError, match="SentencePiece training failed: .*Vocabulary size too high"):
        train_tokenizer(train, TokenizerConfig(vocab_size=5000), tmp_path)


def test_a_large_corpus_trains_the_tokenizer_on_a_sample(toy, tmp_path):
    """max_sentences caps what SentencePiece reads (its input_sentence_size, at least 101): a
    sample of the toy corpus's 1,400 sentences learns other pieces than all of them do."""
    train = toy.text["train"]
    everything = train_tokenizer(train, TokenizerConfig(vocab_size=340), tmp_path)
    sampled = train_tokenizer(train, TokenizerConfig(vocab_size=340, max_sentences=101), tmp_path)
    pieces = [{model.id_to_piece(i) for i in range(340)} for model in (everything.src, sampled.src)]
    assert pieces[0] != pieces[1]


def test_split_digits_writes_a_number_digit_by_digit(toy, tmp_path):
    """With split_digits every digit is a piece of its own, however the training text wrote its
    numbers; without, the toy corpus's years are pieces of several digits."""
    train = toy.text["train"]
    train = Dataset.from_dict({"src": [f"{s} 1999 2024" for s in train["src"]], "tgt": list(train["tgt"])})
    split = train_tokenizer(train, TokenizerConfig(vocab_size=340, split_digits=True), tmp_path)
    whole = train_tokenizer(train, TokenizerConfig(vocab_size=340, split_digits=False), tmp_path)
    pieces = split.src.encode("Von 1999 bis 2024.", out_type=str)
    assert [p.strip("▁") for p in pieces if p.strip("▁").isdigit()] == list("19992024")
    assert any(len(p.strip("▁")) > 1 and p.strip("▁").isdigit() for p in whole.src.encode("1999", out_type=str))
    assert split.src.decode(split.src.encode("Um 10:30 Uhr, 3,50 Euro.")) == "um 10:30 uhr, 3,50 euro."  # folded
    assert split.splits_digits and not whole.splits_digits  # as the model files say


def test_upper_copies_give_capitals_pieces_of_their_own(multi30k_dir, tmp_path):
    """Learning from a share of the sentences again in capitals, the vocabulary writes a line in
    capitals in far fewer pieces (captions in sentence case give it next to none in capitals),
    and sentence case in about as many. (All of Multi30k, vocabulary 8,000, a tenth again in
    capitals: an upper-cased validation source 62.9 -> 21.4 pieces, as it is 16.0 -> 16.4.)"""
    sides = {}
    for side, lang in (("src", "de"), ("tgt", "en")):
        with gzip.open(Path(multi30k_dir) / f"train.{lang}.gz", "rt", encoding="utf-8") as f:
            sides[side] = [line.strip() for line in f][:6000]
    train, held_out = Dataset.from_dict({k: v[:5000] for k, v in sides.items()}), sides["src"][5000:]
    as_it_is = TokenizerConfig(vocab_size=2000, fold_source_case=False)  # a folded source has no capitals
    plain = train_tokenizer(train, as_it_is, tmp_path)
    upper = train_tokenizer(train, replace(as_it_is, upper_copies=0.1), tmp_path)
    count = lambda tok, lines: sum(len(ids) for ids in tok.encode_src(lines))  # noqa: E731
    capitals = [s.upper() for s in held_out]
    assert count(upper, capitals) < 0.5 * count(plain, capitals)
    assert count(upper, held_out) < 1.1 * count(plain, held_out)
    with pytest.raises(ValueError, match="upper_copies must be a share"):
        TokenizerConfig(upper_copies=1.5)


def test_a_vocabulary_too_small_for_the_capitals_says_what_adds_them(tmp_path):
    """The copies in capitals (of a source read as it is) bring every letter's capital: a vocabulary that
    holds the corpus's letters but not their capitals is refused in one line that names the
    setting, and trains without it."""
    train = Dataset.from_dict({"src": ["ein hund läuft"] * 20, "tgt": ["a dog runs"] * 20})
    small = TokenizerConfig(vocab_size=20, byte_fallback=False, upper_copies=0.5, fold_source_case=False)
    with pytest.raises(
        UserError, match=r"required_chars.*upper_copies=0.5 adds the capitals of the letters; 0 leaves"
    ) as e:
        train_tokenizer(train, small, tmp_path)
    assert "\n" not in str(e.value)
    assert train_tokenizer(train, replace(small, upper_copies=0.0), tmp_path).src_vocab_size == 20
