"""Decoding: turn source token ids into target token ids with a trained model.

Both searches decode one position per step on top of the key/value cache, so a step costs
one position's worth of decoder work instead of re-running the whole prefix. With
`use_cache=False` they re-run the prefix instead; that path exists to check the cache and to
measure what it saves.
"""
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor

from model.transformer import DecoderCache, Transformer


@dataclass
class Hypothesis:
    tokens: list[int]  # target ids without bos/eos
    score: float  # what the search ranks by: log_prob / length ** length_penalty
    log_prob: float  # sum of the log-probabilities of the tokens and the final eos


def max_output_length(model: Transformer, src: Tensor, ratio: float, extra: int) -> int:
    """Longest output to allow: ratio * longest source + extra, capped by the model's max_len."""
    src_len = int((src != model.cfg.pad_id).sum(1).max())
    return max(1, min(int(ratio * src_len) + extra, model.cfg.max_len - 1))


def _next_log_probs(model: Transformer, history: Tensor, memory: Tensor, src_mask: Tensor,
                    cache: DecoderCache | None) -> Tensor:
    """Log-probabilities (N, V) of the token after `history` (N, t), bos included."""
    if cache is not None:
        logits, _, _ = model.decode(history[:, -1:], memory, src_mask, cache)
    else:
        logits, _, _ = model.decode(history, memory, src_mask)
    return F.log_softmax(logits[:, -1].float(), dim=-1)


def _greedy(model: Transformer, memory: Tensor, src_mask: Tensor, max_len: int, use_cache: bool) -> list[Hypothesis]:
    batch, device = memory.size(0), memory.device
    BOS_ID, EOS_ID, PAD_ID = model.cfg.bos_id, model.cfg.eos_id, model.cfg.pad_id
    cache = model.new_cache() if use_cache else None
    history = torch.full((batch, 1), BOS_ID, dtype=torch.long, device=device)
    log_prob = torch.zeros(batch, device=device)
    finished = torch.zeros(batch, dtype=torch.bool, device=device)
    for step in range(max_len + 1):
        log_probs = _next_log_probs(model, history, memory, src_mask, cache)
        if step == max_len:  # out of room: end every sentence here
            token = torch.full((batch,), EOS_ID, dtype=torch.long, device=device)
        else:
            token = log_probs.argmax(-1)
        token = token.masked_fill(finished, PAD_ID)
        log_prob += log_probs.gather(1, token[:, None])[:, 0].masked_fill(finished, 0.0)
        history = torch.cat([history, token[:, None]], dim=1)
        finished |= token == EOS_ID
        if finished.all():
            break
    hypotheses = []
    for row, lp in zip(history[:, 1:].tolist(), log_prob.tolist()):
        tokens = row[: row.index(EOS_ID)] if EOS_ID in row else row
        hypotheses.append(Hypothesis(tokens, lp, lp))
    return hypotheses


@torch.no_grad()
def greedy_search(model: Transformer, src: Tensor, max_len: int, use_cache: bool = True) -> list[Hypothesis]:
    """The most likely next token at every step.

    Args:
        src: (B, S) padded source ids.
        max_len: most target tokens per sentence (eos not counted).

    Returns:
        one hypothesis per sentence (its score is its log-probability).
    """
    memory, src_mask, _ = model.encode(src)
    return _greedy(model, memory, src_mask, max_len, use_cache)


