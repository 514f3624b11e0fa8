import os

import pytest
import torch

# No test may reach for the Hugging Face hub: there is no network here or in CI.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

# Under `pytest -n N` (pytest-xdist) each worker keeps to a core of its own, and so do the commands
# it starts (affinity is inherited; the project's commands size their threads by it): two workers'
# torch threads spinning on the same cores would slow each other several times over.
if worker := os.environ.get("PYTEST_XDIST_WORKER"):
    cores = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cores[int(worker.removeprefix("gw")) % len(cores)]})
    torch.set_num_threads(1)
else:
    torch.set_num_threads(min(2, torch.get_num_threads()))


@pytest.fixture
def tiny_config():
    from helpers import tiny_config

    return tiny_config()


@pytest.fixture(scope="session")
def toy_cache(tmp_path_factory) -> str:
    return str(tmp_path_factory.mktemp("toy_cache"))


@pytest.fixture(scope="session")
def toy(toy_cache):
    """The committed toy corpus (tests/data/toy), prepared once per test session: no Multi30k needed."""
    from data import DataConfig, TokenizerConfig, prepare_data
    from helpers import TOY_CORPUS

    return prepare_data(DataConfig(dir=str(TOY_CORPUS), cache_dir=toy_cache, tokenizer=TokenizerConfig(vocab_size=340)))


@pytest.fixture(scope="session")
def multi30k_dir():
    """The real Multi30k folder from $MULTI30K_DIR. Required in CI; skipped elsewhere if unset."""
    path = os.environ.get("MULTI30K_DIR")
    if not path:
        if os.environ.get("CI"):
            pytest.fail("MULTI30K_DIR must point to Multi30k in CI")
        pytest.skip("set MULTI30K_DIR to a Multi30k folder to run the tests on real data")
    return path


@pytest.fixture(scope="session")
def multi30k_cache(tmp_path_factory):
    return str(tmp_path_factory.mktemp("cache"))


@pytest.fixture(scope="session")
def multi30k(multi30k_dir, multi30k_cache):
    """de-en Multi30k with the default tokenizer, prepared once per test session."""
    from data import DataConfig, prepare_data

    return prepare_data(DataConfig(dir=multi30k_dir, cache_dir=multi30k_cache))


@pytest.fixture(scope="session")
def ci_run(tmp_path_factory):
    """One full `experiment=ci` training run on the toy corpus, shared by the tests (and the
    workers) that inspect its output: a model that has learnt its data (validation BLEU ~100)."""
    from helpers import TOY_DATA, run_train
    from helpers.shared import shared_folder

    def make(run_dir):
        run_train(run_dir, "experiment=ci", *TOY_DATA, "train.average_last=3", f"data.cache_dir={run_dir}_cache")

    return shared_folder(tmp_path_factory, "ci_run", make)


@pytest.fixture(scope="session")
def ci_export(ci_run, tmp_path_factory):
    """The ci run exported to CTranslate2 (float32) as a user exports it, once for all workers:
    read only (a test that changes an export makes its own)."""
    from helpers import run_script
    from helpers.shared import shared_folder

    return (
        shared_folder(
            tmp_path_factory, "ci_export", lambda folder: run_script("export.py", "-c", ci_run, folder / "export")
        )
        / "export"
    )


@pytest.fixture(scope="session")
def ci_package(ci_run, tmp_path_factory):
    """The ci run exported as an Argos package as a user does it (into a folder: the file is named
    after the package), once for all workers: read only."""
    from helpers import run_script
    from helpers.shared import shared_folder

    def make(folder):
        done = run_script("export.py", "-c", ci_run, folder, "--to", "argos")
        assert f"wrote {folder / 'minitrans-de_en-1_0.argosmodel'} (Argos Translate package" in done.stdout
        assert "install_from_path" in done.stdout

    return shared_folder(tmp_path_factory, "ci_package", make) / "minitrans-de_en-1_0.argosmodel"


@pytest.fixture(scope="session")
def trained(ci_run):
    """The ci run's best model and its tokenizer, loaded once."""
    from inference.checkpoint import load_for_inference

    model, tokenizer, _ = load_for_inference(ci_run)
    return model, tokenizer


@pytest.fixture(scope="session")
def probe_maps(trained):
    """The ci model's attention on two sentences of different lengths (so the batch that gives
    the maps is padded), as inference.attention.collect_attention returns it: (model, maps)."""
    from helpers import toy_sentences
    from inference.attention import collect_attention
    from inference.search_config import SearchConfig
    from inference.translator import Translator

    model, tokenizer = trained
    sentences = ["Ein Hund.", toy_sentences("val")[0]]
    translator = Translator(model, tokenizer, SearchConfig(beam_size=1))
    translations = translator.translate_ids(translator.source_ids(sentences))
    return model, collect_attention(model, tokenizer, sentences, translations, ["A dog.", "Two men."])


@pytest.fixture(scope="session")
def toy_run(tmp_path_factory):
    """A short training run on the committed toy corpus: a checkpoint to translate, export and break."""
    from helpers import TOY_DATA, run_train
    from helpers.shared import shared_folder

    def make(run_dir):
        run_train(
            run_dir,
            "experiment=ci",
            *TOY_DATA,
            "train.max_steps=20",
            "train.eval_every=10",
            "train.head_importance=false",
            "train.attention_every=0",
            f"data.cache_dir={run_dir}_cache",
        )

    return shared_folder(tmp_path_factory, "toy_run", make)
