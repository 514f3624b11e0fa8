"""int8 weights for our own decoder on CPU: PyTorch's dynamic quantization of the linear layers.

Dynamic: each linear layer keeps its weight as int8 (one scale per matrix) and quantizes its
input per batch as it runs, so the matmuls run in int8 with no calibration data. Quantized are
the feed-forward layers, every W_O, self-attention's stacked W_Q, W_K, W_V, and the output
projection (the largest matrix, vocabulary x d_model). Cross-attention's in_proj stays float:
it applies W_Q and the stacked W_K, W_V apart, as slices of one weight (model/attention.py),
which a packed int8 weight does not offer. Embeddings and layer norms stay float.

One difference from float: an input is quantized with one scale for the whole batch, so unlike
in float32 a sentence's translation can change (slightly) with the sentences batched with it.
"""

import copy
import warnings

import torch
from torch import nn

from model import Transformer


def quantize_int8(model: Transformer) -> Transformer:
    """An int8 copy of `model` for CPU inference (the original is left as it is)."""
    names = {
        name
        for name, module in model.named_modules()
        if isinstance(module, nn.Linear) and not name.endswith("cross_attn.in_proj")
    }
    with warnings.catch_warnings():  # torch.ao.quantization is deprecated in favour of torchao, not a dependency
        warnings.simplefilter("ignore")
        return torch.ao.quantization.quantize_dynamic(copy.deepcopy(model).cpu().eval(), names, dtype=torch.qint8)
