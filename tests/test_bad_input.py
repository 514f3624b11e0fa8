"""Bad input, the ways a user gives it, to train.py, translate.py, export.py, heads.py and the Python
API: every case gets one clear line (the commands: `error: ...` on stderr and a non-zero exit), and
every file the user had is left as it was (each hashed before and after). The ATTENTION tab's
routes have their matrix in test_attention_tab.py; data files fuzzed with hypothesis at the end.

The commands run as a user runs them: train.py in its own process (Hydra's start-up is part of what
is tested), the others through their `main(argv)` in this process (the same parsing and error
handling, without a new interpreter and torch import for each of the many cases).
"""

import hashlib
import io
import json
import os
import shutil
import string
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import export
import heads
import translate
from data import DataConfig
from data.prepare import load_corpus
from helpers import TOY_CORPUS, run_script, run_train
from helpers.commands import command
from helpers.servers import EmptyHubHandler, free_port, serving
from inference import load_translator
from inference.checkpoint import load_checkpoint
from utils.errors import UserError

# made once, its module-scoped fixtures: its tests stay on one worker (`make test`: xdist, --dist loadgroup)
pytestmark = pytest.mark.xdist_group("test_bad_input")


def snapshot(folder: Path) -> dict[str, str]:
    """{path relative to `folder`: sha256} of every file below it."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def user(toy_run, tmp_path_factory) -> Path:
    """A user's folder: a trained run and its export, broken copies of both, and data files of every
    bad kind. The cases read these; none may change them."""
    home = tmp_path_factory.mktemp("user")
    run = home / "run"
    (run / "checkpoints").mkdir(parents=True)
    good = toy_run / "checkpoints" / "best.pt"
    (run / "checkpoints" / "best.pt").write_bytes(good.read_bytes())
    (home / "truncated.pt").write_bytes(good.read_bytes()[:5000])
    (home / "text.pt").write_text("not a checkpoint\n")
    torch.save(torch.zeros(3), home / "tensor.pt")
    checkpoint = load_checkpoint(good)
    torch.save({**checkpoint, "version": 99}, home / "future.pt")
    del checkpoint["model"]["decoder.final_norm.bias"]
    torch.save(checkpoint, home / "mismatched.pt")
    (home / "empty_run").mkdir()
    run_script("export.py", "-c", run, home / "export")
    (home / "broken_export").mkdir()
    for path in (home / "export").iterdir():
        (home / "broken_export" / path.name).write_bytes(path.read_bytes())
    (home / "broken_export" / "model.bin").write_bytes(b"\0" * 100)
    run_script("export.py", "-c", run, home / "package.argosmodel", "--to", "argos")
    (home / "truncated.argosmodel").write_bytes((home / "package.argosmodel").read_bytes()[:20000])
    with zipfile.ZipFile(home / "theirs.argosmodel", "w") as theirs:  # a package minitrans did not make
        theirs.writestr("translate-de_en-1_0/metadata.json", "{}")
    (home / "not_export").mkdir()
    (home / "not_export" / "notes.txt").write_text("mine\n")
    (home / "a_file").write_text("mine\n")
    (home / "notes.argosmodel").write_text("mine\n")
    # data
    (home / "in.de").write_text("Ein Hund.\nZwei Katzen.\n", encoding="utf-8")
    (home / "latin1.de").write_bytes("gut\nSchöne Grüße\n".encode("latin-1"))
    (home / "latin1.en").write_text("good\nkind regards\n")
    (home / "short.de").write_text("a\nb\nc\n")
    (home / "short.en").write_text("a\nb\n")
    (home / "empty.de").write_text("")
    (home / "empty.en").write_text("")
    (home / "two_columns.tsv").write_text("a\tb\nc\n")
    (home / "bad.jsonl").write_text('{"de": "a", "en": "b"}\n{"de": \n')
    (home / "half.jsonl").write_text('{"de": "x\\ud800", "en": "y"}\n')
    return home


@pytest.fixture
def untouched(user):
    """Fails the test if any file of the user's changed, went, or a new one appeared."""
    before = snapshot(user)
    yield
    assert snapshot(user) == before, "a file of the user's changed"


def one_line(status: int, stderr: str, expected: str) -> None:
    assert status not in (0, None), f"exit status {status}: {stderr}"
    assert "Traceback" not in stderr
    assert len(stderr.strip().splitlines()) == 1, stderr
    assert stderr.startswith("error: ") and expected in stderr, stderr


