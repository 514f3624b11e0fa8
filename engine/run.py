"""A training run from a configuration: device, processes, data, model, then the Trainer.

This is where data and model meet: the tokenizer trained on the data decides the model's
vocabulary sizes and special ids.
"""
import dataclasses
import logging
import os
import time
from pathlib import Path
from typing import Callable

import torch
from omegaconf import DictConfig
from tqdm.contrib.logging import logging_redirect_tqdm

from data import Tokenizer, UserError, prepare_data
from engine.checkpoint import latest_step_checkpoint, resolve_checkpoint_path
from engine.config import RunConfig, TrainConfig, to_run_config
from engine.device import choose_precision, pick_device
from engine.distributed import Distributed
from engine.trainer import Trainer
from model import TransformerConfig

log = logging.getLogger("train")


def model_config_for(model: TransformerConfig, tokenizer: Tokenizer) -> TransformerConfig:
    """The configured shape with the vocabulary sizes and special ids the tokenizer has."""
    try:
        return dataclasses.replace(model, src_vocab_size=tokenizer.src_vocab_size,
                                   tgt_vocab_size=tokenizer.tgt_vocab_size, pad_id=tokenizer.pad_id,
                                   bos_id=tokenizer.bos_id, eos_id=tokenizer.eos_id)
    except ValueError as e:
        raise UserError(f"model does not fit the tokenizer: {e}") from None


def find_resume_checkpoint(cfg: TrainConfig, run_dir: Path) -> Path | None:
    if cfg.resume:
        return resolve_checkpoint_path(cfg.resume, prefer=None)  # a run folder: its latest step
    return latest_step_checkpoint(run_dir / "checkpoints")


def train(cfg: DictConfig | RunConfig, run_dir: Path, clock: Callable[[], float] = time.monotonic) -> dict:
    """Train as configured, writing everything into `run_dir`; returns the results.

    `clock` measures the time budget (tests pass a fake one)."""
    started = clock()
    run = cfg if isinstance(cfg, RunConfig) else to_run_config(cfg)
    run_dir = Path(run_dir)
    device = pick_device(run.train.device, "train.device", int(os.environ.get("LOCAL_RANK", "0")))
    precision, why, warn = choose_precision(run.train.precision, device)
    (log.warning if warn else log.info)("precision: %s", why)
    run = dataclasses.replace(run, train=dataclasses.replace(run.train, precision=precision))
    ddp = Distributed(device)
    try:
        torch.set_num_threads(run.train.threads or max(1, (os.cpu_count() or 1) // ddp.world_size))
        # rank 0 builds the caches (tokenizer, tokenized splits); the others then read them
        if not ddp.is_main:
            ddp.barrier()
        data = prepare_data(run.data)
        if ddp.is_main:
            ddp.barrier()
            data.tokenizer.save(run_dir)
        trainer = Trainer(run, model_config_for(run.model, data.tokenizer), run_dir, data, device, ddp, clock)
        log.info("model: %.2fM parameters | device %s | %d threads | %d process(es) | %d training pairs",
                 trainer.model.num_parameters() / 1e6, device, torch.get_num_threads(), ddp.world_size,
                 len(trainer.train_set))
        resume_from = find_resume_checkpoint(run.train, run_dir)
        if resume_from is not None:
            trainer.resume(resume_from)
        with logging_redirect_tqdm():
            trainer.fit(started)
            checksum = sum(p.detach().double().sum().item() for p in trainer.model.parameters())
            log.info("rank %d/%d stopped at step %d, parameter checksum %.15e", ddp.rank, ddp.world_size,
                     trainer.progress.step, checksum)
            results = trainer.finish() if ddp.is_main else {}
        ddp.barrier()
        return results
    finally:
        ddp.close()
