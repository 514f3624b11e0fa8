"""A sentence splitter for Argos Translate packages: a small character model trained on the
corpus's own source text and written in the form MiniSBD reads (an ONNX graph with metadata).

argostranslate splits every text into sentences before it translates them, with a MiniSBD model
per source language; a package without one makes MiniSBD download one from GitHub on the first
translation, which fails offline. So a package carries its own, learnt here from what the
translator itself was trained on.

The task, as MiniSBD frames it: for each character of a paragraph, one of three classes
(0 inside a word, 1 ends a word, 2 ends a sentence; MiniSBD's 3 and 4, multi-word tokens, are
never used). The examples are paragraphs made by joining consecutive corpus lines with a space,
so the last character of every line ends a sentence. Each character comes with MiniSBD's
features of it (`FEATURES`: a space, upper case, a digit, the paragraph's last or first
character), computed here as MiniSBD computes them (tests/test_sentence_splitter.py compares).

The model: character embeddings plus the features, four residual dilated convolutions (each
character sees 30 on either side: a full stop, the space and the capital after it, an
abbreviation before it) and a linear layer to the three classes. Small enough to train in
seconds on a CPU; exported with torch.onnx (onnxscript), its metadata (config, vocabulary, no lexicon) added
with the onnx package as MiniSBD's own models carry them.
"""

import json
import logging
import random
import re
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

# MiniSBD's per-character features, in the order it stacks them: the character-wise ones in
# this order, then end_of_para, then start_of_para (minisbd/modules/data.py)
FEATURES = ("space_before", "capitalized", "numeric", "end_of_para", "start_of_para")
PAD, UNK = "<PAD>", "<UNK>"  # ids 0 and 1 of MiniSBD's character vocabulary
WORD_END, SENTENCE_END = 1, 2
_DIGIT = re.compile(r"\d")


def normalize(text: str) -> str:
    """A paragraph as MiniSBD reads it: every whitespace character a space, runs of spaces one."""
    return re.sub(r"\s+", " ", text)


def features(paragraph: str) -> np.ndarray:
    """MiniSBD's `FEATURES` of each character of a normalized paragraph: (T, 5) float32."""
    rows = [
        (char == " ", char.isupper(), _DIGIT.match(char) is not None, i == len(paragraph) - 1, i == 0)
        for i, char in enumerate(paragraph)
    ]
    return np.array(rows, dtype=np.float32).reshape(len(paragraph), len(FEATURES))


def labels(sentences: Sequence[str]) -> tuple[str, np.ndarray]:
    """The paragraph the sentences make, joined by spaces, and each character's class."""
    paragraph = " ".join(sentences)
    classes = np.zeros(len(paragraph), dtype=np.int64)
    start = 0
    for sentence in sentences:
        end = start + len(sentence) - 1  # its last character
        for i in range(start, end):
            if paragraph[i] != " " and paragraph[i + 1] == " ":
                classes[i] = WORD_END
        classes[end] = SENTENCE_END
        start = end + 2  # after the joining space
    return paragraph, classes