def in_process(main, argv: list, capsys, stdin: bytes | None = None, monkeypatch=None) -> tuple[int, str]:
    """A command's `main(argv)`: its exit status and what it wrote to stderr."""
    capsys.readouterr()
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
    try:
        status = main([str(a) for a in argv])
    except SystemExit as e:  # argparse's own exit on a bad option
        status = e.code
    return status, capsys.readouterr().err


# --- translate.py ----------------------------------------------------------------------------

TRANSLATE = {
    "missing checkpoint": (["-c", "{u}/nope.pt", "x"], "checkpoint {u}/nope.pt does not exist"),
    "truncated checkpoint": (["-c", "{u}/truncated.pt", "x"], "truncated.pt is not a readable minitrans checkpoint"),
    "text as checkpoint": (["-c", "{u}/text.pt", "x"], "text.pt is not a readable minitrans checkpoint"),
    "a tensor file": (["-c", "{u}/tensor.pt", "x"], "tensor.pt is not a minitrans checkpoint"),
    "a later format": (["-c", "{u}/future.pt", "x"], "future.pt has checkpoint format version 99"),
    "weights that do not fit": (["-c", "{u}/mismatched.pt", "x"], "(missing decoder.final_norm.bias)"),
    "a run without checkpoints": (["-c", "{u}/empty_run", "x"], "no checkpoint found in {u}/empty_run"),
    "a broken export": (["-c", "{u}/broken_export", "x"], "CTranslate2 cannot load {u}/broken_export"),
    "non-UTF-8 stdin": (["-c", "{u}/run"], "standard input is not valid UTF-8 (line 2, byte 8 of the line)"),
    "non-UTF-8 file": (["-c", "{u}/run", "-i", "{u}/latin1.de"], "latin1.de is not valid UTF-8 (line 2, byte 4"),
    "missing input": (["-c", "{u}/run", "-i", "{u}/absent.de"], "cannot read {u}/absent.de: No such file"),
    "a folder as input": (["-c", "{u}/run", "-i", "{u}/run"], "cannot read {u}/run: Is a directory"),
    "beam 0": (["-c", "{u}/run", "-b", "0", "x"], "argument -b/--beam-size: must be at least 1, not 0"),
    "n-best over the beam": (["-c", "{u}/run", "-b", "2", "-n", "4", "x"], "--n-best 4 is larger than the beam size 2"),
    "threads 0": (["-c", "{u}/run", "--threads", "0", "x"], "argument --threads: must be at least 1, not 0"),
    "no such device": (["-c", "{u}/run", "--device", "gpu0", "x"], "--device 'gpu0' is not a device"),
    "no checkpoint given": (["x"], "the following arguments are required: -c/--checkpoint"),
    "sentences and a file": (["-c", "{u}/run", "-i", "{u}/in.de", "x"], "give sentences as arguments or with -i"),
    "output into a missing folder": (
        ["-c", "{u}/run", "-o", "{u}/no/such/out.en", "x"],
        "cannot write {u}/no/such/out.en: No such file or directory",
    ),
    "output is a folder": (["-c", "{u}/run", "-o", "{u}/run", "x"], "cannot write {u}/run: Is a directory"),
    "output under a file": (["-c", "{u}/run", "-o", "{u}/a_file/out.en", "x"], "cannot write {u}/a_file/out.en"),
    "output to a full disk": (["-c", "{u}/run", "-o", "/dev/full", "x"], "No space left on device"),
    "output is the input": (["-c", "{u}/run", "-i", "{u}/in.de", "-o", "{u}/in.de"], "are the same file"),
    "head spec": (["-c", "{u}/run", "--mask-heads", "cross:1", "x"], "'cross:1' is not KIND:LAYER:HEAD"),
    "head out of range": (["-c", "{u}/run", "--mask-heads", "cross:9:1", "x"], "--mask-heads: cross has layers 1-2"),
    "head kind": (["-c", "{u}/run", "--mask-heads", "self:1:1", "x"], "kind 'self' is not one of"),
    "length penalty, greedy": (
        ["-c", "{u}/run", "--greedy", "--length-penalty", "0.6", "x"],
        "the length penalty is read by beam search only",
    ),
    "length ratio inf": (
        ["-c", "{u}/run", "--max-len-ratio", "inf", "x"],
        "the maximum length ratio must be a number from 0 to 256",
    ),
    "length ratio nan": (["-c", "{u}/run", "--max-len-ratio", "nan", "x"], "argument --max-len-ratio: must be >= 0"),
    "huge extra length": (
        ["-c", "{u}/run", "--max-len-extra", str(10**30), "x"],
        "the maximum extra length must be from 0 to 256 pieces",
    ),
    "attention into a file": (
        ["-c", "{u}/run", "--attention", "{u}/a_file", "x"],
        "--attention {u}/a_file: cannot make the folder for the figures",
    ),
    "attention from CTranslate2": (
        ["-c", "{u}/export", "--attention", "{u}/maps", "x"],
        "--attention, --show-attention and --mask-heads need the minitrans engine",
    ),
    "CTranslate2 on a checkpoint": (
        ["-c", "{u}/run", "--engine", "ctranslate2", "x"],
        "is not a minitrans CTranslate2 export",
    ),
    "ours on an export": (["-c", "{u}/export", "--engine", "minitrans", "x"], "is a CTranslate2 export"),
    "compute type": (["-c", "{u}/run", "--compute-type", "int4", "x"], "float32, bfloat16 or int8, not 'int4'"),
    "CTranslate2 compute type": (["-c", "{u}/export", "--compute-type", "int4", "x"], "CTranslate2 cannot load"),
    "a truncated package": (["-c", "{u}/truncated.argosmodel", "x"], "is not a readable Argos package"),
    "another's package": (["-c", "{u}/theirs.argosmodel", "x"], "is not an Argos package made by minitrans"),
    "ours on a package": (
        ["-c", "{u}/package.argosmodel", "--engine", "minitrans", "x"],
        "is an Argos package: translate it with the ctranslate2 engine",
    ),
}


