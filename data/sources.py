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
(utils/text.py). Pairs become Arrow a chunk at a time (`arrow_pairs`), never one Python list of
the corpus. Empty or whitespace-only pairs are dropped from `train` only, so that test and
validation translations stay aligned with their references. A corpus without a validation split
gets one carved from training: `data.val_size` pairs drawn with `data.val_seed`, said in the log.
"""

import csv
import gzip
import json
import logging
import zlib
from collections.abc import Iterable, Iterator
from itertools import zip_longest
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from datasets import Dataset, DatasetDict
from datasets.fingerprint import generate_random_fingerprint

from data.download import GZIP_MAGIC
from utils.errors import UserError
from utils.text import utf8_lines

log = logging.getLogger(__name__)

SOURCES = ("multi30k", "files", "tsv", "jsonl", "hf")
CHUNK = 100_000  # pairs converted to Arrow at a time


def _lines(path: Path) -> Iterator[str]:
    """Lines of a gzip or plain UTF-8 text file (utils/text.py: one per "\\n"). gzip is told by
    the file's first bytes, never by its name: a download cached under a hash has no suffix,
    and a plain file may be called .gz."""
    try:
        with open(path, "rb") as raw:
            compressed = raw.read(len(GZIP_MAGIC)) == GZIP_MAGIC
            raw.seek(0)
            with gzip.GzipFile(fileobj=raw, mode="rb") if compressed else raw as stream:
                yield from utf8_lines(stream, str(path))
    except (gzip.BadGzipFile, EOFError, zlib.error) as e:
        raise UserError(f"{path} is not a readable gzip file ({e})") from None
    except OSError as e:
        raise UserError(f"cannot read {path} ({e.strerror or e})") from None


def _aligned_lines(src_path: Path, tgt_path: Path) -> Iterator[tuple[str, str]]:
    """Line i of both files, for every i; the files must have the same number of lines."""
    src, tgt = _lines(src_path), _lines(tgt_path)
    count = 0
    for src_line, tgt_line in zip_longest(src, tgt):
        if src_line is None or tgt_line is None:  # one file ended: count what the other has left
            longer = count + 1 + sum(1 for _ in (tgt if src_line is None else src))
            counts = (count, longer) if src_line is None else (longer, count)
            raise UserError(f"line counts differ: {src_path} has {counts[0]} lines, {tgt_path} has {counts[1]}")
        count += 1
        yield src_line, tgt_line


def read_parallel(split: str, src_path: Path, tgt_path: Path) -> Dataset:
    """A split from two line-aligned text files, one per language (Multi30k's, or a corpus's
    `{prefix}.{lang}`): they must have the same number of lines."""
    return pairs(split, arrow_pairs(_aligned_lines(src_path, tgt_path)), f"{src_path} and {tgt_path}")


def arrow_pairs(rows: Iterable[tuple[str, str]]) -> pa.Table:
    """(source, target) rows -> an Arrow table of columns src and tgt, converted CHUNK rows at a
    time: only one chunk is ever Python strings, the corpus is Arrow's compact buffers."""
    batches: list[pa.RecordBatch] = []
    src: list[str] = []
    tgt: list[str] = []

    def flush() -> None:
        batches.append(pa.record_batch([pa.array(src, pa.string()), pa.array(tgt, pa.string())], names=["src", "tgt"]))
        src.clear()
        tgt.clear()

    for src_text, tgt_text in rows:
        src.append(src_text)
        tgt.append(tgt_text)
        if len(src) == CHUNK:
            flush()
    if src or not batches:
        flush()
    return pa.Table.from_batches(batches)


def pairs(split: str, table: pa.Table, where: str) -> Dataset:
    """One split's sentence pairs from a table of columns src and tgt (row i: src translates as
    tgt); empty pairs dropped from train. `where` names the data in errors (files, a table, a
    dataset)."""
    if not table.num_rows:
        raise UserError(f"{where} holds no pairs for split {split!r}")
    if split == "train":
        blank = pc.or_(*(pc.equal(pc.utf8_trim_whitespace(table[side]), "") for side in ("src", "tgt")))
        dropped = pc.sum(blank).as_py() or 0
        if dropped == table.num_rows:
            raise UserError(f"{where}: every training pair is empty")
        if dropped:
            log.info("dropped %d empty or whitespace-only training pairs", dropped)
            table = table.filter(pc.invert(blank))
    # A fingerprint of its own: by default `datasets` hashes the whole table to make one, a
    # transient copy the size of the corpus (the cache keys are data/prepare.py's, not this).
    return Dataset(table, fingerprint=generate_random_fingerprint())


