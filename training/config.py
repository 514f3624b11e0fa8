"""Typed configuration of a training run: the schema that Hydra's YAML files fill in.

The dataclasses double as validation: Hydra rejects unknown keys and wrong types against
them before anything runs, and each dataclass's `__post_init__` refuses values that types cannot
express when `to_run_config` builds it.
"""

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from hydra import compose, initialize_config_dir
from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from data.config import LANGUAGE_RESOLVED, DataConfig
from model.config import TransformerConfig
from utils.errors import UserError
from utils.settings import default_of, override_keys, read_when, refuse_unless, unread_settings

CONF_DIR = Path(__file__).resolve().parents[1] / "conf"
ATTENTION_LOGGED = read_when(
    lambda t: t.attention_every != 0, "read only where attention is logged (train.attention_every=0 turns it off)"
)
# The model settings a run takes from its tokenizer (training/run.py): given, they would be overwritten.
FROM_TOKENIZER = ("src_vocab_size", "tgt_vocab_size", "pad_id", "unk_id", "bos_id", "eos_id")
MODEL_DEFAULTS = {f.name: default_of(f) for f in dataclasses.fields(TransformerConfig)}


@dataclass
class TrainConfig:
    """The defaults are the one-hour recipe on a 2-core CPU; this is their one place (no YAML
    file repeats them: tests/test_config.py)."""

    # batches and length of training
    max_tokens: int = 4096  # padded tokens per batch (per rank)
    grad_accum: int = 1  # batches per optimizer step
    max_steps: int = 100_000  # optimizer steps
    max_epochs: int = 1000
    max_minutes: float | None = 60  # wall-clock budget of the whole run, resumes and final evaluation included
    # of max_minutes, kept for the final validation, averaging, test decoding and robustness
    reserve_minutes: float = field(
        default=2.5,
        metadata=read_when(lambda t: t.max_minutes is not None, "read only with a time budget (train.max_minutes)"),
    )
    # optimisation
    lr: float = 3e-3  # peak learning rate, reached at the end of warmup
    warmup_steps: int = 500
    # after warmup: "linear" decays to lr_floor * lr at the run's end (planned from the time
    # budget at the first validation after warmup), "inverse_sqrt" as lr * sqrt(warmup/step),
    # or "constant"
    schedule: str = "linear"
    lr_floor: float = field(
        default=0.0,
        metadata=read_when(  # linear: the last step's lr, as a fraction of the peak
            lambda t: t.schedule == "linear", "read by train.schedule=linear only"
        ),
    )
    betas: tuple[float, float] = (0.9, 0.98)
    eps: float = 1e-9
    weight_decay: float = 0.0
    # 0.2: ahead of 0.1 for the small shape in the AMX hour (+0.8 validation BLEU, two seeds),
    # level for the compact one (docs/recipe_search.md, "Levers on the small shape")
    label_smoothing: float = 0.2
    clip_grad_norm: float | None = 1.0
    # >0: this fraction of the run's planned steps trains every pair both ways round (source and
    # target swapped too; one joint vocabulary), the rest the requested direction only
    # (Ding et al. 2021, "Improving NMT by Bidirectional Training"; docs/recipe_search.md)
    bidirectional: float = 0.0
    # >0: R-Drop (Liang et al. 2021) with this weight alpha (the paper's 5 for translation): every
    # batch goes through the model twice, each pass with its own dropout masks, and the two passes'
    # next-token distributions are trained to agree (symmetric KL); a step costs about twice as much
    rdrop: float = 0.0
    # machine
    precision: str = "auto"  # "auto" (bf16 where native, else fp32), "fp32" or "bf16" (autocast)
    device: str = "auto"  # "auto" (cuda if available), "cpu", "cuda", "cuda:1", ...
    threads: int | None = None  # torch intra-op threads; None: cores / processes
    # evaluation and checkpoints
    log_every: int = 20  # steps between TensorBoard scalars
    eval_every: int = 500  # steps between validations
    checkpoint_every: int | None = 250  # None: at every validation
    keep_last: int = 3  # full training checkpoints kept for resuming
    # >1: also evaluate the average of the last K checkpoints
    average_last: int = field(
        default=5,
        metadata=read_when(
            lambda t: t.ema_decay == 0, "read only without train.ema_decay (the moving average is evaluated instead)"
        ),
    )
    # >0: validation, the best checkpoint and the test take an exponential moving average of the
    # weights with this decay, updated after every step (training/ema.py), instead of the weights
    ema_decay: float = 0.0
    eval_beam_size: int = 1  # validation BLEU decoding (greedy is fast enough to run often)
    test_beam_size: int = 5  # final test decoding
    length_penalty: float = field(
        default=1.0,
        metadata=read_when(
            lambda t: max(t.eval_beam_size, t.test_beam_size) > 1,
            "read by beam search only: greedy search (beam size 1) ranks nothing; give a beam size above 1",
        ),
    )
    n_samples: int = 3  # sample translations logged as text at each validation
    # attention maps in TensorBoard: the first N validation sentences plus any given here,
    # fixed for the whole run so the step slider shows the same maps evolving
    attention_probes: int = field(default=3, metadata=ATTENTION_LOGGED)
    attention_sentences: list[str] = field(default_factory=list, metadata=ATTENTION_LOGGED)
    # steps; None: at every validation; 0: never, nor the head statistics' figures (their scalars stay)
    attention_every: int | None = None
    # at the end: validation loss and greedy BLEU with each head masked, and pruning curves
    # (analysis/head_importance.py), into results.json, the log and TensorBoard; BLEU on the
    # first N validation sentences (null: all). Off in the one-hour recipe: for its model it
    # takes ~5 minutes of the hour (raise reserve_minutes to match when turning it on), so
    # run `python heads.py -c RUN` after training instead.
    head_importance: bool = False
    head_importance_sentences: int | None = field(
        default=500, metadata=read_when(lambda t: t.head_importance, "read only with train.head_importance=true")
    )
    # at the end: the best weights on what people type (inference/robustness.py: the validation
    # set lower- and upper-cased, without its final punctuation, three lines to a paragraph, each
    # word alone), searched as translate.py does with test_beam_size, into results.json, the log
    # and TensorBoard (robustness/...). About 45 s of the hour's reserve_minutes on a 2-core CPU.
    robustness: bool = True
    # where a new run folder starts from (a folder's own checkpoints always come first):
    resume: str | None = None  # continue that run (checkpoint file or run folder) here, exactly
    init_from: str | None = None  # a new run from those weights (checkpoint file or run folder)

    def __post_init__(self) -> None:
        """Values that types cannot refuse, refused when the config is built."""
        refuse_unless(
            (self.lr > 0, f"train.lr must be positive, not {self.lr}"),
            (
                len(self.betas) == 2 and all(0.0 <= b < 1.0 for b in self.betas),
                f"train.betas must be two numbers in [0, 1), not {list(self.betas)}",
            ),
            (self.eps > 0, f"train.eps must be positive, not {self.eps}"),
            (self.weight_decay >= 0, f"train.weight_decay must be >= 0, not {self.weight_decay}"),
            (self.warmup_steps >= 0, f"train.warmup_steps must be >= 0, not {self.warmup_steps}"),
            (
                self.clip_grad_norm is None or self.clip_grad_norm > 0,
                "train.clip_grad_norm must be positive (or null: no clipping)",
            ),
            (self.max_steps > 0 and self.max_epochs > 0, "train.max_steps and train.max_epochs must be positive"),
            (
                self.max_minutes is None or self.max_minutes > 0,
                "train.max_minutes must be positive (or null: no time limit)",
            ),
            (
                self.max_minutes is None or 0 <= self.reserve_minutes < self.max_minutes,
                "train.reserve_minutes must be at least 0 and below train.max_minutes",
            ),
            (self.length_penalty >= 0, f"train.length_penalty must be >= 0, not {self.length_penalty}"),
            (all(s.strip() for s in self.attention_sentences), "train.attention_sentences holds an empty sentence"),
            (
                not (self.resume and self.init_from),
                "give train.resume (continue a run) or train.init_from (start from its weights), not both",
            ),
            (
                self.precision in ("auto", "fp32", "bf16"),
                f"train.precision must be auto, fp32 or bf16, not {self.precision!r}",
            ),
            (
                self.schedule in ("linear", "inverse_sqrt", "constant"),
                f"train.schedule must be linear, inverse_sqrt or constant, not {self.schedule!r}",
            ),
            (0.0 <= self.lr_floor <= 1.0, "train.lr_floor must be in [0, 1]"),
            (self.max_tokens > 0 and self.grad_accum > 0, "train.max_tokens and train.grad_accum must be positive"),
            (self.eval_every > 0 and self.log_every > 0, "train.eval_every and train.log_every must be positive"),
            (
                self.attention_every is None or self.attention_every >= 0,
                "train.attention_every must be >= 0 (0 turns it off)",
            ),
            (
                self.head_importance_sentences is None or self.head_importance_sentences > 0,
                "train.head_importance_sentences must be positive (or null: every validation sentence)",
            ),
            (self.keep_last >= 1, "train.keep_last must be at least 1"),
            (self.eval_beam_size >= 1 and self.test_beam_size >= 1, "beam sizes must be at least 1"),
            (0.0 <= self.label_smoothing < 1.0, "train.label_smoothing must be in [0, 1)"),
            (0.0 <= self.ema_decay < 1.0, "train.ema_decay must be in [0, 1) (0: no moving average)"),
            (
                0.0 <= self.bidirectional < 1.0,
                "train.bidirectional must be in [0, 1): the fraction of the run trained both ways (0: off)",
            ),
            (self.rdrop >= 0.0, "train.rdrop must be >= 0 (R-Drop's weight alpha; 0: off)"),
        )

    @property
    def checkpoints_averaged(self) -> int:
        """How many of the last checkpoints the final evaluation averages (1: none)."""
        return self.average_last if self.ema_decay == 0 else 1

    @property
    def budget_seconds(self) -> float:
        """Seconds the run may spend before its final evaluation (inf without a time budget)."""
        return (self.max_minutes - self.reserve_minutes) * 60 if self.max_minutes is not None else math.inf


