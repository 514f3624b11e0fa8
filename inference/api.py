"""The Python API: a trained model, from a checkpoint or an exported CTranslate2 directory, ready
to translate in a few lines, without the command line.

    from inference import load_translator

    translator = load_translator("runs/RUN")                   # a run folder or a checkpoint file
    translator.translate(["Ein Hund rennt.", "Zwei Kinder spielen."])  # ["A dog is running.", ...]
    translator.translate_nbest(["Ein Hund rennt."], 3)         # [[(text, score), ...]], best first
    translator.attention(["Ein Hund rennt."])[0].maps["cross"]  # per layer: (heads, target, source)
    load_translator("exports/de-en").translate(["Ein Hund rennt."])  # through CTranslate2
    load_translator("exports/minitrans-de_en-1_0.argosmodel")  # an Argos package: its CTranslate2 model

Both engines take the search settings of inference/search_config.py (beam_size, length_penalty,
max_len_ratio, max_len_extra, batch_size) and translate alike (inference/contract.py): blank in,
empty out; one line per translation.
"""

from pathlib import Path

import torch

from inference.argos_package import is_package
from inference.checkpoint import load_for_inference
from inference.contract import Translating
from inference.ct2_translator import CTranslate2Translator, is_export
from inference.quantize import quantize_int8
from inference.search_config import SearchConfig
from inference.translator import Translator
from inference.weight_layout import lay_out_for_decoding
from utils.device import cpu_description, native_bf16, usable_cores
from utils.errors import UserError

ENGINES = ("auto", "minitrans", "ctranslate2")


def load_translator(
    path: str | Path,
    engine: str = "auto",
    device: str | torch.device = "cpu",
    compute_type: str = "default",
    threads: int = 0,
    threads_per_batch: int = 1,
    whole_lines: bool = False,
    **search,
) -> Translating:
    """A translator for `path`: with engine "minitrans" this project's PyTorch decoder on a
    checkpoint (file, or run folder: its best.pt); with "ctranslate2" CTranslate2 on a directory
    written by export.py; "auto" picks by what `path` is. `compute_type` "int8" gives either
    engine int8 weights (ours: inference/quantize.py; CTranslate2 quantizes a float32 export as it
    loads); "bfloat16" runs ours under bf16 autocast where the hardware has bf16; "default" the
    weights as saved. `threads`: the CPU cores to use (0: all this process may use), in groups
    of `threads_per_batch` that each decode whole batches when a call has several (either engine:
    ours in worker processes, which hold the model as it is at their first use; 1 a batch a core,
    measured fastest for this project's models in bench/decode.py); one batch alone (a typed
    sentence) is decoded on all of them. More threads than this process may use are refused.
    Text is taken as people type it (inference/contract.py's LineTranslator): a line of several
    sentences is translated sentence by sentence and joined back with its own spacing, a
    sentence in one case alone is recased (where the source model does not fold case itself), its
    longer numbers are copied as written, a sentence with nothing to translate is its own
    translation, and a translation that loops where its sentence does not is searched again
    without the loop; `whole_lines` gives the model each line whole and as it is instead, as it
    was trained (one caption a line; translate.py's --whole-lines).
    The translator leaves this process's torch threads as they were; its worker processes end
    with its `close()` or `with` block (or when it is garbage-collected). `search`:
    SearchConfig's settings."""
    if engine not in ENGINES:
        raise UserError(f"unknown engine {engine!r}: choose {', '.join(ENGINES)}")
    if search.get("beam_size") == 1 and "length_penalty" in search:
        raise UserError(
            "the length penalty is read by beam search only: greedy search (beam size 1) ranks nothing; "
            "give a beam size above 1"
        )
    cores = usable_cores()
    if threads > cores:
        raise UserError(f"{threads} threads asked for, but this process may use {cores} core(s): give at most {cores}")
    cores = threads or cores
    try:
        settings = SearchConfig(**search)
    except TypeError as e:  # a setting SearchConfig does not have
        raise UserError(f"unknown search setting: {e}") from None
    package = is_package(path)
    exported = package or is_export(path)
    if engine == "ctranslate2" or (engine == "auto" and exported):
        device = torch.device(device)  # CTranslate2 names the kind ("cpu", "cuda") and the index apart
        exported_translator = CTranslate2Translator(
            path,
            settings,
            device=device.type,
            device_index=device.index or 0,
            compute_type=compute_type,
            threads=cores,
            threads_per_batch=threads_per_batch,
        )
        if not whole_lines:
            exported_translator.split_lang = exported_translator.manifest.get("src_lang")
        return exported_translator
    if exported:
        what = "an Argos package" if package else "a CTranslate2 export"
        raise UserError(f"{path} is {what}: translate it with the ctranslate2 engine")
    if compute_type not in ("default", "float32", "int8", "bfloat16"):
        raise UserError(f"the minitrans engine computes in float32, bfloat16 or int8, not {compute_type!r}")
    device = torch.device(device)
    if compute_type == "int8" and device.type != "cpu":
        raise UserError("int8 (dynamic quantization) runs on the CPU only: give --device cpu")
    if compute_type == "bfloat16" and not native_bf16(device):
        raise UserError(
            f"bfloat16 is not native on this {'GPU' if device.type == 'cuda' else 'CPU'} "
            f"({cpu_description() if device.type == 'cpu' else device}): emulated, it would be many "
            "times slower than float32; use float32 or int8"
        )
    model, tokenizer, meta = load_for_inference(path, device)
    if compute_type == "int8":
        model = quantize_int8(model)
    elif device.type == "cpu" and compute_type in ("default", "float32"):  # where it was measured
        lay_out_for_decoding(model)
    per_batch = min(threads_per_batch, cores)
    workers = cores // per_batch if device.type == "cpu" else 1  # a GPU decodes one batch at a time
    translator = Translator(
        model,
        tokenizer,
        settings,
        bf16=compute_type == "bfloat16",
        workers=workers,
        threads_per_worker=per_batch,
        threads=cores,  # one batch alone (a typed sentence) is decoded on all of them
    )
    if not whole_lines:
        translator.split_lang = meta.get("src_lang")
    return translator
