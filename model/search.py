"""Decoding: turn source token ids into target token ids with a trained model."""
import torch
from torch import Tensor

from model.config import BOS_ID, EOS_ID, PAD_ID
from model.transformer import Transformer


def max_output_length(model: Transformer, src: Tensor, ratio: float, extra: int) -> int:
    """Longest output to allow: ratio * longest source + extra, capped by the model's max_len."""
    src_len = int((src != PAD_ID).sum(1).max())
    return max(1, min(int(ratio * src_len) + extra, model.cfg.max_len - 1))


@torch.no_grad()
def greedy_search(model: Transformer, src: Tensor, max_len: int) -> list[list[int]]:
    """Most likely next token at each step, with the key/value cache.

    Args:
        src: (B, S) padded source ids.
        max_len: most target tokens to produce per sentence (eos not counted).

    Returns:
        one list of target ids per sentence, without bos/eos.
    """
    memory, src_mask, _ = model.encode(src)
    cache = model.new_cache()
    batch = src.size(0)
    token = torch.full((batch, 1), BOS_ID, dtype=torch.long, device=src.device)
    outputs = torch.full((batch, max_len), PAD_ID, dtype=torch.long, device=src.device)
    finished = torch.zeros(batch, dtype=torch.bool, device=src.device)
    for t in range(max_len):
        logits, _, _ = model.decode(token, memory, src_mask, cache)
        token = logits[:, -1].argmax(-1, keepdim=True)  # (B, 1)
        token[finished] = PAD_ID
        outputs[:, t] = token[:, 0]
        finished |= token[:, 0] == EOS_ID
        if finished.all():
            break
    return [strip_special(row) for row in outputs.tolist()]


def strip_special(ids: list[int]) -> list[int]:
    """Cut at the first eos and drop padding."""
    if EOS_ID in ids:
        ids = ids[: ids.index(EOS_ID)]
    return [i for i in ids if i != PAD_ID]
