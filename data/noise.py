"""What people type that captions never hold, drawn at random: typing errors, German typed on a
keyboard without ä ö ü ß, and things a translator should copy through untouched (addresses,
handles, emoji, file names, words in other scripts, numbers in their common forms).

Training varies a share of its pairs with them (data/augment.py), so that a model learns to read
through them wherever it runs; the robustness benchmark (inference/robustness.py) draws its
variants from the same generators with its own seed. Every draw comes from the numpy generator
passed in, so a run's epoch, and a benchmark's sentences, are the same every time.
"""

import re
import unicodedata

import numpy as np

# A word: letters only (digits, marks and anything else are left as they are).
LETTERS = re.compile(r"[^\W\d_]+")
MIN_TYPO_LETTERS = 3  # shorter words ("in", "a") are left alone: a typo there reads as another word
TYPO_WORDS = 0.1  # of a sentence given typos, the share of its words with one (one at least)

# Neighbouring keys on a QWERTZ keyboard (German; English keyboards differ in y/z alone), by row:
# a key's neighbours are the keys beside it and the two above and below it (each row sits half a
# key to the right of the one above: g has t and z above it, v and b below).
_ROWS = ("qwertzuiopü", "asdfghjklöä", "yxcvbnm")


def _neighbours() -> dict[str, str]:
    near: dict[str, str] = {}
    for r, row in enumerate(_ROWS):
        for i, key in enumerate(row):
            keys = [row[j] for j in (i - 1, i + 1) if 0 <= j < len(row)]
            above = [_ROWS[r - 1][j] for j in (i, i + 1) if r > 0 and j < len(_ROWS[r - 1])]
            below = [_ROWS[r + 1][j] for j in (i - 1, i) if r + 1 < len(_ROWS) and 0 <= j < len(_ROWS[r + 1])]
            keys += above + below
            near[key] = "".join(keys)
    return near


NEIGHBOURS = _neighbours()
TYPOS = ("swap", "drop", "double", "neighbour")  # the typing errors, one drawn a typo


def _same_case(letter: str, like: str) -> str:
    return letter.upper() if like.isupper() else letter


def typo(word: str, rng: np.random.Generator) -> str:
    """`word` with one typing error: two neighbouring letters swapped (unlike ones), a letter
    dropped or doubled, or a letter replaced by a neighbouring key's (its case kept). A word of
    fewer than two letters comes back as it is."""
    if len(word) < 2:
        return word
    kind = TYPOS[int(rng.integers(len(TYPOS)))]
    if kind == "swap":
        unlike = [i for i in range(len(word) - 1) if word[i] != word[i + 1]]  # swapping "rr" changes nothing
        if unlike:
            i = unlike[int(rng.integers(len(unlike)))]
            return word[:i] + word[i + 1] + word[i] + word[i + 2 :]
        kind = "double"
    i = int(rng.integers(len(word)))
    if kind == "drop":
        return word[:i] + word[i + 1 :]
    if kind == "double":
        return word[: i + 1] + word[i:]
    keys = NEIGHBOURS.get(word[i].lower(), "")
    if not keys:  # a letter that is not on the keyboard: doubled instead
        return word[: i + 1] + word[i:]
    return word[:i] + _same_case(keys[int(rng.integers(len(keys)))], word[i]) + word[i + 1 :]


def with_typos(text: str, share: float, rng: np.random.Generator) -> str:
    """`text` with a typo in each word of MIN_TYPO_LETTERS or more letters with probability
    `share`, and in one such word at least (where it has one); spacing and the rest as they were."""
    spans = [m.span() for m in LETTERS.finditer(text) if m.end() - m.start() >= MIN_TYPO_LETTERS]
    if not spans:
        return text
    hit = rng.random(len(spans)) < share
    hit[int(rng.integers(len(spans)))] = True
    for (start, end), take in reversed(list(zip(spans, hit))):  # from the end: the spans before stay valid
        if take:
            text = text[:start] + typo(text[start:end], rng) + text[end:]
    return text


