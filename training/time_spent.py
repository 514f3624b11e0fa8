"""Where a run's wall clock goes: its training steps, and each thing done beside them (data
preparation, validations, attention maps, checkpoints, the final evaluation). The log's last
lines and results.json say it, so that a user sees what an hour bought, and what did not train.
"""

from collections.abc import Callable, Iterator
from contextlib import contextmanager

STEPS = "training steps"  # what is left of the session once everything measured is taken out


class TimeSpent:
    """Seconds by what they were spent on, on `clock` (the trainer's: tests pass a fake one),
    from `started`, the clock's reading when this session of the run began."""

    def __init__(self, clock: Callable[[], float], started: float) -> None:
        self.clock, self.started = clock, started
        self.seconds: dict[str, float] = {}

    def add(self, what: str, seconds: float) -> None:
        self.seconds[what] = self.seconds.get(what, 0.0) + seconds

    @contextmanager
    def on(self, what: str) -> Iterator[None]:
        """Counts the time inside the `with` block as spent on `what`."""
        start = self.clock()
        try:
            yield
        finally:
            self.add(what, self.clock() - start)

    def breakdown(self) -> dict[str, float]:
        """Seconds of this session by what they were spent on, the training steps first (the
        session's time less all the rest), rounded to tenths; they add up to the session."""
        total = self.clock() - self.started
        spent = {STEPS: total - sum(self.seconds.values()), **self.seconds}
        return {what: round(seconds, 1) for what, seconds in spent.items()}


def summary(spent: dict[str, float]) -> str:
    """One line of a `breakdown`: each part's seconds and share of the session."""
    total = max(sum(spent.values()), 1e-9)
    return ", ".join(f"{what} {seconds:.1f} s ({100 * seconds / total:.1f}%)" for what, seconds in spent.items())
