"""The raw attention weights of the probe sentences, one file per evaluation, for the
ATTENTION tab of TensorBoard (viz/attention_tab).

    RUN/attention/step_00000500.npz

holds, for every probe sentence, every kind, layer and head, the weights trimmed to the
sentence's real length as float16 (three significant digits: more than a colour scale shows,
half the bytes of float32), compressed, plus one JSON string with the sentences and their
pieces. Files appear atomically (written under another name, then renamed), so a reader of a
still-running run never sees half a file. numpy and json only: TensorBoard's process reads
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
STEP_FILE = re.compile(r"step_(\d+)\.npz")


def step_path(run_dir: Path, step: int) -> Path:
    return Path(run_dir) / FOLDER / f"step_{step:08d}.npz"


def write_step(run_dir: Path, step: int, attentions) -> Path:
    """Store the attention of `attentions` (inference.attention.SentenceAttention, maps on the
    CPU)
    at `step`; returns the file."""
    arrays, sentences = {}, []
    for probe, att in enumerate(attentions):
        sentences.append({"source": att.source, "translation": att.translation, "reference": att.reference,
                          "src_pieces": att.src_pieces, "tgt_in_pieces": att.tgt_in_pieces,
                          "tgt_out_pieces": att.tgt_out_pieces,
                          "layers": {kind: len(att.maps[kind]) for kind in KINDS},
                          "heads": {kind: int(att.maps[kind][0].shape[0]) for kind in KINDS}})
        for kind in KINDS:
            for layer, weights in enumerate(att.maps[kind]):  # (H, T_q, T_k)
                arrays[f"{probe}/{kind}/{layer}"] = np.asarray(weights, dtype=np.float16)
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
    """One evaluation's file: the sentences (texts, pieces, layers per kind) and their maps."""

    sentences: list[dict]
    path: Path

    def axis_labels(self, probe: int, kind: str) -> tuple[list[str], list[str]]:
        sentence = self.sentences[probe]
        return axis_labels(kind, sentence["src_pieces"], sentence["tgt_in_pieces"], sentence["tgt_out_pieces"])

    def weights(self, probe: int, kind: str) -> list[np.ndarray]:
        """Every layer's weights of one probe and kind: a list of (H, T_q, T_k) float32."""
        layers = self.sentences[probe]["layers"][kind]
        with np.load(self.path) as stored:
            return [stored[f"{probe}/{kind}/{layer}"].astype(np.float32) for layer in range(layers)]


def read_step(run_dir: Path, step: int) -> StoredStep:
    """The file of `step`; FileNotFoundError if the run has none."""
    path = step_path(run_dir, step)
    with np.load(path) as stored:
        return StoredStep(json.loads(str(stored["sentences"])), path)
