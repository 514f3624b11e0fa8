"""data/sources.py: a user's own corpus as parallel files, TSV, JSONL or a Hugging Face dataset,
carving validation, and every bad input in one line. Built from the committed toy corpus."""

import gzip
import json
import logging

import datasets
import pytest

from data import DataConfig, TokenizerConfig, load_multi30k, prepare_data
from data.prepare import load_corpus
from helpers import TOY_CORPUS, run_train
from utils.errors import UserError

TOY = load_multi30k("de", "en", str(TOY_CORPUS))


def corpus(source: str, **settings) -> datasets.DatasetDict:
    return load_corpus(DataConfig(source=source, **settings))


def as_pairs(ds) -> list[tuple[str, str]]:
    return list(zip(ds["src"], ds["tgt"]))


def test_parallel_files_are_read_as_multi30k_reads_them_in_either_direction(tmp_path):
    (tmp_path / "dev.de.gz").write_bytes(gzip.compress((TOY_CORPUS / "val.de").read_bytes()))  # .gz too
    (tmp_path / "dev.en").write_bytes((TOY_CORPUS / "val.en").read_bytes())
    text = corpus(
        "files", train=str(TOY_CORPUS / "train"), val=str(tmp_path / "dev"), test=[str(TOY_CORPUS / "test_2016_flickr")]
    )
    assert list(text) == ["train", "val", "test_2016_flickr"]
    for split in text:
        assert as_pairs(text[split]) == as_pairs(TOY[split])
    reverse = corpus("files", src_lang="en", tgt_lang="de", train=str(TOY_CORPUS / "train"), val=str(tmp_path / "dev"))
    assert reverse["val"]["src"] == TOY["val"]["tgt"] and reverse["val"]["tgt"] == TOY["val"]["src"]


def test_a_large_corpus_becomes_arrow_a_chunk_at_a_time(tmp_path, monkeypatch):
    """Pairs are converted CHUNK at a time (never one Python list of the corpus): chunk borders
    change nothing, and a file that runs out in a later chunk still names both counts."""
    from data import sources

    monkeypatch.setattr(sources, "CHUNK", 64)
    train = corpus("files", train=str(TOY_CORPUS / "train"), val=str(TOY_CORPUS / "val"))["train"]
    assert train.data.column("src").num_chunks > 1  # Arrow chunks, not one list
    assert as_pairs(train) == as_pairs(TOY["train"])
    lines = (TOY_CORPUS / "train.en").read_text(encoding="utf-8").splitlines()
    (tmp_path / "long.de").write_text("\n".join(lines[:-1]) + "\n", encoding="utf-8")
    (tmp_path / "long.en").write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(UserError, match=f"long.de has {len(lines) - 1} lines, .*long.en has {len(lines)}$"):
        corpus("files", src_lang="de", tgt_lang="en", train=str(tmp_path / "long"), val=str(TOY_CORPUS / "val"))


