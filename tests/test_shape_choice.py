"""model=auto, the default: the shape table (conf/model/auto.yaml) and how a run takes its row by
what this machine measures (training/shape_choice.py, training/run.py's model_shape)."""

import re
from itertools import islice

import torch

from data import token_batches
from helpers import TOY_DATA, compose_config, run_train, tiny_config
from model import TransformerConfig
from training.config import ShapeRow, TrainConfig, to_run_config
from training.distributed import Distributed
from training.run import model_shape
from training.shape_choice import STEP_SHARE, affordable_steps, choose_shape, probe_seconds_per_token

SMALL = TransformerConfig(d_model=256, n_heads=8, n_encoder_layers=3, n_decoder_layers=3, d_ff=1024, dropout=0.3)
ROWS = {"compact": ShapeRow(0, TransformerConfig()), "small": ShapeRow(5000, SMALL)}
CPU = torch.device("cpu")
HOUR = TrainConfig()  # 60 minutes, 2.5 of them kept for the final evaluation: 3,450 s of budget


class Machine:
    """Seconds a training step takes by d_model, noting each shape it was asked to time."""

    def __init__(self, seconds: dict[int, float]) -> None:
        self.seconds, self.timed = seconds, []

    def __call__(self, shape: TransformerConfig) -> float:
        self.timed.append(shape.d_model)
        return self.seconds[shape.d_model]


def test_the_steps_a_budget_affords():
    assert affordable_steps(0.5, HOUR) == int(3450 * STEP_SHARE / 0.5)
    assert affordable_steps(0.5, TrainConfig(max_steps=100)) == 100  # the step limit comes first
    assert affordable_steps(0.5, TrainConfig(max_minutes=None, max_steps=7)) == 7


def test_a_machine_fast_enough_takes_the_larger_shape():
    machine = Machine({256: 0.5})  # 3,450 s x 0.9 / 0.5 s: 6,210 steps
    choice = choose_shape(ROWS, machine, HOUR)
    assert (choice.name, choice.model, machine.timed) == ("small", SMALL, [256])
    assert "small runs 0.50 s a step here: ~6,210 steps in the budget, at least the 5,000 its row asks" in choice.why


def test_a_slower_machine_keeps_the_compact_shape_without_timing_it():
    machine = Machine({256: 1.5})  # ~2,070 steps of small
    choice = choose_shape(ROWS, machine, HOUR)
    assert (choice.name, choice.model, machine.timed) == ("compact", TransformerConfig(), [256])
    assert "~2,070 steps in the budget, under the 5,000 its row asks; compact takes any budget" in choice.why


def test_where_the_limits_decide_nothing_is_timed():
    machine = Machine({})
    assert choose_shape(ROWS, machine, TrainConfig(max_steps=4999)).name == "compact"
    assert choose_shape(ROWS, machine, TrainConfig(max_minutes=None, max_steps=5000)).name == "small"
    assert choose_shape(ROWS, machine, TrainConfig(max_minutes=None, max_steps=4999)).name == "compact"
    assert machine.timed == []


def test_the_default_config_is_the_table():
    run = to_run_config(compose_config())
    assert {name: row.min_steps for name, row in run.shapes.items()} == {"small": 4500, "compact": 0}
    # each row is the model option of its name, as `model=NAME` gives it
    for name, row in run.shapes.items():
        assert row.model == to_run_config(compose_config(f"model={name}")).model
    assert to_run_config(compose_config("model=small")).shapes == {}  # a named shape is fixed


def test_the_probe_times_training_steps_after_its_warmup_per_target_token(toy):
    # a fake clock, read as each timed step starts and ends: they take 1, 3 and 2 seconds
    times = iter([0.0, 1.0, 1.0, 4.0, 4.0, 6.0])
    shape = tiny_config(src_vocab_size=toy.tokenizer.src_vocab_size, tgt_vocab_size=toy.tokenizer.tgt_vocab_size)
    batches = list(islice(token_batches(toy.tokens["train"], 64, 256, quiet=True), 2))
    seconds = probe_seconds_per_token(shape, batches, TrainConfig(precision="fp32"), CPU, lambda: next(times))
    # steps 2, 3 and 4 take batches 0, 1 and 0 (the two steps before only warm up): the median
    tokens = [batches[0].n_tgt_tokens, batches[1].n_tgt_tokens, batches[0].n_tgt_tokens]
    assert seconds == sorted([1 / tokens[0], 3 / tokens[1], 2 / tokens[2]])[1]
    assert next(times, None) is None  # every timed step read the clock twice, and nothing else did


def test_a_run_takes_the_tables_shape_and_keeps_it_when_resumed(tmp_path, toy):
    # a 12-second budget: small, timed, falls far short of its 4,500 steps; compact trains
    run_dir = tmp_path / "run"
    done = run_train(
        run_dir,
        *TOY_DATA,
        f"data.cache_dir={tmp_path / 'cache'}",
        "train.max_minutes=0.2",
        "train.reserve_minutes=0",
        "train.eval_every=20",
        "train.attention_every=0",
        "train.average_last=0",
        "train.test_beam_size=1",
        "train.robustness=false",  # the report after the test set is not what this test is about
    )
    log = (run_dir / "train.log").read_text()
    said = re.search(
        r"shape: compact \(d_model 128, d_ff 256, 4\+4 layers, 4 heads, dropout 0.2\), model=auto: (.*)", log
    )
    assert said, log[-3000:]
    assert re.fullmatch(
        r"small runs [0-9.]+ s a step here: ~[0-9,]+ steps in the budget, under the 4,500 its row asks; "
        r"compact takes any budget",
        said.group(1),
    )
    assert done.returncode == 0
    # the same command again continues the run: the shape is the checkpoint's, not measured anew
    run = to_run_config(compose_config(*TOY_DATA))
    shape = model_shape(run, toy, run_dir, CPU, Distributed(CPU))
    assert (shape.d_model, shape.n_encoder_layers, shape.dropout) == (128, 4, 0.2)
