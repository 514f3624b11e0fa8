"""The end of a run: final validation, checkpoint averaging, test scores, results.json."""

import dataclasses
import json
import logging
import sys

from analysis.head_importance import head_importance, importance_table, log_head_importance
from inference.checkpoint import average_checkpoints, load_checkpoint
from inference.scoring import moses_bleu, score_translations
from training.config import RunConfig
from training.trainer import Trainer
from utils.checkpoint_files import BEST, step_checkpoints
from utils.files import atomic_file

log = logging.getLogger("train")


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


def finish(trainer: Trainer) -> dict:
    """Final validation, optional averaging, then test BLEU of the best weights with beam search.

    Runs on rank 0 after `Trainer.fit`, which saved the last step's checkpoint."""
    cfg, progress = trainer.cfg, trainer.state.progress
    started = trainer.clock()
    if progress.step % cfg.eval_every != 0 or progress.best_bleu < 0:
        trainer.evaluate()
    if cfg.average_last > 1:
        paths = step_checkpoints(trainer.ckpt_dir)[-cfg.average_last :]
        trainer.model.load_state_dict(average_checkpoints(paths))
        averaged_bleu = trainer.evaluate()  # saves the best checkpoint itself when the average wins
        log.info("average of %d checkpoints: val BLEU %.2f", len(paths), averaged_bleu)
    trainer.model.load_state_dict(load_checkpoint(trainer.ckpt_dir / BEST)["model"])

    sampler = trainer.batches.sampler
    batches_per_epoch = len(sampler) + sampler.start
    results = {
        "steps": progress.step,
        "epochs": round(progress.epoch + progress.position / batches_per_epoch, 2),
        "minutes": round(progress.elapsed / 60, 2),
        "parameters": trainer.model.num_parameters(),
        "precision": cfg.precision,
        "best_val_bleu": progress.best_bleu,
        "test": {},
    }
    translator = trainer.validation.translator(cfg.test_beam_size)
    for split in (s for s in trainer.data.text if s not in ("train", "val")):
        text = trainer.data.text[split]
        t0 = trainer.clock()
        hyps, refs = translator.translate(list(text["src"])), list(text["tgt"])
        seconds = trainer.clock() - t0
        scores = score_translations(hyps, refs)
        results["test"][split] = {
            **dataclasses.asdict(scores),
            "bleu_moses_lowercase": moses_bleu(hyps, refs, trainer.run.data.tgt_lang),
            "beam_size": cfg.test_beam_size,
            "sentences_per_sec": round(len(hyps) / max(seconds, 1e-9), 1),
        }
        (trainer.run_dir / f"{split}.hyp.{trainer.run.data.tgt_lang}").write_text(
            "\n".join(hyps) + "\n", encoding="utf-8"
        )
        trainer.writer.add_scalar("test/bleu", scores.bleu, progress.step)
        log.info(
            "%s: BLEU %.2f (lowercased %.2f), chrF %.2f | %s",
            split,
            scores.bleu,
            scores.bleu_lowercase,
            scores.chrf,
            scores.bleu_signature,
        )
    if cfg.head_importance:
        t0 = trainer.clock()
        importance = head_importance(trainer.model, lambda: trainer.validation.measure(cfg.head_importance_sentences))
        log.info("%s", importance_table(importance))
        log_head_importance(trainer.writer, importance, progress.step)
        results["head_importance"] = {
            **importance,
            "sentences_for_bleu": cfg.head_importance_sentences,
            "seconds": round(trainer.clock() - t0, 1),
        }
    results["total_minutes"] = round((progress.elapsed + trainer.clock() - started) / 60, 2)
    results["peak_rss_mb"] = peak_rss_mb()
    log.info(
        "%.1f minutes in all, final evaluation included | peak memory (RSS) %s MB",
        results["total_minutes"],
        results["peak_rss_mb"],
    )
    first_test = next(iter(results["test"].values()), {})
    scores = {"hparam/val_bleu": progress.best_bleu, "hparam/test_bleu": first_test.get("bleu", -1.0)}
    trainer.writer.add_hparams(flat_hparams(trainer.run), scores, run_name=".")
    trainer.writer.close()
    with atomic_file(trainer.run_dir / "results.json", encoding="utf-8") as file:  # whole, or the old one
        file.write(json.dumps(results, indent=2) + "\n")
    return results
