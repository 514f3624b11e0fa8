"""Every command README.md and docs/ show a user runs here, as written (tests/helpers/documented.py
finds them: each line of a shell block, each inline command), and a command shown without an entry
in COMMANDS fails the first test.

A command runs in a user's checkout: a folder holding links to this checkout's files (its own copy
of bench/ and docs/, which commands write into) where `runs/`, `exports/` and the cache are its own,
with the virtual environment on PATH as if activated. What a command writes stays there. A line
that runs one script with the project's Python (a `make train` as make would run it) forks from a
warm Python started in the checkout's environment (tests/helpers/warm.py); any other runs in bash.

As written, except:
- what stands for the user's own things is made real: `$MULTI30K_DIR` and `/path/to/multi30k` are
  the committed toy corpus, laid out as Multi30k is (the commands that need Multi30k itself, the
  French-Czech pair and a sweep of vocabularies larger than the toy corpus supports, use the real
  one and are skipped without it); `runs/RUN` is a run that the documented `make train` trained
  once a session and copied into each checkout (`runs/en-de` and `runs/recipe_1h`, the docs' names
  for other runs of the recipe, are trained in the checkout by their own commands); `sentences.de`
  a file of the corpus's test sentences; `/corpus/...` and `/data/wmt16_de_en` the toy corpus as
  parallel files, TSV, JSONL and a saved Hugging Face dataset under the checkout;
- LibreTranslate's commands run with HOME a folder of the checkout's, where `~/libretranslate`
  is the environment tests/helpers/argos.py made once by the README's command, and with the
  network closed;
- what takes an hour or minutes gets its short form: Hydra overrides (or a benchmark's own
  options) appended that shrink steps and data (SHORT), a benchmark at its smallest size (a few
  sentences or lines), and the test says so. The vocabulary
  shrinks with the data: SentencePiece cannot learn 8,000 pieces from a few hundred sentences.
  Two parts are left out where other tests run them: a short run's robustness report after the
  test set (SHORT; test_final_evaluation.py runs it, REPORTING_SHORT keeps it where a command's
  output shows it), and the layouts of the cores of a benchmark run again (DECODE_AGAIN: the
  first bench/decode.py command runs every layout).
"""

import json
import os
import select
import shutil
import signal
import subprocess
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

from helpers import ROOT, TOY_CORPUS, toy_sentences
from helpers.argos import ENV as ARGOS_ENV
from helpers.argos import INSTALL as ARGOS_INSTALL
from helpers.argos import argos_python, started_libretranslate
from helpers.browser import browser_missing
from helpers.commands import python_run
from helpers.documented import documented_commands
from helpers.servers import free_port
from helpers.shared import shared_folder
from helpers.terminal import open_terminal
from helpers.warm import ServerClosed, warm_python
from inference.argos_package import offline_environ

# Steps and data of a training run on the toy corpus: 2 steps, 5 sentences to validate and test on.
# SHORT leaves out the attention evaluations (an untrained model's probes take seconds to draw: its
# translations run to the limit) and the robustness report after the test set (5 s of a 13-second
# run: the variants loop to the limit and are searched again); the report is tested in
# test_final_evaluation.py, and REPORTING_SHORT keeps it for a command whose output shows it.
TOY_EVAL = "data.max_eval_examples=5 data.tokenizer.vocab_size=340"
STEPS = "train.max_steps=2 train.eval_every=2 " + TOY_EVAL
REPORTING_SHORT = STEPS + " train.attention_every=0"
SHORT = REPORTING_SHORT + " train.robustness=false"
# A command of a run from before the folded source was the recipe that sets case shares, which the
# folding refuses (docs/recipe_search.md's first paragraph): run with the source read as it was
BEFORE_FOLDING = SHORT + " data.tokenizer.fold_source_case=false data.tokenizer.spell_source_umlauts=false"
# The run that the benchmarks, translate.py and the tab read (runs/RUN, runs/en-de) is the run a user
# gets, its attention evaluations (of one probe sentence) and robustness report kept, in 60 steps
# (~15 s more each time it is made: in each group that needs it, and runs/en-de): by then its
# translations end, where 2 steps' run to their limit and are searched again, and each benchmark of
# it takes about a third less (bench/decode.py --sentences 5 --threads 1 on the 2-step run: 30 s,
# on the 60-step run: 19 s; measured when the benchmarks ran 5 sentences).
RUN_SHORT = "train.max_steps=60 train.eval_every=60 " + TOY_EVAL + " train.attention_probes=1"
# the same on Multi30k itself: 1,000 of its pairs
MULTI30K_SHORT = SHORT.replace("vocab_size=340", "vocab_size=1000") + " data.max_train_examples=1000"
# the speed benchmark shortened; in fp32 unless the command names what it measures (`machine`)
SHORT_SPEED_AS_GIVEN = "--steps 1 --rounds 1 --warmup 0 --vocab-size 340 --max-tokens 512"
SHORT_SPEED = SHORT_SPEED_AS_GIVEN + " --precisions fp32"
# bench/decode.py again, after `bench/decode.py -c runs/RUN` ran every layout of the cores: one
# layout, one core (each layout is 5 engines' greedy and beam rows and their latencies). Decoding
# benchmarks translate 2 sentences (FEW_SENTENCES), the fewest that still make a batch of more than
# one: each sentence is decoded by every engine, setting and layout, and costs seconds on a short
# run's model.
FEW_SENTENCES = "--sentences 2"
DECODE_AGAIN = FEW_SENTENCES + " --threads 1"


@dataclass
class Command:
    """How a documented command is run: `short`, appended to shorten it (inside make's ARGS, or
    after the command); `needs`, what the user would already have; `kind`: "run" (in a shell, to
    exit 0), "terminal" (in a pty, a sentence typed), "server" (started, asked, stopped),
    "interrupt" (stopped by Ctrl-C, then the same command again), "ci" (a line of .ci/run), "gpu",
    "libretranslate" (started, asked for its languages and a translation, stopped), "install" (the
    command tests/helpers/argos.py runs to make LibreTranslate's environment);
    `multi30k`: run on Multi30k itself, not the toy corpus."""

    short: str = ""
    needs: tuple[str, ...] = ()
    kind: str = "run"
    check: str = ""  # text the output must hold
    timeout: float = 300
    multi30k: bool = False
    argos: bool = False  # run where LibreTranslate's argostranslate keeps its packages in the checkout, offline
    machine: tuple[str, ...] = ()  # what it measures that a machine may lack ("bf16", "tcmalloc"): skipped there


