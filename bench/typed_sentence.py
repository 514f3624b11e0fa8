"""From typing a sentence into the ATTENTION tab to its map, in a real headless Chromium.

    .venv/bin/python bench/typed_sentence.py --logdir runs --run RUN [-n 10] [--checkpoint best]

Starts `tensorboard --logdir LOGDIR`, opens the tab on RUN, and for each of the first N
validation sentences of RUN's source language (from $MULTI30K_DIR) types it into the box,
presses Enter and times in the page (performance.now()) until its heatmap is drawn: the
request, the translation (beam 5) and all its attention in TensorBoard's process, and the
drawing. Then it clicks a row of the heatmap and times the inside view of that query. The
first sentence also loads the checkpoint (and torch) into TensorBoard's process; the median
is over the others. Writes bench/results/typed_sentence.json with the commit and CPU.
"""

import argparse
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
from bench.common import RESULTS, checkpoint_and_split, write_result  # noqa: E402
from helpers.browser import TensorBoard, browser_missing, headless_chromium, wait_for  # noqa: E402

# In the page (TensorBoard's pages allow no eval): do one of two things, then wait until the
# body records a drawing that ends in `suffix`; milliseconds.
TIMED = """
const [action, sentence, suffix, done] = arguments;
const start = performance.now();
if (action === 'type') {
  document.getElementById('typed-text').value = sentence;
  document.getElementById('translate').click();
} else {
  document.querySelector('#heatmap rect.cell[data-q="1"]').dispatchEvent(new MouseEvent('click'));
}
const look = () => (document.body.dataset.drawn || '').endsWith(suffix)
  ? done(performance.now() - start) : setTimeout(look, 2);
look();
"""
# back to the heatmap of the mean of heads, as the tab opens
MAP_VIEW = """for (const [id, value] of [['view_select', 'map'], ['head', 'mean']]) {
  const select = document.getElementById(id); select.value = value; select.dispatchEvent(new Event('change'));
}"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--logdir", type=Path, required=True)
    parser.add_argument("--run", required=True, help="the run's name as the tab lists it (its path under LOGDIR)")
    parser.add_argument("-n", type=int, default=10, help="sentences (default 10)")
    parser.add_argument("--checkpoint", default="best", help="best (default) or a step with a saved checkpoint")
    args = parser.parse_args()
    if missing := browser_missing():
        sys.exit(f"error: {missing}")
    _, _, meta, text = checkpoint_and_split(str(args.logdir / args.run), "val")
    sentences = list(text["src"][: args.n])

    board, driver = TensorBoard(args.logdir), headless_chromium()
    rows = []
    try:
        driver.set_script_timeout(100)  # under the driver's own 120 s
        driver.get(f"{board.url}/data/plugin_entry.html?name=attention")
        wait_for(driver, lambda d: d.execute_script("return document.body.dataset.drawn"), "the first map", 120)
        driver.execute_script(
            "const s = document.getElementById('run'); s.value = arguments[0];"
            "s.dispatchEvent(new Event('change'));"
            "document.getElementById('checkpoint').value = arguments[1];",
            args.run,
            args.checkpoint,
        )
        wait_for(
            driver,
            lambda d: d.execute_script("return document.body.dataset.drawn").startswith(f"{args.run}|"),
            "the run's map",
        )
        for sentence in sentences:
            driver.execute_script(MAP_VIEW)
            to_map = driver.execute_async_script(
                TIMED, "type", sentence, f": {sentence}|0|cross|0|mean|map"
            )  # "typed best VERSION: ..."
            to_inside = driver.execute_async_script(TIMED, "click", "", "|inside|q1")
            rows.append({"sentence": sentence, "ms_to_map": round(to_map, 1), "ms_to_inside_view": round(to_inside, 1)})
            print(f"{to_map:8.1f} ms to its map, {to_inside:6.1f} ms to the inside view   {sentence}")
    finally:
        driver.quit()
        board.close()
    warm = rows[1:]
    result = {
        "run": args.run,
        "checkpoint": args.checkpoint,
        "languages": f"{meta['src_lang']}-{meta['tgt_lang']}",
        "first_ms_to_map": rows[0]["ms_to_map"],
        "median_ms_to_map": statistics.median(r["ms_to_map"] for r in warm),
        "max_ms_to_map": max(r["ms_to_map"] for r in warm),
        "median_ms_to_inside_view": statistics.median(r["ms_to_inside_view"] for r in warm),
        "sentences": rows,
    }
    print(
        f"first (loads the model) {result['first_ms_to_map']:.0f} ms; then median "
        f"{result['median_ms_to_map']:.0f} ms to the map (max {result['max_ms_to_map']:.0f}), "
        f"{result['median_ms_to_inside_view']:.0f} ms to the inside view"
    )
    write_result(RESULTS / "typed_sentence.json", result)


if __name__ == "__main__":
    main()
