"""The training loop (training/trainer.py): time budget and schedule on a fake clock (a raised
limit extending a run included), the last step's attention, non-finite stops, accumulation, bf16.
Resuming and interrupting: test_resume.py."""

from collections.abc import Callable

import pytest
import torch

import training.trainer
from helpers import TOY_DATA, compose_config, run_train, scalars
from inference.checkpoint import load_checkpoint
from inference.translator import Translator
from model import Transformer
from training.run import train
from utils.errors import UserError
from viz.attention_store import steps

QUIET = ["train.eval_every=1000", "train.attention_every=0", "train.threads=1", "train.head_importance=false"]


class FakeClock:
    """Seconds that pass only when a training step runs (`per_step` each, or `per_step(n)` for
    the n-th step of the process) or a set of sentences is translated (`per_translation`)."""

    def __init__(self, per_step: float | Callable[[int], float], per_translation: float = 0.0) -> None:
        self.now, self.steps, self.per_translation = 0.0, 0, per_translation
        self.per_step = per_step if callable(per_step) else (lambda n: per_step)

    def __call__(self) -> float:
        return self.now

    def install(self, monkeypatch) -> None:
        real_step, real_translate = training.trainer.train_step, Translator.translate

        def timed_step(*args, **kwargs):
            self.steps += 1
            self.now += self.per_step(self.steps)
            return real_step(*args, **kwargs)

        def timed_translate(*args, **kwargs):
            self.now += self.per_translation
            return real_translate(*args, **kwargs)

        monkeypatch.setattr(training.trainer, "train_step", timed_step)
        monkeypatch.setattr(Translator, "translate", timed_translate)


def test_time_budget_stops_training_and_leaves_the_reserve(tmp_path, monkeypatch, caplog):
    # the final evaluation translates twice (validation, then the test set), 10 s each
    clock = FakeClock(per_step=1.0, per_translation=10.0)
    clock.install(monkeypatch)
    caplog.set_level("INFO", logger="train")
    cfg = compose_config(
        "experiment=ci",
        *TOY_DATA,
        "train.max_minutes=1",
        "train.reserve_minutes=0.5",
        "train.max_steps=100000",
        "train.schedule=constant",
        *QUIET,
    )
    results = train(cfg, tmp_path, clock=clock)
    # 30 s of training budget at 1 s a step: the check before step 31 still sees 30 s
    assert results["steps"] == 31
    assert results["minutes"] == round(31 / 60, 2)
    # the 20 s of final evaluation fit the 30 s reserve: the whole run within its minute
    assert results["total_minutes"] == round(51 / 60, 2) <= 1.0
    assert "time budget of 1.0 minutes (0.5 kept for the final evaluation) reached at step 31" in caplog.text
    # where the minute went, adding up to it: no validation or maps while training (QUIET)
    assert results["seconds"] == {
        "training steps": 31.0,
        "preparation (data, model)": 0.0,
        "checkpoints": 0.0,
        "final validation and averaging": 10.0,
        "test decoding": 10.0,
    }
    assert "where this session's time went: training steps 31.0 s (60.8%), preparation" in caplog.text


def test_the_time_beside_the_steps_is_counted_where_it_is_spent(tmp_path, monkeypatch):
    """Validations (a translation of the validation set each, 5 s on the fake clock) and the test
    set's decoding are counted apart from the steps; the parts add up to the session."""
    clock = FakeClock(per_step=1.0, per_translation=5.0)
    clock.install(monkeypatch)
    cfg = compose_config(
        "experiment=ci", *TOY_DATA, "train.max_minutes=null", "train.max_steps=10", "train.eval_every=5", *QUIET[1:]
    )
    results = train(cfg, tmp_path, clock=clock)
    assert results["seconds"] == {
        "training steps": 10.0,
        "preparation (data, model)": 0.0,
        "validation": 10.0,
        "checkpoints": 0.0,
        "final validation and averaging": 0.0,  # step 10 was validated, and ci averages nothing
        "test decoding": 5.0,
    }
    assert clock() == 25.0