def write_tsv(path, header: list[str] | None, rows) -> str:
    lines = (["\t".join(header)] if header else []) + ["\t".join(row) for row in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def test_tsv_columns_by_number_or_by_header_name(tmp_path):
    rows = [(str(i), de, en) for i, (de, en) in enumerate(as_pairs(TOY["train"]))]
    by_name = write_tsv(tmp_path / "named.tsv", ["id", "en", "de"], [(i, en, de) for i, de, en in rows])
    text = corpus("tsv", train=by_name, header=True, src_field="de", tgt_field="en", val_size=50)
    assert sorted(as_pairs(text["train"]) + as_pairs(text["val"])) == sorted(as_pairs(TOY["train"]))
    plain = write_tsv(tmp_path / "plain.tsv", None, [(de, en) for _, de, en in rows[:300]])
    assert as_pairs(corpus("tsv", train=plain, val=plain)["val"]) == as_pairs(TOY["train"])[:300]  # columns 0, 1


def test_tsv_quotes_are_text_unless_csv_quoting_is_asked_for(tmp_path, caplog):
    """quoting=none (the default): a field is everything between tabs, its quotes too, said in the
    log; quoting=csv: CSV's rules, a tab inside quotes, "" a quote."""
    path = tmp_path / "q.tsv"
    path.write_text('de\ten\n"ein\tHund"\t"a ""dog"""\n"Katze"\t"cat"\n', encoding="utf-8")
    read = corpus("tsv", train=str(path), val=str(path), header=True, src_field="de", tgt_field="en", quoting="csv")
    assert as_pairs(read["val"]) == [("ein\tHund", 'a "dog"'), ("Katze", "cat")]
    with caplog.at_level(logging.WARNING, logger="data.sources"):
        plain = corpus("tsv", train=str(path), val=str(path), header=True, src_field="de", tgt_field="en")
    assert as_pairs(plain["val"]) == [('"ein', 'Hund"'), ('"Katze"', '"cat"')]
    assert (
        "line 3: the fields are in double quotes, which are kept as part of the text; data.quoting=csv" in caplog.text
    )


def test_test_splits_of_one_name_each_keep_their_own(tmp_path):
    """Two test sets of one file name in different folders, and a third already named as the
    second would be renamed: three splits (one was once silently dropped)."""
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        for lang in ("de", "en"):
            (tmp_path / folder / f"test.{lang}").write_text(f"{folder} {lang}\n")
            (tmp_path / folder / f"test_2.{lang}").write_text(f"{folder}2 {lang}\n")
    text = corpus(
        "files",
        train=str(TOY_CORPUS / "train"),
        val=str(TOY_CORPUS / "val"),
        test=[str(tmp_path / "a" / "test_2"), str(tmp_path / "a" / "test"), str(tmp_path / "b" / "test")],
    )
    assert {split: text[split]["src"] for split in text if split not in ("train", "val")} == {
        "test_2": ["a2 de"],
        "test": ["a de"],
        "test_3": ["b de"],
    }


def test_jsonl_as_translation_records_or_two_keys(tmp_path):
    records = tmp_path / "train.jsonl"
    records.write_text(
        "".join(
            json.dumps({"translation": {"de": de, "en": en}}, ensure_ascii=False) + "\n"
            for de, en in as_pairs(TOY["val"])
        ),
        encoding="utf-8",
    )
    keys = tmp_path / "keys.jsonl"
    keys.write_text("".join(json.dumps({"quelle": de, "ziel": en}) + "\n" for de, en in as_pairs(TOY["val"])))
    assert as_pairs(corpus("jsonl", train=str(records), val=str(records))["val"]) == as_pairs(TOY["val"])
    text = corpus("jsonl", train=str(keys), val=str(keys), src_field="quelle", tgt_field="ziel")
    assert as_pairs(text["train"]) == as_pairs(TOY["val"])


def hf_copy(folder) -> str:
    """The toy corpus as a Hugging Face translation dataset saved locally, as a user would bring
    one from a machine with a network: wmt16's layout (translation column, validation split)."""
    datasets.DatasetDict(
        {
            theirs: datasets.Dataset.from_dict(
                {"translation": [{"de": de, "en": en} for de, en in as_pairs(TOY[ours])]}
            )
            for ours, theirs in (("train", "train"), ("val", "validation"), ("test_2016_flickr", "test"))
        }
    ).save_to_disk(str(folder))
    return str(folder)


def test_a_saved_hugging_face_dataset_and_local_data_files(tmp_path):
    text = corpus("hf", name=hf_copy(tmp_path / "saved"), train="train", val="validation", test=["test"])
    assert list(text) == ["train", "val", "test"]
    assert as_pairs(text["test"]) == as_pairs(TOY["test_2016_flickr"])
    files = tmp_path / "files"
    files.mkdir()
    for split in ("train", "validation"):
        (files / f"{split}.jsonl").write_text(
            "".join(json.dumps({"de": de, "en": en}) + "\n" for de, en in as_pairs(TOY["val"]))
        )
    text = corpus("hf", name=str(files), train="train", val="validation")
    assert as_pairs(text["val"]) == as_pairs(TOY["val"])


def test_a_missing_sentence_in_a_hugging_face_dataset_reads_as_empty(tmp_path):
    datasets.Dataset.from_dict(
        {"de": ["ein Hund", None, "eine Katze"], "en": ["a dog", "a cat?", "a cat"]}
    ).save_to_disk(str(tmp_path / "nulls"))
    text = corpus("hf", name=str(tmp_path / "nulls"), train="train", val="train")
    assert as_pairs(text["train"]) == [("ein Hund", "a dog"), ("eine Katze", "a cat")]  # dropped from training
    assert as_pairs(text["val"]) == [("ein Hund", "a dog"), ("", "a cat?"), ("eine Katze", "a cat")]  # kept aligned


def test_validation_is_carved_from_training_when_there_is_none():
    text = corpus("files", train=str(TOY_CORPUS / "train"), val_size=100, val_seed=3)
    assert (len(text["train"]), len(text["val"])) == (600, 100)
    assert sorted(as_pairs(text["train"]) + as_pairs(text["val"])) == sorted(as_pairs(TOY["train"]))
    again = corpus("files", train=str(TOY_CORPUS / "train"), val_size=100, val_seed=3)
    assert as_pairs(again["val"]) == as_pairs(text["val"])
    other = corpus("files", train=str(TOY_CORPUS / "train"), val_size=100, val_seed=4)
    assert as_pairs(other["val"]) != as_pairs(text["val"])
    only_val = load_corpus(
        DataConfig(source="files", train=str(TOY_CORPUS / "train"), val_size=100, val_seed=3), splits=["val"]
    )
    assert list(only_val) == ["val"] and as_pairs(only_val["val"]) == as_pairs(text["val"])  # heads.py asks so


def test_everything_after_loading_is_the_one_path(tmp_path):
    data = prepare_data(
        DataConfig(
            source="files",
            train=str(TOY_CORPUS / "train"),
            val=str(TOY_CORPUS / "val"),
            test=[str(TOY_CORPUS / "test_2016_flickr")],
            cache_dir=str(tmp_path),
            tokenizer=TokenizerConfig(vocab_size=340),
        )
    )
    multi30k = prepare_data(
        DataConfig(dir=str(TOY_CORPUS), cache_dir=str(tmp_path), tokenizer=TokenizerConfig(vocab_size=340))
    )
    assert data.tokenizer.fingerprint() == multi30k.tokenizer.fingerprint()  # the same text: the same cache
    assert data.tokens["test_2016_flickr"]["tgt_ids"] == multi30k.tokens["test_2016_flickr"]["tgt_ids"]


def test_a_run_trains_on_parallel_files_from_the_command_line(tmp_path):
    run_train(
        tmp_path / "run",
        "experiment=ci",
        "data=files",
        f"data.train={TOY_CORPUS / 'train'}",
        f"data.test=[{TOY_CORPUS / 'test_2016_flickr'}]",
        "data.val_size=100",
        "data.src_lang=en",
        "data.tgt_lang=de",
        "data.tokenizer.vocab_size=340",
        "data.max_train_examples=null",
        "train.max_steps=20",
        "train.eval_every=10",
        "train.head_importance=false",
        f"data.cache_dir={tmp_path / 'cache'}",
    )
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert list(results["test"]) == ["test_2016_flickr"] and results["steps"] == 20
    assert len((tmp_path / "run" / "test_2016_flickr.hyp.de").read_text(encoding="utf-8").splitlines()) == 100
    assert (
        "no validation split: 100 training pairs (seed 1234) validate instead, 600 train"
        in (tmp_path / "run" / "train.log").read_text()
    )


def bad(tmp_path, name: str) -> dict:
    """Settings that each break one way; the files they name are written here."""
    train = str(TOY_CORPUS / "train")
    (tmp_path / "short.de").write_text("a\nb\nc\n")
    (tmp_path / "short.en").write_text("a\nb\n")
    (tmp_path / "empty.de").write_text("")
    (tmp_path / "empty.en").write_text("")
    (tmp_path / "latin1.de").write_bytes("gut\nSchöne Grüße\n".encode("latin-1"))
    (tmp_path / "latin1.en").write_text("good\nkind regards\n")
    (tmp_path / "tiny.de").write_text("a\nb\n")
    (tmp_path / "tiny.en").write_text("a\nb\n")
    write_tsv(tmp_path / "t.tsv", ["de", "en"], [("a", "b")])
    (tmp_path / "r.jsonl").write_text(json.dumps({"de": "a", "english": "b"}) + "\n")
    (tmp_path / "list.jsonl").write_text(
        json.dumps({"de": "a", "en": "b"}) + "\n" + json.dumps({"translation": ["c", "d"]}) + "\n"
    )
    (tmp_path / "half.jsonl").write_text('{"de": "a", "en": "b"}\n{"de": "x\\ud800y", "en": "z"}\n')
    (tmp_path / "q.tsv").write_text('de\ten\n"a\tb"\t"c"d"\n')
    (tmp_path / "broken").mkdir(exist_ok=True)
    (tmp_path / "broken" / "train.json").write_text('{"de": "a", "en": "b"}\nnot JSON {\n')
    return {
        "line counts": dict(source="files", train=train, val=str(tmp_path / "short")),
        "missing language": dict(source="files", train=train, tgt_lang="fr"),
        "empty file": dict(source="files", train=train, val=str(tmp_path / "empty")),
        "not UTF-8": dict(source="files", train=train, val=str(tmp_path / "latin1")),
        "too few to carve": dict(source="files", train=str(tmp_path / "tiny")),
        "no train": dict(source="files"),
        "tsv column": dict(
            source="tsv",
            train=str(tmp_path / "t.tsv"),
            val=str(tmp_path / "t.tsv"),
            header=True,
            src_field="de",
            tgt_field="fr",
        ),
        "jsonl key": dict(source="jsonl", train=str(tmp_path / "r.jsonl"), val=str(tmp_path / "r.jsonl")),
        "jsonl list": dict(source="jsonl", train=str(tmp_path / "list.jsonl"), val=str(tmp_path / "list.jsonl")),
        "jsonl surrogate": dict(source="jsonl", train=str(tmp_path / "half.jsonl"), val=str(tmp_path / "half.jsonl")),
        "csv quoting": dict(
            source="tsv", train=str(tmp_path / "q.tsv"), val=str(tmp_path / "q.tsv"), header=True, quoting="csv"
        ),
        "hub offline": dict(source="hf", name="wmt16", subset="de-en", train="train", val="validation"),
        "hf files": dict(source="hf", name=str(tmp_path / "broken"), train="train", val=None),
        "hf config": dict(source="hf", name=str(tmp_path / "broken"), subset="de-en", train="train", val=None),
        "hf split": dict(source="hf", name=hf_copy(tmp_path / "saved"), train="train", val="dev"),
        "unknown source": dict(source="csv", train=train),
    }[name]


@pytest.mark.parametrize(
    "name, message",
    [
        ("line counts", "line counts differ: {tmp}/short.de has 3 lines, {tmp}/short.en has 2"),
        ("missing language", "no train file for 'fr': neither {toy}/train.fr nor {toy}/train.fr.gz exists"),
        ("empty file", "{tmp}/empty.de and {tmp}/empty.en holds no pairs for split 'val'"),
        ("not UTF-8", "{tmp}/latin1.de is not valid UTF-8 (line 2, byte 4 of the line)"),
        ("too few to carve", "no validation split given and 2 training pairs are too few to carve 1000 from"),
        ("no train", "data.train is required: the training prefix ({{prefix}}.{{lang}})"),
        ("tsv column", "{tmp}/t.tsv has no column 'fr'; its header has de, en"),
        ("jsonl key", "{tmp}/r.jsonl line 1 has no 'en' (neither a key nor translation.en); it has de, english"),
        (
            "jsonl list",
            "{tmp}/list.jsonl line 2 has no 'de' (neither a key nor translation.de); it has translation "
            "(its translation is a list, not an object)",
        ),
        (
            "jsonl surrogate",
            "{tmp}/half.jsonl line 2 holds '\\ud800', half of a UTF-16 surrogate pair, which is no character",
        ),
        ("csv quoting", "{tmp}/q.tsv line 2 is not a row by CSV rules"),
        (
            "hub offline",
            "cannot reach the Hugging Face hub for 'wmt16' (Couldn't reach 'wmt16' on the Hub "
            "(OfflineModeIsEnabled)); without a network",
        ),
        ("hf files", "cannot read the data files of '{tmp}/broken' as a dataset: "),
        ("hf config", "dataset '{tmp}/broken' has no configuration 'de-en': BuilderConfig 'de-en' not found"),
        ("hf split", "has no split 'dev'; it has train, validation, test"),
        ("unknown source", "data.source must be one of multi30k, files, tsv, jsonl, hf, not 'csv'"),
    ],
)
def test_bad_input_is_one_clear_line(tmp_path, name, message):
    with pytest.raises(UserError) as error:
        corpus(**bad(tmp_path, name))
    said = str(error.value)
    assert message.format(tmp=tmp_path, toy=TOY_CORPUS) in said and "\n" not in said, said
    if name == "hub offline":
        assert "save_to_disk" in said and "data.name=FOLDER" in said
