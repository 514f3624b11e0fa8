"""data/prepare.py: the tokenizer trained on training pairs only, tokenized splits cached, and runs that
cache at once leaving each other's files alone."""

import logging
import shutil
from pathlib import Path

from data import DataConfig, TokenizerConfig, prepare_data
from data.prepare import tokenize_splits
from data.source_folding import fold
from data.tokenizer import train_tokenizer
from helpers import TOY_CORPUS


def test_prepare_data_trains_the_tokenizer_on_the_training_pairs_only(tmp_path, monkeypatch):
    import data.tokenizer

    seen = []
    real_train = data.tokenizer._train_model

    def train_recording(sentences, cfg):
        seen.append(list(sentences))
        return real_train(iter(seen[-1]), cfg)

    monkeypatch.setattr(data.tokenizer, "_train_model", train_recording)
    cfg = DataConfig(
        dir=str(TOY_CORPUS),
        cache_dir=str(tmp_path),
        max_train_examples=300,
        max_eval_examples=50,
        tokenizer=TokenizerConfig(vocab_size=320),  # the recipe's: no copies in capitals, the source folded
    )
    prepared = prepare_data(cfg)
    train = prepared.text["train"]
    # one joint model, of exactly these, the source as its model file reads it
    assert seen == [[fold(s, True, True) for s in train["src"]] + list(train["tgt"])]
    held_out = {
        s for split in ("val", "test_2016_flickr") for side in ("src", "tgt") for s in prepared.text[split][side]
    }
    assert held_out and not held_out & set(seen[0])


def tiny_text_and_tokenizer(tmp_path):
    from datasets import Dataset, DatasetDict

    pairs = {"src": [f"ein hund {i}" for i in range(60)], "tgt": [f"a dog {i}" for i in range(60)]}
    text = DatasetDict({"train": Dataset.from_dict(pairs), "val": Dataset.from_dict(pairs)})
    tokenizer = train_tokenizer(
        text["train"],
        TokenizerConfig(vocab_size=25, byte_fallback=False, upper_copies=0.0, split_digits=False),
        tmp_path,
    )
    return text, tokenizer


def test_a_tokenized_cache_entry_being_written_by_another_run_is_left_alone(tmp_path):
    """Runs preparing the same data at once (bench/rank_on_gpu.sh): one must not delete the
    other's half-written entry, whatever its temporary name."""
    from data.prepare import tokenize_splits

    text, tokenizer = tiny_text_and_tokenizer(tmp_path)
    first = tokenize_splits(text, tokenizer, tmp_path)
    entry = next((tmp_path / "tokenized").iterdir())
    shutil.rmtree(entry)
    others = [entry.with_name(entry.name + ".tmp"), entry.with_name(f".{entry.name}.other.tmp")]
    for folder in others:  # what other runs are writing right now
        folder.mkdir()
        (folder / "half-written").write_text("")
    again = tokenize_splits(text, tokenizer, tmp_path)
    assert all((folder / "half-written").is_file() for folder in others)
    assert again["val"]["src_ids"] == first["val"]["src_ids"]


def test_a_run_that_finishes_caching_second_keeps_the_first_ones_entry(tmp_path, monkeypatch):
    from datasets import DatasetDict

    from data.prepare import tokenize_splits

    text, tokenizer = tiny_text_and_tokenizer(tmp_path)
    real_save = DatasetDict.save_to_disk

    def save_while_another_run_finishes_first(self, path, **kwargs):
        real_save(self, path, **kwargs)  # ours, into a temporary folder: the entry's name and more
        temporary = Path(path)
        entry = temporary.with_name(temporary.name.lstrip(".").split(".")[0])
        real_save(self, str(entry), **kwargs)  # theirs, complete, under the entry's name
        finished.append(entry.name)

    finished = []
    monkeypatch.setattr(DatasetDict, "save_to_disk", save_while_another_run_finishes_first)
    tokens = tokenize_splits(text, tokenizer, tmp_path)
    assert tokens["train"]["src_ids"] == tokenizer.encode_src(text["train"]["src"])
    assert [p.name for p in (tmp_path / "tokenized").iterdir()] == finished  # theirs, and no temporary left


def test_tokenized_splits_are_cached(toy, toy_cache, caplog):
    with caplog.at_level(logging.INFO, logger="data"):
        again = prepare_data(
            DataConfig(dir=str(TOY_CORPUS), cache_dir=toy_cache, tokenizer=TokenizerConfig(vocab_size=340))
        )
    assert any("tokenized splits loaded from cache" in r.message for r in caplog.records)
    assert not any("training SentencePiece" in r.message for r in caplog.records)
    assert again.tokens["val"][:5] == toy.tokens["val"][:5]


def test_tokenizing_shows_a_bar_for_a_large_corpus_only(toy, tmp_path, monkeypatch, capfd):
    """A bar where tokenizing takes a while; none for Multi30k's size, so a one-line error
    after data preparation stays one line."""
    import data.prepare

    tokenize_splits(toy.text, toy.tokenizer, tmp_path / "small")
    assert "tokenizing" not in capfd.readouterr().err
    monkeypatch.setattr(data.prepare, "BAR_FROM_PAIRS", 500)  # the toy corpus's 700 training pairs: "large"
    tokenize_splits(toy.text, toy.tokenizer, tmp_path / "large")
    assert "tokenizing: 100%" in capfd.readouterr().err
