"""Training pairs varied as people type: the surface modifiers production translators train
their small models with (Mozilla's Firefox Translations, through OpusTrainer), applied anew
every epoch to both sides of a fraction of the pairs, so that each pair stays a translation.

Multi30k's captions nearly all start with a capital, end with a full stop and hold one sentence:
a model trained on them alone learns that the full stop ends a sentence and has never seen
capitals, a line without its full stop or two sentences in one line (bench/robustness.py
measures what that costs). The modifiers, each with the share of pairs it takes:

- `upper`: both sides upper-cased (OpusTrainer's UpperCase);
- `title`: both sides with every word capitalised (OpusTrainer's TitleCase);
- `lower`: both sides lower-cased (what people type in a hurry);
- `upper_source`: the source alone upper-cased, the target as written: a sentence typed in
  capitals comes back in sentence case, so the decoder writes what it always writes;
- `lower_source`: the source alone lower-cased, the target as written: a sentence typed in
  lower case comes back in sentence case;
- `no_final_punct`: the final full stop, question or exclamation mark removed from both sides;
- `merge`: a pair followed by the next 1 to `merge_max - 1` pairs, joined into one with a space
  on each side (OpusTrainer's Merge): several sentences in one line;
- `fragment`: one of the pair's word-aligned fragments, drawn at random, added as a pair of its
  own (data/fragments.py): a word or a short phrase alone, which Multi30k never has;
- `numbers`: the number word (two to ten) that both sides hold once replaced, on both, by a
  number as people write it (4071, 3,50, 10:30, 28.11.2026, ...: data/noise.py), where a pair
  holds one;
- `copy_through`: something a translator copies as it is (a URL, an e-mail address, an @handle,
  an emoji, a file name, a word in another script, a number) put at the start or the end of both
  sides (OpusTrainer's Noise, inside the sentence);
- `copy_inside`: the same put inside both sentences, between two words of each where the word
  links let both take it and stay each other's translation (data/fragments.py's `split_points`;
  OpusTrainer's Tags modifier inserts its random strings by the alignments likewise);
- `typos`: typing errors in the source alone (letters swapped, dropped, doubled, a neighbouring
  key), in a tenth of its words and one at least (OpusTrainer's Typos);
- `fold`: the source typed without its accented letters (ä -> ae or a, ß -> ss), half the pairs
  each way: a German keyboard's letters on a keyboard without them.

The case modifiers exclude each other (a pair gets at most one); they and `no_final_punct` vary
the fragments too, and so do the four after them, each after the case (numbers, typos, folding,
then the copy-through items, which neither a typo nor a fold may change: an item inside a pair
is given its room before the merges, as a private-use character that no modifier changes, and
filled last).
Why not OpusTrainer's own
classes: they draw from Python's global `random` (not reproducible per epoch, so a resumed run
would see other pairs, and every rank would need the same global state), rejoin words with
single spaces, and the package pins sentencepiece 0.1.99 where this project runs 0.2.3.

Each epoch's variation is drawn from a generator seeded by (seed, epoch) alone, as subword
sampling's (data/subword_sampling.py): a resumed run sees what an uninterrupted one saw, and
every rank the same pairs.
"""

import re
from pathlib import Path

import numpy as np
from datasets import Dataset

from data.columns import column_lines
from data.config import AugmentConfig
from data.fragments import Pair, aligned_links, pair_fragments, split_points
from data.noise import FOLDS, TYPO_WORDS, copy_item, folded, inserted, number, with_number, with_typos
from data.tokenizer import Tokenizer

FINAL_PUNCTUATION = re.compile(r"\s*[.!?]+\s*$")
# Where an item to copy goes inside a pair, on both sides, until it is filled in last: a character
# of Unicode's private use area, which no case change, typo or fold touches. Captions hold none; a
# corpus pair that does is given no room (AugmentedPairs).
ROOM = "\ue000"


