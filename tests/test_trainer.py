"""The training loop (training/trainer.py): time budget and schedule on a fake clock, resuming,
interrupting, starting from another run, non-finite stops, accumulation, bf16."""
import shlex
import signal
import subprocess
from typing import Callable

import pytest
import torch

import training.trainer
from inference.checkpoint import load_checkpoint
from inference.translator import Translator
from model import Transformer
from train import continue_command
from training.run import train
from utils.errors import UserError
from viz.attention_store import steps

from helpers import assert_same_training, compose_config, run_script, run_train, scalars, start_script, stop_when
from helpers.commands import command

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


def test_time_budget_stops_training_and_leaves_the_reserve(multi30k_dir, tmp_path, monkeypatch, caplog):
    # the final evaluation translates twice (validation, then the test set), 10 s each
    clock = FakeClock(per_step=1.0, per_translation=10.0)
    clock.install(monkeypatch)
    caplog.set_level("INFO", logger="train")
    cfg = compose_config("experiment=ci", "train.max_minutes=1", "train.reserve_minutes=0.5", "train.max_steps=100000",
                         "train.schedule=constant", *QUIET)
    results = train(cfg, tmp_path, clock=clock)
    # 30 s of training budget at 1 s a step: the check before step 31 still sees 30 s
    assert results["steps"] == 31
    assert results["minutes"] == round(31 / 60, 2)
    # the 20 s of final evaluation fit the 30 s reserve: the whole run within its minute
    assert results["total_minutes"] == round(51 / 60, 2) <= 1.0
    assert "time budget of 1.0 minutes (0.5 kept for the final evaluation) reached at step 31" in caplog.text


def linear_budget_run(clock: FakeClock, minutes: float, run_dir, monkeypatch, caplog) -> tuple:
    """A ci run with a linear schedule under a time budget of `minutes` (half a minute of it
    reserved), validating every 10 steps on the fake clock: (config, results)."""
    clock.install(monkeypatch)
    caplog.set_level("INFO", logger="train")
    cfg = compose_config("experiment=ci", f"train.max_minutes={minutes}", "train.reserve_minutes=0.5",
                         "train.max_steps=100000", "train.schedule=linear", "train.warmup_steps=5",
                         "train.eval_every=10", "train.log_every=1", "train.attention_every=0", "train.threads=1")
    return cfg, train(cfg, run_dir, clock=clock)


def test_linear_schedule_is_planned_from_the_budget_and_ends_at_its_floor(multi30k_dir, tmp_path, monkeypatch, caplog):
    cfg, results = linear_budget_run(FakeClock(per_step=1.0), 1, tmp_path, monkeypatch, caplog)
    # planned at the first validation (step 10, 10 s): 20 s left at 1 s a step -> last step 30
    assert "schedule planned at step 10" in caplog.text and "at step 30" in caplog.text
    assert results["steps"] == 30  # the plan, not the budget, ended training
    lr = {e.step: e.value for e in scalars(tmp_path).Scalars("train/lr")}
    peak = cfg.train.lr
    assert lr[5] == pytest.approx(peak) and lr[10] == pytest.approx(peak)
    assert lr[20] == pytest.approx(peak / 2) and lr[30] == 0.0
    assert load_checkpoint(tmp_path / "checkpoints" / "step_0000030.pt")["train_state"]["scheduler"]["last_step"] == 30


def test_the_plan_follows_a_run_that_speeds_up_without_a_jump_in_the_rate(multi30k_dir, tmp_path, monkeypatch,
                                                                           caplog):
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


def test_a_higher_max_minutes_extends_a_run_that_ended(multi30k_dir, tmp_path, monkeypatch, caplog):
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


def test_a_higher_max_steps_extends_a_run_and_changed_settings_are_said_and_used(multi30k_dir, tmp_path):
    common = ["experiment=ci", "train.max_minutes=null", "train.warmup_steps=5", "train.log_every=1", *QUIET]
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


def test_the_last_steps_attention_is_stored_too(multi30k_dir, tmp_path):
    run_train(tmp_path, "experiment=ci", "train.max_steps=30", "train.eval_every=20", "train.max_minutes=null",
              "train.threads=1", "train.head_importance=false")
    assert steps(tmp_path) == [0, 20, 30]  # the slider reaches the step training stopped at


