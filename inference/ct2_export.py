"""A checkpoint as a CTranslate2 model directory, for OpenNMT's inference engine (int8 weights,
fused layers, its own beam search) and every tool built on it.

CTranslate2's Python spec API describes this model exactly, no file format written by hand:
`TransformerSpec` with our norm placement and activation, embeddings scaled by sqrt(d_model),
our positional table (sinusoids, or the learned one) given as its position encodings, W_Q, W_K,
W_V stacked in self-attention as ours are (cross-attention: W_Q apart, W_K and W_V stacked), and
the output projection (tied to the target embedding here; CTranslate2 stores it once). The
vocabularies are the SentencePiece pieces in id order, so ids mean the same on both sides.

The directory holds CTranslate2's model.bin, config.json and vocabularies, and beside them the
SentencePiece model(s) (`spm_joint.model`, or `spm_src.model` and `spm_tgt.model`), the source's
word forms (`src_forms.txt`, data/word_forms.py),
`minitrans.json` (what inference/ct2_translator.py needs: languages, max_len, the special
pieces) and a README.md model card. An Argos Translate package holds this directory whole
(inference/argos_export.py).
"""

import json
import subprocess
from pathlib import Path

import numpy as np
import yaml
from torch import nn

from data import Tokenizer
from data.tokenizer import FORMS_FILE
from model import Transformer
from utils.errors import UserError
from utils.files import atomic_folder

QUANTIZATIONS = ("float32", "int16", "int8")
MANIFEST = "minitrans.json"


def _array(tensor) -> np.ndarray:
    return tensor.detach().cpu().float().numpy()


def _linear(spec, weight, bias=None) -> None:
    spec.weight = _array(weight)
    if bias is not None:
        spec.bias = _array(bias)


def _norm(spec, norm) -> None:
    spec.gamma, spec.beta = _array(norm.weight), _array(norm.bias)


def _attention(spec, attention, residual, cross: bool) -> None:
    """Self-attention: linear[0] is our stacked in_proj; cross-attention: linear[0] is W_Q and
    linear[1] W_K, W_V stacked (CTranslate2 projects the encoder output once per sentence)."""
    if cross:
        d = attention.d_model
        w_q, w_kv = attention.in_proj.weight.split([d, 2 * d])  # (d, d), (2d, d)
        b_q, b_kv = attention.in_proj.bias.split([d, 2 * d])
        _linear(spec.linear[0], w_q, b_q)
        _linear(spec.linear[1], w_kv, b_kv)
    else:
        _linear(spec.linear[0], attention.in_proj.weight, attention.in_proj.bias)  # (3d, d)
    _linear(spec.linear[-1], attention.out_proj.weight, attention.out_proj.bias)
    _norm(spec.layer_norm, residual.norm)


def _feed_forward(spec, layer) -> None:
    first, _, _, second = layer.feed_forward.net  # Linear, activation, Dropout, Linear
    _linear(spec.linear_0, first.weight, first.bias)
    _linear(spec.linear_1, second.weight, second.bias)
    _norm(spec.layer_norm, layer.feed_forward_residual.norm)


