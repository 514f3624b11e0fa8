"""What resuming a run may change, and what it must not.

A checkpoint holds the settings it was trained with (meta["config"]). A resumed run takes
this run's settings, saying in the log which differ; a raised limit extends the run (see
training/schedule.py). What the saved data position counts in (batches of one size, shared
out among a number of processes) must not change mid-epoch: the same position would then
name other batches, training some twice and skipping others.
"""
import dataclasses
from pathlib import Path

from omegaconf import OmegaConf

from training.config import TrainConfig
from utils.errors import UserError

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
