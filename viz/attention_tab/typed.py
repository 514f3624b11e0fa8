"""Your own sentence in the ATTENTION tab: translated with a checkpoint of the run, in
TensorBoard's process, into the same maps and values as a stored evaluation.

The model is loaded on the first request for a checkpoint and kept (one at a time: a new
checkpoint replaces it, as does a newer file under the same name, which training rewrites);
the last sentences' results are kept too, since the page asks for a sentence's maps once per
kind and its values once per query. One request computes at a time. torch is imported on the
first request, not when TensorBoard starts.
"""
import threading
from collections import OrderedDict
from pathlib import Path

from utils.errors import UserError
from viz.attention_store import StoredStep, in_memory

MAX_CHARACTERS = 300  # a sentence, not a document: keeps one request well under a second
KEEP_RESULTS = 32


class TypedSentences:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loaded: tuple[tuple, object] | None = None  # ((path, mtime), Translator)
        self._results: OrderedDict[tuple, StoredStep] = OrderedDict()

    def stored(self, checkpoint: Path, text: str) -> StoredStep:
        """`text` translated by `checkpoint` (beam 5, as translate.py) with all its attention,
        as one probe; ValueError with the message for the page if it cannot be."""
        text = text.strip()
        if not text:
            raise ValueError("type a sentence to translate")
        if len(text) > MAX_CHARACTERS:
            raise ValueError(f"the sentence has {len(text)} characters; at most {MAX_CHARACTERS} are translated here")
        try:
            version = (str(checkpoint), checkpoint.stat().st_mtime_ns)
        except FileNotFoundError:  # removed since it was listed (training keeps only the last few)
            raise ValueError(f"checkpoint {checkpoint.name} is no longer there") from None
        with self._lock:
            if (version, text) in self._results:
                self._results.move_to_end((version, text))
                return self._results[(version, text)]
            [attention] = self._translator(version).attention([text], inside=True)
            if attention is None:
                raise ValueError("the sentence has no pieces the model reads (only spaces or characters the "
                                 "tokenizer drops)")
            stored = self._results[(version, text)] = in_memory([attention])
            while len(self._results) > KEEP_RESULTS:
                self._results.popitem(last=False)
            return stored

    def _translator(self, version: tuple):
        if self._loaded is None or self._loaded[0] != version:
            from inference import load_translator  # torch: only once a sentence is typed

            self._loaded = None  # the old model goes before the new one loads
            try:
                self._loaded = (version, load_translator(version[0], engine="minitrans", device="cpu"))
            except UserError as error:
                raise ValueError(str(error)) from None
        return self._loaded[1]
