"""A Hydra multirun as a markdown table, best validation BLEU first: how candidates of the
recipe are ranked (docs/recipe_search.md).

    make train ARGS="-m experiment=proxy train.lr=3e-3,5e-3 model.dropout=0.3,0.2"
    .venv/bin/python bench/sweep_table.py runs/multirun/DATE_TIME

A row per finished run (a folder with results.json): its overrides, minutes in all, steps
and epochs, mean target tokens/s of training, validation BLEU at each validation, the best.
"""

import argparse
import json
import statistics
import sys
from pathlib import Path

import yaml
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator


def run_row(folder: Path) -> dict | None:
    """One finished run's numbers; None for a folder without results.json."""
    if not (folder / "results.json").is_file():
        return None
    results = json.loads((folder / "results.json").read_text())
    overrides_file = folder / ".hydra" / "overrides.yaml"
    overrides = yaml.safe_load(overrides_file.read_text()) if overrides_file.is_file() else []
    events = EventAccumulator(str(folder), size_guidance={"scalars": 0})
    events.Reload()
    tags = set(events.Tags()["scalars"])

    def series(tag: str) -> list[float]:
        return [event.value for event in events.Scalars(tag)] if tag in tags else []

    speeds = series("train/tokens_per_sec")
    return {
        "run": folder.name,
        "overrides": " ".join(overrides or []),
        "minutes": results["total_minutes"],
        "steps": results["steps"],
        "epochs": results["epochs"],
        "tokens_per_sec": round(statistics.mean(speeds)) if speeds else None,
        "val_bleu": [round(b, 2) for b in series("val/bleu")],
        "best_val_bleu": results["best_val_bleu"],
    }


def table(rows: list[dict]) -> str:
    lines = [
        "| run | overrides | minutes | steps (epochs) | target tok/s | validation BLEU along the run | best |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in sorted(rows, key=lambda r: -r["best_val_bleu"]):
        speed = f"{row['tokens_per_sec']:,}" if row["tokens_per_sec"] is not None else "-"
        lines.append(
            f"| {row['run']} | `{row['overrides']}` | {row['minutes']:.1f} | {row['steps']:,} "
            f"({row['epochs']:.1f}) | {speed} | {', '.join(f'{b:.1f}' for b in row['val_bleu'])} "
            f"| **{row['best_val_bleu']:.2f}** |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sweep", type=Path, help="a multirun folder (runs/multirun/...), one subfolder per run")
    args = parser.parse_args()
    if not args.sweep.is_dir():
        sys.exit(f"error: no folder {args.sweep}")
    rows = [row for folder in sorted(args.sweep.iterdir()) if folder.is_dir() and (row := run_row(folder))]
    if not rows:
        sys.exit(f"error: no finished run (a subfolder with results.json) in {args.sweep}")
    print(table(rows))


if __name__ == "__main__":
    main()
