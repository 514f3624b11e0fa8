import os

import pytest
import torch

# No test may reach for the Hugging Face hub: there is no network here or in CI.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
torch.set_num_threads(min(2, torch.get_num_threads()))


@pytest.fixture
def tiny_config():
    from model import TransformerConfig

    return TransformerConfig(src_vocab_size=50, tgt_vocab_size=50, d_model=32, n_heads=4,
                             n_encoder_layers=2, n_decoder_layers=2, d_ff=64, max_len=64)
