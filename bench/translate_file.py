"""translate.py on a file, as a user runs it: each engine with its default threads (every core
the process may use) and with --threads 1, wall time, peak memory and whether the outputs agree.

    .venv/bin/python bench/translate_file.py -c runs/RUN [--lines 5000] [--engines minitrans ctranslate2]

The input is the checkpoint's source side of Multi30k's training split (from $MULTI30K_DIR),
repeated until it has --lines lines (a million for the docs' large-file figure). CTranslate2
translates an export of the checkpoint (float32, made in a temporary folder as export.py makes
it), ours the checkpoint; both beam 5, as translate.py's defaults are. Each command runs alone,
its memory sampled every 0.2 s: the proportional set size (PSS) of the command and every process
it started, so that our worker processes' shared pages count once, its peak given for each tenth
of the run (flat, if memory does not grow with the file); and the peak RSS of one worker process
(its shared pages counted whole: what each worker needs). Every repeat of a corpus line must be
translated as its first occurrence: lines written out of order would not be. Writes
bench/results/translate_file.json with the commit and CPU.
"""

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.common import RESULTS, ROOT, checkpoint_and_split, write_result  # noqa: E402
from utils.device import usable_cores  # noqa: E402


def tree_memory_mb(pid: int) -> tuple[float, float]:
    """(the PSS of process `pid` and its descendants, the largest peak RSS of one descendant,
    e.g. a decoding worker, with the pages it shares counted whole), in MB (Linux /proc); 0
    for what is gone."""
    pids, total, worker = [pid], 0, 0
    while pids:
        current = pids.pop()
        try:
            for line in Path(f"/proc/{current}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1])
            if current != pid:
                for line in Path(f"/proc/{current}/status").read_text().splitlines():
                    if line.startswith("VmHWM:"):  # the process's peak resident set
                        worker = max(worker, int(line.split()[1]))
            children = Path(f"/proc/{current}/task/{current}/children").read_text().split()
        except OSError:  # it ended while being read
            continue
        pids += [int(child) for child in children]
    return total / 1024, worker / 1024


def timed(command: list[str]) -> tuple[float, list[float], float]:
    """Run `command`; (seconds, its memory: the peak PSS in MB of it and its descendants in each
    tenth of its time, so that memory growing with the file shows; the peak RSS of its largest
    worker process in MB, 0 without workers)."""
    start = time.perf_counter()
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL)
    samples, worker_peak = [], 0.0
    while process.poll() is None:
        pss, worker = tree_memory_mb(process.pid)
        samples.append((time.perf_counter() - start, pss))
        worker_peak = max(worker_peak, worker)
        time.sleep(0.2)
    if process.returncode != 0:
        sys.exit(f"{' '.join(command)} failed with exit status {process.returncode}")
    seconds = time.perf_counter() - start
    tenths = [
        max((pss for t, pss in samples if i * seconds / 10 <= t < (i + 1) * seconds / 10), default=0) for i in range(10)
    ]
    return seconds, tenths, worker_peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-c", "--checkpoint", required=True)
    parser.add_argument("--lines", type=int, default=5000, help="lines to translate (default 5000)")
    parser.add_argument("--engines", nargs="+", default=["minitrans", "ctranslate2"])
    parser.add_argument("--default-only", action="store_true", help="skip the --threads 1 runs (a large file)")
    parser.add_argument("--out", type=Path, default=RESULTS / "translate_file.json")
    args = parser.parse_args()

    _, _, meta, text = checkpoint_and_split(args.checkpoint, "train")
    train = list(text["src"])
    results = {}
    with tempfile.TemporaryDirectory() as work:
        source = Path(work) / f"input.{meta['src_lang']}"
        with open(source, "w", encoding="utf-8") as file:
            for i in range(args.lines):
                file.write(train[i % len(train)] + "\n")
        export = Path(work) / "export"
        if "ctranslate2" in args.engines:
            subprocess.run(
                [sys.executable, str(ROOT / "export.py"), "-c", args.checkpoint, str(export)],
                check=True,
                stdout=subprocess.DEVNULL,
            )
        default = f"default ({usable_cores()} cores)"
        for engine in args.engines:
            model = str(export) if engine == "ctranslate2" else args.checkpoint
            outputs = {}
            for layout in [default] if args.default_only else [default, "--threads 1"]:
                output = Path(work) / f"{engine}.out"
                translate = [sys.executable, str(ROOT / "translate.py"), "-c", model, "-i", str(source)]
                threads = layout.split() if layout.startswith("--") else []
                seconds, memory, worker_rss = timed([*translate, "-o", str(output), *threads])
                outputs[layout] = output.read_text(encoding="utf-8").splitlines()
                # the input repeats the corpus: each repeat must be translated as its first
                # occurrence, which a line written out of order would not be
                repeats = range(len(train), args.lines)
                alike = sum(outputs[layout][i] == outputs[layout][i % len(train)] for i in repeats)
                rate, peak = args.lines / seconds, max(memory)
                results[f"{engine}, {layout}"] = {
                    "seconds": round(seconds, 1),
                    "lines_per_sec": round(rate, 1),
                    "lines_written": len(outputs[layout]),
                    "repeats_translated_alike": f"{alike} of {len(repeats)}",
                    "peak_pss_mb": round(peak),
                    "peak_pss_mb_by_tenth_of_the_time": [round(m) for m in memory],
                    "peak_rss_mb_of_a_worker": round(worker_rss),
                }
                print(
                    f"{engine + ', ' + layout:<36} {seconds:8.1f} s {rate:8.1f} lines/s  peak {peak:5.0f} MB"
                    + (f" (a worker's peak RSS {worker_rss:.0f} MB)" if worker_rss else "")
                )
            if len(outputs) == 2:
                speedup = results[f"{engine}, --threads 1"]["seconds"] / results[f"{engine}, {default}"]["seconds"]
                same = sum(a == b for a, b in zip(outputs[default], outputs["--threads 1"]))
                results[f"{engine}, default over --threads 1"] = {"speedup": round(speedup, 2), "identical_lines": same}
                print(f"{engine}: the default {speedup:.2f}x --threads 1's speed; {same} of {args.lines} identical")
    write_result(args.out, {"lines": args.lines, "beam_size": 5, "checkpoint_step": meta.get("step"), "runs": results})


if __name__ == "__main__":
    main()