def title_case(text: str) -> str:
    """Every word's first letter capitalised, the rest and the spacing as they were."""
    return re.sub(r"(^|\s)(\w)", lambda m: m.group(1) + m.group(2).upper(), text)


def without_final_punctuation(text: str) -> str:
    return FINAL_PUNCTUATION.sub("", text)


def merged(pairs: list[Pair], share: float, most: int, rng: np.random.Generator) -> list[Pair]:
    """Walking the pairs in order, each starts a merge with probability `share`: it and the next
    1 to most - 1 pairs become one pair, each side joined with a space."""
    out, i = [], 0
    starts = rng.random(len(pairs)) < share
    sizes = rng.integers(2, most + 1, size=len(pairs))
    while i < len(pairs):
        n = int(sizes[i]) if starts[i] else 1
        group = pairs[i : i + n]
        out.append((" ".join(src for src, _ in group), " ".join(tgt for _, tgt in group)))
        i += n
    return out


def drawn_fragments(fragments: list[list[Pair]], share: float, rng: np.random.Generator) -> list[Pair]:
    """Each pair with fragments gives one of them, drawn at random, with probability `share`."""
    takes, which = rng.random(len(fragments)) < share, rng.random(len(fragments))
    return [found[int(w * len(found))] for found, take, w in zip(fragments, takes, which) if take and found]


def with_room(
    pairs: list[Pair], points: list[list[tuple[int, int]]], share: float, rng: np.random.Generator
) -> list[Pair]:
    """A `share` of the pairs with ROOM, a word of its own on each side, at one of their split
    points (`points[i]`: pair i's (source, target) offsets; a pair with none stays as it is): a
    place in the source drawn first, each alike, then one of the target's places that go with it
    (an unlinked target word, "the", may fall on either side)."""
    out = list(pairs)
    for i in np.flatnonzero(rng.random(len(out)) < share):
        if points[i]:
            sources = sorted({at_src for at_src, _ in points[i]})
            at_src = sources[int(rng.integers(len(sources)))]
            targets = [at_tgt for s, at_tgt in points[i] if s == at_src]
            at_tgt = targets[int(rng.integers(len(targets)))]
            src, tgt = out[i]
            out[i] = (f"{src[:at_src]} {ROOM}{src[at_src:]}", f"{tgt[:at_tgt]} {ROOM}{tgt[at_tgt:]}")
    return out


def filled(pair: Pair, rng: np.random.Generator) -> Pair:
    """Each ROOM of the pair filled with an item to copy, the same on both sides, in order (a
    merged pair may hold several)."""
    src, tgt = pair
    while ROOM in src and ROOM in tgt:
        item = copy_item(rng)
        src, tgt = src.replace(ROOM, item, 1), tgt.replace(ROOM, item, 1)
    return src, tgt


def typed(
    pairs: list[Pair], modifiers: AugmentConfig, rng: np.random.Generator, languages: tuple[str, str]
) -> list[Pair]:
    """The pairs with numbers, typos, folding and copy-through items, each on its share of them,
    in that order (an item to copy comes last: a typo or a fold would change it on one side
    alone), and the room made inside pairs filled; each drawn only where its share is above 0, so
    that the draws before are the same without them."""
    out = list(pairs)
    if modifiers.numbers:  # None (not resolved by DataConfig) or 0: off
        for i in np.flatnonzero(rng.random(len(out)) < modifiers.numbers):
            out[i] = with_number(out[i], languages, number(rng)) or out[i]
    if modifiers.typos > 0:
        for i in np.flatnonzero(rng.random(len(out)) < modifiers.typos):
            out[i] = (with_typos(out[i][0], TYPO_WORDS, rng), out[i][1])
    if modifiers.fold > 0:
        for i in np.flatnonzero(rng.random(len(out)) < modifiers.fold):
            out[i] = (folded(out[i][0], FOLDS[int(rng.integers(len(FOLDS)))]), out[i][1])
    if modifiers.copy_through > 0:
        for i in np.flatnonzero(rng.random(len(out)) < modifiers.copy_through):
            item, at_start = copy_item(rng), bool(rng.random() < 0.5)
            out[i] = (inserted(out[i][0], item, at_start), inserted(out[i][1], item, at_start))
    if modifiers.copy_inside > 0:
        out = [filled(pair, rng) for pair in out]  # a pair without room draws nothing
    return out