def transformer_spec(model: Transformer, tokenizer: Tokenizer, never_specials: bool = False):
    """The CTranslate2 `TransformerSpec` of a model and its tokenizer, weights filled in; with
    `never_specials`, an output layer that cannot produce <pad>, <s> or <unk>."""
    from ctranslate2.specs import common_spec
    from ctranslate2.specs import transformer_spec as ct2

    cfg = model.cfg
    activation = {"relu": common_spec.Activation.RELU, "gelu": common_spec.Activation.GELU}[cfg.activation]
    spec = ct2.TransformerSpec.from_config(
        (cfg.n_encoder_layers, cfg.n_decoder_layers), cfg.n_heads, pre_norm=cfg.norm_first, activation=activation
    )
    norm = next(m for m in model.modules() if isinstance(m, nn.LayerNorm))  # all share one epsilon
    spec.config.layer_norm_epsilon = norm.eps  # torch's 1e-5, not CTranslate2's 1e-6
    positions = _array(model.positional.table)  # (max_len, d_model)

    encoder, decoder = spec.encoder, spec.decoder
    encoder.embeddings[0].weight = _array(model.src_embedding.weight)
    decoder.embeddings.weight = _array(model.tgt_embedding.weight)
    for side in (encoder, decoder):
        side.scale_embeddings = True  # times sqrt(d_model), as TokenEmbedding
        side.position_encodings.encodings = positions
    for layer_spec, layer in zip(encoder.layer, model.encoder.layers):
        _attention(layer_spec.self_attention, layer.self_attn, layer.self_attn_residual, cross=False)
        _feed_forward(layer_spec.ffn, layer)
    for layer_spec, layer in zip(decoder.layer, model.decoder.layers):
        _attention(layer_spec.self_attention, layer.self_attn, layer.self_attn_residual, cross=False)
        _attention(layer_spec.attention, layer.cross_attn, layer.cross_attn_residual, cross=True)
        _feed_forward(layer_spec.ffn, layer)
    if cfg.norm_first:  # post-norm stacks end without one (model/transformer.py final_norm)
        _norm(encoder.layer_norm, model.encoder.final_norm)
        _norm(decoder.layer_norm, model.decoder.final_norm)
    _linear(decoder.projection, model.output_proj.weight)  # (V, d_model), no bias
    if never_specials:
        # a bias that keeps <pad>, <s> and <unk> out of every output, as our search does, for a
        # caller that passes no flags to say so (argostranslate): their logits -1e9, a probability
        # of exactly 0 (the others' renormalized over the rest, a change of ~1e-6 in a trained model)
        bias = np.zeros(tokenizer.tgt_vocab_size, dtype=np.float32)
        bias[[getattr(tokenizer, f"{name}_id") for name in ("pad", "bos", "unk")]] = -1e9
        decoder.projection.bias = bias

    spec.register_source_vocabulary([tokenizer.src.id_to_piece(i) for i in range(tokenizer.src_vocab_size)])
    spec.register_target_vocabulary([tokenizer.tgt.id_to_piece(i) for i in range(tokenizer.tgt_vocab_size)])
    pieces = special_pieces(tokenizer)
    spec.config.unk_token, spec.config.bos_token, spec.config.eos_token = pieces["unk"], pieces["bos"], pieces["eos"]
    spec.config.decoder_start_token = pieces["bos"]  # our decoder reads <s> first; the source has no specials
    return spec


def special_pieces(tokenizer: Tokenizer) -> dict[str, str]:
    return {name: tokenizer.tgt.id_to_piece(getattr(tokenizer, f"{name}_id")) for name in ("pad", "unk", "bos", "eos")}


def _commit() -> str:
    """The minitrans commit doing the export ("unknown" outside a git checkout)."""
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            cwd=Path(__file__).resolve().parent,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return done.stdout.strip() if done.returncode == 0 else "unknown"


def _data_description(meta: dict) -> tuple[str, str]:
    """(the dataset a model was trained and tested on, its language pair), from the training config
    a checkpoint carries."""
    data = (yaml.safe_load(meta.get("config") or "") or {}).get("data", {})
    source = data.get("source", "multi30k")
    if source == "multi30k":
        dataset = "Multi30k task 1"
    elif source == "hf":  # data.train is a split's name there: the dataset is data.name
        dataset = f"Hugging Face dataset {data.get('name')}" + (f" ({data['subset']})" if data.get("subset") else "")
    else:
        dataset = f"{source} corpus {data.get('train')}"
    return dataset, f"{data.get('src_lang', '?')}→{data.get('tgt_lang', '?')}"


def _score(value) -> str:
    return f"{value:.2f}" if isinstance(value, (int, float)) else "–"  # a run from before a metric existed


