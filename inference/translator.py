"""Sentences in, sentences out: tokenize, batch by length, search, detokenize, restore order."""

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from data import Tokenizer
from data.batching import pad
from inference.attention import SentenceAttention, collect_attention
from inference.contract import LineTranslator, Progress, length_sorted_batches, one_line, source_ids
from inference.search_config import SearchConfig
from inference.workers import BatchWorkers, can_fork
from model import Transformer
from model.search import Hypothesis, beam_search, greedy_search, output_limits
from utils.device import torch_threads

log = logging.getLogger(__name__)

# Sentences a batch unless the search says (SearchConfig.batch_size). A decoding step is a few
# hundred small operations whatever its rows, so more sentences a step share that cost: on an AMD
# EPYC Zen 4, beam 5, one core, 1,000 test sentences took 8.4 s in batches of 64 against 9.9 s in
# batches of 32 (the same translations), and 96 gained nothing more (docs/speed.md).
BATCH_SIZE = 64
# With N worker processes, a call of n sentences is cut into batches of ceil(n / N), so that a short
# call keeps every worker busy, but never of fewer than this (the last batch may hold fewer): a call
# of up to 32 sentences (a line or a few people typed) is still one batch, decoded in this process on
# every core, as with batches of 32 before.
FEWEST_TO_SPLIT = 32


@dataclass(frozen=True)
class Batch:
    """One batch's search, whole: what a worker process needs besides the model."""

    sources: list[list[int]]  # source piece ids, sorted by length, none empty
    search: SearchConfig
    n_best: int
    use_cache: bool
    suppress: tuple[tuple[int, ...], ...] = ()  # target id sequences no translation may hold

    def cost(self) -> float:
        """About how long it takes to decode: sentences times the longest's pieces."""
        return len(self.sources) * len(self.sources[-1])


