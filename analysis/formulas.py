"""The formulas of the reading guide (docs/guide.md), each computed by hand from a trained
model's own weights on a sentence and set beside what the model computes there.

    .venv/bin/python -m analysis.formulas -c runs/RUN "Ein Hund rennt durch den Schnee."
    .venv/bin/python -m analysis.formulas -c runs/RUN --section masks "Ein Hund rennt."

Sections, in the guide's order: qkv, scaled (scaled dot-product attention and sqrt(d_k)), masks
(padding and look-ahead), heads (split and merged), cross (self- against cross-attention),
positions, layers, loss, decoding. Every "model:" line is the model's own result and every
"by hand:" line the formula's, so that a reader sees they are one computation.
"""

import argparse
import math
import sys

import torch
import torch.nn.functional as F
from torch import Tensor

from inference.checkpoint import load_for_inference, saved_settings
from model import Transformer
from model.attention import merge_heads
from model.embedding import sinusoid_table
from model.masks import padding_mask
from model.search import beam_search, greedy_search
from utils.errors import UserError

LONGER = "Zwei junge Männer spielen auf einer Wiese mit einem roten Ball Fußball."  # a batch-mate to pad
SECTIONS = ("qkv", "scaled", "masks", "heads", "cross", "positions", "layers", "loss", "decoding")


def numbers(x: Tensor, n: int = 4) -> str:
    return "[" + ", ".join(f"{v:+.3f}" for v in x.flatten()[:n].tolist()) + (", ...]" if x.numel() > n else "]")


