"""The ATTENTION tab of TensorBoard: its backend routes on the `ci` run (the tab in a browser:
test_attention_tab_browser.py)."""

import json
import os
import shutil
import subprocess
import sys
from importlib.metadata import entry_points

import numpy as np
import pytest
from tensorboard.plugins.base_plugin import TBContext
from werkzeug.test import Client

from helpers import toy_sentences
from helpers.processes import children
from utils.checkpoint_files import checkpoint_step, step_checkpoint_path, step_checkpoints
from viz.attention_store import read_step
from viz.attention_tab.plugin import AttentionPlugin
from viz.kinds import KINDS

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
    result = subprocess.run(
        [sys.executable, "-c", "import viz.attention_tab.plugin"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": ""},
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]


def test_runs_lists_every_evaluation_from_step_0(plugin, ci_run):
    status, body = get(plugin, "/runs")
    assert status == 200
    [run] = body["runs"]
    assert (run["run"], run["steps"]) == (".", [0, 80, 160, 240])  # step 0 and every validation
    # what a typed sentence can be translated with: best.pt and the step checkpoints kept
    kept = [str(checkpoint_step(path)) for path in step_checkpoints(ci_run / "checkpoints")]
    assert run["checkpoints"] == ["best", *kept] and kept
    assert [kind for kind, _ in body["kinds"]] == list(KINDS)  # the page's kind menu: viz/kinds.py
    assert plugin.is_active()
    assert not AttentionPlugin(TBContext(logdir=str(ci_run / "checkpoints"))).is_active()


def test_sentences_are_the_probe_set(plugin):
    first = toy_sentences("val")[:N_PROBES]
    status, body = get(plugin, "/sentences", run=".", step="240")
    assert status == 200
    assert [s["source"] for s in body["sentences"]] == first  # the first validation sentences, fixed
    assert all(
        s["layers"] == {k: N_LAYERS for k in KINDS} and s["heads"] == {k: N_HEADS for k in KINDS}
        for s in body["sentences"]
    )


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


INSIDE_QUERY = {
    "run": ".",
    "step": "240",
    "probe": "1",
    "kind": "decoder_self",
    "layer": "1",
    "head": "2",
    "query": "3",
}


@pytest.mark.parametrize("kind", KINDS)
def test_inside_is_one_querys_computation_from_the_stored_values(plugin, ci_run, kind):
    stored = read_step(ci_run, 240)
    layer, head, query = 1, 2, 3
    status, body = get(plugin, "/inside", **{**INSIDE_QUERY, "kind": kind})
    assert status == 200
    inside = stored.inside(1, kind, layer)
    d_head = inside["query"].shape[-1]
    assert (body["rows"], body["cols"]) == stored.axis_labels(1, kind) and body["d_head"] == d_head
    q, keys = np.array(body["q"]), np.array(body["keys"])  # (d_head,), (T_k, d_head)
    np.testing.assert_allclose(q, inside["query"][head, query], atol=1e-4)
    np.testing.assert_allclose(keys, inside["key"][head], atol=1e-4)
    np.testing.assert_allclose(body["products"], keys * q, atol=1e-3)
    np.testing.assert_allclose(body["scores"], keys @ q, atol=1e-3)
    np.testing.assert_allclose(body["scaled"], keys @ q / np.sqrt(d_head), atol=1e-3)
    # the mask: the decoder's query sees itself and what came before, the others every key
    keys = len(body["cols"])
    expected_visible = [j <= query for j in range(keys)] if kind == "decoder_self" else [True] * keys
    assert body["visible"] == expected_visible
    # the softmax of what the page shows is the row of the heatmap (the stored weights), to float16
    row = get(plugin, "/maps", run=".", step="240", probe="1", kind=kind)[1]["layers"][layer][head][query]
    assert body["weights"] == row
    np.testing.assert_allclose(body["softmax"], row, atol=1e-2)
    assert sum(w for w, seen in zip(body["softmax"], body["visible"]) if not seen) == 0
    # the head's output is the model's own Σ w_j v_j, and it is head `head`'s part of the concatenation
    np.testing.assert_allclose(body["head_output"], np.array(row) @ np.array(body["values"]), atol=2e-2)
    assert body["concat"][head * d_head : (head + 1) * d_head] == body["head_output"]
    assert len(body["concat"]) == len(body["output"]) == body["heads"] * d_head


def test_a_typed_sentence_gets_what_translate_py_gives_for_it(plugin, ci_run):
    """The translation translate.py prints for the sentence with the best checkpoint, and the
    maps its --attention draws (Translator.attention of the same checkpoint, beam 5)."""
    from helpers import run_script
    from inference import load_translator

    sentence = "Ein kleiner Hund spielt im Schnee."
    printed = run_script("translate.py", "-c", ci_run, sentence).stdout.strip()
    status, body = get(plugin, "/sentences", run=".", checkpoint="best", text=sentence)
    assert status == 200
    [typed] = body["sentences"]
    assert (typed["source"], typed["translation"], typed["reference"]) == (sentence, printed, None)
    assert typed["inside"] and typed["layers"] == {kind: N_LAYERS for kind in KINDS}
    [expected] = load_translator(ci_run).attention([sentence], inside=True)
    for kind in KINDS:
        status, maps = get(plugin, "/maps", run=".", checkpoint="best", text=sentence, probe="0", kind=kind)
        assert status == 200 and maps["rows"] and maps["cols"]
        for layer, weights in enumerate(expected.maps[kind]):
            np.testing.assert_allclose(maps["layers"][layer], weights.numpy(), atol=1e-3)
    status, inside = get(
        plugin,
        "/inside",
        run=".",
        checkpoint="best",
        text=sentence,
        probe="0",
        kind="cross",
        layer="0",
        head="1",
        query="0",
    )
    assert status == 200
    np.testing.assert_allclose(inside["q"], expected.inside["cross"][0].query[1, 0].numpy(), atol=2e-3, rtol=1e-3)
    # a step's checkpoint: that checkpoint's maps
    step = get(plugin, "/runs")[1]["runs"][0]["checkpoints"][1]
    [expected] = load_translator(step_checkpoint_path(ci_run / "checkpoints", int(step))).attention([sentence])
    status, maps = get(plugin, "/maps", run=".", checkpoint=step, text=sentence, probe="0", kind="cross")
    assert status == 200
    np.testing.assert_allclose(maps["layers"][1], expected.maps["cross"][1].numpy(), atol=1e-3)


def test_several_typed_sentences_are_split_as_translate_py_splits_them(plugin, ci_run):
    """A paragraph typed into the tab: each of its sentences translated alone and shown as a
    probe of its own, in order, each the maps of that sentence alone; translate.py's line is
    those translations joined."""
    from helpers import run_script
    from inference import load_translator

    first, second = "Ein Hund rennt.", "Zwei Männer stehen im Schnee."
    status, body = get(plugin, "/sentences", run=".", checkpoint="best", text=f"{first}  {second}")
    assert status == 200
    assert [typed["source"] for typed in body["sentences"]] == [first, second]
    printed = run_script("translate.py", "-c", ci_run, f"{first}  {second}").stdout.strip()
    assert "  ".join(typed["translation"] for typed in body["sentences"]) == printed
    [expected] = load_translator(ci_run).attention([second])
    status, maps = get(plugin, "/maps", run=".", checkpoint="best", text=f"{first}  {second}", probe="1", kind="cross")
    assert status == 200
    np.testing.assert_allclose(maps["layers"][0], expected.maps["cross"][0].numpy(), atol=1e-3)


def test_typed_text_of_several_batches_leaves_no_process_in_tensorboard(ci_run, monkeypatch):
    """More typed sentences than a batch holds (BATCH_SIZE) are decoded in TensorBoard's own process:
    the tab once forked decoding workers from the threaded server (a child forked while another
    thread holds a lock can hang on it), and they stayed until the checkpoint changed."""
    import viz.attention_tab.typed as typed

    cores = os.cpu_count() or 1
    if cores < 2:
        pytest.skip("one core: a translator starts no worker processes, so none could be left")
    from inference.translator import BATCH_SIZE

    sentences = toy_sentences("val")[: BATCH_SIZE + 1]  # two batches
    monkeypatch.setattr(typed, "MAX_PIECES", 10_000)  # the limit keeps a request short: this one is long on purpose
    others, affinity = children(os.getpid()), os.sched_getaffinity(0)
    # every core, as TensorBoard has them (not an xdist worker's one): the translator is sized by them
    os.sched_setaffinity(0, range(cores))
    try:  # a plugin of its own: the module's has its translator, sized by the cores it had then
        plugin = AttentionPlugin(TBContext(logdir=str(ci_run)))
        status, body = get(plugin, "/sentences", run=".", checkpoint="best", text=" ".join(sentences))
    finally:
        os.sched_setaffinity(0, affinity)
    assert status == 200
    assert [shown["source"] for shown in body["sentences"]] == sentences
    assert all(shown["translation"] for shown in body["sentences"])
    assert children(os.getpid()) == others


def test_a_rewritten_checkpoint_is_never_shown_as_the_one_that_translated(ci_run, tmp_path):
    """Training rewrites best.pt under the same name: a typed sentence asked again gets the new
    file's maps, a request naming the old version the old ones (kept) or a 409, never a mix."""
    run = tmp_path / "run"
    shutil.copytree(ci_run / "attention", run / "attention")
    (run / "checkpoints").mkdir()
    first, second = step_checkpoints(ci_run / "checkpoints")[:2]
    shutil.copyfile(first, run / "checkpoints" / "best.pt")
    plugin, sentence = AttentionPlugin(TBContext(logdir=str(tmp_path))), "Ein Hund läuft."
    query = dict(run="run", checkpoint="best", text=sentence)
    old_version = get(plugin, "/sentences", **query)[1]["version"]
    old_maps = get(plugin, "/maps", **query, version=old_version, probe="0", kind="cross")[1]
    shutil.copyfile(second, run / "checkpoints" / "best.pt")  # training found a better one
    os.utime(run / "checkpoints" / "best.pt", ns=(1, 1))  # another time, whatever the clock's grain
    new_version = get(plugin, "/sentences", **query)[1]["version"]
    assert new_version != old_version
    new_maps = get(plugin, "/maps", **query, version=new_version, probe="0", kind="cross")[1]
    from inference import load_translator

    for path, maps in ((second, new_maps), (first, old_maps)):
        [expected] = load_translator(path).attention([sentence])
        np.testing.assert_allclose(maps["layers"][0], expected.maps["cross"][0].numpy(), atol=1e-3)
    assert get(plugin, "/maps", **query, version=old_version, probe="0", kind="cross")[1] == old_maps  # still kept
    plugin.typed._results.clear()  # no longer kept: the old version cannot be made again
    status, body = get(plugin, "/maps", **query, version=old_version, probe="0", kind="cross")
    assert status == 409 and "translate it again" in body["error"]


def test_typed_results_are_kept_up_to_a_number_of_bytes(plugin, monkeypatch):
    """Kept results are bounded by their arrays' bytes, not by their number (a base model's reach
    40 MB each), and the newest always stays."""
    import viz.attention_tab.typed as typed

    texts = ("Ein Hund.", "Zwei Katzen schlafen.", "Ein Mann fährt Rad.", "Eine Frau singt.")
    sizes = []
    for text in texts:  # each result's bytes (they grow with the translation, which the model chooses)
        plugin.typed._results.clear()
        plugin.typed._bytes = 0
        get(plugin, "/sentences", run=".", checkpoint="best", text=text)
        sizes.append(typed.stored_bytes(next(reversed(plugin.typed._results.values()))))
    plugin.typed._results.clear()
    plugin.typed._bytes = 0
    for text in texts[:3]:
        get(plugin, "/sentences", run=".", checkpoint="best", text=text)
    assert len(plugin.typed._results) == 3 and plugin.typed._bytes == sum(sizes[:3])
    monkeypatch.setattr(typed, "KEEP_BYTES", sizes[2] + sizes[3])  # room for the two newest alone
    get(plugin, "/sentences", run=".", checkpoint="best", text=texts[3])
    assert [key[2] for key in plugin.typed._results] == ["Ein Mann fährt Rad.", "Eine Frau singt."]
    assert plugin.typed._bytes <= typed.KEEP_BYTES
    monkeypatch.setattr(typed, "KEEP_BYTES", 1)
    get(plugin, "/sentences", run=".", checkpoint="best", text="Ein Kind lacht.")
    assert [key[2] for key in plugin.typed._results] == ["Ein Kind lacht."]


def test_a_file_of_the_users_among_the_checkpoints_is_left_alone(ci_run, tmp_path):
    """A stray step_old.pt beside training's step_<N>.pt once broke the run list (500) and
    translate.py -c RUN."""
    from helpers import run_script

    run = tmp_path / "run"
    shutil.copytree(ci_run / "attention", run / "attention")
    shutil.copytree(ci_run / "checkpoints", run / "checkpoints")
    shutil.copyfile(run / "checkpoints" / "best.pt", run / "checkpoints" / "step_old.pt")
    (run / "checkpoints" / "best.pt").unlink()  # so that -c RUN looks among the step checkpoints
    status, body = get(AttentionPlugin(TBContext(logdir=str(tmp_path))), "/runs")
    assert status == 200 and "old" not in body["runs"][0]["checkpoints"]
    latest = step_checkpoints(run / "checkpoints")[-1]
    assert latest.name == step_checkpoint_path(run / "checkpoints", 240).name
    assert run_script("translate.py", "-c", run, "Ein Hund.").stdout.strip()


def test_a_run_without_checkpoints_says_so(ci_run, tmp_path):
    shutil.copytree(ci_run / "attention", tmp_path / "fresh" / "attention")
    status, body = get(
        AttentionPlugin(TBContext(logdir=str(tmp_path))), "/sentences", run="fresh", checkpoint="best", text="Ein Hund."
    )
    assert status == 400 and "no checkpoint 'best'" in body["error"]
    assert get(AttentionPlugin(TBContext(logdir=str(tmp_path))), "/runs")[1]["runs"][0]["checkpoints"] == []


@pytest.mark.parametrize(
    "route, params, status, words",
    [
        ("/sentences", {"run": "nope", "step": "0"}, 404, "no run 'nope'"),
        ("/sentences", {"run": ".", "step": "7"}, 404, "no attention at step 7"),
        ("/sentences", {"run": ".", "step": "x"}, 400, "step must be an integer"),
        ("/sentences", {"run": ".", "step": "\u00b2"}, 400, "step must be an integer"),  # a digit to str.isdigit
        ("/sentences", {"run": ".", "step": "9" * 5000}, 400, "step must be an integer"),  # past int()'s limit
        ("/sentences", {"run": "a\0b", "step": "0"}, 404, "no run"),
        ("/maps", {"run": ".", "step": "0", "probe": "--5", "kind": "cross"}, 400, "probe must be an integer"),
        ("/maps", {"run": ".", "step": "0", "probe": "9", "kind": "cross"}, 404, "probe must be in 0..2"),
        ("/maps", {"run": ".", "step": "0", "probe": "0", "kind": "self"}, 400, "kind must be one of"),
        ("/inside", {**INSIDE_QUERY, "layer": "2"}, 404, "layer must be in 0..1"),
        ("/inside", {**INSIDE_QUERY, "head": "-1"}, 404, "head must be in 0..3"),
        ("/inside", {**INSIDE_QUERY, "query": "99"}, 404, "query must be in 0.."),
        ("/inside", {**INSIDE_QUERY, "query": "1.5"}, 400, "query must be an integer"),
        ("/sentences", {"run": ".", "checkpoint": "best", "text": "  "}, 400, "type a sentence"),
        (
            "/sentences",
            {"run": ".", "checkpoint": "best", "text": "Hund " * 101},
            400,
            "pieces; at most 100 are translated",
        ),
        (
            "/maps",
            {"run": ".", "checkpoint": "best", "text": "Ein Hund.", "version": "1-2", "probe": "0", "kind": "cross"},
            409,
            "was rewritten since this sentence was translated",
        ),
        ("/sentences", {"run": ".", "checkpoint": "7", "text": "Ein Hund."}, 400, "no checkpoint of step 7"),
        (
            "/sentences",
            {"run": ".", "checkpoint": "last", "text": "Ein Hund."},
            400,
            "checkpoint must be 'best' or a step",
        ),
        (
            "/maps",
            {"run": ".", "checkpoint": "best", "text": "Ein Hund.", "probe": "1", "kind": "cross"},
            404,
            "probe must be in 0..0",
        ),
    ],
)
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
    view = app.get("/data/plugin/attention/static/views/inside.js")  # the modules index.js imports
    assert view.status_code == 200 and "export function drawInside" in view.get_data(as_text=True)
    assert app.get("/data/plugin/attention/static/../plugin.py").status_code == 404
    assert app.get("/data/plugin/attention/static/views/../../plugin.py").status_code == 404
    assert app.get("/data/plugin/attention/static/nothing.js").status_code == 404
