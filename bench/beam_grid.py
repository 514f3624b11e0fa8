"""Beam size and length penalty on the validation set, and how often beam search loses to greedy.

    python bench/beam_grid.py -c runs/RUN [--beams 1,3,5,8] [--penalties 0.6,1.0,1.5]

For every setting: validation BLEU (sacreBLEU, cased) and speed. For every beam size and
penalty it also counts "search errors against greedy": sentences whose best beam hypothesis
the model scores below the greedy translation, under the search's own objective
(log_prob / length ** alpha). Choose decoding settings here: the validation set decides, the
test set only reports. Writes bench/results/beam_grid.json with the commit measured.
"""

import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.common import RESULTS, checkpoint_and_split, write_result  # noqa: E402
from inference.scoring import score_translations  # noqa: E402
from inference.search_config import SearchConfig
from inference.translator import Translator  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-c", "--checkpoint", required=True)
    parser.add_argument("--split", default="val")
    parser.add_argument("--sentences", type=int, help="the split's first N sentences only (default: all)")
    parser.add_argument("--beams", default="1,3,5,8")
    parser.add_argument("--penalties", default="0.6,1.0,1.5")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=RESULTS / "beam_grid.json")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    model, tokenizer, meta, text = checkpoint_and_split(args.checkpoint, args.split, args.sentences)
    sources, references = list(text["src"]), list(text["tgt"])

    greedy = Translator(model, tokenizer, SearchConfig(beam_size=1))
    greedy_bleu = score_translations(greedy.translate(sources), references).bleu
    greedy_hyps = [hyps[0] if hyps else None for hyps in greedy.last_hypotheses]
    rows = {"greedy": {"bleu": round(greedy_bleu, 2)}}
    print(f"{'greedy':<22} BLEU {greedy_bleu:6.2f}", flush=True)
    for beam in (int(b) for b in args.beams.split(",") if int(b) > 1):
        for penalty in (float(p) for p in args.penalties.split(",")):
            translator = Translator(model, tokenizer, SearchConfig(beam_size=beam, length_penalty=penalty))
            start = time.perf_counter()
            outputs = translator.translate(sources)
            seconds = time.perf_counter() - start
            errors = sum(
                g is not None and hyps[0].score < g.log_prob / (len(g.tokens) + 1) ** penalty - 1e-6
                for hyps, g in zip(translator.last_hypotheses, greedy_hyps)
            )
            bleu = score_translations(outputs, references).bleu
            name = f"beam {beam}, alpha {penalty}"
            rows[name] = {
                "bleu": round(bleu, 2),
                "below_greedy": errors,
                "sentences_per_sec": round(len(sources) / seconds, 1),
            }
            print(
                f"{name:<22} BLEU {bleu:6.2f} | {errors} sentence(s) scored below greedy | "
                f"{len(sources) / seconds:.1f} sent/s",
                flush=True,
            )
    write_result(
        args.out,
        {
            "checkpoint_step": meta.get("step"),
            "split": args.split,
            "sentences": len(sources),
            "threads": args.threads,
            "settings": rows,
        },
    )


if __name__ == "__main__":
    main()