RUN_NEEDS = ("run",)
EN_DE = (
    'make train ARGS="data=files data.train=$MULTI30K_DIR/train data.val=$MULTI30K_DIR/val '
    'data.test=[$MULTI30K_DIR/test_2016_flickr] data.src_lang=en data.tgt_lang=de hydra.run.dir=runs/en-de"'
)
COMMANDS: dict[str, Command] = {
    # README, quick start
    "export MULTI30K_DIR=/path/to/multi30k": Command(),
    "make test": Command(kind="ci"),
    "make lint": Command(kind="ci"),
    "make train": Command(short=SHORT, check="test_2016_flickr: BLEU"),
    'make train ARGS="experiment=ci"': Command(short=SHORT, check="test_2016_flickr: BLEU"),
    'make train ARGS="experiment=proxy"': Command(short=SHORT, check="test_2016_flickr: BLEU"),
    '.venv/bin/python translate.py -c runs/latest "Ein Mann fährt Fahrrad."': Command(needs=("latest",)),
    ".venv/bin/tensorboard --logdir runs": Command(needs=RUN_NEEDS, kind="server"),
    "make install": Command(),
    "python train.py": Command(short=SHORT, check="test_2016_flickr: BLEU"),
    # README, data
    'make train ARGS="experiment=ci data=files data.train=tests/data/toy/train data.val_size=100 '
    "data.test=[tests/data/toy/test_2016_flickr] data.src_lang=en data.tgt_lang=de data.tokenizer.vocab_size=340 "
    'data.max_train_examples=null"': Command(short=SHORT, check="test_2016_flickr: BLEU"),
    'make train ARGS="data=files data.train=/corpus/train data.val=/corpus/dev data.test=[/corpus/test] '
    'data.src_lang=en data.tgt_lang=de"': Command(short=SHORT, needs=("corpus",), check="test: BLEU"),
    'make train ARGS="data=tsv data.train=/corpus/train.tsv data.header=true data.src_field=de '
    'data.tgt_field=en"': Command(short=SHORT + " data.val_size=100", needs=("corpus",)),
    'make train ARGS="data=jsonl data.train=/corpus/train.jsonl"': Command(
        short=SHORT + " data.val_size=100", needs=("corpus",)
    ),
    'make train ARGS="data=hf data.name=/data/wmt16_de_en"': Command(
        short=SHORT, needs=("corpus",), check="test: BLEU"
    ),
    # README and docs/training.md, training
    ".venv/bin/python train.py": Command(short=SHORT),
    ".venv/bin/python train.py model=small train.max_minutes=120": Command(short=SHORT),
    # bf16 is emulated on an AVX2 CPU, ~40x slower than fp32: one sentence to validate and test on
    ".venv/bin/python train.py model=base train.precision=bf16": Command(
        short=SHORT + " train.max_tokens=256 data.max_eval_examples=1"
    ),
    ".venv/bin/python train.py data.src_lang=fr data.tgt_lang=cs train.max_minutes=10": Command(
        short=MULTI30K_SHORT, multi30k=True
    ),
    ".venv/bin/python train.py experiment=ci hydra.run.dir=runs/my_run": Command(
        short="train.max_steps=40 train.eval_every=20 " + TOY_EVAL,
        kind="interrupt",
    ),
    ".venv/bin/torchrun --standalone --nproc_per_node=2 train.py experiment=ci train.threads=1 "
    "hydra.run.dir=runs/ddp": Command(short="train.max_steps=4 train.eval_every=2 " + TOY_EVAL),
    'make train ARGS="train.max_minutes=10"': Command(short=SHORT),
    'make train ARGS="train.max_minutes=12"': Command(short=SHORT),
    'make train ARGS="hydra.run.dir=runs/tab_demo train.max_minutes=10 train.eval_every=250 '
    'train.attention_every=100"': Command(short=SHORT),
    # README and docs/translating.md
    '.venv/bin/python translate.py -c runs/RUN "Ein Mann fährt Fahrrad." "Zwei Hunde spielen."': Command(
        needs=RUN_NEEDS
    ),
    ".venv/bin/python translate.py -c runs/RUN": Command(needs=RUN_NEEDS, kind="terminal"),
    "cat sentences.de | .venv/bin/python translate.py -c runs/RUN > sentences.en": Command(
        needs=("run", "sentences.de")
    ),
    ".venv/bin/python translate.py -c runs/RUN/checkpoints/best.pt -i sentences.de -o sentences.en": Command(
        needs=("run", "sentences.de")
    ),
    ".venv/bin/python translate.py -c runs/RUN -i sentences.de -o sentences.en": Command(needs=("run", "sentences.de")),
    '.venv/bin/python translate.py -c runs/RUN --show-attention "Ein Hund rennt."': Command(needs=RUN_NEEDS),
    ".venv/bin/python translate.py -c runs/RUN --greedy -n 1 --batch-size 128 -i sentences.de": Command(
        needs=("run", "sentences.de")
    ),
    '.venv/bin/python translate.py -c runs/RUN -b 5 -n 3 "Ein Hund rennt."': Command(needs=RUN_NEEDS),
    '.venv/bin/python translate.py -c runs/RUN --show-attention --attention figures/ "Ein Hund rennt."': Command(
        needs=RUN_NEEDS
    ),
    '.venv/bin/python translate.py -c runs/RUN --mask-heads cross:4:1,cross:4:2 "Ein Hund rennt."': Command(
        needs=RUN_NEEDS
    ),
    ".venv/bin/python export.py -c runs/RUN exports/de-en": Command(needs=RUN_NEEDS, check="wrote exports/de-en"),
    ".venv/bin/python export.py -c runs/RUN exports/de-en-int8 --quantize int8": Command(needs=RUN_NEEDS),
    '.venv/bin/python translate.py -c exports/de-en "Ein Hund rennt."': Command(needs=("export",)),
    # README, LibreTranslate: its environment is made once per machine (tests/helpers/argos.py)
    ARGOS_INSTALL: Command(kind="install"),
    ".venv/bin/python export.py -c runs/RUN exports/ --to argos": Command(
        needs=RUN_NEEDS, check="wrote exports/minitrans-de_en-1_0.argosmodel"
    ),
    '~/libretranslate/bin/python -c "import argostranslate.package as p; '
    "p.install_from_path('exports/minitrans-de_en-1_0.argosmodel')\"": Command(
        needs=("libretranslate", "argos package"), argos=True
    ),
    "ARGOS_PACKAGE_INDEX=file://$PWD/exports/ ~/libretranslate/bin/libretranslate --load-only de,en": Command(
        needs=("libretranslate", "argos installed"), kind="libretranslate", argos=True
    ),
    ".venv/bin/python bench/argos.py -c runs/RUN": Command(
        short="--sentences 5", needs=("run", "libretranslate"), argos=True, check="8 clients at once"
    ),
    ".venv/bin/python translate.py -c runs/RUN --compute-type int8 -i sentences.de": Command(
        needs=("run", "sentences.de")
    ),
    ".venv/bin/python translate.py -c exports/de-en --compute-type int8 -i sentences.de -o sentences.en": Command(
        needs=("export", "sentences.de")
    ),
    '.venv/bin/python -c \'from inference import load_translator; print(load_translator("runs/RUN")'
    '.translate(["Ein Hund rennt."]))\'': Command(needs=RUN_NEEDS),
    ".venv/bin/python heads.py -c runs/RUN": Command(short="--sentences 1", needs=RUN_NEEDS),
    ".venv/bin/python heads.py -c runs/RUN --figure heads.png": Command(short="--sentences 1", needs=RUN_NEEDS),
    ".venv/bin/python heads.py -c runs/recipe_1h --sentences 500 --figure docs/head_importance.png": Command(
        short="--sentences 1", needs=("recipe_1h",)
    ),
    # results, as they were made
    'make train ARGS="hydra.run.dir=runs/fused_1h"': Command(short=SHORT),
    'make train ARGS="hydra.run.dir=runs/final_1h"': Command(short=SHORT),
    'make -o .venv/.installed train ARGS="hydra.run.dir=runs/final_1h"': Command(short=SHORT),
    'make train ARGS="hydra.run.dir=runs/recipe_1h"': Command(short=SHORT),
    'make train ARGS="hydra.run.dir=runs/hour_amx_550bc90"': Command(short=SHORT),
    'make train ARGS="model=small model.dropout=0.3 hydra.run.dir=runs/hour_amx_small_d03_d213a7d"': Command(
        short=SHORT
    ),
    ".venv/bin/python bench/decode.py -c runs/hour_amx_small_d03_d213a7d --out bench/results/decode_small_amx.json": (
        Command(short=DECODE_AGAIN, needs=("hour_amx_small_d03_d213a7d",), check="CTranslate2 int8")
    ),
    ".venv/bin/python bench/beam_grid.py -c runs/RUN --beams 5 --penalties 1.0": Command(
        short=FEW_SENTENCES, needs=RUN_NEEDS
    ),
    ".venv/bin/python bench/beam_grid.py -c runs/RUN --beams 3,5,8 --penalties 0.6,1.0,1.5": Command(
        short=FEW_SENTENCES, needs=RUN_NEEDS
    ),
    'make train ARGS="model=small train.label_smoothing=0.2 hydra.run.dir=runs/hour_amx_small_ls02_817078c"': Command(
        short=SHORT
    ),
    'make train ARGS="hydra.run.dir=runs/hour_amx_fresh_444480e"': Command(short=SHORT),
    'make train ARGS="train.bidirectional=0.33 hydra.run.dir=runs/hour_amx_bit033_a1c03b9"': Command(short=SHORT),
    'make train ARGS="model=small train.rdrop=5 hydra.run.dir=runs/hour_amx_small_rdrop5_58c1c10"': Command(
        short=SHORT
    ),
    'make train ARGS="train.max_tokens=2048 train.lr=2.1e-3 train.warmup_steps=1000 '
    'hydra.run.dir=runs/hour_amx_tok2048_lr21_8f01870"': Command(short=SHORT),
    ".venv/bin/python bench/train_speed.py --models minitrans --precisions bf16 --allocators tcmalloc "
    "--model small --max-tokens 2048": Command(
        short=SHORT_SPEED_AS_GIVEN, check="[tcmalloc] minitrans bf16", machine=("bf16", "tcmalloc")
    ),
    'make train ARGS="model=small train.label_smoothing=0.2 train.ema_decay=0.999 seed=2 '
    'hydra.run.dir=runs/hour_amx_small_ls02_ema_seed2_be0f0b3"': Command(short=SHORT),
    ".venv/bin/python bench/train_speed.py --models minitrans --precisions bf16 --allocators tcmalloc "
    '--set "d_model=192 d_ff=384"': Command(
        short=SHORT_SPEED_AS_GIVEN, check="[tcmalloc] minitrans bf16", machine=("bf16", "tcmalloc")
    ),
    # the English-German run the decoding benchmark and the typed-sentence timing read: with attention
    EN_DE: Command(short=RUN_SHORT),
    # the recipe search
    'make train ARGS="-m experiment=proxy train.lr=3e-3,5e-3 model.dropout=0.3,0.2 '
    'hydra.sweep.dir=runs/multirun/proxy_lr_dropout"': Command(short=SHORT),
    ".venv/bin/python bench/sweep_table.py runs/multirun/proxy_lr_dropout": Command(needs=("proxy_lr_dropout",)),
    'make train ARGS="-m experiment=proxy data.tokenizer.vocab_size=2000,4000,8000 '
    'hydra.sweep.dir=runs/multirun/proxy_vocab"': Command(
        short="train.max_steps=2 train.eval_every=2 data.max_train_examples=8000 data.max_eval_examples=5 "
        "train.attention_every=0 train.robustness=false",
        multi30k=True,
    ),
    ".venv/bin/python bench/sweep_table.py runs/multirun/proxy_vocab": Command(needs=("proxy_vocab",), multi30k=True),
    'make train ARGS="-m experiment=proxy train.label_smoothing=0.2 hydra.sweep.dir=runs/multirun/proxy_ls"': Command(
        short=SHORT
    ),
    "bench/rank_on_gpu.sh candidates.txt runs/gpu 5300 data.dir=$MULTI30K_DIR": Command(
        short=SHORT, needs=("candidates.txt",), kind="gpu"
    ),
    ".venv/bin/python bench/sweep_table.py runs/gpu": Command(needs=("gpu",), kind="gpu"),
    "bench/rank_on_gpu.sh candidates.txt runs/gpu_fold 2500 model=small train.attention_every=0 "
    "train.eval_every=1000 train.warmup_steps=300": Command(short=SHORT, needs=("candidates.txt",), kind="gpu"),
    "bench/rank_on_gpu.sh candidates.txt runs/gpu 2000 model=small train.attention_every=0 "
    "train.eval_every=1000 train.warmup_steps=300": Command(short=SHORT, needs=("candidates.txt",), kind="gpu"),
    # benchmarks
    ".venv/bin/python bench/train_speed.py --model small": Command(short=SHORT_SPEED, check="ratio"),
    ".venv/bin/python bench/train_speed.py --allocators glibc,mimalloc --out "
    "bench/results/train_speed_compact_zen3.json": Command(short=SHORT_SPEED, check="ratio"),
    ".venv/bin/python bench/train_speed.py --model small --allocators glibc,tcmalloc --out "
    "bench/results/train_speed_small_amx.json": Command(short=SHORT_SPEED, check="ratio"),
    ".venv/bin/python bench/train_speed.py --allocators glibc,tcmalloc --out "
    "bench/results/train_speed_compact_amx.json": Command(short=SHORT_SPEED, check="ratio"),
    ".venv/bin/python bench/train_speed.py --allocators mimalloc --vocab-size 4000": Command(
        short=SHORT_SPEED, check="ratio"
    ),
    ".venv/bin/python bench/decode.py -c runs/en-de": Command(
        short=DECODE_AGAIN, needs=("en-de",), check="CTranslate2 int8"
    ),
    ".venv/bin/python bench/decode.py -c runs/RUN": Command(
        short=FEW_SENTENCES, needs=RUN_NEEDS, check="CTranslate2 int8"
    ),
    ".venv/bin/python bench/decode.py -c runs/RUN --out bench/results/decode_small12_amx.json": Command(
        short=DECODE_AGAIN, needs=RUN_NEEDS, check="recorded in"
    ),
    ".venv/bin/python bench/decode.py -c runs/RUN --compare": Command(
        short=FEW_SENTENCES, needs=RUN_NEEDS, check="ours fp32"
    ),
    'make train ARGS="model=small train.max_minutes=12 train.robustness=false hydra.run.dir=runs/speed_small12"': (
        Command(short=SHORT)
    ),
    'make train ARGS="experiment=proxy hydra.run.dir=runs/proxy_base"': Command(short=SHORT),
    'make train ARGS="experiment=proxy data.augment.upper=0.07 data.augment.title=0.05 data.augment.lower=0.1 '
    'data.augment.no_final_punct=0.15 data.augment.merge=0.1 hydra.run.dir=runs/proxy_augment"': Command(
        short=BEFORE_FOLDING
    ),
    'make train ARGS="experiment=proxy data.augment.lower=0.1 data.augment.no_final_punct=0.15 '
    "data.augment.fragment=0.2 train.reserve_minutes=1.5 train.robustness=false "
    'hydra.run.dir=runs/proxy_fragments"': Command(short=BEFORE_FOLDING),
    ".venv/bin/python bench/robustness.py -c runs/proxy_base": Command(
        short="--sentences 12", needs=("proxy_base",), check="single words"
    ),
    ".venv/bin/python bench/robustness.py -c runs/proxy_base --whole-lines": Command(
        short="--sentences 12", needs=("proxy_base",), check="whole lines"
    ),
    'make train ARGS="experiment=proxy data.augment.upper=0.05 data.augment.title=0.05 data.augment.numbers=0.5 '
    "data.augment.copy_through=0.05 data.augment.typos=0.1 data.augment.fold=0.1 data.tokenizer.split_digits=true "
    'data.tokenizer.upper_copies=0.1 hydra.run.dir=runs/proxy_robust"': Command(short=BEFORE_FOLDING),
    'make train ARGS="experiment=typed hydra.run.dir=runs/hour_typed"': Command(short=SHORT),
    'make train ARGS="experiment=typed hydra.run.dir=runs/hour_typed_inside"': Command(short=SHORT),
    'make train ARGS="hydra.run.dir=runs/hour_recipe"': Command(short=SHORT),
    'make train ARGS="hydra.run.dir=runs/hour_recipe_s47"': Command(short=SHORT),
    'make train ARGS="hydra.run.dir=runs/hour_recipe_s49"': Command(short=SHORT),
    'make train ARGS="experiment=typed hydra.run.dir=runs/hour_typed_s47"': Command(short=SHORT),
    'make train ARGS="experiment=typed data.augment.typos=0.3 data.augment.copy_through=0.05 '
    'data.augment.copy_inside=0.1 hydra.run.dir=runs/hour_typed_t03_s48"': Command(short=SHORT),
    'make train ARGS="experiment=typed data.augment.copy_through=0.025 data.augment.copy_inside=0.05 '
    'hydra.run.dir=runs/hour_typed_half_s50"': Command(short=SHORT),
    'make train ARGS="experiment=typed model=small data.augment.upper=0.12 data.augment.lower=0.12 '
    'data.augment.typos=0.15 data.augment.copy_through=0.15 hydra.run.dir=runs/hour_typed_small"': Command(
        short=BEFORE_FOLDING
    ),
    'make train ARGS="experiment=proxy data.augment.upper=0.1 data.tokenizer.upper_copies=0.1 '
    'hydra.run.dir=runs/proxy_upper"': Command(short=BEFORE_FOLDING),
    'make train ARGS="experiment=proxy data.augment.upper_source=0.1 data.tokenizer.upper_copies=0.1 '
    'hydra.run.dir=runs/proxy_upper_source"': Command(short=BEFORE_FOLDING),
    'make train ARGS="model=small data.augment.upper_source=0.1 data.tokenizer.upper_copies=0.1 '
    'hydra.run.dir=runs/hour_upper_source"': Command(short=BEFORE_FOLDING),
    'make train ARGS="model=small data.augment.lower=0 data.augment.lower_source=0.1 data.augment.typos=0.1 '
    'data.augment.fold=0.1 hydra.run.dir=runs/hour_source_noise"': Command(short=BEFORE_FOLDING),
    'make train ARGS="model=small data.augment.typos=0.05 data.augment.fold=0.05 '
    'hydra.run.dir=runs/hour_typos_fold05"': Command(short=SHORT),
    'make train ARGS="model=small train.threads=1 train.max_steps=5354 train.max_minutes=null '
    'hydra.run.dir=runs/steps_recipe"': Command(short=SHORT),
    'make train ARGS="model=small train.threads=1 train.max_steps=5354 train.max_minutes=null '
    "data.tokenizer.split_digits=true data.augment.numbers=0.5 data.augment.typos=0.05 data.augment.fold=0.05 "
    'hydra.run.dir=runs/steps_typed_light"': Command(short=SHORT),
    'make train ARGS="model=small train.threads=1 train.max_steps=5354 train.max_minutes=null '
    'data.augment.copy_through=0.05 hydra.run.dir=runs/steps_copy05"': Command(short=SHORT),
    'make train ARGS="model=small train.threads=1 train.max_steps=5354 train.max_minutes=null '
    "data.tokenizer.fold_source_case=true data.tokenizer.spell_source_umlauts=true data.tokenizer.upper_copies=0 "
    'data.augment.lower=0 data.augment.upper_source=0 hydra.run.dir=runs/steps_fold"': Command(short=SHORT),
    'make train ARGS="model=small train.threads=1 train.max_steps=5354 train.max_minutes=null seed=2 '
    'hydra.run.dir=runs/steps_typed_light_s2"': Command(short=SHORT),
    'make train ARGS="model=small train.threads=1 train.max_steps=5354 train.max_minutes=null experiment=typed '
    'hydra.run.dir=runs/steps_typed_fold"': Command(short=SHORT),
    ".venv/bin/python bench/robustness.py -c runs/RUN": Command(
        short="--sentences 12", needs=RUN_NEEDS, check="single words"
    ),
    ".venv/bin/python bench/robustness.py -c runs/RUN --whole-lines": Command(
        short="--sentences 12", needs=RUN_NEEDS, check="whole lines"
    ),
    ".venv/bin/python bench/translate_file.py -c runs/RUN --lines 10000": Command(
        short="--lines 40", needs=RUN_NEEDS, check="40 of 40 identical"
    ),
    ".venv/bin/python bench/translate_file.py -c runs/RUN --lines 1000000 --engines ctranslate2 "
    "--default-only": Command(short="--lines 40", needs=RUN_NEEDS, check="peak"),
    ".venv/bin/python bench/beam_grid.py -c runs/recipe_1h": Command(short=FEW_SENTENCES, needs=("recipe_1h",)),
    ".venv/bin/python bench/memory.py": Command(
        short="--steps 2 " + SHORT.replace("train.max_steps=2 ", ""), check="peak RSS"
    ),
    # pairs made from Multi30k's training lines, tokenized with the recipe's 8,000 pieces
    ".venv/bin/python bench/data_prep.py": Command(short="--pairs 20000", multi30k=True),
    ".venv/bin/python bench/typed_sentence.py --logdir runs --run en-de": Command(
        short="-n 2", needs=("en-de",), check="to the inside view"
    ),
    ".venv/bin/python bench/plain_and_fast.py -c runs/RUN": Command(
        short=FEW_SENTENCES + " --steps 2 --rounds 1 --vocab-size 340", needs=RUN_NEEDS, check="beam search"
    ),
    # the reading guide
    'make train ARGS="model=compact model.plain=true"': Command(short=SHORT, check="test_2016_flickr: BLEU"),
    'make train ARGS="hydra.run.dir=runs/hour_fragments"': Command(short=SHORT, check="aligned fragments from"),
    'make train ARGS="experiment=plain"': Command(short=REPORTING_SHORT, check="robustness, single words"),
    'make train ARGS="data.augment.no_final_punct=0.25 hydra.run.dir=runs/hour_nfp25"': Command(short=SHORT),
    'make train ARGS="seed=2 hydra.run.dir=runs/hour_seed2"': Command(short=SHORT),
    'make train ARGS="experiment=plain seed=2 hydra.run.dir=runs/hour_plain2"': Command(short=SHORT),
    'make train ARGS="hydra.run.dir=runs/hour_numbers"': Command(short=SHORT),
    '.venv/bin/python -m analysis.formulas -c runs/RUN "Ein Hund rennt durch den Schnee."': Command(
        needs=RUN_NEEDS, check="== decoding =="
    ),
    '.venv/bin/python docs/screenshots.py --logdir runs --run RUN "Ein Hund rennt durch den Schnee."': Command(
        needs=RUN_NEEDS, check="guide_tab_inside.png"
    ),
}
PYTHON_BLOCKS = ("translating.md",)  # docs whose ```python blocks run too (the Python API)


