"""A translator shared between threads, as a web server's threads share it: each thread gets its
own translations and its own count of truncated sentences, with either engine, also while our
engine's worker processes decode several batches a call."""

import threading

import pytest

from helpers import toy_sentences
from inference.contract import LineTranslator
from inference.search_config import SearchConfig

OVERLONG = " ".join(["Hund"] * 400)  # one sentence of more pieces than the ci model reads


def _translator(engine: str, ci_run, ci_export) -> LineTranslator:
    """Two workers (our processes, CTranslate2's threads), small batches so that a call has
    several, and lines taken as people type them (split into sentences, recased, guarded)."""
    search = SearchConfig(beam_size=2, batch_size=3)
    if engine == "minitrans":
        from inference.checkpoint import load_for_inference
        from inference.translator import Translator

        model, tokenizer, _ = load_for_inference(ci_run)
        translator: LineTranslator = Translator(model, tokenizer, search, workers=2, threads=1)
    else:
        from inference.ct2_translator import CTranslate2Translator

        translator = CTranslate2Translator(ci_export, search, threads=2)
    translator.split_lang = "de"
    return translator


@pytest.mark.parametrize("threads", [2, 8])
@pytest.mark.parametrize("engine", ["minitrans", "ctranslate2"])
def test_threads_sharing_a_translator_each_get_their_own_translations(engine, threads, ci_run, ci_export):
    """`threads` threads, 20 rounds each, all at once on one translator, each translating lines
    of its own (a paragraph among them; the first thread's also an overlong sentence): every
    round's translations are those the thread's lines get alone, and only the first thread
    counts a truncated sentence."""
    sentences = toy_sentences()
    own = [[" ".join(sentences[5 * i : 5 * i + 3]), *sentences[5 * i + 3 : 5 * i + 5]] for i in range(threads)]
    own[0].append(OVERLONG)
    with _translator(engine, ci_run, ci_export) as translator:
        alone = [translator.translate_nbest(lines, 2) for lines in own]
        assert len({str(a) for a in alone}) == threads  # each thread's are told apart
        start, failures = threading.Barrier(threads), []

        def rounds(i: int) -> None:
            try:
                start.wait()
                for _ in range(20):
                    assert translator.translate_nbest(own[i], 2) == alone[i]
                    assert translator.truncated == (i == 0)
            except BaseException as e:  # noqa: BLE001 - told in the main thread
                failures.append(f"thread {i}: {type(e).__name__}: {e}")

        running = [threading.Thread(target=rounds, args=(i,)) for i in range(threads)]
        for thread in running:
            thread.start()
        for thread in running:
            thread.join()
    assert not failures, failures[:3]