def split_names(train: str | None, val: str | None, tests: list[str], what: str) -> dict[str, str | None]:
    """{split name: where it is} for the configured train, val and test locations; a test split
    is named by its location's file name without extension (`/corpus/newstest2014.tsv`:
    `newstest2014`), made unique with a number (`/other/newstest2014.tsv`: `newstest2014_2`)."""
    if not train:
        raise UserError(f"data.train is required: the training {what}")
    named: dict[str, str | None] = {"train": train, "val": val}
    for location in tests:
        stem = Path(location).name.removesuffix(".gz").split(".")[0] or "test"
        name, number = stem, 2
        while name in named:
            name, number = f"{stem}_{number}", number + 1
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


def _tsv_rows(path: Path, src_field: str, tgt_field: str, header: bool, quoting: str) -> Iterator[tuple[str, str]]:
    """Pairs of a TSV file's two columns. quoting "none": a field is everything between tabs, quotes
    included; "csv": the csv module's rules (a field in double quotes may hold tabs, "" is a quote)."""
    lines = iter(_lines(path))
    rows: Iterator[list[str]] = (line.split("\t") for line in lines)
    if quoting == "csv":
        reader = csv.reader(lines, delimiter="\t", quotechar='"', strict=True)
        rows = _csv_rows(reader, path)
    columns: dict[str, int] = {}
    if header:
        names = next(rows, [""])
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
    warned = quoting == "csv"
    for number, cells in enumerate(rows, start=2 if header else 1):
        if max(index) >= len(cells):
            raise UserError(
                f"{path} line {number} has {len(cells)} column(s); columns {index[0]} and {index[1]} are read"
            )
        pair = cells[index[0]], cells[index[1]]
        if not warned and all(len(cell) > 1 and cell[0] == cell[-1] == '"' for cell in pair):
            log.warning(
                "%s line %d: the fields are in double quotes, which are kept as part of the text; "
                "data.quoting=csv reads them by CSV rules",
                path,
                number,
            )
            warned = True
        yield pair


def _csv_rows(reader, path: Path) -> Iterator[list[str]]:
    """The rows of a csv.reader, its errors one line naming the file and line."""
    try:
        yield from reader
    except csv.Error as e:
        raise UserError(f"{path} line {reader.line_num} is not a row by CSV rules ({e})") from None


