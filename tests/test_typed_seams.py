"""What translate.py does around the model, on the lines of issue #65's table of seams: each row
what the model reads of a typed line, and what comes back when the model copies what it reads
(inference/contract.py's by_sentence, with numbers, casing and splitting as a translator runs
them). Before these were mended the model read stand-ins it merged ("3,50" -> "2,3" -> "23"), a
2 for a 1 ("1 Hund" -> "2 Hund"), an ordinal cut from its noun, a lower-case paragraph whole,
Chinese as capitals, and an emoji or a URL alone as a sentence to translate."""

import pytest

from inference.casing import recased
from inference.contract import by_sentence

# (typed, the sentences the model reads)
SEAMS = [
    ("Der Preis ist 3,50 Euro.", ["Der Preis ist 2 Euro."]),
    ("Wir treffen uns um 10:30 Uhr.", ["Wir treffen uns um 2 Uhr."]),
    ("1 Hund rennt.", ["1 Hund rennt."]),
    ("Sie belegt den 1. Platz.", ["Sie belegt den 1. Platz."]),
    ("Zwei Männer und 5 Hunde.", ["Zwei Männer und 5 Hunde."]),
    ("Ein Mann im 2. Stock.", ["Ein Mann im 2. Stock."]),
    ("Am 28.11.2026 kamen 1.000 Leute.", ["Am 2 kamen 3 Leute."]),
    ("Ein Hund rennt. 3 Hunde folgen.", ["Ein Hund rennt.", "3 Hunde folgen."]),
    ("ein hund rennt. eine katze schläft.", ["<ein hund rennt.>", "<eine katze schläft.>"]),
    ("你好", ["你好"]),
    ("😀", []),
    ("https://example.com", []),
    ("ich@example.com 😀", []),
]


def marked(sentence: str) -> str:
    """A recasing that shows where it ran."""
    return f"<{sentence}>"


@pytest.mark.parametrize("typed, read", SEAMS, ids=[typed for typed, _ in SEAMS])
def test_the_model_reads_what_it_can_and_a_copy_comes_back_as_typed(typed, read):
    given: list[str] = []

    def copying_model(sentences, _):  # translates each sentence into itself
        given.extend(s for s in sentences if s)
        return [[(s, -1.0)] if s else [] for s in sentences]

    [[(out, _)]] = by_sentence([typed], "de", copying_model, marked)
    assert given == read
    if not any(s.startswith("<") for s in read):
        assert out == typed  # numbers back as typed, nothing upper-cased, a copy-through as it was


def test_a_recased_sentence_keeps_what_is_written_to_be_copied(toy):
    """Recasing ("besuchen sie ..." typed without capitals) leaves a URL, an address, a handle and
    a file name as written, and capitalises the first word only where it is not one of them."""
    tokenizer = toy.tokenizer
    out = recased("ein hund sieht https://example.com/x und ich@web.de, @hund, bild.jpg", tokenizer.src, {})
    assert out.startswith("Ein ") and all(
        w in out.split() for w in ("https://example.com/x", "ich@web.de,", "@hund,", "bild.jpg")
    )
    assert recased("www.example.com ist gut", tokenizer.src, {}).startswith("www.example.com ")
    assert recased("siehe z.B. den hund", tokenizer.src, {}).startswith("Siehe ")  # an abbreviation is no address


def test_an_address_does_not_change_the_case_a_sentence_is_typed_in():
    """A sentence in capitals with an address in lower case is in capitals: it goes to the model
    recased, and its translation comes back in capitals but for the address, as written."""
    given: list[str] = []

    def copying_model(sentences, _):
        given.extend(sentences)
        return [[(s.replace("<", "").replace(">", ""), -1.0)] for s in sentences]

    [[(out, _)]] = by_sentence(["SCHREIB AN anna@web.de HEUTE"], "de", copying_model, marked)
    assert given == ["<SCHREIB AN anna@web.de HEUTE>"] and out == "SCHREIB AN anna@web.de HEUTE"


def test_a_model_that_writes_numbers_digit_by_digit_reads_them_as_typed():
    """Stand-ins are for a vocabulary that keeps digits together; where it writes a number digit
    by digit (data.tokenizer.split_digits) the model copies numbers itself, better than through
    stand-ins (docs/recipe_search.md), and reads them as typed."""
    given: list[str] = []

    def copying_model(sentences, _):
        given.extend(sentences)
        return [[(s, -1.0)] for s in sentences]

    [[(out, _)]] = by_sentence(["Der Preis ist 3,50 Euro, nicht 12345."], "de", copying_model, marked, stand_ins=False)
    assert given == ["Der Preis ist 3,50 Euro, nicht 12345."] and out == given[0]
