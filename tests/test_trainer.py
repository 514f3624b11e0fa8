"""The training loop (engine/trainer.py): resuming, non-finite stops, accumulation."""
import signal
import subprocess
import sys
import time

import pytest
import torch

from data import UserError
from engine.checkpoint import load_checkpoint
from engine.run import train

from helpers import ROOT, compose_config, run_train


def test_resume_after_sigkill_matches_uninterrupted_run(multi30k_dir, tmp_path):
    common = ["experiment=ci", "train.max_steps=60", "train.eval_every=1000", "train.checkpoint_every=20",
              "train.keep_last=5", "train.threads=1"]
    straight, killed = tmp_path / "straight", tmp_path / "killed"
    run_train(straight, *common)

    cmd = [sys.executable, str(ROOT / "train.py"), f"hydra.run.dir={killed}", *common]
    process = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 300
    while not (killed / "checkpoints" / "step_0000020.pt").exists():
        assert process.poll() is None and time.time() < deadline, "training ended before its first checkpoint"
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert not (killed / "checkpoints" / "step_0000060.pt").exists(), "killed too late to test resuming"

    run_train(killed, *common)  # the same command in the same folder
    assert "resumed from" in (killed / "train.log").read_text()
    final_straight = load_checkpoint(straight / "checkpoints" / "step_0000060.pt")
    final_resumed = load_checkpoint(killed / "checkpoints" / "step_0000060.pt")
    for name, tensor in final_straight["model"].items():
        assert torch.equal(tensor, final_resumed["model"][name]), f"{name} differs after resume"
    progress = [{k: v for k, v in ckpt["train_state"]["progress"].items() if k != "elapsed"}  # wall clock differs
                for ckpt in (final_straight, final_resumed)]
    assert progress[0] == progress[1]
    for name, state in final_straight["train_state"]["optimizer"]["state"].items():
        assert torch.equal(state["exp_avg"], final_resumed["train_state"]["optimizer"]["state"][name]["exp_avg"])


def test_non_finite_loss_stops_with_a_clear_message(multi30k_dir, tmp_path, monkeypatch):
    calls = {"n": 0}
    real_clip = torch.nn.utils.clip_grad_norm_

    def exploding_clip(params, max_norm):
        calls["n"] += 1
        norm = real_clip(params, max_norm)
        return norm * float("nan") if calls["n"] > 20 else norm

    monkeypatch.setattr(torch.nn.utils, "clip_grad_norm_", exploding_clip)
    cfg = compose_config("experiment=ci", "train.checkpoint_every=10", "train.eval_every=1000")
    with pytest.raises(UserError, match=r"non-finite loss \(\d.*\) or gradient norm \(nan\) at step 21; "
                                        r"stopped\. Last good checkpoint: .*step_0000020\.pt"):
        train(cfg, tmp_path)
    assert load_checkpoint(tmp_path / "checkpoints" / "step_0000020.pt")["train_state"]["progress"]["step"] == 20


def test_gradient_accumulation_consumes_grad_accum_batches_per_step(multi30k_dir, tmp_path):
    cfg = compose_config("experiment=ci", "train.grad_accum=3", "train.max_steps=5", "train.eval_every=1000",
                         "train.attention_every=0", "train.threads=1")
    results = train(cfg, tmp_path)
    progress = load_checkpoint(tmp_path / "checkpoints" / "step_0000005.pt")["train_state"]["progress"]
    assert results["steps"] == 5
    assert (progress["epoch"], progress["position"]) == (0, 15)
