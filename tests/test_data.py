"""Multi30k loading and its errors, the tokenizer and its caches, batching."""
import gzip
import logging
import re
import shutil
import unicodedata
from pathlib import Path

import numpy as np
import pytest
import torch

from data import (BOS_ID, EOS_ID, PAD_ID, DataConfig, SampledPairs, TokenBucketSampler, TokenizerConfig, collate,
                  load_multi30k, prepare_data)
from data.subword_sampling import SegmentationSampler
from data.tokenizer import train_tokenizer
from utils.errors import UserError


def test_real_multi30k_sizes_and_first_pairs(multi30k):
    text = multi30k.text
    assert {s: len(text[s]) for s in ("train", "val", "test_2016_flickr")} == {
        "train": 29000, "val": 1014, "test_2016_flickr": 1000}
    assert text["train"][0] == {"src": "Zwei junge weiße Männer sind im Freien in der Nähe vieler Büsche.",
                                "tgt": "Two young, White males are outside near many bushes."}
    assert text["test_2016_flickr"][0] == {"src": "Ein Mann mit einem orangefarbenen Hut, der etwas anstarrt.",
                                           "tgt": "A man in an orange hat starring at something."}
    assert [len(multi30k.tokens[s]) for s in text] == [len(text[s]) for s in text]


def test_other_direction_by_config(multi30k_dir):
    text = load_multi30k("en", "fr", multi30k_dir, splits=["val"])
    assert text["val"][0]["src"].startswith("A group of men")
    assert text["val"][0]["tgt"].startswith("Un groupe d'hommes")


def nmt_nfkc(s: str) -> str:
    """What SentencePiece's default normalizer does: NFKC, whitespace runs collapsed, stripped."""
    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", s)).strip()


def test_round_trip_on_test_sentences(multi30k):
    tok = multi30k.tokenizer
    test = multi30k.text["test_2016_flickr"]
    src, tgt = list(test["src"]), list(test["tgt"])
    assert tok.src.decode(tok.encode_src(src)) == [nmt_nfkc(s) for s in src]
    assert tok.decode_tgt(tok.encode_tgt(tgt)) == [nmt_nfkc(s) for s in tgt]
    # byte fallback: characters never seen in training still survive
    assert tok.decode_tgt(tok.encode_tgt(["Ωμέγα 漢字 ✓"])) == ["Ωμέγα 漢字 ✓"]


def test_special_ids_are_fixed(multi30k):
    sp = multi30k.tokenizer.src
    assert (sp.pad_id(), sp.unk_id(), sp.bos_id(), sp.eos_id()) == (PAD_ID, 1, BOS_ID, EOS_ID)
    assert multi30k.tokenizer.joint and multi30k.tokenizer.src_vocab_size == 8000


def test_tokenizer_trained_on_train_only_and_cached(tmp_path, caplog):
    words_de = "ein kleiner hund eine katze spielt im garten mit zwei kindern und einem ball".split()
    words_en = "a small dog a cat plays in the garden with two children and one ball".split()
    train_src = [" ".join(words_de[i:] + words_de[:i]) for i in range(len(words_de))] * 10
    train_tgt = [" ".join(words_en[i:] + words_en[:i]) for i in range(len(words_en))] * 10
    cfg = TokenizerConfig(vocab_size=300, model_type="bpe")
    with caplog.at_level(logging.INFO, logger="data.tokenizer"):
        first = train_tokenizer(train_src, train_tgt, cfg, tmp_path)
        second = train_tokenizer(train_src, train_tgt, cfg, tmp_path)
        separate = train_tokenizer(train_src, train_tgt,
                                   TokenizerConfig(vocab_size=30, joint=False, byte_fallback=False), tmp_path)
    assert first.fingerprint() == second.fingerprint()
    assert sum("training SentencePiece" in r.message for r in caplog.records) == 2
    assert any("loaded from cache" in r.message for r in caplog.records)
    assert not separate.joint and separate.src_model != separate.tgt_model
    with pytest.raises(UserError, match="SentencePiece training failed: .*Vocabulary size too high"):
        train_tokenizer(train_src, train_tgt, TokenizerConfig(vocab_size=5000), tmp_path)


