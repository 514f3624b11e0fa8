"""The committed toy corpus (tests/data/toy/README.md): Multi30k's layout, 900 German-English pairs."""

from pathlib import Path

TOY_CORPUS = Path(__file__).resolve().parents[1] / "data" / "toy"

# German sentences the tests translate with the ci run's model: short, long, one word
SENTENCES = [
    "Ein Mann fährt Fahrrad.",
    "Zwei Hunde spielen im Schnee.",
    "Eine Frau mit einem roten Hut sitzt auf einer Bank vor einem großen Gebäude.",
    "Kinder.",
]
