"""Sentences in, sentences out: tokenize, batch by length, search, detokenize, restore order."""

import logging
from collections.abc import Sequence

import torch

from data import Tokenizer
from data.batching import pad
from inference.attention import SentenceAttention, collect_attention
from inference.contract import length_sorted_batches, one_line, source_ids
from inference.search_config import SearchConfig
from model import Transformer
from model.search import Hypothesis, beam_search, greedy_search, output_limits

log = logging.getLogger(__name__)


class Translator:
    """Translates batches of sentences with a trained model (the `Translating` interface of
    inference/contract.py), searching as `search` says.

    Args:
        use_cache: decode on the key/value cache (False only to measure or check it).
        bf16: decode under bf16 autocast (the matmuls in bfloat16, scores still in float32):
            faster where the hardware has bf16 (utils/device.native_bf16), emulated elsewhere.
    """

    def __init__(
        self,
        model: Transformer,
        tokenizer: Tokenizer,
        search: SearchConfig = SearchConfig(),
        use_cache: bool = True,
        bf16: bool = False,
    ) -> None:
        self.search = search.fits(model.cfg.max_len)
        self.model, self.tokenizer = model, tokenizer
        self.use_cache = use_cache  # False re-runs the decoder over the prefix (benchmarks, checks)
        self.bf16 = bf16
        self.truncated = 0  # sources cut to the model's max_len by the last call
        self.last_hypotheses: list[list[Hypothesis]] = []  # of the last call, in input order

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    @property
    def max_len(self) -> int:
        """Longest source (in pieces) the model reads; longer ones are truncated."""
        return self.model.cfg.max_len

    def source_ids(self, sentences: Sequence[str]) -> list[list[int]]:
        """Source piece ids, cut to the model's max_len (counted in `truncated`, with a warning)."""
        ids, self.truncated = source_ids(self.tokenizer, sentences, self.max_len)
        if self.truncated:
            log.warning(
                "%d source sentence(s) longer than the model's %d pieces were truncated", self.truncated, self.max_len
            )
        return ids

    @torch.no_grad()
    def find(self, src_ids: Sequence[list[int]], n_best: int = 1) -> list[list[Hypothesis]]:
        """The n_best hypotheses of each source id list, best first; an empty source gets none."""
        results: list[list[Hypothesis]] = [[] for _ in src_ids]
        search = self.search
        with self.model.evaluating(), torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.bf16):
            for chunk in length_sorted_batches(src_ids, search.batch_size):
                src = pad([src_ids[i] for i in chunk]).to(self.device)
                max_len = output_limits(self.model, src, search.max_len_ratio, search.max_len_extra)  # (B,)
                if search.beam_size == 1:
                    found = [[h] for h in greedy_search(self.model, src, max_len, self.use_cache)]
                else:
                    found = beam_search(
                        self.model, src, search.beam_size, max_len, search.length_penalty, n_best, self.use_cache
                    )
                for i, hypotheses in zip(chunk, found):
                    results[i] = hypotheses
        self.last_hypotheses = results
        return results

    def translate_ids(self, src_ids: Sequence[list[int]]) -> list[list[int]]:
        """Target ids (no bos/eos) of the best hypothesis for each source; [] for an empty one."""
        return [hyps[0].tokens if hyps else [] for hyps in self.find(src_ids)]

    def decode(self, ids: list[list[int]]) -> list[str]:
        """Target ids -> one line of text each (`one_line`)."""
        return [one_line(text) for text in self.tokenizer.decode_tgt(ids)]

    def translate(self, sentences: Sequence[str]) -> list[str]:
        """One translation per sentence, in input order; blank input gives an empty string."""
        return self.decode(self.translate_ids(self.source_ids(sentences)))

    def translate_nbest(self, sentences: Sequence[str], n_best: int) -> list[list[tuple[str, float]]]:
        """(translation, score) pairs, best first, for each sentence; [] for a blank one."""
        found = self.find(self.source_ids(sentences), n_best)
        return [
            list(zip(self.decode([h.tokens for h in hyps]), [h.score for h in hyps])) if hyps else [] for hyps in found
        ]

    def attention(
        self, sentences: Sequence[str], found: list[list[Hypothesis]] | None = None, inside: bool = False
    ) -> list[SentenceAttention | None]:
        """Every attention map (all kinds, layers, heads) of each sentence with its best
        translation (from `found`, these sentences' hypotheses if already searched), with
        `inside` also the values inside each attention; None for a sentence without source
        pieces (blank, or normalised away)."""
        if found is None:
            found = self.find(self.source_ids(sentences))
        rows = [i for i, hyps in enumerate(found) if hyps]
        maps = collect_attention(
            self.model,
            self.tokenizer,
            [sentences[i].strip() for i in rows],
            [found[i][0].tokens for i in rows],
            inside=inside,
        )
        result: list[SentenceAttention | None] = [None] * len(sentences)
        for i, att in zip(rows, maps):
            result[i] = att
        return result
