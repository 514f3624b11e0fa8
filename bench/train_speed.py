"""Training throughput: our Transformer against torch.nn.Transformer of the same shape.

    .venv/bin/python bench/train_speed.py             # after `make install`; about 8 minutes
    .venv/bin/python bench/train_speed.py --vocab-size 4000 --allocators mimalloc   # another vocabulary
    .venv/bin/python bench/train_speed.py --models minitrans --set "d_model=192 d_ff=384"  # a candidate shape

Both models get the same real Multi30k batches (from $MULTI30K_DIR, max_tokens per batch as
in training) in the same process, with the same loss (ours through model/output_loss.py,
theirs through F.cross_entropy), optimizer and clipping as train.py.
After a warm-up they alternate, `--steps` batches at a time, so that drift in the machine's
speed hits both alike. Reports target tokens/s for fp32 and bf16 autocast, the ratio, and
achieved GFLOP/s against matmul peaks measured in the same run, and the share of each model's
time spent in matrix products (torch.profiler, one more pass): at most the ratio nn.Transformer's
time over ours in matrix products, were everything else free.

The memory allocator changes the speed of both models by up to 2x and must be chosen before
Python starts, so each allocator found (glibc's malloc, the mimalloc wheel of
requirements.txt, a system tcmalloc) gets its own child process of this script. Writes
bench/results/train_speed.json with the commit it was measured on.
"""

import argparse
import dataclasses
import json
import math
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import Tensor, nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.common import RESULTS, allocators, cpu_model, training_allocator, write_result  # noqa: E402
from data import PAD_ID, DataConfig, TokenBucketSampler, TokenizerConfig, collate, prepare_data  # noqa: E402
from model import Transformer, TransformerConfig, TransformerOutput  # noqa: E402
from model.embedding import PositionalEncoding, TokenEmbedding  # noqa: E402
from model.masks import causal_mask  # noqa: E402
from training.config import TrainConfig, compose_config, to_run_config  # noqa: E402
from training.step import make_optimizer, train_step  # noqa: E402
from utils.device import cpu_description, native_bf16  # noqa: E402
from utils.errors import UserError


class TorchTransformer(nn.Module):
    """The same network built on torch.nn.Transformer: embeddings scaled by sqrt(d), sinusoids,
    pre-norm layers with final norms, dropout in the same places, tied output projection."""

    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        # our embedding and sinusoids (the same math either way); torch's own dropout
        self.embedding = TokenEmbedding(cfg.src_vocab_size, cfg.d_model, PAD_ID)
        nn.init.normal_(self.embedding.weight, std=cfg.d_model**-0.5)
        self.positional = PositionalEncoding(cfg.d_model, cfg.max_len)
        self.dropout = nn.Dropout(cfg.dropout)
        with warnings.catch_warnings():  # "enable_nested_tensor is True, but norm_first ..."
            warnings.simplefilter("ignore")
            self.transformer = nn.Transformer(
                cfg.d_model,
                cfg.n_heads,
                cfg.n_encoder_layers,
                cfg.n_decoder_layers,
                cfg.d_ff,
                cfg.dropout,
                batch_first=True,
                norm_first=True,
            )
        self.output_proj = nn.Linear(cfg.d_model, cfg.tgt_vocab_size, bias=False)
        self.output_proj.weight = self.embedding.weight

    def embed(self, ids: Tensor) -> Tensor:
        return self.dropout(self.positional(self.embedding(ids)))

    def forward(
        self, src: Tensor, tgt_in: Tensor, targets: Tensor, label_smoothing: float, consistency: float = 0.0
    ) -> TransformerOutput:
        """The summed training loss, as train_step asks of a model (in TransformerOutput's place, as
        ours): PyTorch's own cross-entropy. The benchmark times plain steps (no R-Drop)."""
        assert consistency == 0.0, "the reference model has no R-Drop (train.rdrop)"
        src_pad, tgt_pad = src == PAD_ID, tgt_in == PAD_ID  # True = ignore, torch's convention
        future = ~causal_mask(tgt_in.size(1), tgt_in.size(1), tgt_in.device).squeeze()  # (T, T), True = future
        h = self.transformer(
            self.embed(src),
            self.embed(tgt_in),
            tgt_mask=future,
            src_key_padding_mask=src_pad,
            tgt_key_padding_mask=tgt_pad,
            memory_key_padding_mask=src_pad,
        )
        logits = self.output_proj(h).float()  # (B, T, V)
        loss = F.cross_entropy(
            logits.flatten(0, 1),
            targets.flatten(),
            ignore_index=PAD_ID,
            label_smoothing=label_smoothing,
            reduction="sum",
        )
        return TransformerOutput(None, loss, None)


