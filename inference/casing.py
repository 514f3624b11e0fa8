"""A sentence typed in one case alone, all in capitals or with none, given to the model written as
its training text writes it.

A model that learnt from captions in sentence case reads "EIN MANN FÄHRT FAHRRAD." as about four
times the pieces of "Ein Mann fährt Fahrrad." (the vocabulary has next to no pieces in capitals)
and turns it into loops; "ein mann fährt fahrrad" loses what German's capitalised nouns tell it.
A run that reads its source as it is (data.tokenizer.fold_source_case=false) trained a tenth of
its sources in capitals, with a vocabulary that has pieces in capitals: its model reads them, but
still a few BLEU short of the same sentence recased (docs/recipe_search.md, "The hour of capitals
in the source alone"). So for such a model a sentence is recased before it is translated (the
recipe's source model folds every case itself, and is given the sentence as typed:
inference/contract.py): each word in the form the training
source writes it most often (data/word_forms.py: "Hund", "rennt", "USA"; every checkpoint and
export carries them with its tokenizer), and its first letter a capital.

A word the training source never wrote (or a tokenizer saved before the forms were kept) is
lower-case or capitalised, whichever the source SentencePiece model finds likelier: a unigram
language model over the training text's pieces, in which a word seen mostly capitalised
("Hund": one piece) segments into likelier pieces than the same word lower-cased ("h" + "und").
Multi30k's validation set lower-cased, through an hour's model of the recipe: 43.28 BLEU
recased, 43.52 as written; through another such model, 42.52 recased by the forms, 40.94 by the
vocabulary alone, 38.09 not recased (docs/recipe_search.md).
"""

import re
from collections.abc import Mapping
from functools import cache

import sentencepiece as spm

from data.word_forms import WORD

# A word (between spaces) that is written to be copied, not translated: a URL (://), an e-mail
# address or an @handle (@), a file name or a domain (a full stop, then two letters or more:
# "bild.jpg", "example.com"; not an abbreviation such as "z.B." or "U.S.A.")
COPY_THROUGH = re.compile(r"://|@|\w\.[^\W\d_]{2,}")
# a text cut into its words and the spacing between them (kept, so that they join back)
_SPACED = re.compile(r"(\s+)")


def cased_letters(text: str) -> list[str]:
    """The letters of `text` that have a case, but for its words written to be copied
    (`COPY_THROUGH`: "RUF MICH AN: anna@web.de" is in capitals): a script without case (你好,
    עברית) has none, so it is neither in capitals nor without them."""
    return [c for word in text.split() if not COPY_THROUGH.search(word) for c in word if c.isupper() or c.islower()]


def in_capitals(text: str) -> str:
    """`text` upper-cased but for its words written to be copied (`COPY_THROUGH`), left as written."""
    return "".join(part if COPY_THROUGH.search(part) else part.upper() for part in _SPACED.split(text))


def shouted(text: str) -> bool:
    """Whether `text` is written in capitals alone (two letters with case or more, none lower-case)."""
    letters = cased_letters(text)
    return len(letters) >= 2 and not any(c.islower() for c in letters)


def uncased(text: str) -> bool:
    """Whether `text` is written without capitals (two letters with case or more, none upper-case)."""
    letters = cased_letters(text)
    return len(letters) >= 2 and not any(c.isupper() for c in letters)


def capitalised(word: str) -> str:
    """`word` with its first letter a capital and the others as they are."""
    first = next((i for i, c in enumerate(word) if c.isalpha()), 0)
    return word[:first] + word[first : first + 1].upper() + word[first + 1 :]


@cache
def _unseen_score(vocabulary: spm.SentencePieceProcessor) -> float:
    """What a character the vocabulary never saw scores (its unknown or byte piece scores 0): as
    SentencePiece's own penalty, 10 below its least likely piece."""
    return min(vocabulary.get_score(i) for i in range(vocabulary.get_piece_size())) - 10


def _log_prob(text: str, vocabulary: spm.SentencePieceProcessor) -> float:
    """The sum of the scores (a unigram model's log-probabilities) of `text`'s pieces."""
    unseen = _unseen_score(vocabulary)
    return sum(
        unseen if vocabulary.is_unknown(i) or vocabulary.is_byte(i) else vocabulary.get_score(i)
        for i in vocabulary.encode(text)
    )


def likelier_form(word: str, vocabulary: spm.SentencePieceProcessor) -> str:
    """`word` in lower case or capitalised, whichever `vocabulary` gives the likelier segmentation
    (lower case on a tie)."""
    lower = word.lower()
    return max((lower, capitalised(lower)), key=lambda form: _log_prob(form, vocabulary))


def recased(text: str, vocabulary: spm.SentencePieceProcessor, forms: Mapping[str, str]) -> str:
    """`text` with each word in its form in `forms` (a word casefolded -> its form: "STRASSE" and
    "strasse" are "Straße"), else in its likelier form by `vocabulary` (`likelier_form`), and its
    first letter a capital; what is to be copied as written (`COPY_THROUGH`: a URL, an e-mail
    address, an @handle, a file name) left as it is."""

    def form(word: str) -> str:
        return forms.get(word.casefold()) or likelier_form(word, vocabulary)

    parts = _SPACED.split(text)  # words with what they hold, and the spacing between them
    parts = [p if COPY_THROUGH.search(p) else WORD.sub(lambda m: form(m.group(0)), p) for p in parts]
    first = next((i for i, p in enumerate(parts) if p.strip()), 0)
    if not COPY_THROUGH.search(parts[first]):
        parts[first] = capitalised(parts[first])
    return "".join(parts)
