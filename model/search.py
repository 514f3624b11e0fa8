"""Decoding: turn source token ids into target token ids with a trained model.

Both searches decode one position per step on top of the key/value cache, so a step costs
one position's worth of decoder work instead of re-running the whole prefix. With
`use_cache=False` they re-run the prefix instead; that path exists to check the cache and to
measure what it saves.

Every sentence has its own length limit (from its own source length), so a translation never
depends on what else is in the batch. Pad, bos and unk are never produced, nor an empty
translation (eos first: CTranslate2's min_decoding_length of 1), nor any sequence the caller
suppresses (CTranslate2's suppress_sequences: inference/loop_guard.py searches a looping
sentence again without its loop).
"""

from collections.abc import Sequence
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


def length_limits(src_len: Tensor, ratio: float, extra: int, max_len: int) -> Tensor:
    """Most target tokens (eos not counted) for sources of `src_len` pieces: ratio * the length +
    extra, at least 1, below max_len. (B,) -> (B,)."""
    return (ratio * src_len).long().add(extra).clamp(1, max_len - 1)


def output_limits(model: Transformer, src: Tensor, ratio: float, extra: int) -> Tensor:
    """`length_limits` of each sentence of a padded (B, S) batch, under the model's max_len: (B,)."""
    return length_limits((src != model.cfg.pad_id).sum(1), ratio, extra, model.cfg.max_len)


def _limits(max_len: int | Tensor, batch: int, device: torch.device) -> Tensor:
    """One limit per sentence: a tensor as given, or the same int for all."""
    if isinstance(max_len, Tensor):
        return max_len.to(device)
    return torch.full((batch,), max_len, dtype=torch.long, device=device)


def suppressed(logits: Tensor, history: Tensor, suppress: Sequence[Sequence[int]]) -> None:
    """-inf, in place, for each token that would complete a sequence of `suppress` (N, V): its
    last token where the row's `history` (N, t) ends with the rest of it (always, for a sequence
    of one token), as CTranslate2's suppress_sequences."""
    for sequence in suppress:
        *before, last = sequence
        if not before:
            logits[:, last] = float("-inf")
        elif history.size(1) > len(before):  # bos and at least len(before) tokens
            ends_so = (history[:, -len(before) :] == history.new_tensor(before)).all(1)  # (N,)
            logits[ends_so, last] = float("-inf")


def _next_log_probs(
    model: Transformer,
    history: Tensor,
    memory: Tensor,
    src_mask: Tensor,
    cache: DecoderCache | None,
    at_limit: Tensor,
    suppress: Sequence[Sequence[int]] = (),
) -> Tensor:
    """Log-probabilities (N, V) of the token after `history` (N, t), bos included.

    Tokens that a translation may not contain get -inf, and eos as the first token (an empty
    translation; in beam search it would also count as one of the K finished hypotheses that end
    the search, before a better one ends); rows `at_limit` (N,) may only end. The
    others keep the model's own log-probabilities (not renormalised), so a hypothesis scores
    exactly what the model gives it; but for a token that would complete a sequence of
    `suppress`, taken out before the softmax as CTranslate2 does, so that both engines search
    alike.
    """
    if cache is not None:
        logits, _, _ = model.decode(history[:, -1:], memory, src_mask, cache)
    else:
        logits, _, _ = model.decode(history, memory, src_mask)
    logits = logits[:, -1].float()
    suppressed(logits, history, suppress)  # before the softmax, as CTranslate2: the others renormalised
    # written over the logits, which nothing reads again: a step's largest tensor (beams x the
    # vocabulary) is not allocated and written a second time; the same numbers (tests/test_search.py)
    log_probs = torch.log_softmax(logits, dim=-1, out=logits)
    cfg = model.cfg
    log_probs[:, [cfg.pad_id, cfg.bos_id, cfg.unk_id]] = float("-inf")
    if history.size(1) == 1:  # bos alone
        log_probs[:, cfg.eos_id] = float("-inf")
    if at_limit.any():
        eos = log_probs[at_limit, cfg.eos_id]
        log_probs[at_limit] = float("-inf")
        log_probs[at_limit, cfg.eos_id] = eos
    return log_probs


