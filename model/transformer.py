"""The encoder-decoder Transformer: encode, decode (optionally step by step), forward."""

from collections.abc import Iterator
from contextlib import contextmanager
from typing import NamedTuple

import torch
from torch import Tensor, nn

from model.attention import AttentionSteps, KVCache, MultiHeadAttention
from model.config import TransformerConfig
from model.dropout import Dropout
from model.embedding import PositionalEncoding, TokenEmbedding
from model.layers import DecoderLayer, EncoderLayer
from model.masks import causal_mask, decoder_self_attention_mask, padding_mask
from model.output_loss import output_cross_entropy, plain_output_cross_entropy


class AttentionMaps(NamedTuple):
    """Attention weights of every layer, one (B, H, T_q, T_k) tensor per layer and kind."""

    encoder_self: list[Tensor]  # (B, H, S, S)
    decoder_self: list[Tensor]  # (B, H, T, T), lower-triangular
    cross: list[Tensor]  # (B, H, T, S): target queries over source keys


class DecoderOutput(NamedTuple):
    """The decoder stack's result for the positions given, before the output layer."""

    states: Tensor  # (B, T, d_model), final-normed
    self_attention: list[Tensor]  # per layer (B, H, T, T_total)
    cross_attention: list[Tensor]  # per layer (B, H, T, S)


class TransformerOutput(NamedTuple):
    """What a teacher-forced forward pass returns, always these three, each always meaning the
    same (nanoGPT returns `(logits, loss)` likewise)."""

    logits: Tensor | None  # (B, T, tgt_vocab_size); None when the loss was asked for (see forward)
    loss: Tensor | None  # scalar: summed cross-entropy of the non-pad targets; None without targets
    attention: AttentionMaps | None  # on request


class DecoderCache:
    """Per-layer key/value caches for decoding one position at a time."""

    def __init__(self, n_layers: int) -> None:
        self.self_attn = [KVCache() for _ in range(n_layers)]
        self.cross_attn = [KVCache(static=True) for _ in range(n_layers)]

    def __len__(self) -> int:
        """Number of target positions already decoded."""
        return len(self.self_attn[0])

    def reorder(self, rows: Tensor, sources: Tensor | None = None) -> None:
        """Keep decoder rows `rows` (beam reordering, dropping finished rows) in the self-attention
        caches and source rows `sources` in the cross-attention caches (None: all; a source's keys
        and values serve all its hypotheses, wherever beam search moves them)."""
        for cache in self.self_attn:
            cache.reorder(rows)
        if sources is not None:
            for cache in self.cross_attn:
                cache.reorder(sources)


def final_norm(cfg: TransformerConfig) -> nn.Module:
    """Pre-norm leaves the residual stream unnormalised, so a stack ends in a LayerNorm;
    post-norm layers already end in one."""
    return nn.LayerNorm(cfg.d_model) if cfg.norm_first else nn.Identity()


class Encoder(nn.Module):
    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        self.layers = nn.ModuleList(EncoderLayer(cfg) for _ in range(cfg.n_encoder_layers))
        self.final_norm = final_norm(cfg)

    def forward(self, x: Tensor, src_mask: Tensor) -> tuple[Tensor, list[Tensor]]:
        weights = []
        for layer in self.layers:
            x, w = layer(x, src_mask)
            weights.append(w)
        return self.final_norm(x), weights


class Decoder(nn.Module):
    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        self.layers = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.n_decoder_layers))
        self.final_norm = final_norm(cfg)

    def forward(
        self, x: Tensor, memory: Tensor, src_mask: Tensor, tgt_mask: Tensor | None, cache: DecoderCache | None = None
    ) -> tuple[Tensor, list[Tensor], list[Tensor]]:
        self_weights, cross_weights = [], []
        for i, layer in enumerate(self.layers):
            x, w_self, w_cross = layer(
                x,
                memory,
                src_mask,
                tgt_mask,
                cache.self_attn[i] if cache is not None else None,
                cache.cross_attn[i] if cache is not None else None,
            )
            self_weights.append(w_self)
            cross_weights.append(w_cross)
        return self.final_norm(x), self_weights, cross_weights


