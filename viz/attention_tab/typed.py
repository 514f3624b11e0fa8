"""Your own sentence in the ATTENTION tab: translated with a checkpoint of the run, in
TensorBoard's process, into the same maps and values as a stored evaluation. Several sentences
typed at once are split as translate.py splits a line (inference/splitting.py)
and each is translated and shown alone, as the probes of an evaluation are.

A checkpoint is known by its identity, its path with the modification time and size of the file
(`identity`): training rewrites best.pt under the same name, and a result of the old file must
never be shown as the new one's. The page asks for a sentence's maps once per kind and its values
once per query, naming the identity the first answer gave, so the last results are kept, up to
KEEP_BYTES of arrays; one request computes at a time. The model is loaded on the first request
for a checkpoint and kept (one at a time). torch is imported on the first request, not when
TensorBoard starts.
"""

import threading
from collections import OrderedDict
from pathlib import Path

from utils.errors import UserError
from viz.attention_store import StoredStep, in_memory

MAX_PIECES = 100  # a few sentences, not a document: keeps one request well under a second
KEEP_BYTES = 256 * 2**20  # kept results' arrays (float16): 8 typed sentences of a base model, hundreds of small ones


class TypedError(ValueError):
    """A typed sentence that cannot be shown: its message for the page and an HTTP status."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def identity(checkpoint: Path) -> str:
    """What tells two versions of a checkpoint file apart: modification time and size."""
    try:
        stat = checkpoint.stat()
    except FileNotFoundError:  # removed since it was listed (training keeps only the last few)
        raise TypedError(f"checkpoint {checkpoint.name} is no longer there", 404) from None
    return f"{stat.st_mtime_ns}-{stat.st_size}"


def stored_bytes(stored: StoredStep) -> int:
    return sum(array.nbytes for array in stored.arrays.values())


class TypedSentences:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loaded: tuple[tuple[str, str], object] | None = None  # ((path, identity), Translator)
        self._results: OrderedDict[tuple[str, str, str], StoredStep] = OrderedDict()  # (path, identity, text)
        self._bytes = 0

    def stored(self, checkpoint: Path, text: str, version: str | None = None) -> tuple[StoredStep, str]:
        """`text` translated by `checkpoint` (beam 5, as translate.py) with all its attention, as
        one probe, and the identity of the checkpoint file that translated it. With `version` (an
        identity an earlier answer gave) the result of that version, if it is still kept or still
        the file's. TypedError with the message for the page if it cannot be."""
        text = text.strip()
        if not text:
            raise TypedError("type a sentence to translate")
        with self._lock:
            current = identity(checkpoint)
            key = (str(checkpoint), version or current, text)
            if key in self._results:
                self._results.move_to_end(key)
                return self._results[key], key[1]
            if key[1] != current:
                raise TypedError(
                    f"checkpoint {checkpoint.name} was rewritten since this sentence was translated "
                    "(training goes on): translate it again",
                    409,
                )
            translator = self._translator(key[:2])
            pieces = len(translator.tokenizer.encode_src([text])[0])
            if pieces > MAX_PIECES:
                raise TypedError(f"the text has {pieces} pieces; at most {MAX_PIECES} are translated here")
            from inference.splitting import sentence_parts  # torch: only once a sentence is typed

            lang = translator.split_lang  # the source language (None with load_translator's whole_lines)
            sentences = [part.strip() for part in sentence_parts(text, lang)] if lang else [text]
            attentions = [a for a in translator.attention(sentences, inside=True) if a is not None]
            if not attentions:
                raise TypedError(
                    "the sentence has no pieces the model reads (only spaces or characters the tokenizer drops)"
                )
            if identity(checkpoint) != current:  # rewritten while it loaded: which weights did it read?
                self._loaded = None
                raise TypedError(
                    f"checkpoint {checkpoint.name} was being rewritten (training goes on): translate it again", 409
                )
            stored = self._results[key] = in_memory(attentions)
            self._bytes += stored_bytes(stored)
            while self._bytes > KEEP_BYTES and len(self._results) > 1:  # the newest always stays
                self._bytes -= stored_bytes(self._results.popitem(last=False)[1])
            return stored, current

    def _translator(self, version: tuple[str, str]):
        if self._loaded is None or self._loaded[0] != version:
            from inference import load_translator  # torch: only once a sentence is typed
            from utils.device import usable_cores

            if self._loaded is not None:  # the old model goes before the new one loads
                self._loaded[1].close()
            self._loaded = None
            try:
                # one group of all the cores: every batch decoded here, never in forked workers (a
                # threaded server must not fork: a child forked while another thread holds a lock
                # can hang on it, and the workers would stay until the checkpoint changes)
                translator = load_translator(
                    version[0], engine="minitrans", device="cpu", threads_per_batch=usable_cores()
                )
                self._loaded = (version, translator)
            except UserError as error:
                raise TypedError(str(error)) from None
        return self._loaded[1]
