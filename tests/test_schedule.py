"""The learning-rate schedule (training/schedule.py)."""

import math

import pytest

from training.config import TrainConfig
from training.schedule import Schedule


def test_linear_schedule_reaches_its_floor_at_the_planned_last_step():
    schedule = Schedule("linear", warmup_steps=10, floor=0.05)
    assert [schedule.factor(s) for s in (1, 5, 10)] == [0.1, 0.5, 1.0]
    assert schedule.factor(500) == 1.0  # not planned yet: the peak holds
    schedule.plan(step=40, last_step=140)
    factors = [schedule.factor(s) for s in range(40, 141)]
    assert factors[0] == 1.0 and factors[-1] == pytest.approx(0.05)
    assert factors[50] == pytest.approx(0.05 + 0.95 * 0.5)
    assert all(a > b for a, b in zip(factors, factors[1:]))  # strictly decreasing to the end
    assert schedule.factor(141) == pytest.approx(0.05)  # and never below the floor after it


def test_a_later_plan_decays_from_where_the_rate_stands():
    schedule = Schedule("linear", warmup_steps=10, floor=0.1)
    schedule.plan(step=20, last_step=120)
    at_70 = schedule.factor(70)
    assert at_70 == pytest.approx(0.1 + 0.9 * 0.5)
    schedule.plan(step=70, last_step=220)  # the run turned out faster than planned
    assert schedule.factor(70) == pytest.approx(at_70) and schedule.factor(220) == pytest.approx(0.1)
    assert schedule.factor(145) == pytest.approx(0.1 + (at_70 - 0.1) * 0.5)


def test_a_run_bounded_by_steps_plans_at_once():
    schedule = Schedule.from_config(TrainConfig(schedule="linear", warmup_steps=100, max_steps=1000, max_minutes=None))
    assert schedule.planned and (schedule.decay_start, schedule.last_step) == (100, 1000)
    assert schedule.factor(1000) == 0.0
    timed = Schedule.from_config(TrainConfig(schedule="linear", warmup_steps=100, max_minutes=60))
    assert not timed.planned  # planned from measured speed during the run


def test_inverse_sqrt_and_constant():
    inverse = Schedule("inverse_sqrt", warmup_steps=400)
    assert inverse.factor(200) == 0.5 and inverse.factor(400) == 1.0
    assert inverse.factor(1600) == math.sqrt(400 / 1600)
    assert Schedule("constant", warmup_steps=400).factor(10_000) == 1.0


def test_state_round_trips():
    schedule = Schedule("linear", warmup_steps=10)
    schedule.plan(20, 300)
    restored = Schedule("linear", warmup_steps=10)
    restored.load_state_dict(schedule.state_dict())
    assert restored == schedule and [restored.factor(s) for s in range(300)] == [schedule.factor(s) for s in range(300)]