def test_prepare_data_trains_the_tokenizer_on_the_training_pairs_only(multi30k_dir, tmp_path, monkeypatch):
    import data.tokenizer

    seen = []
    real_train = data.tokenizer._train_model
    monkeypatch.setattr(data.tokenizer, "_train_model", lambda sentences, cfg: seen.append(sentences) or
                        real_train(sentences, cfg))
    cfg = DataConfig(dir=multi30k_dir, cache_dir=str(tmp_path), max_train_examples=300, max_eval_examples=50,
                     tokenizer=TokenizerConfig(vocab_size=500))
    prepared = prepare_data(cfg)
    train = prepared.text["train"]
    assert seen == [list(train["src"]) + list(train["tgt"])]  # one joint model, of exactly these
    held_out = {s for split in ("val", "test_2016_flickr") for side in ("src", "tgt")
                for s in prepared.text[split][side]}
    assert held_out and not held_out & set(seen[0])


def tiny_text_and_tokenizer(tmp_path):
    from datasets import Dataset, DatasetDict

    pairs = {"src": [f"ein hund {i}" for i in range(60)], "tgt": [f"a dog {i}" for i in range(60)]}
    text = DatasetDict({"train": Dataset.from_dict(pairs), "val": Dataset.from_dict(pairs)})
    tokenizer = train_tokenizer(pairs["src"], pairs["tgt"], TokenizerConfig(vocab_size=25, byte_fallback=False),
                                tmp_path)
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
        real_save(self, path, **kwargs)  # ours, under a temporary name: the entry's name and more
        entry = Path(path).with_name(Path(path).name.lstrip(".").split(".")[0])
        real_save(self, str(entry), **kwargs)  # theirs, complete, under the entry's name
        finished.append(entry.name)

    finished = []
    monkeypatch.setattr(DatasetDict, "save_to_disk", save_while_another_run_finishes_first)
    tokens = tokenize_splits(text, tokenizer, tmp_path)
    assert tokens["train"]["src_ids"] == tokenizer.encode_src(text["train"]["src"])
    assert [p.name for p in (tmp_path / "tokenized").iterdir()] == finished  # theirs, and no temporary left


def test_tokenized_splits_are_cached(multi30k_dir, multi30k, multi30k_cache, caplog):
    with caplog.at_level(logging.INFO, logger="data"):
        again = prepare_data(DataConfig(dir=multi30k_dir, cache_dir=multi30k_cache))
    assert any("tokenized splits loaded from cache" in r.message for r in caplog.records)
    assert not any("training SentencePiece" in r.message for r in caplog.records)
    assert again.tokens["val"][:5] == multi30k.tokens["val"][:5]


# --- subword sampling ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def sampled(multi30k):
    return SampledPairs(multi30k.tokenizer, multi30k.text["train"].select(range(2000)), alpha=0.5, n_best=16)


def test_sampled_segmentations_spell_the_same_text_and_the_best_is_the_tokenized_one(multi30k, sampled):
    tokenizer, tokens = multi30k.tokenizer, multi30k.tokens["train"][:2000]
    pairs = sampled.epoch(0, seed=1)
    assert tokenizer.src.decode(pairs["src_ids"]) == tokenizer.src.decode(tokens["src_ids"])
    assert tokenizer.decode_tgt(pairs["tgt_ids"]) == tokenizer.decode_tgt(tokens["tgt_ids"])
    changed = sum(a != b for a, b in zip(pairs["src_ids"], tokens["src_ids"]))
    assert 200 < changed < 1800  # alpha 0.5: many sentences split otherwise, far from all
    greedy = SegmentationSampler(tokenizer.src, list(multi30k.text["train"]["src"][:2000]), n_best=16)
    assert greedy.draw(alpha=1e6, rng=np.random.default_rng(0)) == tokens["src_ids"]  # large alpha: the best


def test_draws_depend_on_seed_and_epoch_alone(sampled):
    first, other_epoch, other_seed = (sampled.epoch(0, seed=1), sampled.epoch(1, seed=1), sampled.epoch(0, seed=2))
    assert sampled.epoch(0, seed=1)["src_ids"] == first["src_ids"]  # after other draws
    assert first["src_ids"] != other_epoch["src_ids"] and first["src_ids"] != other_seed["src_ids"]
    assert first["tgt_ids"] != other_epoch["tgt_ids"]


def test_draws_follow_p_to_the_alpha_over_the_n_best(multi30k):
    """Drawn often, each of a sentence's segmentations comes up as often as softmax(alpha * log P)."""
    sentence, alpha = "Ein kleiner Junge spielt Fußball.", 0.5
    sampler = SegmentationSampler(multi30k.tokenizer.src, [sentence] * 20_000, n_best=4)
    segmentations = multi30k.tokenizer.src.nbest_encode_as_ids(sentence, nbest_size=4)
    log_p = np.array([sum(map(multi30k.tokenizer.src.get_score, ids)) for ids in segmentations])
    expected = np.exp(alpha * log_p) / np.exp(alpha * log_p).sum()
    drawn = sampler.draw(alpha, np.random.default_rng(3))
    observed = np.array([sum(d == ids for d in drawn) for ids in segmentations]) / len(drawn)
    assert np.allclose(observed, expected, atol=0.015), (observed, expected)