def step_flops(cfg: TransformerConfig, src: Tensor, tgt: Tensor) -> float:
    """Matmul FLOPs of one training step (forward + backward = 3 x forward) on padded shapes, as
    nn.Transformer runs them (ours leaves the padded target positions out of the output layer)."""
    b, s = src.shape
    t = tgt.size(1)
    d, f = cfg.d_model, cfg.d_ff
    encoder = cfg.n_encoder_layers * (2 * b * s * (4 * d * d + 2 * d * f) + 4 * b * s * s * d)
    decoder = cfg.n_decoder_layers * (
        2 * b * t * (4 * d * d + 2 * d * d + 2 * d * f)  # self q,k,v,o; cross q,o; ffn
        + 2 * b * s * 2 * d * d  # cross-attention keys and values of the memory
        + 4 * b * t * t * d
        + 4 * b * t * s * d
    )  # scores and mixing
    output = 2 * b * t * d * cfg.tgt_vocab_size
    return 3.0 * (encoder + decoder + output)


def matmul_peak(dtype: torch.dtype, m: int = 4096, k: int = 512, n: int = 2048, repeats: int = 10) -> float:
    """Best-of GFLOP/s of one (m x k) @ (k x n) matmul."""
    a, b = torch.randn(m, k, dtype=dtype), torch.randn(k, n, dtype=dtype)
    best = math.inf
    for _ in range(repeats + 2):
        start = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - start)
    return 2 * m * k * n / best / 1e9


# the ops that multiply matrices (ours and nn.Transformer's, both precisions; SDPA's fused
# attention kernel, which nn.Transformer uses, also does per-element work and is left out)
MATRIX_PRODUCTS = frozenset({"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm"})