@pytest.mark.parametrize("case", TRANSLATE)
def test_translate_py(case, user, untouched, capsys, monkeypatch):
    argv, expected = TRANSLATE[case]
    stdin = b"gut\nkaputt \xff\n" if case == "non-UTF-8 stdin" else None
    status, stderr = in_process(translate.main, [a.format(u=user) for a in argv], capsys, stdin, monkeypatch)
    one_line(status, stderr, expected.format(u=user))


# Root reads and writes any file whatever its permissions (and CI runs as root): as root, the
# command runs as nobody (setpriv), on a copy of the run in a folder nobody may read.
AS_NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] if os.geteuid() == 0 else []


@pytest.mark.skipif(bool(AS_NOBODY) and not shutil.which("setpriv"), reason="as root, setpriv (util-linux) is needed")
@pytest.mark.parametrize("locked", ["input", "output folder", "export folder"])
def test_files_the_user_may_not_read_or_write(locked, user, untouched):
    home = Path(tempfile.mkdtemp(prefix="minitrans-locked-"))
    try:
        home.chmod(0o755)  # nobody may enter it (mkdtemp makes it the owner's alone)
        (home / "run" / "checkpoints").mkdir(parents=True)
        shutil.copy(user / "run" / "checkpoints" / "best.pt", home / "run" / "checkpoints")
        for folder in (home / "run", home / "run" / "checkpoints"):
            folder.chmod(0o755)
        (home / "run" / "checkpoints" / "best.pt").chmod(0o644)
        path = home / "locked"
        if locked == "input":
            path.write_text("Ein Hund.\n")
            path.chmod(0o000)
            argv = command("translate.py", "-c", home / "run", "-i", path)
        else:
            path.mkdir()
            path.chmod(0o555)  # may be read and entered, not written
            argv = (
                command("translate.py", "-c", home / "run", "-o", path / "out.en", "x")
                if locked == "output folder"
                else command("export.py", "-c", home / "run", path / "export")
            )
        done = subprocess.run(AS_NOBODY + argv, cwd=home, capture_output=True, text=True, timeout=300)
        one_line(done.returncode, done.stderr, "Permission denied")
    finally:
        shutil.rmtree(home)  # the locked things are empty, in a folder of ours: removable as they are


