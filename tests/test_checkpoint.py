"""Checkpoint files (inference/checkpoint.py): atomic writes."""

import pytest
import torch

from inference.checkpoint import VERSION, atomic_save, load_checkpoint


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


def test_older_weights_translate_but_only_this_versions_training_state_resumes(ci_run, tmp_path):
    from inference.checkpoint import WEIGHTS_SINCE, load_for_inference
    from utils.errors import UserError

    checkpoint = load_checkpoint(ci_run / "checkpoints" / "step_0000240.pt")
    assert checkpoint["version"] == VERSION
    checkpoint["version"] = WEIGHTS_SINCE
    old = tmp_path / "old.pt"
    torch.save(checkpoint, old)
    model, _, _ = load_for_inference(old)
    assert torch.equal(model.state_dict()["output_proj.weight"], checkpoint["model"]["output_proj.weight"])
    with pytest.raises(
        UserError, match=f"format version {WEIGHTS_SINCE}; this minitrans resumes training from version {VERSION}$"
    ):
        load_checkpoint(old, for_training=True)
