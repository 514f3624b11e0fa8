"""A checkpoint's Argos package measured where its users run it: BLEU and speed through
argostranslate and through LibreTranslate's HTTP API, beside our own engines on the same model.

    .venv/bin/python bench/argos.py -c runs/RUN [--libretranslate ~/libretranslate] [--sentences N]

The package is exported as export.py --to argos does (float32, in a temporary folder) and
installed into a folder of its own in the LibreTranslate environment the README makes
(`python3 -m venv ~/libretranslate && ~/libretranslate/bin/pip install libretranslate==1.9.6`;
the tests' copy under .cache/ is used when there is no ~/libretranslate). On Multi30k's
test_2016_flickr (from $MULTI30K_DIR): the package's sentence splitter, run by MiniSBD, on
paragraphs of 1-6 test lines (precision and recall of the boundaries), and cased sacreBLEU of:
- our engine, beam 5 (translate.py's default), and our CTranslate2 export, beam 5;
- our CTranslate2 engine with argostranslate's search (beam 4, length penalty 0.2, up to 256
  pieces) on the package's model: what argos should match;
- argostranslate.translate.translate, a sentence a call (as LibreTranslate calls it), with its
  default threads and with ARGOS_INTER_THREADS=2 ARGOS_INTRA_THREADS=1;
- LibreTranslate's POST /translate, one client a sentence after another and 8 clients at once,
  with argos's default threads and with the two settings above;
- LibreTranslate's format=html, as web pages and browser extensions use it (each text node is
  translated alone): every test sentence in <p> with its second word in <b>, counted for loops
  (inference/robustness.py) in the text without its tags, and "<p>Ein <b>Hund</b> rennt.</p>".
Writes bench/results/argos.json with the commit and CPU.
"""

import argparse
import json
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import zipfile
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from minisbd import SBDetect  # noqa: E402

from bench.common import RESULTS, ROOT, checkpoint_and_split, write_result  # noqa: E402
from inference import load_translator  # noqa: E402
from inference.argos_package import offline_environ  # noqa: E402
from inference.robustness import loops  # noqa: E402
from inference.scoring import score_translations  # noqa: E402
from inference.sentence_splitter import boundary_scores  # noqa: E402

LOCAL = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # to 127.0.0.1 directly, whatever the proxies

THREADS = {"default threads": {}, "ARGOS_INTER_THREADS=2 ARGOS_INTRA_THREADS=1": {
    "ARGOS_INTER_THREADS": "2", "ARGOS_INTRA_THREADS": "1"}}  # fmt: skip

ARGOS = """
import json, sys, time
import argostranslate.package, argostranslate.translate
argostranslate.package.install_from_path(sys.argv[1])
lines = json.load(sys.stdin)
argostranslate.translate.translate(lines[0], "{src}", "{tgt}")  # loads the model and the splitter
start = time.perf_counter()
out = [argostranslate.translate.translate(line, "{src}", "{tgt}") for line in lines]
print(json.dumps({{"seconds": time.perf_counter() - start, "translations": out}}))
"""


def post(url: str, text: str, src: str, tgt: str, form: str = "text") -> str:
    body = json.dumps({"q": text, "source": src, "target": tgt, "format": form}).encode()
    request = urllib.request.Request(f"{url}/translate", data=body, headers={"Content-Type": "application/json"})
    with LOCAL.open(request, timeout=300) as answer:
        return json.loads(answer.read())["translatedText"]


def tagged(sentence: str) -> str:
    """The sentence as a web page holds it: in <p>, its second word in <b>."""
    words = sentence.split(" ")
    if len(words) > 2:
        words[1] = f"<b>{words[1]}</b>"
    return "<p>" + " ".join(words) + "</p>"


def without_tags(html: str) -> str:
    return re.sub(r"<[^>]+>", "", html)