@torch.no_grad()
def beam_search(model: Transformer, src: Tensor, beam_size: int, max_len: int, length_penalty: float = 1.0,
                n_best: int = 1, use_cache: bool = True) -> list[list[Hypothesis]]:
    """Batched beam search.

    Each sentence keeps `beam_size` open hypotheses. At every step the best 2K extensions of
    a sentence's beams are ranked; those ending in eos are finished, and the best K that do
    not end continue. A sentence is done once it holds K finished
    hypotheses, and leaves the batch so that it costs nothing more.

    The greedy hypothesis competes too (one more decoder row per sentence): plain beam
    search can prune greedy's path when other prefixes look better half-way and then end
    worse, so without it the result could score below greedy's under the model.

    Args:
        src: (B, S) padded source ids.
        max_len: most target tokens per hypothesis (eos not counted).
        length_penalty: alpha in score = log_prob / length ** alpha (length counts eos);
            0 ranks by raw log-probability, 1 by log-probability per token.
        n_best: hypotheses returned per sentence (at most beam_size), best first.

    Returns:
        for each sentence, its n_best hypotheses.
    """
    k = beam_size
    BOS_ID, EOS_ID = model.cfg.bos_id, model.cfg.eos_id
    n_best = min(n_best, k)
    device = src.device
    memory, src_mask, _ = model.encode(src)
    batch = src.size(0)
    greedy = _greedy(model, memory, src_mask, max_len, use_cache)
    # every sentence's K beams sit next to each other: row b*K + j is beam j of sentence b
    memory = memory.repeat_interleave(k, dim=0)  # (B*K, S, d_model)
    src_mask = src_mask.repeat_interleave(k, dim=0)  # (B*K, 1, 1, S)
    cache = model.new_cache() if use_cache else None
    history = torch.full((batch * k, 1), BOS_ID, dtype=torch.long, device=device)
    # only beam 0 is live at the start, so the first step does not pick K copies of one token
    beam_scores = torch.full((batch, k), float("-inf"), device=device)
    beam_scores[:, 0] = 0.0
    active = list(range(batch))  # original index of each sentence still in the batch
    finished: list[list[Hypothesis]] = [[] for _ in range(batch)]

    for step in range(max_len + 1):
        n = len(active)
        log_probs = _next_log_probs(model, history, memory, src_mask, cache)  # (n*K, V)
        vocab = log_probs.size(-1)
        if step == max_len:  # out of room: only eos may follow
            forced = torch.full_like(log_probs, float("-inf"))
            forced[:, EOS_ID] = log_probs[:, EOS_ID]
            log_probs = forced
        candidates = (beam_scores[:, :, None] + log_probs.view(n, k, vocab)).view(n, k * vocab)
        cand_scores, cand_index = candidates.topk(2 * k, dim=1)  # (n, 2K), best first
        cand_beam = torch.div(cand_index, vocab, rounding_mode="floor")
        cand_token = cand_index % vocab
        ends = cand_token == EOS_ID

        # finish the candidates that end in eos
        ending = (ends & torch.isfinite(cand_scores)).nonzero().tolist()
        if ending:
            prefixes = history[:, 1:].tolist()
            for row, rank in ending:
                prefix = prefixes[row * k + int(cand_beam[row, rank])]
                log_prob = float(cand_scores[row, rank])
                length = len(prefix) + 1
                finished[active[row]].append(Hypothesis(prefix, log_prob / length ** length_penalty, log_prob))
        done_rows = [row for row in range(n) if len(finished[active[row]]) >= k]

        # the best K candidates that go on
        cand_scores = cand_scores.masked_fill(ends, float("-inf"))
        beam_scores, keep = cand_scores.topk(k, dim=1)  # (n, K)
        origin = (cand_beam.gather(1, keep) + torch.arange(n, device=device)[:, None] * k).view(-1)
        next_token = cand_token.gather(1, keep).view(-1, 1)
        history = torch.cat([history.index_select(0, origin), next_token], dim=1)
        if cache is not None:
            cache.reorder(origin)

        if done_rows or step == max_len:
            done = set(done_rows)
            live = [row for row in range(n) if row not in done] if step < max_len else []
            if not live:
                break
            rows = torch.tensor([r * k + j for r in live for j in range(k)], device=device)
            history, memory, src_mask = history[rows], memory[rows], src_mask[rows]
            beam_scores = beam_scores[torch.tensor(live, device=device)]
            if cache is not None:
                cache.reorder(rows)
            active = [active[row] for row in live]

    for hyps, g in zip(finished, greedy):
        if all(h.tokens != g.tokens for h in hyps):
            hyps.append(Hypothesis(g.tokens, g.log_prob / (len(g.tokens) + 1) ** length_penalty, g.log_prob))
    return [sorted(hyps, key=lambda h: h.score, reverse=True)[:n_best] for hyps in finished]
