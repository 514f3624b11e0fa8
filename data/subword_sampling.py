"""Subword regularisation (Kudo 2018): every epoch, each training sentence in a segmentation
drawn from its n best, with probability proportional to P(segmentation)^alpha.

A unigram SentencePiece model gives every segmentation x of a sentence a probability,
P(x) = prod_i p(x_i); its n best segmentations are found once, and each epoch draws one per
sentence from a generator seeded by (seed, epoch) alone, so a resumed run draws what an
uninterrupted one did and every rank the same. (SentencePiece's own sampling cannot promise
that: its random generators are per thread and, in our tests, not reproducible across
processes even with a fixed seed.) alpha near 0 draws the n best about evenly; large alpha
keeps the best one.
"""

import numpy as np
import sentencepiece as spm
from datasets import Dataset

from data.columns import column_lines
from data.tokenizer import Tokenizer


class SegmentationSampler:
    """The n best segmentations of each sentence of one side, and draws among them."""

    def __init__(self, processor: spm.SentencePieceProcessor, sentences: list[str], n_best: int) -> None:
        nbest = processor.nbest_encode_as_ids(sentences, nbest_size=n_best)  # [sentence][rank] -> ids
        piece_log_p = np.array([processor.get_score(i) for i in range(processor.get_piece_size())])
        counts = np.array([len(segs) for segs in nbest])
        flat = [ids for segs in nbest for ids in segs]
        lengths = np.array([len(ids) for ids in flat])
        self.ids = np.fromiter((i for ids in flat for i in ids), dtype=np.int64, count=int(lengths.sum()))
        ends = np.cumsum(lengths)
        # (N, n_best) tables: where each segmentation lies in `ids`, and its log probability
        # (-inf where a sentence has fewer than n_best segmentations)
        slot = np.arange(n_best)[None, :] < counts[:, None]  # (N, n_best)
        self.starts = np.zeros(slot.shape, dtype=np.int64)
        self.ends = np.zeros(slot.shape, dtype=np.int64)
        self.starts[slot], self.ends[slot] = ends - lengths, ends
        cumulative = np.concatenate([[0.0], np.cumsum(piece_log_p[self.ids])])  # log P(x) = a difference of it
        self.log_p = np.full(slot.shape, -np.inf)
        self.log_p[slot] = cumulative[ends] - cumulative[ends - lengths]

    def draw(self, alpha: float, rng: np.random.Generator) -> list[list[int]]:
        """One segmentation per sentence, P(x)^alpha-weighted: the Gumbel-max trick, argmax of
        alpha * log P(x) + Gumbel noise, samples exactly softmax(alpha * log P(x))."""
        choice = np.argmax(alpha * self.log_p + rng.gumbel(size=self.log_p.shape), axis=1)  # (N,)
        rows = np.arange(len(choice))
        starts, ends = self.starts[rows, choice], self.ends[rows, choice]
        return [self.ids[a:b].tolist() for a, b in zip(starts, ends)]


class SampledPairs:
    """The training pairs, each epoch in newly drawn segmentations on both sides."""

    def __init__(self, tokenizer: Tokenizer, train_text: Dataset, alpha: float, n_best: int) -> None:
        self.alpha = alpha
        self.src = SegmentationSampler(tokenizer.src, list(column_lines(train_text, "src")), n_best)
        self.tgt = SegmentationSampler(tokenizer.tgt, list(column_lines(train_text, "tgt")), n_best)

    def epoch(self, epoch: int, seed: int) -> Dataset:
        """Columns src_ids and tgt_ids, like the tokenized split; the same for the same (seed, epoch)."""
        rng = np.random.default_rng([seed, epoch])
        return Dataset.from_dict({"src_ids": self.src.draw(self.alpha, rng), "tgt_ids": self.tgt.draw(self.alpha, rng)})