def test_every_documented_command_has_its_test():
    shown = documented_commands()
    missing = {command: where for command, where in shown.items() if command not in COMMANDS}
    assert not missing, "documented commands that no test runs (add them to COMMANDS):\n" + "\n".join(
        f"  {where}: {command}" for command, where in missing.items()
    )
    stale = [command for command in COMMANDS if command not in shown]
    assert not stale, f"COMMANDS holds commands the docs no longer show: {stale}"


def test_the_finder_sees_commands_and_nothing_else(tmp_path, monkeypatch):
    """A new command in a shell block or inline is found; option names and paths in prose are not."""
    import helpers.documented as documented

    doc = tmp_path / "README.md"
    doc.write_text(
        'Run `make train ARGS="x=1"` or `.venv/bin/python bench/new.py --fast`; the\n'
        "`--fast` option, `bench/results/x.json`, `torchrun` and `translate.py --attention DIR`'s\n"
        "cousin `.venv/bin/python` are not commands.\n\n```bash\n"
        "make train   # a comment\n.venv/bin/python translate.py -c runs/RUN \\\n  'a # b'\n```\n"
    )
    monkeypatch.setattr(documented, "documents", lambda: [doc])
    assert set(documented.documented_commands()) == {
        'make train ARGS="x=1"',
        ".venv/bin/python bench/new.py --fast",
        "make train",
        ".venv/bin/python translate.py -c runs/RUN 'a # b'",
    }


