"""Which heads the translation needs: mask each head in turn, then prune the least important.

Michel et al. (2019, "Are Sixteen Heads Really Better than One?") measure a head's importance
by what the model loses without it. Here, for every kind, layer and head:

    loss_increase  validation loss (teacher-forced, every sentence) with that one head masked,
                   minus the loss with every head; the ranking below uses it
    bleu_drop      greedy validation BLEU with every head, minus BLEU with that head masked

and then, kind by kind, the pruning curve: the least important heads of the kind (smallest
loss increase first) masked together, more and more of them, with the loss and BLEU of each
point. A masked head's weights are multiplied by 0 before they mix the values
(`Transformer.mask_heads`), so the head's output is exactly zero.
"""

import math
from collections.abc import Callable
from pathlib import Path

import torch
from torch import Tensor

from data import DataConfig, token_batches
from data.prepare import tokenize_splits
from inference.checkpoint import load_for_inference, run_text
from inference.measure import loss_and_greedy_bleu
from model import Transformer

# (validation loss, greedy validation BLEU) of the model as it is at the call
Measure = Callable[[], tuple[float, float]]


def removal_counts(n_heads: int, points: int = 8) -> list[int]:
    """How many heads each point of a pruning curve masks: about `points` steps up to all."""
    return sorted({max(1, round(n_heads * i / points)) for i in range(1, points + 1)})


def head_importance(model: Transformer, measure: Measure, points: int = 8) -> dict:
    """Loss and BLEU with each head masked, and each kind's pruning curve (see the module doc).

    Returns {"base": {"loss", "bleu"}, "heads": [{"kind", "layer", "head", "loss", "bleu",
    "loss_increase", "bleu_drop"}, ...] (most important first), "pruning": {kind: [{"removed",
    "loss", "bleu", "heads"}, ...]}}. Layers and heads count from 1. The model's heads are all
    restored at the end, whatever happens.
    """
    layers = {kind: len(modules) for kind, modules in model.attention_modules().items()}
    base_loss, base_bleu = measure()
    rows = []
    try:
        for kind, n_layers in layers.items():
            for layer in range(1, n_layers + 1):
                for head in range(1, model.cfg.n_heads + 1):
                    model.mask_heads([(kind, layer, head)])
                    loss, bleu = measure()
                    rows.append(
                        {
                            "kind": kind,
                            "layer": layer,
                            "head": head,
                            "loss": loss,
                            "bleu": bleu,
                            "loss_increase": loss - base_loss,
                            "bleu_drop": base_bleu - bleu,
                        }
                    )
        pruning = {}
        for kind in layers:
            ranked = sorted((r for r in rows if r["kind"] == kind), key=lambda r: r["loss_increase"])
            curve = [{"removed": 0, "loss": base_loss, "bleu": base_bleu, "heads": []}]
            for count in removal_counts(len(ranked), points):
                masked = [(r["kind"], r["layer"], r["head"]) for r in ranked[:count]]
                model.mask_heads(masked)
                loss, bleu = measure()
                curve.append(
                    {
                        "removed": count,
                        "loss": loss,
                        "bleu": bleu,
                        "heads": [f"{layer}:{head}" for _, layer, head in masked],
                    }
                )
            pruning[kind] = curve
    finally:
        model.mask_heads([])
    rows.sort(key=lambda r: -r["loss_increase"])
    return {"base": {"loss": base_loss, "bleu": base_bleu}, "heads": rows, "pruning": pruning}


def importance_table(result: dict) -> str:
    """The result as text for the log: heads, most important first, then the pruning curves."""
    base = result["base"]
    lines = [
        f"head importance (validation loss {base['loss']:.3f}, greedy BLEU {base['bleu']:.2f} with every head)",
        f"{'head (kind:layer:head)':<26} {'loss +':>8} {'BLEU -':>8}",
    ]
    for r in result["heads"]:
        lines.append(
            f"{r['kind'] + ':' + str(r['layer']) + ':' + str(r['head']):<26} "
            f"{r['loss_increase']:>8.3f} {r['bleu_drop']:>8.2f}"
        )
    for kind, curve in result["pruning"].items():
        points = ", ".join(f"{p['removed']}: {p['bleu']:.1f}" for p in curve)
        lines.append(f"pruning {kind}, least important first (heads masked: BLEU): {points}")
    return "\n".join(lines)


def importance_grids(result: dict, key: str) -> dict[str, Tensor]:
    """kind -> (layers, heads) tensor of `key` ("loss_increase" or "bleu_drop"), for figures."""
    rows = result["heads"]
    n_heads = max(r["head"] for r in rows)
    grids = {}
    for kind in result["pruning"]:
        grid = torch.full((max(r["layer"] for r in rows if r["kind"] == kind), n_heads), math.nan)
        for r in (r for r in rows if r["kind"] == kind):
            grid[r["layer"] - 1, r["head"] - 1] = r[key]
        grids[kind] = grid
    return grids


def log_head_importance(writer, result: dict, step: int) -> None:
    """Three figures in TensorBoard: loss increase and BLEU drop per head, the pruning curves."""
    from viz.heads import head_statistic_figure, pruning_figure  # matplotlib only where figures are drawn

    for key, title, fmt in (
        ("loss_increase", "validation loss increase with the head masked", ".3f"),
        ("bleu_drop", "greedy BLEU drop with the head masked", ".2f"),
    ):
        writer.add_figure(
            f"heads/importance_{key}", head_statistic_figure(title, importance_grids(result, key), fmt), step
        )
    writer.add_figure("heads/pruning", pruning_figure(result), step)


def checkpoint_importance(
    checkpoint: str | Path,
    data_dir: str | None,
    sentences: int | None,
    device: torch.device,
    cache_dir: str = DataConfig.cache_dir,
    max_tokens: int = 4096,
) -> dict:
    """Head importance of a trained checkpoint on the validation set its run used: the same
    language pair and number of sentences (data.max_eval_examples), from `data_dir` if given,
    else from where the run read it."""
    model, tokenizer, meta = load_for_inference(checkpoint, device)
    text = run_text(meta, ["val"], data_dir, what=f"checkpoint {checkpoint}")
    pairs = tokenize_splits(text, tokenizer, Path(cache_dir))["val"]
    loader = token_batches(pairs, model.cfg.max_len, max_tokens, shuffle=False)  # max_tokens: training's default
    return head_importance(
        model, lambda: loss_and_greedy_bleu(model, tokenizer, loader, text["val"], device, sentences=sentences)
    )
