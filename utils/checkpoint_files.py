"""Where a run folder keeps its checkpoints: RUN/checkpoints/step_<N>.pt (full, to resume from)
and RUN/checkpoints/best.pt (the best weights by validation BLEU: all translate.py needs).
Names and paths only, no torch: TensorBoard's process lists them for the ATTENTION tab."""

import re
from pathlib import Path

CHECKPOINTS = "checkpoints"
BEST = "best.pt"


def checkpoint_folder(run_dir: Path) -> Path:
    return Path(run_dir) / CHECKPOINTS


def step_checkpoint_path(folder: Path, step: int) -> Path:
    return folder / f"step_{step:07d}.pt"


STEP_NAME = re.compile(r"step_([0-9]+)\.pt")


def checkpoint_step(path: Path) -> int:
    """N of a `step_<N>.pt` file."""
    match = STEP_NAME.fullmatch(path.name)
    if match is None:
        raise ValueError(f"{path} is not a step checkpoint (step_<N>.pt)")
    return int(match[1])


def step_checkpoints(folder: Path) -> list[Path]:
    """Full training checkpoints `step_<N>.pt` in step order; other files (a user's `step_old.pt`)
    are not training's and are left alone."""
    return sorted((path for path in folder.glob("step_*.pt") if STEP_NAME.fullmatch(path.name)), key=checkpoint_step)


def latest_step_checkpoint(folder: Path) -> Path | None:
    found = step_checkpoints(folder)
    return found[-1] if found else None
