"""A tiny model for tests that need a real Transformer but no training: small enough to run in
milliseconds, with two layers of each kind so that layer-wise code is exercised."""

import dataclasses

import torch

from model import Transformer, TransformerConfig

TINY_SHAPE = dict(
    src_vocab_size=50,
    tgt_vocab_size=50,
    d_model=32,
    n_heads=4,
    n_encoder_layers=2,
    n_decoder_layers=2,
    d_ff=64,
    max_len=64,
)


def random_pairs(n: int, vocab_size: int = 40, seed: int = 0) -> list[dict]:
    """`n` tokenized pairs of random ids (4 on: past the special ids) and lengths 2 to 8, as the
    data's tokenized splits hold them."""
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(2, 9, (n, 2), generator=g).tolist()
    return [
        {
            "src_ids": torch.randint(4, vocab_size, (s,), generator=g).tolist(),
            "tgt_ids": torch.randint(4, vocab_size, (t,), generator=g).tolist(),
        }
        for s, t in lengths
    ]


def tiny_config(**changes) -> TransformerConfig:
    return TransformerConfig(**{**TINY_SHAPE, **changes})


def tiny_model(cfg: TransformerConfig | None = None, seed: int = 0, **changes) -> Transformer:
    """The tiny model (or `cfg`'s) with `changes`, its weights drawn from `seed`, in eval mode."""
    torch.manual_seed(seed)
    return Transformer(dataclasses.replace(cfg or tiny_config(), **changes)).eval()
