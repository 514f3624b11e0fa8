"""Decoding speed and quality per engine: ours (PyTorch, fp32, bf16 and int8) and CTranslate2
(float32 and int8), greedy and beam search, and how each uses the cores, side by side.

    .venv/bin/python bench/decode.py -c runs/RUN [--split test_2016_flickr] [--beam-size 5] [--threads 2]
    .venv/bin/python bench/decode.py -c runs/RUN --compare    # before a change to decoding lands

Exports the checkpoint to CTranslate2 (float32 and int8, into a temporary folder, as export.py
does), then measures each engine in a process of its own, so that no engine's thread pools or
caches touch another's: after a warm-up it translates the whole split (from $MULTI30K_DIR),
greedy and with beam search, and reports sentences/s, target pieces/s (each output re-encoded,
</s> counted, the same count for every engine) and sacreBLEU. Ours also runs once without its
key/value cache, which must translate identically.

Each engine runs in each layout of the cores (--threads N): N workers each decoding whole
batches on one core (the default: CTranslate2's inter_threads, our worker processes), N threads
on each batch (CTranslate2's intra_threads, torch's threads), and one thread. Beside the whole
split, the latency of one sentence at a time (the median of the split's first 30, as someone
typing meets it). Prints a table and writes bench/results/decode.json with the commit and CPU.

Every run also adds what the issue goals are set on, each engine's fp32 beam search in the default
layout as translate.py runs it, to bench/results/decode_history.jsonl (commit, CPU, checkpoint),
and prints their ratio beside the last one recorded on this CPU kind. --compare measures only
those two engines in the default layout (greedy, then beam, as a full run measures them: about
two minutes) and records nothing: what a change to decoding is checked with
before it lands. The ratio, not the sentences/s, is compared: both engines run minutes apart on
the same machine, so a slower machine that day moves both.
"""

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.common import RESULTS, checkpoint_and_split, cpu_model, measured_commit, split_text, write_result  # noqa: E402
from utils.device import cpu_description, native_bf16, usable_cores  # noqa: E402

ENGINES = {  # name: (engine, export quantization or None, compute type)
    "ours fp32": ("minitrans", None, "float32"),
    "ours bf16": ("minitrans", None, "bfloat16"),  # measured only where bf16 is native
    "ours int8": ("minitrans", None, "int8"),
    "CTranslate2 float32": ("ctranslate2", "float32", "default"),
    "CTranslate2 int8": ("ctranslate2", "int8", "default"),
}
COMPARED = ("ours fp32", "CTranslate2 float32")  # the rows the history keeps, in the default layout
HISTORY = RESULTS / "decode_history.jsonl"


