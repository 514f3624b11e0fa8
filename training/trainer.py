"""The training loop: steps, validation, attention maps, checkpoints.

`Trainer` holds a run's moving parts and `fit` trains until a limit is reached; `finish`
then evaluates the best weights on the test sets (its pieces: training/final_evaluation.py);
training/run.py builds the trainer from a config.
"""

import logging
import math
import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

import torch
from omegaconf import OmegaConf
from torch.nn.parallel import DistributedDataParallel
from torch.utils.tensorboard import SummaryWriter

from data import AugmentedPairs, Batch, PreparedData, SampledPairs
from data.prepare import corpus_location
from inference.checkpoint import atomic_save, average_checkpoints, load_checkpoint, make_checkpoint
from model import Transformer, TransformerConfig
from training.config import RunConfig
from training.distributed import Distributed
from training.ema import WeightAverage
from training.final_evaluation import (
    importance_results,
    peak_rss_mb,
    robustness_results,
    test_scores,
    write_results,
)
from training.interrupt import Interrupted, StopOnSignal
from training.loaders import EpochPairs, TrainingBatches
from training.progress_bar import ProgressBar
from training.schedule import Schedule
from training.state import Progress, RandomStreams, TrainState
from training.step import make_optimizer, train_step
from training.time_spent import TimeSpent, summary
from training.validation import Validation
from utils.checkpoint_files import (
    BEST,
    checkpoint_folder,
    latest_step_checkpoint,
    step_checkpoint_path,
    step_checkpoints,
)
from utils.errors import UserError

log = logging.getLogger("train")
ATTENTION, CHECKPOINTS = "attention maps", "checkpoints"  # parts of the time spent, each counted in several places


@dataclass
class LogWindow:
    """The steps since the last training log line: their summed loss and tokens, since `since`."""

    since: float
    loss: float = 0.0
    tokens: float = 0.0