# --- batching ---------------------------------------------------------------------------

def lengths(data):
    train = data.tokens["train"]
    return [len(x) for x in train["src_ids"]], [len(x) for x in train["tgt_ids"]]


def test_sampler_covers_each_example_once_within_budget(toy):
    src_len, tgt_len = lengths(toy)
    sampler = TokenBucketSampler(src_len, tgt_len, max_tokens=256, seed=3)
    batches = list(sampler)
    assert sorted(i for b in batches for i in b) == list(range(len(src_len)))
    for b in batches:
        assert len(b) * max(max(src_len[i], tgt_len[i] + 1) for i in b) <= 256


def test_sampler_order_depends_on_epoch_and_seed_only(toy):
    src_len, tgt_len = lengths(toy)
    sampler = TokenBucketSampler(src_len, tgt_len, max_tokens=256, seed=3)
    epoch0 = list(sampler)
    sampler.set_epoch(1)
    epoch1 = list(sampler)
    assert epoch0 != epoch1
    same_seed = TokenBucketSampler(src_len, tgt_len, max_tokens=256, seed=3)
    assert list(same_seed) == epoch0
    assert list(TokenBucketSampler(src_len, tgt_len, max_tokens=256, seed=4)) != epoch0
    sampler.set_epoch(1, start=3)  # resume inside an epoch
    assert list(sampler) == epoch1[3:] and len(sampler) == len(epoch1) - 3


@pytest.mark.parametrize("world_size", [2, 3])
def test_sampler_ranks_are_disjoint_covering_and_equal(toy, world_size):
    src_len, tgt_len = lengths(toy)
    shards = [list(TokenBucketSampler(src_len, tgt_len, 256, seed=0, rank=r, world_size=world_size))
              for r in range(world_size)]
    assert len({len(s) for s in shards}) == 1, "every rank must run the same number of steps"
    seen = [i for shard in shards for b in shard for i in b]
    assert len(seen) == len(set(seen)) == len(src_len)


def test_padding_efficiency_on_train(multi30k):
    src_len, tgt_len = lengths(multi30k)
    real = padded = 0
    for b in TokenBucketSampler(src_len, tgt_len, max_tokens=4096, seed=0):
        real += sum(src_len[i] + tgt_len[i] + 1 for i in b)
        padded += len(b) * (max(src_len[i] for i in b) + max(tgt_len[i] for i in b) + 1)
    assert real / padded >= 0.90


def test_sampler_rejects_budget_below_longest_sentence():
    with pytest.raises(UserError, match="smaller than the longest sentence"):
        TokenBucketSampler([3, 50], [4, 5], max_tokens=20)


def test_collate_builds_decoder_input_and_target():
    batch = collate([{"src_ids": [5, 6, 7], "tgt_ids": [8, 9]}, {"src_ids": [5], "tgt_ids": [8, 9, 10]}])
    assert batch.src.tolist() == [[5, 6, 7], [5, PAD_ID, PAD_ID]]
    assert batch.tgt_in.tolist() == [[BOS_ID, 8, 9, PAD_ID], [BOS_ID, 8, 9, 10]]
    assert batch.tgt_out.tolist() == [[8, 9, EOS_ID, PAD_ID], [8, 9, 10, EOS_ID]]
    assert batch.src_mask.tolist() == [[True] * 3, [True, False, False]]
    assert batch.n_tgt_tokens == 7
    assert batch.to("cpu").tgt_mask.dtype == torch.bool


# --- errors -----------------------------------------------------------------------------

def write(folder, name, lines, raw: bytes | None = None):
    data = raw if raw is not None else ("\n".join(lines) + "\n").encode()
    (folder / name).write_bytes(gzip.compress(data) if name.endswith(".gz") else data)


def make_folder(tmp_path, n=3):
    for split in ("train", "val", "test_2016_flickr"):
        write(tmp_path, f"{split}.de.gz", [f"satz {i}" for i in range(n)])
        write(tmp_path, f"{split}.en.gz", [f"sentence {i}" for i in range(n)])
    return tmp_path


def test_plain_text_files_are_accepted(tmp_path):
    make_folder(tmp_path)
    (tmp_path / "val.en.gz").unlink()
    write(tmp_path, "val.en", ["plain 0", "plain 1", "plain 2"])
    assert load_multi30k("de", "en", str(tmp_path))["val"][1]["tgt"] == "plain 1"


