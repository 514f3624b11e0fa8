"""Translation quality against references: sacreBLEU (cased and lowercased), chrF, and BLEU on
Moses-tokenized lowercased text as published Multi30k results measure it."""

from dataclasses import dataclass

from sacrebleu.metrics import BLEU, CHRF


@dataclass
class Scores:
    bleu: float
    bleu_lowercase: float
    chrf: float
    bleu_signature: str
    chrf_signature: str


def score_translations(hypotheses: list[str], references: list[str]) -> Scores:
    """Corpus sacreBLEU (cased, default 13a tokenizer) and chrF, with their signatures."""
    bleu, bleu_lc, chrf = BLEU(), BLEU(lowercase=True), CHRF()
    return Scores(
        bleu=bleu.corpus_score(hypotheses, [references]).score,
        bleu_lowercase=bleu_lc.corpus_score(hypotheses, [references]).score,
        chrf=chrf.corpus_score(hypotheses, [references]).score,
        bleu_signature=str(bleu.get_signature()),
        chrf_signature=str(chrf.get_signature()),
    )


def moses_bleu(hypotheses: list[str], references: list[str], lang: str) -> float:
    """BLEU the way Multi30k papers report it (e.g. Wu et al. 2021's 41.02): both sides through
    the dataset's own preprocessing, `lowercase.perl | normalize-punctuation.perl -l LANG |
    tokenizer.perl -l LANG` (scripts/task1-tokenize.sh), here sacremoses' ports of those
    scripts, then multi-bleu on the tokens (sacreBLEU with `--tokenize none`).

    Not comparable with our headline, which is cased and scores detokenized text with
    sacreBLEU's own tokenizer."""
    from sacremoses import MosesPunctNormalizer, MosesTokenizer

    normalizer, tokenizer = MosesPunctNormalizer(lang=lang), MosesTokenizer(lang=lang)

    def preprocess(lines: list[str]) -> list[str]:
        return [tokenizer.tokenize(normalizer.normalize(line.lower()), return_str=True) for line in lines]

    return BLEU(tokenize="none", force=True).corpus_score(preprocess(hypotheses), [preprocess(references)]).score
