"""Attention maps of a translation drawn: matplotlib figures for TensorBoard and PNG files, and
shading for a terminal. The maps come from inference/attention.py; the kinds are viz/kinds.py's.
"""

import textwrap
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files and TensorBoard only: never needs a display
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from inference.attention import SentenceAttention  # noqa: E402
from viz.kinds import KINDS, TITLES, axis_labels  # noqa: E402

MAX_LABELS = 40  # more pieces than this on an axis: label every k-th one


def _caption(att: SentenceAttention) -> str:
    lines = [f"source: {att.source}"]
    if att.reference is not None:
        lines.append(f"reference: {att.reference}")
    lines.append(f"translation: {att.translation}")
    return "\n".join(textwrap.shorten(line, 140, placeholder=" …") for line in lines)


def _thinned(labels: list[str]) -> list[tuple[int, str]]:
    step = max(1, -(-len(labels) // MAX_LABELS))  # ceil: every k-th piece on long sentences
    return [(i, labels[i]) for i in range(0, len(labels), step)]


def attention_figure(att: SentenceAttention, kind: str, layer: int) -> plt.Figure:
    """One layer of one kind: a panel per head and one for the head mean, one color scale.

    All panels are drawn as one image (panels separated by blank cells) with the pieces as
    plain text on the outer edges: matplotlib spends most of its time creating axes and
    tick objects, and this keeps a figure near 0.1 s, so every map of a run can be logged
    at every evaluation.
    """
    weights = att.maps[kind][layer]  # (H, T_q, T_k)
    panels = [*weights, weights.mean(0)]
    names = [f"head {h + 1}" for h in range(len(weights))] + ["mean of heads"]
    row_labels, col_labels = axis_labels(kind, att.src_pieces, att.tgt_in_pieces, att.tgt_out_pieces)
    t_q, t_k = len(row_labels), len(col_labels)
    n_cols = min(3, len(panels))
    n_rows = -(-len(panels) // n_cols)
    gap = 3  # blank cells between panels, room for the panel titles

    mosaic = np.full((n_rows * (t_q + gap), n_cols * (t_k + gap) - gap), np.nan)
    for index, panel in enumerate(panels):
        row, col = divmod(index, n_cols)
        top, left = gap + row * (t_q + gap), col * (t_k + gap)
        mosaic[top : top + t_q, left : left + t_k] = panel.numpy()

    # inches: a fixed cell size keeps pieces readable; margins hold the longest labels
    cell, char = 0.16, 0.07
    margin_left = 0.3 + char * max(map(len, row_labels))
    margin_bottom = 0.2 + char * max(map(len, col_labels))
    margin_top, margin_right = 0.9, 1.1
    image_w, image_h = cell * mosaic.shape[1], cell * mosaic.shape[0]
    width, height = margin_left + image_w + margin_right, margin_bottom + image_h + margin_top
    fig = plt.figure(figsize=(width, height), dpi=80)
    ax = fig.add_axes((margin_left / width, margin_bottom / height, image_w / width, image_h / height))
    cmap = plt.get_cmap("viridis").with_extremes(bad="white")
    image = ax.imshow(
        mosaic, cmap=cmap, vmin=0.0, vmax=float(weights.max()), aspect="auto", interpolation="nearest"
    )  # one scale for all panels: colors compare across heads
    ax.set_axis_off()

    for index, name in enumerate(names):
        row, col = divmod(index, n_cols)
        top, left = gap + row * (t_q + gap), col * (t_k + gap)
        ax.text(left + (t_k - 1) / 2, top - 0.8, name, ha="center", va="bottom", fontsize=8)
        if col == 0:
            for i, label in _thinned(row_labels):
                ax.text(-0.8, top + i, label, ha="right", va="center", fontsize=7)
        if index + n_cols >= len(panels):  # nothing below: label the columns here
            for j, label in _thinned(col_labels):
                ax.text(left + j, top + t_q - 0.3, label, ha="center", va="top", rotation=90, fontsize=7)

    colorbar_ax = fig.add_axes(
        ((width - margin_right + 0.3) / width, margin_bottom / height, 0.15 / width, image_h / height)
    )
    fig.colorbar(image, cax=colorbar_ax, label="attention weight")
    fig.text(
        0.1 / width,
        1 - 0.1 / height,
        f"{TITLES[kind]}, layer {layer + 1}\n{_caption(att)}",
        fontsize=8,
        ha="left",
        va="top",
    )
    return fig


def tag(kind: str, layer: int, probe: int) -> str:
    """TensorBoard tag of a figure, e.g. attention/cross/layer_1/probe_0 (layers count from 1)."""
    return f"attention/{kind}/layer_{layer + 1}/probe_{probe}"


def log_to_tensorboard(writer, attentions: list[SentenceAttention], step: int) -> None:
    for probe, att in enumerate(attentions):
        writer.add_text(f"attention/probe_{probe}", _caption(att).replace("\n", "  \n"), step)
        for kind in KINDS:
            for layer in range(len(att.maps[kind])):
                writer.add_figure(tag(kind, layer, probe), attention_figure(att, kind, layer), step, close=True)


def save_pngs(att: SentenceAttention, folder: Path, prefix: str) -> list[Path]:
    """Every figure of a sentence as `{prefix}_{kind}_layer{N}.png` in `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for kind in KINDS:
        for layer in range(len(att.maps[kind])):
            fig = attention_figure(att, kind, layer)
            path = folder / f"{prefix}_{kind}_layer{layer + 1}.png"
            fig.savefig(path, dpi=110)  # sharper than on screen: PNGs get zoomed
            plt.close(fig)
            paths.append(path)
    return paths


SHADES = " ░▒▓█"


def terminal_heatmap(att: SentenceAttention) -> str:
    """The last layer's cross-attention, mean of heads, as Unicode shading for a terminal.

    Rows are the pieces produced, columns the source pieces (written top to bottom); the
    darkest shade marks weights within 20% of the largest one.
    """
    weights = att.maps["cross"][-1].mean(0)  # (T, S)
    vmax = float(weights.max()) or 1.0
    rows, cols = att.tgt_out_pieces, att.src_pieces
    label_width = max(map(len, rows))
    lines = [
        f"{att.source}  ->  {att.translation}",
        f"cross-attention, layer {len(att.maps['cross'])}, mean of {att.maps['cross'][-1].size(0)} heads",
    ]
    for i in range(max(map(len, cols))):  # column labels, one character per line
        lines.append(" " * (label_width + 1) + "".join((c[i] if i < len(c) else " ") + " " for c in cols))
    for label, row in zip(rows, weights.tolist()):
        cells = "".join(SHADES[min(len(SHADES) - 1, int(w / vmax * len(SHADES)))] * 2 for w in row)
        lines.append(f"{label:>{label_width}} {cells}")
    lines.append(f"blank < 20%, ░ < 40%, ▒ < 60%, ▓ < 80%, █ >= 80% of the largest weight ({vmax:.2f})")
    return "\n".join(lines) + "\n"
