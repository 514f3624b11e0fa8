"""Aligned fragments of the training pairs: a word or a short phrase of a source sentence beside
the words of its translation that a word aligner links it to ("Hund" -> "dog", "im Freien" ->
"outside"). Trained on now and then, they teach a model that has only seen whole captions what
a word alone translates to, instead of a caption's worth of it ("Hund" -> "dog dog dog ...").

The aligner is eflomal (Östling and Tiedemann 2016: a Bayesian HMM with fertility, sampled;
`pip install eflomal`), run once over the training pairs in both directions. The two directions'
links are joined by grow-diag-final-and (Koehn et al. 2003), and the fragments are the phrase
pairs consistent with the joined links (no link leaves the pair's box) of 1 to
`MAX_SOURCE_WORDS` source words and at most `MAX_TARGET_WORDS` target words, cut out of the two
sentences as they were written (their own spacing and case).

eflomal's sampler draws its seed from /dev/urandom: two runs of it give different links. So the
links are computed once per training text and kept in the cache, under a lock, so that every
rank and every resumed run reads the same ones.
"""

import hashlib
import logging
import re
import tempfile
from collections.abc import Sequence
from pathlib import Path

from filelock import FileLock

from utils.files import atomic_file

log = logging.getLogger(__name__)

Pair = tuple[str, str]
Links = set[tuple[int, int]]  # (source word, target word), by position

WORD = re.compile(r"\w+|[^\w\s]")  # a word, or one punctuation mark: what the aligner aligns
MAX_SOURCE_WORDS = 3
MAX_TARGET_WORDS = 4
_NEIGHBOURS = ((-1, 0), (0, -1), (1, 0), (0, 1), (-1, -1), (-1, 1), (1, -1), (1, 1))


def words(text: str) -> list[re.Match]:
    """The words and punctuation marks of `text`, with where each lies in it."""
    return list(WORD.finditer(text))


def parse_links(line: str) -> Links:
    """Pharaoh format, "0-0 1-2": source-target positions."""
    return {(int(i), int(j)) for i, j in (link.split("-") for link in line.split())}


def symmetrized(forward: Links, reverse: Links) -> Links:
    """grow-diag-final-and: the links both directions agree on, grown into neighbouring links of
    either direction that align a word not yet aligned, then any remaining link of either
    direction whose two words are both still unaligned."""
    union, links = forward | reverse, forward & reverse
    src_aligned, tgt_aligned = {i for i, _ in links}, {j for _, j in links}

    def add(link: tuple[int, int]) -> None:
        links.add(link)
        src_aligned.add(link[0])
        tgt_aligned.add(link[1])

    grew = True
    while grew:
        grew = False
        for i, j in sorted(links):
            for di, dj in _NEIGHBOURS:
                link = (i + di, j + dj)
                if link in union and link not in links and (link[0] not in src_aligned or link[1] not in tgt_aligned):
                    add(link)
                    grew = True
    for link in sorted(union - links):
        if link[0] not in src_aligned and link[1] not in tgt_aligned:
            add(link)
    return links


def phrase_pairs(links: Links, n_source: int) -> list[tuple[int, int, int, int]]:
    """Source word spans [i, j) of 1 to MAX_SOURCE_WORDS words, each with the smallest target span
    [a, b) holding its links, where that span is at most MAX_TARGET_WORDS and no link of it comes
    from outside [i, j)."""
    out = []
    for i in range(n_source):
        for j in range(i + 1, min(i + MAX_SOURCE_WORDS, n_source) + 1):
            targets = [t for s, t in links if i <= s < j]
            if not targets:
                continue
            a, b = min(targets), max(targets) + 1
            if b - a <= MAX_TARGET_WORDS and all(i <= s < j for s, t in links if a <= t < b):
                out.append((i, j, a, b))
    return out


def fragments(source: str, target: str, links: Links) -> list[Pair]:
    """The phrase pairs of one training pair, cut from its two sentences as written; those that
    begin or end with a punctuation mark or inside a word on either side, and the whole pair
    itself, left out."""
    src_words, tgt_words = words(source), words(target)
    out = []
    for i, j, a, b in phrase_pairs(links, len(src_words)):
        if b > len(tgt_words):
            continue  # a link past the sentence's end: the aligner's words were not ours
        ends = (src_words[i], src_words[j - 1], tgt_words[a], tgt_words[b - 1])
        if not all(m.group()[0].isalnum() for m in ends):
            continue
        if not (_whole(source, ends[0].start(), ends[1].end()) and _whole(target, ends[2].start(), ends[3].end())):
            continue
        pair = (source[ends[0].start() : ends[1].end()], target[ends[2].start() : ends[3].end()])
        if pair != (source.strip(), target.strip()):
            out.append(pair)
    return out


