"""data/subword_sampling.py: segmentations drawn from the n best, P^alpha-weighted."""

import numpy as np
import pytest

from data import SampledPairs
from data.subword_sampling import SegmentationSampler


@pytest.fixture(scope="module")
def sampled(toy):
    return SampledPairs(toy.tokenizer, toy.text["train"], alpha=0.5, n_best=16)


def test_sampled_segmentations_spell_the_same_text_and_the_best_is_the_tokenized_one(toy, sampled):
    tokenizer, tokens = toy.tokenizer, toy.tokens["train"][:]
    pairs = sampled.epoch(0, seed=1)
    assert tokenizer.src.decode(pairs["src_ids"]) == tokenizer.src.decode(tokens["src_ids"])
    assert tokenizer.decode_tgt(pairs["tgt_ids"]) == tokenizer.decode_tgt(tokens["tgt_ids"])
    changed = sum(a != b for a, b in zip(pairs["src_ids"], tokens["src_ids"]))
    assert 0.1 < changed / len(tokens["src_ids"]) < 0.9  # alpha 0.5: many sentences split otherwise, far from all
    greedy = SegmentationSampler(tokenizer.src, list(toy.text["train"]["src"]), n_best=16)
    assert greedy.draw(alpha=1e6, rng=np.random.default_rng(0)) == tokens["src_ids"]  # large alpha: the best


def test_draws_depend_on_seed_and_epoch_alone(sampled):
    first, other_epoch, other_seed = (sampled.epoch(0, seed=1), sampled.epoch(1, seed=1), sampled.epoch(0, seed=2))
    assert sampled.epoch(0, seed=1)["src_ids"] == first["src_ids"]  # after other draws
    assert first["src_ids"] != other_epoch["src_ids"] and first["src_ids"] != other_seed["src_ids"]
    assert first["tgt_ids"] != other_epoch["tgt_ids"]


def test_draws_follow_p_to_the_alpha_over_the_n_best(toy):
    """Drawn often, each of a sentence's segmentations comes up as often as softmax(alpha * log P)."""
    sentence, alpha = "Ein kleiner Junge spielt Fußball.", 0.5
    sampler = SegmentationSampler(toy.tokenizer.src, [sentence] * 20_000, n_best=4)
    segmentations = toy.tokenizer.src.nbest_encode_as_ids(sentence, nbest_size=4)
    log_p = np.array([sum(map(toy.tokenizer.src.get_score, ids)) for ids in segmentations])
    expected = np.exp(alpha * log_p) / np.exp(alpha * log_p).sum()
    drawn = sampler.draw(alpha, np.random.default_rng(3))
    observed = np.array([sum(d == ids for d in drawn) for ids in segmentations]) / len(drawn)
    assert np.allclose(observed, expected, atol=0.015), (observed, expected)
