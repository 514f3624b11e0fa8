"""The ATTENTION tab of TensorBoard: its backend routes on the `ci` run (the tab in a browser:
test_attention_tab_browser.py)."""
import gzip
import json
import os
import shutil
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import numpy as np
import pytest
from tensorboard.plugins.base_plugin import TBContext
from werkzeug.test import Client

from viz.attention_store import read_step
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