def layouts(threads: int, default_only: bool = False) -> dict[str, dict]:
    """How an engine may use `threads` cores: name -> load_translator's threads settings; the
    first is the default layout (translate.py's and the API's), the only one with `default_only`."""
    if threads == 1:
        return {"1 thread": {"threads": 1}}
    if default_only:
        return {f"{threads} batches side by side": {"threads": threads, "threads_per_batch": 1}}
    return {
        f"{threads} batches side by side": {"threads": threads, "threads_per_batch": 1},
        f"{threads} threads on each batch": {"threads": threads, "threads_per_batch": threads},
        "1 thread": {"threads": 1},
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
    compare: bool = False,
) -> dict:
    """In this process: one engine's greedy and beam rows in each layout (and ours without the
    cache); with `compare`, its greedy and beam rows in the default layout alone."""
    from inference import load_translator
    from inference.scoring import score_translations

    text = split_text(src_lang, tgt_lang, split, sentences)
    sources, references = list(text["src"]), list(text["tgt"])
    rows = {}
    for layout_name, layout in layouts(threads, compare).items():
        # with `compare` too the greedy pass first: the beam row is measured after it, as in a full
        # run (without it ours measured ~8% slower against CTranslate2 on the same code)
        settings = [("greedy", 1, True), (f"beam {beam_size}", beam_size, True)]
        if (
            not compare
            and engine == "minitrans"
            and compute_type == "float32"
            and layout_name == next(iter(layouts(threads)))
        ):
            settings += [("greedy, no cache", 1, False), (f"beam {beam_size}, no cache", beam_size, False)]
        for name, beam, cache in settings:
            translator = load_translator(path, engine, compute_type=compute_type, beam_size=beam, **layout)
            if not cache:  # ours only: the decoder re-run over the prefix, to measure what the cache saves
                translator.use_cache = False
            # warm-up, several batches: first-call allocations, kernel choices, workers started
            translator.translate(sources[:256])
            start = time.perf_counter()
            # at a terminal, a bar (stderr is the terminal's: the parent reads only stdout)
            bar = tqdm(total=len(sources), desc=f"{layout_name}, {name}", disable=not sys.stderr.isatty(), leave=False)
            outputs = translator.translate(sources, progress=bar.update)
            bar.close()
            seconds = time.perf_counter() - start
            pieces = sum(len(ids) + 1 for ids in translator.tokenizer.encode_tgt(outputs))
            row = {
                "seconds": round(seconds, 2),
                "sentences_per_sec": round(len(sources) / seconds, 1),
                "tokens_per_sec": round(pieces / seconds, 1),
                "bleu": round(score_translations(outputs, references).bleu, 2),
                "outputs": outputs,
            }
            if cache and beam == beam_size and not compare:  # one sentence at a time, as typed
                latencies = []
                for sentence in sources[:30]:
                    start = time.perf_counter()
                    translator.translate([sentence])
                    latencies.append(time.perf_counter() - start)
                row["one_sentence_ms"] = round(1000 * statistics.median(latencies), 1)
            rows[f"{layout_name}, {name}"] = row
        for beam in ("greedy", f"beam {beam_size}"):
            if f"{layout_name}, {beam}, no cache" in rows:
                assert rows[f"{layout_name}, {beam}"]["outputs"] == rows[f"{layout_name}, {beam}, no cache"]["outputs"]
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-c", "--checkpoint", required=True)
    parser.add_argument("--split", default="test_2016_flickr")
    parser.add_argument("--sentences", type=int, help="the split's first N sentences only (default: all)")
    parser.add_argument("--beam-size", type=int, default=5)
    parser.add_argument("--threads", type=int, default=usable_cores(), help="cores (default: all this process may use)")
    parser.add_argument("--out", type=Path, default=RESULTS / "decode.json")
    parser.add_argument(
        "--compare",
        action="store_true",
        help=f"only {' and '.join(COMPARED)}, beam search in the default layout: their ratio beside the last "
        f"recorded on this CPU kind ({HISTORY.relative_to(RESULTS.parents[1])}); records nothing",
    )
    parser.add_argument(
        "--child", nargs=5, metavar=("PATH", "ENGINE", "COMPUTE_TYPE", "SRC", "TGT"), help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    if args.child:
        rows = measure_engine(*args.child, args.split, args.sentences, args.beam_size, args.threads, args.compare)
        print(json.dumps(rows))
        return

    _, _, meta, text = checkpoint_and_split(args.checkpoint, args.split, args.sentences)
    results, outputs = {}, {}
    with tempfile.TemporaryDirectory() as exports:
        for quantization in ("float32",) if args.compare else ("float32", "int8"):
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
            if args.compare and name not in COMPARED:
                continue
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
                    *(["--compare"] if args.compare else []),
                ],
                stdout=subprocess.PIPE,
                text=True,
            )
            if done.returncode != 0:
                sys.exit(f"{name} failed (its error is above)")
            rows = json.loads(done.stdout.strip().splitlines()[-1])
            for setting, row in rows.items():
                outputs[name, setting] = row.pop("outputs")
                results[f"{name}, {setting}"] = row
                latency = f"  one sentence {row['one_sentence_ms']:.1f} ms" if "one_sentence_ms" in row else ""
                print(
                    f"{name + ', ' + setting:<58} {row['sentences_per_sec']:>7.1f} sent/s "
                    f"{row['tokens_per_sec']:>8.1f} tok/s  BLEU {row['bleu']:.2f}{latency}",
                    flush=True,
                )
    beam = f"beam {args.beam_size}"
    default = next(iter(layouts(args.threads)))
    compared = against_history(
        {name: results[f"{name}, {default}, {beam}"]["sentences_per_sec"] for name in COMPARED},
        {"checkpoint": args.checkpoint, "split": args.split, "sentences": len(text), "beam": args.beam_size},
        layout=(args.threads, default),
        record=not args.compare,
    )
    if args.compare:
        return
    ours = {search: outputs["ours fp32", f"{default}, {search}"] for search in ("greedy", beam)}
    for (name, setting), translated in outputs.items():  # how many translations each shares with ours fp32
        search = beam if beam in setting else "greedy"
        results[f"{name}, {setting}"]["same_as_ours_fp32"] = sum(a == b for a, b in zip(ours[search], translated))
    speed = {  # each engine in its default layout
        name: results[f"{name}, {default}, {beam}"]["sentences_per_sec"]
        for name in ENGINES
        if f"{name}, {default}, {beam}" in results
    }
    ratio = round(speed["CTranslate2 int8"] / speed["ours fp32"], 2)
    print(f"{beam}: CTranslate2 int8 is {ratio}x ours fp32 (each engine as translate.py runs it)")
    write_result(
        args.out,
        {
            "threads": args.threads,
            "checkpoint_step": meta.get("step"),
            "split": args.split,
            "sentences": len(text),
            "ct2_int8_over_ours_fp32_beam": ratio,
            "ct2_fp32_over_ours_fp32_beam": compared,
            "default_layout": default,
            "settings": results,
        },
    )