# --- the user's checkout ------------------------------------------------------------------------


class Checkout:
    """A user's checkout (module docstring) and what its commands need, made once each."""

    OWN = {"runs", "exports", "figures", ".cache", "outputs", "multirun", "corpus", "data_hf", "bench", "docs"}

    def __init__(self, root: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
        self.root, self.made, self.tmp_path_factory = root, set(), tmp_path_factory
        self.multi30k: str | None = None  # the real Multi30k, for the commands that need it
        for entry in ROOT.iterdir():
            if entry.name not in self.OWN and entry.name != ".git":
                (root / entry.name).symlink_to(entry)
        (root / ".git").symlink_to(ROOT / ".git")  # for the commit benchmarks write into their results
        for name in ("bench", "docs"):  # commands write into them: copies, so the checkout's stay as they are
            shutil.copytree(ROOT / name, root / name, ignore=shutil.ignore_patterns("__pycache__"))
        (root / "runs").mkdir()
        self.env = {
            **os.environ,
            "MULTI30K_DIR": str(TOY_CORPUS),
            "PATH": f"{root / '.venv' / 'bin'}:{os.environ['PATH']}",
            "HF_HUB_OFFLINE": "1",
            "HF_DATASETS_OFFLINE": "1",
        }
        self.argos_env = offline_environ(root / "home", self.env)

    def as_written(self, command: str) -> str:
        """The command with the user's own things made real (module docstring)."""
        return (
            command.replace("/path/to/multi30k", str(TOY_CORPUS))
            .replace("/corpus/", f"{self.root}/corpus/")
            .replace("/data/wmt16_de_en", f"{self.root}/data_hf/wmt16_de_en")
        )

    def run(
        self, command: str, timeout: float = 300, check: bool = True, multi30k: bool = False, argos: bool = False
    ) -> subprocess.CompletedProcess:
        """`command` in a shell in the checkout; with `multi30k`, on the real Multi30k; with
        `argos`, where argostranslate keeps its packages in the checkout, offline."""
        env = {**self.env, "MULTI30K_DIR": self.multi30k} if multi30k else self.argos_env if argos else self.env
        assert not multi30k or self.multi30k, "the test asks for multi30k_dir first"
        # a line that runs one script with this Python (`make train` included, as make runs it)
        # forks from a warm Python started in the line's environment: the process make or bash
        # would start, without its ~3.5 s of imports (tests/helpers/warm.py); any other, in bash
        python = python_run(command, self.root, env)
        warm = None if python is None else warm_python(python[0], own_environment=True)
        done = None
        if warm is not None:
            try:
                done = warm.run(python[1], self.root, python[0], None, True, timeout)
            except ServerClosed:  # closed for another environment's server meanwhile
                pass
        if done is None:
            done = subprocess.run(
                ["bash", "-c", command], cwd=self.root, env=env, capture_output=True, text=True, timeout=timeout
            )
        if check:
            assert done.returncode == 0, (
                f"{command}\nexit {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
            )
        return done

    def make_run(self, shared: Path) -> None:
        """The documented `make train`, short, run here and kept in `shared` as RUN."""
        before = set((self.root / "runs").iterdir())
        self.run(shortened("make train", RUN_SHORT))
        [run] = {folder for folder in set((self.root / "runs").iterdir()) - before if folder.name != "latest"}
        run.rename(shared / "RUN")  # the last step: a failed try leaves no RUN behind

    def need(self, what: str) -> None:
        """`what` made here, once: where making it fails, the next test that needs it tries again
        (and says why it failed) instead of finding it missing."""
        if what in self.made:
            return
        self.made.add(what)
        try:
            self.make(what)
        except BaseException:
            self.made.discard(what)
            raise

    def make(self, what: str) -> None:
        if what == "run":  # the documented `make train`, short
            # made once for every worker (tests/helpers/shared.py): the first checkout to need it
            # trains it, every checkout copies it. Its checkpoints name the first checkout's data
            # cache, which only a download writes into: the toy corpus is a folder, never downloaded.
            shared = shared_folder(self.tmp_path_factory, "documented_run", self.make_run)
            shutil.rmtree(self.root / "runs" / "RUN", ignore_errors=True)  # what a failed try may have left
            shutil.copytree(shared / "RUN", self.root / "runs" / "RUN", symlinks=True)
        elif what == "latest":  # runs/latest, where the run made last left it
            self.need("run")
            (self.root / "runs" / "latest").unlink(missing_ok=True)
            (self.root / "runs" / "latest").symlink_to("RUN")
        elif what in (
            "en-de",
            "recipe_1h",
            "hour_amx_small_d03_d213a7d",
            "proxy_base",
        ):  # the docs' runs, by their commands
            [command] = [c for c in COMMANDS if f'hydra.run.dir=runs/{what}"' in c]
            self.run(shortened(command, COMMANDS[command].short))
        elif what == "sentences.de":
            (self.root / "sentences.de").write_text("\n".join(toy_sentences()[:12]) + "\n", encoding="utf-8")
        elif what == "export":
            if not (self.root / "exports" / "de-en").exists():  # else the export's own test made it
                self.need("run")
                self.run(".venv/bin/python export.py -c runs/RUN exports/de-en")
        elif what == "libretranslate":  # ~/libretranslate: the environment made once per machine
            argos_python()
            (self.root / "home").mkdir(exist_ok=True)
            (self.root / "home" / "libretranslate").symlink_to(ARGOS_ENV)
        elif what in ("argos package", "argos installed"):  # the README's commands before the one that needs them
            made = "exports/minitrans-de_en-1_0.argosmodel" if what == "argos package" else "home/packages"
            if not (self.root / made).exists():  # else the command's own test made it
                self.need("run" if what == "argos package" else "argos package")
                [command] = [c for c in COMMANDS if ("--to argos" if what == "argos package" else "install_from") in c]
                self.run(self.as_written(command), argos=COMMANDS[command].argos)
        elif what == "corpus":  # the toy corpus as a user's own files, in each documented layout
            corpus = self.root / "corpus"
            corpus.mkdir(exist_ok=True)
            pairs = {}
            for split, name in (("train", "train"), ("val", "dev"), ("test_2016_flickr", "test")):
                for lang in ("de", "en"):
                    shutil.copyfile(TOY_CORPUS / f"{split}.{lang}", corpus / f"{name}.{lang}")
                pairs[split] = list(
                    zip(
                        *(
                            (TOY_CORPUS / f"{split}.{lang}").read_text(encoding="utf-8").splitlines()
                            for lang in ("de", "en")
                        )
                    )
                )
            (corpus / "train.tsv").write_text(
                "de\ten\n" + "".join(f"{de}\t{en}\n" for de, en in pairs["train"]), encoding="utf-8"
            )
            (corpus / "train.jsonl").write_text(
                "".join(json.dumps({"translation": {"de": de, "en": en}}) + "\n" for de, en in pairs["train"]),
                encoding="utf-8",
            )
            import datasets

            datasets.DatasetDict(
                {
                    theirs: datasets.Dataset.from_dict(
                        {"translation": [{"de": de, "en": en} for de, en in pairs[ours]]}
                    )
                    for ours, theirs in (("train", "train"), ("val", "validation"), ("test_2016_flickr", "test"))
                }
            ).save_to_disk(str(self.root / "data_hf" / "wmt16_de_en"))
        elif what.startswith("proxy_"):  # a documented multirun's folder, for the table of it
            [command] = [c for c in COMMANDS if f'runs/multirun/{what}"' in c]
            self.run(shortened(command, COMMANDS[command].short), timeout=600, multi30k=COMMANDS[command].multi30k)
        elif what == "candidates.txt":
            (self.root / "candidates.txt").write_text("-  # the recipe\nmodel.dropout=0.3\n")
        elif what == "gpu":
            command = "bench/rank_on_gpu.sh candidates.txt runs/gpu 5300 data.dir=$MULTI30K_DIR"
            self.need("candidates.txt")
            self.run(shortened(command, COMMANDS[command].short), timeout=600)
        else:
            raise AssertionError(f"nothing makes {what}")


def machine_lacks(needed: tuple[str, ...]) -> str:
    """What of `needed` this machine lacks, in words ("" if nothing)."""
    from bench.common import allocators
    from utils.device import cpu_description, native_bf16

    lacks = {
        "bf16": lambda: not native_bf16(torch.device("cpu")) and f"native bf16 (this CPU: {cpu_description()})",
        "tcmalloc": lambda: "tcmalloc" not in allocators() and "tcmalloc (apt install libtcmalloc-minimal4)",
    }
    return ", ".join(what for need in needed if (what := lacks[need]()))


def shortened(command: str, short: str) -> str:
    """`short` appended: inside make's ARGS="..." (or as one), else after the command."""
    if not short:
        return command
    if command.startswith("make ") and " train" in command:
        if 'ARGS="' in command:
            start = command.index('ARGS="') + len('ARGS="')
            end = command.index('"', start)
            return f"{command[:end]} {short}{command[end:]}"
        return f'{command} ARGS="{short}"'
    return f"{command} {short}"


@pytest.fixture(scope="session")  # one a worker, however pytest-xdist interleaves its tests with others
def checkout(tmp_path_factory) -> Checkout:
    if not (ROOT / ".venv" / "bin" / "python").exists():
        pytest.skip("the documented commands use .venv/bin: run `make install` first")
    return Checkout(tmp_path_factory.mktemp("checkout"), tmp_path_factory)


def made_by(command: str) -> str | None:
    """The run folder a command makes that the docs read later (`runs/X`, `runs/multirun/X`)."""
    for folder in ("runs/multirun/", "hydra.run.dir=runs/"):
        if folder in command:
            return command.split(folder)[1].split('"')[0]
    return None


# The commands that read a run others made, and the command that makes it, share one checkout:
# under pytest-xdist (make test) each such group stays on one worker (xdist_group), and the groups
# and the other commands go to any worker, each worker with a checkout of its own (where the few
# files they need take no time to make). The many commands that read the documented `make train`'s
# run are three groups, so that both workers share them (exports and what serves them, the
# benchmarks, the rest); the run itself (~35 s) is made once, by the first to need it, and copied.
QUICK_TO_MAKE = {"corpus", "sentences.de", "candidates.txt"}
NEEDED = {what for spec in COMMANDS.values() for what in spec.needs} - QUICK_TO_MAKE
EXPORTS = {"export", "argos package", "argos installed", "libretranslate"}


def group_of(command: str, spec: Command) -> str | None:
    """The xdist_group of a command that needs or makes what another needs; None for the others."""
    needed = NEEDED & {*spec.needs, made_by(command)}
    if not needed:
        return None
    if needed & EXPORTS or "export.py" in command:
        return "documented_exports"
    if needed & {"run", "latest"}:
        return "documented_run_benchmarks" if "bench/" in command else "documented_run"
    return "documented_" + "_".join(sorted(needed))


@pytest.mark.parametrize(
    "command",
    [
        pytest.param(command, marks=pytest.mark.xdist_group(group)) if (group := group_of(command, spec)) else command
        for command, spec in COMMANDS.items()
    ],
)
def test_the_documented_command_runs(command, checkout, request):
    spec = COMMANDS[command]
    if spec.multi30k:
        checkout.multi30k = request.getfixturevalue("multi30k_dir")  # skipped without it
    written = checkout.as_written(command)
    if missing := machine_lacks(spec.machine):
        pytest.skip(f"the command measures {missing}, which this machine lacks")
    if spec.kind == "gpu" and not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU (bench/rank_on_gpu.sh; tests/test_rank_on_gpu.py runs it with a stand-in)")
    for what in spec.needs:
        checkout.need(what)
    if spec.kind == "gpu":
        checkout.run(shortened(written, spec.short), spec.timeout)
    elif spec.kind == "ci":  # CI runs this command itself: a line of .ci/run
        assert command in (ROOT / ".ci" / "run").read_text().splitlines()
    elif spec.kind == "server":
        serve(checkout, written)
    elif spec.kind == "install":  # what tests/helpers/argos.py runs, as written but for the folder
        assert command == ARGOS_INSTALL
        argos_python()
    elif spec.kind == "libretranslate":
        serve_translations(checkout, written)
    elif spec.kind == "terminal":
        shown = in_terminal(checkout, written, "Ein Hund rennt.")
        assert shown[0].startswith("Type a sentence and press Enter") and shown[1] == "Ein Hund rennt." and shown[2]
    elif spec.kind == "interrupt":
        interrupt_then_continue(checkout, shortened(written, spec.short))
    else:
        if ("typed_sentence" in command or "screenshots" in command) and (missing := browser_missing()):
            pytest.skip(missing)
        done = checkout.run(shortened(written, spec.short), spec.timeout, multi30k=spec.multi30k, argos=spec.argos)
        assert spec.check in done.stdout + done.stderr, done.stdout[-2000:] + done.stderr[-2000:]
        if made := made_by(command):  # a run folder the docs read later is there
            checkout.made.add(made)


def serve(checkout: Checkout, command: str) -> None:
    """Started as written, asked for the ATTENTION tab's runs at the address it names, stopped."""
    process = subprocess.Popen(
        ["bash", "-c", f"exec {command}"], cwd=checkout.root, env=checkout.env, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline, url = time.monotonic() + 120, None
        while url is None and time.monotonic() < deadline:
            line = process.stderr.readline()
            assert line or process.poll() is None, "tensorboard ended"
            if "http://" in line:
                url = line[line.index("http://") :].split()[0].rstrip("/")
        runs = json.loads(urllib.request.urlopen(f"{url}/data/plugin/attention/runs", timeout=60).read())
        assert "RUN" in [run["run"] for run in runs["runs"]]
    finally:
        process.terminate()
        process.wait(timeout=30)


def serve_translations(checkout: Checkout, command: str) -> None:
    """LibreTranslate started as written, asked for its languages and a translation, stopped. It
    listens on a free port of its own (LT_PORT, as LibreTranslate reads its options from the
    environment), not the default 5000 another program may hold."""
    process = subprocess.Popen(  # its own process group: the shell (a variable set before the command) and it
        ["bash", "-c", command],
        cwd=checkout.root,
        env={**checkout.argos_env, "LT_PORT": str(free_port())},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        url, said = started_libretranslate(process)
        assert "Found 0 models" in said, said
        languages = json.loads(urllib.request.urlopen(f"{url}/languages", timeout=60).read())
        assert {language["code"] for language in languages} == {"de", "en"}
        request = urllib.request.Request(
            f"{url}/translate",
            data=json.dumps({"q": "Ein Hund rennt.", "source": "de", "target": "en"}).encode(),
            headers={"Content-Type": "application/json"},
        )
        assert json.loads(urllib.request.urlopen(request, timeout=120).read())["translatedText"]
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)


def in_terminal(checkout: Checkout, command: str, sentence: str) -> list[str]:
    """The command at a terminal (a pty): `sentence` typed and Enter, then, once its translation is
    shown, Ctrl-D; the lines the terminal showed."""
    leader, follower = open_terminal()
    process = subprocess.Popen(
        ["bash", "-c", command], cwd=checkout.root, env=checkout.env, stdin=follower, stdout=follower, stderr=follower
    )
    os.close(follower)
    shown, deadline, typed, ended = b"", time.monotonic() + 120, False, False
    while time.monotonic() < deadline and process.poll() is None:
        if select.select([leader], [], [], 0.2)[0]:
            try:
                shown += os.read(leader, 4096)
            except OSError:  # the other end closed
                break
        if not typed and b"\n" in shown:  # the prompt is there: type the sentence
            os.write(leader, sentence.encode() + b"\n")
            typed = True
        if not ended and shown.count(b"\n") >= 3:  # the prompt, the sentence echoed, its translation
            os.write(leader, b"\x04")  # Ctrl-D: input ends
            ended = True
    process.wait(timeout=60)
    os.close(leader)
    lines = shown.decode(errors="replace").replace("\r", "").splitlines()
    assert process.returncode == 0, lines
    return lines


def interrupt_then_continue(checkout: Checkout, command: str) -> None:
    """The docs' Ctrl-C half-way, then the same command: it says how to continue, and continues."""
    process = subprocess.Popen(
        ["bash", "-c", f"exec {command}"],
        cwd=checkout.root,
        env=checkout.env,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    checkpoints = checkout.root / "runs" / "my_run" / "checkpoints"
    deadline = time.monotonic() + 300
    while not list(checkpoints.glob("step_*.pt")) and time.monotonic() < deadline:
        assert process.poll() is None, process.stderr.read()
        time.sleep(0.1)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 130 and "continue with: python train.py experiment=ci" in stderr, stderr
    checkout.run(command, timeout=600)
    log = (checkout.root / "runs" / "my_run" / "train.log").read_text()
    assert "resumed from" in log and (checkout.root / "runs" / "my_run" / "results.json").is_file()


@pytest.mark.xdist_group("documented_exports")
def test_the_python_api_blocks_run(checkout):
    """The ```python blocks of the docs, each run as a script."""
    from helpers.documented import FENCE

    checkout.need("export")
    for name in PYTHON_BLOCKS:
        for block in FENCE.finditer((ROOT / "docs" / name).read_text(encoding="utf-8")):
            if block[2] == "python":
                (checkout.root / "block.py").write_text(block[3], encoding="utf-8")
                checkout.run(".venv/bin/python block.py")
