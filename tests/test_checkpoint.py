"""Checkpoint files (inference/checkpoint.py): atomic writes."""

import os
import shutil

import pytest
import torch

from helpers import TOY_CORPUS, run_script, run_train, toy_sentences
from inference.checkpoint import VERSION, atomic_save, load_checkpoint, load_for_inference, run_text


def test_interrupted_save_leaves_previous_checkpoint_loadable(tmp_path, monkeypatch):
    path = tmp_path / "step_1.pt"
    atomic_save({"format": "minitrans", "version": VERSION, "weights": torch.arange(5)}, path)

    def failing_save(obj, f):
        f.write(b"partial garbage")
        raise RuntimeError("disk full")

    monkeypatch.setattr(torch, "save", failing_save)
    with pytest.raises(RuntimeError, match="disk full"):
        atomic_save({"format": "minitrans", "version": VERSION, "weights": torch.zeros(5)}, path)
    monkeypatch.undo()
    assert torch.equal(load_checkpoint(path)["weights"], torch.arange(5))
    assert list(tmp_path.iterdir()) == [path], "no temporary file may be left behind"


def test_older_weights_translate_but_only_this_versions_training_state_resumes(ci_run, tmp_path):
    from inference.checkpoint import WEIGHTS_SINCE, load_for_inference
    from utils.errors import UserError

    checkpoint = load_checkpoint(ci_run / "checkpoints" / "step_0000240.pt")
    assert checkpoint["version"] == VERSION
    checkpoint["version"] = WEIGHTS_SINCE
    old = tmp_path / "old.pt"
    torch.save(checkpoint, old)
    model, _, _ = load_for_inference(old)
    assert torch.equal(model.state_dict()["output_proj.weight"], checkpoint["model"]["output_proj.weight"])
    with pytest.raises(
        UserError, match=f"format version {WEIGHTS_SINCE}; this minitrans resumes training from version {VERSION}$"
    ):
        load_checkpoint(old, for_training=True)


def test_a_run_remembers_where_its_corpus_was(tmp_path, monkeypatch):
    """A run trained on $MULTI30K_DIR's folder reads its corpus again from a shell without it,
    in another folder (export.py --to argos trains the package's splitter on it); once the
    folder is gone, one line says which folder it needs."""
    corpus = shutil.copytree(TOY_CORPUS, tmp_path / "corpus")
    quick = ["experiment=ci", "data.tokenizer.vocab_size=340", "train.max_steps=2", "train.eval_every=2"]
    quick += ["train.head_importance=false", "train.attention_every=0", f"data.cache_dir={tmp_path / 'cache'}"]
    run_train(tmp_path / "run", *quick, env={**os.environ, "MULTI30K_DIR": str(corpus)})
    monkeypatch.delenv("MULTI30K_DIR", raising=False)
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    _, _, meta = load_for_inference(tmp_path / "run")
    assert list(run_text(meta, ["val"])["val"]["src"]) == toy_sentences("val")[:100]  # experiment=ci reads 100
    corpus.rename(tmp_path / "moved")
    shell = {k: v for k, v in os.environ.items() if k != "MULTI30K_DIR"}
    done = run_script(
        "export.py", "-c", tmp_path / "run", tmp_path / "p.argosmodel", "--to", "argos", check=False, env=shell
    )
    assert done.returncode == 1 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert f"run read Multi30k from {corpus}, which is not there now: give its folder with --data-dir" in done.stderr
