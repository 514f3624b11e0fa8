"""The training loop: steps, validation, attention maps, checkpoints, the final test.

`Trainer` holds a run's moving parts; `fit` trains until a limit is reached and `finish`
evaluates the best checkpoint on the test sets. engine/run.py builds it from a config.
"""
import dataclasses
import json
import logging
import math
import sys
import time
from typing import Callable
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Iterator

import torch
from omegaconf import OmegaConf
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader
from torch.utils.tensorboard import SummaryWriter

from data import Batch, PreparedData, TokenBucketSampler, UserError, collate
from engine.checkpoint import (atomic_save, average_checkpoints, latest_step_checkpoint, load_checkpoint,
                               load_weights, make_checkpoint, step_checkpoints)
from engine.config import RunConfig
from engine.distributed import Distributed
from engine.evaluate import score_translations, validation_loss
from engine.progress_bar import ProgressBar
from engine.schedule import Schedule
from engine.step import label_smoothed_loss, train_step
from engine.translator import Translator
from model import Transformer, TransformerConfig
from viz.attention import collect_attention, log_to_tensorboard

log = logging.getLogger("train")


@dataclass
class Progress:
    """Where training stands; saved in checkpoints so that a resumed run continues exactly."""

    step: int = 0  # optimizer steps taken
    epoch: int = 0  # epoch of the next batch
    position: int = 0  # batches of that epoch already consumed
    best_bleu: float = -1.0
    elapsed: float = 0.0  # seconds spent in earlier sessions of this run


def micro_batches(loader: DataLoader, sampler: TokenBucketSampler, progress: Progress, max_epochs: int
                  ) -> Iterator[tuple[int, int, Batch]]:
    """Batches across epochs from where `progress` stands: (epoch, position after it, batch)."""
    epoch, position = progress.epoch, progress.position
    while epoch < max_epochs:
        sampler.set_epoch(epoch, start=position)
        for batch in loader:
            position += 1
            yield epoch, position, batch
        epoch, position = epoch + 1, 0


def flat_hparams(run: RunConfig) -> dict:
    """Scalar settings for TensorBoard's hparams view."""
    out = {}
    for group in ("model", "data", "train"):
        for key, value in dataclasses.asdict(getattr(run, group)).items():
            if isinstance(value, (int, float, str, bool)):
                out[f"{group}.{key}"] = value
    out["data.vocab_size"] = run.data.tokenizer.vocab_size
    return out


def peak_rss_mb() -> int | None:
    """Peak resident memory of this process so far; None where the OS does not say (Windows)."""
    try:
        import resource
    except ImportError:
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(peak / (1024 * 1024 if sys.platform == "darwin" else 1024))  # bytes on macOS, KiB on Linux


def fitting(dataset, max_len: int):
    """Pairs the model can take whole (source, and target plus bos/eos, within max_len)."""
    keep = [i for i, (s, t) in enumerate(zip(dataset["src_ids"], dataset["tgt_ids"]))
            if 0 < len(s) <= max_len and 0 < len(t) + 1 <= max_len]
    if len(keep) < len(dataset):
        log.info("skipping %d pairs longer than %d pieces (or empty)", len(dataset) - len(keep), max_len)
    return dataset.select(keep)