def test_what_once_failed_now_translates(user, untouched, capsys):
    """int8 with silenced heads once raised a traceback (no float weight to find a device on): now
    one translation a line (the toy run's may be empty: it has learnt little)."""
    status = translate.main(
        ["-c", str(user / "run"), "--compute-type", "int8", "--mask-heads", "cross:1:1", "Ein Hund.", "Katze."]
    )
    captured = capsys.readouterr()
    assert status == 0 and captured.out.count("\n") == 2 and not captured.err


# --- export.py, heads.py ------------------------------------------------------------------------

EXPORT = {
    "missing checkpoint": (["-c", "{u}/nope", "{u}/out"], "checkpoint {u}/nope does not exist"),
    "corrupt checkpoint": (["-c", "{u}/truncated.pt", "{u}/out"], "is not a readable minitrans checkpoint"),
    "onto a file": (["-c", "{u}/run", "{u}/a_file"], "{u}/a_file exists and is not a minitrans export"),
    "onto a file, forced": (
        ["-c", "{u}/run", "{u}/a_file", "--force"],
        "{u}/a_file exists and is not a minitrans export",
    ),
    "onto another folder": (["-c", "{u}/run", "{u}/not_export", "--force"], "is not a minitrans export; not replacing"),
    "onto an export": (["-c", "{u}/run", "{u}/export"], "{u}/export is an earlier export; give --force"),
    "under a file": (["-c", "{u}/run", "{u}/a_file/out"], "cannot write {u}/a_file/out: "),
    "quantization": (["-c", "{u}/run", "{u}/out", "--quantize", "int4"], "argument --quantize: invalid choice"),
    "engine": (["-c", "{u}/run", "{u}/out", "--to", "onnx"], "argument --to: invalid choice"),
    "argos, a run without checkpoints": (
        ["-c", "{u}/empty_run", "{u}/out.argosmodel", "--to", "argos"],
        "no checkpoint found in {u}/empty_run",
    ),
    "argos, a language argos does not know": (
        ["-c", "{u}/run", "{u}/out.argosmodel", "--to", "argos", "--from-lang", "xx"],
        "the from language 'xx' is not one: give --from-lang CODE",
    ),
    "argos, one language": (
        ["-c", "{u}/run", "{u}/out.argosmodel", "--to", "argos", "--to-lang", "de"],
        "the package would translate de into itself: give the languages with --from-lang and --to-lang",
    ),
    "argos, onto another's package, forced": (
        ["-c", "{u}/run", "{u}/theirs.argosmodel", "--to", "argos", "--force"],
        "{u}/theirs.argosmodel is an Argos package that minitrans did not write; not replacing it",
    ),
    "argos, onto a package": (
        ["-c", "{u}/run", "{u}/package.argosmodel", "--to", "argos"],
        "{u}/package.argosmodel exists; give --force to replace it",
    ),
    "argos, onto a file, forced": (
        ["-c", "{u}/run", "{u}/notes.argosmodel", "--to", "argos", "--force"],
        "{u}/notes.argosmodel exists and is not an Argos package; not replacing it",
    ),
    "argos, into a file": (["-c", "{u}/run", "{u}/a_file", "--to", "argos"], "{u}/a_file is a file, not a folder"),
    "argos settings for CTranslate2": (
        ["-c", "{u}/run", "{u}/out", "--from-lang", "de", "--package-version", "2.0"],
        "--from-lang, --package-version: read with --to argos only",
    ),
}


@pytest.mark.parametrize("case", EXPORT)
def test_export_py(case, user, untouched, capsys):
    argv, expected = EXPORT[case]
    status, stderr = in_process(export.main, [a.format(u=user) for a in argv], capsys)
    one_line(status, stderr, expected.format(u=user))


HEADS = {
    "missing checkpoint": (["-c", "{u}/nope"], "checkpoint {u}/nope does not exist"),
    "no sentences": (["-c", "{u}/run", "--sentences", "0"], "argument --sentences: must be at least 1"),
    "missing data folder": (
        ["-c", "{u}/run", "--data-dir", "{u}/nowhere", "-o", "{u}/x.json"],
        "Multi30k folder {u}/nowhere (from data.dir) does not exist",
    ),
}


@pytest.mark.parametrize("case", HEADS)
def test_heads_py(case, user, untouched, capsys):
    argv, expected = HEADS[case]
    status, stderr = in_process(heads.main, [a.format(u=user) for a in argv], capsys)
    one_line(status, stderr, expected.format(u=user))


