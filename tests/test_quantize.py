"""Our decoder's other compute types: int8 weights (inference/quantize.py) and bf16 autocast
translate nearly as in float32."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import inference.api
from data.batching import pad
from helpers import toy_sentences
from inference import load_translator
from inference.quantize import quantize_int8
from inference.search_config import SearchConfig
from inference.translator import Translator
from utils.errors import UserError


def mean_log_prob(model, src: list[int], tgt: list[int]) -> torch.Tensor:
    """The mean teacher-forced log-probability of tgt's pieces and </s>."""
    cfg = model.cfg
    with torch.no_grad():
        logits = model(pad([src]), pad([[cfg.bos_id, *tgt]])).logits[0]  # (T + 1, V)
    return F.log_softmax(logits.float(), -1).gather(1, torch.tensor([*tgt, cfg.eos_id])[:, None]).mean()


def test_int8_translates_nearly_as_fp32_and_leaves_the_model_alone(ci_run, trained):
    model, tokenizer = trained
    int8 = quantize_int8(model)
    assert type(model.decoder.layers[0].feed_forward.net[0]) is nn.Linear  # the original is untouched
    assert type(int8.decoder.layers[0].feed_forward.net[0]) is not nn.Linear
    assert type(int8.output_proj) is not nn.Linear
    assert type(int8.decoder.layers[0].cross_attn.in_proj) is nn.Linear  # read as slices: stays float
    sources = toy_sentences()
    # close, not equal: compared as the log-probabilities both give fp32's translations, not as
    # outputs, which for this tiny model hang on near ties that int8's rounding tips either way
    # (61 of 100 greedy outputs equal on an AMD EPYC Zen 3 at 0.006 nats a piece apart)
    ids = tokenizer.encode_src(sources)
    outputs = Translator(model, tokenizer, SearchConfig(beam_size=1)).translate_ids(ids)
    fp32, quantized_lp = (torch.stack([mean_log_prob(m, s, t) for s, t in zip(ids, outputs)]) for m in (model, int8))
    assert 0 < (fp32 - quantized_lp).abs().mean() < 0.02 and (fp32 - quantized_lp).abs().max() < 0.1
    quantized = Translator(int8, tokenizer, SearchConfig(beam_size=1)).translate(sources)
    # the same sentences in the same batches: the same translations (activations are quantized
    # with one scale per batch, so other batch-mates may change a translation slightly)
    assert load_translator(ci_run, compute_type="int8", beam_size=1).translate(sources) == quantized
    with pytest.raises(UserError, match="float32, bfloat16 or int8, not 'int16'"):
        load_translator(ci_run, compute_type="int16")


def test_bfloat16_where_native_and_refused_where_emulated(ci_run, trained, monkeypatch):
    model, tokenizer = trained
    sources = toy_sentences()
    fp32 = Translator(model, tokenizer, SearchConfig(beam_size=1)).translate(sources)
    bf16 = Translator(model, tokenizer, SearchConfig(beam_size=1), bf16=True).translate(
        sources
    )  # correct anywhere, if slow
    assert sum(a == b for a, b in zip(fp32, bf16)) >= 70
    monkeypatch.setattr(inference.api, "native_bf16", lambda device: False)
    with pytest.raises(UserError, match="bfloat16 is not native on this CPU"):
        load_translator(ci_run, compute_type="bfloat16")
    monkeypatch.setattr(inference.api, "native_bf16", lambda device: True)
    assert load_translator(ci_run, compute_type="bfloat16", beam_size=1).translate(sources) == bf16