def plain_best_extensions(log_probs: Tensor, beam_scores: Tensor, count: int) -> tuple[Tensor, Tensor, Tensor]:
    """The `count` best extensions of each sentence's beams, best first: one top-k over the score
    beam_scores + log_probs of every (beam, token) pair. The algorithm as it is taught;
    `best_extensions` finds the same faster.

    Args:
        log_probs: (n, K, V) each beam's next-token log-probabilities.
        beam_scores: (n, K) each beam's score so far.
        count: extensions kept per sentence, at most K x V.

    Returns:
        scores (n, count), and the beam (n, count) and token (n, count) each extends.
    """
    n, _, vocab = log_probs.shape
    scores, pair = (beam_scores[:, :, None] + log_probs).view(n, -1).topk(count, dim=1)  # (n, count) of K x V
    return scores, pair // vocab, pair % vocab


BLOCK = 64  # tokens a block of best_extensions' first round holds


def best_extensions(log_probs: Tensor, beam_scores: Tensor, count: int) -> tuple[Tensor, Tensor, Tensor]:
    """The `count` best extensions of each sentence's beams, best first: equal to
    `plain_best_extensions`'s top-k over every (beam, token) pair, found in two rounds.

    The vocabulary of each beam is cut into blocks of BLOCK tokens, and each block is ranked by
    its best score. An extension outside the sentence's `count` best blocks is not among its
    `count` best extensions: each of those blocks holds a better one (its best). So the second
    round ranks only those blocks' tokens. A top-k over long rows costs per element, a maximum
    over blocks far less: on a 2-core Xeon, 32 sentences x 5 beams x 8,000 tokens, 0.6 ms
    against 1.9 for a top-k over every beam's row, about a tenth of a beam-5 step. Arguments
    and results as `plain_best_extensions`'s.
    """
    n, k, vocab = log_probs.shape
    block = min(BLOCK, vocab)
    if vocab % block:  # the last block filled up with tokens that can never rank
        log_probs = F.pad(log_probs, (0, block - vocab % block), value=float("-inf"))
    blocks_per_beam = log_probs.size(2) // block
    blocks = log_probs.reshape(n, k * blocks_per_beam, block)  # block j of beam b is row b * blocks_per_beam + j
    # 1. each sentence's `count` best blocks by their best extension
    block_best = (beam_scores[:, :, None] + blocks.amax(-1).view(n, k, blocks_per_beam)).view(n, -1)
    top_blocks = block_best.topk(min(count, block_best.size(1)), dim=1).indices  # (n, C)
    # 2. the `count` best of their tokens
    members = blocks.gather(1, top_blocks[:, :, None].expand(-1, -1, block))  # (n, C, block)
    candidates = beam_scores.gather(1, top_blocks // blocks_per_beam)[:, :, None] + members  # (n, C, block)
    scores, position = candidates.view(n, -1).topk(count, dim=1)  # (n, count)
    chosen_block = top_blocks.gather(1, position // block)
    token = (chosen_block % blocks_per_beam) * block + position % block
    # a padded token scores -inf, so no live hypothesis takes it; a dead one's is still an id
    return scores, chosen_block // blocks_per_beam, token.clamp_(max=vocab - 1)


@torch.inference_mode()
def greedy_search(
    model: Transformer,
    src: Tensor,
    max_len: int | Tensor,
    use_cache: bool = True,
    suppress: Sequence[Sequence[int]] = (),
) -> list[Hypothesis]:
    """The most likely next token at every step.

    Args:
        src: (B, S) padded source ids.
        max_len: most target tokens (eos not counted): one int, or one per sentence (B,).
        suppress: token sequences no translation may hold (`suppressed`).

    Returns:
        one hypothesis per sentence (its score is its log-probability).
    """
    memory, src_mask, _ = model.encode(src)
    batch, device = src.size(0), src.device
    bos, eos, pad = model.cfg.bos_id, model.cfg.eos_id, model.cfg.pad_id
    limits = _limits(max_len, batch, device)
    cache = model.new_cache() if use_cache else None
    history = torch.full((batch, 1), bos, dtype=torch.long, device=device)
    log_prob = torch.zeros(batch, device=device)
    finished = torch.zeros(batch, dtype=torch.bool, device=device)
    for step in range(int(limits.max()) + 1):
        log_probs = _next_log_probs(model, history, memory, src_mask, cache, limits <= step, suppress)
        token = log_probs.argmax(-1).masked_fill(finished, pad)
        log_prob += log_probs.gather(1, token[:, None])[:, 0].masked_fill(finished, 0.0)
        history = torch.cat([history, token[:, None]], dim=1)
        finished |= token == eos
        if finished.all():
            break
    hypotheses = []
    for row, lp in zip(history[:, 1:].tolist(), log_prob.tolist()):
        tokens = row[: row.index(eos)]
        hypotheses.append(Hypothesis(tokens, lp, lp))
    return hypotheses


@dataclass
class _Beams:
    """What beam search carries from step to step. Row b*width + j of `history` (and of the
    decoder's caches) is beam j of the b-th sentence still searched; a sentence's encoder output
    is one row of `memory` that its beams share, or with the model's `plain` setting (`shared`
    False) one row a beam, a copy moved with it."""

    history: Tensor  # (n*width, t) bos and the tokens so far
    scores: Tensor  # (n, width) each beam's log-probability
    memory: Tensor  # (n, S, d_model), or (n*width, S, d_model) unshared
    src_mask: Tensor  # (n, 1, 1, S), or (n*width, 1, 1, S)
    limits: Tensor  # (n,) each sentence's most target tokens
    active: list[int]  # the original index of each sentence still searched
    cache: DecoderCache | None
    shared: bool
    width: int = 1  # beams a sentence: 1 at the start, K after the first step

    def advance(self, candidates: tuple[Tensor, Tensor, Tensor], ends: Tensor, k: int) -> None:
        """Beam search's step 2: the best K candidates that do not end in eos go on, each from
        its parent beam's history (and cache, and with `shared` False its copy of the source)."""
        cand_scores, cand_beam, cand_token = candidates  # (n, 2K) each
        n, device = len(self.active), self.history.device
        self.scores, keep = cand_scores.masked_fill(ends, float("-inf")).topk(k, dim=1)  # (n, K)
        origin = (cand_beam.gather(1, keep) + torch.arange(n, device=device)[:, None] * self.width).view(-1)
        self.width = k
        next_token = cand_token.gather(1, keep).view(-1, 1)  # (n*K, 1)
        self.history = torch.cat([self.history.index_select(0, origin), next_token], dim=1)
        if not self.shared:
            self.memory, self.src_mask = self.memory.index_select(0, origin), self.src_mask.index_select(0, origin)
        if self.cache is not None:
            self.cache.reorder(origin, None if self.shared else origin)

    def keep_only(self, live: list[int]) -> None:
        """Beam search's step 3: the sentences of rows `live` go on, the others leave the batch."""
        device = self.history.device
        live_t = torch.tensor(live, device=device)
        rows = (live_t[:, None] * self.width + torch.arange(self.width, device=device)).view(-1)
        sources = live_t if self.shared else rows
        self.history, self.memory, self.src_mask = self.history[rows], self.memory[sources], self.src_mask[sources]
        self.scores, self.limits = self.scores[live_t], self.limits[live_t]
        if self.cache is not None:
            self.cache.reorder(rows, sources)
        self.active = [self.active[row] for row in live]


def _finish_ending(
    candidates: tuple[Tensor, Tensor, Tensor],
    ends: Tensor,
    k: int,
    history: Tensor,
    beams: int,
    length_penalty: float,
    finished: list[list[Hypothesis]],
    active: list[int],
) -> None:
    """Beam search's step 1: the candidates (scores, beam, token; (n, 2K) each) that end in eos
    (`ends`) and rank within their sentence's best K become finished hypotheses."""
    cand_scores, cand_beam, _ = candidates
    ending = (ends[:, :k] & torch.isfinite(cand_scores[:, :k])).nonzero().tolist()
    if not ending:
        return
    # read as Python lists once: indexing a tensor element by element is slow
    prefixes, parents, scores = history[:, 1:].tolist(), cand_beam.tolist(), cand_scores.tolist()
    for row, rank in ending:
        prefix = prefixes[row * beams + parents[row][rank]]
        log_prob = scores[row][rank]
        finished[active[row]].append(Hypothesis(prefix, log_prob / (len(prefix) + 1) ** length_penalty, log_prob))


def _done_rows(
    finished: list[list[Hypothesis]],
    active: list[int],
    beam_scores: Tensor,
    limits: Tensor,
    step: int,
    k: int,
    n_best: int,
    length_penalty: float,
) -> set[int]:
    """Beam search's step 3: the rows of the sentences that are done: K hypotheses finished, the
    length limit reached, or no live beam able to beat the n_best-th finished one (a live beam's
    log-probability only falls as it grows: its best possible score is its log-probability now
    over the longest length it may reach, to the power alpha)."""
    best_possible = (beam_scores.max(1).values / (limits + 1).float() ** length_penalty).tolist()  # (n,)
    limit_of = limits.tolist()
    done = set()
    for row, sentence in enumerate(active):
        ranked = sorted((h.score for h in finished[sentence]), reverse=True)
        beaten = len(ranked) >= n_best and ranked[n_best - 1] >= best_possible[row]
        if len(ranked) >= k or step >= limit_of[row] or beaten:
            done.add(row)
    return done


@torch.inference_mode()
def beam_search(
    model: Transformer,
    src: Tensor,
    beam_size: int,
    max_len: int | Tensor,
    length_penalty: float = 1.0,
    n_best: int = 1,
    use_cache: bool = True,
    suppress: Sequence[Sequence[int]] = (),
) -> list[list[Hypothesis]]:
    """Batched beam search.

    Each sentence keeps K = `beam_size` live hypotheses. At every step the best 2K extensions of
    a sentence's beams are ranked, then: 1. those ending in eos are finished if they rank within
    the best K; 2. the best K that do not end go on; 3. a sentence that is done (K hypotheses
    finished, as in fairseq, or no live beam able to beat its finished ones) leaves the batch.

    A sentence's hypotheses share its one row of encoder output in cross-attention (model/
    attention.py's grouped path), and a step's best extensions are found in two rounds
    (`best_extensions`); with the model's `plain` setting each hypothesis has its own copy
    instead, moved with it, and one top-k ranks them (`plain_best_extensions`): the same
    translations, slower.

    Args:
        src: (B, S) padded source ids.
        max_len: most target tokens per hypothesis (eos not counted): one int, or one per
            sentence (B,).
        length_penalty: alpha in score = log_prob / length ** alpha (length counts eos);
            0 ranks by raw log-probability, 1 by log-probability per token.
        n_best: hypotheses returned per sentence (at most beam_size), best first.
        suppress: token sequences no translation may hold (`suppressed`).

    Returns:
        for each sentence, its n_best hypotheses.
    """
    k = min(beam_size, model.cfg.tgt_vocab_size)  # the first step has no more extensions than tokens
    n_best = min(n_best, k)
    batch, device = src.size(0), src.device
    memory, src_mask, _ = model.encode(src)  # (B, S, d_model), (B, 1, 1, S)
    limits = _limits(max_len, batch, device)
    beams = _Beams(  # one beam a sentence to start from (bos alone): its best K extensions become its K beams
        history=torch.full((batch, 1), model.cfg.bos_id, dtype=torch.long, device=device),
        scores=torch.zeros(batch, 1, device=device),
        memory=memory,
        src_mask=src_mask,
        limits=limits,
        active=list(range(batch)),
        cache=model.new_cache() if use_cache else None,
        shared=not model.cfg.plain,
    )
    finished: list[list[Hypothesis]] = [[] for _ in range(batch)]
    extensions = plain_best_extensions if model.cfg.plain else best_extensions
    for step in range(int(limits.max()) + 1):
        at_limit = (beams.limits <= step).repeat_interleave(beams.width)  # (n*width,)
        log_probs = _next_log_probs(model, beams.history, beams.memory, beams.src_mask, beams.cache, at_limit, suppress)
        log_probs = log_probs.view(len(beams.active), beams.width, -1)  # (n, width, V)
        count = min(2 * k, beams.width * log_probs.size(2))
        candidates = extensions(log_probs, beams.scores, count)  # scores, beam, token: (n, 2K)
        ends = candidates[2] == model.cfg.eos_id
        # 1. finish the eos candidates that rank within the best K of the step
        _finish_ending(candidates, ends, k, beams.history, beams.width, length_penalty, finished, beams.active)
        # 2. the best K candidates that go on
        beams.advance(candidates, ends, k)
        # 3. sentences that are done leave the batch
        done = _done_rows(finished, beams.active, beams.scores, beams.limits, step, k, n_best, length_penalty)
        if done:
            live = [row for row in range(len(beams.active)) if row not in done]
            if not live:
                break
            beams.keep_only(live)
    return [sorted(hyps, key=lambda h: h.score, reverse=True)[:n_best] for hyps in finished]