class Translator(LineTranslator):
    """Translates batches of sentences with a trained model (the `Translating` interface of
    inference/contract.py), searching as `search` says.

    Args:
        use_cache: decode on the key/value cache (False only to measure or check it).
        bf16: decode under bf16 autocast (the matmuls in bfloat16, scores still in float32):
            faster where the hardware has bf16 (utils/device.native_bf16), emulated elsewhere.
        workers: CPU processes that decode whole batches side by side when a call has more than
            one batch (inference/workers.py), each on `threads_per_worker` cores; 1 decodes in
            this process, and so does a system without fork (Windows). A single batch (a typed
            sentence) is always decoded here. The workers end with `close()` (or the `with`
            block, or when the translator is garbage-collected).
        threads: torch's threads while this process decodes (None: as they are); set back after
            each call, so that the host process's setting is left as it was.

    Threads may share one translator (a web server's): one search runs at a time, on all the
    cores it was given (the worker processes read and write the same pipes, and the model's
    mode and threads are set around each search), and each thread reads its own call's
    `truncated` and `last_hypotheses`.
    """

    def __init__(
        self,
        model: Transformer,
        tokenizer: Tokenizer,
        search: SearchConfig = SearchConfig(),
        use_cache: bool = True,
        bf16: bool = False,
        workers: int = 1,
        threads_per_worker: int = 1,
        threads: int | None = None,
    ) -> None:
        self.search = search.fits(model.cfg.max_len)
        self.model, self.tokenizer = model, tokenizer
        self.use_cache = use_cache  # False re-runs the decoder over the prefix (benchmarks, checks)
        self.bf16 = bf16
        self.threads = threads
        self.workers = BatchWorkers(workers, threads_per_worker) if workers > 1 and can_fork() else None
        self._searching = threading.Lock()  # one search at a time, whichever thread calls

    @property
    def last_hypotheses(self) -> list[list[Hypothesis]]:
        """The hypotheses of this thread's last call, in input order."""
        return self._this_thread().last_hypotheses

    def close(self) -> None:
        """Stop the worker processes, if any were started; a later call starts new ones."""
        if self.workers is not None:
            with self._searching:  # not under a search that uses them
                self.workers.close()

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
    def find_batch(self, batch: Batch) -> list[list[Hypothesis]]:
        """The n_best hypotheses of each of a batch's sources (none empty), best first."""
        search = batch.search
        with self.model.evaluating(), torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.bf16):
            src = pad(batch.sources).to(self.device)  # (B, S)
            max_len = output_limits(self.model, src, search.max_len_ratio, search.max_len_extra)  # (B,)
            if search.beam_size == 1:
                return [[h] for h in greedy_search(self.model, src, max_len, batch.use_cache, batch.suppress)]
            return beam_search(
                self.model,
                src,
                search.beam_size,
                max_len,
                search.length_penalty,
                batch.n_best,
                batch.use_cache,
                batch.suppress,
            )

    def find(
        self,
        src_ids: Sequence[list[int]],
        n_best: int = 1,
        progress: Progress = None,
        suppress: tuple[tuple[int, ...], ...] = (),
    ) -> list[list[Hypothesis]]:
        """The n_best hypotheses of each source id list, best first; an empty source gets none;
        none holds a target id sequence of `suppress`. `progress(n)` is called as each batch of
        n sources is done."""
        size = self.search.batch_size or BATCH_SIZE
        if self.workers is not None:  # no worker idle while another decodes two batches of a short call
            size = min(size, max(FEWEST_TO_SPLIT, -(-sum(map(bool, src_ids)) // self.workers.workers)))
        chunks = list(length_sorted_batches(src_ids, size))
        batches = [
            Batch([src_ids[i] for i in chunk], self.search, n_best, self.use_cache, suppress) for chunk in chunks
        ]
        done = (lambda batch: progress(len(batch.sources))) if progress else None
        with self._searching:
            if self.workers is not None and len(batches) > 1:
                found = self.workers.map(self.find_batch, batches, cost=Batch.cost, done=done)
            else:
                found = []
                with torch_threads(self.threads):
                    for batch in batches:
                        found.append(self.find_batch(batch))
                        if done:
                            done(batch)
        results: list[list[Hypothesis]] = [[] for _ in src_ids]
        for chunk, hypotheses in zip(chunks, found):
            for i, hyps in zip(chunk, hypotheses):
                results[i] = hyps
        self._this_thread().last_hypotheses = results
        return results

    def translate_ids(self, src_ids: Sequence[list[int]], progress: Progress = None) -> list[list[int]]:
        """Target ids (no bos/eos) of the best hypothesis for each source; [] for an empty one."""
        return [hyps[0].tokens if hyps else [] for hyps in self.find(src_ids, progress=progress)]

    def decode(self, ids: list[list[int]]) -> list[str]:
        """Target ids -> one line of text each (`one_line`)."""
        return [one_line(text) for text in self.tokenizer.decode_tgt(ids)]

    def _translate(self, sentences: Sequence[str], progress: Progress) -> list[str]:
        return self.decode(self.translate_ids(self.source_ids(sentences), progress))

    def _search(
        self, sentences: Sequence[str], n_best: int, progress: Progress, suppress: Sequence[Sequence[str]] = ()
    ) -> list[list[tuple[list[str], float]]]:
        pieces = self.tokenizer.tgt.piece_to_id
        banned = tuple(tuple(pieces(piece) for piece in sequence) for sequence in suppress)
        found = self.find(self.source_ids(sentences), n_best, progress, banned)
        return [[(self.tokenizer.tgt_pieces(h.tokens), h.score) for h in hyps] for hyps in found]

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
        result: list[SentenceAttention | None] = [None] * len(sentences)
        if not rows:  # no sentence has a piece: nothing to run the model on
            return result
        with self._searching, torch_threads(self.threads):
            maps = collect_attention(
                self.model,
                self.tokenizer,
                [sentences[i].strip() for i in rows],
                [found[i][0].tokens for i in rows],
                inside=inside,
            )
        for i, att in zip(rows, maps):
            result[i] = att
        return result
