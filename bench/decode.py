"""Decoding speed and quality per engine: ours (PyTorch, fp32, bf16 and int8) and CTranslate2
(float32 and int8), greedy and beam search, side by side.

    .venv/bin/python bench/decode.py -c runs/RUN [--split test_2016_flickr] [--beam-size 5] [--threads 2]

Exports the checkpoint to CTranslate2 (float32 and int8, into a temporary folder, as export.py
does), then measures each engine in a process of its own, so that no engine's thread pools or
caches touch another's: after a warm-up it translates the whole split (from $MULTI30K_DIR),
greedy and with beam search, and reports sentences/s, target pieces/s (each output re-encoded,
</s> counted, the same count for every engine) and sacreBLEU. Ours also runs once without its
key/value cache, which must translate identically. Prints a table and writes
bench/results/decode.json with the commit and CPU.
"""

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.common import RESULTS, checkpoint_and_split, split_text, write_result  # noqa: E402
from utils.device import cpu_description, native_bf16  # noqa: E402

ENGINES = {  # name: (engine, export quantization or None, compute type)
    "ours fp32": ("minitrans", None, "float32"),
    "ours bf16": ("minitrans", None, "bfloat16"),  # measured only where bf16 is native
    "ours int8": ("minitrans", None, "int8"),
    "CTranslate2 float32": ("ctranslate2", "float32", "default"),
    "CTranslate2 int8": ("ctranslate2", "int8", "default"),
}


def measure_engine(
    path: str,
    engine: str,
    compute_type: str,
    src_lang: str,
    tgt_lang: str,
    split: str,
    sentences: int | None,
    beam_size: int,
    threads: int,
) -> dict:
    """In this process: one engine's greedy and beam rows (and ours without the cache)."""
    from inference import load_translator
    from inference.scoring import score_translations

    torch.set_num_threads(threads)
    text = split_text(src_lang, tgt_lang, split, sentences)
    sources, references = list(text["src"]), list(text["tgt"])
    rows = {}
    settings = [("greedy", 1, True), (f"beam {beam_size}", beam_size, True)]
    if engine == "minitrans" and compute_type == "float32":
        settings += [("greedy, no cache", 1, False), (f"beam {beam_size}, no cache", beam_size, False)]
    for name, beam, cache in settings:
        translator = load_translator(path, engine, compute_type=compute_type, threads=threads, beam_size=beam)
        if not cache:  # ours only: the decoder re-run over the prefix, to measure what the cache saves
            translator.use_cache = False
        translator.translate(sources[:64])  # warm-up: first-call allocations and kernel choices
        start = time.perf_counter()
        outputs = translator.translate(sources)
        seconds = time.perf_counter() - start
        pieces = sum(len(ids) + 1 for ids in translator.tokenizer.encode_tgt(outputs))
        rows[name] = {
            "seconds": round(seconds, 2),
            "sentences_per_sec": round(len(sources) / seconds, 1),
            "tokens_per_sec": round(pieces / seconds, 1),
            "bleu": round(score_translations(outputs, references).bleu, 2),
            "outputs": outputs,
        }
    for beam in ("greedy", f"beam {beam_size}"):
        if f"{beam}, no cache" in rows:
            assert rows[beam]["outputs"] == rows[f"{beam}, no cache"]["outputs"], f"{beam}: the cache changed it"
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-c", "--checkpoint", required=True)
    parser.add_argument("--split", default="test_2016_flickr")
    parser.add_argument("--sentences", type=int, help="the split's first N sentences only (default: all)")
    parser.add_argument("--beam-size", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=RESULTS / "decode.json")
    parser.add_argument(
        "--child", nargs=5, metavar=("PATH", "ENGINE", "COMPUTE_TYPE", "SRC", "TGT"), help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    if args.child:
        rows = measure_engine(*args.child, args.split, args.sentences, args.beam_size, args.threads)
        print(json.dumps(rows))
        return

    _, _, meta, text = checkpoint_and_split(args.checkpoint, args.split, args.sentences)
    results, outputs = {}, {}
    with tempfile.TemporaryDirectory() as exports:
        for quantization in ("float32", "int8"):
            subprocess.run(
                [
                    sys.executable,
                    str(Path(__file__).resolve().parents[1] / "export.py"),
                    "-c",
                    args.checkpoint,
                    f"{exports}/{quantization}",
                    "--quantize",
                    quantization,
                ],
                check=True,
                stdout=subprocess.DEVNULL,
            )
        for name, (engine, quantization, compute_type) in ENGINES.items():
            if compute_type == "bfloat16" and not native_bf16(torch.device("cpu")):
                print(f"{name}: skipped, bf16 is emulated on this CPU ({cpu_description()})")
                continue
            path = f"{exports}/{quantization}" if quantization else args.checkpoint
            done = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "-c",
                    args.checkpoint,
                    "--child",
                    path,
                    engine,
                    compute_type,
                    meta["src_lang"],
                    meta["tgt_lang"],
                    "--split",
                    args.split,
                    "--beam-size",
                    str(args.beam_size),
                    "--threads",
                    str(args.threads),
                    *(["--sentences", str(args.sentences)] if args.sentences else []),
                ],
                capture_output=True,
                text=True,
            )
            if done.returncode != 0:
                sys.exit(f"{name} failed:\n{done.stderr[-3000:]}")
            rows = json.loads(done.stdout.strip().splitlines()[-1])
            for setting, row in rows.items():
                outputs[name, setting] = row.pop("outputs")
                results[f"{name}, {setting}"] = row
                print(
                    f"{name + ', ' + setting:<34} {row['sentences_per_sec']:>7.1f} sent/s "
                    f"{row['tokens_per_sec']:>8.1f} tok/s  BLEU {row['bleu']:.2f}",
                    flush=True,
                )
    for setting in ("greedy", f"beam {args.beam_size}"):  # how many translations each engine shares with ours
        ours = outputs["ours fp32", setting]
        for name in (name for name in ENGINES if (name, setting) in outputs):
            same = sum(a == b for a, b in zip(ours, outputs[name, setting]))
            results[f"{name}, {setting}"]["same_as_ours_fp32"] = same
    beam = f"beam {args.beam_size}"
    ratio = round(
        results[f"CTranslate2 int8, {beam}"]["sentences_per_sec"] / results[f"ours fp32, {beam}"]["sentences_per_sec"],
        2,
    )
    print(f"{beam}: CTranslate2 int8 is {ratio}x ours fp32")
    write_result(
        args.out,
        {
            "threads": args.threads,
            "checkpoint_step": meta.get("step"),
            "split": args.split,
            "sentences": len(text),
            "ct2_int8_over_ours_fp32_beam": ratio,
            "settings": results,
        },
    )


if __name__ == "__main__":
    main()
