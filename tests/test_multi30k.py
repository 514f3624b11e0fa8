"""data/multi30k.py: Multi30k loaded from a folder, and every error a folder can give (downloading:
tests/test_download.py)."""

import gzip
import logging

import pytest

from data import load_multi30k
from utils.errors import UserError


def test_real_multi30k_sizes_and_first_pairs(multi30k):
    text = multi30k.text
    assert {s: len(text[s]) for s in ("train", "val", "test_2016_flickr")} == {
        "train": 29000,
        "val": 1014,
        "test_2016_flickr": 1000,
    }
    assert text["train"][0] == {
        "src": "Zwei junge weiße Männer sind im Freien in der Nähe vieler Büsche.",
        "tgt": "Two young, White males are outside near many bushes.",
    }
    assert text["test_2016_flickr"][0] == {
        "src": "Ein Mann mit einem orangefarbenen Hut, der etwas anstarrt.",
        "tgt": "A man in an orange hat starring at something.",
    }
    assert [len(multi30k.tokens[s]) for s in text] == [len(text[s]) for s in text]


def test_other_direction_by_config(multi30k_dir):
    text = load_multi30k("en", "fr", multi30k_dir, splits=["val"])
    assert text["val"][0]["src"].startswith("A group of men")
    assert text["val"][0]["tgt"].startswith("Un groupe d'hommes")


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
    with caplog.at_level(logging.INFO, logger="data.sources"):
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
    (tmp_path / "val.de.gz").write_bytes(gzip.compress(b"gut\n" * 1000)[:-20])  # gzip's header, then cut off
    with pytest.raises(UserError, match=r"val\.de\.gz is not a readable gzip file"):
        load_multi30k("de", "en", str(tmp_path))


def test_gzip_is_told_by_its_content_never_by_its_name(tmp_path):
    """A download cached under a hash has no .gz (found once: read as text, it was 'not UTF-8'), and
    a plain file may be called .gz."""
    make_folder(tmp_path)
    (tmp_path / "val.de.gz").write_bytes(b"eins\nzwei\ndrei\n")  # plain text under a .gz name
    (tmp_path / "val.en.gz").unlink()
    (tmp_path / "val.en").write_bytes(gzip.compress(b"one\ntwo\nthree\n"))  # gzip under a plain name
    val = load_multi30k("de", "en", str(tmp_path))["val"]
    assert val["src"] == ["eins", "zwei", "drei"] and val["tgt"] == ["one", "two", "three"]


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
    write(tmp_path, "val.en.gz", [], raw=b"a dog\ntwo cats\nthree birds\n")
    val = load_multi30k("de", "en", str(tmp_path))["val"]
    assert val["src"] == ["ein\x85Hund", "zwei\u2028Katzen", "drei\x0cV\u00f6gel"]
    assert val["tgt"] == ["a dog", "two cats", "three birds"]


def test_missing_folder_and_bad_language(tmp_path):
    with pytest.raises(UserError, match=r"Multi30k folder .*nowhere \(from data\.dir\) does not exist"):
        load_multi30k("de", "en", str(tmp_path / "nowhere"))
    with pytest.raises(UserError, match="unknown language 'xx'"):
        load_multi30k("xx", "en", str(tmp_path))


def test_the_hub_path_has_its_http_filesystem():
    """data=hf with a hub name downloads through datasets -> fsspec's HTTP filesystem, which
    raises ImportError unless aiohttp and requests are installed (found missing once)."""
    import fsspec

    assert type(fsspec.filesystem("https")).__name__ == "HTTPFileSystem"
