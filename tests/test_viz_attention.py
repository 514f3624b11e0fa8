"""viz/attention.py: the attention figures, in TensorBoard after the `ci` run and as PNG files
(the weights behind them: test_inference_attention.py)."""

import io

from PIL import Image
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from viz.attention import attention_figure, save_pngs, tag
from viz.kinds import KINDS

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
