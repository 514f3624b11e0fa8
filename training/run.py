"""A training run from a configuration: device, processes, data, model, then the Trainer.

This is where data and model meet: the tokenizer trained on the data decides the model's
vocabulary sizes and special ids.
"""

import dataclasses
import logging
import os
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import torch
from omegaconf import DictConfig
from tqdm.contrib.logging import logging_redirect_tqdm

from data import Tokenizer, prepare_data
from model import TransformerConfig
from training.config import FROM_TOKENIZER, RunConfig, to_run_config
from training.distributed import Distributed
from training.resume import start
from training.trainer import Trainer
from utils.device import choose_precision, pick_device, usable_cores
from utils.errors import UserError

log = logging.getLogger("train")


def model_config_for(model: TransformerConfig, tokenizer: Tokenizer) -> TransformerConfig:
    """The configured shape with the vocabulary sizes and special ids the tokenizer has.

    Separate source and target vocabularies never share an embedding, even of equal size: the
    same id means unrelated pieces on the two sides."""
    try:
        return dataclasses.replace(
            model,
            **{name: getattr(tokenizer, name) for name in FROM_TOKENIZER},
            # one embedding for both sides only where they share one vocabulary
            share_embeddings=model.share_embeddings and tokenizer.joint,
        )
    except ValueError as e:
        raise UserError(f"model does not fit the tokenizer: {e}") from None


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
    # rank 0 works alone while the others wait (validation, attention maps): never for longer
    # than the run may last, so that is what a wait may take, an hour at least
    ddp = Distributed(device, timeout=timedelta(minutes=max(60, run.train.max_minutes or 0)))
    try:
        torch.set_num_threads(run.train.threads or max(1, usable_cores() // ddp.world_size))
        # rank 0 builds the caches (tokenizer, tokenized splits); the others then read them
        if not ddp.is_main:
            ddp.barrier()
        data = prepare_data(run.data)
        if ddp.is_main:
            ddp.barrier()
            data.tokenizer.save(run_dir)
        model_cfg = model_config_for(run.model, data.tokenizer)
        if run.model.share_embeddings and not model_cfg.share_embeddings:
            log.info("separate source and target vocabularies: each side gets its own embedding")
        trainer = Trainer(run, model_cfg, run_dir, data, device, ddp, clock, started)
        log.info(
            "model: %.2fM parameters | device %s | %d threads | %d process(es) | %d training pairs",
            trainer.model.num_parameters() / 1e6,
            device,
            torch.get_num_threads(),
            ddp.world_size,
            trainer.batches.n_pairs,
        )
        start(trainer.state, run, data.tokenizer, run_dir, ddp)
        with logging_redirect_tqdm():
            trainer.fit()
            checksum = sum(p.detach().double().sum().item() for p in trainer.model.parameters())
            log.info(
                "rank %d/%d stopped at step %d, parameter checksum %.15e",
                ddp.rank,
                ddp.world_size,
                trainer.state.progress.step,
                checksum,
            )
            # the other ranks leave now rather than wait in a collective for the report, which
            # may take long (head importance, a large model's beam search on the test sets)
            return trainer.finish() if ddp.is_main else {}
    finally:
        ddp.close()
