"""Per-head statistics as pictures: one figure per statistic, a layers x heads grid per kind."""
import matplotlib

matplotlib.use("Agg")  # files and TensorBoard only: never needs a display
import matplotlib.pyplot as plt  # noqa: E402
from torch import Tensor  # noqa: E402

TITLES = {"encoder_self": "encoder self", "decoder_self": "decoder self", "cross": "cross"}


def head_statistic_figure(name: str, by_kind: dict[str, Tensor]) -> plt.Figure:
    """`by_kind`: kind -> (layers, heads) values of statistic `name`, drawn on one colour scale
    with each value written in its cell."""
    kinds = list(by_kind)
    low = min(float(v.min()) for v in by_kind.values())
    high = max(float(v.max()) for v in by_kind.values())
    layers, heads = next(iter(by_kind.values())).shape
    fig, axes = plt.subplots(1, len(kinds), figsize=(1.5 + 0.6 * heads * len(kinds), 1.4 + 0.45 * layers),
                             squeeze=False, layout="constrained")  # room for titles, labels and colorbar
    for ax, kind in zip(axes[0], kinds):
        values = by_kind[kind].numpy()
        image = ax.imshow(values, cmap="viridis", vmin=low, vmax=max(high, low + 1e-9), aspect="auto")
        ax.set_title(TITLES[kind], fontsize=9)
        ax.set_xticks(range(heads), [str(h + 1) for h in range(heads)], fontsize=7)
        ax.set_yticks(range(layers), [str(layer + 1) for layer in range(layers)], fontsize=7)
        ax.set_xlabel("head", fontsize=8)
        for (row, col), value in ((rc, values[rc]) for rc in ((r, c) for r in range(layers) for c in range(heads))):
            ax.text(col, row, f"{value:.2f}", ha="center", va="center", fontsize=6,
                    color="white" if value < (low + high) / 2 else "black")
    axes[0][0].set_ylabel("layer", fontsize=8)
    fig.colorbar(image, ax=axes[0].tolist(), shrink=0.8)
    fig.suptitle(name, fontsize=10)
    return fig
