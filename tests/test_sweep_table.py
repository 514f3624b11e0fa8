"""bench/sweep_table.py: a multirun's finished runs, best validation BLEU first."""

import json

import yaml
from torch.utils.tensorboard import SummaryWriter

from helpers import run_script


def fake_run(folder, overrides: list[str], bleus: list[float], speeds: list[float]) -> None:
    (folder / ".hydra").mkdir(parents=True)
    (folder / ".hydra" / "overrides.yaml").write_text(yaml.safe_dump(overrides))
    (folder / "results.json").write_text(
        json.dumps({"total_minutes": 9.87, "steps": 812, "epochs": 6.1, "best_val_bleu": max(bleus)})
    )
    with SummaryWriter(str(folder)) as writer:
        for step, speed in enumerate(speeds):
            writer.add_scalar("train/tokens_per_sec", speed, step * 20)
        for step, bleu in enumerate(bleus):
            writer.add_scalar("val/bleu", bleu, step * 250)


def test_runs_are_ranked_by_best_validation_bleu(tmp_path):
    fake_run(tmp_path / "0", ["experiment=proxy", "train.lr=0.003"], [10.0, 20.04], [5000, 5200])
    fake_run(tmp_path / "1", ["experiment=proxy", "train.lr=0.005"], [12.0, 24.5, 23.0], [4000])
    (tmp_path / "2").mkdir()  # still running: no results.json yet
    result = run_script("bench/sweep_table.py", tmp_path)
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 4  # header, rule, two finished runs
    assert lines[2] == (
        "| 1 | `experiment=proxy train.lr=0.005` | 9.9 | 812 (6.1) | 4,000 | 12.0, 24.5, 23.0 | **24.50** |"
    )
    assert lines[3].startswith("| 0 | `experiment=proxy train.lr=0.003` |") and "| 5,100 | 10.0, 20.0 |" in lines[3]


def test_a_folder_without_finished_runs_is_one_line(tmp_path):
    for folder, message in ((tmp_path / "missing", "no folder"), (tmp_path, "no finished run")):
        result = run_script("bench/sweep_table.py", folder, check=False)
        assert result.returncode == 1 and message in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