class Transformer(nn.Module):
    """Encoder-decoder Transformer over token ids.

    Special token ids (pad, bos, eos) are those of its config.
    """

    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.src_embedding = TokenEmbedding(cfg.src_vocab_size, cfg.d_model, cfg.pad_id)
        self.tgt_embedding = (
            self.src_embedding if cfg.share_embeddings else TokenEmbedding(cfg.tgt_vocab_size, cfg.d_model, cfg.pad_id)
        )
        self.positional = PositionalEncoding(cfg.d_model, cfg.max_len, learned=cfg.positional == "learned")
        self.embedding_dropout = Dropout(cfg.dropout, cfg.plain)
        self.encoder = Encoder(cfg)
        self.decoder = Decoder(cfg)
        self.output_proj = nn.Linear(cfg.d_model, cfg.tgt_vocab_size, bias=False)
        self._init_weights()
        if cfg.tie_output:
            self.output_proj.weight = self.tgt_embedding.weight

    def _init_weights(self) -> None:
        for name, p in self.named_parameters():
            if "embedding" in name:
                # std d^-0.5: times the sqrt(d) scale of TokenEmbedding gives unit-size inputs
                nn.init.normal_(p, std=self.cfg.d_model**-0.5)
            elif p.dim() > 1 and "positional" not in name:
                # the stacked W_Q, W_K, W_V each get the init of a separate (d, d) matrix
                for block in p.split(self.cfg.d_model) if "in_proj" in name else [p]:
                    nn.init.xavier_uniform_(block)
            elif name.endswith(".bias"):
                nn.init.zeros_(p)
        with torch.no_grad():
            self.src_embedding.weight[self.cfg.pad_id].zero_()
            self.tgt_embedding.weight[self.cfg.pad_id].zero_()

    @contextmanager
    def evaluating(self) -> Iterator[None]:
        """Eval mode (no dropout) inside the block, then the mode it was in, also after an error:
        evaluating in the middle of training must not leave dropout off."""
        was_training = self.training
        self.eval()
        try:
            yield
        finally:
            self.train(was_training)

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def attention_modules(self) -> dict[str, list[MultiHeadAttention]]:
        """Every attention module, by kind, layers in order."""
        encoder = [layer for layer in self.encoder.layers if isinstance(layer, EncoderLayer)]  # all of them, typed
        decoder = [layer for layer in self.decoder.layers if isinstance(layer, DecoderLayer)]
        return {
            "encoder_self": [layer.self_attn for layer in encoder],
            "decoder_self": [layer.self_attn for layer in decoder],
            "cross": [layer.cross_attn for layer in decoder],
        }

    @contextmanager
    def recording_attention(self) -> Iterator[dict[str, list[list[AttentionSteps]]]]:
        """Within it, every attention module keeps what each of its calls computed: kind -> per
        layer -> the calls in order (one each for a teacher-forced forward pass). Inference only:
        what is kept holds on to its graph."""
        modules = self.attention_modules()
        record: dict[str, list[list[AttentionSteps]]] = {kind: [[] for _ in layers] for kind, layers in modules.items()}
        for kind, layers in modules.items():
            for module, calls in zip(layers, record[kind]):
                module.recording = calls
        try:
            yield record
        finally:
            for module in (m for layers in modules.values() for m in layers):
                module.recording = None

    def mask_heads(self, heads: list[tuple[str, int, int]]) -> None:
        """Silence heads, given as (kind, layer, head) with layers and heads counted from 1,
        as the attention figures count them: their weights are multiplied by 0 before they
        mix the values. Replaces any earlier mask; an empty list restores every head.

        Raises:
            ValueError: a kind, layer or head that does not exist, naming the valid ranges.
        """
        modules = self.attention_modules()
        device = self.src_embedding.weight.device  # not a projection's: int8 ones hold no float weight
        for module in (m for layers in modules.values() for m in layers):
            module.head_gate = None
        for kind, layer, head in heads:
            if kind not in modules:
                raise ValueError(f"kind {kind!r} is not one of {', '.join(modules)}")
            if not 1 <= layer <= len(modules[kind]):
                raise ValueError(f"{kind} has layers 1-{len(modules[kind])}, not {layer}")
            if not 1 <= head <= self.cfg.n_heads:
                raise ValueError(f"layers have heads 1-{self.cfg.n_heads}, not {head}")
            module = modules[kind][layer - 1]
            if module.head_gate is None:
                module.head_gate = torch.ones(self.cfg.n_heads, device=device)
            module.head_gate[head - 1] = 0.0

    def encode(self, src: Tensor) -> tuple[Tensor, Tensor, list[Tensor]]:
        """
        Args:
            src: (B, S) source token ids, padded with pad_id.

        Returns:
            memory (B, S, d_model), src_mask (B, 1, 1, S) and the encoder self-attention
            weights of each layer (B, H, S, S).
        """
        src_mask = padding_mask(src, self.cfg.pad_id)
        x = self.embedding_dropout(self.positional(self.src_embedding(src)))
        memory, weights = self.encoder(x, src_mask)
        return memory, src_mask, weights

    def decoder_states(
        self, tgt_in: Tensor, memory: Tensor, src_mask: Tensor, cache: DecoderCache | None = None
    ) -> DecoderOutput:
        """The decoder's final states for each target position, before the output layer
        (training's loss starts from them: model/output_loss.py).

        Args:
            tgt_in: (B, T) decoder input ids (bos + target prefix). With a cache, only the
                new positions, usually T = 1; earlier positions come from the cache.
            memory: (B / G, S, d_model) encoder output; src_mask: (B / G, 1, 1, S): one row for
                every G target rows (beam search's hypotheses of a sentence share it; else G = 1).
            cache: updated in place with the keys/values of the new positions.
        """
        offset = len(cache) if cache is not None else 0
        # Without a cache: causal + padding mask. With one, the new positions are the last
        # ones and decoding prefixes are never padded, so only causality among new positions
        # matters; for the usual single step nothing is masked at all.
        if cache is None:
            tgt_mask = decoder_self_attention_mask(tgt_in, self.cfg.pad_id)
        elif tgt_in.size(1) > 1:
            tgt_mask = causal_mask(tgt_in.size(1), offset + tgt_in.size(1), tgt_in.device)
        else:
            tgt_mask = None
        x = self.embedding_dropout(self.positional(self.tgt_embedding(tgt_in), offset))
        return DecoderOutput(*self.decoder(x, memory, src_mask, tgt_mask, cache))

    def decode(
        self, tgt_in: Tensor, memory: Tensor, src_mask: Tensor, cache: DecoderCache | None = None
    ) -> tuple[Tensor, list[Tensor], list[Tensor]]:
        """Next-token logits for each target position: `decoder_states` through the output layer.

        Returns:
            logits (B, T, tgt_vocab_size), decoder self-attention weights per layer
            (B, H, T, T_total) and cross-attention weights per layer (B, H, T, S).
        """
        states, self_weights, cross_weights = self.decoder_states(tgt_in, memory, src_mask, cache)
        return self.output_proj(states), self_weights, cross_weights

    def new_cache(self) -> DecoderCache:
        return DecoderCache(self.cfg.n_decoder_layers)

    def forward(
        self,
        src: Tensor,
        tgt_in: Tensor,
        targets: Tensor | None = None,
        label_smoothing: float = 0.0,
        return_attention: bool = False,
        consistency: float = 0.0,
    ) -> TransformerOutput:
        """Teacher-forced pass over (B, S) source and (B, T) decoder input ids.

        Without `targets`: the logits (B, T, tgt_vocab_size). With `targets` (B, T): the
        cross-entropy (label-smoothed by `label_smoothing`) summed over the targets that are
        not padding, and no logits: training needs only the loss, and model/output_loss.py
        computes it without ever holding the (B, T, tgt_vocab_size) logits and their gradient
        side by side. All attention maps on request.

        With `targets` and `consistency` > 0 (R-Drop): the batch goes through twice, as one batch
        of twice the rows whose copies each draw their own dropout masks, and the loss is the two
        passes' mean cross-entropy plus `consistency` / 4 times their symmetric KL divergence
        (model/output_loss.py); the attention maps then hold both copies.
        """
        if consistency > 0 and targets is not None:
            src, tgt_in, targets = (torch.cat([ids, ids]) for ids in (src, tgt_in, targets))  # (2B, ...)
        memory, src_mask, enc_weights = self.encode(src)
        states, self_weights, cross_weights = self.decoder_states(tgt_in, memory, src_mask)
        attention = AttentionMaps(enc_weights, self_weights, cross_weights) if return_attention else None
        if targets is None:
            return TransformerOutput(self.output_proj(states), None, attention)
        real = targets != self.cfg.pad_id  # (B, T); padded positions are left out, not masked
        # row-major: the second copy's positions follow the first's in the same order
        loss_of = plain_output_cross_entropy if self.cfg.plain else output_cross_entropy
        loss = loss_of(states[real], self.output_proj.weight, targets[real], label_smoothing, consistency)
        return TransformerOutput(None, loss, attention)
