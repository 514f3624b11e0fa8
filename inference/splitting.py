"""A typed line cut into its sentences, as translate.py and the Python API give them to the model
(which was trained on one caption a line).

sentencex (Wikimedia's rule-based segmenter) does the cutting, with its abbreviation lists per
language. Its rules expect a sentence to start with a capital, and so miss what people type:
`ein hund rennt. eine katze schläft.` stays one sentence, so does `Er rennt. 3 Hunde folgen.`;
and it cuts German ordinals off (`Ein Mann im 2. Stock.` -> `Ein Mann im 2.` / `Stock.`). So
sentencex reads a probe of the line, of the same length: a digit that follows an end mark (a
full stop, question or exclamation mark; not an ellipsis) and spacing written as `X`, and, in a
line without capitals, each letter there written as its capital (in a line with capitals a
lower-case letter after a full stop is what tells sentencex that an abbreviation ends no
sentence: `Hauptstr. in Berlin`). Its cuts are made at the same places in the line as typed. In
German, a cut right after an article or a preposition with an article and a number of one to
three digits with its full stop (`im 2.`, `den 14.`) is undone: that is an ordinal. The cut stays
where the part after it starts with a personal pronoun in the nominative or `man`, which no
ordinal stands before (`Er ist der 1. Er gewann.`; not `Ich-Erzähler`, a compound). The
paragraphs this is measured on: tests/helpers/typed_paragraphs.py.
"""

import re

# the word before an end mark (group 1), the mark, the spacing (3) and what follows's first character (4)
_AFTER_END = re.compile(r"(\w*)(?<![.][.])([.!?])(\s+)(\w)")
# a word a full stop shortens that numbers follow ("Hauptstr. 5", "Nr. 3", "S. 12", "Tel. 030 ..."):
# a digit after it starts no sentence, and is left as typed for sentencex to judge
_BEFORE_NUMBER = re.compile(r"(?i)(?:\w*str|nr|no|s|p|pp|abb|fig|tab|tel|fax|kap|bd|vol|art|abs|ca|vgl|bzw|ziff)")
# German ordinals: a cut after a word that stands before an ordinal and a number of one to three
# digits with its full stop ("im 2. Stock", "den 1. Platz"), in any case, is undone; not where the
# next part starts with a word no ordinal stands before: the personal pronouns in the nominative
# and "man", as whole words (not "Ich-Erzähler"); not the articles ("der 1. der Klasse", "am 1.
# des Monats")
_ORDINALS = {
    "de": (
        re.compile(
            r"(?<!\w)(?:der|die|das|den|dem|des|am|im|zum|zur|vom|beim|ins|ans|aufs|ein|eine|einem|einen|einer"
            r"|jeder|jede|jeden|jedem)\s+\d{1,3}\.\s*$",
            re.IGNORECASE,
        ),
        re.compile(r"(?:er|sie|es|ich|du|wir|ihr|man)(?![\w-])", re.IGNORECASE),
    )
}
_NOTHING = re.compile(r"(?!)")  # another language's ordinals: no cut is undone


def _probe(line: str) -> str:
    """`line` with each digit after an end mark and spacing written X (not after a word a full
    stop shortens before a number: "Hauptstr. 5") and, where the line has no capital, each
    letter there its capital (one character for one: X where the capital is two, as ß's SS), so
    that the probe has the line's length."""
    no_capitals = not any(c.isupper() for c in line)

    def capital(m: re.Match) -> str:
        word, mark, space, c = m.groups()
        if c.isdigit():
            shortened = mark == "." and _BEFORE_NUMBER.fullmatch(word)
            return m.group() if shortened else word + mark + space + "X"
        if no_capitals:
            upper = c.upper()
            return word + mark + space + (upper if len(upper) == 1 else "X")
        return m.group()

    probe = _AFTER_END.sub(capital, line)
    assert len(probe) == len(line)
    return probe


def sentence_parts(line: str, lang: str) -> list[str]:
    """`line`'s sentences, each with the spacing that follows it, joined back exactly `line`; a
    blank line is its one part."""
    from sentencex import segment  # compiled, quick; only where lines are split

    if not line.strip():
        return [line]
    ordinal, not_after = _ORDINALS.get(lang, (_NOTHING, _NOTHING))
    try:
        pieces = list(segment(lang, _probe(line)))  # the probe has the line's length: cut the line alike
    except BaseException as e:  # sentencex 1.0.32's Rust panics on a few lines ("ﬁ" before a no-break space)
        if type(e).__name__ != "PanicException":
            raise
        return [line]  # translated whole, as the model was trained, rather than not at all
    parts: list[str] = []
    start = 0
    for piece in pieces:
        text, start = line[start : start + len(piece)], start + len(piece)
        if parts and ordinal.search(parts[-1]) and not not_after.match(text):
            parts[-1] += text  # "im 2. " ends no sentence: the next part goes on it
        else:
            parts.append(text)
    if start < len(line):  # sentencex leaves nothing out; should it, the rest stays with the last part
        parts[-1] += line[start:]
    return parts
