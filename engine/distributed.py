"""Rank bookkeeping for data-parallel training under torchrun (gloo on CPU, nccl on CUDA)."""
import os

import torch
import torch.distributed as dist


class Distributed:
    """A single process is world size 1, and every call is then a no-op."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.world_size = int(os.environ.get("WORLD_SIZE", "1"))
        self.rank = 0
        if self.world_size > 1:
            dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
            self.rank = dist.get_rank()

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def barrier(self) -> None:
        if self.world_size > 1:
            dist.barrier()

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
