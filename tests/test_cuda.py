"""On a CUDA GPU: validation's per-head statistics, and a whole training run in bf16.

Skipped where there is no GPU (CI has none); run on a GPU machine: `make test` there, or
`.venv/bin/python -m pytest tests/test_cuda.py`."""

import json

import pytest
import torch

from analysis.head_stats import HeadStatistics
from data import collate
from helpers import TOY_DATA, run_train
from model import Transformer, TransformerConfig

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def test_head_statistics_of_gpu_attention_equal_the_cpus(toy):
    tokenizer = toy.tokenizer
    torch.manual_seed(0)
    model = Transformer(
        TransformerConfig(
            src_vocab_size=tokenizer.src_vocab_size,
            tgt_vocab_size=tokenizer.tgt_vocab_size,
            d_model=32,
            n_heads=4,
            n_encoder_layers=2,
            n_decoder_layers=2,
            d_ff=64,
        )
    ).eval()
    batch = collate([toy.tokens["val"][i] for i in range(16)])
    results = []
    for device in ("cpu", "cuda"):
        stats = HeadStatistics(tokenizer)
        on_device = batch.to(torch.device(device))
        with torch.no_grad():
            attention = model.to(device)(on_device.src, on_device.tgt_in, return_attention=True).attention
        stats.add(on_device, attention)
        results.append(stats.result())
    cpu, gpu = results
    for kind in cpu:
        for name in cpu[kind]:
            assert gpu[kind][name].device.type == "cpu"
            torch.testing.assert_close(gpu[kind][name], cpu[kind][name], atol=1e-4, rtol=1e-4)


def test_ci_experiment_trains_on_the_gpu_in_bf16(tmp_path):
    run_train(tmp_path, "experiment=ci", *TOY_DATA, "train.device=cuda", fresh=True)  # CUDA never forked
    log = (tmp_path / "train.log").read_text()
    assert "auto: bf16 autocast, native on this CUDA" in log
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["steps"] == 240 and results["test"]["test_2016_flickr"]["bleu"] > 1.0
