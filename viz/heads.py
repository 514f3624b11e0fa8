"""Per-head statistics and head importance as pictures: a layers x heads grid per kind."""

import matplotlib

matplotlib.use("Agg")  # files and TensorBoard only: never needs a display
import matplotlib.pyplot as plt  # noqa: E402
from torch import Tensor  # noqa: E402

from viz.kinds import TITLES  # noqa: E402


def short_title(kind: str) -> str:
    """The title without "-attention" (e.g. "cross"): it fits a small grid."""
    return TITLES[kind].removesuffix("-attention")


def draw_grids(fig: plt.Figure, axes: list[plt.Axes], by_kind: dict[str, Tensor], fmt: str = ".2f") -> None:
    """`by_kind`: kind -> (layers, heads) values, one grid per axis on one colour scale with
    each value written in its cell, and one colorbar for all."""
    low = min(float(v.min()) for v in by_kind.values())
    high = max(float(v.max()) for v in by_kind.values())
    layers, heads = next(iter(by_kind.values())).shape
    for ax, (kind, values) in zip(axes, by_kind.items()):
        values = values.numpy()
        image = ax.imshow(values, cmap="viridis", vmin=low, vmax=max(high, low + 1e-9), aspect="auto")
        ax.set_title(short_title(kind), fontsize=9)
        ax.set_xticks(range(heads), [str(h + 1) for h in range(heads)], fontsize=7)
        ax.set_yticks(range(layers), [str(layer + 1) for layer in range(layers)], fontsize=7)
        ax.set_xlabel("head", fontsize=8)
        for (row, col), value in ((rc, values[rc]) for rc in ((r, c) for r in range(layers) for c in range(heads))):
            ax.text(
                col,
                row,
                f"{value:{fmt}}",
                ha="center",
                va="center",
                fontsize=6,
                color="white" if value < (low + high) / 2 else "black",
            )
    axes[0].set_ylabel("layer", fontsize=8)
    fig.colorbar(image, ax=axes, shrink=0.8, fraction=0.04, pad=0.02)


def head_statistic_figure(name: str, by_kind: dict[str, Tensor], fmt: str = ".2f") -> plt.Figure:
    """One statistic (or importance measure) of every head, a grid per kind, values written as `fmt`."""
    layers, heads = next(iter(by_kind.values())).shape
    width, height = 1.5 + 0.6 * heads * len(by_kind), 1.4 + 0.45 * layers  # inches
    fig, axes = plt.subplots(1, len(by_kind), figsize=(width, height), squeeze=False)
    # fixed margins in inches for the labels, titles and colorbar: constrained layout would find
    # the same ones at twice the drawing time, and a run draws these at every validation
    fig.subplots_adjust(
        left=0.55 / width, right=1 - 0.5 / width, bottom=0.5 / height, top=1 - 0.55 / height, wspace=0.15
    )
    draw_grids(fig, axes[0].tolist(), by_kind, fmt)
    fig.suptitle(name, fontsize=10)
    return fig


def draw_pruning(ax: plt.Axes, result: dict) -> None:
    """Michel et al.'s curve, one line per kind: greedy validation BLEU against the number of
    that kind's heads masked, least important first (`analysis.head_importance`)."""
    for kind, curve in result["pruning"].items():
        ax.plot([p["removed"] for p in curve], [p["bleu"] for p in curve], marker="o", label=short_title(kind))
    ax.set_xlabel("heads of the kind masked, least important first", fontsize=8)
    ax.set_ylabel("validation BLEU (greedy)", fontsize=8)
    ax.tick_params(labelsize=7)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title("pruning heads", fontsize=9)


def pruning_figure(result: dict) -> plt.Figure:
    fig, ax = plt.subplots(figsize=(5.0, 3.4), layout="constrained")
    draw_pruning(ax, result)
    return fig


def importance_figure(grids: dict[str, Tensor], result: dict) -> plt.Figure:
    """`grids`: kind -> (layers, heads) validation loss increase with each head masked, drawn
    beside the pruning curves of `result` (`analysis.head_importance`)."""
    layers, heads = next(iter(grids.values())).shape
    fig = plt.figure(
        figsize=(1.5 + 0.6 * heads * len(grids) + 4.5, max(3.4, 1.4 + 0.45 * layers)), layout="constrained"
    )
    left, right = fig.subfigures(1, 2, width_ratios=[0.6 * heads * len(grids) + 1.5, 4.5])
    draw_grids(left, left.subplots(1, len(grids)).tolist(), grids, ".3f")
    left.suptitle("validation loss increase with the head masked", fontsize=10)
    draw_pruning(right.subplots(), result)
    return fig
