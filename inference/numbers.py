"""Numbers copied as written: each number of a sentence goes to the model as a one-digit stand-in
and comes back in its translation as it was typed.

Multi30k's few numbers are nearly all one digit ("2 Männer" -> "2 men"), so an hour's model
copies a digit but garbles a longer number, digit piece by digit piece: "12345" -> "124",
"im Jahr 1999" -> "5999". Training on random numbers in their place did not teach it to copy
them (docs/recipe_search.md, "Numbers"). So, as translators have long done with what a model
should copy rather than translate, a sentence's distinct numbers (runs of digits) become the
digits 2, 3, ... 9 in the order they first appear, and each run of digits in the translation
that is one of those stand-ins becomes the number it stands for. Why 2 to 9: one digit, which
the model copies, and a plural, as most numbers in front of a noun are (a 1 would make "1 Hunde").
A sentence of more than eight distinct numbers goes to the model as it is.
"""

import re

NUMBER = re.compile(r"\d+")
STAND_INS = "23456789"


def with_stand_ins(sentence: str) -> tuple[str, dict[str, str]]:
    """`sentence` with each distinct number replaced by its stand-in, and what each stand-in
    stands for ({} where the sentence has no number, or more than eight)."""
    numbers = list(dict.fromkeys(NUMBER.findall(sentence)))
    if not numbers or len(numbers) > len(STAND_INS):
        return sentence, {}
    stand_in = dict(zip(numbers, STAND_INS))
    return NUMBER.sub(lambda m: stand_in[m.group()], sentence), {s: n for n, s in stand_in.items()}


def restored(translation: str, numbers: dict[str, str]) -> str:
    """`translation` with each run of digits that is a stand-in of `numbers` replaced by its number."""
    if not numbers:
        return translation
    return NUMBER.sub(lambda m: numbers.get(m.group(), m.group()), translation)
