"""The reading guide's pictures of the ATTENTION tab (docs/guide.md), taken from a real run in
a real headless Chromium, as a user opens the tab.

    .venv/bin/python docs/screenshots.py --logdir runs --run RUN "Ein Hund rennt durch den Schnee."

Starts `tensorboard --logdir LOGDIR`, opens the tab on RUN, types the sentence, and saves the
cross-attention heatmap (last layer, mean of heads) as docs/guide_tab_map.png and the inside view
of its second target piece (q, k, v, q k^T / sqrt(d_k), softmax, the heads merged) as
docs/guide_tab_inside.png (--out another folder).
"""

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
from bench.typed_sentence import MAP_VIEW, TIMED  # noqa: E402
from helpers.browser import TensorBoard, browser_missing, headless_chromium, wait_for  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--logdir", type=Path, required=True)
    parser.add_argument("--run", required=True, help="the run's name as the tab lists it (its path under LOGDIR)")
    parser.add_argument("--out", type=Path, default=ROOT / "docs")
    parser.add_argument("sentence")
    args = parser.parse_args()
    if missing := browser_missing():
        sys.exit(f"error: {missing}")
    if not (args.logdir / args.run).is_dir():
        sys.exit(f"error: no run {args.run} under {args.logdir}")
    board, driver = TensorBoard(args.logdir), headless_chromium(1400, 900)
    try:
        driver.set_script_timeout(100)
        driver.get(f"{board.url}/data/plugin_entry.html?name=attention")
        wait_for(driver, lambda d: d.execute_script("return document.body.dataset.drawn"), "the first map", 120)
        driver.execute_script(
            "const s = document.getElementById('run'); s.value = arguments[0]; s.dispatchEvent(new Event('change'));",
            args.run,
        )
        wait_for(
            driver,
            lambda d: d.execute_script("return document.body.dataset.drawn").startswith(f"{args.run}|"),
            "the run's map",
        )
        driver.execute_script(MAP_VIEW)
        driver.execute_async_script(TIMED, "type", args.sentence, f": {args.sentence}|0|cross|0|mean|map")
        last_layer = driver.execute_script("const l = document.getElementById('layer'); return l.options.length - 1;")
        driver.execute_script(
            "const l = document.getElementById('layer'); l.value = String(arguments[0]);"
            "l.dispatchEvent(new Event('change'));",
            last_layer,
        )
        wait_for(
            driver,
            lambda d: d.execute_script("return document.body.dataset.drawn").endswith(f"|cross|{last_layer}|mean|map"),
            "the last layer",
        )
        args.out.mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(args.out / "guide_tab_map.png"))
        driver.execute_async_script(TIMED, "click", "", "|inside|q1")
        driver.save_screenshot(str(args.out / "guide_tab_inside.png"))
    finally:
        driver.quit()
        board.close()
    print(f"wrote {args.out / 'guide_tab_map.png'} and {args.out / 'guide_tab_inside.png'}")


if __name__ == "__main__":
    main()
