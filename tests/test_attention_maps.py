"""Attention maps: in TensorBoard after the `ci` run, and the weights behind the figures."""

import io

import pytest
import torch
from PIL import Image
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from helpers import toy_sentences
from inference.attention import collect_attention
from inference.checkpoint import load_for_inference
from inference.search_config import SearchConfig
from inference.translator import Translator
from viz.attention import attention_figure, save_pngs, tag
from viz.kinds import KINDS, axis_labels

N_LAYERS, N_PROBES = 2, 3  # the tiny model of experiment=ci; attention_probes default


def test_attention_images_for_all_kinds_layers_and_probes(ci_run):
    events = EventAccumulator(str(ci_run), size_guidance={"images": 0})
    events.Reload()
    tags = set(events.Tags()["images"])
    for kind in KINDS:
        for layer in range(N_LAYERS):
            for probe in range(N_PROBES):
                name = tag(kind, layer, probe)
                assert name in tags, f"missing {name}"
                images = events.Images(name)
                assert len({image.step for image in images}) >= 2, f"{name} logged at fewer than 2 steps"
                png = images[-1].encoded_image_string
                assert png.startswith(b"\x89PNG")
                width, height = Image.open(io.BytesIO(png)).size
                assert 300 <= width <= 4000 and 300 <= height <= 4000, (name, width, height)
    assert tag("cross", 0, 0) == "attention/cross/layer_1/probe_0"


@pytest.fixture(scope="module")
def probe_maps(ci_run):
    model, tokenizer, _ = load_for_inference(ci_run)
    # lengths differ on purpose: the batch that produces the maps is padded
    sentences = ["Ein Hund.", toy_sentences("val")[0]]
    translator = Translator(model, tokenizer, SearchConfig(beam_size=1))
    translations = translator.translate_ids(translator.source_ids(sentences))
    return model, collect_attention(model, tokenizer, sentences, translations, ["A dog.", "Two men."])


def test_weights_behind_the_figures(probe_maps):
    model, maps = probe_maps
    for att in maps:
        assert len(att.maps["cross"]) == model.cfg.n_decoder_layers
        for kind in KINDS:
            rows, cols = axis_labels(kind, att.src_pieces, att.tgt_in_pieces, att.tgt_out_pieces)
            for weights in att.maps[kind]:
                assert weights.shape == (model.cfg.n_heads, len(rows), len(cols))
                # rows still sum to 1 after padding columns were cut away, so the padding
                # positions of the padded batch got exactly zero weight
                torch.testing.assert_close(weights.sum(-1), torch.ones(weights.shape[:-1]))
        for weights in att.maps["decoder_self"]:
            assert (weights.triu(diagonal=1) == 0).all(), "decoder self-attention must not look ahead"
    short = maps[0]
    assert short.src_pieces[-1] != "<pad>" and len(short.src_pieces) < len(maps[1].src_pieces)
    assert short.tgt_in_pieces[0] == "<s>" and short.tgt_out_pieces[-1] == "</s>"


def test_figures_and_png_files(probe_maps, tmp_path):
    model, maps = probe_maps
    fig = attention_figure(maps[1], "cross", 0)
    texts = {t.get_text() for ax in fig.axes for t in ax.texts}
    assert {"head 1", f"head {model.cfg.n_heads}", "mean of heads"} <= texts
    assert set(maps[1].src_pieces) <= texts, "source pieces label the columns"
    assert "attention weight" in [ax.get_ylabel() for ax in fig.axes]  # the shared colorbar
    paths = save_pngs(maps[0], tmp_path, "sentence1")
    assert sorted(p.name for p in paths) == sorted(
        f"sentence1_{kind}_layer{layer}.png" for kind in KINDS for layer in range(1, N_LAYERS + 1)
    )
    assert all(Image.open(p).format == "PNG" for p in paths)