class Trainer:
    """Holds a run's moving parts; `fit` trains, `finish` evaluates on the test sets.

    `clock` gives seconds for the time budget and the schedule's plan (tests pass a fake one).
    """

    def __init__(self, run: RunConfig, model_cfg: TransformerConfig, run_dir: Path, data: PreparedData,
                 device: torch.device, ddp: Distributed, clock: Callable[[], float] = time.monotonic) -> None:
        self.run, self.cfg, self.run_dir = run, run.train, run_dir
        self.data, self.device, self.ddp, self.clock = data, device, ddp, clock
        self.ckpt_dir = run_dir / "checkpoints"
        torch.manual_seed(run.seed)
        self.model = Transformer(model_cfg).to(device)
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=self.cfg.lr, betas=tuple(self.cfg.betas),
                                           eps=self.cfg.eps, weight_decay=self.cfg.weight_decay)
        self.schedule = Schedule.from_config(self.cfg)
        self.criterion = label_smoothed_loss(model_cfg.pad_id, self.cfg.label_smoothing)
        self.progress = Progress()
        self.train_model = (DistributedDataParallel(self.model, device_ids=[device] if device.type == "cuda" else None)
                            if ddp.world_size > 1 else self.model)

        self.train_set = fitting(data.tokens["train"], model_cfg.max_len)
        self.sampler = TokenBucketSampler([len(x) for x in self.train_set["src_ids"]],
                                          [len(x) for x in self.train_set["tgt_ids"]], self.cfg.max_tokens,
                                          shuffle=True, seed=run.seed, rank=ddp.rank, world_size=ddp.world_size)
        # Its own generator: each iter(DataLoader) draws a seed, and drawing it from the global
        # RNG would shift every dropout mask of a resumed run against an uninterrupted one.
        self.loader = DataLoader(self.train_set, batch_sampler=self.sampler, collate_fn=collate,
                                 generator=torch.Generator())
        val = fitting(data.tokens["val"], model_cfg.max_len)
        self.val_loader = DataLoader(val, collate_fn=collate, generator=torch.Generator(), batch_sampler=TokenBucketSampler(
            [len(x) for x in val["src_ids"]], [len(x) for x in val["tgt_ids"]], self.cfg.max_tokens, shuffle=False))
        self.writer = SummaryWriter(log_dir=str(run_dir)) if ddp.is_main else None
        n = min(self.cfg.attention_probes, len(data.text["val"]))
        self.probes = ([(src, ref) for src, ref in zip(data.text["val"]["src"][:n], data.text["val"]["tgt"][:n])]
                       + [(sentence, None) for sentence in self.cfg.attention_sentences])

    def autocast(self):
        return torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.cfg.precision == "bf16")

    # --- checkpoints ----------------------------------------------------------------------

    def _meta(self) -> dict:
        return {"src_lang": self.run.data.src_lang, "tgt_lang": self.run.data.tgt_lang,
                "step": self.progress.step, "config": OmegaConf.to_yaml(OmegaConf.structured(self.run))}

    def save(self) -> Path:
        """Full checkpoint of the current step; keeps the newest `keep_last` of them."""
        rng = {"torch": torch.get_rng_state()}
        if self.device.type == "cuda":
            rng["cuda"] = torch.cuda.get_rng_state(self.device)
        state = {"optimizer": self.optimizer.state_dict(), "scheduler": self.schedule.state_dict(),
                 "progress": dataclasses.asdict(self.progress), "rng": rng}
        path = self.ckpt_dir / f"step_{self.progress.step:07d}.pt"
        atomic_save(make_checkpoint(self.model, self.data.tokenizer, self._meta(), state), path)
        keep = max(self.cfg.keep_last, self.cfg.average_last)
        for old in step_checkpoints(self.ckpt_dir)[:-keep]:
            old.unlink()
        return path

    def resume(self, path: Path) -> None:
        checkpoint = load_checkpoint(path, map_location=self.device)
        if "train_state" not in checkpoint:
            raise UserError(f"{path} holds weights only (no training state) and cannot be resumed")
        if checkpoint["model_config"] != self.model.cfg.to_dict():
            raise UserError(f"{path} was trained with a different model config; resume with the same settings")
        load_weights(self.model, checkpoint["model"], path)
        state = checkpoint["train_state"]
        self.optimizer.load_state_dict(state["optimizer"])
        self.schedule.load_state_dict(state["scheduler"])
        self.progress = Progress(**state["progress"])
        torch.set_rng_state(state["rng"]["torch"].cpu())
        if "cuda" in state["rng"] and self.device.type == "cuda":
            torch.cuda.set_rng_state(state["rng"]["cuda"].cpu(), self.device)
        if self.ddp.rank > 0:  # each rank draws its own dropout masks
            torch.manual_seed(self.run.seed + self.ddp.rank + self.progress.step)
        log.info("resumed from %s at step %d (epoch %d)", path, self.progress.step, self.progress.epoch)

    # --- evaluation -----------------------------------------------------------------------

    def translator(self, beam_size: int) -> Translator:
        return Translator(self.model, self.data.tokenizer, beam_size=beam_size,
                          length_penalty=self.cfg.length_penalty)

    def evaluate(self) -> float:
        """Validation loss, perplexity and BLEU; logs them and keeps the best checkpoint."""
        t0 = time.time()
        step = self.progress.step
        val_nll, val_ppl = validation_loss(self.model, self.val_loader, self.device, self.autocast)
        val_text = self.data.text["val"]
        hyps = self.translator(self.cfg.eval_beam_size).translate(list(val_text["src"]))
        bleu = score_translations(hyps, list(val_text["tgt"])).bleu
        self.writer.add_scalar("val/loss", val_nll, step)
        self.writer.add_scalar("val/ppl", val_ppl, step)
        self.writer.add_scalar("val/bleu", bleu, step)
        rows = [f"| {s} | {r} | {h} |" for s, r, h in
                zip(val_text["src"][: self.cfg.n_samples], val_text["tgt"][: self.cfg.n_samples], hyps)]
        self.writer.add_text("samples", "| source | reference | translation |\n|---|---|---|\n" + "\n".join(rows), step)
        improved = bleu > self.progress.best_bleu
        if improved:
            self.progress.best_bleu = bleu
            atomic_save(make_checkpoint(self.model, self.data.tokenizer, {**self._meta(), "val_bleu": bleu}),
                        self.ckpt_dir / "best.pt")
        log.info("step %d | val loss %.3f | ppl %.2f | BLEU %.2f%s | %.1fs", step, val_nll, val_ppl, bleu,
                 " (best)" if improved else "", time.time() - t0)
        return bleu

    def log_attention(self) -> None:
        """Attention figures of the probe sentences (all kinds, layers and heads) to TensorBoard."""
        if not self.probes:
            return
        t0 = time.time()
        sources = [src for src, _ in self.probes]
        references = [ref if ref is not None else "(none given)" for _, ref in self.probes]
        translator = self.translator(beam_size=1)
        translations = translator.translate_ids(translator.source_ids(sources))
        maps = collect_attention(self.model, self.data.tokenizer, sources, translations, references)
        log_to_tensorboard(self.writer, maps, self.progress.step)
        log.info("attention maps of %d sentence(s) logged in %.1fs", len(maps), time.time() - t0)

    # --- training -------------------------------------------------------------------------

    @property
    def budget(self) -> float:
        """Seconds the run may spend before its final evaluation (inf without a time budget)."""
        cfg = self.cfg
        return (cfg.max_minutes - cfg.reserve_minutes) * 60 if cfg.max_minutes is not None else math.inf

    def last_step(self) -> int:
        return min(self.cfg.max_steps, self.schedule.last_step or self.cfg.max_steps)

    def plan_schedule(self, elapsed: float, session_start: tuple[int, float]) -> None:
        """Fix the linear schedule's last step from this session's measured seconds per step,
        validations and checkpoints included, so that the decay ends with the time budget."""
        steps = self.progress.step - session_start[0]
        per_step = (elapsed - session_start[1]) / max(steps, 1)
        last = self.progress.step + int((self.budget - elapsed) / per_step)
        self.schedule.plan(self.progress.step, min(last, self.cfg.max_steps))
        log.info("schedule planned at step %d: %.2f s a step with validations, so the learning rate decays "
                 "linearly to %g x peak at step %d", self.progress.step, per_step, self.schedule.floor,
                 self.schedule.last_step)

    def fit(self, started: float) -> None:
        """Train until max_steps, max_epochs, the schedule's last step or the time budget.

        `started` is the clock() reading when this session of the run began (data
        preparation counts against the budget)."""
        cfg, progress = self.cfg, self.progress
        budget = self.budget  # training stops early enough for finish() to end within max_minutes
        batches = micro_batches(self.loader, self.sampler, progress, cfg.max_epochs)
        self.train_model.train()

        def elapsed() -> float:
            return progress.elapsed + self.clock() - started

        bar = ProgressBar(budget, cfg.max_steps, progress.step, elapsed(), enabled=self.ddp.is_main)
        session_start = (progress.step, elapsed())
        attention_every = cfg.eval_every if cfg.attention_every is None else cfg.attention_every
        log_loss = log_tokens = 0.0
        log_time = self.clock()
        while progress.step < self.last_step():
            if self.ddp.any(elapsed() > budget):
                log.info("time budget of %.1f minutes (%.1f kept for the final evaluation) reached at step %d",
                         cfg.max_minutes, cfg.reserve_minutes, progress.step)
                break
            group = list(islice(batches, cfg.grad_accum))
            if not group:
                log.info("reached max_epochs=%d", cfg.max_epochs)
                break
            n_tokens = sum(batch.n_tgt_tokens for _, _, batch in group)
            lr = cfg.lr * self.schedule.factor(progress.step + 1)
            for group_ in self.optimizer.param_groups:
                group_["lr"] = lr
            # summed over tokens, divided by the step's tokens: every token counts alike
            result = train_step(self.train_model, self.optimizer, self.criterion, [b for _, _, b in group],
                                n_tokens, self.autocast, cfg.clip_grad_norm, self.device)
            if not result.updated:
                last_good = latest_step_checkpoint(self.ckpt_dir)
                raise UserError(f"non-finite loss ({result.loss:.4g}) or gradient norm ({result.grad_norm:.4g}) at "
                                f"step {progress.step + 1}; stopped. Last good checkpoint: {last_good or 'none'}. "
                                "Try a lower train.lr or more train.warmup_steps")
            progress.step += 1
            progress.epoch, progress.position = group[-1][0], group[-1][1]
            bar.advance(progress.step, elapsed())
            log_loss += result.loss
            log_tokens += n_tokens * self.ddp.world_size

            if self.ddp.is_main and progress.step % cfg.log_every == 0:
                seconds = self.clock() - log_time
                tok_s = log_tokens / max(seconds, 1e-9)
                for tag, value in (("train/loss", log_loss / cfg.log_every), ("train/lr", lr),
                                   ("train/grad_norm", result.grad_norm), ("train/tokens_per_sec", tok_s)):
                    self.writer.add_scalar(tag, value, progress.step)
                bar.show(step=progress.step, loss=f"{log_loss / cfg.log_every:.3f}", lr=f"{lr:.2e}",
                         tok_s=f"{tok_s:.0f}", epoch=progress.epoch)
                log_loss = log_tokens = 0.0
                log_time = self.clock()

            evaluate_now = progress.step % cfg.eval_every == 0
            checkpoint_now = progress.step % (cfg.checkpoint_every or cfg.eval_every) == 0
            attention_now = attention_every > 0 and progress.step % attention_every == 0
            # both restore the training mode they found
            if self.ddp.is_main and evaluate_now:
                self.evaluate()
            if self.ddp.is_main and attention_now:
                self.log_attention()
            if (evaluate_now and not self.schedule.planned and self.schedule.kind == "linear"
                    and progress.step >= self.schedule.warmup_steps):
                # every rank plans from rank 0's clock, so that all stop at the same step
                self.plan_schedule(self.ddp.broadcast(elapsed()), session_start)
            if self.ddp.is_main and checkpoint_now:
                progress.elapsed, started = elapsed(), self.clock()
                self.save()
            if evaluate_now or checkpoint_now or attention_now:
                self.ddp.barrier()
                log_time = self.clock()  # evaluation time is not training throughput
        bar.close()
        progress.elapsed = elapsed()

    def finish(self) -> dict:
        """Final validation and checkpoint, optional averaging, then test BLEU with beam search."""
        cfg = self.cfg
        started = self.clock()
        if self.progress.step % cfg.eval_every != 0 or self.progress.best_bleu < 0:
            self.evaluate()
        if latest_step_checkpoint(self.ckpt_dir) != self.ckpt_dir / f"step_{self.progress.step:07d}.pt":
            self.save()
        best_path = self.ckpt_dir / "best.pt"
        if cfg.average_last > 1:
            paths = step_checkpoints(self.ckpt_dir)[-cfg.average_last:]
            self.model.load_state_dict(average_checkpoints(paths))
            averaged_bleu = self.evaluate()  # saves best.pt itself when the average wins
            log.info("average of %d checkpoints: val BLEU %.2f", len(paths), averaged_bleu)
        self.model.load_state_dict(load_checkpoint(best_path)["model"])

        batches_per_epoch = len(self.sampler) + self.sampler.start
        results = {"steps": self.progress.step,
                   "epochs": round(self.progress.epoch + self.progress.position / batches_per_epoch, 2),
                   "minutes": round(self.progress.elapsed / 60, 2), "parameters": self.model.num_parameters(),
                   "best_val_bleu": self.progress.best_bleu, "test": {}}
        translator = self.translator(cfg.test_beam_size)
        for split in (s for s in self.data.text if s.startswith("test")):
            text = self.data.text[split]
            t0 = time.time()
            hyps = translator.translate(list(text["src"]))
            scores = score_translations(hyps, list(text["tgt"]))
            results["test"][split] = {**dataclasses.asdict(scores), "beam_size": cfg.test_beam_size,
                                      "sentences_per_sec": round(len(hyps) / (time.time() - t0), 1)}
            (self.run_dir / f"{split}.hyp.{self.run.data.tgt_lang}").write_text("\n".join(hyps) + "\n")
            self.writer.add_scalar("test/bleu", scores.bleu, self.progress.step)
            log.info("%s: BLEU %.2f (lowercased %.2f), chrF %.2f | %s", split, scores.bleu, scores.bleu_lowercase,
                     scores.chrf, scores.bleu_signature)
        results["total_minutes"] = round((self.progress.elapsed + self.clock() - started) / 60, 2)
        results["peak_rss_mb"] = peak_rss_mb()
        log.info("%.1f minutes in all, final evaluation included | peak memory (RSS) %s MB",
                 results["total_minutes"], results["peak_rss_mb"])
        first_test = next(iter(results["test"].values()), {})
        self.writer.add_hparams(flat_hparams(self.run), {"hparam/val_bleu": self.progress.best_bleu,
                                                        "hparam/test_bleu": first_test.get("bleu", -1.0)}, run_name=".")
        self.writer.close()
        (self.run_dir / "results.json").write_text(json.dumps(results, indent=2) + "\n")
        return results
