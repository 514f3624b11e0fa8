"""Export a trained minitrans checkpoint to CTranslate2, OpenNMT's inference engine, or as an
Argos Translate package (which runs on CTranslate2) for argostranslate and LibreTranslate.

    python export.py -c runs/RUN exports/de-en                   # float32 weights
    python export.py -c runs/RUN exports/de-en-int8 --quantize int8
    python translate.py -c exports/de-en "Ein Hund rennt."       # translate through it
    python export.py -c runs/RUN exports/ --to argos             # exports/minitrans-de_en-1_0.argosmodel

A CTranslate2 directory holds the model, the SentencePiece model(s) and a README model card
(inference/ct2_export.py); an Argos package holds that directory, the metadata argostranslate
reads and a sentence splitter trained on the run's source text (inference/argos_export.py).
Either is written whole or not at all; an existing one is replaced only with --force, and only
if it is an earlier export.
"""

import argparse
import json
import shlex
import sys
from pathlib import Path

from inference.argos_package import export_argos
from inference.checkpoint import load_for_inference, resolve_checkpoint_path, run_text
from inference.ct2_export import QUANTIZATIONS, export_ctranslate2
from utils.checkpoint_files import BEST, CHECKPOINTS
from utils.cli import OneLineErrorParser, run_command
from utils.errors import UserError


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineErrorParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "-c", "--checkpoint", required=True, help="checkpoint file, or a run folder (uses its checkpoints/best.pt)"
    )
    parser.add_argument(
        "out", type=Path, help="the directory to write; with --to argos the package file, or a folder to write it in"
    )
    parser.add_argument(
        "--to",
        choices=["ctranslate2", "argos"],
        default="ctranslate2",
        help="a CTranslate2 directory (default), or an Argos Translate package (.argosmodel)",
    )
    parser.add_argument(
        "--quantize",
        choices=QUANTIZATIONS,
        default="float32",
        help="weight type on disk (default float32; int8 is about 4x smaller and faster on CPU)",
    )
    parser.add_argument("--force", action="store_true", help="replace an earlier export at OUT")
    argos = parser.add_argument_group("Argos Translate packages (--to argos)")
    argos.add_argument("--from-lang", help="the source language's ISO 639-1 code (default: the run's)")
    argos.add_argument("--to-lang", help="the target language's ISO 639-1 code (default: the run's)")
    argos.add_argument("--package-name", help="the package's name (default: minitrans-FROM_TO)")
    argos.add_argument("--package-version", help="the package's version (default 1.0)")
    argos.add_argument(
        "--data-dir", help="the run's Multi30k folder, for the sentence splitter (default: where the run read it)"
    )
    return parser


ARGOS_ONLY = ("from_lang", "to_lang", "package_name", "package_version", "data_dir")


def run(args: argparse.Namespace, command: str) -> None:
    if args.to != "argos":
        given = [f"--{name.replace('_', '-')}" for name in ARGOS_ONLY if getattr(args, name) is not None]
        if given:
            raise UserError(f"{', '.join(given)}: read with --to argos only")
    path = resolve_checkpoint_path(args.checkpoint)
    model, tokenizer, meta = load_for_inference(path)
    results = None  # the run's test scores, for the model card: they are its best.pt's, as the run left it
    results_file = path.parent.parent / "results.json"
    if (
        path.name == BEST
        and path.parent.name == CHECKPOINTS
        and results_file.is_file()
        and results_file.stat().st_mtime >= path.stat().st_mtime
    ):
        results = json.loads(results_file.read_text(encoding="utf-8"))
    if args.to == "argos":

        def source_text() -> tuple[list[str], list[str]]:
            text = run_text(meta, ["train", "val"], args.data_dir, what=f"checkpoint {path}")
            return list(text["train"]["src"]), list(text["val"]["src"])

        out = export_argos(
            model,
            tokenizer,
            meta,
            args.out,
            source_text,
            args.quantize,
            args.from_lang,
            args.to_lang,
            args.package_name,
            args.package_version or "1.0",
            args.force,
            results,
            command,
        )
        print(
            f"wrote {out} (Argos Translate package, {args.quantize} weights, from {path}); install it where "
            f"argostranslate or LibreTranslate runs with:\n"
            f"  python -c \"import argostranslate.package as p; p.install_from_path('{out}')\"\n"
            f"and serve it with LibreTranslate (offline, nothing else installed):\n"
            f"  ARGOS_PACKAGE_INDEX=file://{out.parent.resolve()}/ libretranslate --load-only "
            f"{args.from_lang or meta['src_lang']},{args.to_lang or meta['tgt_lang']}"
        )
        return
    out = export_ctranslate2(model, tokenizer, meta, args.out, args.quantize, args.force, results, command)
    print(
        f"wrote {out} (CTranslate2, {args.quantize} weights, from {path}); translate with:\n"
        f'  python translate.py -c {shlex.quote(str(out))} "A sentence."'
    )


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser().parse_args(argv)
    return run_command(lambda: run(args, shlex.join(["python", "export.py", *argv])))


if __name__ == "__main__":
    sys.exit(main())