class Walk:
    """One sentence through one model, with what each section prints."""

    def __init__(self, model: Transformer, tokenizer, sentence: str, label_smoothing: float, rdrop: float) -> None:
        """`label_smoothing` and `rdrop`: the run's train.label_smoothing and train.rdrop, as it trained."""
        self.model, self.tokenizer, self.cfg = model, tokenizer, model.cfg
        self.label_smoothing, self.rdrop = label_smoothing, rdrop
        self.src = torch.tensor([tokenizer.encode_src([sentence])[0]])  # (1, S)
        self.src_pieces = tokenizer.src_pieces(self.src[0].tolist())
        [found] = greedy_search(model, self.src, 2 * self.src.size(1) + 10)
        self.out = found.tokens
        self.tgt_in = torch.tensor([[self.cfg.bos_id, *self.out]])  # (1, T): bos + translation
        self.tgt_pieces = tokenizer.tgt_pieces(self.out) + ["</s>"]
        with model.recording_attention() as record:
            self.attention = model(self.src, self.tgt_in, return_attention=True).attention
        self.record = record
        print(f"source pieces: {self.src_pieces}\ntranslation: {tokenizer.decode_tgt([self.out])[0]}\n")

    def first_layer_input(self) -> Tensor:
        """What the first encoder layer's self-attention reads: embedded, positioned, normed under pre-norm."""
        x = self.model.positional(self.model.src_embedding(self.src))  # (1, S, d_model)
        return self.model.encoder.layers[0].self_attn_residual.norm(x) if self.cfg.norm_first else x

    def qkv(self) -> None:
        attn, x, d = self.model.encoder.layers[0].self_attn, self.first_layer_input(), self.cfg.d_model
        w_q, w_k, w_v = attn.in_proj.weight.split(d)  # each (d_model, d_model)
        b_q, b_k, b_v = attn.in_proj.bias.split(d)
        q, k, v = x @ w_q.T + b_q, x @ w_k.T + b_k, x @ w_v.T + b_v  # (1, S, d_model)
        steps = self.record["encoder_self"][0][0]
        print(f"x: {tuple(x.shape)} (batch, source pieces, d_model); W_Q, W_K, W_V: {tuple(w_q.shape)} each")
        for name, mine, theirs in (("q", q, steps.query), ("k", k, steps.key), ("v", v, steps.value)):
            head1 = theirs[0, 0]  # (S, d_head): head 1's share of the features
            print(f"{name} of {self.src_pieces[0]!r}, head 1 by hand: {numbers(mine[0, 0, : attn.d_head])}")
            print(f"{name} of {self.src_pieces[0]!r}, head 1 model:   {numbers(head1[0])}")
        cos = F.cosine_similarity(steps.key[0, 0], steps.value[0, 0], dim=-1)  # (S,)
        print(f"k and v of the same piece differ (cosine, head 1): {numbers(cos, 6)}")
        print("  what a piece is matched by (k) is not what it passes on (v)")

    def scaled(self) -> None:
        steps, weights = self.record["encoder_self"][0][0], self.attention.encoder_self[0]
        q, k = steps.query[0, 0], steps.key[0, 0]  # (S, d_head), head 1
        d_k = q.size(-1)
        scores = q @ k.T  # (S, S)
        by_hand = F.softmax(scores / math.sqrt(d_k), dim=-1)
        i = min(1, len(self.src_pieces) - 1)
        print(f"query {self.src_pieces[i]!r}, head 1: q k^T = {numbers(scores[i], 6)}")
        print(f"/ sqrt(d_k = {d_k}) = {math.sqrt(d_k):.2f}, softmax by hand: {numbers(by_hand[i], 6)}")
        print(f"the model's weights:                  {numbers(weights[0, 0, i], 6)}")
        print(f"largest difference, all queries: {(by_hand - weights[0, 0]).abs().max().item():.1e}")
        unscaled = F.softmax(scores, dim=-1).max(-1).values.mean()
        print(
            f"why sqrt(d_k): q k^T has standard deviation {scores.std().item():.2f} here, "
            f"{(scores / math.sqrt(d_k)).std().item():.2f} scaled; without the scale the largest weight of a row "
            f"averages {unscaled.item():.2f} instead of {by_hand.max(-1).values.mean().item():.2f} (a sharper softmax, "
            "smaller gradients)"
        )

    def masks(self) -> None:
        longer = self.tokenizer.encode_src([LONGER])[0]
        width = max(len(longer), self.src.size(1))
        batch = torch.full((2, width), self.cfg.pad_id)
        batch[0, : self.src.size(1)], batch[1, : len(longer)] = self.src[0], torch.tensor(longer)
        mask = padding_mask(batch, self.cfg.pad_id)  # (2, 1, 1, S)
        alone, _, alone_weights = self.model.encode(self.src)
        padded, _, padded_weights = self.model.encode(batch)
        s = self.src.size(1)
        print(f"padding mask of the sentence in a batch of two: {mask[0, 0, 0].int().tolist()} (1: may attend)")
        pad_weight = padded_weights[0][0, :, :s, s:].abs().max().item() if width > s else 0.0
        print(f"weight on its padding, every head and query of layer 1: {pad_weight} (exactly 0)")
        difference = (padded[0, :s] - alone[0]).abs().max().item()
        print(f"its encoder output padded vs alone: largest difference {difference:.1e}")
        self_weights = self.attention.decoder_self[0][0, 0]  # (T, T) layer 1, head 1
        n = min(5, self_weights.size(0))
        print(f"look-ahead: decoder self-attention, layer 1, head 1, first {n} target positions (rows see columns):")
        for row, piece in zip(self_weights[:n, :n], ["<s>", *self.tgt_pieces][:n]):
            print(f"  {piece:>12} " + " ".join(f"{w:.2f}" for w in row.tolist()))

    def heads(self) -> None:
        attn = self.model.encoder.layers[0].self_attn
        steps = self.record["encoder_self"][0][0]
        merged = merge_heads(steps.heads)
        print(
            f"split: q {tuple(steps.query.shape)} = (batch, heads, pieces, d_head) from (batch, pieces, d_model): "
            f"{self.cfg.n_heads} heads of {attn.d_head} features"
        )
        print(f"each head's output {tuple(steps.heads.shape)}, merged {tuple(merged.shape)}, projected by W_O")
        by_hand = attn.out_proj(merged)
        difference = (by_hand - steps.output).abs().max().item()
        print(f"W_O(merged) by hand vs the layer's output: largest difference {difference:.1e}")
        weights = self.attention.encoder_self[0][0]  # (H, S, S)
        i = min(1, len(self.src_pieces) - 1)
        looks = [self.src_pieces[j] for j in weights[:, i].argmax(-1).tolist()]
        print(f"where each head of layer 1 looks most from {self.src_pieces[i]!r}: {looks}")

    def cross(self) -> None:
        steps = self.record["cross"][-1][0]
        print(
            f"self-attention: queries, keys and values from one sequence; cross-attention: queries from the "
            f"decoder {tuple(steps.query.shape)}, keys and values from the encoder {tuple(steps.key.shape)}"
        )
        weights = self.attention.cross[-1][0].mean(0)  # (T, S) last layer, mean of heads
        print("each target piece and the source piece it attends to most (last layer, mean of heads):")
        for piece, row in zip(self.tgt_pieces, weights):
            j = int(row.argmax())
            print(f"  {piece:>12} -> {self.src_pieces[j]:<12} {row[j].item():.2f}")

    def positions(self) -> None:
        table = sinusoid_table(4, self.cfg.d_model)
        print("PE[pos, 2i] = sin(pos / 10000^(2i/d)), PE[pos, 2i+1] = cos(...): positions 0-3, features 0-3:")
        for pos in range(4):
            print(f"  {pos}: {numbers(table[pos])}")
        x = self.model.src_embedding(self.src)
        added = self.model.positional(x) - x
        difference = (added[0, :4] - table[: min(4, x.size(1))]).abs().max().item()
        print(f"what the model adds to the embeddings: largest difference from the table {difference:.1e}")

    def layers(self) -> None:
        x = self.model.positional(self.model.src_embedding(self.src))
        mask = padding_mask(self.src, self.cfg.pad_id)
        print("size of the residual stream (mean norm a piece) through the encoder, and what each layer adds:")
        for n, layer in enumerate(self.model.encoder.layers, 1):
            after, _ = layer(x, mask)
            print(f"  layer {n}: {x.norm(dim=-1).mean().item():6.2f} -> {after.norm(dim=-1).mean().item():6.2f}")
            x = after

    def loss(self) -> None:
        targets = torch.tensor([[*self.out, self.cfg.eos_id]])  # (1, T): the translation and eos
        eps = self.label_smoothing
        loss = self.model(self.src, self.tgt_in, targets, label_smoothing=eps).loss
        log_probs = F.log_softmax(self.model(self.src, self.tgt_in).logits[0], -1)  # (T, V)
        nll = -log_probs.gather(1, targets[0][:, None])[:, 0]  # (T,)
        uniform = -log_probs.mean(-1)  # (T,): -log p averaged over all V pieces
        print(
            "-log p of each target piece: " + ", ".join(f"{p} {v:.2f}" for p, v in zip(self.tgt_pieces, nll.tolist()))
        )
        own, spread = ((1 - eps) * nll).sum(), (eps * uniform).sum()
        print(
            f"(1 - eps) sum of -log p_y = {own.item():.4f}   (the right pieces; eps {eps}, the run's label smoothing)"
        )
        print(
            f"eps sum of mean_j(-log p_j) = {spread.item():.4f}   (every piece of the vocabulary: "
            f"-log p of a wrong piece is large, mean {uniform.mean().item():.2f} a position)"
        )
        print(f"label-smoothed, by hand: {(own + spread).item():.4f}")
        print(f"the model's loss: {loss.item():.4f} (summed over the {targets.size(1)} target pieces)")
        print(f"a piece's share, as training logs it (loss / target pieces): {loss.item() / targets.size(1):.4f}")
        if self.rdrop > 0:
            print(
                f"R-Drop (train.rdrop {self.rdrop}): training gives each batch twice, with other dropout, and its "
                f"loss is (CE + CE') / 2 + {self.rdrop} / 4 (KL(p||p') + KL(p'||p)); here, without dropout, the "
                "two passes agree: the KL terms are 0 and the loss is the one above"
            )
        else:
            print("R-Drop (train.rdrop): off in this run, so the loss is the label-smoothed one alone")

    def decoding(self) -> None:
        memory, src_mask, _ = self.model.encode(self.src)
        cache, history = self.model.new_cache(), torch.tensor([[self.cfg.bos_id]])
        print("greedy, one position a step on the key/value cache: the three likeliest next pieces")
        for _ in range(min(6, len(self.out) + 1)):
            logits, _, _ = self.model.decode(history[:, -1:], memory, src_mask, cache)
            probs = F.softmax(logits[0, -1], -1)
            top = probs.topk(3)
            names = self.tokenizer.tgt_pieces(top.indices.tolist())
            print(
                "  "
                + ", ".join(f"{n} {p:.2f}" for n, p in zip(names, top.values.tolist()))
                + f"   (cache: {len(cache)} positions)"
            )
            history = torch.cat([history, top.indices[:1][None]], 1)
        print("beam search (beam 5), its 3 best with log p / length:")
        for hyp in beam_search(self.model, self.src, 5, 2 * self.src.size(1) + 10, n_best=3)[0]:
            print(f"  {hyp.score:+.3f}  {self.tokenizer.decode_tgt([hyp.tokens])[0]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-c", "--checkpoint", required=True, help="a run folder or checkpoint")
    parser.add_argument("--section", choices=SECTIONS, action="append", help="only these (default: all)")
    parser.add_argument("sentence", help="a sentence in the run's source language")
    args = parser.parse_args()
    try:
        model, tokenizer, meta = load_for_inference(args.checkpoint)
    except UserError as e:
        sys.exit(f"error: {e}")
    if not tokenizer.encode_src([args.sentence])[0]:
        sys.exit("error: the sentence has no pieces the model reads")
    torch.set_grad_enabled(False)
    trained = saved_settings(meta, "train")  # the loss as the run trained it
    if not trained:  # train.py saves the run's settings in every checkpoint
        sys.exit(f"error: {args.checkpoint} does not hold its run's configuration (not saved by train.py?)")
    walk = Walk(model, tokenizer, args.sentence, trained["label_smoothing"], trained.get("rdrop", 0.0))
    for section in args.section or SECTIONS:
        print(f"== {section} ==")
        getattr(walk, section)()
        print()


if __name__ == "__main__":
    main()
