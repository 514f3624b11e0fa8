"""A translator on what people type: a Multi30k split as it is, lower-cased, upper-cased, without
its final punctuation, three lines to a paragraph, each of its words alone, and with numbers
(inference/robustness.py says how each is scored).

    .venv/bin/python bench/robustness.py -c runs/RUN [--split val] [--sentences N]
    .venv/bin/python bench/robustness.py -c exports/de-en                  # CTranslate2
    .venv/bin/python bench/robustness.py -c exports/PACKAGE.argosmodel --argostranslate ~/libretranslate/bin/python
    .venv/bin/python bench/robustness.py -c runs/RUN --whole-lines

-c takes what translate.py takes (a run, a checkpoint, an export, an Argos package), translated
with translate.py's defaults (beam 5); with --argostranslate PYTHON an Argos package is
translated by argostranslate itself in that interpreter's environment (offline, a text a call,
as LibreTranslate calls it); with --whole-lines our engines give the model each line whole and
as typed, as translate.py's --whole-lines does (no sentence splitting, recasing, number
stand-ins or loop guard): what the model itself does, as argostranslate runs it but for its
splitting. The split is the validation set unless --split says otherwise (the test set only to
report). Prints a table and writes bench/results/robustness.json with the commit and CPU.
"""

import argparse
import json
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.common import RESULTS, split_text, write_result  # noqa: E402
from inference import load_translator  # noqa: E402
from inference.argos_package import is_package, offline_environ  # noqa: E402
from inference.checkpoint import load_for_inference  # noqa: E402
from inference.ct2_export import MANIFEST  # noqa: E402
from inference.ct2_translator import is_export  # noqa: E402
from inference.robustness import robustness  # noqa: E402
from utils.errors import UserError  # noqa: E402

ARGOS = """
import json, sys
import argostranslate.package, argostranslate.translate
argostranslate.package.install_from_path(sys.argv[1])
texts = json.load(sys.stdin)
print(json.dumps([argostranslate.translate.translate(text, sys.argv[2], sys.argv[3]) for text in texts]))
"""


def argos_translate(python: str, package: str, src: str, tgt: str, home: Path):
    """What translates lines through argostranslate: one process for all of a variant's lines."""

    def translate(lines: list[str]) -> list[str]:
        done = subprocess.run(
            [python, "-c", ARGOS, package, src, tgt],
            input=json.dumps(lines),
            capture_output=True,
            text=True,
            env=offline_environ(home),
        )
        if done.returncode != 0:
            sys.exit(f"error: argostranslate failed: {done.stderr.strip()[-500:]}")
        return json.loads(done.stdout.splitlines()[-1])

    return translate


def languages(path: str) -> tuple[str, str]:
    """(source, target) language of what -c names: a package's metadata, an export's manifest, a
    checkpoint's own."""
    if is_package(path):
        with zipfile.ZipFile(path) as archive:
            [name] = [n for n in archive.namelist() if n.count("/") == 1 and n.endswith("/metadata.json")]
            metadata = json.loads(archive.read(name))
        return metadata["from_code"], metadata["to_code"]
    if is_export(path):
        manifest = json.loads((Path(path) / MANIFEST).read_text(encoding="utf-8"))
        return manifest["src_lang"], manifest["tgt_lang"]
    meta = load_for_inference(path)[2]
    return meta["src_lang"], meta["tgt_lang"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-c", "--checkpoint", required=True, help="a run, checkpoint, export or Argos package")
    parser.add_argument("--split", default="val", help="the Multi30k split (default val; test only to report)")
    parser.add_argument("--sentences", type=int, help="the split's first N sentences only (default: all)")
    parser.add_argument("--argostranslate", metavar="PYTHON", help="translate the Argos package -c with argostranslate")
    parser.add_argument(
        "--whole-lines", action="store_true", help="each line whole and as typed: the model alone, as translate.py's"
    )
    parser.add_argument("--out", type=Path, default=RESULTS / "robustness.json")
    args = parser.parse_args()
    if args.whole_lines and args.argostranslate:
        parser.error("--whole-lines is for our engines: argostranslate runs the model as it does")

    try:
        translator = load_translator(args.checkpoint, whole_lines=args.whole_lines)
        src, tgt = languages(args.checkpoint)
        text = split_text(src, tgt, args.split, args.sentences)
    except UserError as e:
        sys.exit(f"error: {e}")
    sources, references = list(text["src"]), list(text["tgt"])
    with tempfile.TemporaryDirectory() as home, translator:
        if args.argostranslate:
            engine = "argostranslate"
            translate = argos_translate(args.argostranslate, args.checkpoint, src, tgt, Path(home))
        else:
            engine = type(translator).__name__ + (", whole lines" if args.whole_lines else "")
            translate = translator.translate
        results = robustness(translate, sources, references, (src, tgt))
    print(f"{args.checkpoint} ({engine}), {args.split}, {len(sources)} lines; BLEU lowercased")
    for variant, row in results.items():
        figures = ", ".join(f"{key} {value}" for key, value in row.items())
        print(f"  {variant:<22} {figures}")
    write_result(
        args.out, {"checkpoint": str(args.checkpoint), "engine": engine, "split": args.split, "variants": results}
    )


if __name__ == "__main__":
    main()