def linear_budget_run(clock: FakeClock, minutes: float, run_dir, monkeypatch, caplog) -> tuple:
    """A ci run with a linear schedule under a time budget of `minutes` (half a minute of it
    reserved), validating every 10 steps on the fake clock: (config, results)."""
    clock.install(monkeypatch)
    caplog.set_level("INFO", logger="train")
    cfg = compose_config(
        "experiment=ci",
        *TOY_DATA,
        f"train.max_minutes={minutes}",
        "train.reserve_minutes=0.5",
        "train.max_steps=100000",
        "train.schedule=linear",
        "train.warmup_steps=5",
        "train.eval_every=10",
        "train.log_every=1",
        "train.attention_every=0",
        "train.head_importance=false",
        "train.threads=1",
    )
    return cfg, train(cfg, run_dir, clock=clock)


def test_linear_schedule_is_planned_from_the_budget_and_ends_at_its_floor(tmp_path, monkeypatch, caplog):
    cfg, results = linear_budget_run(FakeClock(per_step=1.0), 1, tmp_path, monkeypatch, caplog)
    # planned at the first validation (step 10, 10 s): 20 s left at 1 s a step -> last step 30
    assert "schedule planned at step 10" in caplog.text and "at step 30" in caplog.text
    assert results["steps"] == 30  # the plan, not the budget, ended training
    lr = {e.step: e.value for e in scalars(tmp_path).Scalars("train/lr")}
    peak = cfg.train.lr
    assert lr[5] == pytest.approx(peak) and lr[10] == pytest.approx(peak)
    assert lr[20] == pytest.approx(peak / 2) and lr[30] == 0.0
    assert load_checkpoint(tmp_path / "checkpoints" / "step_0000030.pt")["train_state"]["scheduler"]["last_step"] == 30


def test_the_plan_follows_a_run_that_speeds_up_without_a_jump_in_the_rate(tmp_path, monkeypatch, caplog):
    clock = FakeClock(per_step=lambda n: 2.0 if n <= 10 else 1.0)  # twice as fast after step 10
    cfg, results = linear_budget_run(clock, 2, tmp_path, monkeypatch, caplog)
    # 90 s of budget. Step 10 at 20 s: 70 s left at 2 s a step -> step 45. Step 20 at 30 s: 60 s
    # left at 1 s a step (measured since the plan) -> step 80, which later plans confirm.
    assert "schedule planned at step 10: 2.00 s a step" in caplog.text and "at step 45" in caplog.text
    assert "schedule planned at step 20: 1.00 s a step" in caplog.text and "at step 80" in caplog.text
    assert results["steps"] == 80  # the first plan alone would have stopped at step 45, 35 s early
    lr = {e.step: e.value / cfg.train.lr for e in scalars(tmp_path).Scalars("train/lr")}
    at_20 = (45 - 20) / (45 - 10)  # on the first plan's line
    assert lr[20] == pytest.approx(at_20, rel=1e-5)
    assert lr[21] == pytest.approx(at_20 * 59 / 60, rel=1e-5)  # the new line starts where the old one was
    assert lr[50] == pytest.approx(at_20 * 30 / 60, rel=1e-5) and lr[80] == 0.0


def test_a_higher_max_minutes_extends_a_run_that_ended(tmp_path, monkeypatch, caplog):
    linear_budget_run(FakeClock(per_step=1.0), 1, tmp_path, monkeypatch, caplog)  # ends at its plan's step 30
    caplog.clear()
    cfg, results = linear_budget_run(FakeClock(per_step=1.0), 2, tmp_path, monkeypatch, caplog)  # the same folder
    # 30 s spent at 1 s a step, 90 s of budget now: planned anew to step 90, on the line from
    # the peak at the end of warmup (step 5) to the floor there, and then trained to it
    assert "resumed from" in caplog.text
    assert "train.max_minutes was 1.0 in the checkpoint; this run's 2.0" in caplog.text
    assert "schedule planned anew at step 30: the learning rate decays linearly to 0 x peak at step 90" in caplog.text
    assert results["steps"] == 90
    lr = {e.step: e.value / cfg.train.lr for e in scalars(tmp_path).Scalars("train/lr")}
    assert lr[30] == 0.0  # where the first run ended
    assert lr[31] == pytest.approx((90 - 31) / (90 - 5), rel=1e-5) and lr[90] == 0.0


