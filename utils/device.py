"""Which device a run or a translation uses, and how many CPU cores it may."""

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import torch

from utils.errors import UserError


def pick_device(name: str, option: str, local_rank: int = 0) -> torch.device:
    """`auto` (CUDA if available), `cpu`, `cuda` or `cuda:N`; a bare `cuda` under torchrun
    means this process's GPU (`LOCAL_RANK`). `option` names the setting in error messages."""
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    try:
        device = torch.device(name)
    except RuntimeError:
        raise UserError(f"{option} {name!r} is not a device (try auto, cpu, cuda)") from None
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise UserError(f"{option} is {name} but no CUDA GPU is available")
        if device.index is None:
            device = torch.device("cuda", local_rank)
    return device


def usable_cores() -> int:
    """The CPU cores this process may run on: its affinity mask (`taskset`, a container's cpuset,
    a pytest-xdist worker's core), not every core of the machine."""
    if hasattr(os, "sched_getaffinity"):  # Linux
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


@contextmanager
def torch_threads(threads: int | None) -> Iterator[None]:
    """torch's intra-op threads set to `threads` inside the block (None: left as they are), and
    after it set back to what they were, whatever changed them inside (CTranslate2 sets the
    OpenMP threads torch shares as it loads a model): a library call leaves its host process's
    setting as it found it."""
    before = torch.get_num_threads()
    if threads is not None and threads != before:
        torch.set_num_threads(threads)
    try:
        yield
    finally:
        if torch.get_num_threads() != before:
            torch.set_num_threads(before)


def cpuinfo(field: str) -> str:
    """A field of the first CPU in Linux's /proc/cpuinfo ('model name': 'AMD EPYC'; 'vendor_id':
    'GenuineIntel', 'AuthenticAMD'); '' where there is none (another system)."""
    path = Path("/proc/cpuinfo")
    for line in path.read_text().splitlines() if path.exists() else []:
        name, _, value = line.partition(":")
        if name.strip() == field:
            return value.strip()
    return ""


def cpu_description() -> str:
    """The CPU's vector capability as torch sees it, e.g. 'AVX2' or 'AVX512, AVX512-BF16'."""
    features = [torch.backends.cpu.get_cpu_capability()]
    features += [
        name
        for name, present in (
            ("AVX512-BF16", torch.cpu._is_avx512_bf16_supported()),
            ("AMX", torch.cpu._is_amx_tile_supported()),
        )
        if present
    ]
    return ", ".join(features)


def native_bf16(device: torch.device) -> bool:
    """Whether bf16 matmuls run in hardware: a CUDA GPU that supports bf16, or a CPU with
    AVX512-BF16 or AMX. Elsewhere torch emulates bf16 on the CPU, tens of times slower than fp32."""
    if device.type == "cuda":
        return torch.cuda.is_bf16_supported()
    return torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported()


def choose_precision(requested: str, device: torch.device) -> tuple[str, str, bool]:
    """(precision to train in, why, whether `why` is a warning). `auto` takes bf16 autocast
    where it is native, else fp32; bf16 is honoured anywhere, with a warning where emulated."""
    where = f"CUDA ({torch.cuda.get_device_name(device)})" if device.type == "cuda" else f"CPU ({cpu_description()})"
    native = native_bf16(device)
    if requested == "auto":
        if native:
            return "bf16", f"auto: bf16 autocast, native on this {where}", False
        return "fp32", f"auto: fp32, since bf16 is not native on this {where}", False
    if requested == "bf16" and not native:
        return (
            "bf16",
            (
                f"bf16 was asked for, but this {where} has no native bf16: autocast will "
                "emulate it and train many times slower than fp32 (train.precision=auto picks fp32)"
            ),
            True,
        )
    return requested, f"{requested}, as configured, on this {where}", False
