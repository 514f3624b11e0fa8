"""Multi30k task 1 (raw, untokenized): a preset of the files source (data/sources.load_files).

What the preset knows is where the files are: a local folder in the official layout
(`{split}.{lang}.gz`, or plain `{split}.{lang}`), or, when no folder is given, the official
files downloaded once into a folder of the same layout under the cache (data/download.py);
and which splits there are. Reading them is the files source's.
"""

import hashlib
import os
from pathlib import Path

from datasets import DatasetDict

from data.config import ENV_VAR, OFFICIAL_URL
from data.download import download_gzip_files
from data.sources import load_files
from utils.errors import UserError

LANGUAGES = ("en", "de", "fr", "cs")
STANDARD_SPLITS = ("train", "val", "test_2016_flickr")
# Test years the official repository also ships; used when a local folder has them.
EXTRA_TEST_SPLITS = ("test_2017_flickr", "test_2018_flickr", "test_2017_mscoco")


def resolve_data_dir(configured: str | None) -> Path | None:
    """The local folder to read: the configured one, else $MULTI30K_DIR, else None (download)."""
    value = configured or os.environ.get(ENV_VAR)
    if not value:
        return None
    path = Path(value).expanduser()
    if not path.is_dir():
        source = "data.dir" if configured else f"${ENV_VAR}"
        raise UserError(f"Multi30k folder {path} (from {source}) does not exist")
    return path


def _split_file(folder: Path, split: str, lang: str) -> Path | None:
    for name in (f"{split}.{lang}.gz", f"{split}.{lang}"):
        if (folder / name).is_file():
            return folder / name
    return None


def available_splits(folder: Path, langs: tuple[str, ...]) -> list[str]:
    """train and val (required: a run trains and validates), then the known test splits
    present for all of `langs` in a local folder, in canonical order."""
    tests = [s for s in STANDARD_SPLITS[2:] + EXTRA_TEST_SPLITS if all(_split_file(folder, s, lang) for lang in langs)]
    return ["train", "val", *tests]


def _check_local_files(folder: Path, splits: list[str], langs: tuple[str, ...]) -> None:
    """Every file of `splits` and `langs` is in `folder`; else a UserError saying what is there."""
    for split in splits:
        for lang in langs:
            if _split_file(folder, split, lang) is None:
                present = sorted(p.name for p in folder.iterdir() if p.is_file()) or ["nothing"]
                raise UserError(f"missing {split}.{lang}.gz in {folder}; it holds: {', '.join(present)}")


def download_folder(url: str, cache_dir: str | Path) -> Path:
    """Where the files of URL template `url` are kept: one folder per template, so that a mirror
    never mixes its files with another's."""
    return Path(cache_dir) / "downloads" / f"multi30k-{hashlib.sha256(url.encode()).hexdigest()[:12]}"


def _download(splits: list[str], langs: tuple[str, ...], url: str, cache_dir: str | Path) -> Path:
    """The folder holding the official files of `splits` and `langs` from URL template `url`,
    downloaded into the cache once (data/download.py)."""
    if "{split}" not in url or "{lang}" not in url:
        raise UserError(
            f"data.url must hold {{split}} and {{lang}} where a file's split and language go, "
            f"as {OFFICIAL_URL}; got {url!r}"
        )
    try:
        urls = {f"{split}.{lang}.gz": url.format(split=split, lang=lang) for split in splits for lang in langs}
    except (KeyError, IndexError, ValueError) as e:
        raise UserError(f"data.url {url!r} is not a template with only {{split}} and {{lang}} ({e})") from None
    way_out = (
        f"without a network, point data.dir or {ENV_VAR} at a local copy of Multi30k (its files "
        "{split}.{lang}.gz, from github.com/multi30k/dataset, data/task1/raw)"
    )
    folder = download_folder(url, cache_dir)
    download_gzip_files(urls, folder, way_out)
    return folder


def load_multi30k(
    src_lang: str,
    tgt_lang: str,
    data_dir: str | None = None,
    splits: list[str] | None = None,
    url: str = OFFICIAL_URL,
    cache_dir: str | Path = ".cache/minitrans",
) -> DatasetDict:
    """Parallel Multi30k splits as a DatasetDict with string columns `src` and `tgt`.

    Args:
        src_lang, tgt_lang: two of en, de, fr, cs.
        data_dir: local folder; None falls back to $MULTI30K_DIR, then to downloading.
        splits: which splits; default train, val and every test split available (downloaded:
            train, val and test_2016_flickr).
        url: where to download from: a template with {split} and {lang} (a mirror, a local server).
        cache_dir: downloads are kept in a folder under it (`download_folder`).

    Empty or whitespace-only pairs are dropped from `train` only: test and validation sets
    keep every line so that translations stay aligned with their references.
    """
    for lang in (src_lang, tgt_lang):
        if lang not in LANGUAGES:
            raise UserError(f"unknown language {lang!r}; Multi30k has {', '.join(LANGUAGES)}")
    if src_lang == tgt_lang:
        raise UserError(f"source and target language are both {src_lang!r}")
    langs = (src_lang, tgt_lang)
    folder = resolve_data_dir(data_dir)
    if folder is None:
        splits = splits or list(STANDARD_SPLITS)
        folder = _download(splits, langs, url, cache_dir)
    else:
        splits = splits or available_splits(folder, langs)
        _check_local_files(folder, splits, langs)
    return load_files(src_lang, tgt_lang, {split: str(folder / split) for split in dict.fromkeys(splits)})
