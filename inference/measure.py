"""A model measured on a parallel split: its teacher-forced loss, and the BLEU of its greedy
translations. Validation during training and head importance both measure this way; it lives
below both so that neither reaches into the other."""

from __future__ import annotations

import math
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING

import torch
from torch.utils.data import DataLoader

from data import Batch, Tokenizer
from inference.scoring import score_translations
from inference.search_config import SearchConfig
from inference.translator import Translator
from model import AttentionMaps, Transformer

if TYPE_CHECKING:  # only a type here: translate.py starts without loading datasets (pandas, Arrow)
    from datasets import Dataset

# what the forward passes run under: bf16 autocast in training, nothing elsewhere
Autocast = Callable[[], AbstractContextManager]


@torch.no_grad()
def teacher_forced_loss(
    model: Transformer,
    loader: DataLoader,
    device: torch.device,
    autocast: Autocast = nullcontext,
    on_attention: Callable[[Batch, AttentionMaps], None] | None = None,
) -> tuple[float, float]:
    """Mean negative log-likelihood per target token (no label smoothing) and perplexity.

    `on_attention`, if given, receives each batch with the attention maps of its forward pass
    (per-head statistics come from the same pass as the loss)."""
    total_nll, total_tokens = 0.0, 0
    with model.evaluating():
        for batch in loader:
            batch = batch.to(device)
            with autocast():
                _, summed_nll, attention = model(
                    batch.src, batch.tgt_in, targets=batch.tgt_out, return_attention=on_attention is not None
                )
            if on_attention is not None:
                on_attention(batch, attention)
            total_nll += summed_nll.item()
            total_tokens += batch.n_tgt_tokens
    nll = total_nll / max(total_tokens, 1)
    return nll, math.exp(min(nll, 50.0))


def loss_and_greedy_bleu(
    model: Transformer,
    tokenizer: Tokenizer,
    loader: DataLoader,
    text: Dataset,
    device: torch.device,
    autocast: Autocast = nullcontext,
    sentences: int | None = None,
) -> tuple[float, float]:
    """(loss over every batch of `loader`, greedy BLEU of the first `sentences` rows of `text`,
    all if None): what head importance compares with heads masked and not."""
    loss, _ = teacher_forced_loss(model, loader, device, autocast)
    text = text.select(range(min(sentences, len(text)))) if sentences is not None else text
    hyps = Translator(model, tokenizer, SearchConfig(beam_size=1)).translate(list(text["src"]))
    return loss, score_translations(hyps, list(text["tgt"])).bleu
