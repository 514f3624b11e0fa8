"""The raw attention weights of the probe sentences, one file per evaluation, for the
ATTENTION tab of TensorBoard (viz/attention_tab).

    RUN/attention/step_00000500.npz

holds, for every probe sentence, every kind, layer and head, the weights trimmed to the
sentence's real length as float16 (three significant digits: more than a colour scale shows,
half the bytes of float32), compressed, plus one JSON string with the sentences and their
pieces. Beside each layer's weights lie the values they were computed from and what they
computed (model.AttentionSteps: the heads' queries, keys and values, each head's output and the
layer's output after W_O), also float16 and trimmed: the tab's inside view shows them. Files
appear atomically (written under another name, then renamed), so a reader of a still-running
run never sees half a file. numpy and json only: TensorBoard's process reads
these without importing torch.
"""

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from viz.kinds import KINDS, axis_labels

FOLDER = "attention"  # inside the run folder, beside the TensorBoard event files
# model.AttentionSteps's fields, written out: this module never imports torch (a test checks them)
INSIDE = ("query", "key", "value", "heads", "output")
STEP_FILE = re.compile(r"step_(\d+)\.npz")


def step_path(run_dir: Path, step: int) -> Path:
    return Path(run_dir) / FOLDER / f"step_{step:08d}.npz"


def step_arrays(attentions) -> tuple[list[dict], dict[str, np.ndarray]]:
    """The sentences (texts, pieces, layers and heads per kind) and the float16 arrays, by name
    "probe/kind/layer" (weights) and "probe/kind/layer/name" (INSIDE), of `attentions`
    (inference.attention.SentenceAttention, tensors on the CPU)."""
    arrays, sentences = {}, []
    for probe, att in enumerate(attentions):
        sentences.append(
            {
                "source": att.source,
                "translation": att.translation,
                "reference": att.reference,
                "src_pieces": att.src_pieces,
                "tgt_in_pieces": att.tgt_in_pieces,
                "tgt_out_pieces": att.tgt_out_pieces,
                "layers": {kind: len(att.maps[kind]) for kind in KINDS},
                "heads": {kind: int(att.maps[kind][0].shape[0]) for kind in KINDS},
                "inside": bool(att.inside),
            }
        )
        for kind in KINDS:
            for layer, weights in enumerate(att.maps[kind]):  # (H, T_q, T_k)
                arrays[f"{probe}/{kind}/{layer}"] = np.asarray(weights, dtype=np.float16)
            for layer, values in enumerate(att.inside.get(kind, [])):
                for name, value in zip(INSIDE, values):
                    arrays[f"{probe}/{kind}/{layer}/{name}"] = np.asarray(value, dtype=np.float16)
    return sentences, arrays


def write_step(run_dir: Path, step: int, attentions) -> Path:
    """Store `step_arrays(attentions)` as the file of `step`; returns the file."""
    sentences, arrays = step_arrays(attentions)
    path = step_path(run_dir, step)
    path.parent.mkdir(parents=True, exist_ok=True)
    # its own rename, not utils/files.py: TensorBoard's process imports this module from the
    # installed viz package alone
    partial = path.with_name(path.name + ".partial")
    with open(partial, "wb") as file:  # a file object: savez would append .npz to a name
        np.savez_compressed(file, sentences=np.array(json.dumps(sentences)), **arrays)
    os.replace(partial, path)
    return path


def steps(run_dir: Path) -> list[int]:
    """The steps stored for a run, in order (none: [])."""
    folder = Path(run_dir) / FOLDER
    if not folder.is_dir():
        return []
    return sorted(int(match[1]) for name in os.listdir(folder) if (match := STEP_FILE.fullmatch(name)))


def find_runs(logdir: Path) -> dict[str, Path]:
    """Every folder under `logdir` with stored attention, by its TensorBoard run name (the
    path relative to `logdir`, "." for `logdir` itself): the names the other tabs show."""
    logdir = Path(logdir)
    runs = {}
    for folder, subfolders, _ in os.walk(logdir):
        if FOLDER in subfolders and steps(Path(folder)):
            runs[Path(folder).relative_to(logdir).as_posix()] = Path(folder)
        subfolders[:] = [name for name in subfolders if name != FOLDER]
    return dict(sorted(runs.items()))


@dataclass
class StoredStep:
    """One evaluation's sentences (texts, pieces, layers per kind) and their arrays: in its file,
    or in memory (`in_memory`)."""

    sentences: list[dict]
    arrays: Path | dict[str, np.ndarray]  # the file, or step_arrays's arrays themselves

    def _read(self, names: list[str]) -> list[np.ndarray]:
        if isinstance(self.arrays, dict):
            return [self.arrays[name].astype(np.float32) for name in names]
        with np.load(self.arrays) as stored:
            return [stored[name].astype(np.float32) for name in names]

    def axis_labels(self, probe: int, kind: str) -> tuple[list[str], list[str]]:
        sentence = self.sentences[probe]
        return axis_labels(kind, sentence["src_pieces"], sentence["tgt_in_pieces"], sentence["tgt_out_pieces"])

    def weights(self, probe: int, kind: str) -> list[np.ndarray]:
        """Every layer's weights of one probe and kind: a list of (H, T_q, T_k) float32."""
        return self._read([f"{probe}/{kind}/{layer}" for layer in range(self.sentences[probe]["layers"][kind])])

    def has_inside(self, probe: int) -> bool:
        """Whether the values inside the attention were stored (not in files older than them)."""
        return self.sentences[probe].get("inside", False)

    def inside(self, probe: int, kind: str, layer: int) -> dict[str, np.ndarray]:
        """One layer's INSIDE values, float32: query, key, value, heads (H, T, d_head) and
        output (T_q, d_model)."""
        return dict(zip(INSIDE, self._read([f"{probe}/{kind}/{layer}/{name}" for name in INSIDE])))


def read_step(run_dir: Path, step: int) -> StoredStep:
    """The file of `step`; FileNotFoundError if the run has none."""
    path = step_path(run_dir, step)
    with np.load(path) as stored:
        return StoredStep(json.loads(str(stored["sentences"])), path)


def in_memory(attentions) -> StoredStep:
    """`attentions` as a StoredStep that was never written: float16 as in a file, read alike."""
    return StoredStep(*step_arrays(attentions))
