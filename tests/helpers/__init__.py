"""What the test modules share, one of each: running a command as a user would (commands.py),
stopping it at a checkpoint (commands.stop_when), a tiny model (models.py), the committed toy
corpus (corpus.py), reading a run's events and checkpoints (runs.py), and TensorBoard in a
headless browser (browser.py, imported by its users: selenium is needed there only)."""

from helpers.commands import ROOT, run_script, run_train, start_script, stop_when
from helpers.corpus import SENTENCES, TOY_CORPUS, TOY_DATA, half_sentences, toy_sentences, unseen_sentences
from helpers.models import TINY_SHAPE, random_pairs, tiny_config, tiny_model
from helpers.runs import assert_same_training, scalars
from training.config import CONF_DIR as CONF
from training.config import compose_config

__all__ = [
    "CONF",
    "ROOT",
    "SENTENCES",
    "TINY_SHAPE",
    "TOY_CORPUS",
    "TOY_DATA",
    "assert_same_training",
    "compose_config",
    "half_sentences",
    "random_pairs",
    "run_script",
    "run_train",
    "scalars",
    "start_script",
    "stop_when",
    "tiny_config",
    "tiny_model",
    "toy_sentences",
    "unseen_sentences",
]
