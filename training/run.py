"""A training run from a configuration: device, processes, data, model, then the Trainer.

This is where data and model meet: the tokenizer trained on the data decides the model's
vocabulary sizes and special ids.
"""

import dataclasses
import logging
import os
import shlex
import time
from collections.abc import Callable
from datetime import timedelta
from itertools import islice
from pathlib import Path

import torch
from omegaconf import DictConfig
from tqdm.contrib.logging import logging_redirect_tqdm

from data import PreparedData, Tokenizer, prepare_data, token_batches
from inference.checkpoint import load_checkpoint
from model import TransformerConfig
from training.config import FROM_TOKENIZER, MODEL_DEFAULTS, RunConfig, to_run_config
from training.distributed import Distributed
from training.resume import start, starting_checkpoint
from training.shape_choice import TIMED_STEPS, WARMUP_STEPS, ShapeChoice, choose_shape, probe_seconds_per_token
from training.trainer import Trainer
from utils.device import choose_precision, pick_device, usable_cores
from utils.errors import UserError

log = logging.getLogger("train")

LATEST = "latest"  # runs/latest: the newest run folder of runs/
EXAMPLES = {  # a sentence to translate in each language Multi30k has, for the commands a run ends with
    "de": "Ein Hund rennt durch den Schnee.",
    "en": "A dog runs through the snow.",
    "fr": "Un chien court dans la neige.",
    "cs": "Pes běží sněhem.",
}


def mark_latest(run_dir: Path) -> None:
    """Point runs/latest at `run_dir` where it lies in a folder named runs (the default,
    runs/DATE_TIME), so that `-c runs/latest` and `--logdir runs/latest` name the newest run. The
    link is replaced in one step: a reader never finds it missing."""
    if run_dir.parent.name != "runs" or run_dir.name == LATEST:
        return
    link, temporary = run_dir.parent / LATEST, run_dir.parent / f".{LATEST}.{os.getpid()}"
    try:
        temporary.unlink(missing_ok=True)
        temporary.symlink_to(run_dir.name, target_is_directory=True)  # relative: the runs folder may move
        os.replace(temporary, link)
    except OSError as e:  # no symlinks here (some Windows setups), or a folder of that name: the run's own name works
        log.warning("%s not pointed at this run: %s", link, e)


def next_commands(run_dir: Path, src_lang: str, tgt_lang: str) -> list[str]:
    """The commands to translate with a finished run, watch it in TensorBoard and export it,
    its folder filled in (README: "Translating", "Watching attention learn", "Exporting")."""
    venv = Path(".venv/bin")
    python, tensorboard = ((f"{venv}/{name}" if (venv / name).exists() else name) for name in ("python", "tensorboard"))
    folder = shlex.quote(str(run_dir))
    example = f" {shlex.quote(EXAMPLES[src_lang])}" if src_lang in EXAMPLES else ""  # else: typed at a prompt
    return [
        f"{python} translate.py -c {folder}{example}",
        f"{tensorboard} --logdir {folder}",
        f"{python} export.py -c {folder} exports/{src_lang}-{tgt_lang}",
    ]


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


def model_shape(
    run: RunConfig, data: PreparedData, run_dir: Path, device: torch.device, ddp: Distributed
) -> TransformerConfig:
    """The shape this run trains, as `model=NAME` gives it (the tokenizer's sizes still to come):
    `run.model`, or with model=auto the table's row this machine's measured speed affords, or
    the shape of the checkpoint the run starts from. Said in the log."""
    if not run.shapes:
        return run.model
    if (found := starting_checkpoint(run, run_dir)) is not None:  # trained with it, whatever is measured now
        saved = TransformerConfig(**load_checkpoint(found[0])["model_config"])
        saved = dataclasses.replace(saved, **{name: MODEL_DEFAULTS[name] for name in FROM_TOKENIZER})
        name = next((name for name, row in run.shapes.items() if row.model == saved), "a shape not in the table")
        choice = ShapeChoice(name, saved, f"the shape of {found[0]}")
    else:
        names, index = list(run.shapes), -1
        if ddp.is_main:  # the others wait (in the broadcast): the probe times this rank's share of the cores
            batches = token_batches(
                data.tokens["train"], run.model.max_len, run.train.max_tokens, quiet=True, shuffle=True, seed=run.seed
            )
            epoch = batches.batch_sampler
            tokens_per_step = run.train.grad_accum * float(epoch.tgt_lengths.sum()) / len(epoch)  # an epoch's mean
            probe_batches = list(islice(batches, WARMUP_STEPS + TIMED_STEPS))
            choice = choose_shape(
                run.shapes,
                lambda shape: (
                    tokens_per_step
                    * probe_seconds_per_token(model_config_for(shape, data.tokenizer), probe_batches, run.train, device)
                ),
                run.train,
            )
            index = names.index(choice.name)
        index = round(ddp.broadcast(index))  # every rank trains rank 0's choice
        if not ddp.is_main:
            choice = ShapeChoice(names[index], run.shapes[names[index]].model, "rank 0's choice")
    shape = choice.model
    log.info(
        "shape: %s (d_model %d, d_ff %d, %d+%d layers, %d heads, dropout %g), model=auto: %s",
        choice.name,
        shape.d_model,
        shape.d_ff,
        shape.n_encoder_layers,
        shape.n_decoder_layers,
        shape.n_heads,
        shape.dropout,
        choice.why,
    )
    return shape


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
    if ddp.is_main:
        mark_latest(run_dir)
    try:
        torch.set_num_threads(run.train.threads or max(1, usable_cores() // ddp.world_size))
        # rank 0 builds the caches (tokenizer, tokenized splits); the others then read them
        if not ddp.is_main:
            ddp.barrier()
        data = prepare_data(run.data)
        if ddp.is_main:
            ddp.barrier()
            data.tokenizer.save(run_dir)
        # the shape trained is the run's model setting from here on: hparams, checkpoints' config
        run = dataclasses.replace(run, model=model_shape(run, data, run_dir, device, ddp))
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
            if not ddp.is_main:
                return {}
            results = trainer.finish()
            commands = next_commands(run_dir, run.data.src_lang, run.data.tgt_lang)
            log.info("what next, with this run:\n%s", "\n".join(f"  {command}" for command in commands))
            return results
    finally:
        ddp.close()
