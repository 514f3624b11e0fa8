"""The ATTENTION tab itself in a real headless Chromium driven by Selenium, as a user opens it."""

import os
import re
import shutil

import pytest

from helpers.browser import TensorBoard, browser_missing, headless_chromium, wait_for
from viz.attention_store import read_step, steps

# made once, its module-scoped fixtures: its tests stay on one worker (`make test`: xdist, --dist loadgroup)
pytestmark = pytest.mark.xdist_group("test_attention_tab_browser")

N_LAYERS, N_HEADS, N_PROBES = 2, 4, 3  # the tiny model of experiment=ci; attention_probes default


# --- in a real browser ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def chrome():
    """Headless Chromium through Selenium and Debian's chromedriver. Required in CI, whose
    .ci/run installs them; skipped elsewhere when missing, saying so."""
    if missing := browser_missing():
        if os.environ.get("CI"):
            pytest.fail(missing)
        pytest.skip(missing)
    driver = headless_chromium()
    yield driver
    driver.quit()


def drawing(driver) -> tuple[str, list[str]]:
    """What the heatmap shows: the body's record of the drawn selection and every cell's fill."""
    return driver.execute_script(
        "return [document.body.dataset.drawn || '',"
        " Array.from(document.querySelectorAll('#heatmap rect.cell')).map(r => r.getAttribute('fill'))]"
    )


def test_the_attention_tab_in_chromium(chrome, ci_run, tmp_path):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import Select

    board = TensorBoard(ci_run)
    try:
        chrome.get(f"{board.url}/#attention")
        # the tab is in TensorBoard's bar, and its page is the plugin's frame
        wait_for(chrome, lambda d: "ATTENTION" in d.find_element(By.TAG_NAME, "body").text.upper(), "the tab's name")
        frame = wait_for(chrome, lambda d: d.find_elements(By.CSS_SELECTOR, "iframe"), "the plugin's frame")[0]
        chrome.switch_to.frame(frame)
        wait_for(chrome, lambda d: d.find_elements(By.CSS_SELECTOR, "#heatmap rect.cell"), "the heatmap")
        first_map_ms = chrome.execute_script("return document.body.dataset.firstMapMs")

        # the newest step's cross-attention, layer 1, mean of heads, with the probe's pieces as labels
        stored = read_step(ci_run, steps(ci_run)[-1])
        rows, cols = stored.axis_labels(0, "cross")
        assert [e.text for e in chrome.find_elements(By.CSS_SELECTOR, "#heatmap .row-label")] == rows
        assert [
            e.get_attribute("textContent") for e in chrome.find_elements(By.CSS_SELECTOR, "#heatmap .col-label")
        ] == cols
        drawn, fills = drawing(chrome)
        assert drawn == ".|240|0|cross|0|mean|map" and len(fills) == len(rows) * len(cols)
        assert "source" in chrome.find_element(By.ID, "caption").text

        # hovering a cell names its query piece, key piece and weight, and lights both labels
        cell = chrome.find_element(By.CSS_SELECTOR, '#heatmap rect.cell[data-q="1"][data-k="0"]')
        ActionChains(chrome).move_to_element(cell).perform()
        tooltip = chrome.find_element(By.ID, "tooltip").text
        assert f"query {rows[1]}" in tooltip and f"key {cols[0]}" in tooltip
        shown = float(tooltip.split(":")[1].split()[0])  # the weight, to 3 decimals
        assert abs(shown - float(cell.get_attribute("data-weight"))) <= 0.00051
        assert [e.text for e in chrome.find_elements(By.CSS_SELECTOR, "#heatmap .row-label.lit")] == [rows[1]]

        # the step slider goes back to step 0: a different drawing (untrained weights)
        chrome.find_element(By.ID, "step").send_keys(Keys.HOME)
        wait_for(chrome, lambda d: drawing(d)[0] == ".|0|0|cross|0|mean|map", "step 0 drawn")
        assert "step 0 (1 of 4)" in chrome.find_element(By.ID, "step-label").text
        step0_fills = drawing(chrome)[1]
        chrome.find_element(By.ID, "step").send_keys(Keys.END)
        wait_for(chrome, lambda d: drawing(d)[0].startswith(".|240|"), "step 240 drawn again")
        assert drawing(chrome)[1] == fills and step0_fills != fills

        # another layer: another drawing
        Select(chrome.find_element(By.ID, "layer")).select_by_value("1")
        wait_for(chrome, lambda d: drawing(d)[0] == ".|240|0|cross|1|mean|map", "layer 2 drawn")
        assert drawing(chrome)[1] != fills
        chrome.save_screenshot(str(tmp_path / "attention_tab.png"))

        # lines between the sequences, every head; and the grid of all layers x heads
        Select(chrome.find_element(By.ID, "view_select")).select_by_value("lines")
        wait_for(chrome, lambda d: d.find_elements(By.CSS_SELECTOR, "#lines line"), "the lines view")
        heads_drawn = {e.get_attribute("data-head") for e in chrome.find_elements(By.CSS_SELECTOR, "#lines line")}
        assert heads_drawn <= {str(h) for h in range(N_HEADS)} and len(heads_drawn) >= 2
        assert len(chrome.find_elements(By.CSS_SELECTOR, "#heads-legend .chip")) == N_HEADS
        Select(chrome.find_element(By.ID, "view_select")).select_by_value("grid")
        wait_for(chrome, lambda d: d.find_elements(By.CSS_SELECTOR, "#grid .panel"), "the grid view")
        assert len(chrome.find_elements(By.CSS_SELECTOR, "#grid .panel")) == N_LAYERS * (N_HEADS + 1)
        chrome.find_elements(By.CSS_SELECTOR, "#grid .panel")[N_HEADS + 1 + 2].click()  # layer 2, head 3
        wait_for(chrome, lambda d: drawing(d)[0] == ".|240|0|cross|1|2|map", "a grid panel opened as a map")
        assert chrome.find_element(By.ID, "message").is_displayed() is False
        print(f"first map drawn {first_map_ms} ms after the tab's frame started loading")
        if screenshot := os.environ.get("ATTENTION_TAB_SCREENSHOT"):
            chrome.switch_to.default_content()
            chrome.save_screenshot(screenshot)
    finally:
        chrome.switch_to.default_content()
        board.close()