class Trainer:
    """Holds a run's moving parts (its `state`: what a checkpoint saves, see training/state.py;
    and data, validation, writer); `fit` trains.

    `clock` gives seconds for the time budget and the schedule's plan (tests pass a fake one);
    `started` is its reading when this session of the run began (data preparation counts against
    the budget, and is the first part of the time spent: `time`).
    """

    def __init__(
        self,
        run: RunConfig,
        model_cfg: TransformerConfig,
        run_dir: Path,
        data: PreparedData,
        device: torch.device,
        ddp: Distributed,
        clock: Callable[[], float],
        started: float,
    ) -> None:
        self.run, self.cfg, self.run_dir = run, run.train, run_dir
        self.data, self.device, self.ddp, self.clock = data, device, ddp, clock
        self.time = TimeSpent(clock, started)
        self.counted_from = started  # this session's seconds from here are not in progress.elapsed yet
        self.last_plan = (0, 0.0)  # (step, elapsed) the next plan of the schedule measures the speed from
        self.ckpt_dir = checkpoint_folder(run_dir)
        self.corpus = corpus_location(run.data)  # kept in every checkpoint: where to read the corpus again
        torch.manual_seed(run.seed)  # the same initial weights on every rank
        self.model = Transformer(model_cfg).to(device)
        if ddp.rank > 0:  # but each rank its own dropout masks (rank 0 goes on with the seed's stream)
            torch.manual_seed(ddp.rank_seed(run.seed))
        optimizer = make_optimizer(self.model, self.cfg)
        progress = Progress(one_way_from=None if self.cfg.bidirectional > 0 else 0)  # a checkpoint may replace it
        self.state = TrainState(
            self.model,
            optimizer,
            Schedule.from_config(self.cfg),
            progress,
            RandomStreams(device, ddp, run.seed, progress),
            WeightAverage(self.model, self.cfg.ema_decay) if self.cfg.ema_decay > 0 else None,
        )
        self.last_grad_norm = math.nan
        self.saved_step: int | None = None  # of the newest full checkpoint this session wrote
        self.train_model = (
            DistributedDataParallel(self.model, device_ids=[device] if device.type == "cuda" else None)
            if ddp.world_size > 1
            else self.model
        )

        sampled: EpochPairs | None = None  # each epoch's pairs made anew: subword sampling or augmentation
        if run.data.subword_sampling > 0:
            sampling = run.data.subword_sampling, run.data.subword_n_best
            sampled = SampledPairs(data.tokenizer, data.text["train"], *sampling)
        elif run.data.augment.on:
            sampled = AugmentedPairs(
                data.tokenizer,
                data.text["train"],
                run.data.augment,
                Path(run.data.cache_dir),
                (run.data.src_lang, run.data.tgt_lang),
            )
        self.batches = TrainingBatches(
            data,
            sampled,
            model_cfg.max_len,
            self.cfg.max_tokens,
            seed=run.seed,
            rank=ddp.rank,
            world_size=ddp.world_size,
        )
        self.writer = SummaryWriter(log_dir=str(run_dir)) if ddp.is_main else None
        self.validation = Validation(self.model, data, self.cfg, self.writer, device, self.autocast)

    def autocast(self):
        return torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.cfg.precision == "bf16")

    # --- checkpoints (resuming from them, and starting from another run's: training/resume.py) ---

    def _meta(self) -> dict:
        return {
            "src_lang": self.run.data.src_lang,
            "tgt_lang": self.run.data.tgt_lang,
            "step": self.state.progress.step,
            "config": OmegaConf.to_yaml(OmegaConf.structured(self.run)),
            "corpus": self.corpus,
        }

    def save(self) -> Path:
        """Full checkpoint of the current step; keeps the newest `keep_last` of them.

        Called on every rank (each rank's random state goes in); rank 0 writes."""
        checkpoint = self.state.checkpoint(self.data.tokenizer, self._meta())  # every rank: streams are gathered
        path = step_checkpoint_path(self.ckpt_dir, self.state.progress.step)
        if self.ddp.is_main:
            atomic_save(checkpoint, path)
            keep = max(self.cfg.keep_last, self.cfg.checkpoints_averaged)
            for old in step_checkpoints(self.ckpt_dir)[:-keep]:
                old.unlink()
        self.ddp.barrier()
        self.saved_step = self.state.progress.step
        return path

    # --- evaluation -----------------------------------------------------------------------

    @contextmanager
    def evaluated_weights(self) -> Iterator[None]:
        """The model holds the weights that are evaluated: the moving average with train.ema_decay,
        else its own."""
        with self.state.ema.swapped_into(self.model) if self.state.ema is not None else nullcontext():
            yield

    def evaluate(self) -> float:
        """Validate (see training/validation.py), log it, keep the best checkpoint; val BLEU."""
        started = time.time()
        step = self.state.progress.step
        # with a moving average, the weights themselves are scored too: whether it pays shows in the log
        own_bleu = self.validation.bleu()[0] if self.state.ema is not None else None
        with self.evaluated_weights():
            # the head statistics' figures are attention pictures: none when attention logging is off
            val_nll, val_ppl, bleu, heads_seconds = self.validation.run(step, figures=self.attention_every > 0)
            improved = bleu > self.state.progress.best_bleu
            if improved:
                self.state.progress.best_bleu = bleu
                atomic_save(
                    make_checkpoint(self.model, self.data.tokenizer, {**self._meta(), "val_bleu": bleu}),
                    self.ckpt_dir / BEST,
                )
        if own_bleu is not None:
            self.writer.add_scalar("val/bleu_own_weights", own_bleu, step)
        log.info(
            "step %d | val loss %.3f | ppl %.2f | BLEU %.2f%s%s | %.1fs (head statistics logged in %.1fs)",
            step,
            val_nll,
            val_ppl,
            bleu,
            " (best)" if improved else "",
            "" if own_bleu is None else f" (moving average; the weights themselves {own_bleu:.2f})",
            time.time() - started,
            heads_seconds,
        )
        return bleu

    def finish(self) -> dict:
        """Final validation, optional averaging, then test BLEU of the best weights with beam
        search, robustness and head importance if asked, results.json (training/final_evaluation.py).

        Runs on rank 0 after `fit`, which saved the last step's checkpoint."""
        cfg, progress = self.cfg, self.state.progress
        started = self.clock()
        with self.time.on("final validation and averaging"):
            if progress.step % cfg.eval_every != 0 or progress.best_bleu < 0:
                self.evaluate()
            averaged = cfg.checkpoints_averaged
            paths = step_checkpoints(self.ckpt_dir)[-averaged:] if averaged > 1 else []
            if len(paths) > 1:  # one checkpoint is the weights just validated: nothing new to measure
                self.model.load_state_dict(average_checkpoints(paths))
                averaged_bleu = self.evaluate()  # saves the best checkpoint itself when the average wins
                log.info("average of %d checkpoints: val BLEU %.2f", len(paths), averaged_bleu)
            self.model.load_state_dict(load_checkpoint(self.ckpt_dir / BEST)["model"])

        batches_per_epoch = len(self.batches.sampler) + self.batches.sampler.start
        results = {
            "steps": progress.step,
            "epochs": round(progress.epoch + progress.position / batches_per_epoch, 2),
            "minutes": round(progress.elapsed / 60, 2),
            "parameters": self.model.num_parameters(),
            "precision": cfg.precision,
            "best_val_bleu": progress.best_bleu,
        }
        translator = self.validation.translator(cfg.test_beam_size)
        with self.time.on("test decoding"):
            results["test"] = test_scores(translator, self.data.text, self.run.data.tgt_lang, self.run_dir, self.clock)
        for scores in results["test"].values():
            self.writer.add_scalar("test/bleu", scores["bleu"], progress.step)
        if cfg.robustness:
            with self.time.on("robustness"):
                results["robustness"] = robustness_results(
                    translator,
                    self.data.text["val"],
                    (self.run.data.src_lang, self.run.data.tgt_lang),
                    self.writer,
                    progress.step,
                )
        if cfg.head_importance:
            sentences = cfg.head_importance_sentences
            with self.time.on("head importance"):
                results["head_importance"] = importance_results(
                    self.model,
                    lambda: self.validation.measure(sentences),
                    sentences,
                    self.writer,
                    progress.step,
                    self.clock,
                )
        results["total_minutes"] = round((progress.elapsed + self.clock() - started) / 60, 2)
        results["peak_rss_mb"] = peak_rss_mb()
        results["seconds"] = spent = self.time.breakdown()  # this session's, by what they were spent on
        log.info(
            "%.1f minutes in all, final evaluation included | peak memory (RSS) %s MB",
            results["total_minutes"],
            results["peak_rss_mb"],
        )
        log.info("where this session's time went: %s", summary(spent))
        write_results(results, self.run, self.writer, self.run_dir)
        return results

    def log_attention(self) -> None:
        started = time.time()
        with self.evaluated_weights():
            sentences = self.validation.attention(self.state.progress.step)
        if sentences:
            log.info("attention maps of %d sentence(s) logged in %.1fs", sentences, time.time() - started)

    # --- training -------------------------------------------------------------------------

    def last_step(self) -> int:
        return min(self.cfg.max_steps, self.state.schedule.last_step or self.cfg.max_steps)

    def plan_schedule(self, elapsed: float, since: tuple[int, float]) -> None:
        """Set the linear schedule's last step from the seconds per step measured since `since`
        (step, elapsed), validations and checkpoints included, so that the decay ends with the
        time budget."""
        per_step = max(
            (elapsed - since[1]) / max(self.state.progress.step - since[0], 1), 1e-6
        )  # a clock that did not move
        last = self.state.progress.step + int((self.cfg.budget_seconds - elapsed) / per_step)
        self.state.schedule.plan(self.state.progress.step, min(last, self.cfg.max_steps))
        log.info(
            "schedule planned at step %d: %.2f s a step with validations, so the learning rate decays "
            "linearly to %g x peak at step %d",
            self.state.progress.step,
            per_step,
            self.state.schedule.floor,
            self.state.schedule.last_step,
        )

    def one_way_now(self) -> bool:
        """Whether bidirectional training (train.bidirectional) has had its share of the planned
        steps and the next epoch starts the requested direction alone; it is then marked in the
        progress (so a resumed run switches at the same step). The share is of the last step
        planned so far: before the first plan (at a validation after warmup) that is max_steps."""
        progress = self.state.progress
        if progress.one_way_from is not None or progress.step < self.cfg.bidirectional * self.last_step():
            return False
        progress.one_way_from = progress.epoch + int(progress.position > 0)  # the epoch under way is left
        progress.epoch, progress.position = progress.one_way_from, 0
        log.info(
            "step %d: both directions trained (train.bidirectional=%g of %d steps); the requested "
            "direction alone from here (epoch %d)",
            progress.step,
            self.cfg.bidirectional,
            self.last_step(),
            progress.epoch,
        )
        return True

    def step(self, batches: list[Batch]) -> tuple[float, float, float]:
        """One optimizer step on this rank's `batches`: (lr, loss per token, global tokens)."""
        n_tokens = sum(batch.n_tgt_tokens for batch in batches)
        normalizer = self.ddp.token_normalizer(n_tokens)  # every token of the step counts alike
        lr = self.cfg.lr * self.state.schedule.factor(self.state.progress.step + 1)
        for group in self.state.optimizer.param_groups:
            group["lr"] = lr
        result = train_step(
            self.train_model,
            self.state.optimizer,
            self.cfg.label_smoothing,
            batches,
            normalizer,
            self.autocast,
            self.cfg.clip_grad_norm,
            self.device,
            self.cfg.rdrop,
        )
        if not result.updated:
            last_good = latest_step_checkpoint(self.ckpt_dir)
            raise UserError(
                f"non-finite loss ({result.loss:.4g}) or gradient norm ({result.grad_norm:.4g}) at "
                f"step {self.state.progress.step + 1}; stopped. Last good checkpoint: {last_good or 'none'}. "
                "Try a lower train.lr or more train.warmup_steps"
            )
        self.last_grad_norm = result.grad_norm
        if self.state.ema is not None:
            self.state.ema.update(self.model)
        return lr, result.loss * normalizer / n_tokens, normalizer * self.ddp.world_size

    def fit(self) -> None:
        """Train until max_steps, max_epochs, the schedule's last step or the time budget,
        then save the last step's checkpoint. On SIGINT or SIGTERM: save after the current
        step and raise Interrupted."""
        cfg, progress = self.cfg, self.state.progress
        self.time.add("preparation (data, model)", self.clock() - self.counted_from)
        batches = self.batches(progress.epoch, progress.position, cfg.max_epochs, progress.one_way_from)
        self.train_model.train()
        if self.attention_every > 0 and progress.step == 0:
            self.attention_maps()  # the untrained maps: where the step slider of the ATTENTION tab starts
        bar = ProgressBar(cfg.budget_seconds, cfg.max_steps, progress.step, self.elapsed(), enabled=self.ddp.is_main)
        self.last_plan = (progress.step, self.elapsed())  # where the speed of the next plan is measured from
        window = LogWindow(since=self.clock())
        with StopOnSignal() as stop:
            while progress.step < self.last_step():
                self.stop_if_signalled(stop, bar)
                if self.out_of_time():
                    break
                if self.one_way_now():
                    batches = self.batches(progress.epoch, 0, cfg.max_epochs, progress.one_way_from)
                group = list(islice(batches, cfg.grad_accum))
                if not group:
                    log.info("reached max_epochs=%d", cfg.max_epochs)
                    break
                self.train_on(group, bar, window)
                self.after_step(window)
        bar.close()
        if self.attention_every > 0 and progress.step % self.attention_every != 0:
            self.attention_maps()  # the last step's maps too: the end of the ATTENTION tab's step slider
        self.count_time()
        if self.saved_step != progress.step:
            with self.time.on(CHECKPOINTS):
                self.save()

    # The phases of fit, in the order a step meets them.

    def elapsed(self) -> float:
        """Seconds of the whole run so far: its earlier sessions' (progress.elapsed) and this one's."""
        return self.state.progress.elapsed + self.clock() - self.counted_from

    def count_time(self) -> None:
        """Move this session's seconds so far into progress.elapsed, which a checkpoint saves."""
        self.state.progress.elapsed, self.counted_from = self.elapsed(), self.clock()

    @property
    def attention_every(self) -> int:
        """Steps between attention maps (0: never)."""
        return self.cfg.eval_every if self.cfg.attention_every is None else self.cfg.attention_every

    def attention_maps(self) -> None:
        if self.ddp.is_main:  # restores the training mode it found
            with self.time.on(ATTENTION):
                self.log_attention()

    def stop_if_signalled(self, stop: StopOnSignal, bar: ProgressBar) -> None:
        """After SIGINT or SIGTERM on any rank: save, and raise Interrupted."""
        if self.ddp.any(stop.signum is not None):
            self.count_time()
            with self.time.on(CHECKPOINTS):
                path = self.save()
            bar.close()
            raise Interrupted(stop.signum or signal.SIGTERM, self.state.progress.step, path)  # SIGTERM: another rank's

    def out_of_time(self) -> bool:
        if not self.ddp.any(self.elapsed() > self.cfg.budget_seconds):
            return False
        log.info(
            "time budget of %.1f minutes (%.1f kept for the final evaluation) reached at step %d",
            self.cfg.max_minutes,
            self.cfg.reserve_minutes,
            self.state.progress.step,
        )
        return True

    def train_on(self, group: list[tuple[int, int, Batch]], bar: ProgressBar, window: LogWindow) -> None:
        """One optimizer step on `group` ((epoch, position, batch) each), counted, and logged
        every log_every steps."""
        progress = self.state.progress
        lr, loss, tokens = self.step([batch for _, _, batch in group])
        progress.step += 1
        progress.epoch, progress.position = group[-1][0], group[-1][1]
        bar.advance(progress.step, self.elapsed())
        window.loss += loss
        window.tokens += tokens
        if self.ddp.is_main and progress.step % self.cfg.log_every == 0:
            tok_s = window.tokens / max(self.clock() - window.since, 1e-9)
            for tag, value in (
                ("train/loss", window.loss / self.cfg.log_every),
                ("train/lr", lr),
                ("train/grad_norm", self.last_grad_norm),
                ("train/tokens_per_sec", tok_s),
            ):
                self.writer.add_scalar(tag, value, progress.step)
            bar.show(
                step=progress.step,
                loss=f"{window.loss / self.cfg.log_every:.3f}",
                lr=f"{lr:.2e}",
                tok_s=f"{tok_s:.0f}",
                epoch=progress.epoch,
            )
            window.loss = window.tokens = 0.0
            window.since = self.clock()

    def after_step(self, window: LogWindow) -> None:
        """What falls due after a step: validation, attention maps, a new plan of the schedule,
        a checkpoint; then the ranks meet."""
        cfg, progress, ddp = self.cfg, self.state.progress, self.ddp
        evaluate_now = progress.step % cfg.eval_every == 0
        checkpoint_now = progress.step % (cfg.checkpoint_every or cfg.eval_every) == 0
        attention_now = self.attention_every > 0 and progress.step % self.attention_every == 0
        if ddp.is_main and evaluate_now:  # restores the training mode it found
            with self.time.on("validation"):
                self.evaluate()
        if attention_now:
            self.attention_maps()
        if (
            evaluate_now
            and self.state.schedule.kind == "linear"
            and cfg.max_minutes is not None
            and self.state.schedule.warmup_steps <= progress.step < self.last_step()
        ):
            now = ddp.broadcast(self.elapsed())  # every rank plans from rank 0's clock, so that all stop at one step
            self.plan_schedule(now, self.last_plan)
            self.last_plan = (progress.step, now)
        if checkpoint_now:
            self.count_time()
            with self.time.on(CHECKPOINTS):
                self.save()
        if evaluate_now or checkpoint_now or attention_now:
            ddp.barrier()
            window.since = self.clock()  # evaluation time is not training throughput