def test_resume_after_sigkill_matches_uninterrupted_run(multi30k_dir, tmp_path):
    # bounded by steps, so the linear decay is planned at the start and the same in both runs
    common = ["experiment=ci", "train.max_steps=60", "train.checkpoint_every=20", "train.keep_last=5",
              "train.max_minutes=null", *QUIET]
    straight, killed = tmp_path / "straight", tmp_path / "killed"
    run_train(straight, *common)

    process = start_script(command("train.py", f"hydra.run.dir={killed}", *common), stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    stop_when(process, (killed / "checkpoints" / "step_0000020.pt").exists, "its first checkpoint")
    assert not (killed / "checkpoints" / "step_0000060.pt").exists(), "killed too late to test resuming"

    run_train(killed, *common)  # the same command in the same folder
    assert "resumed from" in (killed / "train.log").read_text()
    assert_same_training(straight / "checkpoints" / "step_0000060.pt", killed / "checkpoints" / "step_0000060.pt")


@pytest.mark.parametrize("signum, exit_code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_saves_a_checkpoint_and_the_same_command_continues(multi30k_dir, tmp_path, signum, exit_code):
    common = ["experiment=ci", "train.max_steps=80", "train.eval_every=10", "train.checkpoint_every=1000",
              "train.attention_every=0", "train.threads=1", "train.max_minutes=null"]
    process = start_script(command("train.py", f"hydra.run.dir={tmp_path}", *common), stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True)
    log = tmp_path / "train.log"
    stop_when(process, lambda: log.exists() and "step 20 |" in log.read_text(), "step 20", signum)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == exit_code, stderr[-2000:]
    assert "Traceback" not in stderr
    saved = sorted((tmp_path / "checkpoints").glob("step_*.pt"))
    assert len(saved) == 1, "one checkpoint, written on the signal"
    step = load_checkpoint(saved[0])["train_state"]["progress"]["step"]
    assert 20 <= step < 80
    last = stderr.strip().splitlines()[-1]
    assert last.startswith(f"stopped by {signal.Signals(signum).name} at step {step}; saved ")
    assert last.endswith(f"continue with: python train.py {' '.join(common)} hydra.run.dir={tmp_path}")

    run_train(tmp_path, *common)  # the command it printed
    assert f"at step {step} (epoch" in log.read_text()
    assert load_checkpoint(tmp_path / "checkpoints" / "step_0000080.pt")["train_state"]["progress"]["step"] == 80


def test_an_interrupted_multirun_job_prints_the_command_that_continues_that_job(multi30k_dir, tmp_path):
    sweep = ["experiment=ci", "train.max_steps=60", "train.lr=1e-3,2e-3", "train.eval_every=10",
             "train.attention_every=0", "train.head_importance=false", "train.threads=1"]
    process = start_script(command("train.py", "-m", *sweep, f"hydra.sweep.dir={tmp_path}"), stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True)
    log = tmp_path / "0" / "train.log"
    stop_when(process, lambda: log.exists() and "step 20 |" in log.read_text(), "the first job's step 20",
              signal.SIGINT)
    _, stderr = process.communicate(timeout=120)
    continued = stderr.strip().splitlines()[-1].split("continue with: ")[1]
    # the first job's own values, no sweep and no -m: the command continues this job alone
    assert continued == (f"python train.py experiment=ci train.max_steps=60 train.lr=0.001 train.eval_every=10 "
                       f"train.attention_every=0 train.head_importance=False train.threads=1 "  # as Hydra writes them
                       f"hydra.run.dir={tmp_path / '0'}")
    run_script(*shlex.split(continued)[1:])
    assert "resumed from" in log.read_text() and (tmp_path / "0" / "results.json").is_file()
    assert not (tmp_path / "1").exists()


@pytest.fixture(scope="module")
def first_run(multi30k_dir, tmp_path_factory):
    """40 steps with checkpoints at 20 and 40, each validated."""
    run_dir = tmp_path_factory.mktemp("first")
    run_train(run_dir, "experiment=ci", "train.max_steps=40", "train.eval_every=20", "train.checkpoint_every=20",
              "train.max_minutes=null", "train.attention_every=0", "train.threads=1")
    return run_dir


def test_resume_into_a_new_folder_continues_the_run_exactly(first_run, tmp_path):
    run_train(tmp_path, "experiment=ci", "train.max_steps=40", "train.eval_every=20", "train.checkpoint_every=20",
              "train.max_minutes=null", "train.attention_every=0", "train.threads=1",
              f"train.resume={first_run / 'checkpoints' / 'step_0000020.pt'}")
    assert_same_training(first_run / "checkpoints" / "step_0000040.pt", tmp_path / "checkpoints" / "step_0000040.pt")
    # the best checkpoint came along, so the run can finish even if nothing new beats it
    assert (tmp_path / "results.json").is_file() and (tmp_path / "checkpoints" / "best.pt").is_file()


def test_resume_with_subword_sampling_samples_what_the_uninterrupted_run_did(multi30k_dir, tmp_path):
    # 300 pairs are ~10 batches an epoch: 40 steps cross epochs, each in new segmentations
    common = ["experiment=ci", "data.max_train_examples=300", "data.tokenizer.vocab_size=500", "data.subword_sampling=0.5",
              "train.max_steps=40", "train.checkpoint_every=20", "train.keep_last=5", "train.max_minutes=null", *QUIET]
    run_train(tmp_path / "straight", *common)
    run_train(tmp_path / "resumed", *common, f"train.resume={tmp_path / 'straight' / 'checkpoints' / 'step_0000020.pt'}")
    assert_same_training(tmp_path / "straight" / "checkpoints" / "step_0000040.pt",
                         tmp_path / "resumed" / "checkpoints" / "step_0000040.pt")
    assert load_checkpoint(tmp_path / "resumed" / "checkpoints" / "step_0000040.pt")["train_state"]["progress"]["epoch"] >= 2


def test_init_from_starts_a_new_run_from_the_weights(first_run, tmp_path):
    run_train(tmp_path, "experiment=ci", "train.max_steps=10", "train.eval_every=10", "train.max_minutes=null",
              "train.attention_every=0", "train.threads=1", f"train.init_from={first_run}")
    log = (tmp_path / "train.log").read_text()
    assert "weights initialised from" in log and "resumed from" not in log
    state = load_checkpoint(tmp_path / "checkpoints" / "step_0000010.pt")["train_state"]
    assert state["progress"]["step"] == 10 and state["progress"]["epoch"] == 0  # data order from the start
    first_loss = {e.step: e.value for e in scalars(first_run).Scalars("val/loss")}
    new_loss = {e.step: e.value for e in scalars(tmp_path).Scalars("val/loss")}
    assert new_loss[10] < first_loss[20]  # it started from trained weights, not from scratch


@pytest.mark.parametrize("override, message", [
    ("data.src_lang=fr", "translates de->en, but this run is fr->en"),
    ("data.tokenizer.vocab_size=900", "was trained with another tokenizer"),
])
def test_resume_refuses_another_language_pair_or_tokenizer(first_run, tmp_path, override, message):
    result = run_train(tmp_path, "experiment=ci", override, f"train.resume={first_run}", check=False)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_resume_mid_epoch_with_other_batches_is_refused(first_run, tmp_path):
    """Step 20 of the first run is mid-epoch: with another max_tokens the same position would
    name other batches (another number of processes: tests/test_distributed.py)."""
    result = run_train(tmp_path, "experiment=ci", "train.max_tokens=2048",
                       f"train.resume={first_run / 'checkpoints' / 'step_0000020.pt'}", check=False)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "stopped 20 batches into epoch 0 with batches of train.max_tokens=1024" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


@pytest.mark.parametrize("overrides, has_checkpoint, expected", [
    (["experiment=ci", "train.resume=runs/a"], False, "python train.py experiment=ci train.resume=runs/a"),
    (["experiment=ci", "train.resume=runs/a"], True, "python train.py experiment=ci"),
    (["train.init_from=runs/a"], False, "python train.py train.init_from=runs/a"),
    (["train.attention_sentences=['Ein Hund.']"], True,
     "python train.py 'train.attention_sentences=['\"'\"'Ein Hund.'\"'\"']'"),
])
def test_the_continue_command(tmp_path, overrides, has_checkpoint, expected):
    """From Hydra's record of the job's overrides (a multirun job's own values, no -m); resume
    and init_from kept until the folder has a checkpoint of its own; quoted for the shell."""
    if has_checkpoint:
        (tmp_path / "checkpoints").mkdir()
        (tmp_path / "checkpoints" / "step_0000010.pt").write_bytes(b"")
    assert continue_command(overrides, tmp_path) == f"{expected} hydra.run.dir={tmp_path}"


def test_non_finite_loss_stops_with_a_clear_message(multi30k_dir, tmp_path, monkeypatch):
    real_forward = Transformer.forward
    calls = {"n": 0}

    def forward_that_overflows(self, *args, **kwargs):
        output = real_forward(self, *args, **kwargs)
        if self.training:  # the training loss of step 21 on
            calls["n"] += 1
            output = output._replace(loss=output.loss * float("inf")) if calls["n"] > 20 else output
        return output

    monkeypatch.setattr(Transformer, "forward", forward_that_overflows)
    cfg = compose_config("experiment=ci", "train.checkpoint_every=10", *QUIET)
    with pytest.raises(UserError, match=r"non-finite loss \(inf\) or gradient norm \(.*\) at step 21; "
                                        r"stopped\. Last good checkpoint: .*step_0000020\.pt"):
        train(cfg, tmp_path)
    assert load_checkpoint(tmp_path / "checkpoints" / "step_0000020.pt")["train_state"]["progress"]["step"] == 20


def test_gradient_accumulation_consumes_grad_accum_batches_per_step(multi30k_dir, tmp_path):
    cfg = compose_config("experiment=ci", "train.grad_accum=3", "train.max_steps=5", *QUIET)
    results = train(cfg, tmp_path)
    progress = load_checkpoint(tmp_path / "checkpoints" / "step_0000005.pt")["train_state"]["progress"]
    assert results["steps"] == 5
    assert (progress["epoch"], progress["position"]) == (0, 15)


def test_bf16_autocast_trains_on_the_cpu(multi30k_dir, tmp_path, caplog):
    """A few steps of the tiny model in bf16 (emulated, and so slow, on a CPU without native bf16)."""
    caplog.set_level("INFO", logger="train")
    cfg = compose_config("experiment=ci", "train.precision=bf16", "train.max_steps=3", "train.max_tokens=512",
                         "data.max_eval_examples=8", "train.test_beam_size=1", *QUIET)
    results = train(cfg, tmp_path)
    assert results["steps"] == 3 and results["precision"] == "bf16"
    assert "precision: " in caplog.text
    first = load_checkpoint(tmp_path / "checkpoints" / "step_0000003.pt")["model"]
    assert all(torch.isfinite(t).all() for t in first.values())
