"""data/batching.py: the token-bucket sampler and collate."""

import pytest
import torch

from data import BOS_ID, EOS_ID, PAD_ID, TokenBucketSampler, collate
from utils.errors import UserError


def lengths(data):
    train = data.tokens["train"]
    return [len(x) for x in train["src_ids"]], [len(x) for x in train["tgt_ids"]]


def test_sampler_covers_each_example_once_within_budget(toy):
    src_len, tgt_len = lengths(toy)
    sampler = TokenBucketSampler(src_len, tgt_len, max_tokens=256, seed=3)
    batches = list(sampler)
    assert sorted(i for b in batches for i in b) == list(range(len(src_len)))
    for b in batches:
        assert len(b) * max(max(src_len[i], tgt_len[i] + 1) for i in b) <= 256


def test_sampler_order_depends_on_epoch_and_seed_only(toy):
    src_len, tgt_len = lengths(toy)
    sampler = TokenBucketSampler(src_len, tgt_len, max_tokens=256, seed=3)
    epoch0 = list(sampler)
    sampler.set_epoch(1)
    epoch1 = list(sampler)
    assert epoch0 != epoch1
    same_seed = TokenBucketSampler(src_len, tgt_len, max_tokens=256, seed=3)
    assert list(same_seed) == epoch0
    assert list(TokenBucketSampler(src_len, tgt_len, max_tokens=256, seed=4)) != epoch0
    sampler.set_epoch(1, start=3)  # resume inside an epoch
    assert list(sampler) == epoch1[3:] and len(sampler) == len(epoch1) - 3


@pytest.mark.parametrize("world_size", [2, 3])
def test_sampler_ranks_are_disjoint_covering_and_equal(toy, world_size):
    src_len, tgt_len = lengths(toy)
    shards = [
        list(TokenBucketSampler(src_len, tgt_len, 256, seed=0, rank=r, world_size=world_size))
        for r in range(world_size)
    ]
    assert len({len(s) for s in shards}) == 1, "every rank must run the same number of steps"
    seen = [i for shard in shards for b in shard for i in b]
    assert len(seen) == len(set(seen)) == len(src_len)


def test_padding_efficiency_on_train(multi30k):
    src_len, tgt_len = lengths(multi30k)
    real = padded = 0
    for b in TokenBucketSampler(src_len, tgt_len, max_tokens=4096, seed=0):
        real += sum(src_len[i] + tgt_len[i] + 1 for i in b)
        padded += len(b) * (max(src_len[i] for i in b) + max(tgt_len[i] for i in b) + 1)
    assert real / padded >= 0.90


def test_sampler_rejects_budget_below_longest_sentence():
    with pytest.raises(UserError, match="smaller than the longest sentence"):
        TokenBucketSampler([3, 50], [4, 5], max_tokens=20)


def test_collate_builds_decoder_input_and_target():
    batch = collate([{"src_ids": [5, 6, 7], "tgt_ids": [8, 9]}, {"src_ids": [5], "tgt_ids": [8, 9, 10]}])
    assert batch.src.tolist() == [[5, 6, 7], [5, PAD_ID, PAD_ID]]
    assert batch.tgt_in.tolist() == [[BOS_ID, 8, 9, PAD_ID], [BOS_ID, 8, 9, 10]]
    assert batch.tgt_out.tolist() == [[8, 9, EOS_ID, PAD_ID], [8, 9, 10, EOS_ID]]
    assert batch.src_mask.tolist() == [[True] * 3, [True, False, False]]
    assert batch.n_tgt_tokens == 7
    assert batch.to("cpu").tgt_mask.dtype == torch.bool
