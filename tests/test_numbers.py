"""inference/numbers.py: numbers go to the model as one-digit stand-ins and come back as written
(in a translator's lines: test_contract.py; measured by bench/robustness.py's numbers variant)."""

from inference.numbers import STAND_INS, restored, with_stand_ins


def test_each_distinct_number_gets_the_next_stand_in_in_order_of_first_appearance():
    assert with_stand_ins("Um 14 Uhr kamen 1999 Leute, um 14.30 Uhr 3.") == (
        "Um 2 Uhr kamen 3 Leute, um 2.4 Uhr 5.",
        {"2": "14", "3": "1999", "4": "30", "5": "3"},
    )
    assert with_stand_ins("Ein Hund.") == ("Ein Hund.", {})


def test_a_translation_gets_the_numbers_back_where_the_stand_ins_are_and_nowhere_else():
    sentence, numbers = with_stand_ins("Um 14 Uhr kamen 1999 Leute, um 14.30 Uhr 3.")
    assert restored("At 2 o'clock 3 people came, 5 at 2.4; 7 and 23 and 32 stay.", numbers) == (
        "At 14 o'clock 1999 people came, 3 at 14.30; 7 and 23 and 32 stay."
    )
    assert restored("2 dogs", {}) == "2 dogs"


def test_more_numbers_than_stand_ins_go_as_they_are():
    many = " ".join(str(10 + i) for i in range(len(STAND_INS) + 1))
    assert with_stand_ins(many) == (many, {})
    eight = " ".join(str(10 + i) for i in range(len(STAND_INS)))
    sentence, numbers = with_stand_ins(eight)
    assert sentence == " ".join(STAND_INS) and restored(sentence, numbers) == eight
