"""The learning-rate schedule: a factor of the peak rate for every optimizer step.

`linear` is the budgeted-training schedule (Li et al., ICLR 2020): warm up, then decay
linearly to `lr_floor` exactly when the run ends. A run bounded by steps knows its end from
the start. A run bounded by wall-clock time does not, so it holds the peak until it has
measured its own speed, then plans its last step once (`Schedule.plan`); the plan is saved in
checkpoints, so that a resumed run follows the same learning rates as an uninterrupted one.
"""
import math
from dataclasses import asdict, dataclass

from engine.config import TrainConfig


@dataclass
class Schedule:
    kind: str  # "linear", "inverse_sqrt" or "constant"
    warmup_steps: int
    floor: float = 0.0  # linear: the factor at the last step
    decay_start: int | None = None  # linear: the step where decay began (the plan's step)
    last_step: int | None = None  # linear: the planned last step; None until planned

    @classmethod
    def from_config(cls, cfg: TrainConfig) -> "Schedule":
        schedule = cls(cfg.schedule, max(1, cfg.warmup_steps), cfg.lr_floor)
        if cfg.schedule == "linear" and cfg.max_minutes is None:
            schedule.plan(schedule.warmup_steps, cfg.max_steps)  # bounded by steps: known now
        return schedule

    @property
    def planned(self) -> bool:
        return self.last_step is not None

    def plan(self, step: int, last_step: int) -> None:
        """Decay linearly from `step` (at the peak) to the floor at `last_step`."""
        self.decay_start, self.last_step = step, max(step + 1, last_step)

    def factor(self, step: int) -> float:
        """Factor of the peak lr for optimizer step `step` (counting from 1)."""
        if step < self.warmup_steps:
            return step / self.warmup_steps
        if self.kind == "constant":
            return 1.0
        if self.kind == "inverse_sqrt":
            return math.sqrt(self.warmup_steps / step)
        if not self.planned or step <= self.decay_start:
            return 1.0  # linear, before the plan: hold the peak
        left = max(0, self.last_step - step) / (self.last_step - self.decay_start)
        return self.floor + (1.0 - self.floor) * left

    def state_dict(self) -> dict:
        return asdict(self)

    def load_state_dict(self, state: dict) -> None:
        self.__dict__.update(state)
