"""inference/casing.py and data/word_forms.py: a sentence typed in one case alone, recased as the
training text writes it."""

import gzip
import io
from pathlib import Path

import sentencepiece as spm

from data.word_forms import written_forms
from inference.casing import capitalised, likelier_form, recased, shouted, uncased


def vocabulary(lines: list[str]) -> spm.SentencePieceProcessor:
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines), model_writer=model, vocab_size=60, hard_vocab_limit=False, minloglevel=2
    )
    return spm.SentencePieceProcessor(model_proto=model.getvalue())


def test_one_case_alone():
    assert shouted("3 KM!") and not shouted("A") and not shouted("Ein HUND") and not shouted("123")
    assert uncased("ein hund.") and not uncased("a") and not uncased("ein Hund") and not uncased("42")
    assert capitalised("«über alles»") == "«Über alles»" and capitalised("") == ""


def test_each_word_takes_the_form_the_vocabulary_makes_likelier():
    vocab = vocabulary(["Der Hund rennt schnell.", "Ein Hund rennt.", "Die Katze rennt nicht."] * 50)
    assert likelier_form("HUND", vocab) == "Hund" and likelier_form("RENNT", vocab) == "rennt"
    assert recased("ein hund rennt schnell", vocab, {}) == "Ein Hund rennt schnell"
    assert recased("DIE KATZE RENNT!", vocab, {}) == "Die Katze rennt!"


def test_a_word_takes_its_most_frequent_form_where_it_does_not_begin_a_line():
    forms = written_forms(["Die USA und die Straße.", "Essen ist gut.", "Wir essen in den USA", "Wir essen."])
    assert forms == ["USA", "und", "die", "Straße", "ist", "gut", "essen", "in", "den"]  # no "Essen", "Wir"
    vocab = vocabulary(["Der Hund rennt schnell.", "Ein Hund rennt.", "Die Katze rennt nicht."] * 50)
    by_word = {form.casefold(): form for form in forms}
    assert recased("IN DEN USA ESSEN", vocab, by_word) == "In den USA essen"
    assert recased("die strasse", vocab, by_word) == recased("DIE STRASSE", vocab, by_word) == "Die Straße"


def test_lower_cased_validation_sentences_come_back_mostly_as_written(multi30k_dir, multi30k):
    """Over Multi30k's German validation sentences lower-cased, with what a run reading its source
    as it is carries (data.tokenizer.fold_source_case=false; a run whose source model folds case
    is given sentences unrecased, test_source_folding.py): 97% of the words come back as written by
    the training text's word forms, 96% by an 8,000-piece vocabulary of its German alone (the nouns
    capitalised, the rest not)."""

    def lines(split: str) -> list[str]:
        with gzip.open(Path(multi30k_dir) / f"{split}.de.gz", "rt", encoding="utf-8") as f:
            return [line.strip() for line in f]

    sentences = lines("val")
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines("train")), model_writer=model, vocab_size=8000, minloglevel=2, num_threads=1
    )
    as_it_is = spm.SentencePieceProcessor(model_proto=model.getvalue())
    forms = multi30k.tokenizer.src_form_of  # read from the training text as written, folded or not

    def as_written(forms: dict[str, str]) -> float:
        pairs = [
            (word, again)
            for sentence in sentences
            for word, again in zip(sentence.split(), recased(sentence.lower(), as_it_is, forms).split())
        ]
        return sum(a == b for a, b in pairs) / len(pairs)

    assert len(multi30k.tokenizer.src_forms) > 10_000 and forms["hund"] == "Hund"
    assert as_written(forms) > 0.96 and as_written({}) > 0.94