def inside_view(driver) -> dict:
    """What the inside view shows: the query's strip, the weights column, and the heatmap row it
    came from (the chosen query's cells of the heatmap beside it)."""
    return driver.execute_script("""
        const values = (selector) => Array.from(document.querySelectorAll(selector))
          .map((e) => Number(e.dataset.value));
        const chosen = document.querySelector('#heatmap rect.chosen');
        const q = chosen ? Math.round(Number(chosen.getAttribute('y')) / Number(chosen.getAttribute('height'))) : -1;
        return {drawn: document.body.dataset.drawn || '', q: values('#inside .strip.q rect.strip-cell'),
                weights: Array.from(document.querySelectorAll('#inside text.weight')).map((e) => e.dataset.weight),
                row: Array.from(document.querySelectorAll(`#heatmap rect.cell[data-q="${q}"]`))
                  .map((e) => e.dataset.weight),
                keys: Array.from(document.querySelectorAll('#inside .key-label')).map((e) => e.textContent),
                cols: Array.from(document.querySelectorAll('#heatmap .col-label')).map((e) => e.textContent)};""")


def test_inside_a_head_and_a_typed_sentence_in_chromium(chrome, ci_run):
    """A click on a heatmap row opens the inside view of that query: its q is the stored one,
    its weights are the heatmap's row; the step slider moves it; a typed sentence gets its maps
    from the run's best checkpoint, and an empty one a message beside the box."""
    import numpy as np
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    from inference import load_translator

    board = TensorBoard(ci_run)
    try:
        chrome.get(f"{board.url}/data/plugin_entry.html?name=attention")
        wait_for(chrome, lambda d: drawing(d)[0] == ".|240|0|cross|0|mean|map", "the first heatmap")
        chrome.find_element(By.CSS_SELECTOR, '#heatmap rect.cell[data-q="2"][data-k="0"]').click()
        wait_for(
            chrome, lambda d: inside_view(d)["drawn"] == ".|240|0|cross|0|0|inside|q2", "the inside view of query 2"
        )
        view = inside_view(chrome)
        stored = read_step(ci_run, 240).inside(0, "cross", 0)["query"][0, 2]  # head 1, query 2
        np.testing.assert_allclose(view["q"], stored, atol=1e-4)
        assert view["weights"] == view["row"] and len(view["row"]) == len(view["keys"]) == len(view["cols"])
        assert view["keys"] == view["cols"] == read_step(ci_run, 240).axis_labels(0, "cross")[1]

        # the step slider: the same query at step 0, with step 0's numbers
        chrome.find_element(By.ID, "step").send_keys(Keys.HOME)
        wait_for(chrome, lambda d: inside_view(d)["drawn"] == ".|0|0|cross|0|0|inside|q2", "step 0's inside view")
        view = inside_view(chrome)
        np.testing.assert_allclose(view["q"], read_step(ci_run, 0).inside(0, "cross", 0)["query"][0, 2], atol=1e-4)
        assert not np.allclose(view["q"], stored, atol=1e-3) and view["weights"] == view["row"]

        # an empty sentence: a message beside the box, the view as it was
        box = chrome.find_element(By.ID, "typed-text")
        box.send_keys("   ", Keys.ENTER)
        wait_for(chrome, lambda d: "type a sentence" in d.find_element(By.ID, "typed-message").text, "the message")
        assert inside_view(chrome)["drawn"] == ".|0|0|cross|0|0|inside|q2"

        # a sentence of one's own: translated by the best checkpoint, its pieces on the axes
        sentence = "Ein Hund läuft durch den Schnee."
        box.clear()
        box.send_keys(sentence, Keys.ENTER)
        wait_for(
            chrome,
            lambda d: re.fullmatch(
                rf"\.\|typed best [0-9-]+: {sentence}\|0\|cross\|0\|0\|inside\|q2", inside_view(d)["drawn"]
            ),
            "the typed sentence's inside view",
            timeout=120,
        )
        [expected] = load_translator(ci_run).attention([sentence], inside=True)
        view = inside_view(chrome)
        assert view["cols"] == view["keys"] == expected.src_pieces and view["weights"] == view["row"]
        np.testing.assert_allclose(view["q"], expected.inside["cross"][0].query[0, 2].numpy(), atol=2e-3, rtol=1e-3)
        assert expected.translation in chrome.find_element(By.ID, "caption").text
        if screenshot := os.environ.get("ATTENTION_INSIDE_SCREENSHOT"):
            chrome.save_screenshot(screenshot)
        chrome.find_element(By.ID, "back-to-probes").click()
        wait_for(chrome, lambda d: inside_view(d)["drawn"].startswith(".|0|0|cross|"), "the probes again")
    finally:
        board.close()


