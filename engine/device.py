"""Which device a run or a translation uses."""
import torch

from data import UserError


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
