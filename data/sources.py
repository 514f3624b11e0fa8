"""Parallel corpora other than Multi30k, loaded into the same `datasets` shape: a DatasetDict of
`train`, `val` and any test splits, each with string columns `src` and `tgt`.

    files   one file per split and language, `{prefix}.{lang}` (or `.gz`), as fairseq and
            JoeyNMT name them: data.train=/corpus/train data.val=/corpus/dev data.test=[/corpus/test]
    tsv     one pair per line, tab-separated: columns by index (default 0 and 1) or, with a
            header line, by name (data.src_field=de data.tgt_field=en)
    jsonl   one JSON object per line: the pair under `translation` ({"translation": {"de": ..,
            "en": ..}}, as Hugging Face translation datasets hold it), or two keys by name
    hf      a Hugging Face dataset: data.name=wmt16 data.subset=de-en (from the hub, when it can
            be reached), or a local copy: a folder written by `save_to_disk`, or data files

After loading, everything is one code path (data/prepare.py). Lines end at "\n" only
(utils/text.py). Empty or whitespace-only pairs are dropped from `train` only, so that test and
validation translations stay aligned with their references. A corpus without a validation split
gets one carved from training: `data.val_size` pairs drawn with `data.val_seed`, said in the log.
"""
import gzip
import json
import logging
import zlib
from pathlib import Path
from typing import Iterator

import numpy as np
from datasets import Dataset, DatasetDict

from utils.errors import UserError
from utils.text import utf8_lines

log = logging.getLogger(__name__)

SOURCES = ("multi30k", "files", "tsv", "jsonl", "hf")


def _lines(path: Path) -> Iterator[str]:
    """Lines of a gzip or plain UTF-8 text file (utils/text.py: one per "\\n")."""
    try:
        with gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb") as stream:
            yield from utf8_lines(stream, str(path))
    except (gzip.BadGzipFile, EOFError, zlib.error) as e:
        raise UserError(f"{path} is not a readable gzip file ({e})") from None
    except OSError as e:
        raise UserError(f"cannot read {path} ({e.strerror or e})") from None


def read_parallel(split: str, src_path: Path, tgt_path: Path) -> Dataset:
    """A split from two line-aligned text files, one per language (Multi30k's, or a corpus's
    `{prefix}.{lang}`): they must have the same number of lines."""
    src, tgt = list(_lines(src_path)), list(_lines(tgt_path))
    if len(src) != len(tgt):
        raise UserError(f"line counts differ: {src_path} has {len(src)} lines, {tgt_path} has {len(tgt)}")
    return pairs(split, src, tgt, f"{src_path} and {tgt_path}")


def pairs(split: str, src: list[str], tgt: list[str], where: str) -> Dataset:
    """One split's sentence pairs: `src[i]` translates as `tgt[i]`; empty pairs dropped from train.

    `where` names the data in errors (files, a table, a dataset)."""
    if not src:
        raise UserError(f"{where} holds no pairs for split {split!r}")
    if split == "train":
        keep = [i for i, (s, t) in enumerate(zip(src, tgt)) if s.strip() and t.strip()]
        if not keep:
            raise UserError(f"{where}: every training pair is empty")
        if len(keep) < len(src):
            log.info("dropped %d empty or whitespace-only training pairs", len(src) - len(keep))
            src, tgt = [src[i] for i in keep], [tgt[i] for i in keep]
    return Dataset.from_dict({"src": src, "tgt": tgt})


def split_names(train: str | None, val: str | None, tests: list[str], what: str) -> dict[str, str | None]:
    """{split name: where it is} for the configured train, val and test locations; a test split
    is named by its location's file name without extension (`/corpus/newstest2014.tsv`:
    `newstest2014`), made unique."""
    if not train:
        raise UserError(f"data.train is required: the training {what}")
    named: dict[str, str | None] = {"train": train, "val": val}
    for location in tests:
        name = Path(location).name.removesuffix(".gz").split(".")[0] or "test"
        if name in named:
            name = f"test_{len(named) - 1}"
        named[name] = location
    return named


def load_files(src_lang: str, tgt_lang: str, named: dict[str, str | None]) -> DatasetDict:
    """`{prefix}.{lang}` or `{prefix}.{lang}.gz` per split; the two files of a split must have
    the same number of lines."""
    result = {}
    for split, prefix in named.items():
        if prefix is None:
            continue
        files = {}
        for lang in (src_lang, tgt_lang):
            candidates = [Path(f"{prefix}.{lang}"), Path(f"{prefix}.{lang}.gz")]
            found = [path for path in candidates if path.is_file()]
            if not found:
                raise UserError(f"no {split} file for {lang!r}: neither {candidates[0]} nor {candidates[1]} exists")
            files[lang] = found[0]
        result[split] = read_parallel(split, files[src_lang], files[tgt_lang])
    return DatasetDict(result)


