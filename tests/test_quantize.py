"""Our decoder's other compute types: int8 weights (inference/quantize.py) and bf16 autocast
translate nearly as in float32."""
import pytest
from torch import nn

import inference.api
from inference import load_translator
from inference.quantize import quantize_int8
from inference.translator import Translator
from utils.errors import UserError


def test_int8_translates_nearly_as_fp32_and_leaves_the_model_alone(ci_run, trained, multi30k):
    model, tokenizer = trained
    int8 = quantize_int8(model)
    assert type(model.decoder.layers[0].feed_forward.net[0]) is nn.Linear  # the original is untouched
    assert type(int8.decoder.layers[0].feed_forward.net[0]) is not nn.Linear
    assert type(int8.output_proj) is not nn.Linear
    assert type(int8.decoder.layers[0].cross_attn.in_proj) is nn.Linear  # read as slices: stays float
    sources = list(multi30k.text["test_2016_flickr"]["src"][:100])
    fp32 = Translator(model, tokenizer, beam_size=1).translate(sources)
    quantized = Translator(int8, tokenizer, beam_size=1).translate(sources)
    assert sum(a == b for a, b in zip(fp32, quantized)) >= 70
    # the same sentences in the same batches: the same translations (activations are quantized
    # with one scale per batch, so other batch-mates may change a translation slightly)
    assert load_translator(ci_run, compute_type="int8", beam_size=1).translate(sources) == quantized
    with pytest.raises(UserError, match="float32, bfloat16 or int8, not 'int16'"):
        load_translator(ci_run, compute_type="int16")


def test_bfloat16_where_native_and_refused_where_emulated(ci_run, trained, multi30k, monkeypatch):
    model, tokenizer = trained
    sources = list(multi30k.text["test_2016_flickr"]["src"][:100])
    fp32 = Translator(model, tokenizer, beam_size=1).translate(sources)
    bf16 = Translator(model, tokenizer, beam_size=1, bf16=True).translate(sources)  # correct anywhere, if slow
    assert sum(a == b for a, b in zip(fp32, bf16)) >= 70
    monkeypatch.setattr(inference.api, "native_bf16", lambda device: False)
    with pytest.raises(UserError, match="bfloat16 is not native on this CPU"):
        load_translator(ci_run, compute_type="bfloat16")
    monkeypatch.setattr(inference.api, "native_bf16", lambda device: True)
    assert load_translator(ci_run, compute_type="bfloat16", beam_size=1).translate(sources) == bf16
