"""What a run measures on the validation set while it trains, and the attention maps of its
probe sentences: the numbers and pictures a learner watches in TensorBoard."""

import logging
import time

import torch
from torch.utils.tensorboard import SummaryWriter

from analysis.head_stats import HeadStatistics, log_head_statistics, scalar_layout
from data import PreparedData, token_batches
from inference.attention import collect_attention
from inference.measure import Autocast, loss_and_greedy_bleu, teacher_forced_loss
from inference.scoring import score_translations
from inference.search_config import SearchConfig
from inference.translator import Translator
from model import Transformer
from training.config import TrainConfig
from utils.errors import UserError
from viz.attention import log_to_tensorboard
from viz.attention_store import write_step

log = logging.getLogger("train")


class Validation:
    """Validation loss, perplexity, per-head statistics, BLEU and samples (`run`), and the
    attention figures of a probe set fixed at the start (`attention`), all into `writer`."""

    def __init__(
        self,
        model: Transformer,
        data: PreparedData,
        cfg: TrainConfig,
        writer: SummaryWriter | None,
        device: torch.device,
        autocast: Autocast,
    ) -> None:
        self.model, self.data, self.cfg, self.writer = model, data, cfg, writer
        self.device, self.autocast = device, autocast
        self.loader = token_batches(data.tokens["val"], model.cfg.max_len, cfg.max_tokens, shuffle=False)
        self.probes = self._probes(data, cfg)
        if writer is not None:  # per-head statistics: a chart per kind, layer and statistic
            writer.add_custom_scalars(scalar_layout(model.cfg.n_encoder_layers, model.cfg.n_decoder_layers))

    @staticmethod
    def _probes(data: PreparedData, cfg: TrainConfig) -> list[tuple[str, str | None]]:
        """(source, reference) of the attention probes: the first N validation sentences plus any
        given, fixed so that the step slider shows the same maps evolving. Only sentences with
        source pieces have attention: a validation sentence without is passed over, a given one
        refused."""
        for sentence in cfg.attention_sentences:
            if not data.tokenizer.encode_src([sentence])[0]:
                raise UserError(f"train.attention_sentences: {sentence!r} has no source pieces to attend to")
        val, src_ids = data.text["val"], data.tokens["val"]["src_ids"]  # row-aligned
        probes, passed_over = [], 0
        for i in range(len(val)):
            if len(probes) == cfg.attention_probes:
                break
            if src_ids[i]:
                probes.append((val[i]["src"], val[i]["tgt"]))
            else:
                passed_over += 1
        if passed_over:
            log.info("attention probes: %d validation sentence(s) without source pieces passed over", passed_over)
        return probes + [(sentence, None) for sentence in cfg.attention_sentences]

    def translator(self, beam_size: int) -> Translator:
        search = SearchConfig(beam_size=beam_size, length_penalty=self.cfg.length_penalty)
        return Translator(self.model, self.data.tokenizer, search)

    def run(self, step: int, *, figures: bool) -> tuple[float, float, float, float]:
        """Measure and log at `step`: (loss, perplexity, BLEU, seconds spent logging head statistics);
        the head statistics' figures only with `figures` (their scalars always)."""
        heads = HeadStatistics(self.data.tokenizer)
        val_nll, val_ppl = teacher_forced_loss(self.model, self.loader, self.device, self.autocast, heads.add)
        started = time.time()
        log_head_statistics(self.writer, heads.result(), step, figures=figures)
        heads_seconds = time.time() - started
        val_text = self.data.text["val"]
        bleu, hyps = self.bleu()
        for tag, value in (("val/loss", val_nll), ("val/ppl", val_ppl), ("val/bleu", bleu)):
            self.writer.add_scalar(tag, value, step)
        rows = [
            f"| {s} | {r} | {h} |"
            for s, r, h in zip(val_text["src"][: self.cfg.n_samples], val_text["tgt"][: self.cfg.n_samples], hyps)
        ]
        self.writer.add_text("samples", "| source | reference | translation |\n|---|---|---|\n" + "\n".join(rows), step)
        return val_nll, val_ppl, bleu, heads_seconds

    def bleu(self) -> tuple[float, list[str]]:
        """The model's validation BLEU as it is now (search: train.eval_beam_size), logging nothing,
        and its translations."""
        val_text = self.data.text["val"]
        hyps = self.translator(self.cfg.eval_beam_size).translate(list(val_text["src"]))
        return score_translations(hyps, list(val_text["tgt"])).bleu, hyps

    def measure(self, sentences: int | None = None) -> tuple[float, float]:
        """(validation loss, greedy BLEU of the first `sentences` validation sentences, all if None),
        logging nothing: what head importance compares with heads masked and not."""
        return loss_and_greedy_bleu(
            self.model, self.data.tokenizer, self.loader, self.data.text["val"], self.device, self.autocast, sentences
        )

    def attention(self, step: int) -> int:
        """Attention of the probe sentences (all kinds, layers and heads): figures in TensorBoard's
        IMAGES and the raw weights for its ATTENTION tab; how many sentences."""
        if not self.probes:
            return 0
        sources = [src for src, _ in self.probes]
        references = [ref if ref is not None else "(none given)" for _, ref in self.probes]
        translator = self.translator(beam_size=1)
        translations = translator.translate_ids(translator.source_ids(sources))
        maps = collect_attention(self.model, self.data.tokenizer, sources, translations, references, inside=True)
        log_to_tensorboard(self.writer, maps, step)
        write_step(self.writer.log_dir, step, maps)
        return len(maps)
