"""How a translation is searched for: one set of settings for every engine and every caller
(validation and test decoding in training, translate.py, the Python API, bench/), checked when
it is built."""

import math
from dataclasses import dataclass

from utils.errors import UserError


@dataclass(frozen=True)
class SearchConfig:
    """Args:
    beam_size: hypotheses kept per sentence; 1 is greedy search.
    length_penalty: beam search ranks by log-probability / length ** length_penalty (0: the
        plain sum; 1: per token). Greedy search ranks nothing and leaves it unread.
    max_len_ratio, max_len_extra: an output stops after ratio * its source's pieces + extra
        (model/search.py); `fits` checks them against a model's positions.
    batch_size: most sentences decoded together (sorted by length, so batches pad little); None:
        each engine's own, the size it was measured fastest in (inference/translator.py's
        BATCH_SIZE, inference/ct2_translator.py's).
    """

    beam_size: int = 5
    length_penalty: float = 1.0
    max_len_ratio: float = 1.5
    max_len_extra: int = 10
    batch_size: int | None = None

    def __post_init__(self) -> None:
        for name in ("beam_size", "batch_size"):
            if name == "batch_size" and self.batch_size is None:  # the engine's own
                continue
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise UserError(
                    f"the {name.replace('_', ' ')} must be a whole number of at least 1, not {getattr(self, name)!r}"
                )
        if not (isinstance(self.length_penalty, (int, float)) and 0 <= self.length_penalty < math.inf):
            raise UserError(f"the length penalty must be a number of at least 0, not {self.length_penalty!r}")
        if not (isinstance(self.max_len_ratio, (int, float)) and 0 <= self.max_len_ratio):  # inf: `fits` says
            raise UserError(f"the maximum length ratio must be a number of at least 0, not {self.max_len_ratio!r}")
        if not isinstance(self.max_len_extra, int) or self.max_len_extra < 0:
            raise UserError(
                f"the maximum extra length must be a whole number of at least 0, not {self.max_len_extra!r}"
            )

    def fits(self, max_len: int) -> "SearchConfig":
        """Itself, if its output length limit is a number of positions a model of `max_len` has;
        a UserError in one line otherwise."""
        if self.max_len_ratio > max_len:
            raise UserError(
                f"the maximum length ratio must be a number from 0 to {max_len} (the model's positions), "
                f"not {self.max_len_ratio}"
            )
        if self.max_len_extra > max_len:
            raise UserError(
                f"the maximum extra length must be from 0 to {max_len} pieces (the model's positions), "
                f"not {self.max_len_extra}"
            )
        return self
