"""Translation quality against references: sacreBLEU (cased and lowercased) and chrF."""
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
