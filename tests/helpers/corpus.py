"""The committed toy corpus (tests/data/toy/README.md): Multi30k's layout, 900 German-English pairs."""
from pathlib import Path

TOY_CORPUS = Path(__file__).resolve().parents[1] / "data" / "toy"
