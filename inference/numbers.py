"""Numbers copied as written: each longer number of a sentence goes to the model as a one-digit
stand-in and comes back in its translation as it was typed.

Multi30k's few numbers are nearly all one digit ("2 Männer" -> "2 men"), so an hour's model of a
vocabulary that keeps digits together copies a digit but garbles a longer number, digit piece by
digit piece: "12345" -> "124", "im Jahr 1999" -> "5999". Training on random numbers in their
place did not teach it to copy them (docs/recipe_search.md, "Numbers"). So, as translators have
long done with what a model should copy rather than translate, a sentence's distinct numbers of
two digits or more, or written with their separators (3,50; 10:30; 1.000; 28.11.2026: one number
each), become one-digit stand-ins in the order they first appear, and each run of digits in the
translation that is one of those stand-ins becomes the number it stands for.

A number of one digit goes as typed: the model copies it, and it says what it says ("1 Hund",
"den 1. Platz": a stand-in 2 would make "2 Hund" of it, and "2nd" of "1."). The stand-ins are the
digits 2 to 9 that the sentence does not hold as numbers of its own: a plural, as most numbers in
front of a noun are, and never one the translation could hold for itself. A sentence with more
longer numbers than free digits goes to the model as it is.
"""

import re

NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")  # 4071, 3,50, 10:30, 1.000, 28.11.2026: one number each
DIGITS = re.compile(r"\d+")
STAND_INS = "23456789"


def with_stand_ins(sentence: str) -> tuple[str, dict[str, str]]:
    """`sentence` with each distinct number of two digits or more (with its separators) replaced
    by its stand-in, and what each stand-in stands for ({} where it has none, or more than the
    free stand-ins)."""
    found = NUMBER.findall(sentence)
    longer = list(dict.fromkeys(n for n in found if len(n) > 1))
    free = [d for d in STAND_INS if d not in found]  # a digit the sentence holds alone stays its own
    if not longer or len(longer) > len(free):
        return sentence, {}
    stand_in = dict(zip(longer, free))
    return NUMBER.sub(lambda m: stand_in.get(m.group(), m.group()), sentence), {s: n for n, s in stand_in.items()}


def restored(translation: str, numbers: dict[str, str]) -> str:
    """`translation` with each run of digits that is a stand-in of `numbers` replaced by its number."""
    if not numbers:
        return translation
    return DIGITS.sub(lambda m: numbers.get(m.group(), m.group()), translation)
