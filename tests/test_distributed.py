"""Data-parallel training under torchrun (training/distributed.py), gloo on the CPU.

On a GPU machine the same code runs with nccl; these tests check the logic on the CPU."""

import os
import socket
import subprocess
import sys
import time
from contextlib import nullcontext
from pathlib import Path

import pytest
import torch
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel

from data import collate, prepare_data
from helpers import (
    ROOT,
    TOY_DATA,
    assert_same_training,
    compose_config,
    random_pairs,
    run_train,
    start_script,
    stop_when,
    tiny_model,
)
from inference.checkpoint import load_checkpoint
from training.config import to_run_config
from training.distributed import Distributed
from training.step import train_step

# made once, its module-scoped fixtures: its tests stay on one worker (`make test`: xdist, --dist loadgroup)
pytestmark = [
    pytest.mark.skipif(sys.platform != "linux", reason="gloo on CPU is tested on Linux"),
    pytest.mark.xdist_group("test_distributed"),
]

COMMON = [
    "experiment=ci",
    *TOY_DATA,
    "train.max_steps=40",
    "train.eval_every=1000",
    "train.checkpoint_every=20",
    "train.keep_last=5",
    "train.threads=1",
    "train.max_minutes=null",
    # what these runs check is training and resuming: the maps and head importance of a
    # two-process run are the documented torchrun command's (test_documented_commands.py)
    "train.attention_every=0",
    "train.head_importance=false",
]


def torchrun(run_dir, *overrides: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node=2",
        str(ROOT / "train.py"),
        f"hydra.run.dir={run_dir}",
        *overrides,
    ]


