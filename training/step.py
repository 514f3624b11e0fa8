"""One optimizer step: forward, loss, backward over a step's batches, clip, update.

Training (training/trainer.py), the shape probe (training/shape_choice.py) and the speed
benchmark (bench/train_speed.py) all build their optimizer and take their steps here, so the
probe and the benchmark measure exactly what training does.
"""

import math
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from data import Batch
from training.config import TrainConfig


def make_optimizer(model: nn.Module, train: TrainConfig) -> torch.optim.AdamW:
    """AdamW as `train` sets it, fused: one kernel updates each parameter in one pass over its
    values and moments, where the loop of separate ops made five (on the small shape's 7.6M
    parameters, 4.4 ms a step against 16.8 ms on a 2-core Xeon)."""
    return torch.optim.AdamW(
        model.parameters(),
        lr=train.lr,
        betas=tuple(train.betas),
        eps=train.eps,
        weight_decay=train.weight_decay,
        fused=True,
    )


@dataclass
class StepResult:
    loss: float  # the step's summed loss divided by `normalizer`
    grad_norm: float  # before clipping
    updated: bool  # False: the loss or gradient was not finite and the weights were left alone


def train_step(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    label_smoothing: float,
    batches: Sequence[Batch],
    normalizer: float,
    autocast: Callable[[], AbstractContextManager],
    clip_grad_norm: float | None,
    device: torch.device | None = None,
    consistency: float = 0.0,
) -> StepResult:
    """Accumulate the gradients of `batches`, then clip and update (only if all is finite).

    Args:
        model: the model, or its DistributedDataParallel wrapper (gradients are then
            all-reduced once, after the last batch). Called as `model(src, tgt_in,
            targets=tgt_out, label_smoothing=...).loss`, the loss summed over the
            real target tokens (Transformer.forward).
        normalizer: what the summed loss is divided by, e.g. the step's target tokens, so
            that every token weighs the same whatever batch it came in.
        autocast: a context for the forward pass (bf16 autocast, or one that does nothing).
        consistency: R-Drop's weight (train.rdrop; Transformer.forward): above 0, every batch
            goes through twice and the two passes are also trained to agree.
    """
    params = [p for p in model.parameters() if p.requires_grad]
    step_loss = 0.0
    for i, batch in enumerate(batches):
        if device is not None:
            batch = batch.to(device)
        last = i == len(batches) - 1
        with nullcontext() if last or not isinstance(model, DistributedDataParallel) else model.no_sync():
            with autocast():
                output = model(
                    batch.src,
                    batch.tgt_in,
                    targets=batch.tgt_out,
                    label_smoothing=label_smoothing,
                    consistency=consistency,
                )
            loss = output.loss.float() / normalizer
            loss.backward()
        step_loss += loss.item()
    grad_norm = torch.nn.utils.clip_grad_norm_(params, clip_grad_norm or math.inf)
    updated = math.isfinite(step_loss) and bool(torch.isfinite(grad_norm))
    if updated:
        optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return StepResult(step_loss, grad_norm.item(), updated)
