"""Per-head statistics of attention over a whole data set, computed teacher-forced.

For every kind (encoder self, decoder self, cross), layer and head, averaged over the real
(non-padding) queries of all sentences:

    entropy       of the query's weights, over the log of the number of keys it may see:
                  0 = all weight on one key, 1 = uniform (queries that see one key skip it)
    confidence    the query's largest weight (Voita et al. 2019)
    boundary      weight on the sentence boundary: the bos the decoder reads first (decoder
                  self-attention), or the last source piece (encoder self, cross), where
                  heads with nothing to do often park their weight (Clark et al. 2019)
    punctuation   weight on pieces made of punctuation only ("." "," "▁-")
    previous      weight on the position just before the query (self-attention)
    next          weight on the position just after it (encoder self-attention)
    diagonality   cross: 1 - |expected source position - query position|, both as
                  fractions of their sentence (0 at the first piece, 1 at the last); 1 = the
                  head reads the source in step with the target
    monotonicity  cross: share of consecutive queries whose most-attended source piece does
                  not move backwards
"""

import unicodedata

import torch
from torch import Tensor

from data import Batch, Tokenizer
from model import AttentionMaps

KINDS = AttentionMaps._fields
STATISTICS = {
    "encoder_self": ("entropy", "confidence", "boundary", "punctuation", "previous", "next"),
    "decoder_self": ("entropy", "confidence", "boundary", "punctuation", "previous"),
    "cross": ("entropy", "confidence", "boundary", "punctuation", "diagonality", "monotonicity"),
}


def punctuation_ids(pieces: list[str]) -> Tensor:
    """(V,) bool: pieces that are punctuation only, the word-start mark aside."""

    def is_punctuation(piece: str) -> bool:
        text = piece.replace("\u2581", "")
        return bool(text) and all(unicodedata.category(c).startswith("P") for c in text)

    return torch.tensor([is_punctuation(p) for p in pieces])


def map_sums(
    weights: Tensor,
    query_mask: Tensor,
    key_mask: Tensor,
    boundary: Tensor,
    punctuation: Tensor,
    causal: bool,
    statistics: tuple[str, ...],
) -> dict[str, tuple[Tensor, Tensor]]:
    """Per-head sums of each statistic over one batch's queries, and how many queries count.

    Args:
        weights: (B, H, T_q, T_k) attention weights of one layer.
        query_mask, key_mask: (B, T_q), (B, T_k) bool, True at real positions.
        boundary, punctuation: (B, T_k) bool, keys that are the boundary / punctuation.
        causal: query i sees keys 0..i only (decoder self-attention).

    Returns:
        statistic -> (sum over counted queries (H,), number of counted queries (scalar)).
    """
    w = weights.float()
    b, h, t_q, t_k = w.shape
    q = query_mask[:, None, :].float()  # (B, 1, T_q): broadcasts over heads
    n_queries = query_mask.sum()
    if causal:
        n_keys = torch.arange(1, t_q + 1, device=w.device)[None, :].expand(b, t_q)  # (B, T_q)
    else:
        n_keys = key_mask.sum(1, keepdim=True).expand(b, t_q)  # (B, T_q)
    out = {}
    if "entropy" in statistics:
        entropy = -(w * w.clamp_min(1e-12).log()).sum(-1)  # (B, H, T_q)
        several = (query_mask & (n_keys > 1)).float()[:, None, :]
        normalised = entropy / n_keys.clamp_min(2).float().log()[:, None, :]
        out["entropy"] = ((normalised * several).sum((0, 2)), several.sum())
    if "confidence" in statistics:
        out["confidence"] = ((w.max(-1).values * q).sum((0, 2)), n_queries)
    for name, keys in (("boundary", boundary), ("punctuation", punctuation)):
        if name in statistics:
            share = (w * keys[:, None, None, :].float()).sum(-1)  # (B, H, T_q)
            out[name] = ((share * q).sum((0, 2)), n_queries)
    for name, offset in (("previous", -1), ("next", 1)):
        if name in statistics:
            share = torch.diagonal(w, offset=offset, dim1=-2, dim2=-1)  # (B, H, T_q - 1)
            # queries that have such a neighbour among the real keys
            real = (query_mask[:, 1:] if offset < 0 else query_mask[:, :-1] & key_mask[:, 1:]).float()[:, None, :]
            out[name] = ((share * real).sum((0, 2)), real.sum())
    if "diagonality" in statistics:
        src_len = key_mask.sum(1).float()  # (B,)
        tgt_len = query_mask.sum(1).float()
        key_pos = torch.arange(t_k, device=w.device).float() / (src_len[:, None] - 1).clamp_min(1)  # (B, T_k)
        expected = (w * key_pos[:, None, None, :]).sum(-1)  # (B, H, T_q)
        query_pos = torch.arange(t_q, device=w.device).float() / (tgt_len[:, None] - 1).clamp_min(1)  # (B, T_q)
        counted = (query_mask & (src_len > 1)[:, None] & (tgt_len > 1)[:, None]).float()[:, None, :]
        diagonality = 1.0 - (expected - query_pos[:, None, :]).abs()
        out["diagonality"] = ((diagonality * counted).sum((0, 2)), counted.sum())
    if "monotonicity" in statistics:
        peak = w.argmax(-1)  # (B, H, T_q)
        forward = (peak[..., 1:] >= peak[..., :-1]).float()  # (B, H, T_q - 1)
        pairs = (query_mask[:, 1:] & query_mask[:, :-1]).float()[:, None, :]
        out["monotonicity"] = ((forward * pairs).sum((0, 2)), pairs.sum())
    return out


