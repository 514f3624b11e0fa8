"""`export.py --to argos`: a package argostranslate installs and translates with offline, as our
own CTranslate2 engine translates, sentence by sentence; translate.py reads it too. Its bad
inputs are in test_bad_input.py."""

import json
import os
import subprocess
import tempfile
import urllib.request
import zipfile
from pathlib import Path

import pytest

from helpers import SENTENCES, run_script, toy_sentences, unseen_sentences
from helpers.argos import argos_python, started_libretranslate, upstream_argos_python
from helpers.browser import browser_missing, headless_chromium, wait_for
from helpers.servers import free_port
from inference import load_translator
from inference.argos_package import offline_environ

pytestmark = pytest.mark.xdist_group("test_argos_package")  # its module fixtures made once, on one worker

pytest.importorskip("onnx", reason="the onnx package is not installed (requirements.txt has it)")

NAME = "minitrans-de_en-1_0"
# argos decodes up to 256 pieces (CTranslate2's default); ours no further than the model's 256 positions
ARGOS_LIMIT = 256


@pytest.fixture(scope="module")
def package(ci_run, tmp_path_factory) -> Path:
    """The ci run exported as a user does it, into a folder: the file is named after the package."""
    folder = tmp_path_factory.mktemp("packages")
    done = run_script("export.py", "-c", ci_run, folder, "--to", "argos")
    path = folder / f"{NAME}.argosmodel"
    assert f"wrote {path} (Argos Translate package" in done.stdout
    assert "install_from_path" in done.stdout
    return path


def test_the_package_holds_what_argostranslate_reads(package, ci_run):
    """One folder; metadata with the run's languages; the CTranslate2 model; the run's own
    SentencePiece model; a MiniSBD splitter for German; a model card with the run's test score,
    its split and dataset, and the splitter's measured precision and recall."""
    from inference.checkpoint import load_for_inference

    with zipfile.ZipFile(package) as archive:
        names = archive.namelist()
        assert {name.split("/")[0] for name in names} == {NAME}
        assert {f"{NAME}/{n}" for n in ("metadata.json", "sentencepiece.model", "README.md")} <= set(names)
        assert {f"{NAME}/model/{n}" for n in ("model.bin", "config.json", "minitrans.json")} <= set(names)
        assert f"{NAME}/minisbd/de.onnx" in names
        metadata = json.loads(archive.read(f"{NAME}/metadata.json"))
        spm = archive.read(f"{NAME}/sentencepiece.model")
        card = archive.read(f"{NAME}/README.md").decode()
    assert metadata["from_code"] == "de" and metadata["to_code"] == "en"
    assert (metadata["from_name"], metadata["to_name"]) == ("German", "English")
    assert metadata["type"] == "translate" and metadata["package_version"] == "1.0"
    assert spm == load_for_inference(ci_run)[1].src_model
    results = json.loads((ci_run / "results.json").read_text())
    bleu = results["test"]["test_2016_flickr"]["bleu"]
    assert f"split test_2016_flickr | {bleu:.2f}" in card
    assert "precision" in card and "recall" in card and "export.py -c" in card


def test_name_and_version_are_settings_and_force_replaces_a_package(ci_run, tmp_path):
    """--package-name and --package-version name the folder, the file and the metadata; the
    empty index goes beside the file; --force replaces an earlier package (without it: one line,
    test_bad_input.py)."""
    out = tmp_path / "packages"  # not there yet: made
    args = ["-c", ci_run, out, "--to", "argos", "--package-name", "my-de-en", "--package-version", "2.1"]
    run_script("export.py", *args)
    path = out / "my-de-en-2_1.argosmodel"
    metadata = json.loads(zipfile.ZipFile(path).read("my-de-en-2_1/metadata.json"))
    assert (metadata["package_name"], metadata["package_version"]) == ("my-de-en", "2.1")
    assert json.loads((out / "index.json").read_text()) == []
    earlier = path.stat().st_mtime_ns
    run_script("export.py", *args, "--force")
    assert path.stat().st_mtime_ns != earlier and zipfile.ZipFile(path).testzip() is None


def test_translate_py_reads_the_package_as_the_export_in_it(package, ci_run, tmp_path):
    run_script("export.py", "-c", ci_run, tmp_path / "export")
    through_package = run_script("translate.py", "-c", package, *SENTENCES).stdout
    through_export = run_script("translate.py", "-c", tmp_path / "export", *SENTENCES).stdout
    assert through_package == through_export and len(through_package.splitlines()) == len(SENTENCES)


ARGOS = """
import json, sys
import argostranslate.package, argostranslate.translate
argostranslate.package.install_from_path(sys.argv[1])
texts = json.load(sys.stdin)
print(json.dumps([argostranslate.translate.translate(text, "de", "en") for text in texts]))
"""