# --- the Python API ----------------------------------------------------------------------------

API = {
    "missing": (dict(path="{u}/nope"), "checkpoint {u}/nope does not exist"),
    "engine": (dict(path="{u}/run", engine="onnx"), "unknown engine 'onnx'"),
    "compute type": (dict(path="{u}/run", compute_type="int16"), "float32, bfloat16 or int8, not 'int16'"),
    "length penalty, greedy": (dict(path="{u}/run", beam_size=1, length_penalty=0.6), "read by beam search only"),
    "length ratio": (
        dict(path="{u}/export", max_len_ratio=float("nan")),
        "ratio must be a number of at least 0, not nan",
    ),
    "length ratio past the positions": (
        dict(path="{u}/export", max_len_ratio=1e9),
        "ratio must be a number from 0 to 256",
    ),
    "extra length": (
        dict(path="{u}/run", max_len_extra=-1),
        "extra length must be a whole number of at least 0, not -1",
    ),
    "extra length past the positions": (dict(path="{u}/run", max_len_extra=300), "extra length must be from 0 to 256"),
    "unknown search setting": (dict(path="{u}/run", beams=3), "unknown search setting"),
    "an export with ours": (dict(path="{u}/export", engine="minitrans"), "is a CTranslate2 export"),
    "a checkpoint with CTranslate2": (dict(path="{u}/run", engine="ctranslate2"), "not a minitrans CTranslate2 export"),
}


@pytest.mark.parametrize("case", API)
def test_python_api(case, user, untouched):
    arguments, expected = API[case]
    with pytest.raises(UserError) as error:
        load_translator(**{**arguments, "path": arguments["path"].format(u=user)})
    assert expected.format(u=user) in str(error.value) and "\n" not in str(error.value)


# --- train.py, in its own process ---------------------------------------------------------------

