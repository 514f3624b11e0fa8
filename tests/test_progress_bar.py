"""The training progress bar (training/progress_bar.py) follows what bounds the run."""

import math

from training.progress_bar import ProgressBar


def test_with_a_time_budget_the_bar_counts_minutes_of_it():
    bar = ProgressBar(budget_seconds=3600, max_steps=100_000, step=0, elapsed=30, enabled=True)
    assert bar.bar.total == 60 and bar.bar.n == 0.5 and bar.bar.unit == "min"
    bar.advance(step=10, elapsed=900)
    assert bar.bar.n == 15
    assert "15.0/60.0 min" in str(bar.bar)
    bar.advance(step=11, elapsed=4000)  # past the budget (the final evaluation): stays full
    assert bar.bar.n == 60
    bar.close()


def test_without_a_time_budget_the_bar_counts_steps():
    bar = ProgressBar(budget_seconds=math.inf, max_steps=500, step=100, elapsed=0, enabled=True)
    assert (bar.bar.total, bar.bar.n, bar.bar.unit) == (500, 100, "step")
    bar.advance(step=101, elapsed=10_000)
    assert bar.bar.n == 101
    bar.close()
