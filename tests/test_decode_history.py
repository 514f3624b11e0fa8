"""bench/decode.py's history: a ratio is compared only with one measured in the same layout of
the cores (--threads), so one thread's figure is never read against two workers'."""

import json

import bench.decode as decode
from utils.device import usable_cores

SETTING = {"checkpoint": "runs/r", "split": "val", "sentences": 5, "beam": 5}
SPEEDS = {"ours fp32": 100.0, "CTranslate2 float32": 150.0}


def test_a_ratio_is_compared_only_within_its_layout(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(decode, "HISTORY", tmp_path / "history.jsonl")
    cores = usable_cores()
    one = (1, "1 thread")
    decode.against_history(SPEEDS, SETTING, layout=one, record=True)
    assert json.loads(decode.HISTORY.read_text())["threads"] == 1
    capsys.readouterr()

    decode.against_history(SPEEDS, SETTING, layout=(cores + 1, "more batches"), record=False)
    assert "nothing recorded yet" in capsys.readouterr().out

    decode.against_history({**SPEEDS, "ours fp32": 50.0}, SETTING, layout=one, record=False)
    said = capsys.readouterr().out
    assert "1 thread: ours fp32 50.0, CTranslate2 float32 150.0 sentences/s: 3.00x" in said
    assert "1.50x" in said and "ours is slower" in said


def test_a_row_from_before_threads_were_recorded_counts_as_every_core(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(decode, "HISTORY", tmp_path / "history.jsonl")
    decode.against_history(SPEEDS, SETTING, layout=(usable_cores(), "default"), record=True)
    row = json.loads(decode.HISTORY.read_text())
    del row["threads"]
    decode.HISTORY.write_text(json.dumps(row) + "\n")
    capsys.readouterr()
    decode.against_history(SPEEDS, SETTING, layout=(usable_cores(), "default"), record=False)
    assert "the same, within 5%" in capsys.readouterr().out
    if usable_cores() > 1:
        decode.against_history(SPEEDS, SETTING, layout=(1, "1 thread"), record=False)
        assert "nothing recorded yet" in capsys.readouterr().out
