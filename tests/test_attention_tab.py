"""The ATTENTION tab of TensorBoard: its backend routes on the `ci` run, and the tab itself in a
real headless Chromium driven by Selenium, as a user opens it."""
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from importlib.metadata import entry_points
from pathlib import Path

import numpy as np
import pytest
from tensorboard.plugins.base_plugin import TBContext
from werkzeug.test import Client

from viz.attention_store import read_step, steps
from viz.kinds import KINDS
from viz.attention_tab.plugin import AttentionPlugin

N_LAYERS, N_HEADS, N_PROBES = 2, 4, 3  # the tiny model of experiment=ci; attention_probes default


def get(plugin: AttentionPlugin, route: str, **params) -> tuple[int, dict]:
    response = Client(plugin.get_plugin_apps()[route]).get(route, query_string=params)
    return response.status_code, json.loads(response.get_data(as_text=True))


@pytest.fixture(scope="module")
def plugin(ci_run):
    return AttentionPlugin(TBContext(logdir=str(ci_run)))


def test_the_plugin_is_registered_for_tensorboard():
    """What makes `tensorboard --logdir runs` load it: `make install` installs the checkout."""
    plugins = {entry.name: entry for entry in entry_points(group="tensorboard_plugins")}
    assert "attention" in plugins, "not installed: run `make install` (pip install -e .)"
    assert plugins["attention"].load() is AttentionPlugin


def test_the_plugin_imports_where_tensorboard_runs(tmp_path):
    """TensorBoard's process has the installed viz package, not the checkout on its path: the
    plugin must import from there alone (found once: a module of the checkout outside viz)."""
    result = subprocess.run([sys.executable, "-c", "import viz.attention_tab.plugin"], cwd=tmp_path,
                            capture_output=True, text=True, env={**os.environ, "PYTHONPATH": ""}, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]


def test_runs_lists_every_evaluation_from_step_0(plugin, ci_run):
    status, body = get(plugin, "/runs")
    assert status == 200
    assert body["runs"] == [{"run": ".", "steps": [0, 80, 160, 240]}]  # step 0 and every validation
    assert [kind for kind, _ in body["kinds"]] == list(KINDS)  # the page's kind menu: viz/kinds.py
    assert plugin.is_active()
    assert not AttentionPlugin(TBContext(logdir=str(ci_run / "checkpoints"))).is_active()


def test_sentences_are_the_probe_set(plugin, multi30k_dir):
    with gzip.open(Path(multi30k_dir) / "val.de.gz", "rt", encoding="utf-8") as file:
        first = [next(file).strip() for _ in range(N_PROBES)]
    status, body = get(plugin, "/sentences", run=".", step="240")
    assert status == 200 and body["step"] == 240
    assert [s["source"] for s in body["sentences"]] == first  # the first validation sentences, fixed
    assert all(s["layers"] == {k: N_LAYERS for k in KINDS} and s["heads"] == {k: N_HEADS for k in KINDS}
               for s in body["sentences"])


def test_maps_are_attention_trimmed_to_the_pieces(plugin, ci_run):
    stored = read_step(ci_run, 240)
    for kind in KINDS:
        status, body = get(plugin, "/maps", run=".", step="240", probe="1", kind=kind)
        assert status == 200
        assert (body["rows"], body["cols"]) == stored.axis_labels(1, kind)
        weights = np.array(body["layers"])  # (L, H, T_q, T_k)
        assert weights.shape == (N_LAYERS, N_HEADS, len(body["rows"]), len(body["cols"]))
        # every query's weights over its keys sum to one: no real key was trimmed away
        np.testing.assert_allclose(weights.sum(-1), 1.0, atol=5e-3)
        if kind == "decoder_self":
            assert np.triu(weights, k=1).max() == 0  # the causal mask: nothing after the query
    untrained = np.array(get(plugin, "/maps", run=".", step="0", probe="1", kind="cross")[1]["layers"])
    trained = np.array(get(plugin, "/maps", run=".", step="240", probe="1", kind="cross")[1]["layers"])
    assert untrained.shape != trained.shape or not np.allclose(untrained, trained, atol=0.01)


