"""Multi30k task 1 (raw, untokenized) loaded into Hugging Face `datasets` objects.

Two sources, one code path after loading: a local folder in the official layout
(`{split}.{lang}.gz`, or plain `{split}.{lang}`), or, when no folder is given, the official
files downloaded and cached through `datasets`.
"""
import os
from pathlib import Path

from datasets import DatasetDict, DownloadManager

from data.sources import read_parallel
from utils.errors import UserError

LANGUAGES = ("en", "de", "fr", "cs")
STANDARD_SPLITS = ("train", "val", "test_2016_flickr")
# Test years the official repository also ships; used when a local folder has them.
EXTRA_TEST_SPLITS = ("test_2017_flickr", "test_2018_flickr", "test_2017_mscoco")
OFFICIAL_URL = "https://raw.githubusercontent.com/multi30k/dataset/master/data/task1/raw/{split}.{lang}.gz"
ENV_VAR = "MULTI30K_DIR"


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


def _local_files(folder: Path, splits: list[str], langs: tuple[str, ...]) -> dict[tuple[str, str], Path]:
    files = {}
    for split in splits:
        for lang in langs:
            path = _split_file(folder, split, lang)
            if path is None:
                present = sorted(p.name for p in folder.iterdir() if p.is_file()) or ["nothing"]
                raise UserError(f"missing {split}.{lang}.gz in {folder}; it holds: {', '.join(present)}")
            files[split, lang] = path
    return files


def _downloaded_files(splits: list[str], langs: tuple[str, ...]) -> dict[tuple[str, str], Path]:
    urls = {f"{split}.{lang}": OFFICIAL_URL.format(split=split, lang=lang) for split in splits for lang in langs}
    try:
        paths = DownloadManager().download(urls)
    except Exception as e:  # offline mode, DNS, HTTP errors all mean the same to the user
        raise UserError(
            f"no local Multi30k folder given and the download failed ({type(e).__name__}); "
            f"point to a local copy with data.dir=/path/to/multi30k or {ENV_VAR}=/path/to/multi30k "
            "(files {split}.{lang}.gz from github.com/multi30k/dataset, data/task1/raw)"
        ) from None
    return {(split, lang): Path(paths[f"{split}.{lang}"]) for split in splits for lang in langs}


def load_multi30k(src_lang: str, tgt_lang: str, data_dir: str | None = None,
                  splits: list[str] | None = None) -> DatasetDict:
    """Parallel Multi30k splits as a DatasetDict with string columns `src` and `tgt`.

    Args:
        src_lang, tgt_lang: two of en, de, fr, cs.
        data_dir: local folder; None falls back to $MULTI30K_DIR, then to downloading.
        splits: which splits; default train, val and every test split available.

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
        files = _downloaded_files(splits or list(STANDARD_SPLITS), langs)
    else:
        files = _local_files(folder, splits or available_splits(folder, langs), langs)

    result = {}
    for split in dict.fromkeys(split for split, _ in files):
        result[split] = read_parallel(split, files[split, src_lang], files[split, tgt_lang])
    return DatasetDict(result)
