"""Device and precision choice (utils/device.py), with the capability checks mocked."""

import pytest
import torch

from utils import device as device_module
from utils.device import choose_precision, pick_device
from utils.errors import UserError

CPU = torch.device("cpu")


def cpu_with(monkeypatch, avx512_bf16: bool, amx: bool) -> None:
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: avx512_bf16)
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: amx)


@pytest.mark.parametrize(
    "avx512_bf16, amx, expected", [(False, False, "fp32"), (True, False, "bf16"), (False, True, "bf16")]
)
def test_auto_picks_bf16_only_where_it_is_native(monkeypatch, avx512_bf16, amx, expected):
    cpu_with(monkeypatch, avx512_bf16, amx)
    precision, why, warning = choose_precision("auto", CPU)
    assert precision == expected and not warning
    assert why.startswith(f"auto: {expected}")
    assert "CPU (" in why  # names what it found


def test_forcing_bf16_without_native_support_warns_but_obeys(monkeypatch):
    cpu_with(monkeypatch, False, False)
    precision, why, warning = choose_precision("bf16", CPU)
    assert precision == "bf16" and warning
    assert "no native bf16" in why and "many times slower" in why and "\n" not in why
    cpu_with(monkeypatch, True, False)
    assert choose_precision("bf16", CPU)[2] is False
    assert choose_precision("fp32", CPU)[:1] == ("fp32",)


def test_cuda_follows_the_gpus_bf16_support(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda: False)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "Old GPU")
    assert choose_precision("auto", torch.device("cuda", 0))[0] == "fp32"
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda: True)
    assert choose_precision("auto", torch.device("cuda", 0))[0] == "bf16"


def test_pick_device_errors_name_the_option(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert pick_device("auto", "--device") == CPU
    with pytest.raises(UserError, match="^--device 'gpu0' is not a device"):
        pick_device("gpu0", "--device")
    with pytest.raises(UserError, match="^train.device is cuda:1 but no CUDA GPU is available$"):
        pick_device("cuda:1", "train.device")


@pytest.mark.parametrize(
    "capability, bf16, amx, expected",
    [
        ("AVX2", False, False, "AVX2"),  # the Zen 3: bf16 emulated
        ("AVX512", True, False, "AVX512, AVX512-BF16"),  # the Zen 5
        ("AVX512", True, True, "AVX512, AVX512-BF16, AMX"),
    ],
)
def test_cpu_description_names_what_decides_precision(monkeypatch, capability, bf16, amx, expected):
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: capability)
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: bf16)
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: amx)
    assert device_module.cpu_description() == expected