@pytest.mark.parametrize("route, params, status, words", [
    ("/sentences", {"run": "nope", "step": "0"}, 404, "no run 'nope'"),
    ("/sentences", {"run": ".", "step": "7"}, 404, "no attention at step 7"),
    ("/sentences", {"run": ".", "step": "x"}, 400, "step must be an integer"),
    ("/sentences", {"run": ".", "step": "\u00b2"}, 400, "step must be an integer"),  # a digit to str.isdigit
    ("/sentences", {"run": ".", "step": "9" * 5000}, 400, "step must be an integer"),  # past int()'s limit
    ("/sentences", {"run": "a\0b", "step": "0"}, 404, "no run"),
    ("/maps", {"run": ".", "step": "0", "probe": "--5", "kind": "cross"}, 400, "probe must be an integer"),
    ("/maps", {"run": ".", "step": "0", "probe": "9", "kind": "cross"}, 404, "probe must be in 0..2"),
    ("/maps", {"run": ".", "step": "0", "probe": "0", "kind": "self"}, 400, "kind must be one of"),
])
def test_bad_requests_get_a_status_and_one_message(plugin, route, params, status, words):
    got, body = get(plugin, route, **params)
    assert got == status and words in body["error"] and len(body["error"]) < 300


def test_nothing_outside_the_logdir_is_served(ci_run, tmp_path):
    """Attention beside the logdir, reached by a name with '..', a linked attention folder or a
    linked step file: each is there to be served, and none is."""
    logdir, outside = tmp_path / "logdir", tmp_path / "outside"
    shutil.copytree(ci_run / "attention", outside / "attention")
    shutil.copytree(ci_run / "attention", logdir / "own" / "attention")
    (logdir / "linked").mkdir()
    (logdir / "linked" / "attention").symlink_to(outside / "attention")
    (logdir / "file_linked" / "attention").mkdir(parents=True)
    (logdir / "file_linked" / "attention" / "step_00000000.npz").symlink_to(outside / "attention" / "step_00000000.npz")
    plugin = AttentionPlugin(TBContext(logdir=str(logdir)))
    assert get(plugin, "/sentences", run="own", step="0")[0] == 200
    assert get(plugin, "/sentences", run="../outside", step="0")[0] == 404
    for run in ("linked", "file_linked"):
        status, body = get(plugin, "/maps", run=run, step="0", probe="0", kind="cross")
        assert status == 403 and "outside the logdir" in body["error"]
    assert "logdir" not in get(plugin, "/runs")[1]  # the client is not told where the logdir lies


def test_static_serves_only_its_own_files(plugin):
    app = Client(plugin.get_plugin_apps()["/static/*"])
    script = app.get("/data/plugin/attention/static/index.js")
    assert script.status_code == 200 and "export async function render" in script.get_data(as_text=True)
    assert script.mimetype in ("text/javascript", "application/javascript")
    assert app.get("/data/plugin/attention/static/../plugin.py").status_code == 404
    assert app.get("/data/plugin/attention/static/nothing.js").status_code == 404


# --- in a real browser ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def chrome():
    """Headless Chromium through Selenium and Debian's chromedriver. Required in CI, whose
    .ci/run installs them; skipped elsewhere when missing, saying so."""
    browser, driver_path = shutil.which("chromium"), shutil.which("chromedriver")
    if not (browser and driver_path):
        reason = "needs chromium and chromedriver (Debian: apt install chromium chromium-driver)"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,1000"):
        options.add_argument(argument)
    driver = webdriver.Chrome(options=options, service=Service(driver_path))
    yield driver
    driver.quit()


