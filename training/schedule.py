"""The learning-rate schedule: a factor of the peak rate for every optimizer step.

`linear` is the budgeted-training schedule (Li et al., ICLR 2020): warm up, then decay
linearly to `lr_floor` exactly when the run ends. A run bounded by steps knows its end from
the start. A run bounded by wall-clock time does not, so it holds the peak until it has
measured its own speed, then plans its last step (`Schedule.plan`), and plans again at every
validation from the speed since the last plan, each time decaying from where it stands, so
the rate never jumps and the decay ends within a validation interval of the budget's end.
The plan is saved in checkpoints, so that a resumed run follows the same learning rates as an
uninterrupted one. A run resumed with other limits (a raised `max_steps` or `max_minutes`: to
extend a run that ended) follows from its current step the schedule planned for the new end
from the start (`plan_whole`): for `linear`, the line from the peak at the end of warmup to the
floor at the new last step, so an ended run's rate rises from its floor to where that line is.
"""

import math
from dataclasses import asdict, dataclass

from training.config import TrainConfig


@dataclass
class Schedule:
    kind: str  # "linear", "inverse_sqrt" or "constant"
    warmup_steps: int
    floor: float = 0.0  # linear: the factor at the last step
    decay_start: int | None = None  # linear: the step of the latest plan, where this stretch of decay starts
    start_factor: float = 1.0  # linear: the factor at decay_start (the peak at the first plan)
    last_step: int | None = None  # linear: the planned last step; None until planned

    @classmethod
    def from_config(cls, cfg: TrainConfig) -> "Schedule":
        schedule = cls(cfg.schedule, max(1, cfg.warmup_steps), cfg.lr_floor)
        if cfg.schedule == "linear" and cfg.max_minutes is None:
            schedule.plan_whole(cfg.max_steps)  # bounded by steps: known now
        return schedule

    @property
    def planned(self) -> bool:
        return self.last_step is not None

    def plan(self, step: int, last_step: int) -> None:
        """Decay linearly from `step`, at the factor the schedule has there (the peak, before
        any plan), to the floor at `last_step`."""
        self.start_factor = self.factor(step) if self.planned else 1.0
        self.decay_start, self.last_step = step, max(step + 1, last_step)

    def plan_whole(self, last_step: int) -> None:
        """Decay linearly from the peak at the end of warmup to the floor at `last_step`: the
        plan of a run that knows its end from the start."""
        self.decay_start, self.start_factor = self.warmup_steps, 1.0
        self.last_step = max(self.warmup_steps + 1, last_step)

    def factor(self, step: int) -> float:
        """Factor of the peak lr for optimizer step `step` (counting from 1)."""
        if step < self.warmup_steps:
            return step / self.warmup_steps
        if self.kind == "constant":
            return 1.0
        if self.kind == "inverse_sqrt":
            return math.sqrt(self.warmup_steps / step)
        if not self.planned:
            return 1.0  # linear, before the first plan: hold the peak
        if step <= self.decay_start:
            return self.start_factor
        left = max(0, self.last_step - step) / (self.last_step - self.decay_start)
        return self.floor + (self.start_factor - self.floor) * left

    def state_dict(self) -> dict:
        return asdict(self)

    def load_state_dict(self, state: dict) -> None:
        self.__dict__.update(state)
