"""Search (model/search.py) on stub models whose next-token probabilities are a table, so that
the right answer is known exactly."""

import math

import pytest
import torch

from model import TransformerConfig
from model.search import beam_search, best_extensions, greedy_search, output_limits, plain_best_extensions

PAD, UNK, BOS, EOS = 0, 1, 2, 3
A, B, C, D = 4, 5, 6, 7
VOCAB = 8


class TableModel:
    """A stand-in for Transformer: P(next | prefix) comes from `table` (prefix tuple ->
    {token: probability}), or `default` for prefixes not listed; unlisted tokens share what
    is left. Decodes without a cache."""

    def __init__(self, table: dict[tuple, dict[int, float]], default: dict[int, float] | None = None) -> None:
        self.cfg = TransformerConfig(src_vocab_size=VOCAB, tgt_vocab_size=VOCAB, d_model=8, n_heads=1, max_len=32)
        self.table, self.default = table, default or {EOS: 0.9}
        self.decoder_calls = 0

    def encode(self, src):
        return torch.zeros(src.size(0), src.size(1), 1), (src != PAD)[:, None, None, :], []

    def new_cache(self):
        return None  # the search then hands decode() the whole prefix at every step

    def decode(self, history, memory, src_mask, cache=None):
        self.decoder_calls += 1
        rows = []
        for prefix in history[:, 1:].tolist():
            listed = self.table.get(tuple(prefix), self.default)
            rest = (1.0 - sum(listed.values())) / (VOCAB - len(listed))
            rows.append(torch.tensor([listed.get(t, rest) for t in range(VOCAB)]).clamp_min(1e-9).log())
        return torch.stack(rows)[:, None, :], [], []


# bos -> a .40, b .35, eos .20: the empty translation's eos ranks 3rd of the first step.
# "a" then mostly ends; "b c" is the most likely translation of all (.35 * .9 * .95 = 0.299),
# but greedy takes "a" (.40) and ends there (.40 * .5 = 0.2).
TRAP = {
    (): {A: 0.40, B: 0.35, EOS: 0.20},
    (A,): {EOS: 0.50, D: 0.45},
    (B,): {C: 0.90, EOS: 0.05},
    (B, C): {EOS: 0.95},
    (A, D): {EOS: 0.90},
}


def src(n=1):
    return torch.full((n, 4), A)


def test_low_ranked_early_eos_does_not_end_the_search():
    """With K=2, the empty hypothesis (rank 3 of step 1) and "a" (step 2) finish; counting the
    first toward K stopped the search before "b c" could finish."""
    model = TableModel(TRAP)
    best = beam_search(model, src(), beam_size=2, max_len=5, length_penalty=0.0)[0][0]
    assert best.tokens == [B, C]
    assert best.log_prob == pytest.approx(math.log(0.35 * 0.90 * 0.95), abs=1e-5)
    assert greedy_search(model, src(), max_len=5)[0].tokens == [A]  # greedy cannot find it


@pytest.mark.parametrize("beam_size", [3, 5])
def test_one_beam_may_hold_all_the_next_beams(beam_size):
    """Each beam contributes its own best 2K tokens to the step's ranking, enough when every survivor
    comes from one beam (here "a", whose extensions all outrank "b"'s), and all of them when the
    vocabulary (8) holds fewer than 2K."""
    table = {(): {A: 0.6, B: 0.39}, (A,): {C: 0.3, D: 0.29, A: 0.2, B: 0.19}, (B,): {C: 0.3, D: 0.2}}
    model = TableModel(table)
    hyps = beam_search(model, src(), beam_size=beam_size, max_len=2, length_penalty=0.0, n_best=3)[0]
    # every two-piece hypothesis ends at its limit with the default's eos .9
    assert [h.tokens for h in hyps] == [[A, C], [A, D], [A, A]]
    assert hyps[0].log_prob == pytest.approx(math.log(0.6 * 0.3 * 0.9), abs=1e-5)


def test_search_stops_once_no_live_beam_can_win():
    """eos at .9 after "a": no live beam (each below .05 there) can reach its score, so two
    decoder steps."""
    model = TableModel({(): {A: 0.99}, (A,): {EOS: 0.90, B: 0.05, C: 0.04}})
    best = beam_search(model, src(), beam_size=3, max_len=20, length_penalty=1.0)[0][0]
    assert best.tokens == [A] and model.decoder_calls == 2


def test_no_search_gives_an_empty_translation():
    """eos first at .9: the searches take the likeliest other start, as CTranslate2 (its
    min_decoding_length of 1); an empty hypothesis would also count among beam search's K
    finished ones and could end the search before a better translation."""
    model = TableModel({(): {EOS: 0.90, A: 0.05, B: 0.04}})
    assert greedy_search(model, src(), max_len=5)[0].tokens == [A]
    for beam_size in (1, 3):
        best = beam_search(model, src(), beam_size=beam_size, max_len=5, length_penalty=1.0)[0][0]
        assert best.tokens == [A] and best.log_prob == pytest.approx(math.log(0.05 * 0.9), abs=1e-5)


def test_length_penalty_bound_keeps_searching_while_a_longer_hypothesis_can_win():
    """With alpha=1 a long hypothesis of high per-token probability beats a short one that
    finished first: a live beam could still beat it, so the search goes on."""
    table = {(): {EOS: 0.40, A: 0.50}, (A,): {A: 0.99}, (A, A): {A: 0.99}, (A, A, A): {EOS: 0.99}}
    model = TableModel(table, default={C: 0.5, D: 0.49})  # other prefixes go on rather than end
    best = beam_search(model, src(), beam_size=2, max_len=10, length_penalty=1.0)[0][0]
    assert best.tokens == [A, A, A]  # log-prob -0.72 over 4 pieces (eos counts) against -0.92 over 1


