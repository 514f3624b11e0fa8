"""Preparing a large own corpus: a synthetic 1M-pair corpus through the files source.

    .venv/bin/python bench/data_prep.py            # after `make install`; a few minutes

Makes `--pairs` German-English pairs from Multi30k's training lines ($MULTI30K_DIR): pair i
joins training pairs a and b (drawn with a fixed seed) on both sides, so the text is real
language with Multi30k's vocabulary and twice its sentence length. Writes them as parallel
files, then, in a fresh process as `train.py data=files` would, loads them, carves the
validation split, trains the tokenizer (on its `max_sentences` sample) and tokenizes every
split into the cache, timing each stage and reading the process's peak RSS after each. Writes
bench/results/data_prep.json.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.common import RESULTS, write_result  # noqa: E402
from data import load_multi30k  # noqa: E402

STAGES = """
import json, resource, sys, time
sys.path.insert(0, {root!r})
from data import DataConfig
from data.prepare import load_corpus, tokenize_splits
from data.tokenizer import train_tokenizer
from pathlib import Path
cfg = DataConfig(source="files", train={train!r}, cache_dir={cache!r})
times, peak = {{}}, {{}}
def done(stage, started):
    times[stage] = time.perf_counter() - started
    peak[stage] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024  # the process's peak so far
t = time.perf_counter(); text = load_corpus(cfg); done("load_and_carve", t)
t = time.perf_counter(); tokenizer = train_tokenizer(text["train"], cfg.tokenizer, Path(cfg.cache_dir))
done("tokenizer", t)
t = time.perf_counter(); tokens = tokenize_splits(text, tokenizer, Path(cfg.cache_dir)); done("tokenize", t)
print(json.dumps({{"seconds": times, "pairs": {{s: len(d) for s, d in tokens.items()}},
                  "peak_rss_mb": peak["tokenize"], "peak_rss_mb_after": peak}}))
"""


def make_corpus(folder: Path, pairs: int, seed: int) -> None:
    train = load_multi30k("de", "en", splits=["train"])["train"]
    src, tgt = train["src"], train["tgt"]
    rng = np.random.default_rng(seed)
    a, b = rng.integers(len(src), size=pairs), rng.integers(len(src), size=pairs)
    for lang, side in (("de", src), ("en", tgt)):
        with open(folder / f"train.{lang}", "w", encoding="utf-8") as file:
            for i, j in zip(a.tolist(), b.tolist()):
                file.write(f"{side[i]} {side[j]}\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=RESULTS / "data_prep.json")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        started = time.perf_counter()
        make_corpus(folder, args.pairs, args.seed)
        print(f"{args.pairs:,} pairs written in {time.perf_counter() - started:.0f} s", flush=True)
        script = STAGES.format(
            root=str(Path(__file__).resolve().parents[1]), train=str(folder / "train"), cache=str(folder / "cache")
        )
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=os.environ)
        if done.returncode != 0:
            sys.exit(done.stderr[-2000:])
        measured = json.loads(done.stdout.strip().splitlines()[-1])
    seconds = measured["seconds"]
    tokenized = sum(measured["pairs"].values())
    result = {
        "pairs": args.pairs,
        "splits": measured["pairs"],
        "seconds": {k: round(v, 1) for k, v in seconds.items()},
        "tokenized_pairs_per_sec": round(tokenized / seconds["tokenize"]),
        "peak_rss_mb": measured["peak_rss_mb"],
        "peak_rss_mb_after": measured["peak_rss_mb_after"],
        "threads": os.cpu_count(),
    }
    print(json.dumps(result, indent=2))
    write_result(args.out, result)


if __name__ == "__main__":
    main()