def test_empty_pairs_dropped_from_train_but_kept_in_test(tmp_path, caplog):
    make_folder(tmp_path)
    for split in ("train", "test_2016_flickr"):
        write(tmp_path, f"{split}.de.gz", ["eins", "  ", "drei"])
        write(tmp_path, f"{split}.en.gz", ["one", "two", ""])
    with caplog.at_level(logging.INFO, logger="data.multi30k"):
        text = load_multi30k("de", "en", str(tmp_path))
    assert list(text["train"]["tgt"]) == ["one"]
    assert list(text["test_2016_flickr"]["tgt"]) == ["one", "two", ""]
    assert "dropped 2 empty or whitespace-only training pairs" in caplog.text


def test_missing_file_lists_what_exists(tmp_path):
    make_folder(tmp_path)
    (tmp_path / "val.en.gz").unlink()
    with pytest.raises(UserError, match=r"missing val\.en\.gz in .*; it holds: test_2016_flickr\.de\.gz, "):
        load_multi30k("de", "en", str(tmp_path), splits=["train", "val"])


def test_a_folder_without_validation_files_is_one_line(tmp_path):
    make_folder(tmp_path)
    for lang in ("de", "en"):
        (tmp_path / f"val.{lang}.gz").unlink()
    with pytest.raises(UserError, match=r"^missing val\.de\.gz in .*; it holds: test_2016_flickr\.de\.gz, "):
        load_multi30k("de", "en", str(tmp_path))


def test_line_count_mismatch_names_both_files(tmp_path):
    make_folder(tmp_path)
    write(tmp_path, "val.en.gz", ["only one"])
    with pytest.raises(UserError, match=r"val\.de\.gz has 3 lines, .*val\.en\.gz has 1$"):
        load_multi30k("de", "en", str(tmp_path))


def test_unreadable_gzip(tmp_path):
    make_folder(tmp_path)
    (tmp_path / "val.de.gz").write_bytes(b"this is not gzip")
    with pytest.raises(UserError, match=r"val\.de\.gz is not a readable gzip file"):
        load_multi30k("de", "en", str(tmp_path))


def test_non_utf8_bytes(tmp_path):
    make_folder(tmp_path)
    write(tmp_path, "val.de.gz", [], raw=b"gut\nkaputt \xff\xfe\n")
    with pytest.raises(UserError, match=r"val\.de\.gz is not valid UTF-8 \(line 2, byte 8 of the line\)"):
        load_multi30k("de", "en", str(tmp_path))


def test_lines_end_at_newlines_only(tmp_path):
    """NEL, U+2028 and form feed inside sentences (str.splitlines() ends lines at each) keep the
    pairs aligned; a CRLF file reads as an LF one."""
    make_folder(tmp_path)
    write(tmp_path, "val.de.gz", [], raw="ein\x85Hund\r\nzwei\u2028Katzen\r\ndrei\x0cV\u00f6gel\r\n".encode())
    write(tmp_path, "val.en.gz", [], raw="a dog\ntwo cats\nthree birds\n".encode())
    val = load_multi30k("de", "en", str(tmp_path))["val"]
    assert val["src"] == ["ein\x85Hund", "zwei\u2028Katzen", "drei\x0cV\u00f6gel"]
    assert val["tgt"] == ["a dog", "two cats", "three birds"]


def test_missing_folder_and_bad_language(tmp_path):
    with pytest.raises(UserError, match=r"Multi30k folder .*nowhere \(from data\.dir\) does not exist"):
        load_multi30k("de", "en", str(tmp_path / "nowhere"))
    with pytest.raises(UserError, match="unknown language 'xx'"):
        load_multi30k("xx", "en", str(tmp_path))


def test_no_folder_and_no_network_says_how_to_point_at_a_copy(monkeypatch):
    monkeypatch.delenv("MULTI30K_DIR", raising=False)
    monkeypatch.setattr("datasets.config.HF_DATASETS_OFFLINE", True)
    with pytest.raises(UserError, match=r"download failed.*data\.dir=/path/to/multi30k or MULTI30K_DIR="):
        load_multi30k("de", "en", None, splits=["val"])


def test_download_path_has_its_http_filesystem():
    """Without a local folder, files come through datasets -> fsspec's HTTP filesystem, which
    raises ImportError unless aiohttp and requests are installed (found missing once)."""
    import fsspec

    assert type(fsspec.filesystem("https")).__name__ == "HTTPFileSystem"
