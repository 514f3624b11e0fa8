"""Validation loss and translation quality (sacreBLEU, chrF)."""
import math
from dataclasses import dataclass
from typing import Callable

import torch
from sacrebleu.metrics import BLEU, CHRF
from torch.utils.data import DataLoader

from data import Batch
from model import AttentionMaps, Transformer


@torch.no_grad()
def validation_loss(model: Transformer, loader: DataLoader, device: torch.device, autocast,
                    on_attention: Callable[[Batch, AttentionMaps], None] | None = None) -> tuple[float, float]:
    """Mean negative log-likelihood per target token (no label smoothing) and perplexity.

    `on_attention`, if given, receives each batch with the attention maps of its forward pass
    (per-head statistics come from the same pass as the loss)."""
    was_training = model.training
    model.eval()
    total_nll, total_tokens = 0.0, 0
    for batch in loader:
        batch = batch.to(device)
        with autocast():
            summed_nll, attention = model(batch.src, batch.tgt_in, return_attention=on_attention is not None,
                                          targets=batch.tgt_out)
        if on_attention is not None:
            on_attention(batch, attention)
        total_nll += summed_nll.item()
        total_tokens += batch.n_tgt_tokens
    model.train(was_training)
    nll = total_nll / max(total_tokens, 1)
    return nll, math.exp(min(nll, 50.0))


@dataclass
class Scores:
    bleu: float
    bleu_lowercase: float
    chrf: float
    bleu_signature: str
    chrf_signature: str


def score_translations(hypotheses: list[str], references: list[str]) -> Scores:
    """Corpus sacreBLEU (cased, default 13a tokenizer) and chrF, with their signatures."""
    bleu, bleu_lc, chrf = BLEU(), BLEU(lowercase=True), CHRF()
    return Scores(
        bleu=bleu.corpus_score(hypotheses, [references]).score,
        bleu_lowercase=bleu_lc.corpus_score(hypotheses, [references]).score,
        chrf=chrf.corpus_score(hypotheses, [references]).score,
        bleu_signature=str(bleu.get_signature()),
        chrf_signature=str(chrf.get_signature()),
    )