class TensorBoard:
    """`tensorboard --logdir LOGDIR` as a user starts it, on 127.0.0.1 and a port of its choosing."""

    def __init__(self, logdir: Path) -> None:
        command = [str(Path(sys.executable).parent / "tensorboard"), "--logdir", str(logdir),
                   "--host", "127.0.0.1", "--port", "0"]
        self.process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
        self.lines: list[str] = []
        self.url = ""
        found = threading.Event()

        def read() -> None:  # TensorBoard says where it serves on stderr
            for line in self.process.stderr:
                self.lines.append(line)
                if match := re.search(r"at (http://\S+?)/?(\s|$)", line):
                    self.url = match[1]
                    found.set()
        threading.Thread(target=read, daemon=True).start()
        if not found.wait(timeout=120):
            self.process.kill()
            raise AssertionError("tensorboard did not start:\n" + "".join(self.lines))

    def close(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


def wait_for(driver, condition, what: str, timeout: float = 60):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout).until(lambda d: condition(d), message=f"waited for {what}")


def drawing(driver) -> tuple[str, list[str]]:
    """What the heatmap shows: the body's record of the drawn selection and every cell's fill."""
    return driver.execute_script(
        "return [document.body.dataset.drawn || '',"
        " Array.from(document.querySelectorAll('#heatmap rect.cell')).map(r => r.getAttribute('fill'))]")


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
        assert [e.get_attribute("textContent") for e in chrome.find_elements(By.CSS_SELECTOR, "#heatmap .col-label")] == cols
        drawn, fills = drawing(chrome)
        assert drawn == ".|240|0|cross|0|mean|map" and len(fills) == len(rows) * len(cols)
        assert "source" in chrome.find_element(By.ID, "caption").text

        # hovering a cell names its query piece, key piece and weight, and lights both labels
        cell = chrome.find_element(By.CSS_SELECTOR, '#heatmap rect.cell[data-q="1"][data-k="0"]')
        ActionChains(chrome).move_to_element(cell).perform()
        tooltip = chrome.find_element(By.ID, "tooltip").text
        assert f"query {rows[1]}" in tooltip and f"key {cols[0]}" in tooltip and cell.get_attribute("data-weight")[:4] in tooltip
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

        # refreshes that find nothing new leave the drawing, and what the pointer lit on it, alone
        cell = chrome.find_element(By.CSS_SELECTOR, '#heatmap rect.cell[data-q="1"][data-k="0"]')
        ActionChains(chrome).move_to_element(cell).perform()
        chrome.execute_script("document.getElementById('heatmap').dataset.mark = 'before'")
        chrome.execute_script("return new Promise((done) => setTimeout(done, 1500))")  # ~5 refreshes
        assert chrome.execute_script("return document.getElementById('heatmap').dataset.mark") == "before"

        # another kind, then another layer before its maps arrive: the old drawing stays whole
        # (never the old maps under the new labels), and the new maps are drawn when they come
        stored = read_step(ci_run, 240)
        chrome.execute_script("window.slowMaps = true")
        Select(chrome.find_element(By.ID, "kind")).select_by_value("encoder_self")
        Select(chrome.find_element(By.ID, "layer")).select_by_value("1")
        assert drawing(chrome)[0] == ".|240|0|cross|0|mean|map"
        assert [e.text for e in chrome.find_elements(By.CSS_SELECTOR, "#heatmap .row-label")] == \
            stored.axis_labels(0, "cross")[0]
        wait_for(chrome, lambda d: drawing(d)[0] == ".|240|0|encoder_self|1|mean|map", "the new kind and layer")
        assert [e.text for e in chrome.find_elements(By.CSS_SELECTOR, "#heatmap .row-label")] == \
            stored.axis_labels(0, "encoder_self")[0]
    finally:
        chrome.execute_cdp_cmd("Page.removeScriptToEvaluateOnNewDocument", {"identifier": script["identifier"]})
        board.close()


def test_the_tab_explains_a_logdir_without_attention(chrome, tmp_path):
    (tmp_path / "just_started").mkdir()
    board = TensorBoard(tmp_path)
    try:
        chrome.get(f"{board.url}/data/plugin_entry.html?name=attention")  # what the tab's frame loads
        from selenium.webdriver.common.by import By

        text = wait_for(chrome, lambda d: "No run under" in d.find_element(By.ID, "message").text
                        and d.find_element(By.ID, "message").text, "the message")
        assert "train.attention_every" in text
        assert not chrome.find_elements(By.CSS_SELECTOR, "#heatmap")
    finally:
        board.close()