# Added to every frame before its own scripts: the page's timers run 100x sooner (its 30 s
# refresh every 0.3 s), and while window.slowMaps is set the maps arrive 2 s late.
IMPATIENT_PAGE = """
const setInterval_ = window.setInterval, fetch_ = window.fetch;
window.setInterval = (f, ms, ...rest) => setInterval_(f, ms / 100, ...rest);
window.fetch = (url, ...rest) => String(url).startsWith('maps?') && window.slowMaps
  ? new Promise((done) => setTimeout(done, 2000)).then(() => fetch_(url, ...rest)) : fetch_(url, ...rest);
"""


def test_the_tab_draws_only_maps_of_the_selection_and_refreshes_only_on_news(chrome, ci_run):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    script = chrome.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": IMPATIENT_PAGE})
    board = TensorBoard(ci_run)
    try:
        chrome.get(f"{board.url}/data/plugin_entry.html?name=attention")  # what the tab's frame loads
        wait_for(chrome, lambda d: drawing(d)[0] == ".|240|0|cross|0|mean|map", "the first heatmap")

        # refreshes that find nothing new leave the drawing, and what the pointer lit on it, alone;
        # and the lists' options too (once rebuilt every refresh: an open list closed under the
        # pointer, and an option picked during a refresh was gone before its click)
        cell = chrome.find_element(By.CSS_SELECTOR, '#heatmap rect.cell[data-q="1"][data-k="0"]')
        ActionChains(chrome).move_to_element(cell).perform()
        marked = "document.querySelectorAll('#heatmap, select option')"
        chrome.execute_script(f"{marked}.forEach((e) => {{ e.dataset.mark = 'before'; }})")
        chrome.execute_script("return new Promise((done) => setTimeout(done, 1500))")  # ~5 refreshes
        kept = chrome.execute_script(f"return Array.from({marked}, (e) => e.dataset.mark || '')")
        assert len(kept) > 1 + 3 and set(kept) == {"before"}  # the heatmap, and the kinds' options at least

        # another kind, then another layer before its maps arrive: the old drawing stays whole
        # (never the old maps under the new labels), and the new maps are drawn when they come
        stored = read_step(ci_run, 240)
        chrome.execute_script("window.slowMaps = true")
        Select(chrome.find_element(By.ID, "kind")).select_by_value("encoder_self")
        Select(chrome.find_element(By.ID, "layer")).select_by_value("1")
        assert drawing(chrome)[0] == ".|240|0|cross|0|mean|map"
        assert [e.text for e in chrome.find_elements(By.CSS_SELECTOR, "#heatmap .row-label")] == stored.axis_labels(
            0, "cross"
        )[0]
        wait_for(chrome, lambda d: drawing(d)[0] == ".|240|0|encoder_self|1|mean|map", "the new kind and layer")
        assert [e.text for e in chrome.find_elements(By.CSS_SELECTOR, "#heatmap .row-label")] == stored.axis_labels(
            0, "encoder_self"
        )[0]
    finally:
        chrome.execute_cdp_cmd("Page.removeScriptToEvaluateOnNewDocument", {"identifier": script["identifier"]})
        board.close()


