"""Backend of the ATTENTION tab: the runs, steps, sentences, maps and the values inside the
attention stored under the logdir, or computed for a sentence typed in the tab, as JSON, and the
tab's own scripts (static/), served by TensorBoard's process.

Routes, under /data/plugin/attention/; SOURCE is step=S (an evaluation stored by training) or
checkpoint=C&text=T[&version=V] (C "best" or a step with a saved checkpoint: T translated by it,
typed.py; V the identity of C's file an earlier answer named, so that a rewritten checkpoint is
never mistaken for the one that translated T):

    runs                                 {"runs": [{"run", "steps", "checkpoints"}], "kinds"}
    sentences?run=R&SOURCE               {"sentences": [{source, translation, reference,
                                          layers: {kind: n}, heads: {kind: n}, inside}],
                                          "version" (typed: the checkpoint file's identity)}
    maps?run=R&SOURCE&probe=P&kind=K     {"rows", "cols", "layers": [(H, T_q, T_k) nested lists]}
    inside?run=R&SOURCE&probe=P&kind=K&layer=L&head=H&query=Q
                                         one query's attention step by step (inside_json)
    static/*.js                          the frontend, ES modules (no build step, no network)
"""

import math
import mimetypes
import re
from pathlib import Path

import numpy as np
from tensorboard.backend import http_util
from tensorboard.plugins import base_plugin
from werkzeug import wrappers

from utils.checkpoint_files import BEST, checkpoint_folder, checkpoint_step, step_checkpoint_path, step_checkpoints
from viz.attention_store import StoredStep, find_runs, read_step, step_path, steps
from viz.attention_tab.typed import TypedError, TypedSentences
from viz.kinds import KINDS, TITLES, visible_keys

PLUGIN_NAME = "attention"
STATIC = Path(__file__).parent / "static"


