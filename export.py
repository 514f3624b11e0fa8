"""Export a trained minitrans checkpoint to CTranslate2, OpenNMT's inference engine.

    python export.py -c runs/RUN exports/de-en                   # float32 weights
    python export.py -c runs/RUN exports/de-en-int8 --quantize int8
    python translate.py -c exports/de-en "Ein Hund rennt."       # translate through it

The directory holds CTranslate2's model, the SentencePiece model(s) and a README model card
(inference/ct2_export.py). It is written whole or not at all; an existing one is replaced only
with --force, and only if it is an earlier export.
"""

import argparse
import json
import shlex
import sys
from pathlib import Path

from inference.checkpoint import load_for_inference, resolve_checkpoint_path
from inference.ct2_export import QUANTIZATIONS, export_ctranslate2
from utils.checkpoint_files import BEST, CHECKPOINTS
from utils.cli import OneLineErrorParser, run_command


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineErrorParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "-c", "--checkpoint", required=True, help="checkpoint file, or a run folder (uses its checkpoints/best.pt)"
    )
    parser.add_argument("out", type=Path, help="the directory to write")
    parser.add_argument("--to", choices=["ctranslate2"], default="ctranslate2", help="the engine (ctranslate2)")
    parser.add_argument(
        "--quantize",
        choices=QUANTIZATIONS,
        default="float32",
        help="weight type on disk (default float32; int8 is about 4x smaller and faster on CPU)",
    )
    parser.add_argument("--force", action="store_true", help="replace an earlier export at OUT")
    return parser


def run(args: argparse.Namespace, command: str) -> None:
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
