"""The attention maps of sentences and their translations, every layer, head and kind.

With a translation as decoder input, one teacher-forced forward pass returns every layer's
weights of the three kinds (model.AttentionMaps) and, on request, the values each attention
computed them from and with (model.AttentionSteps: queries, keys, values, outputs). Rows are
queries, columns keys. Decoder rows are labelled with the piece produced at that position (the
translation's pieces, then </s>), so a cross-attention row reads "while producing this piece,
the decoder looked here". viz/ draws them; viz/attention_store.py stores them for the
ATTENTION tab.
"""

from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field

import torch
from torch import Tensor

from data import Tokenizer
from data.batching import pad
from model import AttentionSteps, Transformer


@dataclass
class SentenceAttention:
    """All attention maps of one translated sentence, trimmed to its real length."""

    source: str
    translation: str
    reference: str | None
    src_pieces: list[str]  # (S,)
    tgt_in_pieces: list[str]  # (T,) <s> + translation pieces: what the decoder reads
    tgt_out_pieces: list[str]  # (T,) translation pieces + </s>: what it produces
    maps: dict[str, list[Tensor]] = field(default_factory=dict)  # kind -> per layer (H, T_q, T_k)
    # kind -> per layer: q, k, v, heads (H, T, d_head) and output (T_q, d_model), real lengths;
    # empty unless asked for
    inside: dict[str, list[AttentionSteps]] = field(default_factory=dict)


@torch.no_grad()
def collect_attention(
    model: Transformer,
    tokenizer: Tokenizer,
    sentences: list[str],
    translations: list[list[int]],
    references: list[str] | None = None,
    inside: bool = False,
) -> list[SentenceAttention]:
    """Attention maps for sentences and their translations (target ids without bos/eos), and
    with `inside` the values inside each attention (the ATTENTION tab's inside view; about as
    many numbers again as the maps, so only where they are shown).

    All sentences go through the model as one padded batch; each map is then cut to its
    sentence's real length, which drops only padding rows and columns.
    """
    limit = model.cfg.max_len
    src_ids = [ids[:limit] for ids in tokenizer.encode_src(sentences)]
    tgt_in_ids = [[model.cfg.bos_id, *ids][:limit] for ids in translations]
    device = next(model.parameters()).device
    # kind -> per layer -> calls
    recording: AbstractContextManager[dict] = model.recording_attention() if inside else nullcontext({})
    with model.evaluating(), recording as record:
        attention = model(pad(src_ids).to(device), pad(tgt_in_ids).to(device), return_attention=True).attention

    result = []
    for i, sentence in enumerate(sentences):
        s, t = len(src_ids[i]), len(tgt_in_ids[i])
        real = {"encoder_self": (s, s), "decoder_self": (t, t), "cross": (t, s)}  # (T_q, T_k) of each kind
        tgt_in = tokenizer.tgt_pieces(tgt_in_ids[i])
        result.append(
            SentenceAttention(
                source=sentence,
                translation=tokenizer.decode_tgt([translations[i]])[0],
                reference=references[i] if references else None,
                src_pieces=tokenizer.src_pieces(src_ids[i]),
                tgt_in_pieces=tgt_in,
                tgt_out_pieces=tgt_in[1:] + ["</s>"],
                maps={
                    kind: [w[i, :, : real[kind][0], : real[kind][1]].float().cpu() for w in layers]  # (H, T_q, T_k)
                    for kind, layers in attention._asdict().items()
                },
                inside={
                    kind: [_trimmed(calls[0], i, *real[kind]) for calls in layers] for kind, layers in record.items()
                },
            )
        )
    return result


def _trimmed(steps: AttentionSteps, row: int, t_q: int, t_k: int) -> AttentionSteps:
    """One sentence's values of a batched attention call, cut to its real lengths."""
    return AttentionSteps(
        query=steps.query[row, :, :t_q].float().cpu(),  # (H, T_q, d_head)
        key=steps.key[row, :, :t_k].float().cpu(),  # (H, T_k, d_head)
        value=steps.value[row, :, :t_k].float().cpu(),
        heads=steps.heads[row, :, :t_q].float().cpu(),  # (H, T_q, d_head)
        output=steps.output[row, :t_q].float().cpu(),
    )  # (T_q, d_model)
