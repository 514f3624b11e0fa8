"""Head importance (analysis/head_importance.py): masking each head, pruning curves, heads.py."""

import json
import subprocess

import pytest

from analysis.head_importance import head_importance, importance_grids, removal_counts
from helpers import TOY_CORPUS, run_script, scalars
from model import Transformer


def test_removal_counts_step_up_to_every_head():
    assert removal_counts(16) == [2, 4, 6, 8, 10, 12, 14, 16]
    assert removal_counts(8) == list(range(1, 9))
    assert removal_counts(3) == [1, 2, 3]


def masked_heads(model: Transformer) -> set[tuple[str, int, int]]:
    """(kind, layer, head) of every head whose gate is 0 right now."""
    return {
        (kind, layer, head + 1)
        for kind, modules in model.attention_modules().items()
        for layer, module in enumerate(modules, start=1)
        if module.head_gate is not None
        for head in (module.head_gate == 0).nonzero().flatten().tolist()
    }


def test_known_importances_are_measured_ranked_and_pruned_in_order(tiny_config):
    """A fake measure that knows what each head is worth: the result must report exactly that."""
    model = Transformer(tiny_config)
    worth = {
        (kind, layer, head): 0.01 * (i + 1)  # every head a different, known loss increase
        for i, (kind, layer, head) in enumerate(
            (k, layer, h) for k in ("encoder_self", "decoder_self", "cross") for layer in (1, 2) for h in (1, 2, 3, 4)
        )
    }
    worth[("cross", 2, 3)] = 5.0  # one head the translation cannot do without

    def measure():
        loss = 2.0 + sum(worth[h] for h in masked_heads(model))
        return loss, 30.0 - 10 * (loss - 2.0)

    result = head_importance(model, measure)
    assert result["base"] == {"loss": 2.0, "bleu": 30.0}
    assert len(result["heads"]) == 24
    top = result["heads"][0]
    assert (top["kind"], top["layer"], top["head"]) == ("cross", 2, 3)
    assert top["loss_increase"] == pytest.approx(5.0) and top["bleu_drop"] == pytest.approx(50.0)
    increases = [r["loss_increase"] for r in result["heads"]]
    assert increases == sorted(increases, reverse=True)
    for row in result["heads"]:
        assert row["loss_increase"] == pytest.approx(worth[row["kind"], row["layer"], row["head"]])
    cross = result["pruning"]["cross"]
    assert [p["removed"] for p in cross] == [0] + list(range(1, 9))
    # least important first: the 5.0 head is the last one pruned, and the loss only grows
    assert "2:3" not in cross[-2]["heads"] and "2:3" in cross[-1]["heads"]
    assert cross[-1]["loss"] == pytest.approx(2.0 + sum(v for (k, _, _), v in worth.items() if k == "cross"))
    assert all(a["loss"] < b["loss"] for a, b in zip(cross, cross[1:]))
    assert masked_heads(model) == set()  # every head back at the end
    grid = importance_grids(result, "loss_increase")["cross"]
    assert grid.shape == (2, 4) and grid[1, 2] == pytest.approx(5.0)


def test_heads_are_restored_when_a_measurement_fails(tiny_config):
    model = Transformer(tiny_config)
    calls = []

    def measure():
        calls.append(1)
        if len(calls) == 3:
            raise RuntimeError("interrupted")
        return 1.0, 1.0

    with pytest.raises(RuntimeError):
        head_importance(model, measure)
    assert masked_heads(model) == set()


def test_masking_a_real_head_changes_the_validation_loss(ci_run):
    """On a trained model the measure is not blind to masks: some head's loss increase is > 0."""
    results = json.loads((ci_run / "results.json").read_text())
    importance = results["head_importance"]
    assert len(importance["heads"]) == 3 * 2 * 4  # tiny: 2+2 layers, 4 heads, three kinds
    assert importance["heads"][0]["loss_increase"] > 0.01
    assert importance["sentences_for_bleu"] == 20 and importance["seconds"] > 0
    for kind, curve in importance["pruning"].items():
        assert curve[0]["bleu"] == importance["base"]["bleu"]
        assert len(curve[-1]["heads"]) == 8, kind  # the last point masks every head of the kind
    log = (ci_run / "train.log").read_text()
    assert "head importance (validation loss" in log and "pruning cross, least important first" in log
    images = set(scalars(ci_run).Tags()["images"])
    assert {"heads/importance_loss_increase", "heads/importance_bleu_drop", "heads/pruning"} <= images


def run_heads(*args: str) -> subprocess.CompletedProcess:
    return run_script("heads.py", *args, check=False)


def test_heads_command_writes_json_table_and_figure(ci_run, tmp_path):
    out = run_heads(
        "-c",
        str(ci_run),
        "--data-dir",
        str(TOY_CORPUS),
        "--sentences",
        "20",
        "-o",
        str(tmp_path / "h.json"),
        "--figure",
        str(tmp_path / "h.png"),
        "--threads",
        "2",
    )
    assert out.returncode == 0, out.stderr
    result = json.loads((tmp_path / "h.json").read_text())
    assert result["sentences_for_bleu"] == 20 and len(result["heads"]) == 24
    first = result["heads"][0]
    assert f"{first['kind']}:{first['layer']}:{first['head']}" in out.stdout.splitlines()[2]  # most important first
    assert (tmp_path / "h.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # the same checkpoint and validation loss as the training run measured: heads.py in float32,
    # training in its own precision (bf16 autocast where the CPU has bf16: 0.2% apart on an Intel
    # Xeon with AMX)
    trained = json.loads((ci_run / "results.json").read_text())
    tolerance = 1e-2 if trained["precision"] == "bf16" else 1e-4
    assert result["base"]["loss"] == pytest.approx(trained["head_importance"]["base"]["loss"], rel=tolerance)


@pytest.mark.parametrize(
    "args, message",
    [
        (["-c", "no/such/run"], "error: checkpoint no/such/run does not exist"),
        (["--sentences", "0"], "error: argument --sentences: must be at least 1, not 0 (see --help)"),
    ],
)
def test_heads_command_errors_are_one_line(ci_run, args, message):
    if "-c" not in args:
        args = ["-c", str(ci_run), *args]
    out = run_heads(*args)
    assert out.returncode in (1, 2) and out.stderr.startswith(message)
    assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr


def test_a_wrong_data_folder_is_one_line(ci_run, tmp_path):
    out = run_heads("-c", str(ci_run), "--data-dir", str(tmp_path))
    assert out.returncode == 1 and out.stderr.startswith("error: ")
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr
