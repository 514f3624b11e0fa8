"""A checkpoint as an Argos Translate package (`.argosmodel`): what argostranslate installs and
LibreTranslate serves.

The file is a zip of one folder, `<name>-<version>` (e.g. `minitrans-de_en-1_0`), holding:
- `metadata.json`: the languages (codes and names), the package's version and name, its type;
- `model/`: a CTranslate2 export (inference/ct2_export.py), so that `translate.py -c
  FILE.argosmodel` reads it as it reads an export;
- `sentencepiece.model`: the source's SentencePiece model, with which argostranslate encodes the
  source (folding it where the run folds its source, data/source_folding.py) and joins the
  output's pieces (one vocabulary for both sides: a run with separate vocabularies cannot be
  packaged);
- `minisbd/<from>.onnx`: the sentence splitter argostranslate runs before translating,
  trained on the run's own source text (inference/sentence_splitter.py), so that the first
  translation needs no download;
- `README.md`: the model card, with the splitter's precision and recall on validation.
Beside it goes an empty package index for LibreTranslate (`empty_index`).

argostranslate searches with its own settings (beam 4, length penalty 0.2) and no flags to keep
<unk>, <pad> or <s> out of the output: the package's model gives those pieces no chance (an
output bias, inference/ct2_export.py), so its translations are those of our CTranslate2 engine
with the same beam and length penalty.
"""

import json
import os
import sys
import tempfile
import zipfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from tqdm import tqdm

from data import Tokenizer
from inference.ct2_export import MANIFEST, export_ctranslate2, model_card
from inference.sentence_splitter import boundary_scores, export_onnx, train_splitter
from model import Transformer
from utils.errors import UserError
from utils.files import atomic_file

SUFFIX = ".argosmodel"

# ISO 639-1 codes of the languages Argos Translate's packages cover, with the names it shows
LANGUAGES = {
    "ar": "Arabic", "az": "Azerbaijani", "bg": "Bulgarian", "bn": "Bengali", "ca": "Catalan", "cs": "Czech",
    "da": "Danish", "de": "German", "el": "Greek", "en": "English", "eo": "Esperanto", "es": "Spanish",
    "et": "Estonian", "eu": "Basque", "fa": "Persian", "fi": "Finnish", "fr": "French", "ga": "Irish",
    "gl": "Galician", "he": "Hebrew", "hi": "Hindi", "hu": "Hungarian", "id": "Indonesian", "it": "Italian",
    "ja": "Japanese", "ko": "Korean", "ky": "Kyrgyz", "lt": "Lithuanian", "lv": "Latvian", "ms": "Malay",
    "nb": "Norwegian", "nl": "Dutch", "pl": "Polish", "pt": "Portuguese", "ro": "Romanian", "ru": "Russian",
    "sk": "Slovak", "sl": "Slovenian", "sq": "Albanian", "sr": "Serbian", "sv": "Swedish", "th": "Thai",
    "tl": "Tagalog", "tr": "Turkish", "uk": "Ukrainian", "ur": "Urdu", "vi": "Vietnamese", "zh": "Chinese",
}  # fmt: skip


def package_folder(name: str, version: str) -> str:
    """The folder inside the zip (and under argostranslate's packages once installed)."""
    return f"{name}-{version.replace('.', '_')}"


def output_file(out: Path, name: str, version: str, force: bool) -> Path:
    """Where the package goes: `out` if it names a package file (FILE.argosmodel), else a file
    named after the package in the folder `out` (made if missing); an existing file is replaced
    only with `force` and only if it is a package."""
    if out.suffix != SUFFIX and out.exists() and not out.is_dir():
        raise UserError(f"{out} is a file, not a folder: name the package FILE{SUFFIX}, or give a folder")
    path = out if out.suffix == SUFFIX else out / (package_folder(name, version) + SUFFIX)
    if path.exists():
        if not zipfile.is_zipfile(path):
            raise UserError(f"{path} exists and is not an Argos package; not replacing it")
        if _model_folder(path) is None:
            raise UserError(f"{path} is an Argos package that minitrans did not write; not replacing it")
        if not force:
            raise UserError(f"{path} exists; give --force to replace it")
    return path


def _model_folder(path: Path) -> str | None:
    """The CTranslate2 model's folder inside a package file (FOLDER/model/) if minitrans wrote
    it (its MANIFEST is there), else None. The file must be a readable zip."""
    with zipfile.ZipFile(path) as archive:
        manifests = [n for n in archive.namelist() if n.count("/") == 2 and n.endswith(f"/model/{MANIFEST}")]
    return manifests[0].removesuffix(MANIFEST) if manifests else None


def check_language(code: str, side: str) -> str:
    if code not in LANGUAGES:
        raise UserError(
            f"Argos Translate knows languages by their ISO 639-1 codes ({', '.join(sorted(LANGUAGES))}); "
            f"the {side} language {code!r} is not one: give --{side}-lang CODE"
        )
    return code


def _card(manifest: dict, metadata: dict, file_name: str, splitter: dict) -> str:
    """The package's README: the export's model card, how to install and serve the package, its splitter."""
    src, tgt = metadata["from_code"], metadata["to_code"]
    return model_card(
        manifest,
        f"""## As an Argos Translate package

    python -c "import argostranslate.package as p; p.install_from_path('{file_name}')"
    python -c "import argostranslate.translate as t; print(t.translate('...', '{src}', '{tgt}'))"

LibreTranslate serves it once installed, with the empty package index export.py wrote beside the
file (so that it installs nothing else): `ARGOS_PACKAGE_INDEX=file://FOLDER/ libretranslate
--load-only {src},{tgt}`. argostranslate searches with beam 4 and length penalty 0.2, its own settings.

Sentence splitter (`minisbd/{src}.onnx`, MiniSBD's format): a character model trained on the run's own
source text, {splitter["train_lines"]:,} lines; on paragraphs of 1-6 lines of the validation split
({splitter["boundaries"]:,} boundaries): precision {splitter["precision"]:.2%}, recall {splitter["recall"]:.2%}.
""",
    )


def export_argos(
    model: Transformer,
    tokenizer: Tokenizer,
    meta: dict,
    out: Path,
    corpus: Callable[[], tuple[Sequence[str], Sequence[str]]],
    quantization: str = "float32",
    from_code: str | None = None,
    to_code: str | None = None,
    name: str | None = None,
    version: str = "1.0",
    force: bool = False,
    results: dict | None = None,
    command: str = "",
    say: Callable[[str], None] = print,
) -> Path:
    """Write the package file and return its path. `corpus()` gives the source side of the run's
    training and validation splits (for the sentence splitter); the codes default to the
    checkpoint's languages, the name to minitrans-<from>_<to>."""
    from_code = check_language(from_code or meta.get("src_lang", "?"), "from")
    to_code = check_language(to_code or meta.get("tgt_lang", "?"), "to")
    if from_code == to_code:
        raise UserError(
            f"the package would translate {from_code} into itself: give the languages with --from-lang and --to-lang"
        )
    if not tokenizer.joint:
        raise UserError(
            "an Argos package holds one SentencePiece model for both languages; this run has two "
            "(data.tokenizer.joint=false): export it --to ctranslate2 instead"
        )
    name = name or f"minitrans-{from_code}_{to_code}"
    path = output_file(Path(out), name, version, force)
    train, val = corpus()
    say(f"training the sentence splitter on {len(train):,} {from_code} lines")
    with tqdm(desc="sentence splitter", unit="step", file=sys.stderr, disable=not sys.stderr.isatty()) as bar:

        def advance(done: int, total: int) -> None:
            bar.total = total
            bar.update(done - bar.n)

        splitter = train_splitter(train, progress=advance)
    scores = boundary_scores(splitter.split, val)
    say(f"sentence splitter on validation: precision {scores['precision']:.2%}, recall {scores['recall']:.2%}")
    metadata = {
        "package_name": name,
        "package_version": version,
        "argos_version": "1.9",
        "type": "translate",
        "from_code": from_code,
        "from_name": LANGUAGES[from_code],
        "to_code": to_code,
        "to_name": LANGUAGES[to_code],
        "description": f"minitrans {LANGUAGES[from_code]}-{LANGUAGES[to_code]}, trained from scratch",
    }
    with tempfile.TemporaryDirectory() as work:
        folder = Path(work) / package_folder(name, version)
        export_ctranslate2(model, tokenizer, meta, folder / "model", quantization, False, results, command, True)
        # the source's model: argostranslate encodes the source with it (folding as it folds, where
        # it does) and only joins the target's pieces, which its normalization never touches
        (folder / "sentencepiece.model").write_bytes(tokenizer.src_model)
        (folder / "minisbd").mkdir()
        export_onnx(splitter, folder / "minisbd" / f"{from_code}.onnx", from_code)
        (folder / "metadata.json").write_text(json.dumps(metadata, indent=2) + "\n", encoding="utf-8")
        manifest = json.loads((folder / "model" / MANIFEST).read_text(encoding="utf-8"))
        card = _card(manifest, metadata, path.name, {**scores, "train_lines": len(train)})
        (folder / "README.md").write_text(card, encoding="utf-8")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with atomic_file(path, "wb") as file, zipfile.ZipFile(file, "w", zipfile.ZIP_DEFLATED) as archive:
                for item in sorted(folder.rglob("*")):
                    archive.write(item, item.relative_to(folder.parent))
        except OSError as e:
            raise UserError(f"cannot write {path}: {e.strerror or e}") from None
    empty_index(path.parent)
    return path


def empty_index(folder: Path) -> None:
    """An empty package index (`index.json`, `[]`) in `folder`, unless it has an index already.

    LibreTranslate, started with fewer than two packages installed, reads the package index and
    installs what it lists for its languages: online, the official models beside ours (and which
    one then serves a pair is the order of a folder listing); offline, it retries for minutes.
    Pointed at this index (ARGOS_PACKAGE_INDEX=file://FOLDER/), it finds nothing to add, says
    so, and serves the packages installed, online or off."""
    index = folder / "index.json"
    if not index.exists():
        with atomic_file(index) as file:
            file.write("[]\n")


def is_package(path: str | Path) -> bool:
    """Whether `path` names a package file (by its suffix: a corrupt one is still one, to say so)."""
    return Path(path).suffix == SUFFIX and Path(path).is_file()


@contextmanager
def unpacked(path: str | Path) -> Iterator[Path]:
    """The package's CTranslate2 export (its model/ folder), unpacked into a temporary folder
    that goes when the block ends."""
    path = Path(path)
    with tempfile.TemporaryDirectory() as work:
        try:
            model = _model_folder(path)
            if model is None:
                raise UserError(f"{path} is not an Argos package made by minitrans (no model/{MANIFEST} in it)")
            with zipfile.ZipFile(path) as archive:
                archive.extractall(work, [n for n in archive.namelist() if n.startswith(model)])
        except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError) as e:  # truncated, corrupt, unreadable
            reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e) or type(e).__name__
            raise UserError(f"{path} is not a readable Argos package ({reason})") from None
        yield Path(work) / model


def offline_environ(home: Path, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """`base` (default: this process's environment) for running argostranslate or LibreTranslate
    alone: its packages, settings and caches under `home`, and every HTTP(S) request sent to a
    closed port, so that anything that would download (a splitter, the package index) fails at
    once instead of reaching out (the tests and bench/argos.py run them so)."""
    closed = "http://127.0.0.1:9"  # the discard port: nothing listens
    base = os.environ if base is None else base
    return {
        **{k: v for k, v in base.items() if not k.startswith(("ARGOS_", "XDG_"))},
        "HOME": str(home),
        "ARGOS_PACKAGES_DIR": str(home / "packages"),
        "XDG_DATA_HOME": str(home / "data"),
        "XDG_CONFIG_HOME": str(home / "config"),
        "XDG_CACHE_HOME": str(home / "cache"),
        **dict.fromkeys(("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"), closed),
        "no_proxy": "",
        "PYTHONPATH": "",
    }