def test_beam_size_one_is_greedy():
    for table in (TRAP, {(): {A: 0.35, B: 0.3, C: 0.25}, (A,): {B: 0.6}, (A, B): {EOS: 0.6}}):
        model = TableModel(table)
        assert (
            beam_search(model, src(), beam_size=1, max_len=6, length_penalty=0.0)[0][0].tokens
            == greedy_search(model, src(), max_len=6)[0].tokens
        )


def test_special_tokens_are_never_produced():
    table = {(): {UNK: 0.5, PAD: 0.2, BOS: 0.2, A: 0.05}, (A,): {UNK: 0.6, B: 0.2}, (A, B): {EOS: 0.5}}
    model = TableModel(table)
    greedy = greedy_search(model, src(), max_len=6)[0].tokens
    beams = beam_search(model, src(), beam_size=3, max_len=6, n_best=3)[0]
    assert greedy == [A, B]
    for tokens in [greedy] + [h.tokens for h in beams]:
        assert not {PAD, UNK, BOS} & set(tokens)


def test_each_sentence_has_its_own_length_limit():
    """A sentence that never ends stops at its own limit, whatever the batch's longest source."""
    model = TableModel({}, default={A: 0.6, B: 0.39})  # eos never ranks within the best K
    sources = torch.tensor([[A, A, PAD, PAD, PAD, PAD], [A, A, A, A, A, A]])
    limits = output_limits(model, sources, ratio=1.0, extra=1)
    assert limits.tolist() == [3, 7]
    assert [len(h.tokens) for h in greedy_search(model, sources, limits)] == [3, 7]
    assert [len(hyps[0].tokens) for hyps in beam_search(model, sources, 2, limits)] == [3, 7]


def test_n_best_hypotheses_are_distinct_and_ranked():
    model = TableModel(TRAP)
    hyps = beam_search(model, src(), beam_size=4, max_len=5, n_best=4, length_penalty=0.0)[0]
    assert len(hyps) == 4
    assert len({tuple(h.tokens) for h in hyps}) == 4
    assert [h.score for h in hyps] == sorted((h.score for h in hyps), reverse=True)


@pytest.mark.parametrize("vocab", [8, 64, 200, 8000])  # one block, one exactly, a padded last block, many
@pytest.mark.parametrize("beams", [1, 5])
def test_best_extensions_equal_a_top_k_over_every_beam_and_token(vocab, beams):
    """The two-round ranking against the plain one over all K x V scores, with dead beams (-inf,
    as beam search starts) and tokens that may not be produced (-inf columns)."""
    generator = torch.Generator().manual_seed(vocab + beams)
    log_probs = torch.log_softmax(3 * torch.randn(6, beams, vocab, generator=generator), dim=-1)
    log_probs[:, :, [PAD, BOS, UNK]] = float("-inf")
    beam_scores = -5 * torch.rand(6, beams, generator=generator)
    beam_scores[:2, 1:] = float("-inf")  # sentences whose only live beam is the first
    count = min(2 * beams, beams * vocab)
    scores, beam, token = best_extensions(log_probs, beam_scores, count)
    expected_scores, expected_beam, expected_token = plain_best_extensions(log_probs, beam_scores, count)
    assert torch.equal(scores, expected_scores)
    finite = scores.isfinite()  # which of several -inf extensions fills a place is not defined
    assert torch.equal(beam[finite], expected_beam[finite]) and torch.equal(token[finite], expected_token[finite])
    assert (token < vocab).all()
    assert torch.equal(scores, beam_scores.gather(1, beam) + log_probs[torch.arange(6)[:, None], beam, token])


def test_a_beam_wider_than_the_vocabulary_keeps_one_beam_a_token():
    """The first step extends bos alone, so it has V extensions at most: a beam of 12 over the 8
    tokens searches with 8 beams, and finds what a beam of 8 finds."""
    wide = beam_search(TableModel(TRAP), src(), beam_size=12, max_len=5, n_best=12, length_penalty=0.0)[0]
    eight = beam_search(TableModel(TRAP), src(), beam_size=8, max_len=5, n_best=8, length_penalty=0.0)[0]
    assert [h.tokens for h in wide] == [h.tokens for h in eight] and wide[0].tokens == [B, C]


# a model that loops: "a" after anything, eos only when nothing likelier is left
LOOP = {(): {A: 0.6, B: 0.3}}
LOOPING = {A: 0.7, B: 0.1, EOS: 0.15}


@pytest.mark.parametrize("beam_size", [1, 3])
def test_a_suppressed_sequence_is_never_completed(beam_size):
    """Suppressing (a, a, a), as CTranslate2's suppress_sequences does: "a a" may be written but
    never a third "a" right after it; a one-token sequence is never written at all."""

    def best(suppress):
        model = TableModel(LOOP, LOOPING)
        if beam_size == 1:
            return greedy_search(model, src(), max_len=8, suppress=suppress)[0].tokens
        return beam_search(model, src(), beam_size, max_len=8, suppress=suppress)[0][0].tokens

    assert best(())[:3] == [A, A, A]  # the loop
    for suppress in [(A, A, A)], [(A, A)], [(B,), (A, A, A)]:
        found = best(suppress)
        assert not any(tuple(found[i : i + len(s)]) == s for s in suppress for i in range(len(found)))
    assert A not in best([(A,)])
    if beam_size == 1:  # "a a" is written, then eos (.15) beats b (.10)
        assert best([(A, A, A)]) == [A, A]
