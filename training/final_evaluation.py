"""The end of a run, piece by piece (Trainer.finish puts them together): test scores, robustness,
head importance, results.json and TensorBoard's hparams."""

import dataclasses
import json
import logging
import sys
from collections.abc import Callable
from pathlib import Path

from datasets import Dataset, DatasetDict
from torch.utils.tensorboard import SummaryWriter
from tqdm import tqdm

from analysis.head_importance import Measure, head_importance, importance_table, log_head_importance
from inference.contract import LineTranslator, Translating
from inference.robustness import robustness
from inference.scoring import moses_bleu, score_translations
from model import Transformer
from training.config import RunConfig
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


def test_scores(
    translator: Translating, text: DatasetDict, tgt_lang: str, run_dir: Path, clock: Callable[[], float]
) -> dict[str, dict]:
    """Every test split of `text` translated: {split: scores, decoding speed}; each split's
    translations written to `run_dir`/{split}.hyp.{tgt_lang}."""
    results = {}
    for split in (s for s in text if s not in ("train", "val")):
        sources, refs = list(text[split]["src"]), list(text[split]["tgt"])
        # beam search over a test set takes a while: a bar at a terminal, gone when done
        bar = tqdm(total=len(sources), desc=split, unit=" sentences", disable=not sys.stderr.isatty(), leave=False)
        t0 = clock()
        hyps = translator.translate(sources, progress=bar.update)
        seconds = clock() - t0
        bar.close()
        scores = score_translations(hyps, refs)
        results[split] = {
            **dataclasses.asdict(scores),
            "bleu_moses_lowercase": moses_bleu(hyps, refs, tgt_lang),
            "beam_size": translator.search.beam_size,
            "sentences_per_sec": round(len(hyps) / max(seconds, 1e-9), 1),
        }
        (run_dir / f"{split}.hyp.{tgt_lang}").write_text("\n".join(hyps) + "\n", encoding="utf-8")
        log.info(
            "%s: BLEU %.2f (lowercased %.2f), chrF %.2f | %s",
            split,
            scores.bleu,
            scores.bleu_lowercase,
            scores.chrf,
            scores.bleu_signature,
        )
    return results


def robustness_results(
    translator: LineTranslator, val: Dataset, languages: tuple[str, str], writer: SummaryWriter, step: int
) -> dict[str, dict[str, float]]:
    """The validation set as people type it (inference/robustness.py), each line split into its
    sentences as translate.py splits it; every variant's BLEU and loops logged as
    robustness/VARIANT/bleu, .../loops and .../invented_digits (single words: .../over_4_words too;
    copy-through and copy-through inside: .../copied; numbers: .../copied and .../alone_copied).
    `languages`: (source, target)."""
    translator.split_lang = languages[0]
    results = robustness(translator.translate, list(val["src"]), list(val["tgt"]), languages)
    for variant, row in results.items():
        for key in ("bleu", "loops", "invented_digits", "over_4_words", "copied", "alone_copied"):
            if key in row:
                writer.add_scalar(f"robustness/{variant.replace(' ', '_')}/{key}", row[key], step)
        log.info("robustness, %s: %s", variant, ", ".join(f"{key} {value}" for key, value in row.items()))
    return results


def importance_results(
    model: Transformer,
    measure: Measure,
    sentences: int | None,
    writer: SummaryWriter,
    step: int,
    clock: Callable[[], float],
) -> dict:
    """Head importance of `model` (analysis/head_importance.py), logged, with what it cost."""
    t0 = clock()
    importance = head_importance(model, measure)
    log.info("%s", importance_table(importance))
    log_head_importance(writer, importance, step)
    return {**importance, "sentences_for_bleu": sentences, "seconds": round(clock() - t0, 1)}


def write_results(results: dict, run: RunConfig, writer: SummaryWriter, run_dir: Path) -> None:
    """The run's hparams and scores in TensorBoard, and results.json (whole, or the old one)."""
    first_test = next(iter(results["test"].values()), {})
    scores = {"hparam/val_bleu": results["best_val_bleu"], "hparam/test_bleu": first_test.get("bleu", -1.0)}
    writer.add_hparams(flat_hparams(run), scores, run_name=".")
    writer.close()
    with atomic_file(run_dir / "results.json", encoding="utf-8") as file:
        file.write(json.dumps(results, indent=2) + "\n")
