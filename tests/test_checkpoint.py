"""Checkpoint files (engine/checkpoint.py): atomic writes."""
import pytest
import torch

from engine.checkpoint import VERSION, atomic_save, load_checkpoint


def test_interrupted_save_leaves_previous_checkpoint_loadable(tmp_path, monkeypatch):
    path = tmp_path / "step_1.pt"
    atomic_save({"format": "minitrans", "version": VERSION, "weights": torch.arange(5)}, path)

    def failing_save(obj, f):
        f.write(b"partial garbage")
        raise RuntimeError("disk full")

    monkeypatch.setattr(torch, "save", failing_save)
    with pytest.raises(RuntimeError, match="disk full"):
        atomic_save({"format": "minitrans", "version": VERSION, "weights": torch.zeros(5)}, path)
    monkeypatch.undo()
    assert torch.equal(load_checkpoint(path)["weights"], torch.arange(5))
    assert list(tmp_path.iterdir()) == [path], "no temporary file may be left behind"
