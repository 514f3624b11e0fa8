"""Resuming a run (training/resume.py): exactly after SIGKILL, after Ctrl-C or SIGTERM with the
command printed, into a new folder, with subword sampling; init_from; what is refused."""

import shlex
import signal
import subprocess
from pathlib import Path

import pytest
import torch

from helpers import TOY_CORPUS, TOY_DATA, assert_same_training, run_script, run_train, scalars, start_script, stop_when
from helpers.commands import command
from inference.checkpoint import load_checkpoint
from train import continue_command

# made once, its module-scoped fixtures: its tests stay on one worker (`make test`: xdist, --dist loadgroup)
pytestmark = pytest.mark.xdist_group("test_resume")

QUIET = ["train.eval_every=1000", "train.attention_every=0", "train.threads=1", "train.head_importance=false"]
# the recipe's augmentation off, as experiment=plain has it (subword sampling takes its place)
PLAIN = [
    "data.augment.no_final_punct=0",
    "data.augment.fragment=0",
    "data.augment.numbers=0",
    "data.augment.typos=0",
    "data.augment.fold=0",
    "data.tokenizer.fold_source_case=false",
    "data.tokenizer.spell_source_umlauts=false",
    "data.tokenizer.split_digits=false",
]


def test_resume_after_sigkill_matches_uninterrupted_run(tmp_path):
    # bounded by steps, so the linear decay is planned at the start and the same in both runs
    common = [
        "experiment=ci",
        *TOY_DATA,
        "train.max_steps=60",
        "train.checkpoint_every=20",
        "train.keep_last=5",
        "train.max_minutes=null",
        *QUIET,
    ]
    straight, killed = tmp_path / "straight", tmp_path / "killed"
    run_train(straight, *common)

    process = start_script(
        command("train.py", f"hydra.run.dir={killed}", *common), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    stop_when(process, (killed / "checkpoints" / "step_0000020.pt").exists, "its first checkpoint")
    assert not (killed / "checkpoints" / "step_0000060.pt").exists(), "killed too late to test resuming"

    run_train(killed, *common, fresh=True)  # the same command in the same folder, a new interpreter
    assert "resumed from" in (killed / "train.log").read_text()
    assert_same_training(straight / "checkpoints" / "step_0000060.pt", killed / "checkpoints" / "step_0000060.pt")


@pytest.mark.parametrize("signum, exit_code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_saves_a_checkpoint_and_the_same_command_continues(tmp_path, signum, exit_code):
    common = [
        "experiment=ci",
        *TOY_DATA,
        "train.max_steps=80",
        "train.eval_every=10",
        "train.checkpoint_every=1000",
        "train.attention_every=0",
        "train.head_importance=false",
        "train.threads=1",
        "train.max_minutes=null",
    ]
    process = start_script(
        command("train.py", f"hydra.run.dir={tmp_path}", *common),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
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


def test_an_interrupted_multirun_job_prints_the_command_that_continues_that_job(tmp_path):
    sweep = [
        "experiment=ci",
        *TOY_DATA,
        "train.max_steps=60",
        "train.lr=1e-3,2e-3",
        "train.eval_every=10",
        "train.attention_every=0",
        "train.head_importance=false",
        "train.threads=1",
    ]
    process = start_script(
        command("train.py", "-m", *sweep, f"hydra.sweep.dir={tmp_path}"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    log = tmp_path / "0" / "train.log"
    stop_when(
        process, lambda: log.exists() and "step 20 |" in log.read_text(), "the first job's step 20", signal.SIGINT
    )
    _, stderr = process.communicate(timeout=120)
    continued = stderr.strip().splitlines()[-1].split("continue with: ")[1]
    # the first job's own values, no sweep and no -m: the command continues this job alone
    assert continued == (
        f"python train.py experiment=ci data.dir={TOY_CORPUS} data.tokenizer.vocab_size=340 "
        f"train.max_steps=60 train.lr=0.001 train.eval_every=10 "
        f"train.attention_every=0 train.head_importance=False train.threads=1 "  # as Hydra writes them
        f"hydra.run.dir={tmp_path / '0'}"
    )
    run_script(*shlex.split(continued)[1:])
    assert "resumed from" in log.read_text() and (tmp_path / "0" / "results.json").is_file()
    assert not (tmp_path / "1").exists()


# 40 steps with checkpoints at 20 and 40, each validated
FIRST_RUN = (
    "experiment=ci",
    *TOY_DATA,
    "train.max_steps=40",
    "train.eval_every=20",
    "train.checkpoint_every=20",
    "train.max_minutes=null",
    "train.attention_every=0",
    "train.head_importance=false",
    "train.threads=1",
)


@pytest.fixture(scope="module")
def first_run(tmp_path_factory):
    """40 steps with checkpoints at 20 and 40, each validated."""
    run_dir = tmp_path_factory.mktemp("first")
    run_train(run_dir, *FIRST_RUN)
    return run_dir


def test_resume_into_a_new_folder_continues_the_run_exactly(first_run, tmp_path):
    run_train(
        tmp_path,
        *FIRST_RUN,
        f"train.resume={first_run / 'checkpoints' / 'step_0000020.pt'}",
        fresh=True,  # a new interpreter, as a user's next command: the first run was forked
    )
    assert_same_training(first_run / "checkpoints" / "step_0000040.pt", tmp_path / "checkpoints" / "step_0000040.pt")
    # the best checkpoint came along, so the run can finish even if nothing new beats it
    assert (tmp_path / "results.json").is_file() and (tmp_path / "checkpoints" / "best.pt").is_file()
    assert "data.augment" not in (tmp_path / "train.log").read_text()  # the same shares: nothing to say


def test_a_run_resumed_with_other_shares_says_so_and_how_to_continue_exactly(first_run, tmp_path):
    """A resumed run takes this run's data.augment shares (a default changed since, or one given):
    the log says which differ from the checkpoint's, and the setting that continues exactly."""
    step_20 = first_run / "checkpoints" / "step_0000020.pt"
    run_train(tmp_path, *FIRST_RUN, "data.augment.typos=0.3", f"train.resume={step_20}")
    log = (tmp_path / "train.log").read_text()
    assert f"data.augment.typos is 0.3 in this run, 0.05 in {step_20}" in log
    assert "(data.augment.typos=0.05 continues exactly)" in log and "data.augment.fold" not in log


def test_a_share_added_since_the_checkpoint_was_saved_counts_at_its_default(caplog):
    """A checkpoint saved before a share existed trained without it: resuming with the share on
    says so, resuming at its default says nothing."""
    import logging

    from omegaconf import OmegaConf

    from training.config import compose_config, to_run_config
    from training.resume import say_changed_shares

    def checkpoint_without(name: str) -> dict:
        settings = OmegaConf.to_container(OmegaConf.structured(to_run_config(compose_config("experiment=ci"))))
        del settings["data"]["augment"][name]
        return {"meta": {"config": OmegaConf.to_yaml(settings)}}

    older = checkpoint_without("copy_inside")
    with caplog.at_level(logging.WARNING, logger="training.resume"):
        say_changed_shares(older, Path("old.pt"), to_run_config(compose_config("experiment=ci")))
        assert caplog.text == ""
        say_changed_shares(
            older, Path("old.pt"), to_run_config(compose_config("experiment=ci", "data.augment.copy_inside=0.05"))
        )
    assert "data.augment.copy_inside is 0.05 in this run, 0.0 in old.pt" in caplog.text


def straight_and_resumed(tmp_path, common: list[str]) -> tuple:
    """Train `common` (40 steps, a checkpoint at 20) straight through, and again resumed from its
    step 20 in another folder: both step-40 checkpoints."""
    run_train(tmp_path / "straight", *common)
    run_train(  # a new interpreter (its own hash seed, as a user's next command has), the straight run forked
        tmp_path / "resumed",
        *common,
        f"train.resume={tmp_path / 'straight' / 'checkpoints' / 'step_0000020.pt'}",
        fresh=True,
    )
    return tuple(tmp_path / run / "checkpoints" / "step_0000040.pt" for run in ("straight", "resumed"))


@pytest.mark.parametrize(
    "each_epoch",
    [
        ["data.subword_sampling=0.5", *PLAIN],
        [
            "data.tokenizer.fold_source_case=false",  # the case changes need a source read as it is
            "data.tokenizer.spell_source_umlauts=false",
            "data.augment.upper=0.2",
            "data.augment.lower=0.2",
            "data.augment.no_final_punct=0.3",
            "data.augment.merge=0.2",
            "data.augment.fragment=0.3",
        ],
    ],
    ids=["subword sampling", "augmentation"],
)
def test_resume_with_pairs_made_each_epoch_sees_what_the_uninterrupted_run_did(tmp_path, each_epoch):
    # 300 pairs are ~10 batches an epoch: 40 steps cross epochs, each in new segmentations or variations
    common = [
        "experiment=ci",
        *TOY_DATA,
        "data.max_train_examples=300",
        *each_epoch,
        "train.max_steps=40",
        "train.checkpoint_every=20",
        "train.keep_last=5",
        "train.max_minutes=null",
        *QUIET,
    ]
    assert_same_training(*straight_and_resumed(tmp_path, common))
    assert (
        load_checkpoint(tmp_path / "resumed" / "checkpoints" / "step_0000040.pt")["train_state"]["progress"]["epoch"]
        >= 2
    )


def test_resume_before_the_switch_to_one_direction_switches_where_the_uninterrupted_run_did(tmp_path):
    common = [
        "experiment=ci",
        *TOY_DATA,
        "train.bidirectional=0.75",  # of 40 steps: both ways until step 30, after the checkpoint resumed
        "train.max_steps=40",
        "train.checkpoint_every=20",
        "train.keep_last=5",
        "train.max_minutes=null",
        *QUIET,
    ]
    assert_same_training(*straight_and_resumed(tmp_path, common))
    for run in ("straight", "resumed"):
        assert (
            "step 30: both directions trained (train.bidirectional=0.75 of 40 steps)"
            in (tmp_path / run / "train.log").read_text()
        )


def test_resume_continues_the_moving_average_and_best_holds_it(tmp_path):
    common = [
        "experiment=ci",
        *TOY_DATA,
        "train.ema_decay=0.9",
        "train.max_steps=40",
        "train.checkpoint_every=20",
        "train.eval_every=20",
        "train.keep_last=5",
        "train.max_minutes=null",
        "train.attention_every=0",
        "train.threads=1",
    ]
    assert_same_training(*straight_and_resumed(tmp_path, common))  # the moving average included
    # each validation scores the average and, beside it, the weights themselves
    assert (tmp_path / "straight" / "train.log").read_text().count("(moving average; the weights themselves ") >= 2
    # best.pt holds the weights validated: the average of its step, not the weights themselves
    best = load_checkpoint(tmp_path / "straight" / "checkpoints" / "best.pt")
    step = load_checkpoint(tmp_path / "straight" / "checkpoints" / f"step_{best['meta']['step']:07d}.pt")
    average = {name.removeprefix("module."): t for name, t in step["train_state"]["ema"].items()}
    assert all(torch.equal(tensor, average[name]) for name, tensor in best["model"].items())
    assert not all(torch.equal(tensor, step["model"][name]) for name, tensor in best["model"].items())


def test_init_from_starts_a_new_run_from_the_weights(first_run, tmp_path):
    run_train(
        tmp_path,
        "experiment=ci",
        *TOY_DATA,
        "train.max_steps=10",
        "train.eval_every=10",
        "train.max_minutes=null",
        "train.attention_every=0",
        "train.head_importance=false",
        "train.threads=1",
        f"train.init_from={first_run}",
    )
    log = (tmp_path / "train.log").read_text()
    assert "weights initialised from" in log and "resumed from" not in log
    state = load_checkpoint(tmp_path / "checkpoints" / "step_0000010.pt")["train_state"]
    assert state["progress"]["step"] == 10 and state["progress"]["epoch"] == 0  # data order from the start
    first_loss = {e.step: e.value for e in scalars(first_run).Scalars("val/loss")}
    new_loss = {e.step: e.value for e in scalars(tmp_path).Scalars("val/loss")}
    assert new_loss[10] < first_loss[20]  # it started from trained weights, not from scratch


@pytest.mark.parametrize(
    "overrides, message",
    [
        (["data.src_lang=en", "data.tgt_lang=de"], "translates de->en, but this run is en->de"),
        (
            ["data.tokenizer.vocab_size=320"],
            "another tokenizer than this run's data.tokenizer settings make "
            "(it was trained with data.tokenizer.vocab_size=340: give that to continue it)",
        ),
        (["data.tokenizer.fold_source_case=false"], "(it was trained with data.tokenizer.fold_source_case=true: give"),
    ],
)
def test_resume_refuses_another_language_pair_or_tokenizer(first_run, tmp_path, overrides, message):
    result = run_train(tmp_path, "experiment=ci", *TOY_DATA, *overrides, f"train.resume={first_run}", check=False)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_resume_mid_epoch_with_other_batches_is_refused(first_run, tmp_path):
    """Step 20 of the first run is mid-epoch: with another max_tokens the same position would
    name other batches (another number of processes: tests/test_distributed.py)."""
    result = run_train(
        tmp_path,
        "experiment=ci",
        *TOY_DATA,
        "train.max_tokens=2048",
        f"train.resume={first_run / 'checkpoints' / 'step_0000020.pt'}",
        check=False,
    )
    assert result.returncode == 1 and "Traceback" not in result.stderr
    progress = load_checkpoint(first_run / "checkpoints" / "step_0000020.pt")["train_state"]["progress"]
    assert progress["position"] > 0, "step 20 is not mid-epoch: nothing to test"
    stopped = f"stopped {progress['position']} batches into epoch {progress['epoch']}"
    assert f"{stopped} with batches of train.max_tokens=1024" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


@pytest.mark.parametrize(
    "overrides, has_checkpoint, expected",
    [
        (["experiment=ci", "train.resume=runs/a"], False, "python train.py experiment=ci train.resume=runs/a"),
        (["experiment=ci", "train.resume=runs/a"], True, "python train.py experiment=ci"),
        (["train.init_from=runs/a"], False, "python train.py train.init_from=runs/a"),
        (
            ["train.attention_sentences=['Ein Hund.']"],
            True,
            "python train.py 'train.attention_sentences=['\"'\"'Ein Hund.'\"'\"']'",
        ),
    ],
)
def test_the_continue_command(tmp_path, overrides, has_checkpoint, expected):
    """From Hydra's record of the job's overrides (a multirun job's own values, no -m); resume
    and init_from kept until the folder has a checkpoint of its own; quoted for the shell."""
    if has_checkpoint:
        (tmp_path / "checkpoints").mkdir()
        (tmp_path / "checkpoints" / "step_0000010.pt").write_bytes(b"")
    assert continue_command(overrides, tmp_path) == f"{expected} hydra.run.dir={tmp_path}"
