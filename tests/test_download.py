"""Multi30k without a local folder: downloaded from data.url (here a local HTTP server, as there is
no internet), cached, read from the cache without a server; every way a download fails is one line
naming the URL and the way out, and leaves nothing in the cache that a later run would read."""

import gzip
import os

import pytest

from data.multi30k import download_folder, load_multi30k
from helpers import TOY_CORPUS, run_train
from helpers.servers import free_port, mirror, serving
from utils.errors import UserError


@pytest.fixture(autouse=True)
def no_local_copy(monkeypatch):
    """As a new user: no MULTI30K_DIR, so that Multi30k is downloaded."""
    monkeypatch.delenv("MULTI30K_DIR", raising=False)


@pytest.fixture(scope="module")
def toy_mirror(tmp_path_factory):
    """The toy corpus laid out as the official files are, {split}.{lang}.gz, and as plain text."""
    folder = tmp_path_factory.mktemp("mirror")
    for path in TOY_CORPUS.glob("*.??"):
        (folder / f"{path.name}.gz").write_bytes(gzip.compress(path.read_bytes()))
        (folder / path.name).write_bytes(path.read_bytes())
    return folder


def test_download_caches_then_reads_without_the_server(toy_mirror, tmp_path):
    with serving(mirror(toy_mirror)) as base:
        url = base + "/{split}.{lang}.gz"
        text = load_multi30k("de", "en", url=url, cache_dir=tmp_path)
    assert {split: len(ds) for split, ds in text.items()} == {"train": 700, "val": 100, "test_2016_flickr": 100}
    assert text["val"]["src"] == (TOY_CORPUS / "val.de").read_text().splitlines()
    cached = download_folder(url, tmp_path)
    assert sorted(p.name for p in cached.iterdir()) == sorted(
        f"{s}.{lang}.gz" for s in ("train", "val", "test_2016_flickr") for lang in ("de", "en")
    )
    again = load_multi30k("de", "en", url=url, cache_dir=tmp_path)  # the server is gone: the cache is read
    assert again["train"]["tgt"] == text["train"]["tgt"]


@pytest.mark.parametrize(
    "path, said",
    [
        ("/nothing/{split}.{lang}.gz", "HTTP 404"),
        ("/truncated/{split}.{lang}.gz", "the connection closed after"),
        ("/html/{split}.{lang}.gz", "did not answer with a gzip file (it begins '<html>Sign in</html>')"),
        ("/{split}.{lang}", "did not answer with a gzip file (it begins 'Viele Vögel"),  # the plain text files
    ],
)
def test_a_failed_download_is_one_line_and_leaves_no_poisoned_cache(toy_mirror, tmp_path, path, said):
    with serving(mirror(toy_mirror)) as base:
        url = base + path
        with pytest.raises(UserError) as error:
            load_multi30k("de", "en", splits=["val"], url=url, cache_dir=tmp_path)
        message = str(error.value)
        assert "\n" not in message and said in message and url.format(split="val", lang="de") in message
        assert "point data.dir or MULTI30K_DIR at a local copy" in message
        assert not [p for p in download_folder(url, tmp_path).iterdir()], "nothing may stay in the cache"
        if path.startswith("/truncated/"):  # the same names, served whole: the next run downloads again
            good = base + "/{split}.{lang}.gz"
            assert len(load_multi30k("de", "en", splits=["val"], url=good, cache_dir=tmp_path)["val"]) == 100


def test_refused_connection_and_bad_templates(tmp_path):
    url = f"http://127.0.0.1:{free_port()}/{{split}}.{{lang}}.gz"
    with pytest.raises(
        UserError,
        match=r"^cannot download http://127\.0\.0\.1:\d+/val\.de\.gz: connection refused; "
        r"without a network, point data\.dir",
    ):
        load_multi30k("de", "en", splits=["val"], url=url, cache_dir=tmp_path)
    with pytest.raises(UserError, match=r"data\.url must hold \{split\} and \{lang\}"):
        load_multi30k("de", "en", splits=["val"], url="http://127.0.0.1/val.de.gz", cache_dir=tmp_path)
    with pytest.raises(UserError, match=r"not a template with only \{split\} and \{lang\}"):
        load_multi30k("de", "en", splits=["val"], url="http://127.0.0.1/{split}.{lang}.{x}", cache_dir=tmp_path)
    with pytest.raises(UserError, match=r"cannot download 'val\.de': unknown url type"):
        load_multi30k("de", "en", splits=["val"], url="{split}.{lang}", cache_dir=tmp_path)


def test_train_py_downloads_trains_and_then_reads_the_cache(toy_mirror, tmp_path):
    """A user without MULTI30K_DIR, the files laid out as the official ones and served locally."""
    env = {k: v for k, v in os.environ.items() if k != "MULTI30K_DIR"}
    cache = tmp_path / "cache"
    with serving(mirror(toy_mirror)) as base:
        url = base + "/{split}.{lang}.gz"
        first = run_train(
            tmp_path / "first",
            "experiment=ci",
            "data.tokenizer.vocab_size=340",
            f"data.url='{url}'",
            f"data.cache_dir={cache}",
            "train.max_steps=20",
            "train.eval_every=10",
            "train.attention_every=0",
            "train.head_importance=false",
            env=env,
        )
    log = (tmp_path / "first" / "train.log").read_text()
    assert f"downloading {base}/train.de.gz" in log
    assert f"6 file(s) downloaded into {download_folder(url, cache)}" in log
    assert "test_2016_flickr: BLEU" in log and first.returncode == 0
    # the server is gone: a second run reads the cached files
    run_train(
        tmp_path / "second",
        "experiment=ci",
        "data.tokenizer.vocab_size=340",
        f"data.url='{url}'",
        f"data.cache_dir={cache}",
        "train.max_steps=10",
        "train.eval_every=10",
        "train.attention_every=0",
        "train.head_importance=false",
        env=env,
    )
    assert "downloading" not in (tmp_path / "second" / "train.log").read_text()


def test_train_py_says_a_failed_download_in_one_line(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "MULTI30K_DIR"}
    url = f"http://127.0.0.1:{free_port()}/{{split}}.{{lang}}.gz"
    done = run_train(
        tmp_path / "run",
        "experiment=ci",
        f"data.url='{url}'",
        f"data.cache_dir={tmp_path / 'cache'}",
        check=False,
        env=env,
    )
    assert done.returncode == 1
    assert (
        done.stderr.strip()
        .splitlines()[-1]
        .startswith(
            f"error: cannot download {url.format(split='train', lang='de')}: connection refused; without a network"
        )
    )
