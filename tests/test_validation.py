"""What training measures and stores at its evaluations (training/validation.py): the attention
probes."""

from pathlib import Path

import pytest

from helpers import TOY_CORPUS, TOY_DATA, run_train, toy_sentences
from viz.attention_store import read_step

QUICK = [
    "experiment=ci",
    *TOY_DATA,
    "train.max_steps=10",
    "train.eval_every=10",
    "train.max_minutes=null",
    "train.threads=1",
    "train.head_importance=false",
]


@pytest.fixture(scope="module")
def data_with_pieceless_val(tmp_path_factory) -> Path:
    """The toy corpus whose validation set starts with an empty sentence and one of a zero-width
    space (SentencePiece normalises it away), the first probes a run would take."""
    folder = tmp_path_factory.mktemp("toy")
    for name in ("train.de", "train.en"):
        (folder / name).symlink_to(TOY_CORPUS / name)
    for lang in ("de", "en"):
        lines = toy_sentences("val", lang)[:20]
        lines[0], lines[2] = ("", "\u200b") if lang == "de" else ("A reference.", "Another.")
        (folder / f"val.{lang}").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def test_validation_sentences_without_pieces_are_passed_over_as_probes(data_with_pieceless_val, tmp_path):
    run_train(tmp_path, *QUICK, f"data.dir={data_with_pieceless_val}")
    val = (data_with_pieceless_val / "val.de").read_text(encoding="utf-8").split("\n")
    stored = read_step(tmp_path, 10)
    assert [s["source"] for s in stored.sentences] == [val[1], val[3], val[4]]  # still three probes
    assert (
        "attention probes: 2 validation sentence(s) without source pieces passed over"
        in (tmp_path / "train.log").read_text()
    )


def test_a_given_probe_sentence_without_pieces_is_refused(tmp_path):
    result = run_train(tmp_path, *QUICK, "train.attention_sentences=['Ein Hund.','\u200b']", check=False)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert (
        "train.attention_sentences: '\\u200b' has no source pieces to attend to" in result.stderr
    )  # shown, not invisible
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
