"""inference/scoring.py: BLEU as published Multi30k results measure it, on known answers."""

import pytest
import sacrebleu

from inference.scoring import moses_bleu


def test_moses_bleu_compares_lowercased_moses_tokens():
    """Multi30k's own preprocessing (lowercase, normalise punctuation, Moses-tokenize) on both
    sides: case, attached punctuation and typographic quotes stop mattering, word order does not."""
    hypotheses = ["Zwei Hunde spielen im Schnee.", "Ein Mann ruft „Hallo“ in die Menge."]
    references = ["zwei hunde spielen im schnee .", 'ein mann ruft " hallo " in die menge .']
    assert moses_bleu(hypotheses, references, "de") == pytest.approx(100.0)
    assert sacrebleu.corpus_bleu(hypotheses, [references]).score < 60  # cased, detokenized: far from equal
    shuffled = ["Schnee im spielen Hunde zwei.", "Menge die in „Hallo“ ruft Mann ein."]
    assert moses_bleu(shuffled, references, "de") < 20