def test_a_higher_max_steps_extends_a_run_and_changed_settings_are_said_and_used(tmp_path):
    common = ["experiment=ci", *TOY_DATA, "train.max_minutes=null", "train.warmup_steps=5", "train.log_every=1", *QUIET]
    run_train(tmp_path, *common, "train.max_steps=20")
    run_train(tmp_path, *common, "train.max_steps=40", "train.weight_decay=0.01")
    log = (tmp_path / "train.log").read_text()
    assert "resumed from" in log and "stopped at step 40" in log
    assert "train.max_steps was 20 in the checkpoint; this run's 40 is used" in log
    assert "train.weight_decay was 0.0 in the checkpoint; this run's 0.01 is used" in log
    state = load_checkpoint(tmp_path / "checkpoints" / "step_0000040.pt")["train_state"]
    assert all(group["weight_decay"] == 0.01 for group in state["optimizer"]["param_groups"])
    assert (state["scheduler"]["decay_start"], state["scheduler"]["last_step"]) == (5, 40)
    lr = {e.step: e.value / 3e-3 for e in scalars(tmp_path).Scalars("train/lr")}
    assert lr[20] == 0.0 and lr[21] == pytest.approx((40 - 21) / 35, rel=1e-5) and lr[40] == 0.0


def test_the_last_steps_attention_is_stored_too(tmp_path):
    run_train(
        tmp_path,
        "experiment=ci",
        *TOY_DATA,
        "train.max_steps=30",
        "train.eval_every=20",
        "train.max_minutes=null",
        "train.threads=1",
        "train.head_importance=false",
    )
    assert steps(tmp_path) == [0, 20, 30]  # the slider reaches the step training stopped at


def test_non_finite_loss_stops_with_a_clear_message(tmp_path, monkeypatch):
    real_forward = Transformer.forward
    calls = {"n": 0}

    def forward_that_overflows(self, *args, **kwargs):
        output = real_forward(self, *args, **kwargs)
        if self.training:  # the training loss of step 21 on
            calls["n"] += 1
            output = output._replace(loss=output.loss * float("inf")) if calls["n"] > 20 else output
        return output

    monkeypatch.setattr(Transformer, "forward", forward_that_overflows)
    cfg = compose_config("experiment=ci", *TOY_DATA, "train.checkpoint_every=10", *QUIET)
    with pytest.raises(
        UserError,
        match=r"non-finite loss \(inf\) or gradient norm \(.*\) at step 21; "
        r"stopped\. Last good checkpoint: .*step_0000020\.pt",
    ):
        train(cfg, tmp_path)
    assert load_checkpoint(tmp_path / "checkpoints" / "step_0000020.pt")["train_state"]["progress"]["step"] == 20


def test_gradient_accumulation_consumes_grad_accum_batches_per_step(tmp_path):
    cfg = compose_config("experiment=ci", *TOY_DATA, "train.grad_accum=3", "train.max_steps=5", *QUIET)
    results = train(cfg, tmp_path)
    progress = load_checkpoint(tmp_path / "checkpoints" / "step_0000005.pt")["train_state"]["progress"]
    assert results["steps"] == 5
    assert (progress["epoch"], progress["position"]) == (0, 15)


def test_bf16_autocast_trains_on_the_cpu(tmp_path, caplog):
    """A few steps of the tiny model in bf16 (emulated, and so slow, on a CPU without native bf16)."""
    caplog.set_level("INFO", logger="train")
    cfg = compose_config(
        "experiment=ci",
        *TOY_DATA,
        "train.precision=bf16",
        "train.max_steps=3",
        "train.max_tokens=512",
        "data.max_eval_examples=8",
        "train.test_beam_size=1",
        *QUIET,
    )
    results = train(cfg, tmp_path)
    assert results["steps"] == 3 and results["precision"] == "bf16"
    assert "precision: " in caplog.text
    first = load_checkpoint(tmp_path / "checkpoints" / "step_0000003.pt")["model"]
    assert all(torch.isfinite(t).all() for t in first.values())
