"""Rank bookkeeping for data-parallel training under torchrun (gloo on CPU, nccl on CUDA)."""

import os
from datetime import timedelta

import torch
import torch.distributed as dist


class Distributed:
    """A single process is world size 1, and every call is then a no-op.

    `timeout`: how long a rank waits in a collective for the others. Rank 0 validates, logs
    attention and writes the final report alone, and a collective of the other ranks must not
    give up meanwhile (the default is 30 minutes for gloo, 10 for nccl)."""

    def __init__(self, device: torch.device, timeout: timedelta | None = None) -> None:
        self.device = device
        self.world_size = int(os.environ.get("WORLD_SIZE", "1"))
        self.rank = 0
        if self.world_size > 1:
            if device.type == "cuda":
                torch.cuda.set_device(device)  # nccl's object collectives use the current device
            dist.init_process_group("nccl" if device.type == "cuda" else "gloo", timeout=timeout)
            self.rank = dist.get_rank()

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def barrier(self) -> None:
        if self.world_size > 1:
            dist.barrier()

    def rank_seed(self, seed: int) -> int:
        """The seed of this rank's random stream (dropout): its own, from (seed, rank)."""
        return seed + 1_000_003 * self.rank

    def any(self, flag: bool) -> bool:
        """True on every rank if `flag` is true on some rank (so that all stop together)."""
        if self.world_size == 1:
            return flag
        t = torch.tensor([float(flag)], device=self.device)  # nccl reduces only tensors on the GPU
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return bool(t.item())

    def sum(self, value: float) -> float:
        """The sum of `value` over all ranks, on every rank."""
        if self.world_size == 1:
            return value
        t = torch.tensor([value], dtype=torch.float64, device=self.device)
        dist.all_reduce(t, op=dist.ReduceOp.SUM)
        return t.item()

    def token_normalizer(self, n_tokens: int) -> float:
        """What this rank divides its summed loss by: the step's target tokens on all ranks over
        the world size. DDP averages gradients over ranks, so the result is the gradient of the
        mean loss per token of the whole step, however unevenly the tokens fell on the ranks."""
        return self.sum(n_tokens) / self.world_size

    def gather(self, obj: object) -> list:
        """Every rank's `obj` in rank order (on every rank)."""
        if self.world_size == 1:
            return [obj]
        out: list = [None] * self.world_size
        dist.all_gather_object(out, obj)
        return out

    def broadcast(self, value: float) -> float:
        """Rank 0's `value`, on every rank."""
        if self.world_size == 1:
            return value
        t = torch.tensor([value], dtype=torch.float64, device=self.device)
        dist.broadcast(t, src=0)
        return t.item()

    def close(self) -> None:
        if self.world_size > 1:
            dist.destroy_process_group()
