"""How the training source writes each of its words: "Hund" capitalised, "rennt" in lower case,
"USA" in capitals. inference/casing.py writes a sentence typed in one case alone (all capitals,
or none) this way before the model reads it: the model learnt from text written so.

A word's form is the one it has most often where it does not begin its line (a line's first
word is capitalised whatever it is). Words seen only first in their line are left out.
"""

import re
from collections import Counter, defaultdict
from collections.abc import Iterable

WORD = re.compile(r"\w+")  # what a word is, here and where the forms are applied (inference/casing.py)


def written_forms(lines: Iterable[str]) -> list[str]:
    """Each word's most frequent form in `lines` (the first seen of equally frequent ones),
    one a word whatever its case (casefolded alike: "Straße", "STRASSE"), in the order the words first
    appear."""
    counts: defaultdict[str, Counter[str]] = defaultdict(Counter)
    for line in lines:
        for word in WORD.findall(line)[1:]:
            counts[word.casefold()][word] += 1
    return [forms.most_common(1)[0][0] for forms in counts.values()]
