"""data/source_folding.py: the source model file folds case and spells umlauts as Python's `fold`
does, the target keeps both, and the two files stay one vocabulary."""

from dataclasses import replace

import pytest
import sentencepiece as spm
from datasets import Dataset

from data import AugmentConfig, DataConfig, TokenizerConfig, prepare_data
from data.source_folding import fold, with_folding
from data.tokenizer import Tokenizer, train_tokenizer
from helpers import TOY_CORPUS
from inference.contract import LineTranslator

FOLDING = TokenizerConfig(vocab_size=300, fold_source_case=True, spell_source_umlauts=True, upper_copies=0)
# what case folding leaves no work for: the recipe's shares that change the case
UNCASED = AugmentConfig(lower=0, upper_source=0)


@pytest.fixture(scope="module")
def folded(tmp_path_factory):
    """The toy corpus prepared with its source folded."""
    cache = tmp_path_factory.mktemp("cache")
    cfg = DataConfig(dir=str(TOY_CORPUS), cache_dir=str(cache), tokenizer=FOLDING, augment=UNCASED)
    return prepare_data(cfg)


def test_fold_spells_as_people_type():
    assert fold("Straße", True, False) == fold("STRASSE", True, False) == "strasse"
    assert fold("Mädchen ÜBER Öl ẞ", False, True) == "Maedchen UeBER Oel SS"  # a capital spelt as at a word's start
    assert fold("Mädchen ÜBER Öl", True, True) == "maedchen ueber oel"
    assert fold("Ma\u0308dchen", True, True) == "maedchen"  # a letter and a combining mark
    assert fold("Ｈｕｎｄ ½\tx\ufeff\x01", False, False) == "Hund 1⁄2 x "  # SentencePiece's default, nmt_nfkc


def test_every_way_of_typing_a_sentence_reads_the_same(folded):
    tok = folded.tokenizer
    lines = list(folded.text["test_2016_flickr"]["src"])
    assert any(c in line for line in lines for c in "äöüß"), "the toy corpus must hold umlauts to test them"
    spelt = [line.replace("ä", "ae").replace("ö", "oe").replace("ü", "ue").replace("ß", "ss") for line in lines]
    as_is = tok.encode_src(lines)
    for variant in ([s.upper() for s in lines], [s.lower() for s in lines], spelt, [s.upper() for s in spelt]):
        assert tok.encode_src(variant) == as_is
    # the target keeps its case and letters: the model still learns to write "A dog" and "Mädchen"
    assert tok.decode_tgt(tok.encode_tgt(["A Mädchen ẞ."])) == ["A Mädchen ẞ."]


@pytest.mark.parametrize("case, umlauts", [(True, True), (True, False), (False, True)])
def test_the_model_file_folds_as_python_does(folded, case, umlauts):
    """The compiled rules against the Python reference, on every toy line as it is and in
    capitals, and on letters written in parts, spaces and control characters: the source model
    reads a line as the plain target model reads it folded."""
    plain = folded.tokenizer.tgt
    source = spm.SentencePieceProcessor(model_proto=with_folding(folded.tokenizer.tgt_model, case, umlauts))
    lines = [line for split in folded.text.values() for line in split["src"]]
    lines += [s.upper() for s in lines]
    lines += ["Ａ ẞ Æ ǅ ﬁ İstanbul ΣΑΣ Ä A\u0308 U\u0308BER \u01d6 u\u0308\u0304 Ein\tHund\u200b \ufeffrennt\x01."]
    assert [source.encode(s) for s in lines] == [plain.encode(fold(s, case, umlauts)) for s in lines]


def test_one_vocabulary_in_two_files_learnt_from_the_folded_source(folded, tmp_path):
    tok = folded.tokenizer
    assert tok.joint and tok.src_model != tok.tgt_model
    assert tok.model_files == ["spm_src.model", "spm_tgt.model"]
    tok.save(tmp_path)
    again = Tokenizer(*[(tmp_path / name).read_bytes() for name in tok.model_files])  # as an export loads it
    assert again.joint and again.fingerprint() == tok.fingerprint()
    # the pieces are those a plain tokenizer learns from the source already folded
    train = folded.text["train"]
    prefolded = Dataset.from_dict({"src": [fold(s, True, True) for s in train["src"]], "tgt": list(train["tgt"])})
    plain = TokenizerConfig(vocab_size=300, fold_source_case=False, spell_source_umlauts=False)
    reference = train_tokenizer(prefolded, plain, tmp_path / "cache")
    assert reference.tgt_model == tok.tgt_model


def test_folding_the_case_refuses_settings_it_makes_wrong_or_idle():
    with pytest.raises(ValueError, match="data.augment.upper, title and lower 0"):
        DataConfig(tokenizer=FOLDING, augment=AugmentConfig(lower=0.1, upper_source=0))
    with pytest.raises(ValueError, match="data.augment.upper_source, data.augment.lower_source and data.tokenizer"):
        DataConfig(tokenizer=FOLDING, augment=AugmentConfig(lower=0, upper_source=0.1))
    with pytest.raises(ValueError, match="data.tokenizer.upper_copies 0"):
        DataConfig(tokenizer=replace(FOLDING, upper_copies=0.1), augment=UNCASED)
    DataConfig(tokenizer=replace(FOLDING, fold_source_case=False, upper_copies=0.1), augment=AugmentConfig())


def test_the_recipe_folds_the_source_and_spells_umlauts_only_in_german():
    """Folding is the recipe's (docs/recipe_search.md); the umlauts spelt out only where the
    source is German: other languages typed without their letters drop them ("a" for "ä")."""
    assert DataConfig().tokenizer.fold_source_case and DataConfig().tokenizer.spell_source_umlauts
    for src, tgt in (("en", "de"), ("fr", "en"), ("cs", "en")):
        tokenizer = DataConfig(src_lang=src, tgt_lang=tgt).tokenizer
        assert tokenizer.fold_source_case and tokenizer.spell_source_umlauts is False
    chosen = DataConfig(src_lang="en", tgt_lang="de", tokenizer=TokenizerConfig(spell_source_umlauts=True))
    assert chosen.tokenizer.spell_source_umlauts is True


class Echo(LineTranslator):
    """An engine whose search gives each sentence back as its translation, one piece a character:
    what the model was given, read off its output."""

    def __init__(self, tokenizer: Tokenizer) -> None:
        self.tokenizer, self.split_lang = tokenizer, "de"

    def _search(self, sentences, n_best, progress, suppress=()):
        return [[(list(s.replace(" ", "▁")), -1.0)] if s else [] for s in sentences]


def test_a_source_model_that_folds_case_is_given_what_was_typed_not_recased(folded, tmp_path):
    """translate.py's recasing changes nothing a folded source model reads: it is left out there,
    and a sentence in capitals still gets its translation in capitals. A source read as it is
    gets the sentence recased."""
    plain = train_tokenizer(folded.text["train"], TokenizerConfig(vocab_size=340, fold_source_case=False), tmp_path)
    assert folded.tokenizer.folds_case and not plain.folds_case
    typed = ["ein hund rennt.", "EIN HUND RENNT."]
    assert Echo(folded.tokenizer).translate(typed) == ["ein hund rennt.", "EIN HUND RENNT."]
    assert Echo(plain).translate(typed) == ["Ein Hund rennt.", "EIN HUND RENNT."]  # recased; capitals again
