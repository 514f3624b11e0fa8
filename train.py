"""Train a Transformer on Multi30k.

    python train.py                          # the one-hour recipe, de -> en
    python train.py experiment=ci            # a couple of minutes, tiny model
    python train.py model=base train.precision=bf16 data.src_lang=fr

The work is `training.run.train(cfg, run_dir)`; this file is the Hydra entry point that turns
user errors into one-line messages.
"""

import os
import shlex
import sys
from itertools import takewhile
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.errors import HydraException
from omegaconf import DictConfig
from omegaconf.errors import OmegaConfBaseException

from training.config import register_configs, to_run_config
from utils.checkpoint_files import checkpoint_folder, latest_step_checkpoint
from utils.cli import os_error_line, run_command

register_configs()


def continue_command(overrides: list[str], run_dir: Path) -> str:
    """The command that continues this run: its overrides (Hydra's record of this job's: in a
    multirun, this job's values, without -m) in the same folder. Once the folder has a
    checkpoint of its own, that comes first, so train.resume/init_from are left out; before,
    they are what the run starts from, and stay."""
    own = latest_step_checkpoint(checkpoint_folder(run_dir)) is not None
    kept = [o for o in overrides if not (own and o.startswith(("train.resume=", "train.init_from=")))]
    return shlex.join(["python", "train.py", *kept, f"hydra.run.dir={run_dir}"])


@hydra.main(version_base="1.3", config_path="conf", config_name="config")
def main(cfg: DictConfig) -> None:
    hydra_cfg = HydraConfig.get()
    run_dir, overrides = Path(hydra_cfg.runtime.output_dir), list(hydra_cfg.overrides.task)

    def checked_then_trained() -> None:
        # only the settings given here are refused when unread: an experiment's are not the user's
        run = to_run_config(cfg, overrides)
        # the engine (torch, datasets, TensorBoard: ~2 s of imports) only once the config holds,
        # so that a misspelled or refused setting is said at once
        from training.run import train

        train(run, run_dir)

    status = run_command(checked_then_trained, lambda: continue_command(overrides, run_dir))
    if status:
        sys.exit(status)


def one_line(error: BaseException) -> str:
    """Hydra/OmegaConf errors span lines (key, types, hints); keep the first line of each part."""
    lines = str(error).strip().splitlines()
    parts = [lines[0].rstrip(".")]
    if error.__cause__ is not None and str(error.__cause__).strip():
        parts.append(str(error.__cause__).strip().splitlines()[0])
    if any(line.startswith("Available options") for line in lines):  # a misspelled group option
        start = next(i for i, line in enumerate(lines) if line.startswith("Available options")) + 1
        options = list(takewhile(lambda line: line.startswith("\t"), lines[start:]))
        options = [option.strip() for option in options]
        parts.append(f"available: {', '.join(options)}")
    return "; ".join(parts)


if __name__ == "__main__":
    # Let Hydra raise composition errors (a misspelled key, a wrong type) instead of printing
    # them over several lines, so that they come out as one line like every other error.
    os.environ.setdefault("HYDRA_FULL_ERROR", "1")
    try:
        main()
    except (HydraException, OmegaConfBaseException) as e:
        print(f"error: {one_line(e)}", file=sys.stderr)
        sys.exit(2)
    except OSError as e:  # e.g. a hydra.run.dir that Hydra cannot create
        print(os_error_line(e), file=sys.stderr)
        sys.exit(1)
