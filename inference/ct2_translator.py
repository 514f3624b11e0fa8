"""Translating with an exported CTranslate2 directory (inference/ct2_export.py), under the same
contract as translator.Translator (inference/contract.py): blank input gives an empty line, a
translation never spans lines, n-best with scores, overlong sources truncated with a count.

The search is CTranslate2's own beam search (greedy at beam 1), told what ours does: the same
beam size and length penalty (score = log_prob / length ** alpha), no <unk>, <pad> or <s>
produced, and outputs cut at max_len_ratio * source pieces + max_len_extra (CTranslate2 takes one
limit per batch, the longest source's, over length-sorted batches as ours; a sentence whose
output ran past its own limit is decoded again with it, so that outputs end where ours do and
every score is its text's).

The cores are used by batch: `threads` workers (CTranslate2's inter_threads) each decode whole
batches on one core, the batches submitted at once and their results read in order; for a model
this small, threads sharing one batch (intra_threads) mostly wait on each other (bench/decode.py
measures both layouts). The output is the same whatever the number of workers.
"""

import json
import threading
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

import torch

from data import Tokenizer
from inference.argos_package import is_package, unpacked
from inference.contract import LineTranslator, Progress, length_sorted_batches, one_line, source_ids
from inference.ct2_export import MANIFEST
from inference.search_config import SearchConfig
from model.search import length_limits
from utils.device import torch_threads, usable_cores
from utils.errors import UserError

# Sentences a batch unless the search says (SearchConfig.batch_size): with beam 5 CTranslate2
# decoded test2016 faster in batches of 24-32 than of 64 on an Intel Xeon with AMX (548 against ~450
# sentences/s) and alike in 32 and 64 on an AMD EPYC Zen 4 (docs/speed.md).
BATCH_SIZE = 32


def is_export(path: str | Path) -> bool:
    return (Path(path) / MANIFEST).is_file() and (Path(path) / "model.bin").is_file()


