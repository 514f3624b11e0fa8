"""The model shape for this machine (model=auto): the largest shape of the table that the run's
budget affords enough steps of, measured at start by timing a few training steps of it here.

The table (conf/model/auto.yaml) comes from one-hour runs and GPU rankings on validation
(docs/recipe_search.md): a larger shape wins only where the hour gives it enough steps, and
how many steps an hour gives is the CPU's (2-3x more on a CPU with bf16 in hardware). A run
that continues a checkpoint keeps that checkpoint's shape, whatever this machine measures.
"""

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch

from data import Batch
from model import Transformer, TransformerConfig
from training.config import ShapeRow, TrainConfig
from training.step import make_optimizer, train_step

# Of a time budget, the share that goes into training steps: the one-hour runs spent 94-95% of
# theirs in steps (validations, attention maps and checkpoints the rest), and a fresh model's
# first steps run a few percent slower than a run's average.
STEP_SHARE = 0.9
WARMUP_STEPS, TIMED_STEPS = 2, 3  # a probe's steps: the first ones allocate, so only later ones count


@dataclass
class ShapeChoice:
    name: str  # the table's row
    model: TransformerConfig  # its shape, the vocabulary still the row's (the tokenizer's comes later)
    why: str  # for the log


def affordable_steps(seconds_per_step: float, train: TrainConfig) -> int:
    """Steps a run of `train`'s limits makes at this speed: its step limit, or what its time
    budget gives the steps, whichever comes first."""
    by_time = train.budget_seconds * STEP_SHARE / seconds_per_step
    return int(min(train.max_steps, by_time))


def choose_shape(
    rows: dict[str, ShapeRow], seconds_per_step: Callable[[TransformerConfig], float], train: TrainConfig
) -> ShapeChoice:
    """The first row, largest `min_steps` first, whose measured speed affords its `min_steps`.
    Nothing is measured where the limits alone decide: a row that asks for more steps than
    train.max_steps is passed over, without a time limit the first row within it is taken, and
    the row with `min_steps` 0 is taken whatever the budget."""
    passed = []
    for name, row in sorted(rows.items(), key=lambda item: -item[1].min_steps):
        if row.min_steps == 0:
            return ShapeChoice(name, row.model, "; ".join([*passed, f"{name} takes any budget"]))
        if train.max_steps < row.min_steps:
            passed.append(f"{name} needs {row.min_steps:,} steps, over train.max_steps {train.max_steps:,}")
            continue
        if math.isinf(train.budget_seconds):  # no time limit: the step limit is the budget
            return ShapeChoice(name, row.model, f"train.max_steps {train.max_steps:,} without a time limit")
        seconds = seconds_per_step(row.model)
        steps = affordable_steps(seconds, train)
        measured = f"{name} runs {seconds:.2f} s a step here: ~{steps:,} steps in the budget"
        if steps >= row.min_steps:
            return ShapeChoice(name, row.model, f"{measured}, at least the {row.min_steps:,} its row asks")
        passed.append(f"{measured}, under the {row.min_steps:,} its row asks")
    raise AssertionError("the table has a row with min_steps 0 (RunConfig checks it)")


def probe_seconds_per_token(
    model_cfg: TransformerConfig,
    batches: list[Batch],
    train: TrainConfig,
    device: torch.device,
    clock: Callable[[], float] = time.perf_counter,
) -> float:
    """Seconds a training step of a fresh model of `model_cfg` takes here per target token:
    the median over TIMED_STEPS steps on `batches` after WARMUP_STEPS, with training's
    optimizer, precision and loss. Per token, because a few batches hold more or fewer tokens
    than the epoch's average (the caller scales it by that average). The weights drawn here are
    thrown away; the run seeds its own afterwards."""
    model = Transformer(model_cfg).to(device).train()
    optimizer = make_optimizer(model, train)

    def autocast():
        return torch.autocast(device.type, dtype=torch.bfloat16, enabled=train.precision == "bf16")

    def synchronize() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    def step(batch: Batch) -> None:
        train_step(
            model,
            optimizer,
            train.label_smoothing,
            [batch],
            batch.n_tgt_tokens,
            autocast,
            train.clip_grad_norm,
            device,
            train.rdrop,
        )

    for i in range(WARMUP_STEPS):
        step(batches[i % len(batches)])
    per_token = []
    for i in range(WARMUP_STEPS, WARMUP_STEPS + TIMED_STEPS):
        batch = batches[i % len(batches)]
        synchronize()
        start = clock()
        step(batch)
        synchronize()
        per_token.append((clock() - start) / batch.n_tgt_tokens)
    return sorted(per_token)[len(per_token) // 2]
