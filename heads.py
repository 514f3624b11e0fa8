"""Which attention heads a trained checkpoint needs: mask each head in turn, then prune.

    python heads.py -c runs/RUN
    python heads.py -c runs/RUN --sentences 200 --figure heads.png -o heads.json

Prints the table (most important head first, then a pruning curve per kind), writes the
whole result as JSON (default: head_importance.json in the run folder) and, with
--figure, the pruning curves and per-head loss increases as one PNG. train.py does the same
at the end of a run (train.head_importance) into results.json and TensorBoard.
"""

import json
import sys
from pathlib import Path

import torch

from analysis.head_importance import checkpoint_importance, importance_grids, importance_table
from inference.checkpoint import resolve_checkpoint_path
from utils.checkpoint_files import CHECKPOINTS
from utils.cli import OneLineErrorParser, positive_int, run_command
from utils.device import pick_device


def build_parser() -> OneLineErrorParser:
    parser = OneLineErrorParser(
        description="Head importance of a trained minitrans checkpoint on its validation set: validation "
        "loss and greedy BLEU with each attention head masked, and the pruning curve of each "
        "kind (least important heads masked first).",
        epilog="Exit status: 0 done, 1 a bad checkpoint or data folder, 2 a bad option.",
    )
    parser.add_argument(
        "-c", "--checkpoint", required=True, help="checkpoint file, or a run folder (uses its checkpoints/best.pt)"
    )
    parser.add_argument("--data-dir", help="Multi30k folder (default: $MULTI30K_DIR)")
    parser.add_argument(
        "--sentences",
        type=positive_int,
        help="BLEU on the first N validation sentences (default: all; the loss always uses all)",
    )
    parser.add_argument(
        "-o", "--output", type=Path, help="JSON file (default: head_importance.json in the checkpoint's run folder)"
    )
    parser.add_argument("--figure", type=Path, help="also draw the result into this PNG file")
    parser.add_argument("--device", default="auto", help="auto (cuda if available), cpu, cuda, cuda:N")
    parser.add_argument("--threads", type=positive_int, help="CPU threads (default: torch's choice)")
    return parser


def run(args) -> None:
    if args.threads:
        torch.set_num_threads(args.threads)
    path = resolve_checkpoint_path(args.checkpoint)
    result = checkpoint_importance(path, args.data_dir, args.sentences, pick_device(args.device, "--device"))
    print(importance_table(result))
    # into the run folder (RUN/checkpoints/best.pt -> RUN), else beside a checkpoint kept elsewhere
    run_dir = path.parent.parent if path.parent.name == CHECKPOINTS else path.parent
    output = args.output or run_dir / "head_importance.json"
    output.write_text(
        json.dumps({**result, "checkpoint": str(path), "sentences_for_bleu": args.sentences}, indent=2) + "\n"
    )
    print(f"written: {output}", file=sys.stderr)
    if args.figure:
        from viz.heads import importance_figure  # matplotlib only where a figure is asked for

        importance_figure(importance_grids(result, "loss_increase"), result).savefig(args.figure, dpi=130)
        print(f"written: {args.figure}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return run_command(lambda: run(args))


if __name__ == "__main__":
    sys.exit(main())
