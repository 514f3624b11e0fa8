"""inference/numbers.py: longer numbers go to the model as one-digit stand-ins and come back as
written (in a translator's lines: test_contract.py and test_typed_seams.py; measured by
bench/robustness.py's numbers variant)."""

from inference.numbers import STAND_INS, restored, with_stand_ins


def test_each_distinct_longer_number_gets_the_next_free_stand_in_in_order_of_first_appearance():
    """A number with its separators is one (14.30, 3,50); a number of one digit goes as typed, and
    its digit is no stand-in (3 here)."""
    assert with_stand_ins("Um 14 Uhr kamen 1999 Leute, um 14.30 Uhr 3 für 3,50 Euro.") == (
        "Um 2 Uhr kamen 4 Leute, um 5 Uhr 3 für 6 Euro.",
        {"2": "14", "4": "1999", "5": "14.30", "6": "3,50"},
    )
    assert with_stand_ins("Ein Hund.") == ("Ein Hund.", {})
    assert with_stand_ins("1 Hund belegt den 1. Platz.") == ("1 Hund belegt den 1. Platz.", {})
    assert with_stand_ins("Am 28.11.2026 um 10:30.") == ("Am 2 um 3.", {"2": "28.11.2026", "3": "10:30"})


def test_a_translation_gets_the_numbers_back_where_the_stand_ins_are_and_nowhere_else():
    sentence, numbers = with_stand_ins("Um 14 Uhr kamen 1999 Leute, um 14.30 Uhr 3.")
    assert sentence == "Um 2 Uhr kamen 4 Leute, um 5 Uhr 3."
    assert restored("At 2 o'clock 4 people came, 5 at 2.4; 3 and 7 and 23 and 42 stay.", numbers) == (
        "At 14 o'clock 1999 people came, 14.30 at 14.1999; 3 and 7 and 23 and 42 stay."
    )
    assert restored("2 dogs", {}) == "2 dogs"


def test_more_numbers_than_stand_ins_go_as_they_are():
    many = " ".join(str(10 + i) for i in range(len(STAND_INS) + 1))
    assert with_stand_ins(many) == (many, {})
    eight = " ".join(str(10 + i) for i in range(len(STAND_INS)))
    sentence, numbers = with_stand_ins(eight)
    assert sentence == " ".join(STAND_INS) and restored(sentence, numbers) == eight
    crowded = "2 3 4 5 6 7 8 und 10 und 11"  # seven digits of its own: one stand-in free, two numbers
    assert with_stand_ins(crowded) == (crowded, {})
