"""inference/splitting.py: a typed line cut into sentences as translate.py gives them to the model,
measured on paragraphs written for what captions never hold (tests/helpers/typed_paragraphs.py)."""

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.typed_paragraphs import ENGLISH_PARAGRAPHS, PARAGRAPHS
from inference.splitting import sentence_parts

CASES = [("de", *case) for case in PARAGRAPHS] + [("en", *case) for case in ENGLISH_PARAGRAPHS]


@pytest.mark.parametrize("lang, paragraph, sentences", CASES, ids=[f"{lang}: {p}" for lang, p, _ in CASES])
def test_each_written_paragraph_is_cut_into_its_sentences(lang, paragraph, sentences):
    assert [part.strip() for part in sentence_parts(paragraph, lang)] == sentences


def test_a_line_the_splitter_cannot_cut_goes_whole():
    """sentencex panics (a Rust panic, not an Exception) on a few lines; such a line is one part."""
    line = "? \n\xa0ﬁ\n\xa0."
    assert sentence_parts(line, "de") == [line]


@settings(max_examples=300, deadline=None)
@given(st.text(st.sampled_from("ab A1 .!?,:\t\n\u00a0ßÄ2ﬁ."), max_size=60))
def test_the_parts_join_back_to_the_line_and_end_where_a_sentence_may(line):
    """Whatever is typed, the parts are the line cut, nothing lost or added (its spacing comes back
    with the translation), and every cut follows an end mark or comes at a line break: none falls
    inside a word (a capital of two letters, ß's SS, would shift the cuts after it)."""
    parts = sentence_parts(line, "de")
    assert "".join(parts) == line and parts
    cuts = zip(parts, parts[1:])
    assert all(re.search(r"[.!?\n]\s*$", part) or after[:1] in "\n\r" for part, after in cuts), parts