def varied(
    pairs: list[Pair],
    modifiers: AugmentConfig,
    rng: np.random.Generator,
    fragments: list[list[Pair]] | None = None,
    languages: tuple[str, str] = ("de", "en"),
    inside: list[list[tuple[int, int]]] | None = None,
) -> list[Pair]:
    """The pairs with the modifiers applied: room for an item inside a share of them at one of
    their split points (`inside[i]` are pair i's), merges, then the fragments (`fragments[i]` are
    pair i's) added after them, then case and final punctuation over all, then what `typed`
    adds. `languages` (source, target) name the number words."""
    extra = drawn_fragments(fragments, modifiers.fragment, rng) if modifiers.fragment > 0 and fragments else []
    if modifiers.copy_inside > 0 and inside:
        pairs = with_room(pairs, inside, modifiers.copy_inside, rng)
    if modifiers.merge > 0:
        pairs = merged(pairs, modifiers.merge, modifiers.merge_max, rng)
    pairs = pairs + extra
    case = rng.random(len(pairs))  # one draw a pair: which case change, if any
    drop = rng.random(len(pairs)) < modifiers.no_final_punct
    # the source-alone shares last: with them at 0 the draws of the others are as before them
    bounds = np.cumsum(
        [modifiers.upper, modifiers.title, modifiers.lower, modifiers.upper_source, modifiers.lower_source]
    )
    changes = (str.upper, title_case, str.lower, str.upper, str.lower)
    out = []
    for (src, tgt), u, cut in zip(pairs, case, drop):
        which = int(np.searchsorted(bounds, u, side="right"))  # the change's index in `changes`; 5: none
        if which < 3:  # both sides
            src, tgt = changes[which](src), changes[which](tgt)
        elif which < 5:  # the source alone
            src = changes[which](src)
        if cut:
            src, tgt = without_final_punctuation(src), without_final_punctuation(tgt)
        out.append((src, tgt))
    return typed(out, modifiers, rng, languages)


class AugmentedPairs:
    """The training pairs, each epoch varied anew by the modifiers and tokenized; `languages`:
    (source, target)."""

    def __init__(
        self,
        tokenizer: Tokenizer,
        train_text: Dataset,
        modifiers: AugmentConfig,
        cache_dir: Path,
        languages: tuple[str, str],
    ) -> None:
        self.tokenizer, self.modifiers, self.languages = tokenizer, modifiers, languages
        self.pairs = list(zip(column_lines(train_text, "src"), column_lines(train_text, "tgt")))
        # aligned once and cached under cache_dir: every epoch draws from the same fragments and points
        links = aligned_links(self.pairs, cache_dir) if modifiers.fragment > 0 or modifiers.copy_inside > 0 else []
        self.fragments = pair_fragments(self.pairs, links) if modifiers.fragment > 0 else None
        self.inside = (
            [
                [] if ROOM in src + tgt else split_points(src, tgt, pair_links)
                for (src, tgt), pair_links in zip(self.pairs, links)
            ]
            if modifiers.copy_inside > 0
            else None
        )

    def epoch(self, epoch: int, seed: int) -> Dataset:
        """Columns src_ids and tgt_ids, like the tokenized split; the same for the same (seed, epoch)."""
        pairs = varied(
            self.pairs,
            self.modifiers,
            np.random.default_rng([seed, epoch, 1]),
            self.fragments,
            self.languages,
            self.inside,
        )
        return Dataset.from_dict(
            {
                "src_ids": self.tokenizer.encode_src([src for src, _ in pairs]),
                "tgt_ids": self.tokenizer.encode_tgt([tgt for _, tgt in pairs]),
            }
        )
