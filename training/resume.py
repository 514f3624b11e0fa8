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

import torch
from omegaconf import OmegaConf

from inference.checkpoint import load_checkpoint, load_weights, resolve_checkpoint_path
from training.config import TrainConfig
from training.schedule import Schedule
from training.trainer import Progress, Trainer
from utils.checkpoint_files import BEST, checkpoint_folder, latest_step_checkpoint
from utils.errors import UserError

log = logging.getLogger("train")

# where training starts from, not how it trains: differs between the first session and a resumed one
NOT_SETTINGS = {"resume", "init_from"}
# what the schedule is planned from: any change re-plans it
SCHEDULE_SETTINGS = {"schedule", "warmup_steps", "lr_floor", "max_steps", "max_minutes", "reserve_minutes"}


def saved_train_settings(meta: dict) -> dict:
    """The train settings a checkpoint was written with ({} if it does not say)."""
    if "config" not in meta:
        return {}
    return OmegaConf.to_container(OmegaConf.create(meta["config"])).get("train", {})


def changed_settings(saved: dict, cfg: TrainConfig) -> dict[str, tuple]:
    """{name: (the checkpoint's value, this run's value)} for every train setting that differs."""
    ours = dataclasses.asdict(cfg)
    return {name: (saved[name], ours[name]) for name in ours
            if name in saved and name not in NOT_SETTINGS and _plain(saved[name]) != _plain(ours[name])}


def _plain(value):
    return list(value) if isinstance(value, (tuple, list)) else value  # YAML gives lists for tuples


def check_data_position(path: Path, epoch: int, position: int, saved: dict, saved_world_size: int,
                        cfg: TrainConfig, world_size: int) -> None:
    """Refuse, in one line, to continue mid-epoch where the saved position would name other
    batches: another number of processes (the position counts each rank's batches, and the
    batch list is shared out differently), or another max_tokens (other batches altogether)."""
    if position == 0:
        return  # at the start of an epoch every setting makes its own batches afresh
    where = f"{path} stopped {position} batches into epoch {epoch}"
    if saved_world_size != world_size:
        raise UserError(f"{where} with {saved_world_size} process(es), counted per process; resume it with "
                        f"{saved_world_size} (this run has {world_size}), or start a new run from its weights "
                        "with train.init_from")
    if "max_tokens" in saved and saved["max_tokens"] != cfg.max_tokens:
        raise UserError(f"{where} with batches of train.max_tokens={saved['max_tokens']}; resume it with the same "
                        f"value (this run has {cfg.max_tokens}), or start a new run from its weights with "
                        "train.init_from")


def start(trainer: Trainer, cfg: TrainConfig, run_dir: Path) -> None:
    """Where training starts from. The run folder's own newest checkpoint comes first (the
    same command continues an interrupted run, whatever else it says); else `train.resume`
    continues another run here; else `train.init_from` starts a new run from its weights."""
    own = latest_step_checkpoint(checkpoint_folder(run_dir))
    if own is not None:
        resume(trainer, own)
    elif cfg.resume:
        resume(trainer, resolve_checkpoint_path(cfg.resume, prefer=None))  # a run folder: its latest step
    elif cfg.init_from:
        init_from(trainer, resolve_checkpoint_path(cfg.init_from))  # a run folder: its best weights


def check_same_data(trainer: Trainer, checkpoint: dict, path: Path) -> None:
    """A checkpoint's weights mean something only with its languages and tokenizer."""
    meta, data = checkpoint.get("meta", {}), trainer.run.data
    theirs, ours = (meta.get("src_lang"), meta.get("tgt_lang")), (data.src_lang, data.tgt_lang)
    if theirs != ours:
        raise UserError(f"{path} translates {theirs[0]}->{theirs[1]}, but this run is {ours[0]}->{ours[1]}")
    tokenizer = checkpoint["tokenizer"]
    if (tokenizer["src"], tokenizer["tgt"]) != (trainer.data.tokenizer.src_model, trainer.data.tokenizer.tgt_model):
        raise UserError(f"{path} was trained with another tokenizer than this run's data.tokenizer settings "
                        "make (vocabulary size, type or training data differ)")


