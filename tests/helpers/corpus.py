"""The committed toy corpus (tests/data/toy/README.md): Multi30k's layout, 900 German-English pairs."""

import random
from pathlib import Path

TOY_CORPUS = Path(__file__).resolve().parents[1] / "data" / "toy"

# Overrides that train on the toy corpus: every run of the suite that needs some corpus, not
# Multi30k itself, appends them (SentencePiece cannot learn experiment=ci's 1,000 pieces from 700 pairs)
TOY_DATA = (f"data.dir={TOY_CORPUS}", "data.tokenizer.vocab_size=340")


def toy_sentences(split: str = "test_2016_flickr", lang: str = "de") -> list[str]:
    """One side of a split of the toy corpus, a sentence a line."""
    return (TOY_CORPUS / f"{split}.{lang}").read_text(encoding="utf-8").splitlines()


def unseen_sentences(n: int = 40) -> list[str]:
    """German the toy corpus's models have not learnt: its validation sentences with their words
    shuffled (seeded). A model trained on the toy corpus is unsure of them, so that search
    settings (beam, length penalty) change its translations, as on real text."""
    rng = random.Random(0)
    sentences = []
    for sentence in toy_sentences("val")[:n]:
        words = sentence.rstrip(".").split()
        rng.shuffle(words)
        sentences.append(" ".join(words) + ".")
    return sentences


def half_sentences(n: int = 100) -> list[str]:
    """The first half of each of the first `n` toy validation sentences, without its end: a model
    trained on the toy corpus is unsure where to stop, and beam search changes the translation
    of some of them (13 of 100 for the experiment=ci model at 444480e, where it changed none of
    unseen_sentences(100))."""
    return [" ".join(s.split()[: len(s.split()) // 2]) for s in toy_sentences("val")[:n]]


# German sentences the tests translate with the ci run's model: short, long, one word
SENTENCES = [
    "Ein Mann fährt Fahrrad.",
    "Zwei Hunde spielen im Schnee.",
    "Eine Frau mit einem roten Hut sitzt auf einer Bank vor einem großen Gebäude.",
    "Kinder.",
]
