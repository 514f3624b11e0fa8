"""Where a run starts from: its own checkpoint, another run's to continue, or another run's
weights; and what resuming may change, and what it must not.

A checkpoint holds the settings it was trained with (meta["config"]). A resumed run takes
this run's settings, saying in the log which differ; a raised limit extends the run (see
training/schedule.py). What the saved data position counts in (batches of one size, shared
out among a number of processes) must not change mid-epoch: the same position would then
name other batches, training some twice and skipping others.
"""

import dataclasses
import logging
import math
import shutil
from pathlib import Path

from data import Tokenizer
from data.tokenizer import LATER_FIELDS
from inference.checkpoint import load_checkpoint, load_weights, resolve_checkpoint_path, saved_settings
from training.config import RunConfig, TrainConfig
from training.distributed import Distributed
from training.schedule import Schedule
from training.state import TrainState
from utils.checkpoint_files import BEST, checkpoint_folder, latest_step_checkpoint
from utils.errors import UserError

log = logging.getLogger("train")

# where training starts from, not how it trains: differs between the first session and a resumed one
NOT_SETTINGS = {"resume", "init_from"}
# what the schedule is planned from: any change re-plans it
SCHEDULE_SETTINGS = {"schedule", "warmup_steps", "lr_floor", "max_steps", "max_minutes", "reserve_minutes"}


def changed_settings(saved: dict, cfg: TrainConfig) -> dict[str, tuple]:
    """{name: (the checkpoint's value, this run's value)} for every train setting that differs."""
    ours = dataclasses.asdict(cfg)
    return {
        name: (saved[name], ours[name])
        for name in ours
        if name in saved and name not in NOT_SETTINGS and _plain(saved[name]) != _plain(ours[name])
    }


def _plain(value):
    return list(value) if isinstance(value, (tuple, list)) else value  # YAML gives lists for tuples


def check_data_position(
    path: Path, epoch: int, position: int, saved: dict, saved_world_size: int, cfg: TrainConfig, world_size: int
) -> None:
    """Refuse, in one line, to continue mid-epoch where the saved position would name other
    batches: another number of processes (the position counts each rank's batches, and the
    batch list is shared out differently), or another max_tokens (other batches altogether)."""
    if position == 0:
        return  # at the start of an epoch every setting makes its own batches afresh
    where = f"{path} stopped {position} batches into epoch {epoch}"
    if saved_world_size != world_size:
        raise UserError(
            f"{where} with {saved_world_size} process(es), counted per process; resume it with "
            f"{saved_world_size} (this run has {world_size}), or start a new run from its weights "
            "with train.init_from"
        )
    if "max_tokens" in saved and saved["max_tokens"] != cfg.max_tokens:
        raise UserError(
            f"{where} with batches of train.max_tokens={saved['max_tokens']}; resume it with the same "
            f"value (this run has {cfg.max_tokens}), or start a new run from its weights with "
            "train.init_from"
        )


def starting_checkpoint(run: RunConfig, run_dir: Path) -> tuple[Path, bool] | None:
    """Where training starts from, and whether it continues that run (else it only takes its
    weights). The run folder's own newest checkpoint comes first (the same command continues
    an interrupted run, whatever else it says); else `train.resume` continues another run here
    (a run folder: its latest step); else `train.init_from` starts a new run from its weights (a
    run folder: its best)."""
    own = latest_step_checkpoint(checkpoint_folder(run_dir))
    if own is not None:
        return own, True
    if run.train.resume:
        return resolve_checkpoint_path(run.train.resume, prefer=None), True
    if run.train.init_from:
        return resolve_checkpoint_path(run.train.init_from), False
    return None


def start(state: TrainState, run: RunConfig, tokenizer: Tokenizer, run_dir: Path, ddp: Distributed) -> None:
    """Training's start: from scratch, or from the starting checkpoint."""
    if (found := starting_checkpoint(run, run_dir)) is not None:
        path, continues = found
        if continues:
            resume(state, path, run, tokenizer, run_dir, ddp)
        else:
            init_from(state, path, run, tokenizer)


def check_same_data(checkpoint: dict, path: Path, run: RunConfig, tokenizer: Tokenizer) -> None:
    """A checkpoint's weights mean something only with its languages and tokenizer."""
    meta, data = checkpoint.get("meta", {}), run.data
    theirs, ours = (meta.get("src_lang"), meta.get("tgt_lang")), (data.src_lang, data.tgt_lang)
    if theirs != ours:
        raise UserError(f"{path} translates {theirs[0]}->{theirs[1]}, but this run is {ours[0]}->{ours[1]}")
    saved = checkpoint["tokenizer"]
    if (saved["src"], saved["tgt"]) != (tokenizer.src_model, tokenizer.tgt_model):
        # a setting added since (LATER_FIELDS) is missing from an older run's config: it had the value changing nothing
        theirs = {**LATER_FIELDS, **saved_settings(meta, "data").get("tokenizer", {})}
        differ = [
            f"data.tokenizer.{k}={str(theirs[k]).lower() if isinstance(theirs[k], bool) else theirs[k]}"
            for k, v in dataclasses.asdict(data.tokenizer).items()
            if theirs.get(k, v) != v
        ]
        raise UserError(
            f"{path} was trained with another tokenizer than this run's data.tokenizer settings make "
            + (
                f"(it was trained with {' '.join(differ)}: give that to continue it)"
                if differ
                else "(its training data differ)"
            )
        )


