"""Training end to end on real Multi30k (the `ci` experiment), configs, resume, errors."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from hydra import compose, initialize_config_dir
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from data import UserError
from engine.checkpoint import VERSION, atomic_save, load_checkpoint, load_for_inference
from engine.config import register_configs, to_run_config

from helpers import CONF, ROOT, run_train

register_configs()


def compose_config(*overrides: str):
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose(config_name="config", overrides=list(overrides))


def scalars(run_dir: Path) -> EventAccumulator:
    events = EventAccumulator(str(run_dir), size_guidance={"scalars": 0, "images": 0, "tensors": 0})
    events.Reload()
    return events


def test_ci_experiment_trains_end_to_end(ci_run):
    import json

    results = json.loads((ci_run / "results.json").read_text())
    test = results["test"]["test_2016_flickr"]
    assert test["bleu"] > 1.0, "the tiny model should learn something in 240 steps"
    assert test["bleu_signature"].startswith("nrefs:1|case:mixed|eff:no|tok:13a")
    assert 0 < test["chrf"] <= 100 and test["beam_size"] == 2
    assert results["steps"] == 240
    assert results["total_minutes"] > results["minutes"] > 0  # the final evaluation counts too
    assert results["peak_rss_mb"] > 100
    assert (ci_run / "checkpoints" / "best.pt").is_file()
    assert (ci_run / "checkpoints" / "step_0000240.pt").is_file()
    assert (ci_run / "spm_joint.model").is_file() and (ci_run / ".hydra" / "config.yaml").is_file()
    hyps = (ci_run / "test_2016_flickr.hyp.en").read_text().splitlines()
    assert len(hyps) == 100  # max_eval_examples; line-aligned with the references


def test_checkpoint_averaging_ran_and_averages_elementwise(ci_run):
    from engine.checkpoint import average_checkpoints, step_checkpoints

    assert "average of 3 checkpoints: val BLEU" in (ci_run / "train.log").read_text()
    paths = step_checkpoints(ci_run / "checkpoints")[-2:]
    averaged = average_checkpoints(paths)
    first, second = (load_checkpoint(p)["model"] for p in paths)
    name = "encoder.layers.0.self_attn.in_proj.weight"
    torch.testing.assert_close(averaged[name], (first[name] + second[name]) / 2)


def test_events_hold_the_scalar_tags_and_val_loss_decreases(ci_run):
    events = scalars(ci_run)
    tags = set(events.Tags()["scalars"])
    expected = {"train/loss", "train/lr", "train/grad_norm", "train/tokens_per_sec",
                "val/loss", "val/ppl", "val/bleu", "test/bleu"}
    assert expected <= tags, f"missing {expected - tags}"
    val_loss = [e.value for e in events.Scalars("val/loss")]
    assert len(val_loss) >= 3 and val_loss[-1] < val_loss[0]
    assert "samples/text_summary" in events.Tags()["tensors"]  # how SummaryWriter stores text


def test_checkpoint_is_self_contained(ci_run):
    model, tokenizer, meta = load_for_inference(ci_run)
    assert meta["src_lang"] == "de" and meta["tgt_lang"] == "en"
    assert model.cfg.src_vocab_size == tokenizer.src_vocab_size == 1000
    checkpoint = load_checkpoint(ci_run / "checkpoints" / "step_0000240.pt")
    assert set(checkpoint["train_state"]) == {"optimizer", "scheduler", "progress", "rng"}
    assert checkpoint["train_state"]["progress"]["step"] == 240


@pytest.mark.parametrize("experiment", [None, "ci", "cpu_1h"])
@pytest.mark.parametrize("model", ["tiny", "small", "base"])
def test_every_config_composes(experiment, model):
    overrides = [f"model={model}"] + ([f"experiment={experiment}"] if experiment else [])
    run = to_run_config(compose_config(*overrides))
    assert run.model.d_model > 0 and run.train.max_steps > 0


def test_experiment_files_hold_only_what_they_change():
    for path in (CONF / "experiment").glob("*.yaml"):
        assert path.read_text().startswith("# @package _global_"), path


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


def test_non_finite_loss_stops_with_a_clear_message(multi30k_dir, tmp_path, monkeypatch):
    import train as train_module

    calls = {"n": 0}
    real_clip = torch.nn.utils.clip_grad_norm_

    def exploding_clip(params, max_norm):
        calls["n"] += 1
        norm = real_clip(params, max_norm)
        return norm * float("nan") if calls["n"] > 20 else norm

    monkeypatch.setattr(train_module.torch.nn.utils, "clip_grad_norm_", exploding_clip)
    cfg = compose_config("experiment=ci", "train.checkpoint_every=10", "train.eval_every=1000")
    with pytest.raises(UserError, match=r"non-finite loss \(\d.*\) or gradient norm \(nan\) at step 21; "
                                        r"stopped\. Last good checkpoint: .*step_0000020\.pt"):
        train_module.train(cfg, tmp_path)
    assert load_checkpoint(tmp_path / "checkpoints" / "step_0000020.pt")["train_state"]["progress"]["step"] == 20


@pytest.mark.parametrize("override, message", [
    ("train.lrr=1", "error: Could not override 'train.lrr'; Key 'lrr' not in 'TrainConfig'"),
    ("train.max_steps=abc", "Value 'abc' of type 'str' could not be converted to Integer"),
    ("model=huge", "Could not find 'model/huge'; available: base, small, tiny"),
    ("train.precision=fp8", "error: train.precision must be fp32 or bf16, not 'fp8'"),
    ("model.n_heads=7", "error: invalid config: d_model (256) must be divisible by n_heads (7)"),
    ("train.reserve_minutes=60", "error: train.reserve_minutes must be at least 0 and below train.max_minutes"),
    ("data.dir=/does/not/exist", "error: Multi30k folder /does/not/exist (from data.dir) does not exist"),
    ("train.device=cuda:0", None),  # on a CPU machine: no GPU; on a GPU machine: trains (not run here)
])
def test_bad_input_gives_one_line_error(tmp_path, override, message):
    if override.startswith("train.device") and torch.cuda.is_available():
        pytest.skip("a GPU is present")
    message = message or "error: train.device is cuda but no CUDA GPU is available"
    result = run_train(tmp_path, override, check=False, env={**os.environ, "MULTI30K_DIR": str(tmp_path)})
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


@pytest.mark.skipif(sys.platform != "linux", reason="gloo on CPU is tested on Linux")
def test_distributed_two_processes_keep_equal_parameters(multi30k_dir, tmp_path):
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
           str(ROOT / "train.py"), f"hydra.run.dir={tmp_path}", "experiment=ci", "train.max_steps=40",
           "train.eval_every=20", "train.threads=1"]
    result = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    checksums = {}
    for line in (tmp_path / "train.log").read_text().splitlines():
        if "parameter checksum" in line:
            rank = line.split("rank ")[1].split("/")[0]
            checksums[rank] = line.rsplit(" ", 1)[1]
    assert set(checksums) == {"0", "1"}
    assert checksums["0"] == checksums["1"]
    assert (tmp_path / "results.json").is_file()


def test_time_budget_includes_the_final_evaluation(multi30k_dir, tmp_path, caplog):
    import train as train_module

    caplog.set_level("INFO", logger="train")
    cfg = compose_config("experiment=ci", "train.max_minutes=0.4", "train.reserve_minutes=0.2",
                         "train.max_steps=100000", "train.eval_every=1000", "train.attention_every=0")
    results = train_module.train(cfg, tmp_path)
    assert 0 < results["steps"] < 100000
    assert 0.2 <= results["minutes"] <= 0.25  # training stopped when the reserve began
    assert results["total_minutes"] <= 0.4  # tokenizer, training, validation and test decoding
    assert "(0.2 kept for the final evaluation) reached" in caplog.text


def test_gradient_accumulation_consumes_grad_accum_batches_per_step(multi30k_dir, tmp_path):
    import train as train_module

    cfg = compose_config("experiment=ci", "train.grad_accum=3", "train.max_steps=5", "train.eval_every=1000",
                         "train.attention_every=0", "train.threads=1")
    results = train_module.train(cfg, tmp_path)
    progress = load_checkpoint(tmp_path / "checkpoints" / "step_0000005.pt")["train_state"]["progress"]
    assert results["steps"] == 5
    assert (progress["epoch"], progress["position"]) == (0, 15)