@pytest.fixture(scope="module")
def two_process_run(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("ddp")
    result = subprocess.run(torchrun(run_dir, *COMMON), cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    return run_dir


def test_two_processes_keep_equal_parameters_with_their_own_dropout(two_process_run):
    checksums = {}
    for line in (two_process_run / "train.log").read_text().splitlines():
        if "parameter checksum" in line:
            rank = line.split("rank ")[1].split("/")[0]
            checksums[rank] = line.rsplit(" ", 1)[1]
    assert set(checksums) == {"0", "1"}
    assert checksums["0"] == checksums["1"]
    assert (two_process_run / "results.json").is_file()
    rng = load_checkpoint(two_process_run / "checkpoints" / "step_0000040.pt")["train_state"]["rng"]
    assert len(rng) == 2 and not torch.equal(rng[0]["torch"], rng[1]["torch"]), "ranks drew the same masks"


def test_two_process_resume_after_sigkill_matches_uninterrupted_run(two_process_run, tmp_path):
    killed = tmp_path / "killed"
    process = start_script(
        torchrun(killed, *COMMON), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    stop_when(
        process, (killed / "checkpoints" / "step_0000020.pt").exists, "its first checkpoint", group=True
    )  # torchrun and both workers
    assert not (killed / "checkpoints" / "step_0000040.pt").exists(), "killed too late to test resuming"

    result = subprocess.run(torchrun(killed, *COMMON), cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "resumed from" in (killed / "train.log").read_text()
    # weights, progress, schedule and the optimizer's moments, as the README says
    assert_same_training(
        two_process_run / "checkpoints" / "step_0000040.pt", killed / "checkpoints" / "step_0000040.pt"
    )


def test_resuming_mid_epoch_with_another_number_of_processes_is_refused(two_process_run, tmp_path):
    """The position counts each rank's batches of a list shared out among two: one process
    would take other batches from it, training some twice and skipping others."""
    result = run_train(
        tmp_path, *COMMON, f"train.resume={two_process_run / 'checkpoints' / 'step_0000020.pt'}", check=False
    )
    assert result.returncode == 1 and "Traceback" not in result.stderr
    progress = load_checkpoint(two_process_run / "checkpoints" / "step_0000020.pt")["train_state"]["progress"]
    assert progress["position"] > 0, "step 20 is not mid-epoch: nothing to test"
    stopped = f"stopped {progress['position']} batches into epoch {progress['epoch']}"
    assert f"{stopped} with 2 process(es), counted per process; resume it with 2" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


SHARDS = (slice(0, 1), slice(1, 7))  # rank 0: one sentence, rank 1: six


def one_ddp_step(rank: int, port: int, out: str) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), WORLD_SIZE="2", RANK=str(rank))
    torch.set_num_threads(1)
    ddp = Distributed(torch.device("cpu"))
    model = tiny_model(src_vocab_size=40, tgt_vocab_size=40, dropout=0.0, attention_dropout=0.0)
    batch = collate(random_pairs(7)[SHARDS[rank]])
    sgd = torch.optim.SGD(model.parameters(), lr=1.0)
    train_step(
        DistributedDataParallel(model), sgd, 0.1, [batch], ddp.token_normalizer(batch.n_tgt_tokens), nullcontext, None
    )
    if rank == 0:
        torch.save(model.state_dict(), out)
    ddp.close()


def test_uneven_shards_give_the_gradient_of_the_whole_step(tmp_path):
    """Two ranks with 1 and 6 sentences update the weights as one process with all 7 does."""
    out = tmp_path / "ddp.pt"
    mp.spawn(one_ddp_step, args=(free_port(), str(out)), nprocs=2)
    single = tiny_model(src_vocab_size=40, tgt_vocab_size=40, dropout=0.0, attention_dropout=0.0)
    batches = [collate(random_pairs(7)[shard]) for shard in SHARDS]
    sgd = torch.optim.SGD(single.parameters(), lr=1.0)
    train_step(single, sgd, 0.1, batches, sum(b.n_tgt_tokens for b in batches), nullcontext, None)
    ddp_weights = torch.load(out)
    for name, value in single.state_dict().items():
        torch.testing.assert_close(ddp_weights[name], value, rtol=1e-5, atol=1e-6)


def test_collective_tensors_live_on_the_runs_device(monkeypatch):
    """nccl reduces only GPU tensors: every collective must build its tensor on the run's device.
    Checked with a stand-in device and recording collectives (no GPU needed)."""
    import training.distributed

    seen = []

    class Recorded(Exception):
        pass

    def record(tensor, *args, **kwargs):
        seen.append(tensor.device)
        raise Recorded  # the stand-in device cannot compute; the placement is what matters

    monkeypatch.setattr(training.distributed.dist, "all_reduce", record)
    monkeypatch.setattr(training.distributed.dist, "broadcast", record)
    ddp = Distributed.__new__(Distributed)
    ddp.device, ddp.world_size, ddp.rank = torch.device("meta"), 2, 0
    for collective in (
        lambda: ddp.any(True),
        lambda: ddp.sum(3.0),
        lambda: ddp.broadcast(1.0),
        lambda: ddp.token_normalizer(5),
    ):
        with pytest.raises(Recorded):
            collective()
    assert seen == [torch.device("meta")] * 4


def slow_report_run(rank: int, port: int, run_dir: str, cache_dir: str) -> None:
    """A rank of a two-process ci run whose final report (rank 0's alone) does not begin before
    rank 1 has left training: were rank 1 waiting in a collective for rank 0, it never would,
    and the report gives up (the bound is only liveness: rank 1 leaves in seconds)."""
    import training.run
    import training.trainer

    os.environ.update(
        MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), WORLD_SIZE="2", RANK=str(rank), LOCAL_RANK=str(rank)
    )
    left = Path(run_dir) / "rank_1_left"

    def report_after_rank_1_left(trainer) -> dict:
        for _ in range(600):
            if left.exists():
                return {}
            time.sleep(0.5)
        raise RuntimeError("rank 1 did not leave while rank 0 wrote the report: it waits in a collective")

    training.trainer.Trainer.finish = report_after_rank_1_left
    training.run.train(compose_config(*COMMON, "train.max_steps=4", f"data.cache_dir={cache_dir}"), Path(run_dir))
    if rank == 1:
        left.touch()


def test_other_ranks_do_not_wait_in_a_collective_while_rank_0_writes_the_report(tmp_path):
    cache = tmp_path / "cache"
    prepare_data(to_run_config(compose_config(*COMMON, f"data.cache_dir={cache}")).data)  # ready: no wait on it
    mp.spawn(slow_report_run, args=(free_port(), str(tmp_path), str(cache)), nprocs=2)  # raises if a rank failed
    assert load_checkpoint(tmp_path / "checkpoints" / "step_0000004.pt")["train_state"]["progress"]["step"] == 4