class HeadStatistics:
    """Accumulates the statistics of every kind, layer and head over batches.

    Feed it each batch with the attention maps of its teacher-forced forward pass (`add`),
    then read the averages (`result`): kind -> statistic -> (layers, heads) tensor.
    """

    def __init__(self, tokenizer: Tokenizer) -> None:
        self.src_punctuation = punctuation_ids(tokenizer.src_pieces(list(range(tokenizer.src_vocab_size))))
        self.tgt_punctuation = punctuation_ids(tokenizer.tgt_pieces(list(range(tokenizer.tgt_vocab_size))))
        self.sums: dict[tuple[str, str], list[Tensor]] = {}  # (kind, statistic) -> per layer (H,)
        self.counts: dict[tuple[str, str], list[Tensor]] = {}

    def add(self, batch: Batch, attention: AttentionMaps) -> None:
        src_real, tgt_real = batch.src_mask, batch.tgt_mask  # (B, S), (B, T) bool
        src_len = src_real.sum(1)
        last_src = torch.zeros_like(src_real)
        last_src[torch.arange(len(src_len)), src_len - 1] = True
        bos = torch.zeros_like(tgt_real)
        bos[:, 0] = True
        src_punct = self.src_punctuation.to(batch.src.device)[batch.src] & src_real
        tgt_punct = self.tgt_punctuation.to(batch.src.device)[batch.tgt_in] & tgt_real
        setups = {
            "encoder_self": (src_real, src_real, last_src, src_punct, False),
            "decoder_self": (tgt_real, tgt_real, bos, tgt_punct, True),
            "cross": (tgt_real, src_real, last_src, src_punct, False),
        }
        for kind in KINDS:
            for layer, weights in enumerate(getattr(attention, kind)):
                for name, (total, count) in map_sums(weights, *setups[kind], STATISTICS[kind]).items():
                    sums, counts = self.sums.setdefault((kind, name), []), self.counts.setdefault((kind, name), [])
                    if layer == len(sums):  # on the attention's device: no copy (on a GPU, no sync) per batch
                        sums.append(torch.zeros_like(total))
                        counts.append(torch.zeros((), device=total.device))
                    sums[layer] += total
                    counts[layer] += count.float()

    def result(self) -> dict[str, dict[str, Tensor]]:
        """kind -> statistic -> (layers, heads) averages."""
        out: dict[str, dict[str, Tensor]] = {kind: {} for kind in KINDS}
        for (kind, name), sums in self.sums.items():
            counts = self.counts[(kind, name)]
            out[kind][name] = torch.stack([s / c.clamp_min(1) for s, c in zip(sums, counts)]).cpu()  # (L, H)
        return out


def scalar_layout(n_encoder_layers: int, n_decoder_layers: int) -> dict:
    """TensorBoard's custom-scalars layout: for each statistic, one chart per kind and layer
    with a line per head (the tags `heads/<statistic>/<kind>/layer_<L>/head_<H>`)."""
    layers = {"encoder_self": n_encoder_layers, "decoder_self": n_decoder_layers, "cross": n_decoder_layers}
    names = dict.fromkeys(name for kind in KINDS for name in STATISTICS[kind])  # in order, once each
    return {
        f"heads: {name}": {
            f"{kind} layer {layer}": ["Multiline", [rf"heads/{name}/{kind}/layer_{layer}/head_\d+"]]
            for kind in KINDS
            if name in STATISTICS[kind]
            for layer in range(1, layers[kind] + 1)
        }
        for name in names
    }


def log_head_statistics(writer, result: dict[str, dict[str, Tensor]], step: int, *, figures: bool) -> None:
    """Every value as a scalar (see `scalar_layout`), and with `figures` one layers x heads figure
    per statistic (drawing them is most of the cost: about a second for the eight)."""
    names = dict.fromkeys(name for kind in KINDS for name in STATISTICS[kind])
    for kind, by_name in result.items():
        for name, values in by_name.items():
            for layer, row in enumerate(values.tolist(), start=1):
                for head, value in enumerate(row, start=1):
                    writer.add_scalar(f"heads/{name}/{kind}/layer_{layer}/head_{head}", value, step)
    if not figures:
        return
    from viz.heads import head_statistic_figure  # matplotlib only where figures are drawn

    for name in names:
        writer.add_figure(
            f"heads/{name}",
            head_statistic_figure(name, {kind: result[kind][name] for kind in KINDS if name in result[kind]}),
            step,
        )