def test_the_tab_explains_a_logdir_without_attention(chrome, tmp_path):
    (tmp_path / "just_started").mkdir()
    board = TensorBoard(tmp_path)
    try:
        chrome.get(f"{board.url}/data/plugin_entry.html?name=attention")  # what the tab's frame loads
        from selenium.webdriver.common.by import By

        text = wait_for(
            chrome,
            lambda d: "No run under" in d.find_element(By.ID, "message").text and d.find_element(By.ID, "message").text,
            "the message",
        )
        assert "train.attention_every" in text
        assert not chrome.find_elements(By.CSS_SELECTOR, "#heatmap")
    finally:
        board.close()


def test_a_typed_sentence_follows_a_rewritten_checkpoint_and_a_run_without_one_says_so(chrome, ci_run, tmp_path):
    """Training rewrites best.pt: the same sentence typed again is translated by the new file (the
    page once showed the old answer it had kept). A run without any checkpoint says so beside the
    box, not only in a tooltip."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import Select

    from utils.checkpoint_files import step_checkpoints

    for run in ("training", "fresh"):
        shutil.copytree(ci_run / "attention", tmp_path / run / "attention")
    (tmp_path / "training" / "checkpoints").mkdir()
    first, second = step_checkpoints(ci_run / "checkpoints")[:2]
    best = tmp_path / "training" / "checkpoints" / "best.pt"
    shutil.copyfile(first, best)
    board = TensorBoard(tmp_path)
    try:
        chrome.get(f"{board.url}/data/plugin_entry.html?name=attention")
        wait_for(chrome, lambda d: drawing(d)[0].startswith("training|"), "the newest run's heatmap")
        box, sentence = chrome.find_element(By.ID, "typed-text"), "Zwei Hunde spielen im Park."
        box.send_keys(sentence, Keys.ENTER)
        wait_for(chrome, lambda d: f": {sentence}|0|cross|" in drawing(d)[0], "the typed sentence", timeout=120)
        before, old_fills = drawing(chrome)
        shutil.copyfile(second, best)
        os.utime(best, ns=(1, 1))
        box.send_keys(Keys.ENTER)  # the same sentence again
        wait_for(
            chrome,
            lambda d: f": {sentence}|0|cross|" in drawing(d)[0] and drawing(d)[0] != before,
            "the sentence translated by the rewritten checkpoint",
            timeout=120,
        )
        assert drawing(chrome)[1] != old_fills

        Select(chrome.find_element(By.ID, "run")).select_by_value("fresh")
        wait_for(
            chrome,
            lambda d: "this run has no checkpoint yet" in d.find_element(By.ID, "typed-message").text,
            "the message beside the box",
        )
        assert not chrome.find_element(By.ID, "translate").is_enabled()
    finally:
        board.close()