class BadRequest(Exception):
    """A request naming something that is not there: answered with its status and message."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


INTEGER = re.compile(r"-?[0-9]{1,18}")  # ASCII digits only, and few enough for int() and numpy


def _integer(request, name: str, below: int | None = None) -> int:
    """Parameter `name` as an integer, in 0..below-1 if `below` is given."""
    value = request.args.get(name, "")
    if not INTEGER.fullmatch(value):
        raise BadRequest(f"{name} must be an integer, got {value[:40]!r}")
    if below is not None and not 0 <= int(value) < below:
        raise BadRequest(f"{name} must be in 0..{below - 1}, got {value}", 404)
    return int(value)


def _rounded(values: np.ndarray) -> list:
    """4 decimals: finer than any colour or printed figure, a third of the JSON of full floats."""
    return np.round(values.astype(np.float64), 4).tolist()


class AttentionPlugin(base_plugin.TBPlugin):
    plugin_name = PLUGIN_NAME

    def __init__(self, context: base_plugin.TBContext) -> None:
        self.logdir = Path(context.logdir) if context.logdir else None
        self.typed = TypedSentences()

    def frontend_metadata(self) -> base_plugin.FrontendMetadata:
        return base_plugin.FrontendMetadata(es_module_path="/static/index.js", tab_name="Attention")

    def is_active(self) -> bool:
        """Shown among the tabs when some run has attention data (else under INACTIVE, where
        opening it explains what is missing)."""
        return bool(self.runs())

    def get_plugin_apps(self) -> dict:
        return {
            "/runs": self._serve(self.runs_json),
            "/sentences": self._serve(self.sentences_json),
            "/maps": self._serve(self.maps_json),
            "/inside": self._serve(self.inside_json),
            "/static/*": self._serve_static,
        }

    # --- data -----------------------------------------------------------------------------

    def runs(self) -> dict[str, Path]:
        return find_runs(self.logdir) if self.logdir is not None and self.logdir.is_dir() else {}

    def _inside_logdir(self, path: Path) -> bool:
        """Whether `path`, links followed, lies inside the logdir: nothing else is served."""
        return path.resolve().is_relative_to(self.logdir.resolve())

    def _run_folder(self, request) -> tuple[str, Path]:
        run = request.args.get("run", "")
        # the run's folder directly, not a walk of the whole logdir on every request; a name
        # that leads outside the logdir is no run
        folder = self.logdir / run if self.logdir is not None and "\0" not in run else None
        if folder is None or not self._inside_logdir(folder) or not steps(folder):
            raise BadRequest(f"no run {run[:200]!r} with attention data", 404)
        return run, folder

    def _stored(self, request) -> tuple[StoredStep, str | None]:
        """What SOURCE names: a stored evaluation, or a typed sentence with a checkpoint (then with
        the identity of the checkpoint's file that translated it)."""
        run, folder = self._run_folder(request)
        if "text" in request.args:
            return self._typed(request, run, folder)
        step = _integer(request, "step")
        if not self._inside_logdir(step_path(folder, step)):  # a file linked from outside is not served
            raise BadRequest(f"run {run!r}: the attention of step {step} lies outside the logdir", 403)
        try:
            return read_step(folder, step), None
        except FileNotFoundError:
            raise BadRequest(f"run {run!r} has no attention at step {step}", 404) from None

    def _typed(self, request, run: str, folder: Path) -> tuple[StoredStep, str]:
        name = request.args.get("checkpoint", "")
        if name == "best":
            path = checkpoint_folder(folder) / BEST
        elif INTEGER.fullmatch(name):
            path = step_checkpoint_path(checkpoint_folder(folder), int(name))
        else:
            raise BadRequest(f"checkpoint must be 'best' or a step, got {name[:40]!r}")
        if not path.is_file():
            missing = (
                "no checkpoint 'best': training saves best.pt at its first validation"
                if name == "best"
                else f"no checkpoint of step {name}"
            )
            raise BadRequest(f"run {run!r} has {missing}")
        if not self._inside_logdir(path):
            raise BadRequest(f"run {run!r}: checkpoint {name!r} lies outside the logdir", 403)
        try:
            return self.typed.stored(path, request.args.get("text", ""), request.args.get("version"))
        except TypedError as error:
            raise BadRequest(str(error), error.status) from None

    def _checkpoints(self, folder: Path) -> list[str]:
        """The checkpoints a typed sentence can be translated with: "best" and saved steps."""
        ckpts = checkpoint_folder(folder)
        best = ["best"] if (ckpts / BEST).is_file() else []
        return best + [str(checkpoint_step(path)) for path in step_checkpoints(ckpts)]

    def runs_json(self, request) -> dict:
        return {
            "runs": [
                {"run": name, "steps": steps(folder), "checkpoints": self._checkpoints(folder)}
                for name, folder in self.runs().items()
            ],
            "kinds": [[kind, TITLES[kind]] for kind in KINDS],
        }

    def sentences_json(self, request) -> dict:
        """The sentences; for a typed one also `version`, the identity of the checkpoint file that
        translated it, for the page to name in its next requests (typed.py)."""
        stored, version = self._stored(request)
        return {
            "sentences": [
                {
                    "source": sentence["source"],
                    "translation": sentence["translation"],
                    "reference": sentence["reference"],
                    "layers": sentence["layers"],
                    "heads": sentence["heads"],
                    "inside": sentence.get("inside", False),
                }
                for sentence in stored.sentences
            ],
            **({"version": version} if version else {}),
        }

    def _probe_and_kind(self, request, stored: StoredStep) -> tuple[int, str]:
        probe, kind = _integer(request, "probe", len(stored.sentences)), request.args.get("kind", "")
        if kind not in KINDS:
            raise BadRequest(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
        return probe, kind

    def maps_json(self, request) -> dict:
        stored, _ = self._stored(request)
        probe, kind = self._probe_and_kind(request, stored)
        rows, cols = stored.axis_labels(probe, kind)
        return {"rows": rows, "cols": cols, "layers": [_rounded(weights) for weights in stored.weights(probe, kind)]}

    def inside_json(self, request) -> dict:
        """One query of one head, step by step, from the stored values: q and every k_j, their
        products q∘k_j and sums q·k_j, those over sqrt(d_k), which keys the mask lets through, the
        softmax of the visible ones next to the weights the model stored (they agree to float16),
        the values v_j and the head's output Σ w_j v_j as the model computed it, every head's
        output for the query concatenated, and the layer's output after W_O."""
        stored, _ = self._stored(request)
        probe, kind = self._probe_and_kind(request, stored)
        if not stored.has_inside(probe):
            raise BadRequest(
                "this evaluation was stored before training kept the queries, keys and values: "
                "a run of this version stores them",
                404,
            )
        sentence = stored.sentences[probe]
        layer = _integer(request, "layer", sentence["layers"][kind])
        head = _integer(request, "head", sentence["heads"][kind])
        rows, cols = stored.axis_labels(probe, kind)
        query = _integer(request, "query", len(rows))
        inside = stored.inside(probe, kind, layer)
        q, keys = inside["query"][head, query], inside["key"][head]  # (d_head,), (T_k, d_head)
        products = keys * q  # (T_k, d_head): q∘k_j
        scores = products.sum(-1)  # (T_k,) q·k_j
        scaled = scores / math.sqrt(q.shape[0])
        visible = np.array(visible_keys(kind, query, len(cols)))
        exp = np.where(visible, np.exp(scaled - scaled[visible].max()), 0.0)
        return {
            "rows": rows,
            "cols": cols,
            "d_head": int(q.shape[0]),
            "heads": int(inside["query"].shape[0]),
            "q": _rounded(q),
            "keys": _rounded(keys),
            "products": _rounded(products),
            "scores": _rounded(scores),
            "scaled": _rounded(scaled),
            "visible": visible.tolist(),
            "softmax": _rounded(exp / exp.sum()),
            "weights": _rounded(stored.weights(probe, kind)[layer][head, query]),
            "values": _rounded(inside["value"][head]),
            "head_output": _rounded(inside["heads"][head, query]),
            "concat": _rounded(inside["heads"][:, query].reshape(-1)),  # (H * d_head,) = (d_model,)
            "output": _rounded(inside["output"][query]),
        }

    # --- HTTP -----------------------------------------------------------------------------

    @staticmethod
    def _serve(handler):
        @wrappers.Request.application
        def route(request):
            try:
                return http_util.Respond(request, handler(request), "application/json")
            except BadRequest as error:
                return http_util.Respond(request, {"error": str(error)}, "application/json", code=error.status)

        return route

    @wrappers.Request.application
    def _serve_static(self, request):
        path = (STATIC / request.path.rsplit("/static/", 1)[-1]).resolve()
        if not path.is_relative_to(STATIC.resolve()) or not path.is_file():  # only the files of static/
            return http_util.Respond(request, "not found", "text/plain", code=404)
        return http_util.Respond(request, path.read_bytes(), mimetypes.guess_type(path.name)[0] or "text/plain")
