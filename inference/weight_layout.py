"""The linear layers' weights laid out for decoding on the CPU: the same numbers, faster products.

Which layout is faster depends on the CPU's matrix library, so the choice follows the CPU's maker,
as CTranslate2 chooses its own (Intel's MKL on Intel CPUs, oneDNN elsewhere):

- On Intel CPUs torch multiplies with MKL. nn.Linear keeps W as (out, in) and computes x W^T; a
  decoding step multiplies a few rows (a batch's hypotheses, fewer as its sentences finish) by
  every matrix, and there MKL runs faster given W^T as it lies in memory, (in, out) row after row,
  than given W to read across: on an Intel Xeon with AMX (fp32, one thread), 20 rows through the
  output layer (256 -> 8,000) took 0.66 ms against 0.91, 160 rows 3.47 against 3.65, and 20 rows
  through a feed-forward layer's 1,024 -> 256 65 us against 99. Each weight stays an (out, in)
  tensor and only its strides change, so every module computes as before (to the last bit but
  where another kernel rounds otherwise). The tied embedding, which is the output layer's weight
  (and with a joint vocabulary the source's embedding too), then gathers its rows with a stride:
  the decoder's few a step, the encoder's once a batch; the measured gain counts them.
- On AMD's CPUs MKL runs a slower path, and the output layer, the step's largest product
  (d_model -> the vocabulary), goes through oneDNN instead, on a copy of its weight that oneDNN has
  packed for it once: on an AMD EPYC Zen 4 (fp32, one thread, 128 -> 8,000) 1.33 ms against 2.59
  for 64 rows, 3.59 against 4.24 for 160, and the same logits to the last bit. The other layers'
  products are small, and neither library nor layout was faster for them there (docs/speed.md).
  Where the maker is another or unknown (ARM, a system without /proc/cpuinfo), nothing was measured,
  and the weights keep the layout they were saved in.

load_translator applies it on the CPU in float32; the training loop's translations (and
load_for_inference's model) keep the layout the weights were saved in.
"""

import torch
from torch import Tensor, nn

from utils.device import cpuinfo


class PackedLinear(nn.Linear):
    """An nn.Linear whose forward multiplies by a copy of its weight packed by oneDNN (`packed`);
    its parameters, state_dict and every other use of its weight stay as they were."""

    packed: Tensor
    packed_from: tuple[int, int]  # the weight's memory and version counter when it was packed

    def forward(self, x: Tensor) -> Tensor:
        # the packed copy serves float32 on the CPU, and only while the weight is the tensor it was
        # packed from, unchanged by in-place operations (a write through .data is not seen)
        weight = self.weight
        if (
            x.device.type == "cpu"
            and x.dtype == weight.dtype == torch.float32
            and (weight.data_ptr(), weight._version) == self.packed_from
        ):
            return torch.ops.mkldnn._linear_pointwise(x, self.packed, self.bias, "none", [], "")
        return super().forward(x)


def lay_out_for_decoding(model: nn.Module) -> None:
    """Lay out `model`'s linear layers for decoding on this CPU, in place: W^T in memory for
    Intel's MKL, or on AMD's the output layer (`model.output_proj`) packed for oneDNN. For a model that only
    decodes: an optimizer's state would no longer match its parameters' layout, and a model with a
    packed copy cannot be deep-copied or pickled (the copy is oneDNN's, without storage)."""
    vendor = cpuinfo("vendor_id")
    with torch.no_grad():
        # an AMD CPU (or Hygon's, of the same design), and a torch built with oneDNN
        if vendor in ("AuthenticAMD", "HygonGenuine") and torch.backends.mkldnn.is_available():
            output = model.output_proj
            assert isinstance(output, nn.Linear)
            output.__class__ = PackedLinear
            assert isinstance(output, PackedLinear)
            # 64 rows: the packing oneDNN picks for a batch of that size serves 5 to 320 rows alike
            output.packed = torch.ops.mkldnn._reorder_linear_weight(output.weight.detach(), 64)
            output.packed_from = (output.weight.data_ptr(), output.weight._version)
            return
        if vendor != "GenuineIntel":  # another maker: nothing measured, the weights as saved
            return
        for module in model.modules():
            if isinstance(module, nn.Linear) and module.weight.is_contiguous():  # a tied weight once
                module.weight.data = module.weight.data.t().contiguous().t()  # (out, in), strides (1, out)
