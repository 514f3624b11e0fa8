"""Peak memory (RSS) of the default training run.

    .venv/bin/python bench/memory.py       # after `make install`; about 5 minutes

Runs `train.py` with the default configuration (small model, fp32, 4096-token batches) under
the allocator `make train` preloads, for `--steps` steps with a validation and its attention
maps on the way and the final test decoding (beam 5) at the end, and reads the peak resident
memory that train.py records in results.json. Writes bench/results/memory.json.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.common import RESULTS, ROOT, allocators, training_allocator, write_result  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--allocator", choices=["glibc", "mimalloc", "tcmalloc"], default=training_allocator())
    parser.add_argument("overrides", nargs="*", help="extra Hydra overrides, e.g. train.precision=bf16")
    parser.add_argument("--out", type=Path, default=RESULTS / "memory.json")
    args = parser.parse_args()
    library = allocators().get(args.allocator)
    if library is None:
        sys.exit(f"error: allocator {args.allocator} is not installed")

    with tempfile.TemporaryDirectory() as run_dir:
        overrides = [
            f"hydra.run.dir={run_dir}",
            f"train.max_steps={args.steps}",
            "train.eval_every=100",
            *args.overrides,
        ]
        print(f"[{args.allocator}] python train.py {' '.join(overrides)}", flush=True)
        done = subprocess.run(
            [sys.executable, str(ROOT / "train.py"), *overrides], cwd=ROOT, env={**os.environ, "LD_PRELOAD": library}
        )
        if done.returncode != 0:
            sys.exit(done.returncode)
        results = json.loads((Path(run_dir) / "results.json").read_text())
    print(
        f"peak RSS {results['peak_rss_mb']} MB ({results['steps']} steps, {results['parameters'] / 1e6:.2f}M "
        f"parameters)"
    )
    write_result(
        args.out,
        {
            "allocator": args.allocator,
            "overrides": overrides[1:],
            "steps": results["steps"],
            "parameters": results["parameters"],
            "peak_rss_mb": results["peak_rss_mb"],
        },
    )


if __name__ == "__main__":
    main()