@pytest.mark.parametrize("argostranslate", ["argos-translate-lt", "upstream"])
def test_argostranslate_installs_it_and_translates_offline_as_our_engine(argostranslate, package, tmp_path):
    """argostranslate (argos-translate-lt, the fork LibreTranslate runs, and upstream
    argostranslate 1.11.0) installs the file and translates, with
    no network and no splitter to download, exactly as our CTranslate2 engine does with argos's
    beam 4 and length penalty 0.2 (and its length limit) the sentences the package's splitter finds: each toy sentence
    whole, a paragraph of four sentence by sentence, shuffled words wherever the splitter cuts."""
    from minisbd import SBDetect

    python = argos_python() if argostranslate == "argos-translate-lt" else upstream_argos_python()
    known, paragraph = toy_sentences()[:20], " ".join(toy_sentences()[20:24])
    texts = [*known, paragraph, *unseen_sentences(20)]  # unseen: the model unsure, the search decides
    done = subprocess.run(
        [python, "-c", ARGOS, package],
        input=json.dumps(texts),
        capture_output=True,
        text=True,
        env=offline_environ(tmp_path),
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    theirs = json.loads(done.stdout.splitlines()[-1])
    splitter = SBDetect(str(tmp_path / "packages" / NAME / "minisbd" / "de.onnx"), use_gpu=False)
    assert [splitter.sentences(s) for s in known] == [[s] for s in known]
    assert splitter.sentences(paragraph) == toy_sentences()[20:24]
    # argos's search: beam 4, length penalty 0.2, no limit below the model's positions
    ours = load_translator(package, beam_size=4, length_penalty=0.2, max_len_ratio=0, max_len_extra=ARGOS_LIMIT)
    assert theirs == [" ".join(ours.translate(splitter.sentences(text))) for text in texts]
    assert not list((tmp_path / "data").rglob("*.onnx")), "MiniSBD fetched a splitter of its own"


# --- LibreTranslate ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def libretranslate(package, tmp_path_factory):
    """LibreTranslate serving the package on 127.0.0.1 with no network, started as the README
    says: the package installed, the empty index the export wrote beside it, de and en only."""
    python = argos_python()
    home = tmp_path_factory.mktemp("libretranslate")
    env = {**offline_environ(home), "ARGOS_PACKAGE_INDEX": f"file://{package.parent}/"}
    install = "import argostranslate.package as p, sys; p.install_from_path(sys.argv[1])"
    subprocess.run([python, "-c", install, package], env=env, check=True, capture_output=True, timeout=120)
    port = free_port()
    server = subprocess.Popen(
        [python.parent / "libretranslate", "--host", "127.0.0.1", "--port", str(port), "--load-only", "de,en"]
        + ["--frontend-language-source", "de", "--frontend-language-target", "en"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        yield started_libretranslate(server)
    finally:
        server.terminate()
        server.wait(timeout=30)


def _post(url: str, **form) -> dict:
    request = urllib.request.Request(
        url, data=json.dumps(form).encode(), headers={"Content-Type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(request, timeout=120) as answer:
        return json.loads(answer.read())


def test_libretranslate_serves_it_offline(libretranslate, package):
    """GET /languages lists the pair; POST /translate answers with our translation of what the
    splitter finds, for sentences, a paragraph and HTML (its tags kept, its text translated);
    it started without installing anything else."""
    from minisbd import SBDetect

    url, said = libretranslate
    assert "Found 0 models" in said and "Downloading" not in said
    languages = {
        language["code"]: language for language in json.loads(urllib.request.urlopen(f"{url}/languages").read())
    }
    assert set(languages) == {"de", "en"} and "en" in languages["de"]["targets"]
    assert languages["de"]["name"] == "German"
    with zipfile.ZipFile(package) as archive, tempfile.TemporaryDirectory() as work:
        archive.extract(f"{NAME}/minisbd/de.onnx", work)
        splitter = SBDetect(str(Path(work) / NAME / "minisbd" / "de.onnx"), use_gpu=False)
    ours = load_translator(package, beam_size=4, length_penalty=0.2, max_len_ratio=0, max_len_extra=ARGOS_LIMIT)
    texts = [*toy_sentences()[30:34], " ".join(toy_sentences()[34:38])]
    for text in texts:
        answer = _post(f"{url}/translate", q=text, source="de", target="en", format="text")
        assert answer["translatedText"] == " ".join(ours.translate(splitter.sentences(text))), text
    sentence = toy_sentences()[40]
    html = _post(f"{url}/translate", q=f"<p>{sentence}</p>", source="de", target="en", format="html")
    assert html["translatedText"] == f"<p>{ours.translate([sentence])[0]}</p>"


def test_libretranslate_page_translates_what_is_typed(libretranslate, package, tmp_path):
    """The web page in headless Chromium: German typed into the left box, our translation appears
    in the right one (the screenshot shows it)."""
    if missing := browser_missing():
        pytest.skip(missing)
    from selenium.webdriver.common.by import By

    url, _ = libretranslate
    sentence = toy_sentences()[41]
    expected = load_translator(package, beam_size=4, length_penalty=0.2).translate([sentence])[0]
    chrome = headless_chromium()
    try:
        chrome.get(url)
        box = wait_for(chrome, lambda d: d.find_element(By.ID, "textarea1"), "the page")
        box.send_keys(sentence)
        shown = wait_for(chrome, lambda d: d.find_element(By.ID, "textarea2").get_property("value"), "a translation")
        chrome.save_screenshot(str(tmp_path / "libretranslate.png"))
        if screenshot := os.environ.get("LIBRETRANSLATE_SCREENSHOT"):
            chrome.save_screenshot(screenshot)
    finally:
        chrome.quit()
    assert shown == expected