@dataclass
class ShapeRow:
    """A row of the shape table (conf/model/auto.yaml, training/shape_choice.py): a shape with its
    regularisation, taken where this machine's budget affords at least `min_steps` of it."""

    min_steps: int = 0  # where it was measured to beat the next smaller row, on validation
    model: TransformerConfig = field(default_factory=TransformerConfig)

    def __post_init__(self) -> None:
        refuse_unless((self.min_steps >= 0, f"a shape's min_steps must be >= 0, not {self.min_steps}"))


@dataclass
class RunConfig:
    model: TransformerConfig = field(default_factory=TransformerConfig)
    data: DataConfig = field(default_factory=DataConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    seed: int = 1234
    # model=auto fills this table, and the run takes its shape from it, by this machine's speed,
    # instead of `model`; any other model=NAME leaves it empty and `model` is the shape
    shapes: dict[str, ShapeRow] = field(default_factory=dict)

    def __post_init__(self) -> None:
        shapes = [row.model for row in self.shapes.values()] or [self.model]  # what the run may train
        refuse_unless(
            (
                self.train.rdrop == 0 or all(shape.dropout > 0 or shape.attention_dropout > 0 for shape in shapes),
                "train.rdrop needs dropout (model.dropout or model.attention_dropout above 0): without it "
                "the two passes are the same",
            ),
            (
                self.train.bidirectional == 0 or self.data.tokenizer.joint,
                "train.bidirectional needs one joint vocabulary (data.tokenizer.joint=true): "
                "each pair is also trained with source and target swapped",
            ),
            (
                not self.shapes or any(row.min_steps == 0 for row in self.shapes.values()),
                "the shape table (model=auto) needs a row with min_steps 0, taken whatever the budget",
            ),
        )


def schema() -> DictConfig:
    """RunConfig's defaults as Hydra composes them, the settings DataConfig resolves for the
    run's languages left unresolved (None): building the defaults resolves them for the default
    pair, and a command line's data.src_lang would otherwise find them set for German."""
    node = OmegaConf.structured(RunConfig)
    for name in LANGUAGE_RESOLVED:
        OmegaConf.update(node, f"data.{name}", None)
    return node


def register_configs() -> None:
    """Make the schema available to conf/config.yaml as `run_schema`."""
    ConfigStore.instance().store(name="run_schema", node=schema())


def compose_config(*overrides: str, return_hydra_config: bool = False) -> DictConfig:
    """The config `python train.py OVERRIDES` composes, for programs other than train.py
    (benchmarks, tests)."""
    register_configs()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return compose(config_name="config", overrides=list(overrides), return_hydra_config=return_hydra_config)


def to_run_config(cfg: DictConfig, overrides: Sequence[str] | None = ()) -> RunConfig:
    """Hydra's config as dataclasses; value errors become one-line UserErrors, and so does a setting
    given in `overrides` (the command line's, as train.py passes them; None: any setting that
    differs from its default) that this run would not read."""
    for name in FROM_TOKENIZER:  # before the model's own checks, which would find them inconsistent
        if "model" in cfg and cfg.model.get(name, MODEL_DEFAULTS[name]) != MODEL_DEFAULTS[name]:
            raise UserError(
                f"model.{name} is not read: a run takes it from its tokenizer "
                "(the vocabulary's size is data.tokenizer.vocab_size)"
            )
    try:
        run = OmegaConf.to_object(cfg)
    except (OmegaConfBaseException, ValueError) as e:
        raise UserError(f"invalid config: {str(e).splitlines()[0]}") from None
    if not isinstance(run, RunConfig):  # a config composed without the schema (plain dicts)
        raise UserError("config does not follow the run schema (conf/config.yaml must list run_schema)")
    check_all_read(run, None if overrides is None else override_keys(overrides))
    return run


def check_all_read(run: RunConfig, given: set[str] | None) -> None:
    """Refuse a setting this run would not read (utils/settings.py), in one line: given with another
    choice it would silently do nothing."""
    unread = unread_settings(run.data, "data", given) + unread_settings(run.train, "train", given)
    if run.shapes:  # the table gives the shape: a model setting would do nothing
        model_given = (
            sorted(key for key in given if key.startswith("model."))
            if given is not None
            else [f"model.{k}" for k, v in dataclasses.asdict(run.model).items() if v != MODEL_DEFAULTS[k]]
        )
        unread = [
            f"{key} is not read with model=auto, whose table picks the shape (conf/model/auto.yaml); "
            "choose one with model=compact or model=small to set it"
            for key in model_given
        ] + unread
    if unread:
        raise UserError(unread[0] + (f" (and {len(unread) - 1} more setting(s) not read)" if len(unread) > 1 else ""))