def matrix_product_share(step, batches: list) -> float:
    """The share of one pass over `batches` that the calling thread spends in matrix products
    (self time by torch.profiler, which runs an op's worker threads inside its own time)."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as profile:
        for batch in batches:
            step(batch)
    events = profile.key_averages()
    return sum(e.self_cpu_time_total for e in events if e.key in MATRIX_PRODUCTS) / sum(
        e.self_cpu_time_total for e in events
    )


def make_step(model: nn.Module, bf16: bool, train: TrainConfig):
    """One optimizer step as training takes it (training/step.py), one batch a step."""
    # training's optimizer at a small constant learning rate: without warmup the recipe's peak
    # could make the loss non-finite, and a step that skips its update would time less work
    optimizer = make_optimizer(model, dataclasses.replace(train, lr=1e-4))

    def autocast():
        return torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16)

    def step(batch) -> None:
        train_step(model, optimizer, train.label_smoothing, [batch], batch.n_tgt_tokens, autocast, train.clip_grad_norm)

    return step


def load_batches(max_tokens: int, count: int, vocab_size: int) -> list:
    """The first `count` training batches, tokenized with a joint vocabulary of `vocab_size`."""
    data = prepare_data(DataConfig(tokenizer=TokenizerConfig(vocab_size=vocab_size)))
    train = data.tokens["train"]
    sampler = TokenBucketSampler(
        [len(x) for x in train["src_ids"]], [len(x) for x in train["tgt_ids"]], max_tokens, shuffle=True, seed=0
    )
    return [collate([train[i] for i in indices]) for indices, _ in zip(sampler, range(count))]


def measure(args: argparse.Namespace) -> dict:
    """Both models, each precision, under the allocator this process was started with."""
    torch.set_num_threads(args.threads)
    recipe = to_run_config(compose_config(f"model={args.model}", *(f"model.{kv}" for kv in args.set.split())))
    vocab_size = args.vocab_size or recipe.data.tokenizer.vocab_size
    cfg = dataclasses.replace(recipe.model, src_vocab_size=vocab_size, tgt_vocab_size=vocab_size)
    batches = load_batches(args.max_tokens, args.steps, cfg.src_vocab_size)
    flops = sum(step_flops(cfg, b.src, b.tgt_in) for b in batches)
    tokens = sum(b.n_tgt_tokens for b in batches)
    dtypes = {"fp32": torch.float32, "bf16": torch.bfloat16}
    peaks = {precision: matmul_peak(dtypes[precision]) for precision in args.precisions.split(",")}
    print(
        f"[{args.allocator}] {args.model} {args.set}, {cfg.d_model}/{cfg.d_ff}, "
        f"{cfg.n_encoder_layers}+{cfg.n_decoder_layers} layers, {cfg.n_heads} heads, vocabulary {vocab_size}: "
        f"{len(batches)} batches, {tokens} target tokens, "
        f"{flops / len(batches) / 1e9:.1f} GFLOP a step | matmul peak "
        + ", ".join(f"{precision} {peak:.0f}" for precision, peak in peaks.items())
        + " GFLOP/s",
        flush=True,
    )
    rows = {}
    for precision in args.precisions.split(","):
        torch.manual_seed(0)
        builders = {"minitrans": Transformer, "nn.Transformer": TorchTransformer}
        models = {name: builders[name](cfg) for name in args.models.split(",")}
        steps = {name: make_step(model.train(), precision == "bf16", recipe.train) for name, model in models.items()}
        seconds = dict.fromkeys(models, 0.0)
        for name in models:
            for batch in batches[: args.warmup]:
                steps[name](batch)
        for _ in range(args.rounds):
            for name in models:
                start = time.perf_counter()
                for batch in batches:
                    steps[name](batch)
                seconds[name] += time.perf_counter() - start
        shares = {name: matrix_product_share(steps[name], batches) for name in models}
        for name in models:
            gflop_s = args.rounds * flops / seconds[name] / 1e9
            rows[f"{name} {precision}"] = row = {
                "tokens_per_sec": round(args.rounds * tokens / seconds[name]),
                "gflop_per_sec": round(gflop_s, 1),
                "of_matmul_peak": round(gflop_s / peaks[precision], 3),
                "seconds": round(seconds[name], 2),
                "matrix_product_share": round(shares[name], 3),
            }
            print(
                f"[{args.allocator}] {name + ' ' + precision:<20} {row['tokens_per_sec']:>6} tok/s "
                f"{gflop_s:>6.1f} GFLOP/s ({100 * row['of_matmul_peak']:.0f}% of peak), "
                f"matrix products {100 * shares[name]:.0f}% of its time",
                flush=True,
            )
        if len(models) == 2:
            rows[f"ratio {precision}"] = round(seconds["nn.Transformer"] / seconds["minitrans"], 2)
            # what the ratio would be if ours spent no time outside its matrix products
            rows[f"ceiling {precision}"] = round(rows[f"ratio {precision}"] / shares["minitrans"], 2)
            print(
                f"[{args.allocator}] ratio {precision:<14} {rows[f'ratio {precision}']:>6.2f}x "
                f"(at most {rows[f'ceiling {precision}']:.2f}x with nothing but our matrix products)",
                flush=True,
            )
    return {
        "vocab_size": vocab_size,
        "gflop_per_step": round(flops / len(batches) / 1e9, 1),
        "batches": len(batches),
        "target_tokens_per_round": tokens,
        "matmul_peak_gflop_per_sec": {k: round(v, 1) for k, v in peaks.items()},
        "results": rows,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="compact", help="a conf/model/*.yaml shape (default: the recipe's)")
    parser.add_argument(
        "--set", default="", help="model settings over --model's, space-separated: 'd_model=192 d_ff=384'"
    )
    parser.add_argument("--models", default="minitrans,nn.Transformer", help="which to time (both: their ratio)")
    parser.add_argument("--vocab-size", type=int, help="joint vocabulary (default: the recipe's, conf/data)")
    parser.add_argument("--max-tokens", type=int, default=4096)
    parser.add_argument("--steps", type=int, default=8, help="batches per model per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=4, help="batches per model before timing")
    parser.add_argument(
        "--precisions",
        default="fp32,bf16",
        help="bf16 is skipped on a CPU without native bf16, where it would run for hours",
    )
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--allocators", default="glibc,mimalloc,tcmalloc", help="those not installed are skipped")
    parser.add_argument("--allocator", help=argparse.SUPPRESS)  # set in the child processes
    parser.add_argument("--out", type=Path, default=RESULTS / "train_speed.json")
    args = parser.parse_args()
    precisions = args.precisions.split(",")
    if "bf16" in precisions and not native_bf16(torch.device("cpu")):
        precisions.remove("bf16")
        print("bf16 skipped: not native on this CPU (emulated, it would take hours)", flush=True)
    args.precisions = ",".join(precisions)
    if not precisions:
        sys.exit("error: no precision left to measure")
    if args.allocator:  # child: measure and hand the numbers back as JSON
        try:
            args.out.write_text(json.dumps(measure(args)))
        except UserError as e:
            sys.exit(f"error: {e}")
        return

    print(f"CPU: {cpu_model()} ({cpu_description()}), {args.threads} threads, torch {torch.__version__}", flush=True)
    available = allocators()
    by_allocator = {}
    for name in args.allocators.split(","):
        if name not in available:
            print(f"[{name}] not installed, skipped", flush=True)
            continue
        with tempfile.NamedTemporaryFile(suffix=".json") as out:
            child = [
                sys.executable,
                __file__,
                "--allocator",
                name,
                "--out",
                out.name,
                *(
                    f"--{key.replace('_', '-')}={value}"
                    for key, value in vars(args).items()
                    if key not in ("allocators", "allocator", "out") and value is not None
                ),
            ]
            env = {**os.environ, "LD_PRELOAD": available[name]}
            if subprocess.run(child, env=env).returncode != 0:
                sys.exit(1)
            by_allocator[name] = json.loads(Path(out.name).read_text())

    # What a user gets: our model with the allocator `make train` preloads, against
    # nn.Transformer as it runs out of the box (glibc's malloc).
    ours_setup = training_allocator()
    summary = {}
    if ours_setup in by_allocator and "glibc" in by_allocator and args.models == "minitrans,nn.Transformer":
        for precision in args.precisions.split(","):
            ours = by_allocator[ours_setup]["results"][f"minitrans {precision}"]["tokens_per_sec"]
            torch_default = by_allocator["glibc"]["results"][f"nn.Transformer {precision}"]["tokens_per_sec"]
            summary[f"minitrans {ours_setup} / nn.Transformer glibc, {precision}"] = round(ours / torch_default, 2)
    for key, value in summary.items():
        print(f"{key}: {value:.2f}x")

    write_result(
        args.out,
        {
            "threads": args.threads,
            "model": args.model,
            "set": args.set,
            "max_tokens": args.max_tokens,
            "rounds": args.rounds,
            "steps_per_round": args.steps,
            "setup_vs_default": summary,
            "allocators": by_allocator,
        },
    )


if __name__ == "__main__":
    main()
