"""Boolean attention masks. Convention everywhere: True means "may attend", False "masked".

Masks are shaped to broadcast against attention scores of shape (B, H, T_q, T_k).
"""

import torch
from torch import Tensor


def padding_mask(tokens: Tensor, pad_id: int) -> Tensor:
    """Key padding mask: (B, T) token ids -> (B, 1, 1, T), False at padding keys."""
    return (tokens != pad_id)[:, None, None, :]


def causal_mask(t_q: int, t_k: int, device: torch.device | None = None) -> Tensor:
    """Subsequent-position mask (t_q, t_k): query i may see keys j <= i + (t_k - t_q).

    The offset makes the same function serve training (t_q == t_k) and incremental decoding,
    where the t_q new queries sit at the end of t_k cached keys.
    """
    offset = t_k - t_q
    return torch.ones(t_q, t_k, dtype=torch.bool, device=device).tril(diagonal=offset)


def decoder_self_attention_mask(tgt: Tensor, pad_id: int) -> Tensor:
    """Causal and padding mask combined for the decoder: (B, T) -> (B, 1, T, T)."""
    t = tgt.size(1)
    return padding_mask(tgt, pad_id) & causal_mask(t, t, tgt.device)