def _jsonl_rows(path: Path, src_field: str, tgt_field: str) -> Iterator[tuple[str, str]]:
    for number, line in enumerate(_lines(path), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as e:
            raise UserError(f"{path} line {number} is not JSON ({e.msg})") from None
        src, tgt = _field(record, src_field), _field(record, tgt_field)
        if src is None or tgt is None:
            missing = src_field if src is None else tgt_field
            has = ", ".join(record) if isinstance(record, dict) else f"a {type(record).__name__}, not an object"
            if isinstance(record, dict) and "translation" in record and not isinstance(record["translation"], dict):
                has += f" (its translation is a {type(record['translation']).__name__}, not an object)"
            raise UserError(
                f"{path} line {number} has no {missing!r} (neither a key nor translation.{missing}); it has {has}"
            )
        for text in (src, tgt):
            try:
                text.encode("utf-8")
            except UnicodeEncodeError as e:  # JSON's \ud800 escapes: half a character, no text
                raise UserError(
                    f"{path} line {number} holds {text[e.start]!r}, half of a UTF-16 surrogate pair, "
                    "which is no character"
                ) from None
        yield src, tgt


def _field(record, field: str) -> str | None:
    """A record's text under `field`, or under translation[field] (Hugging Face's translation
    column); None if neither is a string."""
    if not isinstance(record, dict):
        return None
    translation = record.get("translation")
    for value in (record.get(field), translation.get(field) if isinstance(translation, dict) else None):
        if isinstance(value, str):
            return value
    return None


def load_table(
    kind: str, named: dict[str, str | None], src_field: str, tgt_field: str, header: bool = False, quoting: str = "none"
) -> DatasetDict:
    """A TSV or JSONL file per split (`header` and `quoting`: TSV only)."""
    result = {}
    for split, location in named.items():
        if location is None:
            continue
        path = Path(location)
        if not path.is_file():
            raise UserError(f"the {split} file {path} does not exist")
        if kind == "tsv":
            rows = _tsv_rows(path, src_field, tgt_field, header, quoting)
        else:
            rows = _jsonl_rows(path, src_field, tgt_field)
        result[split] = pairs(split, arrow_pairs(rows), str(path))
    return DatasetDict(result)


def load_hf(name: str, subset: str | None, named: dict[str, str | None], src_field: str, tgt_field: str) -> DatasetDict:
    """A Hugging Face dataset: a folder written by `save_to_disk`, a local dataset folder or data
    files, or a name on the hub. `named` maps our split names to the dataset's."""
    import datasets

    local = Path(name).expanduser()
    try:
        if (local / "dataset_dict.json").is_file() or (local / "state.json").is_file():
            loaded = datasets.load_from_disk(str(local))
        else:
            loaded = datasets.load_dataset(str(local) if local.exists() else name, subset)
    except Exception as e:  # noqa: BLE001 - datasets and huggingface_hub fail in many ways; each is told apart
        raise UserError(_hf_failure(name, subset, local, e)) from None
    if isinstance(loaded, Dataset):
        loaded = DatasetDict({"train": loaded})
    result = {}
    for split, theirs in named.items():
        if theirs is None:
            continue
        if theirs not in loaded:
            raise UserError(f"dataset {name!r} has no split {theirs!r}; it has {', '.join(loaded)}")
        table = loaded[theirs].flatten()  # translation: {de: .., en: ..} -> columns translation.de, translation.en
        texts = {}
        for side, field in (("src", src_field), ("tgt", tgt_field)):
            column = next((c for c in (field, f"translation.{field}") if c in table.column_names), None)
            if column is None:
                raise UserError(
                    f"dataset {name!r} split {theirs!r} has no column {field!r} nor translation.{field}; "
                    f"it has {', '.join(table.column_names)}"
                )
            # as Arrow, not Python strings; a missing sentence (null) reads as empty
            texts[side] = pc.fill_null(table.with_format("arrow")[column].cast(pa.string()), "")
        result[split] = pairs(split, pa.table(texts), f"dataset {name!r} split {theirs!r}")
    return DatasetDict(result)


def _first_line(error: BaseException | None) -> str:
    text = str(error).strip() if error is not None else ""
    return text.splitlines()[0] if text else type(error).__name__


def _hf_failure(name: str, subset: str | None, local: Path, error: Exception) -> str:
    """What failed when `datasets` could not load `name`, in one line: the data files, the dataset,
    its configuration, or the way to the hub."""
    from datasets.exceptions import DatasetGenerationError, DatasetNotFoundError

    first = _first_line(error)
    if isinstance(error, DatasetGenerationError):  # the files were found but do not read as a dataset
        return (
            f"cannot read the data files of {name!r} as a dataset: {_first_line(error.__cause__ or error.__context__)}"
        )
    if isinstance(error, DatasetNotFoundError):
        return f"{name!r} is not a dataset on the Hugging Face hub, or not one this machine may read (private or gated)"
    if isinstance(error, ValueError) and ("BuilderConfig" in first or "Config name is missing" in first):
        return (
            f"dataset {name!r} has no configuration {subset!r}: {first}"
            if subset
            else f"dataset {name!r} needs data.subset, its configuration: {first}"
        )
    if local.exists():
        return f"cannot load the dataset in {local} ({type(error).__name__}: {first})"
    if isinstance(error, ConnectionError) or "LocalEntryNotFoundError" in first or "offline" in first.lower():
        return (
            f"cannot reach the Hugging Face hub for {name!r} ({first}); without a network, load it where there "
            "is one, `datasets.load_dataset(...).save_to_disk(FOLDER)`, copy the folder here and give "
            "data.name=FOLDER"
        )
    return f"cannot load {name!r}, neither a local folder nor a dataset on the hub ({type(error).__name__}: {first})"


def carve_validation(text: DatasetDict, size: int, seed: int) -> DatasetDict:
    """`size` training pairs, drawn with `seed`, become the validation split (and leave training)."""
    train = text["train"]
    if len(train) < 2 * size:
        raise UserError(
            f"no validation split given and {len(train)} training pairs are too few to carve "
            f"{size} from (at least {2 * size} needed); give data.val or a smaller data.val_size"
        )
    chosen = np.random.default_rng(seed).permutation(len(train))[:size]
    rest = np.setdiff1d(np.arange(len(train)), chosen)
    log.info("no validation split: %d training pairs (seed %d) validate instead, %d train", size, seed, len(rest))
    return DatasetDict(
        {
            "train": train.select(rest),
            "val": train.select(np.sort(chosen)),
            **{split: ds for split, ds in text.items() if split != "train"},
        }
    )
