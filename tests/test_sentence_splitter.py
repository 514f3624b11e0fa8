"""The sentence splitter of Argos packages (inference/sentence_splitter.py): what it learns from,
its features as MiniSBD computes them, its scores, and its ONNX form read by MiniSBD itself."""

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import toy_sentences
from inference.sentence_splitter import (
    FEATURES,
    SENTENCE_END,
    WORD_END,
    boundary_scores,
    export_onnx,
    features,
    labels,
    normalize,
    train_splitter,
)

minisbd = pytest.importorskip("minisbd", reason="minisbd is not installed (requirements.txt has it)")

pytestmark = pytest.mark.xdist_group("test_sentence_splitter")  # one worker trains the splitter once


def test_each_line_ends_a_sentence_and_each_word_a_word():
    paragraph, classes = labels(["Ein Hund rennt.", "Zwei  Kinder", "Ja!"])
    assert paragraph == "Ein Hund rennt. Zwei  Kinder Ja!"
    ends = {i: paragraph[: i + 1] for i in np.flatnonzero(classes)}
    assert [classes[i] for i in ends] == [WORD_END, WORD_END, SENTENCE_END, WORD_END, SENTENCE_END, SENTENCE_END]
    assert [ends[i][-3:] for i in ends] == ["Ein", "und", "nt.", "wei", "der", "Ja!"]


@settings(max_examples=200, deadline=None)
@given(st.text(st.sampled_from("aZ9 .ÄßÉ\t\n\u00a0!?,٣x"), min_size=1, max_size=40))
def test_the_features_are_minisbds(text):
    """For any paragraph (digits of other scripts, non-breaking spaces, tabs), the features we
    train on are those MiniSBD computes when it runs the model."""
    from minisbd.modules import TokenizationDataset, Vocab

    config = {"feat_funcs": list(FEATURES), "use_dictionary": False, "num_dict_feat": 0, "skip_newline": False}
    vocab = Vocab.load_state_dict({"lang": "de", "_unit2id": {"<PAD>": 0, "<UNK>": 1}, "_id2unit": ["<PAD>", "<UNK>"]})
    paragraph = text.replace("\n", " ")  # one paragraph: MiniSBD splits at blank lines
    dataset = TokenizationDataset(config, text=paragraph, vocab=vocab)
    theirs = [dataset.para_to_sentences(para)[0] for para in dataset.data]
    ours = normalize(paragraph).rstrip()
    if not ours:
        assert theirs == []
        return
    (_, _, their_features, their_units) = theirs[0]
    assert "".join(their_units) == ours
    np.testing.assert_array_equal(features(ours), their_features)


def test_the_scores_count_boundaries_inside_paragraphs():
    """Known answers: a perfect splitter scores 1 and 1; one that never splits finds nothing
    (precision 1 by convention, recall 0); one that splits at every full stop of sentences
    holding two is wrong once for each."""
    lines = ["Ein Hund rennt.", "Zwei Kinder spielen.", "Hier. Dort.", "Ja."] * 5
    perfect = boundary_scores(lambda p: _split_known(p, lines), lines)
    assert perfect["precision"] == perfect["recall"] == 1.0 and perfect["boundaries"] > 0
    never = boundary_scores(lambda p: [p], lines)
    assert never["precision"] == 1.0 and never["recall"] == 0.0
    stops = boundary_scores(lambda p: [s + "." for s in p.rstrip(".").split(". ")], lines)
    assert stops["recall"] == 1.0 and stops["precision"] < 1.0


def _split_known(paragraph: str, lines: list[str]) -> list[str]:
    """The paragraph cut back into the lines it was made of (every line is known)."""
    pieces = []
    while paragraph:
        line = next(line for line in sorted(set(lines), key=len, reverse=True) if paragraph.startswith(line))
        pieces.append(line)
        paragraph = paragraph[len(line) :].lstrip()
    return pieces


@pytest.fixture(scope="module")
def splitter():
    return train_splitter(toy_sentences("train"), epochs=4)  # 3 learnt the toy corpus before as_typed varied it


def test_a_splitter_trained_on_the_toy_corpus_finds_its_boundaries(splitter):
    scores = boundary_scores(splitter.split, toy_sentences("val"))
    assert scores["boundaries"] > 50
    assert scores["precision"] >= 0.97 and scores["recall"] >= 0.97, scores
    assert splitter.split("Zwei Hunde schlafen am Strand. Ein Vogel spielt heute!  Eine Frau sitzt?") == [
        "Zwei Hunde schlafen am Strand.",
        "Ein Vogel spielt heute!",
        "Eine Frau sitzt?",
    ]


def test_minisbd_splits_with_the_onnx_export_as_we_do(splitter, tmp_path):
    """The exported model, loaded by MiniSBD as argostranslate loads a package's, splits every
    paragraph where the model itself does (paragraphs of the toy test split, shuffled words
    among them so that boundaries are unsure)."""
    path = tmp_path / "de.onnx"
    export_onnx(splitter, path, "de")
    detector = minisbd.SBDetect(str(path), use_gpu=False)
    rng = random.Random(0)
    lines = toy_sentences()
    words = " ".join(lines).split()
    paragraphs = [" ".join(lines[i : i + rng.randint(1, 6)]) for i in range(0, len(lines), 4)]
    paragraphs += [" ".join(rng.sample(words, 30)) for _ in range(20)]
    for paragraph in paragraphs:
        assert [normalize(s).strip() for s in detector.sentences(paragraph)] == splitter.split(paragraph)