def split_points(source: str, target: str, links: Links) -> list[tuple[int, int]]:
    """Where both sentences may take a word of their own inside them and stay each other's
    translation: (source offset, target offset) of a space between two words on each side such
    that every link joins two words before both spaces or two words after both (the cut is
    consistent with the links, as a phrase pair's box is). The offset is where the space begins
    ("Ein Hund| rennt" / "A dog| runs"); a cut between a word and its punctuation, or inside
    "T-Shirt", is no space and not offered; nor are the sentences' two ends. In source order;
    none without links or where they reach past the words."""
    src_words, tgt_words = words(source), words(target)
    if not links or any(s >= len(src_words) or t >= len(tgt_words) for s, t in links):
        return []  # nothing aligned (every cut would pass), or the aligner's words were not ours

    def spaces(text: str, found: list[re.Match]) -> list[bool]:  # [k]: a space between word k and k + 1
        return [text[a.end() : b.start()].isspace() for a, b in zip(found, found[1:])]

    src_space, tgt_space = spaces(source, src_words), spaces(target, tgt_words)
    points = []
    for i, spaced in enumerate(src_space):
        if not spaced:
            continue
        before = [t for s, t in links if s <= i]  # target words linked to source words 0..i
        after = [t for s, t in links if s > i]
        # a target cut after word j keeps `before` at or left of j and `after` right of it
        for j in range(max(before, default=0), min(after, default=len(tgt_words))):
            if j < len(tgt_space) and tgt_space[j]:
                points.append((src_words[i].end(), tgt_words[j].end()))
    return points


def _whole(text: str, start: int, end: int) -> bool:
    """Whether text[start:end] begins and ends on a word's edge ("s" of "Harrod's" does not)."""
    return (start == 0 or text[start - 1].isspace()) and (
        end == len(text) or not text[end].isalnum() and text[end] != "'"
    )


def _align(pairs: Sequence[Pair], folder: Path) -> tuple[list[str], list[str]]:
    """eflomal's forward and reverse links, a line a pair."""
    import eflomal  # imported here: only runs with fragments on need it

    def tokenized(side: int) -> list[str]:
        return [" ".join(m.group() for m in words(pair[side])) + "\n" for pair in pairs]

    forward, reverse = folder / "forward", folder / "reverse"
    eflomal.Aligner().align(
        tokenized(0), tokenized(1), links_filename_fwd=str(forward), links_filename_rev=str(reverse)
    )
    return forward.read_text().splitlines(), reverse.read_text().splitlines()


def aligned_links(pairs: Sequence[Pair], cache_dir: Path) -> list[Links]:
    """The symmetrized word links of every pair, aligned once per training text and cached."""
    digest = hashlib.sha256()
    for source, target in pairs:
        digest.update(f"{source}\t{target}\n".encode())
    path = Path(cache_dir) / "alignments" / f"{digest.hexdigest()[:16]}.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(f"{path}.lock"):
        if path.exists():
            log.info("word alignments loaded from cache %s", path)
        else:
            log.info("aligning %d training pairs with eflomal (once; cached in %s)", len(pairs), path)
            with tempfile.TemporaryDirectory() as work:
                forward, reverse = _align(pairs, Path(work))
            with atomic_file(path) as out:
                for f, r in zip(forward, reverse, strict=True):
                    out.write(f"{f}\t{r}\n")
    lines = path.read_text().splitlines()
    return [symmetrized(*(parse_links(side) for side in line.split("\t"))) for line in lines]


def pair_fragments(pairs: Sequence[Pair], links: Sequence[Links]) -> list[list[Pair]]:
    """Every training pair's aligned fragments, in the pairs' order (a list, maybe empty, a pair),
    from its links (`aligned_links`)."""
    found = [fragments(source, target, pair_links) for (source, target), pair_links in zip(pairs, links)]
    log.info("%d aligned fragments from %d pairs", sum(map(len, found)), len(pairs))
    return found
