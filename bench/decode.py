"""Decoding speed: greedy and beam search, with and without the key/value cache.

    python bench/decode.py -c runs/RUN [--split test_2016_flickr] [--beam-size 5]

Translates a whole Multi30k split (from $MULTI30K_DIR) with each setting after a warm-up,
prints a table and writes bench/results/decode.json with the commit it was measured on.
"""
import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.common import RESULTS, checkpoint_and_split, write_result  # noqa: E402
from inference.translator import Translator  # noqa: E402


def measure(translator: Translator, sentences: list[str]) -> dict:
    translator.translate(sentences[:64])  # warm-up: first-call allocations and kernel choices
    start = time.perf_counter()
    outputs = translator.translate(sentences)
    seconds = time.perf_counter() - start
    pieces = sum(len(h[0].tokens) + 1 for h in translator.last_hypotheses if h)  # eos included
    return {"seconds": round(seconds, 2), "sentences_per_sec": round(len(sentences) / seconds, 1),
            "tokens_per_sec": round(pieces / seconds, 1), "outputs": outputs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-c", "--checkpoint", required=True)
    parser.add_argument("--split", default="test_2016_flickr")
    parser.add_argument("--beam-size", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=RESULTS / "decode.json")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    model, tokenizer, meta, text = checkpoint_and_split(args.checkpoint, args.split)
    sentences = list(text["src"])
    rows = {}
    for name, beam, cache in [("greedy", 1, True), ("greedy, no cache", 1, False),
                              (f"beam {args.beam_size}", args.beam_size, True),
                              (f"beam {args.beam_size}, no cache", args.beam_size, False)]:
        rows[name] = measure(Translator(model, tokenizer, beam_size=beam, use_cache=cache), sentences)
        print(f"{name:<18} {rows[name]['sentences_per_sec']:>8.1f} sent/s {rows[name]['tokens_per_sec']:>9.1f} tok/s",
              flush=True)
    for beam in ("greedy", f"beam {args.beam_size}"):
        assert rows[beam]["outputs"] == rows[f"{beam}, no cache"]["outputs"], f"{beam}: cache changed the output"
    speedup = {beam: round(rows[f"{beam}, no cache"]["seconds"] / rows[beam]["seconds"], 2)
               for beam in ("greedy", f"beam {args.beam_size}")}
    print("cache speed-up:", speedup)

    write_result(args.out, {"threads": args.threads, "checkpoint_step": meta.get("step"), "split": args.split,
                            "sentences": len(sentences), "cache_speedup": speedup,
                            "settings": {name: {k: v for k, v in row.items() if k != "outputs"}
                                         for name, row in rows.items()}})


if __name__ == "__main__":
    main()