# German without its letters: ä ö ü as ae oe ue ("Maedchen"), or as a o u ("Madchen"); ß as ss.
DIGRAPHS = {"ä": "ae", "ö": "oe", "ü": "ue", "Ä": "Ae", "Ö": "Oe", "Ü": "Ue", "ß": "ss", "ẞ": "SS"}
FOLDS = ("digraphs", "bare")


def folded(text: str, style: str) -> str:
    """`text` as typed on a keyboard without its accented letters: "digraphs" writes ä ö ü ß as
    ae oe ue ss (a word in capitals in capitals: "MÄDCHEN" -> "MAEDCHEN"); "bare" drops every
    accent (é -> e, č -> c; ß -> ss)."""
    if style == "digraphs":

        def word(m: re.Match) -> str:
            out = "".join(DIGRAPHS.get(c, c) for c in m.group())
            return out.upper() if m.group().isupper() and len(m.group()) > 1 else out

        return LETTERS.sub(word, text)
    if style != "bare":
        raise ValueError(f"a fold is one of {FOLDS}, not {style!r}")
    text = text.replace("ß", "ss").replace("ẞ", "SS")
    return unicodedata.normalize(
        "NFC", "".join(c for c in unicodedata.normalize("NFD", text) if not unicodedata.combining(c))
    )


# What a translator copies through as it is.
_NAME_LETTERS = "abcdefghijklmnopqrstuvwxyz"
_TOP_LEVEL = ("com", "de", "org", "net", "fr", "cz", "io", "eu")
_EXTENSIONS = ("pdf", "txt", "jpg", "png", "docx", "csv", "zip", "py")
# Unicode blocks of emoji, and of scripts without case that Multi30k's languages lack
_EMOJI = ((0x1F600, 0x1F64F), (0x1F300, 0x1F5FF), (0x1F680, 0x1F6FF), (0x2600, 0x26FF))
_SCRIPTS = {
    "Cyrillic": (0x0430, 0x044F),
    "Greek": (0x03B1, 0x03C9),
    "Han": (0x4E00, 0x9FFF),
    "Hiragana": (0x3041, 0x3096),
    "Arabic": (0x0627, 0x064A),
    "Hebrew": (0x05D0, 0x05EA),
    "Devanagari": (0x0915, 0x0939),
    "Hangul": (0xAC00, 0xD7A3),
}
COPY_KINDS = ("url", "email", "handle", "emoji", "file", "script", "number")


def _name(rng: np.random.Generator, least: int = 3, most: int = 10) -> str:
    return "".join(_NAME_LETTERS[i] for i in rng.integers(len(_NAME_LETTERS), size=int(rng.integers(least, most + 1))))


def _pick(rng: np.random.Generator, options: tuple[str, ...]) -> str:
    return options[int(rng.integers(len(options)))]


def _digits(rng: np.random.Generator, n: int, lead: bool = True) -> str:
    """n random digits; the first not 0 where `lead`."""
    first = str(int(rng.integers(1, 10))) if lead else str(int(rng.integers(10)))
    return first + "".join(str(d) for d in rng.integers(10, size=n - 1))


# An ordinal ("2.") is not among them: in place of a count ("2. Hunde") or at a sentence's end
# ("rennt 5..") it would change what the sentence says; the ordinals people write are checked in
# sentences written for them (tests/helpers/typed_paragraphs.py, tests/test_typed_seams.py).
NUMBER_FORMS = ("count", "decimal", "time", "thousands", "date", "year", "phone")


def number(rng: np.random.Generator, form: str | None = None) -> str:
    """A number written as people write it, in `form` (or one drawn): a count of 1 to 6 digits
    (4071), a decimal with a comma (3,50), a time (10:30), thousands with a point (1.000 or
    12.500), a date (28.11.2026), a year (1999) or a phone number (030 1234567)."""
    form = form or _pick(rng, NUMBER_FORMS)
    if form == "count":
        return _digits(rng, int(rng.integers(1, 7)))
    if form == "decimal":
        return f"{int(rng.integers(0, 100))},{_digits(rng, 2, lead=False)}"
    if form == "time":
        return f"{int(rng.integers(0, 24))}:{int(rng.integers(0, 60)):02d}"
    if form == "thousands":
        return f"{int(rng.integers(1, 1000))}.{_digits(rng, 3, lead=False)}"
    if form == "date":
        return f"{int(rng.integers(1, 29))}.{int(rng.integers(1, 13))}.{int(rng.integers(1950, 2031))}"
    if form == "year":
        return str(int(rng.integers(1900, 2031)))
    if form == "phone":
        return f"0{_digits(rng, int(rng.integers(2, 5)))} {_digits(rng, int(rng.integers(5, 9)))}"
    raise ValueError(f"a number form is one of {NUMBER_FORMS}, not {form!r}")