TRAIN = {
    "misspelled key": (["train.lrr=1"], "Could not override 'train.lrr'; Key 'lrr' not in 'TrainConfig'"),
    "wrong type": (["train.max_steps=abc"], "Value 'abc' of type 'str' could not be converted to Integer"),
    "unknown option": (["model=huge"], "Could not find 'model/huge'; available: auto, base, compact, small, tiny"),
    "precision": (["train.precision=fp8"], "train.precision must be auto, fp32 or bf16, not 'fp8'"),
    "heads": (["model.n_heads=7"], "invalid config: d_model (64) must be divisible by n_heads (7)"),
    "learning rate": (["train.lr=-1"], "train.lr must be positive, not -1.0"),
    "betas": (["train.betas=[0.9,1.5]"], "train.betas must be two numbers in [0, 1), not [0.9, 1.5]"),
    "dropout": (
        ["model.dropout=1.2"],
        "invalid config: dropout and attention_dropout must be in [0, 1), not 1.2",
    ),
    "warmup": (["train.warmup_steps=-5"], "train.warmup_steps must be >= 0, not -5"),
    "empty probe": (["train.attention_sentences=['Ein Hund.','  ']"], "train.attention_sentences holds an empty"),
    "resume and init": (
        ["train.init_from=x", "train.resume=y"],
        "give train.resume (continue a run) or train.init_from",
    ),
    "reserve": (["train.reserve_minutes=60"], "train.reserve_minutes must be at least 0 and below train.max_minutes"),
    "subword sampling": (["data.subword_sampling=-0.5"], "data.subword_sampling must be >= 0 (0: off)"),
    "sampling with BPE": (
        ["data.subword_sampling=0.5", "data.tokenizer.model_type=bpe"],
        "data.subword_sampling needs data.tokenizer.model_type=unigram",
    ),
    "sampling with augmentation": (
        ["data.subword_sampling=0.5"],  # the recipe's augmentation is on
        "use one of them (experiment=plain turns the augmentation off)",
    ),
    "validation size": (["data=files", "data.train=x", "data.val_size=0"], "data.val_size must be positive, not 0"),
    "quoting": (["data=tsv", "data.train=x", "data.quoting=excel"], "data.quoting must be none or csv, not 'excel'"),
    "missing folder": (["data.dir=/does/not/exist"], "Multi30k folder /does/not/exist (from data.dir) does not exist"),
    "no GPU": (["train.device=cuda:0"], "train.device is cuda:0 but no CUDA GPU is available"),
    "unread: files with Multi30k": (
        ["data.train=/corpus/train"],
        "data.train is read by data=files, tsv, jsonl, hf; add data=files",
    ),
    "unread: floor without decay": (
        ["train.schedule=constant", "train.lr_floor=0.1"],
        "train.lr_floor is read by train.schedule=linear only",
    ),
    "unread: a checkpoint average with the moving average": (
        ["train.ema_decay=0.999", "train.average_last=3"],
        "train.average_last is read only without train.ema_decay (the moving average is evaluated instead)",
    ),
    "moving average decay": (["train.ema_decay=1"], "train.ema_decay must be in [0, 1) (0: no moving average)"),
    "both directions": (["train.bidirectional=1"], "train.bidirectional must be in [0, 1): the fraction"),
    "both directions in two vocabularies": (
        ["train.bidirectional=0.3", "data.tokenizer.joint=false"],
        "train.bidirectional needs one joint vocabulary (data.tokenizer.joint=true)",
    ),
    "R-Drop weight": (["train.rdrop=-1"], "train.rdrop must be >= 0 (R-Drop's weight alpha; 0: off)"),
    "R-Drop without dropout": (
        ["train.rdrop=5", "model=compact", "model.dropout=0", "model.attention_dropout=0"],
        "train.rdrop needs dropout (model.dropout or model.attention_dropout above 0)",
    ),
    "unread: vocabulary size": (["model.src_vocab_size=1000"], "model.src_vocab_size is not read: a run takes it"),
    "unread: a shape setting with the table": (
        ["model=auto", "model.dropout=0.25"],
        "model.dropout is not read with model=auto, whose table picks the shape",
    ),
    "a table without a row for any budget": (
        ["model=auto", "shapes.compact.min_steps=10"],
        "the shape table (model=auto) needs a row with min_steps 0",
    ),
    "unread: header of JSONL": (["data=jsonl", "data.train=x", "data.header=true"], "data.header is read by data=tsv"),
    "line counts": (
        ["data=files", "data.train={u}/short"],
        "line counts differ: {u}/short.de has 3 lines, {u}/short.en has 2",
    ),
    "not UTF-8": (["data=files", "data.train={u}/latin1"], "{u}/latin1.de is not valid UTF-8 (line 2, byte 4"),
    "empty split": (["data=files", "data.train={u}/empty"], "holds no pairs for split 'train'"),
    "too few columns": (["data=tsv", "data.train={u}/two_columns.tsv"], "two_columns.tsv line 2 has 1 column(s)"),
    "not JSON": (["data=jsonl", "data.train={u}/bad.jsonl"], "bad.jsonl line 2 is not JSON"),
    "half a character": (["data=jsonl", "data.train={u}/half.jsonl"], "half of a UTF-16 surrogate pair"),
    "corrupt resume": (["train.resume={u}/truncated.pt"], "truncated.pt is not a readable minitrans checkpoint"),
    "resume from weights only": (
        ["train.resume={u}/run/checkpoints/best.pt"],
        "holds weights only (no training state) and cannot be resumed",
    ),
    "resume a run of weights only": (
        ["train.resume={u}/run"],
        "{u}/run has no training checkpoint (step_N.pt) to resume from, only the weights of best.pt",
    ),
    "another language pair": (
        ["train.init_from={u}/run", "data.src_lang=en", "data.tgt_lang=de"],
        "translates de->en, but this run is en->de",
    ),
    "too many pieces": (
        ["data.tokenizer.vocab_size=100000"],
        "SentencePiece training failed: Vocabulary size too high (100000). Please set it to a value <= 355",
    ),
    "run folder under a file": (["hydra.run.dir={u}/a_file/run"], "Not a directory: {u}/a_file"),
    "cache under a file": (["data.cache_dir={u}/a_file/cache"], "Not a directory: {u}/a_file/cache"),
    "download refused": (
        ["data.dir=null", "data.url='http://127.0.0.1:{port}/{{split}}.{{lang}}.gz'"],
        "cannot download http://127.0.0.1:{port}/train.de.gz: connection refused",
    ),
    "no such dataset on the hub": (
        ["data=hf", "data.name=nobody/nothing"],
        "'nobody/nothing' is not a dataset on the Hugging Face hub",
    ),
}


