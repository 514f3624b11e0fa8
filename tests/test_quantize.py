"""inference/quantize.py: our decoder with int8 weights translates nearly as in float32."""
import pytest
from torch import nn

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
    with pytest.raises(UserError, match="float32 or int8, not 'int16'"):
        load_translator(ci_run, compute_type="int16")
