"""Self-contained checkpoints: weights, model config, tokenizer and (optionally) train state.

A checkpoint alone is enough to translate: `load_for_inference` rebuilds the model and
tokenizer from it. Files are written atomically and read with `weights_only=True`, which
unpickles tensors and plain containers only, never arbitrary objects.
"""

from pathlib import Path
from typing import TYPE_CHECKING

import torch

from data import Tokenizer
from model import Transformer, TransformerConfig
from utils.checkpoint_files import BEST, checkpoint_folder, latest_step_checkpoint
from utils.errors import UserError
from utils.files import atomic_file

if TYPE_CHECKING:
    from datasets import DatasetDict

FORMAT = "minitrans"
VERSION = 3  # 2: W_Q, W_K, W_V stacked in one in_proj; 3: every rank's random state, the planned schedule
WEIGHTS_SINCE = 2  # the weights and model config have not changed since: older files still translate


def atomic_save(obj: dict, path: Path) -> None:
    """torch.save into `path` atomically (utils/files.py): the old file or the new one,
    never a truncated file under the final name."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_file(path, "wb") as f:
        torch.save(obj, f)


def make_checkpoint(model: Transformer, tokenizer: Tokenizer, meta: dict, train_state: dict | None = None) -> dict:
    """The dict to save. `meta` holds what a reader may want to show (languages, step, BLEU)."""
    checkpoint = {
        "format": FORMAT,
        "version": VERSION,
        "model_config": model.cfg.to_dict(),
        "model": model.state_dict(),
        "tokenizer": {"src": tokenizer.src_model, "tgt": tokenizer.tgt_model, "src_forms": tokenizer.src_forms},
        "meta": meta,
    }
    if train_state is not None:
        checkpoint["train_state"] = train_state
    return checkpoint


def resolve_checkpoint_path(path: str | Path, prefer: str | None = BEST) -> Path:
    """A checkpoint file, or a run folder: its checkpoints/`prefer`, else (or with prefer
    None) its latest full training checkpoint."""
    path = Path(path).expanduser()
    if not path.exists():
        raise UserError(f"checkpoint {path} does not exist")
    if path.is_dir():
        folder = checkpoint_folder(path) if checkpoint_folder(path).is_dir() else path
        if prefer is not None and (folder / prefer).is_file():
            return folder / prefer
        latest = latest_step_checkpoint(folder)
        if latest is None:
            if (folder / BEST).is_file():  # prefer None: a training checkpoint was asked for
                raise UserError(
                    f"{path} has no training checkpoint (step_N.pt) to resume from, only the weights of "
                    f"{BEST}: train.init_from starts a new run from them"
                )
            raise UserError(f"no checkpoint found in {path}")
        return latest
    return path


def load_checkpoint(path: str | Path, map_location: str | torch.device = "cpu", for_training: bool = False) -> dict:
    """Read and check a checkpoint; every way it can be wrong is a one-line UserError.

    For its weights any version since WEIGHTS_SINCE will do; to resume training from it
    (`for_training`), only this version's training state."""
    path = Path(path)
    try:
        stream = open(path, "rb")
    except OSError as e:
        raise UserError(f"cannot read checkpoint {path}: {e.strerror or e}") from None
    with stream:
        try:
            checkpoint = torch.load(stream, map_location=map_location, weights_only=True)
        except Exception as e:  # noqa: BLE001 - the unpickler fails in many ways on arbitrary bytes
            # truncated, corrupt, or not a torch file at all (seen: KeyError, OSError, BadZipFile)
            raise UserError(f"{path} is not a readable minitrans checkpoint ({type(e).__name__})") from None
    if not isinstance(checkpoint, dict) or checkpoint.get("format") != FORMAT:
        raise UserError(f"{path} is not a minitrans checkpoint")
    version = checkpoint.get("version")
    readable = [VERSION] if for_training else list(range(WEIGHTS_SINCE, VERSION + 1))
    if version not in readable:
        what = "resumes training from" if for_training else "reads"
        versions = f"version {VERSION}" if len(readable) == 1 else f"versions {readable[0]}-{readable[-1]}"
        raise UserError(f"{path} has checkpoint format version {version}; this minitrans {what} {versions}")
    return checkpoint


def load_weights(model: Transformer, weights: dict, path: str | Path) -> None:
    """Load a checkpoint's weights; a layout that does not fit the model is a one-line UserError."""
    try:
        model.load_state_dict(weights)
    except RuntimeError:
        names = set(model.state_dict())
        missing, unexpected = sorted(names - set(weights)), sorted(set(weights) - names)
        detail = (
            f"missing {missing[0]}"
            if missing
            else f"unexpected {unexpected[0]}"
            if unexpected
            else "tensor shapes differ"
        )
        raise UserError(
            f"{path}: its weights do not fit the model ({detail}); was it written by another version of minitrans?"
        ) from None


def load_for_inference(path: str | Path, device: str | torch.device = "cpu") -> tuple[Transformer, Tokenizer, dict]:
    """Model (eval mode, on `device`), tokenizer and meta from a checkpoint file or run folder."""
    checkpoint = load_checkpoint(resolve_checkpoint_path(path), map_location="cpu")
    model = Transformer(TransformerConfig(**checkpoint["model_config"]))
    load_weights(model, checkpoint["model"], path)
    saved = checkpoint["tokenizer"]
    tokenizer = Tokenizer(saved["src"], saved["tgt"], saved.get("src_forms", ()))  # none before they were kept
    return model.to(device).eval(), tokenizer, checkpoint.get("meta", {})


def average_checkpoints(paths: list[Path]) -> dict[str, torch.Tensor]:
    """Element-wise mean of the model weights of several checkpoints of one run."""
    total: dict[str, torch.Tensor] = {}
    for path in paths:
        for name, tensor in load_checkpoint(path)["model"].items():
            total[name] = total.get(name, 0) + tensor.double()
    return {name: (tensor / len(paths)).float() for name, tensor in total.items()}


def saved_settings(meta: dict, group: str) -> dict:
    """The settings of `group` ("train", "data") a checkpoint was written with ({} if it does not say)."""
    from omegaconf import OmegaConf  # loaded here only: translating needs it not

    if "config" not in meta:
        return {}
    settings = OmegaConf.to_container(OmegaConf.create(meta["config"]))
    assert isinstance(settings, dict)  # a run's configuration is a mapping
    return settings.get(group, {})


def run_text(meta: dict, splits: list[str], data_dir: str | None = None, what: str = "checkpoint") -> "DatasetDict":
    """The splits of the corpus a checkpoint's run trained on, read as the run read them (its
    data config), from where the run found them (data/prepare.py's corpus_location, kept with
    the checkpoint), or from `data_dir` instead of the run's Multi30k folder if given."""
    from omegaconf import OmegaConf  # loaded here only: translating needs neither it nor datasets

    from data.prepare import load_text

    if "config" not in meta:
        raise UserError(f"the {what} does not hold its run's configuration (not saved by train.py?)")
    data = OmegaConf.create(meta["config"]).data
    where = meta.get("corpus", {})  # absent from checkpoints written before runs kept it
    if data_dir is None and where.get("dir"):
        data_dir = where["dir"]
        if not Path(data_dir).is_dir():
            raise UserError(
                f"the {what}'s run read Multi30k from {data_dir}, which is not there now: "
                "give its folder with --data-dir"
            )
    if where.get("cache_dir"):
        data.cache_dir = where["cache_dir"]
    return load_text(data, splits, data_dir)