class CTranslate2Translator(LineTranslator):
    """Translates batches of sentences with CTranslate2, searching as `search` says; `path` is an
    export folder or an Argos package (its model unpacked while it loads); `device` is "cpu" or
    "cuda" and `device_index` the GPU's number; `compute_type` is CTranslate2's (default: the
    weights' own type; int8 quantizes on load); `threads` the CPU cores to use (0: all this
    process may use), `threads_per_batch` of them on each batch (1: a batch per core, measured
    fastest for this project's models; bench/decode.py tries the others).

    Threads may share one translator: CTranslate2's engine takes their batches side by side, and
    each thread reads its own call's `truncated`."""

    def __init__(
        self,
        path: str | Path,
        search: SearchConfig = SearchConfig(),
        device: str = "cpu",
        device_index: int = 0,
        compute_type: str = "default",
        threads: int = 0,
        threads_per_batch: int = 1,
    ) -> None:
        try:
            import ctranslate2  # noqa: F401 - said here, before anything is unpacked or read
        except ImportError:
            raise UserError("the ctranslate2 engine needs the ctranslate2 package: pip install ctranslate2") from None
        self.path = Path(path).expanduser()
        self._package = is_package(self.path)  # as it was when loaded: a later load reads it the same way
        cores = threads or usable_cores()
        per_batch = min(threads_per_batch, cores)
        self._engine_settings = {
            "device": device,
            "device_index": device_index,
            "compute_type": compute_type,
            "inter_threads": cores // per_batch if device == "cpu" else 1,  # a GPU takes one batch at a time
            "intra_threads": per_batch,
        }
        self._loading = threading.Lock()  # one thread loads a closed engine again, the others wait for it
        with self._folder() as folder:
            if not is_export(folder):
                raise UserError(
                    f"{folder} is not a minitrans CTranslate2 export (no {MANIFEST} and model.bin); "
                    "make one with: python export.py -c RUN DIR"
                )
            try:
                manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
                models = [(folder / name).read_bytes() for name in manifest["spm"]]
                forms = manifest.get("src_forms")  # an export written before they were kept has none
                forms = (folder / forms).read_text(encoding="utf-8").splitlines() if forms else ()
                self.tokenizer = Tokenizer(models[0], models[-1], forms)
                self.manifest, self.max_len, self.pieces = manifest, manifest["max_len"], manifest["special_pieces"]
            except (OSError, ValueError, KeyError, TypeError, RuntimeError) as e:  # RuntimeError: SentencePiece's
                raise UserError(
                    f"{folder} is not a readable export ({type(e).__name__}: {one_line(str(e))[:200]}); "
                    "export it again with: python export.py -c RUN DIR --force"
                ) from None
            self.engine: Any = self._load(folder)
        self.search = search.fits(self.max_len)

    def _folder(self) -> AbstractContextManager[Path]:
        """The export's folder, for as long as the block lasts: a package's is unpacked anew."""
        return unpacked(self.path) if self._package else nullcontext(self.path)

    def _load(self, folder: Path) -> Any:
        """CTranslate2's translator of the export in `folder`; it holds the whole model in memory."""
        import ctranslate2

        # CTranslate2 sets this thread's OpenMP threads to intra_threads as it loads the model, and
        # torch shares that OpenMP runtime: the host's torch threads are set back after; CTranslate2's
        # own workers keep theirs
        try:
            with torch_threads(None):
                return ctranslate2.Translator(str(folder), **self._engine_settings)
        except Exception as e:  # noqa: BLE001 - a corrupt model.bin fails with RuntimeError, ValueError, IndexError...
            raise UserError(f"CTranslate2 cannot load {folder}: {one_line(str(e)) or type(e).__name__}") from None

    def _loaded(self) -> Any:
        """The engine, loaded again (from the export, or unpacked again from the package) if closed."""
        with self._loading:
            if self.engine is None:
                with self._folder() as folder:
                    self.engine = self._load(folder)
            return self.engine

    def close(self) -> None:
        """Let the model and CTranslate2's threads go (a search under way keeps them until it
        ends); a later call loads it again."""
        with self._loading:
            self.engine = None

    def _search(
        self, sentences: Sequence[str], n_best: int, progress: Progress, suppress: Sequence[Sequence[str]] = ()
    ) -> list[list[tuple[list[str], float]]]:
        """(output pieces, score) of the n best hypotheses of each sentence; [] for a blank one."""
        engine = self._loaded()
        ids, self.truncated = source_ids(self.tokenizer, sentences, self.max_len)
        sources = [[self.tokenizer.src.id_to_piece(i) for i in x] for x in ids]
        results: list[list[tuple[list[str], float]]] = [[] for _ in sources]
        search = self.search
        limits = length_limits(
            torch.tensor([len(pieces) for pieces in sources]), search.max_len_ratio, search.max_len_extra, self.max_len
        ).tolist()  # ours, per sentence
        # every batch submitted at once (asynchronous), the longest first: the engine's workers
        # take them in turn, and none is left with a long one at the end while the others idle.
        # CTranslate2 takes one length limit a batch: its longest source's.
        chunks = list(reversed(list(length_sorted_batches(sources, search.batch_size or BATCH_SIZE))))
        submitted = [
            self._submit(engine, [sources[i] for i in chunk], n_best, limits[chunk[-1]], suppress) for chunk in chunks
        ]
        for chunk, found in zip(chunks, submitted):  # read in the order sent: about the order they finish
            for i, waiting in zip(chunk, found):
                result = waiting.result()
                results[i] = list(zip(result.hypotheses, result.scores))
            if progress:
                progress(len(chunk))
        # A hypothesis that ran past its own sentence's limit (a batch-mate's was longer) is not
        # cut, which would leave it the score of the longer text: its sentence is decoded again,
        # beside those of the same limit, so that every score is its text's.
        over: dict[int, list[int]] = {}
        for i, hyps in enumerate(results):
            if any(len(pieces) > limits[i] for pieces, _ in hyps):
                over.setdefault(limits[i], []).append(i)
        for limit, again in over.items():
            for i, waiting in zip(again, self._submit(engine, [sources[i] for i in again], n_best, limit, suppress)):
                result = waiting.result()
                results[i] = list(zip(result.hypotheses, result.scores))
        return results

    def _submit(
        self, engine: Any, sources: list[list[str]], n_best: int, limit: int, suppress: Sequence[Sequence[str]]
    ) -> list:
        """The search of one batch of source pieces by `engine`, submitted (CTranslate2's async
        results); no output holds a piece sequence of `suppress`."""
        search = self.search
        return engine.translate_batch(
            sources,
            beam_size=search.beam_size,
            num_hypotheses=n_best,
            length_penalty=search.length_penalty,
            max_decoding_length=limit,
            return_scores=True,
            disable_unk=True,
            suppress_sequences=[[self.pieces["pad"]], [self.pieces["bos"]], *map(list, suppress)],
            asynchronous=True,
        )

    def _translate(self, sentences: Sequence[str], progress: Progress) -> list[str]:
        return [self._text(hyps[0][0]) if hyps else "" for hyps in self._search(sentences, 1, progress)]