@pytest.mark.parametrize("case", TRAIN)
def test_train_py(case, user, untouched, tmp_path):
    overrides, expected = TRAIN[case]
    port = free_port()
    overrides = [o.format(u=user, port=port) for o in overrides]
    env = {k: v for k, v in os.environ.items() if k != "MULTI30K_DIR"}
    base = ["experiment=ci", f"data.cache_dir={tmp_path / 'cache'}"]
    if not any(o.startswith(("data=", "data.dir=")) for o in overrides):
        base += [f"data.dir={TOY_CORPUS}", "data.tokenizer.vocab_size=340"]  # the toy corpus, where a case has no data
    if case == "no such dataset on the hub":
        with serving(EmptyHubHandler) as hub:
            env.update(HF_ENDPOINT=hub, HF_HUB_OFFLINE="0", HF_DATASETS_OFFLINE="0")
            result = run_train(tmp_path / "run", *base, *overrides, check=False, env=env)
    else:
        result = run_train(tmp_path / "run", *base, *overrides, check=False, env=env)
    one_line(result.returncode, result.stderr, expected.format(u=user, port=port))


# --- data files, fuzzed ------------------------------------------------------------------------

TEXT = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]) | st.sampled_from('\t\n\r"{}[]\\'), max_size=40
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    source=st.lists(st.binary(max_size=30) | TEXT.map(str.encode), max_size=6),
    target=st.lists(st.binary(max_size=30) | TEXT.map(str.encode), max_size=6),
)
def test_any_parallel_files_load_or_say_why_in_one_line(source, target, tmp_path):
    """Whatever bytes two files of a split hold: pairs, or one UserError line; never another error."""
    for lang, lines in (("de", source), ("en", target)):
        (tmp_path / f"corpus.{lang}").write_bytes(b"\n".join(lines))
    corpus = str(tmp_path / "corpus")
    try:
        text = load_corpus(DataConfig(source="files", train=corpus, val=corpus))
    except UserError as error:
        assert "\n" not in str(error)
    else:
        content = b"\n".join(source)  # as many pairs as lines, a last "\n" ending a line, not starting one
        assert len(text["val"]) == len(content.split(b"\n")) - content.endswith(b"\n")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    kind=st.sampled_from(["tsv", "jsonl"]),
    header=st.booleans(),
    quoting=st.sampled_from(["none", "csv"]),
    lines=st.lists(
        TEXT
        | st.builds(
            json.dumps,
            st.dictionaries(st.sampled_from(["de", "en", "translation"]), TEXT | st.dictionaries(TEXT, TEXT)),
        ),
        max_size=5,
    ),
)
def test_any_table_loads_or_says_why_in_one_line(kind, header, quoting, lines, tmp_path):
    path = tmp_path / f"corpus.{kind}"
    path.write_text("\n".join(lines), encoding="utf-8")
    settings = dict(header=header, quoting=quoting, src_field="0", tgt_field="1") if kind == "tsv" else {}
    try:
        load_corpus(DataConfig(source=kind, train=str(path), val=str(path), **settings))
    except UserError as error:
        assert "\n" not in str(error)


NUMBERS = st.one_of(
    st.integers(-(10**20), 10**20),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(string.ascii_letters + string.digits + ".-", max_size=8),
)


@settings(max_examples=80, deadline=None)
@given(
    name=st.sampled_from(
        [
            "train.lr",
            "train.max_steps",
            "train.max_minutes",
            "train.reserve_minutes",
            "train.warmup_steps",
            "train.label_smoothing",
            "train.ema_decay",
            "train.bidirectional",
            "train.rdrop",
            "train.max_tokens",
            "train.eval_every",
            "model.dropout",
            "model.d_model",
            "model.n_heads",
            "data.val_size",
            "data.tokenizer.vocab_size",
            "data.subword_sampling",
        ]
    ),
    value=NUMBERS,
)
def test_any_setting_value_is_taken_or_refused_in_one_line(name, value):
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from helpers import compose_config
    from training.config import to_run_config

    override = f"{name}={value!r}" if isinstance(value, str) else f"{name}={value}"
    try:
        to_run_config(compose_config(override), [override])
    except UserError as error:
        assert "\n" not in str(error)
    except (HydraException, OmegaConfBaseException):
        pass  # a value of the wrong type: train.py says these in one line too (test_train_py's cases)