def resume(trainer: Trainer, path: Path) -> None:
    """Continue the run saved in `path` exactly where it stopped: weights, optimizer,
    schedule, data position, random state, best score and time spent."""
    checkpoint = load_checkpoint(path, map_location=trainer.device, for_training=True)
    if "train_state" not in checkpoint:
        raise UserError(f"{path} holds weights only (no training state) and cannot be resumed; "
                        "train.init_from starts a new run from its weights")
    check_same_data(trainer, checkpoint, path)
    if checkpoint["model_config"] != trainer.model.cfg.to_dict():
        raise UserError(f"{path} was trained with a different model config; resume with the same settings")
    state, saved = checkpoint["train_state"], saved_train_settings(checkpoint["meta"])
    progress = Progress(**state["progress"])
    check_data_position(path, progress.epoch, progress.position, saved, len(state["rng"]), trainer.cfg,
                        trainer.ddp.world_size)
    load_weights(trainer.model, checkpoint["model"], path)
    trainer.optimizer.load_state_dict(state["optimizer"])
    trainer.schedule.load_state_dict(state["scheduler"])
    trainer.progress = progress
    take_changed_settings(trainer, changed_settings(saved, trainer.cfg))
    if len(state["rng"]) == trainer.ddp.world_size:
        rng = state["rng"][trainer.ddp.rank]
        torch.set_rng_state(rng["torch"].cpu())
        if "cuda" in rng and trainer.device.type == "cuda":
            torch.cuda.set_rng_state(rng["cuda"].cpu(), trainer.device)
    else:  # another number of processes: the same data order, but new dropout masks
        torch.manual_seed(trainer.ddp.rank_seed(trainer.run.seed) + trainer.progress.step)
        log.warning("%s was written by %d process(es), this run has %d: dropout masks will differ from an "
                    "uninterrupted run", path, len(state["rng"]), trainer.ddp.world_size)
    best, own_best = path.parent / BEST, trainer.ckpt_dir / BEST
    if best.resolve() != own_best.resolve():  # continuing another folder's run here
        # its best weights come along if they are from this point of the run or before
        if best.is_file() and load_checkpoint(best)["meta"].get("step", math.inf) <= trainer.progress.step:
            if trainer.ddp.is_main:
                trainer.ckpt_dir.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(best, own_best)
        else:  # nothing to compare with: the next validation makes the best checkpoint
            trainer.progress.best_bleu = -1.0
    log.info("resumed from %s at step %d (epoch %d)", path, trainer.progress.step, trainer.progress.epoch)


def take_changed_settings(trainer: Trainer, changed: dict[str, tuple]) -> None:
    """This run's settings win over the resumed checkpoint's, each difference said in the log;
    changed limits or schedule settings re-plan the schedule (training/schedule.py)."""
    for name, (theirs, ours) in changed.items():
        log.info("train.%s was %s in the checkpoint; this run's %s is used", name, theirs, ours)
    for group in trainer.optimizer.param_groups:  # load_state_dict restored the checkpoint's
        group.update(betas=tuple(trainer.cfg.betas), eps=trainer.cfg.eps, weight_decay=trainer.cfg.weight_decay)
    if not changed.keys() & SCHEDULE_SETTINGS:
        return
    trainer.schedule = Schedule.from_config(trainer.cfg)  # a run bounded by steps: planned to its new end
    step = trainer.progress.step
    if (trainer.schedule.kind == "linear" and trainer.cfg.max_minutes is not None
            and step >= trainer.schedule.warmup_steps):
        per_step = max(trainer.progress.elapsed / max(step, 1), 1e-6)  # so far, validations and checkpoints included
        trainer.schedule.plan_whole(min(step + int((trainer.budget - trainer.progress.elapsed) / per_step),
                                     trainer.cfg.max_steps))
    if trainer.schedule.planned:
        log.info("schedule planned anew at step %d: the learning rate decays linearly to %g x peak at step %d "
                 "(now %.3g x peak)", step, trainer.schedule.floor, trainer.schedule.last_step,
                 trainer.schedule.factor(step + 1))


def init_from(trainer: Trainer, path: Path) -> None:
    """Start this new run from the weights in `path`; optimizer, schedule, data order,
    scores and time budget start afresh (fine-tuning, or a second run from a first)."""
    checkpoint = load_checkpoint(path, map_location=trainer.device)
    check_same_data(trainer, checkpoint, path)
    load_weights(trainer.model, checkpoint["model"], path)
    log.info("weights initialised from %s (step %s); everything else starts anew", path,
             checkpoint.get("meta", {}).get("step", "?"))
