"""The training progress bar: it runs against whatever bounds the run.

A run with a time budget ends when the budget does, whatever `max_steps` says, so its bar
counts minutes of the budget (steps go in the postfix); a run without one counts steps.
"""

import math
import sys

from tqdm import tqdm


class ProgressBar:
    def __init__(self, budget_seconds: float, max_steps: int, step: int, elapsed: float, enabled: bool) -> None:
        self.by_time = math.isfinite(budget_seconds)
        common = dict(dynamic_ncols=True, disable=not enabled, mininterval=1.0 if sys.stderr.isatty() else 30.0)
        if self.by_time:
            self.bar = tqdm(
                total=round(budget_seconds / 60, 2),
                initial=round(elapsed / 60, 2),
                unit="min",
                bar_format="{l_bar}{bar}| {n:.1f}/{total:.1f} min [{elapsed}<{remaining}{postfix}]",
                **common,
            )
        else:
            self.bar = tqdm(total=max_steps, initial=step, unit="step", **common)

    def advance(self, step: int, elapsed: float) -> None:
        """After an optimizer step; `elapsed` counts the run's seconds, earlier sessions included."""
        if self.by_time:
            self.bar.update(round(min(elapsed / 60, self.bar.total) - self.bar.n, 4))
        else:
            self.bar.update(step - self.bar.n)

    def show(self, **values) -> None:
        self.bar.set_postfix(values, refresh=False)

    def close(self) -> None:
        self.bar.close()