class SplitterNet(nn.Module):
    """Characters and their features -> per-character scores of the three classes."""

    def __init__(self, n_units: int, width: int = 64, kernel: int = 5, dilations: Sequence[int] = (1, 2, 4, 8)):
        super().__init__()
        self.embed = nn.Embedding(n_units, width, padding_idx=0)
        self.featurize = nn.Linear(len(FEATURES), width)
        self.convs = nn.ModuleList(
            nn.Conv1d(width, width, kernel, dilation=d, padding=d * (kernel - 1) // 2) for d in dilations
        )
        self.classify = nn.Linear(width, 3)

    def forward(self, units: torch.Tensor, features: torch.Tensor) -> torch.Tensor:
        """units (B, T) int64, features (B, T, F) float -> scores (B, T, 3)."""
        x = self.embed(units) + self.featurize(features)  # (B, T, W)
        x = x.transpose(1, 2)  # (B, W, T): channels first for the convolutions
        for conv in self.convs:
            x = x + torch.relu(conv(x))
        return self.classify(x.transpose(1, 2))  # (B, T, 3)


@dataclass
class SentenceSplitter:
    """A trained splitter: its network and character vocabulary (id order)."""

    net: SplitterNet
    units: list[str]

    def encode(self, paragraphs: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
        """Normalized paragraphs -> units (B, T) and features (B, T, F), padded with one PAD at
        least after each, as MiniSBD pads its batches."""
        ids = {unit: i for i, unit in enumerate(self.units)}
        length = max(len(p) for p in paragraphs) + 1
        units = torch.zeros(len(paragraphs), length, dtype=torch.int64)
        feats = torch.zeros(len(paragraphs), length, len(FEATURES))
        for row, paragraph in enumerate(paragraphs):
            units[row, : len(paragraph)] = torch.tensor([ids.get(c, 1) for c in paragraph])
            feats[row, : len(paragraph)] = torch.from_numpy(features(paragraph))
        return units, feats

    @torch.no_grad()
    def sentence_ends(self, paragraph: str) -> list[int]:
        """The positions in `paragraph` (normalized) where a sentence ends, the last included."""
        self.net.eval()
        predicted = self.net(*self.encode([paragraph]))[0, : len(paragraph)].argmax(-1)
        ends = (predicted == SENTENCE_END).nonzero().flatten().tolist()
        return sorted(set(ends) | {len(paragraph) - 1})

    def split(self, paragraph: str) -> list[str]:
        """`paragraph`'s sentences (normalized, without the spaces between them)."""
        paragraph = normalize(paragraph).strip()
        if not paragraph:
            return []
        sentences, start = [], 0
        for end in self.sentence_ends(paragraph):
            if paragraph[start : end + 1].strip():
                sentences.append(paragraph[start : end + 1].strip())
            start = end + 1
        return sentences


def make_paragraphs(lines: Sequence[str], rng: random.Random, most: int = 6) -> list[list[str]]:
    """Consecutive runs of 1 to `most` lines (normalized, blank ones left out): each a paragraph."""
    lines = [s for s in (normalize(line).strip() for line in lines) if s]
    paragraphs, i = [], 0
    while i < len(lines):
        n = rng.randint(1, most)
        paragraphs.append(lines[i : i + n])
        i += n
    return paragraphs


def vary_ending(sentence: str, rng: random.Random) -> str:
    """A training sentence's full stop, sometimes changed: dropped (a boundary is then seen from
    what comes after it: the capital, the article), or made "!" or "?" (rare in a corpus of
    descriptions, common in what users type)."""
    if not sentence.endswith(".") or len(sentence) < 2:
        return sentence
    draw = rng.random()
    if draw < 0.15:
        return sentence[:-1].rstrip() or sentence
    return sentence[:-1] + ("!" if draw < 0.2 else "?" if draw < 0.25 else ".")


def as_typed(sentences: list[str], rng: random.Random) -> list[str]:
    """A paragraph's sentences as people also type them: now and then a number starts one
    ("3 Hunde folgen.") or an ordinal stands inside one ("im 2. Stock", German's way: a full
    stop that ends no sentence), and now and then the whole paragraph is lower-cased or in
    capitals (a boundary is then seen without the capital after it)."""
    out = []
    for sentence in sentences:
        words, draw = sentence.split(" "), rng.random()
        if draw < 0.05:
            words.insert(0, str(rng.randint(1, 99)))
        elif draw < 0.1 and len(words) > 2:
            words.insert(rng.randint(1, len(words) - 1), f"{rng.randint(1, 30)}.")
        out.append(" ".join(words))
    case = rng.random()
    if case < 0.15:
        return [s.lower() for s in out]
    if case < 0.25:
        return [s.upper() for s in out]
    return out


def train_splitter(
    lines: Sequence[str],
    seed: int = 0,
    epochs: int = 2,
    batch_size: int = 32,
    min_count: int = 2,
    progress: Callable[[int, int], None] | None = None,
) -> SentenceSplitter:
    """A splitter trained on corpus lines (each one sentence, or what the corpus calls one):
    `epochs` passes over them, shuffled and regrouped into paragraphs each time. Characters seen
    fewer than `min_count` times are unknown, so that the model learns what to do with one.
    `progress(done, total)` after each step."""
    torch.manual_seed(seed)
    rng = random.Random(seed)
    counts = Counter(c for line in lines for c in normalize(line))
    units = [PAD, UNK] + [c for c, n in counts.most_common() if n >= min_count and c != " "] + [" "]
    splitter = SentenceSplitter(SplitterNet(len(units)), units)
    optimizer = torch.optim.AdamW(splitter.net.parameters(), lr=3e-3)
    order = list(lines)
    batches_per_epoch = -(-len(make_paragraphs(order, random.Random(seed))) // batch_size)
    total, done = epochs * batches_per_epoch, 0
    splitter.net.train()
    for _ in range(epochs):
        rng.shuffle(order)
        examples = [labels(as_typed([vary_ending(s, rng) for s in p], rng)) for p in make_paragraphs(order, rng)]
        for start in range(0, len(examples), batch_size):
            batch = examples[start : start + batch_size]
            units_batch, feats = splitter.encode([text for text, _ in batch])
            target = torch.full(units_batch.shape, -100)  # -100: padding, not scored
            for row, (_, classes) in enumerate(batch):
                target[row, : len(classes)] = torch.from_numpy(classes)
            scores = splitter.net(units_batch, feats)  # (B, T, 3)
            loss = F.cross_entropy(scores.flatten(0, 1), target.flatten())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            done += 1
            if progress is not None:
                progress(min(done, total), total)
    splitter.net.eval()
    return splitter


def _ends(paragraph: str, pieces: Sequence[str]) -> set[int]:
    """Where in `paragraph` each of its consecutive pieces ends, the last one left out."""
    ends, position = set(), 0
    for piece in pieces[:-1]:
        piece = normalize(piece).strip()
        position = paragraph.index(piece, position) + len(piece)
        ends.add(position)
    return ends


def boundary_scores(split: Callable[[str], list[str]], lines: Sequence[str], seed: int = 0) -> dict[str, float]:
    """Precision and recall of the sentence boundaries `split` finds inside paragraphs made from
    `lines` (as in training: runs of 1 to 6 lines): a boundary is the place in the paragraph
    where one sentence ends and the next begins; a paragraph's end is not one."""
    found = right = true = 0
    paragraphs = make_paragraphs(lines, random.Random(seed))
    for sentences in paragraphs:
        paragraph = " ".join(sentences)
        truth, guessed = _ends(paragraph, sentences), _ends(paragraph, split(paragraph))
        found, right, true = found + len(guessed), right + len(guessed & truth), true + len(truth)
    return {
        "precision": right / found if found else 1.0,
        "recall": right / true if true else 1.0,
        "paragraphs": len(paragraphs),
        "boundaries": true,
    }


def export_onnx(splitter: SentenceSplitter, path: Path, lang: str) -> None:
    """Write the splitter as MiniSBD's ONNX model for language `lang` (`SBDetect(path)` loads it)."""
    import onnx

    units, feats = splitter.encode(["Ein Satz. Noch einer", "Zwei."])  # (B, T), (B, T, F): any B and T will do
    batch, chars = torch.export.Dim("batch"), torch.export.Dim("chars")
    splitter.net.eval()
    exporter_log = logging.getLogger("torch.onnx")
    level = exporter_log.level
    # its notes (on naming the dynamic axes, on torchvision's operators it skips) are not for the user
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exporter_log.setLevel(logging.ERROR)
        torch.onnx.export(
            splitter.net,
            (units, feats),
            str(path),
            input_names=["units", "features"],
            output_names=["output"],
            dynamic_shapes={"units": {0: batch, 1: chars}, "features": {0: batch, 1: chars}},
            opset_version=18,
            dynamo=True,
            verbose=False,
        )
        exporter_log.setLevel(level)
    config = {
        "skip_newline": False,
        "max_seqlen": 1000,
        "no_ssplit": False,
        "batch_size": 32,
        "feat_funcs": list(FEATURES),
        "use_dictionary": False,
        "num_dict_feat": 0,
    }
    vocab = {
        "lang": lang,
        "idx": 0,
        "cutoff": 0,
        "lower": False,
        "_unit2id": {unit: i for i, unit in enumerate(splitter.units)},
        "_id2unit": splitter.units,
    }
    model = onnx.load(str(path))
    for key, value in {
        "lang_code": lang,
        "config": json.dumps(config),
        "vocab": json.dumps(vocab),
        "lexicon": "null",
    }.items():
        entry = model.metadata_props.add()
        entry.key, entry.value = key, value
    onnx.save(model, str(path))