def against_history(speeds: dict[str, float], setting: dict, layout: tuple[int, str], record: bool) -> float:
    """CTranslate2 float32's sentences/s over ours fp32's, printed beside the last ratio recorded
    on this CPU kind (the same model name and cores' features) for the same search and the same
    `layout` (--threads and the default layout's name); with `record`, this one is added to the
    history. The ratio."""
    threads, layout_name = layout
    ours, theirs = (speeds[name] for name in COMPARED)
    ratio = round(theirs / ours, 3)
    kind = {"machine": cpu_model(), "cpu_features": cpu_description(), "cores": usable_cores()}
    print(
        f"{setting['split']}, {setting['sentences']} sentences, beam {setting['beam']}, {layout_name}: "
        f"ours fp32 {ours:.1f}, CTranslate2 float32 {theirs:.1f} sentences/s: {ratio:.2f}x"
    )
    history = [json.loads(line) for line in HISTORY.read_text().splitlines()] if HISTORY.exists() else []
    same = [  # rows from before --threads was recorded ran with every usable core
        row
        for row in history
        if all(row.get(k) == v for k, v in kind.items())
        and row["beam"] == setting["beam"]
        and row.get("threads", row["cores"]) == threads
    ]
    if same:
        last = same[-1]
        verdict = (
            "slower"
            if ratio > last["ratio"] * 1.05
            else "faster"
            if ratio < last["ratio"] / 1.05
            else "the same, within 5%,"
        )
        print(
            f"last recorded on this CPU kind ({kind['machine']}, {kind['cpu_features']}, {kind['cores']} cores) "
            f"with --threads {threads}: "
            f"{last['ratio']:.2f}x at {last['commit']} ({last['date']}, {last['checkpoint']}); "
            f"ours is {verdict} against CTranslate2"
        )
    else:
        print(
            f"nothing recorded yet on this CPU kind ({kind['machine']}, {kind['cpu_features']}, {kind['cores']} cores) "
            f"with --threads {threads}"
        )
    if record:
        row = {
            "commit": measured_commit(),
            "date": time.strftime("%Y-%m-%d"),
            **kind,
            **setting,
            "threads": threads,
            "ours_fp32": ours,
            "ctranslate2_float32": theirs,
            "ratio": ratio,
        }
        with open(HISTORY, "a", encoding="utf-8") as file:
            file.write(json.dumps(row) + "\n")
        print(f"recorded in {HISTORY}")
    return ratio


if __name__ == "__main__":
    main()
