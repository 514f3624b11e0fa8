"""What the fast computations gain over the plain ones they stand in for (TransformerConfig.plain;
tests/test_plain_and_fast.py proves each pair gives the same numbers).

    .venv/bin/python bench/plain_and_fast.py -c runs/RUN        # about 3 minutes on 2 cores

Three measurements, each fast against plain in the same process, alternating rounds so that a
drift of the machine's speed hits both alike:
- the output loss alone (model/output_loss.py's fused function against F.cross_entropy), forward
  and backward, at a training batch's size: the recipe's positions, width and vocabulary;
- dropout alone (model/dropout.py's bit masks against F.dropout), forward and backward, on the
  feed-forward's hidden activations of such a batch;
- a whole training step of the recipe's model (all of the plain switches at once) on real
  Multi30k batches (from $MULTI30K_DIR), fp32, and bf16 where this CPU has it natively;
- beam search (beam 5) over the first validation sentences with RUN's best weights: a sentence's
  hypotheses sharing its encoder output in cross-attention, against each with its own copy.
Writes bench/results/plain_and_fast.json with the commit and CPU.
"""

import argparse
import dataclasses
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.common import RESULTS, checkpoint_and_split, write_result  # noqa: E402
from bench.train_speed import load_batches, make_step  # noqa: E402
from model import Transformer  # noqa: E402
from model.dropout import Dropout  # noqa: E402
from model.output_loss import output_cross_entropy, plain_output_cross_entropy  # noqa: E402
from model.search import beam_search, output_limits  # noqa: E402
from training.config import compose_config, to_run_config  # noqa: E402
from utils.device import native_bf16  # noqa: E402


def alternating(runs: dict[str, Callable[[], None]], rounds: int) -> dict[str, float]:
    """Seconds each callable took over `rounds` rounds, one warm-up call each first."""
    for run in runs.values():
        run()
    seconds = dict.fromkeys(runs, 0.0)
    for _ in range(rounds):
        for name, run in runs.items():
            start = time.perf_counter()
            run()
            seconds[name] += time.perf_counter() - start
    return seconds


def report(what: str, seconds: dict[str, float], unit: float, unit_name: str) -> dict:
    row = {
        **{f"{name}_{unit_name}_per_sec": round(unit / s, 1) for name, s in seconds.items()},
        "fast_over_plain": round(seconds["plain"] / seconds["fast"], 2),
    }
    print(
        f"{what:<28} fast {unit / seconds['fast']:>9.1f}  plain {unit / seconds['plain']:>9.1f} {unit_name}/s  "
        f"({row['fast_over_plain']:.2f}x)",
        flush=True,
    )
    return row


def loss_and_dropout(positions: int, d_model: int, d_ff: int, vocab: int, rounds: int) -> dict:
    g = torch.Generator().manual_seed(0)
    states = torch.randn(positions, d_model, generator=g).requires_grad_()
    weight = (torch.randn(vocab, d_model, generator=g) * d_model**-0.5).requires_grad_()
    targets = torch.randint(4, vocab, (positions,), generator=g)

    def loss_with(loss_of) -> Callable[[], None]:
        return lambda: loss_of(states, weight, targets, 0.1).backward()

    rows = {
        "output loss": report(
            "output loss (fwd+bwd)",
            alternating(
                {"fast": loss_with(output_cross_entropy), "plain": loss_with(plain_output_cross_entropy)}, rounds
            ),
            rounds * positions,
            "positions",
        )
    }
    hidden = torch.randn(positions, d_ff, generator=g).requires_grad_()

    def dropout_with(plain: bool) -> Callable[[], None]:
        dropout = Dropout(0.2, plain).train()
        return lambda: dropout(hidden).sum().backward()

    rows["dropout"] = report(
        "dropout (fwd+bwd)",
        alternating({"fast": dropout_with(False), "plain": dropout_with(True)}, rounds),
        rounds * positions * d_ff / 1e6,
        "M elements",
    )
    return rows


def training_steps(steps: int, rounds: int, vocab_size: int | None) -> dict:
    recipe = to_run_config(compose_config("model=compact"))
    vocab_size = vocab_size or recipe.data.tokenizer.vocab_size
    cfg = dataclasses.replace(recipe.model, src_vocab_size=vocab_size, tgt_vocab_size=vocab_size)
    batches = load_batches(recipe.train.max_tokens, steps, vocab_size)
    tokens = sum(batch.n_tgt_tokens for batch in batches)
    rows = {}
    for precision in ["fp32"] + (["bf16"] if native_bf16(torch.device("cpu")) else []):
        runs = {}
        for name, plain in (("fast", False), ("plain", True)):
            torch.manual_seed(0)
            step = make_step(
                Transformer(dataclasses.replace(cfg, plain=plain)).train(), precision == "bf16", recipe.train
            )
            runs[name] = lambda step=step: [step(batch) for batch in batches]
        rows[precision] = report(f"training step, {precision}", alternating(runs, rounds), rounds * tokens, "tokens")
    return rows


def decoding(checkpoint: str, sentences: int, rounds: int) -> dict:
    model, tokenizer, _, text = checkpoint_and_split(checkpoint, "val", sentences)
    plain = Transformer(dataclasses.replace(model.cfg, plain=True)).eval()
    plain.load_state_dict(model.state_dict())
    ids = tokenizer.encode_src(list(text["src"]))
    batches = [ids[i : i + 32] for i in range(0, len(ids), 32)]
    padded = [
        torch.tensor([x + [model.cfg.pad_id] * (max(map(len, batch)) - len(x)) for x in batch]) for batch in batches
    ]
    found: dict[str, list] = {}

    def decode_with(name: str, which: Transformer) -> Callable[[], None]:
        def run() -> None:
            found[name] = [
                h[0].tokens for src in padded for h in beam_search(which, src, 5, output_limits(which, src, 1.5, 10))
            ]

        return run

    seconds = alternating({"fast": decode_with("fast", model), "plain": decode_with("plain", plain)}, rounds)
    assert found["fast"] == found["plain"], "the two searches found different translations"
    return report("beam search (beam 5)", seconds, rounds * len(ids), "sentences")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-c", "--checkpoint", required=True, help="a run or checkpoint: its weights decode")
    parser.add_argument("--sentences", type=int, default=300, help="validation sentences decoded")
    parser.add_argument("--steps", type=int, default=20, help="training batches a round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--vocab-size", type=int, help="the training batches' vocabulary (default: the recipe's)")
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--out", type=Path, default=RESULTS / "plain_and_fast.json")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    recipe = to_run_config(compose_config("model=compact")).model
    positions = 4096  # about a training batch's target positions (train.max_tokens)
    rows = loss_and_dropout(positions, recipe.d_model, recipe.d_ff, 8000, 10 * args.rounds)
    rows["training step"] = training_steps(args.steps, args.rounds, args.vocab_size)
    rows["beam search"] = decoding(args.checkpoint, args.sentences, args.rounds)
    write_result(args.out, {"checkpoint": args.checkpoint, "threads": args.threads, "results": rows})


if __name__ == "__main__":
    main()
