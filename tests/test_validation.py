"""What training measures and stores at its evaluations (training/validation.py): the attention
probes."""

import gzip
import os
from pathlib import Path

import pytest

from helpers import run_train
from viz.attention_store import read_step

QUICK = [
    "experiment=ci",
    "train.max_steps=10",
    "train.eval_every=10",
    "train.max_minutes=null",
    "train.threads=1",
    "train.head_importance=false",
]


@pytest.fixture(scope="module")
def data_with_pieceless_val(multi30k_dir, tmp_path_factory) -> Path:
    """Multi30k whose validation set starts with an empty sentence and one of a zero-width
    space (SentencePiece normalises it away), the first probes a run would take."""
    folder = tmp_path_factory.mktemp("multi30k")
    for name in ("train.de.gz", "train.en.gz"):
        (folder / name).symlink_to(Path(multi30k_dir) / name)
    for lang in ("de", "en"):
        with gzip.open(Path(multi30k_dir) / f"val.{lang}.gz", "rt", encoding="utf-8") as file:
            lines = [next(file).rstrip("\n") for _ in range(20)]
        lines[0], lines[2] = ("", "\u200b") if lang == "de" else ("A reference.", "Another.")
        (folder / f"val.{lang}.gz").write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    return folder


def test_validation_sentences_without_pieces_are_passed_over_as_probes(data_with_pieceless_val, tmp_path):
    run_train(tmp_path, *QUICK, env={**os.environ, "MULTI30K_DIR": str(data_with_pieceless_val)})
    with gzip.open(data_with_pieceless_val / "val.de.gz", "rt", encoding="utf-8") as file:
        val = file.read().split("\n")
    stored = read_step(tmp_path, 10)
    assert [s["source"] for s in stored.sentences] == [val[1], val[3], val[4]]  # still three probes
    assert (
        "attention probes: 2 validation sentence(s) without source pieces passed over"
        in (tmp_path / "train.log").read_text()
    )


def test_a_given_probe_sentence_without_pieces_is_refused(multi30k_dir, tmp_path):
    result = run_train(tmp_path, *QUICK, "train.attention_sentences=['Ein Hund.','\u200b']", check=False)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert (
        "train.attention_sentences: '\\u200b' has no source pieces to attend to" in result.stderr
    )  # shown, not invisible
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