def serve(environment: Path, env: dict[str, str], port: int, src: str, tgt: str, log: Path) -> subprocess.Popen:
    """LibreTranslate on `port`, what it says going to `log`, once it answers."""
    with socket.socket() as probe:  # another server there would answer in its place
        if probe.connect_ex(("127.0.0.1", port)) == 0:
            sys.exit(f"error: port {port} is in use: give --port")
    server = subprocess.Popen(
        [str(environment / "bin" / "libretranslate"), "--host", "127.0.0.1", "--port", str(port)]
        + ["--load-only", f"{src},{tgt}", "--disable-web-ui"],
        env=env,
        stdout=open(log, "w"),
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 120
    while True:  # it binds its port some time after saying so
        try:
            LOCAL.open(f"http://127.0.0.1:{port}/languages", timeout=5).read()
            return server
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                server.kill()
                sys.exit(f"error: LibreTranslate did not start:\n{log.read_text()[-2000:]}")
            time.sleep(0.2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-c", "--checkpoint", required=True)
    parser.add_argument("--libretranslate", type=Path, help="LibreTranslate's environment (default ~/libretranslate)")
    parser.add_argument("--sentences", type=int, help="the first N test sentences only (a quick run)")
    parser.add_argument("--port", type=int, default=5123)
    parser.add_argument("--out", type=Path, default=RESULTS / "argos.json")
    args = parser.parse_args()
    environment = args.libretranslate or next(
        (p for p in (Path.home() / "libretranslate", ROOT / ".cache" / "libretranslate-1.9.6") if p.is_dir()), None
    )
    if environment is None or not (environment / "bin" / "libretranslate").exists():
        sys.exit(
            "error: no LibreTranslate environment: make one with "
            "python3 -m venv ~/libretranslate && ~/libretranslate/bin/pip install libretranslate==1.9.6"
        )
    _, _, meta, text = checkpoint_and_split(args.checkpoint, "test_2016_flickr", args.sentences)
    src, tgt = meta["src_lang"], meta["tgt_lang"]
    sources, references = list(text["src"]), list(text["tgt"])
    results: dict[str, dict] = {}

    def record(name: str, translations: list[str], seconds: float | None = None) -> None:
        bleu = score_translations(translations, references).bleu
        results[name] = {"bleu": round(bleu, 2)}
        if seconds is not None:
            results[name]["sentences_per_sec"] = round(len(sources) / seconds, 1)
        rate = f"{len(sources) / seconds:8.1f} sent/s" if seconds is not None else ""
        print(f"{name:<72} BLEU {bleu:6.2f} {rate}", flush=True)

    with tempfile.TemporaryDirectory() as work:
        folder = Path(work)
        export = [sys.executable, str(ROOT / "export.py"), "-c", args.checkpoint]
        subprocess.run([*export, folder / "export"], check=True, stdout=subprocess.DEVNULL)
        subprocess.run([*export, folder, "--to", "argos"], check=True, stdout=subprocess.DEVNULL)
        [package] = folder.glob("*.argosmodel")
        with zipfile.ZipFile(package) as archive:  # the package's sentence splitter, run by MiniSBD itself
            [onnx] = [name for name in archive.namelist() if name.endswith(f"/minisbd/{src}.onnx")]
            archive.extract(onnx, folder)
        splitter = SBDetect(str(folder / onnx), use_gpu=False)
        scores = boundary_scores(splitter.sentences, sources)
        results["sentence splitter, paragraphs of 1-6 test lines"] = scores
        print(
            f"sentence splitter on {scores['paragraphs']} paragraphs of the test split ({scores['boundaries']} "
            f"boundaries): precision {scores['precision']:.2%}, recall {scores['recall']:.2%}",
            flush=True,
        )
        record("ours, beam 5", load_translator(args.checkpoint).translate(sources))
        record("ours through CTranslate2, beam 5", load_translator(folder / "export").translate(sources))
        argos_search = {"beam_size": 4, "length_penalty": 0.2, "max_len_ratio": 0, "max_len_extra": 256}
        as_argos = load_translator(package, **argos_search).translate(sources)
        record("ours through CTranslate2, the package's model, argos's search (beam 4, lp 0.2)", as_argos)
        python = environment / "bin" / "python"
        for name, threads in THREADS.items():
            home = folder / f"argos {len(results)}"
            done = subprocess.run(
                [str(python), "-c", ARGOS.format(src=src, tgt=tgt), str(package)],
                input=json.dumps(sources),
                capture_output=True,
                text=True,
                env={**offline_environ(home), **threads},
                check=True,
            )
            answer = json.loads(done.stdout.splitlines()[-1])
            record(f"argostranslate, a sentence a call, {name}", answer["translations"], answer["seconds"])
            results[f"argostranslate, a sentence a call, {name}"]["identical_to_ours_with_argos_search"] = sum(
                a == b for a, b in zip(answer["translations"], as_argos)
            )
        for name, threads in THREADS.items():
            home = folder / f"libretranslate {len(results)}"
            env = {**offline_environ(home), **threads, "ARGOS_PACKAGE_INDEX": f"file://{folder}/"}
            install = "import argostranslate.package as p, sys; p.install_from_path(sys.argv[1])"
            subprocess.run([str(python), "-c", install, str(package)], env=env, check=True, capture_output=True)
            server = serve(environment, env, args.port, src, tgt, home / "libretranslate.log")
            try:
                url = f"http://127.0.0.1:{args.port}"
                post(url, sources[0], src, tgt)  # loads the model and the splitter
                for clients in (1, 8):
                    start = time.perf_counter()
                    with ThreadPoolExecutor(clients) as pool:
                        out = list(pool.map(partial(post, url, src=src, tgt=tgt), sources))
                    what = "one client, a sentence after another" if clients == 1 else "8 clients at once"
                    record(f"LibreTranslate POST /translate, {what}, {name}", out, time.perf_counter() - start)
                if name == next(iter(THREADS)):  # the threads do not change what comes back
                    pages = [tagged(source) for source in sources]
                    out = [without_tags(post(url, page, src, tgt, "html")) for page in pages]
                    html = "LibreTranslate format=html, a word of each sentence in <b>"
                    results[html] = {"loops": loops([without_tags(page) for page in pages], out), "pages": len(pages)}
                    if src == "de":
                        example = "<p>Ein <b>Hund</b> rennt.</p>"
                        results[html]["example"] = {example: post(url, example, src, tgt, "html")}
                    print(f"{html}: {results[html]}", flush=True)
            except urllib.error.HTTPError as e:
                said = e.read().decode(errors="replace")[:500]
                sys.exit(
                    f"error: LibreTranslate answered {e}: {said}\n{(home / 'libretranslate.log').read_text()[-3000:]}"
                )
            finally:
                server.terminate()
                server.wait(timeout=30)
    write_result(
        args.out,
        {"split": "test_2016_flickr", "sentences": len(sources), "checkpoint_step": meta.get("step"), "runs": results},
    )


if __name__ == "__main__":
    main()
