"""What a checkpoint keeps of a run, so that the run continues exactly.

`TrainState` holds the weights, the optimizer, the learning-rate schedule, the progress and
every rank's random streams. Saving and restoring walk the same table of parts (`PARTS`), so a
part added there is saved and restored alike; tests/test_state.py proves the round trip part
by part.
"""

import dataclasses
import logging
from dataclasses import dataclass
from pathlib import Path

import torch

from data import Tokenizer
from inference.checkpoint import load_weights, make_checkpoint
from model import Transformer
from training.distributed import Distributed
from training.ema import WeightAverage
from training.schedule import Schedule

log = logging.getLogger("train")


@dataclass
class Progress:
    """Where training stands."""

    step: int = 0  # optimizer steps taken
    epoch: int = 0  # epoch of the next batch
    position: int = 0  # batches of that epoch already consumed
    best_bleu: float = -1.0
    elapsed: float = 0.0  # seconds spent in earlier sessions of this run
    # the first epoch of pairs in the requested direction only; None while train.bidirectional
    # trains both directions (training/loaders.py)
    one_way_from: int | None = 0

    def state_dict(self) -> dict:
        return dataclasses.asdict(self)

    def load_state_dict(self, state: dict) -> None:
        """A part the checkpoint lacks (written before it existed) takes its default."""
        for part in dataclasses.fields(self):
            setattr(self, part.name, state.get(part.name, part.default))


class RandomStreams:
    """Every rank's random state (dropout masks draw from it).

    Saved from every rank (rank 0 writes the list); each rank restores its own. A checkpoint
    written by another number of processes has no stream for some ranks: every rank then
    starts a stream of its own from the seed and the step resumed at."""

    def __init__(self, device: torch.device, ddp: Distributed, seed: int, progress: Progress) -> None:
        self.device, self.ddp, self.seed, self.progress = device, ddp, seed, progress

    def state_dict(self) -> list[dict]:
        """Called on every rank, a collective: rank r's state is element r."""
        rng = {"torch": torch.get_rng_state()}
        if self.device.type == "cuda":
            rng["cuda"] = torch.cuda.get_rng_state(self.device)
        return self.ddp.gather(rng)

    def load_state_dict(self, ranks: list[dict]) -> None:
        if len(ranks) != self.ddp.world_size:
            torch.manual_seed(self.ddp.rank_seed(self.seed) + self.progress.step)
            log.warning(
                "the checkpoint was written by %d process(es), this run has %d: dropout masks will differ "
                "from an uninterrupted run",
                len(ranks),
                self.ddp.world_size,
            )
            return
        rng = ranks[self.ddp.rank]
        torch.set_rng_state(rng["torch"].cpu())
        if "cuda" in rng and self.device.type == "cuda":
            torch.cuda.set_rng_state(rng["cuda"].cpu(), self.device)


@dataclass
class TrainState:
    """A run's state: what `checkpoint` saves and `restore` restores."""

    model: Transformer
    optimizer: torch.optim.Optimizer
    schedule: Schedule
    progress: Progress
    rng: RandomStreams
    ema: WeightAverage | None = None  # train.ema_decay's moving average of the weights

    # a checkpoint's name for each part besides the weights (the file format predates the names here)
    PARTS = {"optimizer": "optimizer", "scheduler": "schedule", "progress": "progress", "rng": "rng", "ema": "ema"}

    def state_dict(self) -> dict:
        """Every part's state; on every rank (random streams are gathered), rank 0 writes it."""
        parts = {key: getattr(self, part) for key, part in self.PARTS.items()}
        return {key: part.state_dict() for key, part in parts.items() if part is not None}

    def load_state_dict(self, state: dict) -> None:
        """Restore every part, in place: whoever holds a part holds the restored one. A moving average
        that the checkpoint lacks (it was written without train.ema_decay) starts from its weights."""
        for key, part in self.PARTS.items():  # progress before rng: a reseed counts from the step resumed at
            if getattr(self, part) is None:
                continue
            if key == "ema" and key not in state:
                log.warning("the checkpoint has no moving average of the weights: it starts from its weights")
                continue
            getattr(self, part).load_state_dict(state[key])

    def checkpoint(self, tokenizer: Tokenizer, meta: dict) -> dict:
        """The whole checkpoint to save; on every rank (see `state_dict`)."""
        return make_checkpoint(self.model, tokenizer, meta, self.state_dict())

    def restore(self, checkpoint: dict, path: Path) -> None:
        """Weights and every part from a checkpoint read from `path` (named in errors)."""
        load_weights(self.model, checkpoint["model"], path)
        self.load_state_dict(checkpoint["train_state"])
