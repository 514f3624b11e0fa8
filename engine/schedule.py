"""Learning-rate schedules, as factors of the peak rate for torch's LambdaLR."""
import math
from typing import Callable

from engine.config import TrainConfig


def lr_lambda(cfg: TrainConfig) -> Callable[[int], float]:
    """Linear warmup to the peak lr, then inverse square root decay (or constant)."""
    warmup = max(1, cfg.warmup_steps)

    def factor(step: int) -> float:  # LambdaLR counts from 0
        step += 1
        if step < warmup or cfg.schedule == "constant":
            return min(1.0, step / warmup)
        return math.sqrt(warmup / step)

    return factor