def model_card(manifest: dict, usage: str) -> str:
    """The README of an export: what the model is, its scores, the commit and command that made
    it, then `usage` (how to run it)."""
    scores = (
        "\n".join(
            f"| {manifest['dataset']}, split {split} | {_score(s.get('bleu'))} | "
            f"{_score(s.get('bleu_moses_lowercase'))} |"
            for split, s in manifest["test"].items()
        )
        or "| (no test scores for this checkpoint: a run scores its best.pt) | | |"
    )
    return f"""# minitrans {manifest["src_lang"]}→{manifest["tgt_lang"]}

A minitrans Transformer ({manifest["parameters"]:,} parameters; {manifest["shape"]}) exported to
CTranslate2, weights in {manifest["quantization"]}. Trained on: {manifest["dataset"]}, {manifest["pair"]}.
Exported checkpoint: step {manifest["step"]}, validation BLEU {_score(manifest["val_bleu"])}.

| test set | sacreBLEU (cased) | BLEU, lowercased Moses tokens |
|---|---|---|
{scores}

Exported by minitrans at commit {manifest["commit"]}: `{manifest["command"]}`

{usage}"""


def _usage(manifest: dict) -> str:
    return f"""    python translate.py -c {manifest["folder_name"]} --engine ctranslate2 "A sentence."

or with CTranslate2 and SentencePiece alone: encode the source with `{manifest["spm"][0]}` into
pieces (no <s> or </s>), `ctranslate2.Translator(FOLDER).translate_batch(pieces, beam_size=5,
disable_unk=True)`, decode the output pieces with `{manifest["spm"][-1]}`.
"""


def export_ctranslate2(
    model: Transformer,
    tokenizer: Tokenizer,
    meta: dict,
    out_dir: Path,
    quantization: str,
    force: bool = False,
    results: dict | None = None,
    command: str = "",
    never_specials: bool = False,
) -> Path:
    """Write the model as a CTranslate2 directory at `out_dir`, whole or not at all; `results`
    (a run's results.json) only if they are this checkpoint's scores; `never_specials`: see
    `transformer_spec`.

    An existing `out_dir` is replaced only with `force` and only if it is an earlier export
    (it holds minitrans.json): a folder of anything else is never deleted."""
    try:
        from ctranslate2.converters import Converter
    except ImportError:
        raise UserError("exporting needs the ctranslate2 package: pip install ctranslate2") from None
    if quantization not in QUANTIZATIONS:
        raise UserError(f"unknown quantization {quantization!r}: choose {', '.join(QUANTIZATIONS)}")
    out_dir = Path(out_dir)
    if out_dir.exists():
        if not (out_dir / MANIFEST).is_file():
            raise UserError(f"{out_dir} exists and is not a minitrans export; not replacing it")
        if not force:
            raise UserError(f"{out_dir} is an earlier export; give --force to replace it")

    class MinitransConverter(Converter):  # CTranslate2's own validate, quantize, save
        def _load(self):
            return transformer_spec(model, tokenizer, never_specials)

    dataset, pair = _data_description(meta)
    try:
        with atomic_folder(out_dir) as staging:  # an earlier export is swapped out only once the new one is whole
            MinitransConverter().convert(str(staging), quantization=quantization, force=True)
            tokenizer.save(staging)
            cfg = model.cfg
            manifest = {
                "format": "minitrans-ctranslate2",
                "version": 1,
                "src_lang": meta.get("src_lang", "?"),
                "tgt_lang": meta.get("tgt_lang", "?"),
                "max_len": cfg.max_len,
                "special_pieces": special_pieces(tokenizer),
                "spm": tokenizer.model_files,
                "src_forms": FORMS_FILE if tokenizer.src_forms else None,
                "quantization": quantization,
                "parameters": model.num_parameters(),
                "shape": f"{cfg.n_encoder_layers}+{cfg.n_decoder_layers} layers, d_model {cfg.d_model}, "
                f"d_ff {cfg.d_ff}, {cfg.n_heads} heads",
                "dataset": dataset,
                "pair": pair,
                "step": meta.get("step", "?"),
                "val_bleu": meta.get("val_bleu", "?"),
                "test": (results or {}).get("test", {}),
                "commit": _commit(),
                "command": command,
                "folder_name": out_dir.name,
            }
            (staging / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
            (staging / "README.md").write_text(model_card(manifest, _usage(manifest)), encoding="utf-8")
    except OSError as e:  # a parent that is a file, no permission, a full disk
        raise UserError(f"cannot write {out_dir}: {e.strerror or e}") from None
    return out_dir