def say_changed_shares(checkpoint: dict, path: Path, run: RunConfig) -> None:
    """Log each data.augment share that differs from the checkpoint's (a resumed run takes this
    run's settings: one given, or a default changed since): from here it trains on other pairs. A
    share the checkpoint does not name was added since it was saved: it trained at its default."""
    saved = saved_settings(checkpoint.get("meta", {}), "data").get("augment", {})
    added_since = {f.name: f.default for f in dataclasses.fields(run.data.augment) if f.default is not None}
    saved = {**added_since, **saved}
    for name, value in dataclasses.asdict(run.data.augment).items():
        if name in saved and saved[name] != value:
            log.warning(
                "data.augment.%s is %s in this run, %s in %s: the pairs vary as this run says from here "
                "(data.augment.%s=%s continues exactly)",
                name,
                value,
                saved[name],
                path,
                name,
                saved[name],
            )


def resume(
    state: TrainState, path: Path, run: RunConfig, tokenizer: Tokenizer, run_dir: Path, ddp: Distributed
) -> None:
    """Continue the run saved in `path` exactly where it stopped: weights, optimizer,
    schedule, data position, random state, best score and time spent."""
    checkpoint = load_checkpoint(path, map_location=ddp.device, for_training=True)
    if "train_state" not in checkpoint:
        raise UserError(
            f"{path} holds weights only (no training state) and cannot be resumed; "
            "train.init_from starts a new run from its weights"
        )
    check_same_data(checkpoint, path, run, tokenizer)
    say_changed_shares(checkpoint, path, run)
    if checkpoint["model_config"] != state.model.cfg.to_dict():
        raise UserError(f"{path} was trained with a different model config; resume with the same settings")
    saved_state, saved = checkpoint["train_state"], saved_settings(checkpoint["meta"], "train")
    position = saved_state["progress"]
    check_data_position(
        path, position["epoch"], position["position"], saved, len(saved_state["rng"]), run.train, ddp.world_size
    )
    state.restore(checkpoint, path)
    take_changed_settings(state, run.train, changed_settings(saved, run.train))
    progress = state.progress
    best, own_best = path.parent / BEST, checkpoint_folder(run_dir) / BEST
    if best.resolve() != own_best.resolve():  # continuing another folder's run here
        # its best weights come along if they are from this point of the run or before
        if best.is_file() and load_checkpoint(best)["meta"].get("step", math.inf) <= progress.step:
            if ddp.is_main:
                own_best.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(best, own_best)
        else:  # nothing to compare with: the next validation makes the best checkpoint
            progress.best_bleu = -1.0
    log.info("resumed from %s at step %d (epoch %d)", path, progress.step, progress.epoch)


def take_changed_settings(state: TrainState, cfg: TrainConfig, changed: dict[str, tuple]) -> None:
    """This run's settings win over the resumed checkpoint's, each difference said in the log;
    changed limits or schedule settings re-plan the schedule (training/schedule.py)."""
    for name, (theirs, ours) in changed.items():
        log.info("train.%s was %s in the checkpoint; this run's %s is used", name, theirs, ours)
    for group in state.optimizer.param_groups:  # load_state_dict restored the checkpoint's
        group.update(betas=tuple(cfg.betas), eps=cfg.eps, weight_decay=cfg.weight_decay)
    if not changed.keys() & SCHEDULE_SETTINGS:
        return
    schedule = state.schedule = Schedule.from_config(cfg)  # a run bounded by steps: planned to its new end
    step, elapsed = state.progress.step, state.progress.elapsed
    if schedule.kind == "linear" and cfg.max_minutes is not None and step >= schedule.warmup_steps:
        per_step = max(elapsed / max(step, 1), 1e-6)  # so far, validations and checkpoints included
        schedule.plan_whole(min(step + int((cfg.budget_seconds - elapsed) / per_step), cfg.max_steps))
    if schedule.planned:
        log.info(
            "schedule planned anew at step %d: the learning rate decays linearly to %g x peak at step %d "
            "(now %.3g x peak)",
            step,
            schedule.floor,
            schedule.last_step,
            schedule.factor(step + 1),
        )


def init_from(state: TrainState, path: Path, run: RunConfig, tokenizer: Tokenizer) -> None:
    """Start this new run from the weights in `path`; optimizer, schedule, data order,
    scores and time budget start afresh (fine-tuning, or a second run from a first)."""
    checkpoint = load_checkpoint(path, map_location=next(state.model.parameters()).device)
    check_same_data(checkpoint, path, run, tokenizer)
    load_weights(state.model, checkpoint["model"], path)
    log.info(
        "weights initialised from %s (step %s); everything else starts anew",
        path,
        checkpoint.get("meta", {}).get("step", "?"),
    )
