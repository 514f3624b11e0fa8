"""inference/search_config.py and inference/contract.py: one set of search settings, checked when
built, and one interface that both engines keep."""

import math

import pytest

from helpers import tiny_model
from inference.contract import Translating, length_sorted_batches, one_line
from inference.search_config import SearchConfig
from inference.translator import Translator
from utils.errors import UserError


@pytest.mark.parametrize(
    "settings, says",
    [
        (dict(beam_size=0), "the beam size must be a whole number of at least 1, not 0"),
        (dict(beam_size=2.5), "the beam size must be a whole number of at least 1, not 2.5"),
        (dict(batch_size=-1), "the batch size must be a whole number of at least 1, not -1"),
        (dict(length_penalty=-0.1), "the length penalty must be a number of at least 0, not -0.1"),
        (dict(length_penalty=math.inf), "the length penalty must be a number of at least 0, not inf"),
        (dict(max_len_ratio=math.nan), "the maximum length ratio must be a number of at least 0, not nan"),
        (dict(max_len_extra=-3), "the maximum extra length must be a whole number of at least 0, not -3"),
    ],
)
def test_bad_settings_are_refused_when_built_not_when_first_used(settings, says):
    with pytest.raises(UserError) as raised:
        SearchConfig(**settings)
    assert str(raised.value) == says


def test_limits_are_checked_against_the_model_that_will_search():
    search = SearchConfig(max_len_ratio=math.inf)  # a number; whether it fits depends on the model
    with pytest.raises(UserError, match="from 0 to 64 \\(the model's positions\\), not inf"):
        Translator(tiny_model(), tokenizer=None, search=search)
    assert SearchConfig(max_len_extra=64).fits(64).max_len_extra == 64


def test_our_engine_keeps_the_interface():
    """(the CTranslate2 engine's check is in tests/test_ct2_export.py: it needs an export)"""
    assert isinstance(Translator(tiny_model(), tokenizer=None), Translating)
    assert not isinstance(object(), Translating)


def test_batches_are_length_sorted_and_leave_empty_sources_out():
    sources = [[1, 2, 3], [], [1], [1, 2], [], [1, 2, 3, 4]]
    batches = list(length_sorted_batches(sources, batch_size=2))
    assert batches == [[2, 3], [0, 5]]


def test_a_translation_is_one_line():
    assert one_line("a\nb\u2028c\r\nd") == "a b c d"