def _tsv_pairs(path: Path, src_field: str, tgt_field: str, header: bool) -> tuple[list[str], list[str]]:
    lines = iter(_lines(path))
    columns: dict[str, int] = {}
    if header:
        names = next(lines, "").split("\t")
        columns = {name: i for i, name in enumerate(names)}
    index = []
    for field in (src_field, tgt_field):
        if field in columns:
            index.append(columns[field])
        elif field.isdigit():
            index.append(int(field))
        else:
            has = f"its header has {', '.join(columns)}" if header else "give a column number, or data.header=true"
            raise UserError(f"{path} has no column {field!r}; {has}")
    src, tgt = [], []
    for number, line in enumerate(lines, start=2 if header else 1):
        cells = line.split("\t")  # no quoting: a tab never occurs inside a sentence of a TSV corpus
        if max(index) >= len(cells):
            raise UserError(f"{path} line {number} has {len(cells)} column(s); columns {index[0]} and {index[1]} "
                            "are read")
        src.append(cells[index[0]])
        tgt.append(cells[index[1]])
    return src, tgt


def _jsonl_pairs(path: Path, src_field: str, tgt_field: str) -> tuple[list[str], list[str]]:
    src, tgt = [], []
    for number, line in enumerate(_lines(path), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as e:
            raise UserError(f"{path} line {number} is not JSON ({e.msg})") from None
        pair = [_field(record, field) for field in (src_field, tgt_field)]
        if None in pair:
            missing = (src_field, tgt_field)[pair.index(None)]
            raise UserError(f"{path} line {number} has no {missing!r} (neither a key nor translation.{missing}); "
                            f"it has {', '.join(record) if isinstance(record, dict) else type(record).__name__}")
        src.append(pair[0])
        tgt.append(pair[1])
    return src, tgt


def _field(record, field: str) -> str | None:
    """A record's text under `field`, or under translation[field] (Hugging Face's translation
    column); None if neither is a string."""
    if not isinstance(record, dict):
        return None
    for value in (record.get(field), (record.get("translation") or {}).get(field)):
        if isinstance(value, str):
            return value
    return None


def load_table(kind: str, named: dict[str, str | None], src_field: str, tgt_field: str,
               header: bool) -> DatasetDict:
    """A TSV or JSONL file per split."""
    result = {}
    for split, location in named.items():
        if location is None:
            continue
        path = Path(location)
        if not path.is_file():
            raise UserError(f"the {split} file {path} does not exist")
        if kind == "tsv":
            src, tgt = _tsv_pairs(path, src_field, tgt_field, header)
        else:
            src, tgt = _jsonl_pairs(path, src_field, tgt_field)
        result[split] = pairs(split, src, tgt, str(path))
    return DatasetDict(result)


def load_hf(name: str, subset: str | None, named: dict[str, str | None], src_field: str,
            tgt_field: str) -> DatasetDict:
    """A Hugging Face dataset: a folder written by `save_to_disk`, a local dataset folder or data
    files, or a name on the hub. `named` maps our split names to the dataset's."""
    import datasets

    local = Path(name).expanduser()
    try:
        if (local / "dataset_dict.json").is_file() or (local / "state.json").is_file():
            loaded = datasets.load_from_disk(str(local))
        else:
            loaded = datasets.load_dataset(str(local) if local.exists() else name, subset)
    except (OSError, ValueError, datasets.exceptions.DatasetNotFoundError) as e:  # OSError: offline, missing files
        if local.exists():
            raise UserError(f"cannot load the dataset in {local} ({type(e).__name__}: {str(e).splitlines()[0]})") \
                from None
        raise UserError(f"cannot load {name!r} from the Hugging Face hub ({type(e).__name__}); without a network, "
                        "load it where there is one, `datasets.load_dataset(...).save_to_disk(FOLDER)`, copy the "
                        "folder here and give data.name=FOLDER") from None
    if isinstance(loaded, Dataset):
        loaded = DatasetDict({"train": loaded})
    result = {}
    for split, theirs in named.items():
        if theirs is None:
            continue
        if theirs not in loaded:
            raise UserError(f"dataset {name!r} has no split {theirs!r}; it has {', '.join(loaded)}")
        table = loaded[theirs].flatten()  # translation: {de: .., en: ..} -> columns translation.de, translation.en
        texts = []
        for field in (src_field, tgt_field):
            column = next((c for c in (field, f"translation.{field}") if c in table.column_names), None)
            if column is None:
                raise UserError(f"dataset {name!r} split {theirs!r} has no column {field!r} nor translation.{field}; "
                                f"it has {', '.join(table.column_names)}")
            texts.append(list(table[column]))
        result[split] = pairs(split, *texts, f"dataset {name!r} split {theirs!r}")
    return DatasetDict(result)


def carve_validation(text: DatasetDict, size: int, seed: int) -> DatasetDict:
    """Without a validation split: `size` training pairs, drawn with `seed`, become one (and
    leave training)."""
    if "val" in text:
        return text
    train = text["train"]
    if len(train) < 2 * size:
        raise UserError(f"no validation split given and {len(train)} training pairs are too few to carve "
                        f"{size} from (at least {2 * size} needed); give data.val or a smaller data.val_size")
    chosen = np.random.default_rng(seed).permutation(len(train))[:size]
    rest = np.setdiff1d(np.arange(len(train)), chosen)
    log.info("no validation split: %d training pairs (seed %d) validate instead, %d train", size, seed, len(rest))
    return DatasetDict({"train": train.select(rest), "val": train.select(np.sort(chosen)),
                        **{split: ds for split, ds in text.items() if split != "train"}})