def copy_item(rng: np.random.Generator, kind: str | None = None) -> str:
    """Something to copy through as it is, of `kind` (or one drawn, each alike): a URL, an e-mail
    address, an @handle, an emoji, a file name, a word in a script without case, or a number
    (`number`)."""
    kind = kind or _pick(rng, COPY_KINDS)
    if kind == "url":
        path = f"/{_name(rng)}" if rng.random() < 0.5 else ""
        return f"https://{'www.' if rng.random() < 0.5 else ''}{_name(rng)}.{_pick(rng, _TOP_LEVEL)}{path}"
    if kind == "email":
        return f"{_name(rng)}@{_name(rng)}.{_pick(rng, _TOP_LEVEL)}"
    if kind == "handle":
        return f"@{_name(rng)}{int(rng.integers(100)) if rng.random() < 0.3 else ''}"
    if kind == "emoji":
        low, high = _EMOJI[int(rng.integers(len(_EMOJI)))]
        return chr(int(rng.integers(low, high + 1)))
    if kind == "file":
        return f"{_name(rng)}_{int(rng.integers(1, 100))}.{_pick(rng, _EXTENSIONS)}"
    if kind == "script":
        low, high = list(_SCRIPTS.values())[int(rng.integers(len(_SCRIPTS)))]
        return "".join(chr(int(c)) for c in rng.integers(low, high + 1, size=int(rng.integers(2, 6))))
    if kind == "number":
        return number(rng)
    raise ValueError(f"a copy-through kind is one of {COPY_KINDS}, not {kind!r}")


def inserted(text: str, item: str, at_start: bool) -> str:
    """`text` with `item` as a word of its own: at its start, or at its end before its final
    punctuation ("Ein Hund rennt." -> "Ein Hund rennt https://x.de.")."""
    if at_start:
        return f"{item} {text}"
    end = len(text.rstrip().rstrip(".!?").rstrip())  # where the final punctuation and spacing begin
    return f"{text[:end]} {item}{text[end:]}"


# The number words two to ten of each language, a word's forms joined by "/": a pair that holds
# the same one once on each side can hold a number in its place on both.
NUMBER_WORDS = {
    "en": "two three four five six seven eight nine ten",
    "de": "zwei drei vier fünf sechs sieben acht neun zehn",
    "fr": "deux trois quatre cinq six sept huit neuf dix",
    "cs": "dva/dvě/dvou/dvěma/dvěmi tři/tří/třemi čtyři/čtyř/čtyřmi pět šest sedm osm devět deset",
}


def _number_word(language: str, value: int) -> re.Pattern:
    """Any form of the number word for `value` (2 to 10), as a whole word, in any case."""
    forms = NUMBER_WORDS[language].split()[value - 2].split("/")
    return re.compile(r"\b(?:" + "|".join(forms) + r")\b", re.IGNORECASE)


_NUMBER_WORDS = {language: [_number_word(language, value) for value in range(2, 11)] for language in NUMBER_WORDS}


def with_number(pair: tuple[str, str], languages: tuple[str, str], written: str) -> tuple[str, str] | None:
    """The pair with `written` in place of the number word (two to ten) that each side holds once,
    the same one ("Zwei Hunde" / "Two dogs" -> "3,50 Hunde" / "3,50 dogs"); None where it holds
    none, or a language has no NUMBER_WORDS."""
    if not all(language in _NUMBER_WORDS for language in languages):
        return None
    src, tgt = pair
    for src_word, tgt_word in zip(_NUMBER_WORDS[languages[0]], _NUMBER_WORDS[languages[1]]):
        if len(src_word.findall(src)) == len(tgt_word.findall(tgt)) == 1:
            return src_word.sub(written, src), tgt_word.sub(written, tgt)
    return None
